//! Strict YAML: YAML 1.2 booleans, duplicate keys, unknown keys at every depth, alias bombs,
//! size limits, one document per text, no merge keys.

use cua_artifact::yaml::{MAX_DOCUMENT_BYTES, from_yaml};
use cua_artifact::{Action, Capability, ValueExpr, YamlErrorKind, check_source, render_plain};

use crate::support::{MINIMAL, minimal_with};

/// Parses a capability and returns the error kind, line and column.
fn refusal(text: &str) -> (YamlErrorKind, Option<(u32, u32)>, String) {
    let error = from_yaml::<Capability>(text).expect_err("the text must be refused");
    (
        error.kind,
        error
            .location
            .map(|location| (location.line, location.column)),
        error.message,
    )
}

#[test]
fn minimal_fixture_is_valid() {
    let capability: Capability = from_yaml(MINIMAL).expect("MINIMAL parses");
    assert_eq!(capability.validate(), vec![]);
}

#[test]
fn yaml_1_1_booleans_stay_strings_where_strings_are_expected() {
    for word in ["on", "off", "yes", "no", "y", "n"] {
        let text = minimal_with("title: Look up a member", &format!("title: {word}"));
        let capability: Capability = from_yaml(&text).expect("a word is a title");
        assert_eq!(capability.title, word);
    }
    // Where any value is allowed, `yes` is the string "yes", never the boolean true.
    let text = minimal_with("value: {$input: member_id}", "value: yes");
    let capability: Capability = from_yaml(&text).expect("a literal value");
    let Action::Type { value, .. } = &capability.steps[0].action else {
        panic!("a type action")
    };
    assert_eq!(value, &ValueExpr::String("yes".into()));
    let text = minimal_with("value: {$input: member_id}", "value: true");
    let capability: Capability = from_yaml(&text).expect("a literal value");
    let Action::Type { value, .. } = &capability.steps[0].action else {
        panic!("a type action")
    };
    assert_eq!(value, &ValueExpr::Boolean(true));
}

#[test]
fn yaml_1_1_booleans_are_refused_where_a_boolean_is_expected() {
    for word in ["yes", "no", "on", "off"] {
        let text = minimal_with(
            "value: {$input: member_id}",
            &format!("value: {{$input: member_id}}\n      clear_first: {word}"),
        );
        let (kind, location, _) = refusal(&text);
        assert_eq!(kind, YamlErrorKind::InvalidValue, "{word}");
        assert_eq!(location, Some((17, 20)), "{word}: points at the value");
    }
}

#[test]
fn duplicate_keys_are_refused_at_any_depth() {
    let top = minimal_with(
        "title: Look up a member\n",
        "title: Look up a member\ntitle: Again\n",
    );
    assert_eq!(refusal(&top).0, YamlErrorKind::DuplicateKey);
    let nested = minimal_with(
        "target: {role: button, name: {value: Search}}",
        "target: {role: button, role: link, name: {value: Search}}",
    );
    let (kind, location, message) = refusal(&nested);
    assert_eq!(kind, YamlErrorKind::DuplicateKey);
    assert_eq!(location, Some((21, 30)));
    assert!(message.contains("role"), "{message}");
}

#[test]
fn unknown_keys_are_refused_at_every_depth_and_located() {
    let cases = [
        (
            "title: Look up a member",
            "title: Look up a member\ntitel: typo",
            (5, 1),
        ),
        (
            "surface: {kind: web, app: {vendor: acme, product: Desk}}",
            "surface: {kind: web, app: {vendor: acme, product: Desk, build: 7}}",
            (6, 57),
        ),
        (
            "inputs:\n  - {name: member_id,",
            "inputs:\n  - {nmae: x, name: member_id,",
            (9, 6),
        ),
        // Inside an internally tagged action, and inside a target inside it.
        (
            "      type: click\n",
            "      type: click\n      force: true\n",
            (21, 7),
        ),
        (
            "target: {role: button, name: {value: Search}}",
            "target: {role: button, name: {value: Search, mode: exact}}",
            (21, 52),
        ),
        // Inside a remedy, which is read whole before its kind is known.
        (
            "policy:\n",
            "recovery:\n  - id: r\n    detect: {assert: http_status_in, codes: [502]}\n    remedy: [{type: reload, hard: true}]\npolicy:\n",
            (32, 29),
        ),
        // Inside a predicate.
        (
            "checkpoint: {assert: text_present, value: Balance}",
            "checkpoint: {assert: text_present, value: Balance, case: insensitive}",
            (28, 52),
        ),
    ];
    for (old, new, expected) in cases {
        let (kind, location, message) = refusal(&minimal_with(old, new));
        assert_eq!(kind, YamlErrorKind::UnknownKey, "{new}: {message}");
        assert_eq!(location, Some(expected), "{new}: {message}");
    }
}

#[test]
fn an_alias_bomb_is_refused_as_a_limit() {
    let mut bomb = String::from(
        "schema: cua.capability/v1\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for pair in names.windows(2) {
        let inner = vec![format!("*{}", pair[0]); 9].join(",");
        bomb.push_str(&format!("{}: &{} [{inner}]\n", pair[1], pair[1]));
    }
    bomb.push_str("title: *i\n");
    let error = from_yaml::<serde_json::Value>(&bomb)
        .expect_err("nine levels of nine-fold aliases are refused");
    assert_eq!(error.kind, YamlErrorKind::Limit, "{}", error.message);
    // A budget decision, made long before any expansion could exhaust memory.
    let error = from_yaml::<Capability>(&bomb).expect_err("and as a capability");
    assert_eq!(error.kind, YamlErrorKind::Limit, "{error}");
}

