//! Codegen: the generated Playwright specs of the reference capabilities (snapshotted), the
//! refusals of what cannot be expressed, the absence of CSS hints, and the escapers checked by
//! a real JavaScript engine.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cua_artifact::{
    Action, Anchor, AnchorRelation, Capability, CapabilityRef, MatchMode, NameMatch, NodeQuery,
    NodeScope, Predicate, RawInputKind, TenantBinding, ValueExpr,
};
use cua_compile::CompileError;
use cua_compile::codegen::{
    CodegenConfig, GeneratedSpec, css_string, js_regex_literal, render_playwright, ts_string,
};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn capability(reference: &str) -> Capability {
    let path = repository()
        .join("capabilities")
        .join(format!("{reference}.yaml"));
    Capability::from_yaml(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn northgate(base: &Capability) -> Capability {
    let path = repository()
        .join("tenants/northgate-fcu")
        .join(format!("{}.yaml", base.id));
    TenantBinding::from_yaml(&std::fs::read_to_string(path).unwrap())
        .unwrap()
        .apply(base)
        .unwrap()
}

/// The configuration the CLI builds: every capability of the catalog available to remedies.
fn config() -> CodegenConfig {
    let sign_on = capability("corebank.auth.sign_on@1.0.0");
    CodegenConfig {
        tenant: None,
        allow_irreversible: false,
        remedies: BTreeMap::from([(sign_on.reference(), sign_on)]),
        signed_out: false,
    }
}

fn render(capability: &Capability, config: &CodegenConfig) -> GeneratedSpec {
    render_playwright(capability, config).unwrap_or_else(|error| panic!("{error}"))
}

fn refusal(capability: &Capability, config: &CodegenConfig) -> String {
    match render_playwright(capability, config) {
        Err(error @ CompileError::Unexpressible { .. }) => error.to_string(),
        Err(other) => panic!("expected a refusal, got {other}"),
        Ok(spec) => panic!("expected a refusal, got a spec:\n{}", spec.text),
    }
}

/// Every `hints.css` value anywhere in the capability.
fn css_hints(capability: &Capability) -> Vec<String> {
    capability
        .steps
        .iter()
        .filter_map(|step| step.action.target())
        .filter_map(|target| target.hints.css.clone())
        .collect()
}

fn assert_no_css(capability: &Capability, spec: &GeneratedSpec) {
    let hints = css_hints(capability);
    for css in &hints {
        assert!(
            !spec.text.contains(css.as_str()),
            "the CSS hint {css:?} leaked into the spec"
        );
    }
    // The only selector in a spec is the frame's; every other locator is by role.
    for (number, line) in spec.text.lines().enumerate() {
        assert!(
            !line.contains(".locator("),
            "line {} uses a raw selector: {line}",
            number + 1
        );
    }
}

#[test]
fn savings_balance_generates_a_spec() {
    let base = capability("corebank.member.savings_balance@1.0.0");
    assert!(
        !css_hints(&base).is_empty(),
        "the reference must carry a hint for the check below to mean anything"
    );
    let spec = render(&base, &config());
    assert_no_css(&base, &spec);
    assert_eq!(spec.steps, 5);
    insta::assert_snapshot!("savings_balance_spec", spec.text);
    // Its recovery signs on with corebank.auth.sign_on: a setup project does that once.
    let names: Vec<&str> = spec
        .setups
        .iter()
        .map(|setup| setup.name.as_str())
        .collect();
    assert_eq!(names, ["corebank.auth.sign_on@1.0.0.setup.ts"]);
    insta::assert_snapshot!("sign_on_setup", spec.setups[0].text);
}

#[test]
fn a_capability_without_a_sign_on_remedy_has_no_setup() {
    let sign_on = capability("corebank.auth.sign_on@1.0.0");
    assert!(render(&sign_on, &config()).setups.is_empty());
}

#[test]
fn savings_balance_for_northgate_generates_the_overlaid_spec() {
    let effective = northgate(&capability("corebank.member.savings_balance@1.0.0"));
    let config = CodegenConfig {
        tenant: Some(cua_artifact::TenantId::parse("northgate-fcu").unwrap()),
        ..config()
    };
    let spec = render(&effective, &config);
    assert_no_css(&effective, &spec);
    assert!(spec.text.contains("folded('Savings Bal.')"));
    assert!(
        spec.text
            .contains(effective.content_hash.as_ref().unwrap().as_str())
    );
    insta::assert_snapshot!("savings_balance_northgate_spec", spec.text);
}

#[test]
fn open_subaccount_and_sign_on_generate_specs() {
    for (reference, name) in [
        (
            "corebank.member.open_subaccount@1.0.0",
            "open_subaccount_spec",
        ),
        ("corebank.auth.sign_on@1.0.0", "sign_on_spec"),
    ] {
        let capability = capability(reference);
        let spec = render(&capability, &config());
        assert_no_css(&capability, &spec);
        insta::assert_snapshot!(name, spec.text);
    }
}

#[test]
fn transfer_funds_is_refused_unless_irreversible_steps_are_allowed() {
    let transfer = capability("corebank.member.transfer_funds@1.0.0");
    insta::assert_snapshot!("transfer_funds_refused", refusal(&transfer, &config()));

    let allowed = CodegenConfig {
        allow_irreversible: true,
        ..config()
    };
    let spec = render(&transfer, &allowed);
    assert_no_css(&transfer, &spec);
    assert!(
        spec.text
            .contains("await keyedRecord(page, frame_content, ")
            && spec
                .text
                .contains("'Account', (text) => exactName(INPUTS.from_account).test(text)"),
        "the balance is read in the one row whose Account cell holds the from account"
    );
    insta::assert_snapshot!("transfer_funds_spec", spec.text);
}

#[test]
fn generation_is_deterministic() {
    let base = capability("corebank.member.savings_balance@1.0.0");
    assert_eq!(render(&base, &config()), render(&base, &config()));
}

/// A change to the savings capability that makes one step (or more) inexpressible.
fn check_refused(change: impl FnOnce(&mut Capability), expected: &str) {
    let mut changed = capability("corebank.member.savings_balance@1.0.0");
    change(&mut changed);
    let message = refusal(&changed, &config());
    assert!(
        message.contains(expected),
        "the refusal should say {expected:?}:\n{message}"
    );
}

fn content() -> Option<NodeScope> {
    Some(NodeScope {
        frame: Some("content".to_owned()),
        region: None,
    })
}

#[test]
fn inexpressible_steps_are_refused_naming_the_step_and_why() {
    check_refused(
        |c| {
            c.steps[1].action = Action::RawInput {
                kind: RawInputKind::MouseClick,
                x: Some(10.0),
                y: Some(20.0),
                key: None,
                text: None,
                frame: None,
            }
        },
        "step `submit_search` (action): raw_input is an operator's pointer or key gesture",
    );
    check_refused(
        |c| {
            let target = c.steps[2].action.target_mut().unwrap();
            target.anchor = Some(Anchor {
                relation: AnchorRelation::WithinSection,
                text: "Summary".to_owned(),
                match_mode: MatchMode::Normalized,
            });
        },
        "step `read_balance` (action): the anchor `within_section \"Summary\"` depends on",
    );
    check_refused(
        |c| {
            c.steps[0].action.target_mut().unwrap().name = Some(NameMatch {
                value: "(?i)member number".to_owned(),
                match_mode: MatchMode::Regex,
            });
        },
        "step `enter_member_id` (action): regex \"(?i)member number\" has no JavaScript equivalent: inline flags `(?i)`",
    );
    check_refused(
        |c| {
            c.steps[1].postcondition = Some(Predicate::HttpStatusIn { codes: vec![200] });
        },
        "step `submit_search` (postcondition): http_status_in [200] reads the status of the last navigation",
    );
    check_refused(
        |c| {
            c.steps[2].precondition = Some(Predicate::MoneyPresent {
                value: ValueExpr::String("$1.00".to_owned()),
                query: NodeQuery {
                    role: Some("cell".to_owned()),
                    scope: Some(NodeScope {
                        frame: Some("content".to_owned()),
                        region: Some("summary".to_owned()),
                    }),
                    ..NodeQuery::default()
                },
            });
        },
        "step `read_balance` (precondition): money_present in the region `summary`",
    );
    check_refused(
        |c| c.steps[2].action.target_mut().unwrap().role = "labeltext".to_owned(),
        "step `read_balance` (action): the role `labeltext` is neither an ARIA role",
    );
    check_refused(
        |c| {
            c.steps[2].precondition = Some(Predicate::NodeExists {
                query: NodeQuery {
                    scope: content(),
                    ..NodeQuery::default()
                },
                min_count: 1,
            });
        },
        "step `read_balance` (precondition): a node query with neither a role nor a name",
    );
    check_refused(
        |c| {
            c.steps[2].action.target_mut().unwrap().name = Some(NameMatch {
                value: "^[{$input: member_id}]$".to_owned(),
                match_mode: MatchMode::Regex,
            });
        },
        "step `read_balance` (action): a value inside a character class has no meaning",
    );
    // A private-use character of the pattern's own, raw or escaped, would be taken for a value.
    for pattern in [
        "^\u{e000}{$input: member_id}$",
        r"^\x{E000}{$input: member_id}$",
    ] {
        check_refused(
            |c| {
                c.steps[2].action.target_mut().unwrap().name = Some(NameMatch {
                    value: pattern.to_owned(),
                    match_mode: MatchMode::Regex,
                });
            },
            "step `read_balance` (action): the pattern holds a private-use character",
        );
    }
    check_refused(
        |c| c.steps[2].action.target_mut().unwrap().ordinal = Some(1),
        "step `read_balance` (action): an ordinal without an identity check",
    );
    check_refused(
        |c| c.entrypoint.url = "{base_url}/{tenant_path}/".to_owned(),
        "entrypoint: the URL \"{base_url}/{tenant_path}/\" holds the placeholder {tenant_path}, unbound here",
    );
    check_refused(
        |c| {
            c.inputs[0].pattern = Some(r"\bdigits\b".to_owned());
        },
        "input `member_id` (pattern): regex \"^(?:\\\\bdigits\\\\b)$\" has no JavaScript equivalent: word boundaries",
    );
}

/// What replay reads beyond ARIA roles, the spec reads too: a run of text, a date field, a node
/// named by anything, nodes in a region, a regex built from an input, a name and an anchor
/// together. The live apps' specs run these (tests/it/conformance); here, their translation.
#[test]
fn what_replay_reads_beyond_aria_roles_has_a_translation() {
    let mut changed = capability("corebank.member.savings_balance@1.0.0");
    // read_status: a run of text beside its label, in the summary region.
    let status = changed.steps[3].action.target_mut().unwrap();
    status.role = "text".to_owned();
    status.scope = Some(NodeScope {
        frame: Some("content".to_owned()),
        region: Some("summary".to_owned()),
    });
    // read_as_of: a date field named by a regex built from the input.
    let as_of = changed.steps[4].action.target_mut().unwrap();
    as_of.role = "date".to_owned();
    as_of.name = Some(NameMatch {
        value: "^As of {$input: member_id}.$".to_owned(),
        match_mode: MatchMode::Regex,
    });
    as_of.anchor = None;
    // read_balance: a cell named by the member, standing in the row of the balance's label.
    let balance = changed.steps[2].action.target_mut().unwrap();
    balance.name = Some(NameMatch {
        value: "{$input: member_id}".to_owned(),
        match_mode: MatchMode::Exact,
    });
    balance.anchor = Some(Anchor {
        relation: AnchorRelation::RowOf,
        text: "Savings Balance".to_owned(),
        match_mode: MatchMode::Normalized,
    });
    changed.steps[2].precondition = Some(Predicate::NodeHasValue {
        query: NodeQuery {
            role: Some("textbox".to_owned()),
            name: Some("Member {$input: member_id}".to_owned()),
            scope: Some(NodeScope {
                frame: Some("content".to_owned()),
                region: Some("member_search".to_owned()),
            }),
            ..NodeQuery::default()
        },
        value: ValueExpr::Input("member_id".parse().unwrap()),
    });
    changed.checkpoint = Predicate::NodeExists {
        query: NodeQuery {
            name: Some("Savings Balance".to_owned()),
            scope: content(),
            ..NodeQuery::default()
        },
        min_count: 1,
    };
    let spec = render(&changed.sealed(), &config()).text;
    for expected in [
        // A run of text: an element holding text of its own, beside the label, in its region.
        "adjacentTo(anchors, anchorName, frame_content.locator('xpath=.//*[text()[normalize-space()]]'), 'summary',",
        // A date field: Playwright's textbox of that input type.
        ".and(page.locator('input[type=\"date\"]'))",
        // The input escaped into the pattern at run time (`.` as the regex crate reads it).
        "{ name: new RegExp('^As of ' + regexText(INPUTS.member_id) + '[^\\\\n]$', 'u') }",
        // The name and the anchor together: the named cell in the label's row.
        ".filter({ has: named(page, anchorName) })",
        "'cell', { name: exactName(INPUTS.member_id) })",
        // A searchbox is a textbox to cua; the query's nodes are checked in their region.
        "valuesOf(await inRegionAll(byRole(frame_content, 'textbox', { name: folded('Member ' + INPUTS.member_id) }), 'member_search'))",
        // A node named by anything: its text, label, title or alternative text.
        "named(frame_content, folded('Savings Balance'))",
    ] {
        assert!(spec.contains(expected), "{expected}\n---\n{spec}");
    }
}

/// An ordinal counts among the keyed candidates in the region, as replay counts it; a run of
/// text is counted as the snapshot counts text nodes; artifact text in a message is escaped.
#[test]
fn ordinals_count_in_their_region_and_among_runs_of_text() {
    let mut changed = capability("corebank.member.savings_balance@1.0.0");
    let identity = cua_artifact::IdentityCheck {
        column: None,
        equals: ValueExpr::Input("member_id".parse().unwrap()),
        match_mode: MatchMode::Exact,
    };
    let region = "x');process.exit(1);('";
    let balance = changed.steps[2].action.target_mut().unwrap();
    balance.anchor = None;
    balance.ordinal = Some(1);
    balance.identity = Some(identity.clone());
    balance.scope = Some(NodeScope {
        frame: Some("content".to_owned()),
        region: Some(region.to_owned()),
    });
    let status = changed.steps[3].action.target_mut().unwrap();
    status.role = "text".to_owned();
    status.anchor = None;
    status.ordinal = Some(2);
    status.identity = Some(identity);
    let spec = render(&changed.sealed(), &config()).text;
    for expected in [
        "const inRegionCandidates = await inRegionAll(",
        &format!(
            "expect(inRegionCandidates.length, {}).toBeGreaterThan(1);",
            ts_string(&format!("candidate #1 in region {region}"))
        ),
        "const target = inRegionCandidates[1];",
        "const run = await textRun(record, 2);",
        "outputs.account_status = squash(await Promise.resolve(run.text));",
    ] {
        assert!(spec.contains(expected), "{expected}\n---\n{spec}");
    }
}

#[test]
fn every_refusal_is_reported_at_once() {
    let mut changed = capability("corebank.member.savings_balance@1.0.0");
    changed.steps[1].postcondition = Some(Predicate::HttpStatusIn { codes: vec![200] });
    changed.steps[3].action.target_mut().unwrap().role = "labeltext".to_owned();
    changed.checkpoint = Predicate::NodeAbsent {
        query: NodeQuery {
            role: Some("cell".to_owned()),
            name_matches: Some(r"\bError\b".to_owned()),
            scope: content(),
            ..NodeQuery::default()
        },
    };
    insta::assert_snapshot!("several_refusals", refusal(&changed, &config()));
}

#[test]
fn a_remedy_that_cannot_be_generated_is_left_out_not_the_spec() {
    let base = capability("corebank.member.savings_balance@1.0.0");
    let without_sign_on = CodegenConfig {
        remedies: BTreeMap::new(),
        signed_out: false,
        ..config()
    };
    let spec = render(&base, &without_sign_on);
    assert!(!spec.text.contains("recover_session_expired"));
    assert!(
        spec.not_translated.iter().any(|line| line.contains(
            "recovery session_expired: the remedy runs corebank.auth.sign_on@1.0.0, which was not supplied"
        )),
        "{:#?}",
        spec.not_translated
    );
    let reference = CapabilityRef::parse("corebank.auth.sign_on@1.0.0").unwrap();
    assert!(config().remedies.contains_key(&reference));
}

/// Evaluates `program` with Node and returns its standard output. Node is a dependency of the
/// Playwright tests; its absence fails loudly.
fn node(program: &str) -> String {
    let output = Command::new("node")
        .arg("--input-type=module")
        .arg("-e")
        .arg(program)
        .output()
        .unwrap_or_else(|error| {
            panic!("these tests need Node.js ({error}): apt-get install -y nodejs npm")
        });
    assert!(
        output.status.success(),
        "node failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

const HOSTILE_TEXTS: [&str; 14] = [
    "Member Number",
    "",
    "O'Brien \"quoted\"",
    r"C:\temp\new\\",
    "line\nbreak\r\nand\ttab",
    "${process.exit(1)}",
    "`${1+1}`",
    "a\u{2028}b\u{2029}c",
    "nul\0byte\u{7f}",
    "bidi\u{202e}override\u{2066}isolate",
    "zero\u{200b}width\u{feff}bom",
    "Café 東京 \u{1f600}",
    "'; process.exit(1); '",
    "*/ --> <!-- </script>",
];

#[test]
fn ts_strings_evaluate_to_their_text_in_javascript() {
    let literals: Vec<String> = HOSTILE_TEXTS.iter().map(|text| ts_string(text)).collect();
    let program = format!(
        "const values = [{}];\nconsole.log(JSON.stringify(values));",
        literals.join(",\n")
    );
    let evaluated: Vec<String> = serde_json::from_str(node(&program).trim()).unwrap();
    assert_eq!(evaluated, HOSTILE_TEXTS);
}

#[test]
fn css_strings_select_frames_by_their_exact_name() {
    // The selector grammar is checked by a CSS parser that knows attribute strings: Node has
    // none, so the escaped string is decoded with CSS's own rules instead.
    for text in HOSTILE_TEXTS {
        let css = css_string(text);
        let decoded = decode_css_string(&css);
        assert_eq!(decoded, text.replace('\0', "\u{fffd}"), "{css}");
    }
}

/// CSS string decoding (CSS Syntax Level 3, §4.3.5), enough for what `css_string` writes.
fn decode_css_string(css: &str) -> String {
    let inner = css
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap();
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            assert!(c != '"' && c != '\n', "unescaped {c:?} in {css}");
            out.push(c);
            continue;
        }
        let next = chars.next().unwrap();
        if next.is_ascii_hexdigit() {
            let mut hex = next.to_string();
            while hex.len() < 6 && chars.peek().is_some_and(char::is_ascii_hexdigit) {
                hex.push(chars.next().unwrap());
            }
            if chars.peek() == Some(&' ') {
                chars.next();
            }
            let code = u32::from_str_radix(&hex, 16).unwrap();
            out.push(if code == 0 {
                '\u{fffd}'
            } else {
                char::from_u32(code).unwrap()
            });
        } else {
            out.push(next);
        }
    }
    out
}

#[test]
fn translated_regexes_match_what_the_regex_crate_matches() {
    let cases: [(&str, &[&str]); 6] = [
        (
            r"^\$[0-9,]+\.[0-9]{2}$",
            &["$4,210.55", "4210.55", "$0.00", "$1.5"],
        ),
        (r"^TF-\d{6}$", &["TF-000001", "TF-00001", "TF-٠٠٠٠٠١"]),
        (r"a.b", &["a\rb", "a\nb", "a\u{2028}b", "ab"]),
        (r"^\w+\s\S$", &["né x", "日本 y", "a  b", "_ 1"]),
        (r"[[:upper:]][a-c/\-]", &["Aa", "A/", "A-", "ad"]),
        (r"^(?P<id>[0-9]+)|x*?y$", &["123", "y", "xxy", "z"]),
    ];
    let mut program = String::from("const results = [];\n");
    for (pattern, inputs) in cases {
        let literal = js_regex_literal(pattern).unwrap();
        for input in inputs {
            program.push_str(&format!(
                "results.push({literal}.test({}));\n",
                ts_string(input)
            ));
        }
    }
    program.push_str("console.log(JSON.stringify(results));");
    let javascript: Vec<bool> = serde_json::from_str(node(&program).trim()).unwrap();
    let rust: Vec<bool> = cases
        .iter()
        .flat_map(|(pattern, inputs)| {
            let regex = regex::Regex::new(pattern).unwrap();
            inputs.iter().map(move |input| regex.is_match(input))
        })
        .collect();
    assert_eq!(javascript, rust);
}

#[test]
fn a_url_built_from_an_input_encodes_it_as_replay_does() {
    let path =
        repository().join("tests/fixtures/deep_link/corebank.member.balance_by_link@1.0.0.yaml");
    let deep_link = Capability::from_yaml(&std::fs::read_to_string(path).unwrap())
        .unwrap()
        .sealed();
    let spec = render(&deep_link, &config());
    assert!(
        spec.text.contains(
            "await page.goto('./member/' + urlValue(INPUTS.member_id) + '?view=detail');"
        ),
        "{}",
        spec.text
    );
}

#[test]
fn a_url_opens_under_the_projects_base_url_or_is_refused() {
    let path =
        repository().join("tests/fixtures/deep_link/corebank.member.balance_by_link@1.0.0.yaml");
    let deep_link = Capability::from_yaml(&std::fs::read_to_string(path).unwrap()).unwrap();
    // A base URL after the start (a redirect parameter) has no Playwright baseURL equivalent.
    let mut nested = deep_link.clone();
    nested.entrypoint.url = "{base_url}/login?next={base_url}/member".to_owned();
    assert!(
        refusal(&nested, &config()).contains("holds {base_url} after its start"),
        "{}",
        refusal(&nested, &config())
    );
    let mut inside = deep_link.clone();
    inside.entrypoint.url = "https://sso.example/{base_url}".to_owned();
    assert!(refusal(&inside, &config()).contains("after its start"));
    let mut glued = deep_link.clone();
    glued.entrypoint.url = "{base_url}{$input: member_id}".to_owned();
    assert!(refusal(&glued, &config()).contains("not a path, query or fragment"));
    let mut port = deep_link.clone();
    port.entrypoint.url = "{base_url}:8443/member".to_owned();
    assert!(refusal(&port, &config()).contains("not a path, query or fragment"));
    // An absolute URL of its own stays absolute.
    let mut absolute = deep_link;
    absolute.entrypoint.url = "https://app.example/member/{$input: member_id}".to_owned();
    let spec = render(&absolute, &config());
    assert!(
        spec.text.contains(
            "await page.goto('https://app.example/member/' + urlValue(INPUTS.member_id));"
        ),
        "{}",
        spec.text
    );
}

#[test]
fn a_name_built_from_an_input_is_matched_as_replay_binds_it() {
    let mut deep_link = Capability::from_yaml(
        &std::fs::read_to_string(
            repository()
                .join("tests/fixtures/deep_link/corebank.member.balance_by_link@1.0.0.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    // Read the member's own row: the cell whose name is the member number.
    deep_link.steps[1].action.target_mut().unwrap().name = Some(NameMatch {
        value: "{$input: member_id}".to_owned(),
        match_mode: MatchMode::Exact,
    });
    deep_link.steps[1].action.target_mut().unwrap().anchor = None;
    let spec = render(&deep_link.sealed(), &config());
    assert!(
        spec.text
            .contains("byRole(page, 'cell', { name: exactName(INPUTS.member_id) })"),
        "{}",
        spec.text
    );
}
