//! `http` and `command` steps: the mixed fixture capability validates, and each rule that guards
//! an operator step reports a placed diagnostic naming what is wrong and what to do.

use cua_artifact::{Action, Capability, check_source, render_plain};

use crate::support::{minimal_with, read};

/// `MINIMAL` with one more step after `read_balance`, allowed `http` and `command`.
fn with_step(step: &str) -> String {
    minimal_with(
        "checkpoint: {assert: text_present, value: Balance}",
        &format!("{step}\ncheckpoint: {{assert: text_present, value: Balance}}"),
    )
    .replace(
        "allowed_actions: [navigate, type, click, extract, reload]",
        "allowed_actions: [navigate, type, click, extract, reload, http, command]",
    )
}

fn check(name: &str, step: &str) {
    let text = with_step(step);
    let checked = check_source(&format!("{name}.yaml"), &text);
    assert!(
        checked
            .diagnostics
            .iter()
            .all(|diagnostic| diagnostic.location.is_some()),
        "{name}: every diagnostic is placed"
    );
    insta::assert_snapshot!(
        format!("operator_{name}"),
        render_plain(&checked.diagnostics)
    );
}

#[test]
fn the_mixed_fixture_capability_is_valid() {
    let text = read("tests/fixtures/operators/corebank.member.account_review@1.0.0.yaml");
    let capability = Capability::from_yaml(&text).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(capability.validate(), Vec::new());
    let kinds: Vec<&str> = capability
        .steps
        .iter()
        .map(|step| step.action.kind().as_str())
        .collect();
    assert_eq!(
        kinds,
        ["http", "type", "click", "extract", "command", "http"]
    );
    let Action::Http(call) = &capability.steps[5].action else {
        panic!("add_note is an http step")
    };
    assert_eq!(
        (call.method.as_str(), call.expect_status.as_slice()),
        ("POST", &[201][..])
    );
}

#[test]
fn operator_step_rules_report_placed_diagnostics() {
    check(
        "valid",
        r#"  - id: api
    action: {type: http, method: GET, url: "{base_url}/api/{$input: member_id}", headers: {authorization: "Bearer {$secret: api.token}"}}"#,
    );
    check(
        "url_origin_from_input",
        r#"  - id: api
    action: {type: http, method: GET, url: "{$input: member_id}/api"}"#,
    );
    check(
        "secret_in_url",
        r#"  - id: api
    action: {type: http, method: GET, url: "{base_url}/api?token={$secret: api.token}"}"#,
    );
    check(
        "bad_header_and_status",
        r#"  - id: api
    action: {type: http, method: POST, url: "{base_url}/api", headers: {"bad header": x}, expect_status: [700]}"#,
    );
    check(
        "undeclared_extract_and_pointer",
        r#"  - id: api
    action: {type: http, method: GET, url: "{base_url}/api", extract: {missing: "name"}}"#,
    );
    check(
        "command_path_and_secret",
        r#"  - id: tool
    action: {type: command, executable: /bin/sh, args: [-c, {$secret: api.token}], expect_exit: []}"#,
    );
    check(
        "unknown_method",
        r#"  - id: api
    action: {type: http, method: TRACE, url: "{base_url}/api"}"#,
    );
    check(
        "unknown_route",
        r#"  - id: api
    via: carrier_pigeon
    action: {type: http, method: GET, url: "{base_url}/api"}"#,
    );
}
