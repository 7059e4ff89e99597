//! `cua route explain`: per step the selection, every candidate and the recovery policy, as
//! text and as the JSON envelope, without opening any provider (no fixture, no browser runs
//! here); and the usage errors, each naming what is wrong.

use std::process::Command;

const MIXED: &str = "tests/fixtures/operators/corebank.member.account_review@1.0.0.yaml";
const VISUAL: &str = "tests/fixtures/visual/corebank.member.sign_card@1.0.0.yaml";

/// Runs the binary in the repository: exit code, stdout, stderr.
fn cua(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the cua binary runs");
    (
        output.status.code().expect("an exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn explains_every_step_of_a_mixed_capability() {
    let (code, stdout, stderr) = cua(&["route", "explain", MIXED, "--platform", "linux"]);
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("route_explain_mixed_text", stdout);

    let (code, stdout, stderr) = cua(&[
        "route",
        "explain",
        MIXED,
        "--platform",
        "linux",
        "--step",
        "add_note",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let mut envelope: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON envelope");
    // The version changes with every release; the explanation is what is under test.
    envelope["meta"] = serde_json::Value::from("[meta]");
    insta::assert_json_snapshot!("route_explain_add_note_json", envelope);
}

#[test]
fn a_catalog_capability_is_all_browser_routes() {
    let (code, stdout, stderr) = cua(&[
        "route",
        "explain",
        "corebank.member.savings_balance@1.0.0",
        "--platform",
        "linux",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let envelope: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON envelope");
    let providers: Vec<String> = envelope["data"]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|step| {
            format!(
                "{} {}",
                step["step"].as_str().unwrap_or_default(),
                step["explanation"]["selection"]["provider"]
                    .as_str()
                    .unwrap_or("none")
            )
        })
        .collect();
    assert_eq!(
        providers,
        [
            "enter_member_id cdp-browser",
            "submit_search cdp-browser",
            "read_balance cdp-browser",
            "read_status cdp-browser",
            "read_as_of cdp-browser",
        ]
    );
}

#[test]
fn coordinates_route_only_through_the_explicit_visual_route() {
    let (code, stdout, stderr) = cua(&[
        "route",
        "explain",
        VISUAL,
        "--platform",
        "linux",
        "--step",
        "sign",
    ]);
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("route_explain_visual_sign_text", stdout);

    let rewritten = |from: &str, to: &str| {
        let text = std::fs::read_to_string(VISUAL).expect("the visual fixture");
        assert!(text.contains(from), "the fixture holds {from:?}");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("edited.yaml");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("writable");
        (dir, path.to_string_lossy().into_owned())
    };
    // The click without `via: visual` is refused as a document, naming the rule.
    let (_dir, implicit) = rewritten(
        "    via: visual\n    action:\n      type: click_at",
        "    action:\n      type: click_at",
    );
    let (code, stdout, stderr) = cua(&["route", "explain", &implicit, "--step", "sign"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("cua::explicit_route_required"), "{stderr}");
    // A semantic click sent down the visual route has no route: the visual provider clicks
    // only at coordinates.
    let (_dir, misrouted) = rewritten(
        "  - id: open_card\n    action:",
        "  - id: open_card\n    via: visual\n    action:",
    );
    let (code, stdout, stderr) = cua(&[
        "route",
        "explain",
        &misrouted,
        "--platform",
        "linux",
        "--step",
        "open_card",
    ]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("route_unavailable: route visual does not implement click"),
        "{stdout}"
    );
    insta::assert_snapshot!("route_explain_visual_misrouted_click", stdout);
}

#[test]
fn usage_errors_name_what_is_wrong() {
    let check = |args: &[&str], expect: &str| {
        let (code, stdout, stderr) = cua(args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    };
    check(
        &["route", "explain", MIXED, "--step", "nope"],
        "corebank.member.account_review@1.0.0 has no step \"nope\"; its steps are: read_member, enter_member_id",
    );
    check(
        &["route", "explain", MIXED, "--platform", "amiga"],
        "unknown platform \"amiga\": use linux, macos or windows",
    );
    check(
        &["route", "explain", "no.such.capability@1.0.0"],
        "no.such.capability",
    );
}