#[test]
fn modest_aliases_are_fine() {
    let text = minimal_with("title: Look up a member", "title: &t Look up a member")
        .replace("description: Reads a member's balance.", "description: *t");
    let capability: Capability = from_yaml(&text).expect("one alias is fine");
    assert_eq!(capability.description, "Look up a member");
}

#[test]
fn oversized_texts_multiple_documents_and_merge_keys_are_refused() {
    let huge = format!("{MINIMAL}# {}\n", "x".repeat(MAX_DOCUMENT_BYTES));
    assert_eq!(refusal(&huge).0, YamlErrorKind::TooLarge);
    let two = format!("{MINIMAL}---\n{MINIMAL}");
    assert_eq!(refusal(&two).0, YamlErrorKind::Syntax);
    // YAML 1.1 merge keys are not YAML 1.2; a `<<` is refused, not expanded.
    let merge = minimal_with(
        "surface: {kind: web, app: {vendor: acme, product: Desk}}",
        "surface: {kind: web, app: &app {vendor: acme, product: Desk}}\nprovenance: {<<: *app}",
    );
    let (_, _, message) = refusal(&merge);
    assert!(message.contains("merge"), "{message}");
}

#[test]
fn null_is_not_an_empty_string() {
    let text = minimal_with("title: Look up a member", "title:");
    assert_eq!(refusal(&text).0, YamlErrorKind::InvalidValue);
}

#[test]
fn a_text_of_exactly_the_size_limit_is_read() {
    let padding = MAX_DOCUMENT_BYTES - MINIMAL.len() - "# \n".len();
    let at_limit = format!("{MINIMAL}# {}\n", "x".repeat(padding));
    assert_eq!(at_limit.len(), MAX_DOCUMENT_BYTES);
    let capability: Capability = from_yaml(&at_limit).expect("the limit itself is allowed");
    assert_eq!(capability.title, "Look up a member");
    let checked = check_source("at_limit.yaml", &at_limit);
    assert!(checked.is_valid(), "{}", render_plain(&checked.diagnostics));
    // One byte more is refused before any parsing, as a file and not as YAML.
    let over = format!("{at_limit}#");
    assert_eq!(refusal(&over).0, YamlErrorKind::TooLarge);
    let checked = check_source("over.yaml", &over);
    assert!(checked.kind.is_none() && checked.document.is_none());
    assert_eq!(
        render_plain(&checked.diagnostics),
        format!(
            "error[cua::document_too_large]: the file is {} bytes, above the {MAX_DOCUMENT_BYTES}-byte limit\n  --> over.yaml\n  = help: a document is a few kilobytes of YAML; this is not one\n",
            MAX_DOCUMENT_BYTES + 1
        )
    );
}

#[test]
fn errors_inside_a_remedy_keep_their_kind_and_point_at_their_value() {
    // A remedy is read whole before its kind is known, so its errors arrive as plain messages;
    // they are still told apart and placed on the offending value.
    let remedy = |remedy: &str| {
        let text = minimal_with(
            "policy:\n",
            &format!(
                "recovery:\n  - id: r\n    detect: {{assert: http_status_in, codes: [502]}}\n    remedy: [{remedy}]\npolicy:\n"
            ),
        );
        let error = from_yaml::<Capability>(&text).expect_err("the remedy is refused");
        (
            error.kind,
            error
                .location
                .map(|location| (location.line, location.column, location.length)),
            error.path.map(|path| path.to_string()),
        )
    };
    assert_eq!(
        remedy("{type: bogus}"),
        (
            YamlErrorKind::InvalidValue,
            Some((32, 21, 5)),
            Some("recovery[0].remedy[0].type".to_owned())
        )
    );
    assert_eq!(
        remedy("{type: navigate, url: 5}"),
        (
            YamlErrorKind::InvalidValue,
            Some((32, 36, 1)),
            Some("recovery[0].remedy[0].url".to_owned())
        )
    );
    assert_eq!(
        remedy("{type: navigate}"),
        (
            YamlErrorKind::MissingKey,
            Some((32, 5, 6)),
            Some("recovery[0].remedy".to_owned())
        )
    );
    assert_eq!(
        remedy("{type: reload, hard: true}"),
        (
            YamlErrorKind::UnknownKey,
            Some((32, 29, 4)),
            Some("recovery[0].remedy[0].hard".to_owned())
        )
    );
}

#[test]
fn an_unknown_variant_with_a_quote_in_it_is_placed_on_its_value() {
    let text = minimal_with(
        "{name: member_id, pattern:",
        "{name: member_id, type: 'str\"ing', pattern:",
    );
    let error = from_yaml::<Capability>(&text).expect_err("no such type");
    assert_eq!(error.kind, YamlErrorKind::InvalidValue);
    assert_eq!(
        error
            .location
            .map(|location| (location.line, location.column, location.length)),
        Some((9, 29, 9))
    );
    assert_eq!(
        error.path.map(|path| path.to_string()).as_deref(),
        Some("inputs[0].type")
    );
}
