//! `cua evidence verify RUN_DIR` on real run directories: intact, broken, not a run directory.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use cua_artifact::{Actor, RunKind, RunStatus};
use cua_evidence::{
    EvidenceBus, FixedClock, Redactor, RunEnd, RunId, RunStart, TRACE_FILE, Timestamp,
};

/// Runs the binary; returns the exit code, stdout and stderr with the run directory's path
/// replaced by `RUN_DIR`.
fn cua(args: &[&str], run_dir: &Path) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(args)
        .output()
        .expect("the cua binary runs");
    let clean = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes).replace(&run_dir.display().to_string(), "RUN_DIR")
    };
    (
        output.status.code().expect("an exit code"),
        clean(&output.stdout),
        clean(&output.stderr),
    )
}

/// A two-event run: started, ended, recorded.
fn finished_run(root: &Path) -> std::path::PathBuf {
    let at = Timestamp::parse("2026-09-30T22:07:14.000000Z").expect("a valid timestamp");
    let bus = EvidenceBus::create(
        root,
        RunId::parse("run-cli").expect("a valid run id"),
        Arc::new(FixedClock(at)),
        Redactor::default(),
    )
    .expect("a fresh run directory");
    bus.emit(
        Actor::Automation,
        0,
        RunStart {
            kind: RunKind::Replay,
            capability: None,
            content_hash: None,
            sealed_hash: None,
            bound_by: None,
            tenant: None,
            inputs: BTreeMap::new(),
            goal: None,
            target_url: None,
            model: None,
            scripted_model: None,
            resolver_config_hash: None,
        },
    )
    .expect("written");
    bus.emit(
        Actor::Automation,
        0,
        RunEnd {
            steps_executed: Some(0),
            steps_total: Some(0),
            ..RunEnd::with_status(RunStatus::Success)
        },
    )
    .expect("written");
    bus.finish().expect("the run record is written");
    bus.dir().to_owned()
}

#[test]
fn an_intact_run_exits_zero() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let dir = finished_run(root.path());
    let path = dir.to_str().expect("a UTF-8 path");
    let (code, stdout, stderr) = cua(&["evidence", "verify", path], &dir);
    assert_eq!((code, stderr.as_str()), (0, ""));
    insta::assert_snapshot!(stdout, @"RUN_DIR: 2 events, chain intact, run_end (success), head in the ledger (signatures not checked)");
    let (code, stdout, _) = cua(&["--format", "json", "evidence", "verify", path], &dir);
    assert_eq!(code, 0);
    let envelope: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON envelope");
    assert_eq!(envelope["ok"], true);
    assert_eq!(envelope["command"], "evidence verify");
    assert_eq!(envelope["data"]["events"], 2);
    assert_eq!(envelope["data"]["ended"], true);
}

#[test]
fn a_tampered_run_exits_one_naming_the_line() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let dir = finished_run(root.path());
    let trace = dir.join(TRACE_FILE);
    let text = std::fs::read_to_string(&trace).expect("readable");
    std::fs::write(
        &trace,
        text.replacen("\"kind\":\"replay\"", "\"kind\":\"discovery\"", 1),
    )
    .expect("writable");
    let path = dir.to_str().expect("a UTF-8 path");
    let (code, stdout, _) = cua(&["evidence", "verify", path], &dir);
    assert_eq!(code, 1);
    assert!(
        stdout.starts_with("RUN_DIR: 0 events, chain broken at line 1: line 1 was altered"),
        "{stdout}"
    );
    let (code, stdout, _) = cua(&["--format", "json", "evidence", "verify", path], &dir);
    assert_eq!(code, 1);
    let envelope: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON envelope");
    assert_eq!(envelope["ok"], false);
    assert_eq!(envelope["error"]["code"], "evidence_broken");
    assert_eq!(envelope["data"]["broken"]["line"], 1);
    assert_eq!(envelope["data"]["broken"]["kind"], "altered");
}

#[test]
fn a_path_that_is_not_a_run_directory_is_a_usage_error() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let path = root.path().to_str().expect("a UTF-8 path");
    let (code, stdout, stderr) = cua(&["evidence", "verify", path], root.path());
    assert_eq!((code, stdout.as_str()), (2, ""));
    insta::assert_snapshot!(stderr, @"error: RUN_DIR is not a run directory: it has no trace.jsonl");
}
