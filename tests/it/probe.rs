//! `cua probe CAPABILITY --snapshots RUN_DIR` on run directories: a sign-on screen on which
//! every target resolves (exit 0), one where the button was renamed (exit 1), and usage errors
//! (exit 2). Probing real recorded MemberDesk runs is tested in `cua-compile`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use cua_artifact::Actor;
use cua_evidence::{EvidenceBus, FixedClock, Observe, Redactor, RunId, Timestamp};
use cua_snapshot::{NodeId, NodeScope, UiNode, UiSnapshot};

/// Runs the binary in the repository; returns the exit code, stdout and stderr with `dir`
/// replaced by `DIR`.
fn cua(args: &[&str], dir: &Path) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the cua binary runs");
    let clean =
        |bytes: &[u8]| String::from_utf8_lossy(bytes).replace(&dir.display().to_string(), "DIR");
    (
        output.status.code().expect("an exit code"),
        clean(&output.stdout),
        clean(&output.stderr),
    )
}

/// The sign-on form in frame `content`, its button named `button`.
fn sign_on_page(button: &str) -> UiSnapshot {
    let content = NodeScope {
        frame: Some("content".to_owned()),
        region: None,
    };
    let node = |index: u32, role: &str, name: &str, depth: u32, parent: Option<u32>| UiNode {
        id: NodeId::new(format!("n{index}")),
        role: role.to_owned(),
        name: name.to_owned(),
        value: None,
        states: Vec::new(),
        bounds: None,
        scope: if depth == 0 {
            NodeScope::default()
        } else {
            content.clone()
        },
        depth,
        parent,
        children: Vec::new(),
        css_hint: None,
        labels: Vec::new(),
    };
    let mut nodes = vec![
        node(0, "document", "MemberDesk", 0, None),
        node(1, "textbox", "Operator ID", 1, Some(0)),
        node(2, "textbox", "Password", 1, Some(0)),
        node(3, "button", button, 1, Some(0)),
    ];
    nodes[0].children = vec![1, 2, 3];
    UiSnapshot {
        url: "http://127.0.0.1:8811/".to_owned(),
        title: "MemberDesk".to_owned(),
        http_status: Some(200),
        nodes,
    }
}

/// A run directory whose screens before each sign-on step show the form with `button`.
fn run_dir(root: &Path, run_id: &str, button: &str) -> PathBuf {
    let bus = EvidenceBus::create(
        root,
        RunId::parse(run_id).expect("a valid run id"),
        Arc::new(FixedClock(
            Timestamp::parse("2026-09-30T22:07:14.000000Z").expect("a valid timestamp"),
        )),
        Redactor::default(),
    )
    .expect("a fresh run directory");
    let page = sign_on_page(button);
    for step in ["enter_operator_id", "enter_password", "submit_sign_on"] {
        let written = bus
            .write_snapshot(&format!("{step}-before"), &page)
            .expect("written");
        bus.emit(Actor::System, 0, Observe::of(&page, Some(written)))
            .expect("written");
    }
    bus.dir().to_path_buf()
}

#[test]
fn probe_exits_0_when_every_target_is_unique() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let dir = run_dir(root.path(), "run-signon", "Sign On");
    let dir_text = dir.display().to_string();
    let args = [
        "probe",
        "corebank.auth.sign_on@1.0.0",
        "--snapshots",
        &dir_text,
    ];
    let (code, stdout, stderr) = cua(&args, &dir);
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    insta::assert_snapshot!("probe_clean_text", stdout);

    let mut json = args.to_vec();
    json.extend_from_slice(&["--format", "json"]);
    let (code, stdout, _) = cua(&json, &dir);
    assert_eq!(code, 0);
    let envelope: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON envelope");
    assert_eq!(envelope["ok"], true);
    insta::assert_json_snapshot!("probe_clean_json", envelope);
}

