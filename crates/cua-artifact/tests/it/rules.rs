//! Validation rules one edge at a time: each case changes one thing in the minimal capability and
//! pins exactly the problems `Capability::validate` reports (code, path and message), so a rule
//! that stops firing, fires on its boundary, or fires somewhere else is seen.

use cua_artifact::{Capability, check_source, yaml::from_yaml};

use crate::support::{MINIMAL, minimal_with};

/// Every problem `Capability::validate` finds in a capability text, as `code path: message`.
fn problems(text: &str) -> Vec<String> {
    let capability: Capability = from_yaml(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    capability
        .validate()
        .into_iter()
        .map(|problem| {
            format!(
                "{} {}: {}",
                problem.code.as_str(),
                problem.path,
                problem.message
            )
        })
        .collect()
}

/// `MINIMAL` with its `submit_search` click replaced by `click`, a flow mapping of the action.
fn with_click(click: &str, risk: &str) -> String {
    minimal_with(
        "    action:\n      type: click\n      target: {role: button, name: {value: Search}}\n",
        &format!("    action: {click}\n    risk: {risk}\n"),
    )
}

#[test]
fn a_broken_capability_is_invalid_even_though_it_parsed() {
    let text = minimal_with("value: {$input: member_id}", "value: {$input: nobody}");
    let checked = check_source("minimal.yaml", &text);
    assert!(checked.document.is_some(), "the text parses");
    assert!(!checked.is_valid());
    assert_eq!(
        problems(&text),
        [
            "cua::undeclared_input steps[0].action.value.$input: `$input: nobody` names no declared input"
        ]
    );
    assert!(check_source("minimal.yaml", MINIMAL).is_valid());
}

#[test]
fn a_role_is_a_lowercase_word_and_never_css() {
    let role = |role: &str| {
        problems(&minimal_with(
            "{role: button, name: {value: Search}}",
            &format!("{{role: {role}, name: {{value: Search}}}}"),
        ))
    };
    assert_eq!(role("menu_item"), Vec::<String>::new());
    assert_eq!(
        role("Button"),
        ["cua::invalid_value steps[1].action.target.role: role \"Button\" is not a role name"]
    );
    assert_eq!(
        role("''"),
        ["cua::invalid_value steps[1].action.target.role: role \"\" is not a role name"]
    );
    assert_eq!(
        role("button.primary"),
        [
            "cua::css_outside_hints steps[1].action.target.role: \"button.primary\" looks like a CSS selector"
        ]
    );
    // A predicate query's role is held to the same rule.
    let text = minimal_with(
        "checkpoint: {assert: text_present, value: Balance}",
        "checkpoint: {assert: node_exists, query: {role: Cell, name: Balance}}",
    );
    assert_eq!(
        problems(&text),
        ["cua::invalid_value checkpoint.query.role: role \"Cell\" is not a role name"]
    );
}

#[test]
fn a_scope_names_a_frame_and_a_region_never_by_css() {
    let text = minimal_with(
        "{role: button, name: {value: Search}}",
        "{role: button, name: {value: Search}, scope: {frame: '#content', region: .results}}",
    );
    assert_eq!(
        problems(&text),
        [
            "cua::css_outside_hints steps[1].action.target.scope.frame: \"#content\" looks like a CSS selector",
            "cua::css_outside_hints steps[1].action.target.scope.region: \".results\" looks like a CSS selector",
        ]
    );
    let text = minimal_with(
        "{role: button, name: {value: Search}}",
        "{role: button, name: {value: Search}, scope: {frame: content, region: Search results}}",
    );
    assert_eq!(problems(&text), Vec::<String>::new());
}

#[test]
fn an_identity_check_compiles_its_value_only_when_it_matches_by_regex() {
    let identity = |check: &str| {
        problems(&minimal_with(
            "{role: cell, anchor: {relation: adjacent_to, text: Balance}}",
            &format!(
                "{{role: cell, anchor: {{relation: adjacent_to, text: Balance}}, identity: {check}}}"
            ),
        ))
    };
    assert_eq!(
        identity("{equals: '(', match: regex}"),
        [
            "cua::invalid_regex steps[2].action.target.identity.equals: the regex \"(\" does not compile: unclosed group"
        ]
    );
    // The same text compared as text is no regex at all.
    assert_eq!(identity("{equals: '('}"), Vec::<String>::new());
    assert_eq!(
        identity("{equals: '(', match: exact}"),
        Vec::<String>::new()
    );
    assert_eq!(
        identity("{equals: '^[0-9]{4,10}$', match: regex}"),
        Vec::<String>::new()
    );
}

#[test]
fn the_idempotency_key_is_a_plain_string_input() {
    let key = |spec: &str| {
        problems(&minimal_with(
            "{name: member_id, pattern: \"^[0-9]{4,10}$\"}",
            &format!(
                "{{name: member_id, pattern: \"^[0-9]{{4,10}}$\", idempotency_key: true{spec}}}"
            ),
        ))
    };
    assert_eq!(key(""), Vec::<String>::new());
    let not_plain = "cua::invalid_input_spec inputs[0].idempotency_key: input `member_id` carries \
                     the idempotency key but is not a plain string";
    assert_eq!(key(", sensitive: true"), [not_plain]);
    assert_eq!(key(", type: integer"), [not_plain]);
}

#[test]
fn a_coordinate_click_claims_only_a_screenshot_and_reports_nothing_else() {
    // The click names the step right before it, which is a click, not a screenshot: that is
    // the one finding (the claimed step itself is not "between" the screenshot and the click).
    let text = minimal_with(
        "    wait: {for: navigation, timeout_ms: 8000}\n",
        "    wait: {for: navigation, timeout_ms: 8000}\n  - id: point\n    via: visual\n    \
         action: {type: click_at, observation: submit_search, x: 300, y: 220}\n",
    )
    .replace(
        "[navigate, type, click, extract, reload]",
        "[navigate, type, click, extract, reload, screenshot, click_at]",
    );
    assert_eq!(
        problems(&text),
        [
            "cua::unknown_step steps[2].action.observation: `click_at` claims the observation of \
          step `submit_search`, which is not a `screenshot` step"
        ]
    );
    // Claiming a screenshot taken right before is fine.
    let text = text.replace(
        "  - id: point\n",
        "  - id: look\n    via: visual\n    action: {type: screenshot}\n  - id: point\n",
    );
    let text = text.replace("observation: submit_search", "observation: look");
    assert_eq!(problems(&text), Vec::<String>::new());
}

#[test]
fn a_confirm_is_answered_only_for_a_literal_message_and_at_least_elevated() {
    let click = |message: &str| {
        format!(
            "{{type: click, target: {{role: button, name: {{value: Search}}}}, accept_confirm: {message}}}"
        )
    };
    // A blank message is no literal message, and neither is a reference (which is also
    // literal text where no template is read).
    let no_literal = "cua::invalid_value steps[1].action.accept_confirm: step `submit_search` \
                      accepts a confirm() with no literal message";
    assert_eq!(
        problems(&with_click(&click("'  '"), "elevated")),
        [no_literal]
    );
    assert_eq!(
        problems(&with_click(&click("'{$input: member_id}'"), "elevated")),
        [
            no_literal,
            "cua::unbound_placeholder steps[1].action.accept_confirm: \"{$input: member_id}\" holds \
             a reference where none is bound; it would be used as literal text",
        ]
    );
    // Elevated by the lexicon or not, a confirm is elevated because answering it is.
    for message in ["Continue?", "Save your changes?"] {
        assert_eq!(
            problems(&with_click(&click(message), "safe")),
            [format!(
                "cua::undeclared_risk steps[1].action.accept_confirm: step `submit_search` accepts \
                 the confirm() {message:?}, which is elevated (answering OK to a confirm() is never \
                 safe), but declares risk safe"
            )],
        );
        assert_eq!(
            problems(&with_click(&click(message), "elevated")),
            Vec::<String>::new(),
            "{message}: declared exactly as the rule requires"
        );
    }
    // Past elevated, the lexicon's reading is the reason given.
    assert_eq!(
        problems(&with_click(&click("Delete this member?"), "elevated")),
        [
            "cua::undeclared_risk steps[1].action.accept_confirm: step `submit_search` accepts the \
          confirm() \"Delete this member?\", which is irreversible (the lexicon reads \"delete\" \
          in it), but declares risk elevated"
        ]
    );
}

#[test]
fn a_recovery_rule_for_any_step_names_none() {
    let text = minimal_with(
        "policy:\n",
        "recovery:\n  - id: transient_load\n    detect: {assert: http_status_in, codes: [502]}\n    \
         remedy: [{type: reload}]\n    steps: [submit_search]\npolicy:\n",
    );
    assert_eq!(
        problems(&text),
        [
            "cua::recovery_scope_mismatch recovery[0].steps: recovery rule `transient_load` names \
          steps but has `scope: any_step`"
        ]
    );
    let named = text.replace("    steps:", "    scope: named_steps\n    steps:");
    assert_eq!(problems(&named), Vec::<String>::new());
}