#[test]
fn probe_exits_1_when_a_target_is_missing() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let dir = run_dir(root.path(), "run-renamed", "Log In");
    let dir_text = dir.display().to_string();
    let args = [
        "probe",
        "corebank.auth.sign_on@1.0.0",
        "--snapshots",
        &dir_text,
    ];
    let (code, stdout, _) = cua(&args, &dir);
    assert_eq!(code, 1, "{stdout}");
    insta::assert_snapshot!("probe_missing_text", stdout);

    let mut json = args.to_vec();
    json.extend_from_slice(&["--format", "json"]);
    let (code, stdout, _) = cua(&json, &dir);
    assert_eq!(code, 1);
    let envelope: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON envelope");
    assert_eq!(envelope["ok"], false);
    assert_eq!(envelope["error"]["code"], "probe_found_drift");
    assert_eq!(envelope["data"]["steps"][2]["status"], "missing");
}

#[test]
fn probe_usage_errors_exit_2() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let dir = run_dir(root.path(), "run-usage", "Sign On");
    let dir_text = dir.display().to_string();
    let empty = root.path().join("empty");
    std::fs::create_dir_all(&empty).expect("created");
    let empty_text = empty.display().to_string();
    for (args, expected) in [
        (
            vec![
                "probe",
                "corebank.auth.sign_on@1.0.0",
                "--snapshots",
                &empty_text,
            ],
            "is not a run directory with snapshots",
        ),
        (
            vec!["probe", "corebank.member.nothing", "--snapshots", &dir_text],
            "corebank.member.nothing",
        ),
        (
            vec![
                "probe",
                "corebank.auth.sign_on@1.0.0",
                "--snapshots",
                &dir_text,
                "--tenant",
                "northgate-fcu",
            ],
            "tenant northgate-fcu has no binding",
        ),
    ] {
        let (code, _, stderr) = cua(&args, root.path());
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// A real replay reuses the screen the last action settled on, so most of its snapshots are
/// labelled `<step>-after`: the probe reads from the trace which snapshot each step was resolved
/// on and checks the step there, and only there.
#[test]
fn a_replayed_run_is_probed_on_the_screens_it_resolved_each_step_on() {
    let scene = crate::replay::Scene::new();
    let (code, stdout, stderr) = scene.replay(
        &[
            "corebank.member.savings_balance@1.0.0",
            "--input",
            "member_id=12345",
            "--run-id",
            "probed",
        ],
        &[],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let run_dir = scene.evidence().join("probed");
    let (code, stdout, stderr) = cua(
        &[
            "--format",
            "json",
            "probe",
            "corebank.member.savings_balance@1.0.0",
            "--snapshots",
            &run_dir.display().to_string(),
        ],
        &run_dir,
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON envelope");
    let trace = std::fs::read_to_string(run_dir.join("trace.jsonl")).expect("a trace");
    let mut last_observed = None;
    let mut resolved_on = std::collections::BTreeMap::new();
    for line in trace.lines() {
        let line: serde_json::Value = serde_json::from_str(line).expect("json");
        match line["event"].as_str() {
            Some("observe") => last_observed = line["snapshot_ref"].as_str().map(str::to_owned),
            Some("resolve") => {
                resolved_on.insert(
                    line["step"].as_str().unwrap().to_owned(),
                    last_observed.clone().unwrap(),
                );
            }
            _ => {}
        }
    }
    let steps = report["data"]["steps"].as_array().expect("steps");
    // The run also resolved the sign-on remedy's steps; every step of the capability is among
    // what it resolved.
    let mut after = 0;
    for step in steps {
        let name = step["step"].as_str().unwrap();
        assert_eq!(step["status"], "unique", "{step}");
        let snapshot = step["snapshot"].as_str().unwrap();
        assert_eq!(format!("snapshots/{snapshot}"), resolved_on[name], "{name}");
        after += usize::from(snapshot.ends_with("-after.json"));
    }
    assert!(
        after > 0,
        "no step was resolved on a reused screen: {steps:?}"
    );
}
