//! A finished run is complete and anchored: every file it wrote is bound into its `run_end`,
//! nothing else may be in its directory, nothing may follow `run_end`, its run record is
//! required, and the evidence root's ledger pins its head, so a run re-chained from its genesis
//! no longer verifies, and a ledger re-chained with it fails the installation key's signature.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cua_artifact::Actor;
use cua_evidence::{
    BreakKind, Escalate, InstallationKey, LEDGER_FILE, LedgerCheck, Note, RUN_RECORD_FILE,
    TRACE_FILE, VerifyReport, genesis_hash, project, read_trace, verify, verify_with,
};
use serde_json::{Value, json};

use crate::{bus, end_run, policy_redactor, replay_steps};

/// A PNG's first bytes: enough for the bus, which stores what it is given.
const SCREENSHOT: &[u8] = b"\x89PNG\r\n\x1a\nthe screen that authorized a coordinate click";

/// A finished replay with a snapshot, a screenshot named by a note, and its run record, under
/// `root`, signed with `key` when given.
fn finished(root: &Path, run_id: &str, key: Option<Arc<InstallationKey>>) -> PathBuf {
    let mut bus = bus(root, run_id, policy_redactor());
    if let Some(key) = key {
        bus = bus.with_signing_key(key);
    }
    replay_steps(&bus);
    let shot = bus
        .write_screenshot("visual-click", SCREENSHOT)
        .expect("the screenshot is written");
    bus.emit(
        Actor::Automation,
        0,
        Note {
            note: "visual observation".into(),
            data: BTreeMap::from([
                ("screenshot_ref".to_owned(), Value::from(shot.path)),
                ("screenshot_digest".to_owned(), Value::from(shot.digest)),
            ]),
        },
    )
    .expect("the note is written");
    end_run(&bus);
    bus.finish()
        .expect("the run record and the ledger line are written");
    bus.dir().to_owned()
}

fn broken(report: &VerifyReport) -> (BreakKind, String) {
    let broken = report
        .broken
        .as_ref()
        .unwrap_or_else(|| panic!("not detected: {report:?}"));
    (broken.kind, broken.message.clone())
}

fn screenshot_of(dir: &Path) -> PathBuf {
    fs::read_dir(dir.join("screenshots"))
        .expect("the screenshot directory")
        .flatten()
        .map(|entry| entry.path())
        .next()
        .expect("one screenshot")
}

#[test]
fn a_finished_run_names_every_file_and_is_recorded_in_the_ledger() {
    let root = tempfile::tempdir().expect("a root");
    let dir = finished(root.path(), "run-anchored", None);
    let report = verify(&dir).expect("a run directory");
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(
        report.ledger,
        Some(LedgerCheck::Recorded {
            seq: 1,
            signed: false
        })
    );
    let trace = fs::read_to_string(dir.join(TRACE_FILE)).expect("the trace");
    let run_end: Value = serde_json::from_str(trace.lines().last().expect("a line")).expect("JSON");
    let files = run_end["files"]
        .as_object()
        .expect("run_end names its files");
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.keys().any(|path| path.starts_with("screenshots/")));
    assert!(files.keys().any(|path| path.starts_with("snapshots/")));
}

/// Removes the run's `run_end` line and its run record, so the run looks interrupted.
fn cut_run_end(dir: &Path) {
    let trace = fs::read_to_string(dir.join(TRACE_FILE)).expect("the test controls these files");
    let mut lines: Vec<&str> = trace.lines().collect();
    lines.pop();
    fs::write(dir.join(TRACE_FILE), format!("{}\n", lines.join("\n")))
        .expect("the test controls these files");
    fs::remove_file(dir.join(RUN_RECORD_FILE)).expect("the test controls these files");
}

/// Replaces the evidence root's ledger by a link to a copy of it.
fn link_ledger(dir: &Path) {
    let root = dir.parent().expect("the test controls these files");
    let copy = root.join("ledger-copy");
    fs::rename(root.join(LEDGER_FILE), &copy).expect("the test controls these files");
    std::os::unix::fs::symlink(&copy, root.join(LEDGER_FILE))
        .expect("the test controls these files");
}

/// One tampering of a finished run, and the break it must produce.
struct Tampering {
    name: &'static str,
    tamper: fn(&Path),
    kind: BreakKind,
    /// The trace line the break is reported at (the run has 26).
    line: u64,
    /// What the message says of it.
    says: &'static str,
}

#[test]
fn every_tampering_of_a_finished_run_fails_verification() {
    let tamperings = [
        Tampering {
            name: "the screenshot that authorized a click swapped",
            tamper: |dir| {
                fs::write(screenshot_of(dir), b"\x89PNGanother screen")
                    .expect("the test controls these files")
            },
            kind: BreakKind::File,
            line: 25,
            says: "names screenshots/0001-visual-click.png, whose bytes no longer match",
        },
        Tampering {
            name: "the screenshot deleted",
            tamper: |dir| {
                fs::remove_file(screenshot_of(dir)).expect("the test controls these files")
            },
            kind: BreakKind::File,
            line: 25,
            says: "names screenshots/0001-visual-click.png, which is missing",
        },
        Tampering {
            name: "run_record.json deleted",
            tamper: |dir| {
                fs::remove_file(dir.join(RUN_RECORD_FILE)).expect("the test controls these files")
            },
            kind: BreakKind::RunRecord,
            line: 27,
            says: "run_record.json is missing: it was deleted",
        },
        Tampering {
            name: "bytes appended after run_end",
            tamper: |dir| {
                let mut trace =
                    fs::read(dir.join(TRACE_FILE)).expect("the test controls these files");
                trace.extend_from_slice(b"{\"seq\":99");
                fs::write(dir.join(TRACE_FILE), trace).expect("the test controls these files");
            },
            kind: BreakKind::AfterRunEnd,
            line: 27,
            says: "9 bytes follow run_end",
        },
        Tampering {
            name: "an unreferenced file added to the run directory",
            tamper: |dir| {
                fs::write(dir.join("notes.txt"), b"added later")
                    .expect("the test controls these files")
            },
            kind: BreakKind::Unreferenced,
            line: 27,
            says: "does not name: notes.txt",
        },
        Tampering {
            name: "an unreferenced snapshot added",
            tamper: |dir| {
                fs::write(dir.join("snapshots/0009-extra.json"), b"{}")
                    .expect("the test controls these files")
            },
            kind: BreakKind::Unreferenced,
            line: 27,
            says: "does not name: snapshots/0009-extra.json",
        },
        Tampering {
            name: "a snapshot replaced by a link to a file outside the run",
            tamper: |dir| {
                let snapshot = fs::read_dir(dir.join("snapshots"))
                    .expect("the test controls these files")
                    .flatten()
                    .next()
                    .expect("the test controls these files")
                    .path();
                let outside = dir
                    .parent()
                    .expect("the test controls these files")
                    .join("outside.json");
                fs::copy(&snapshot, &outside).expect("the test controls these files");
                fs::remove_file(&snapshot).expect("the test controls these files");
                std::os::unix::fs::symlink(&outside, &snapshot)
                    .expect("the test controls these files");
            },
            kind: BreakKind::File,
            line: 5,
            says: "which is not read: ",
        },
        Tampering {
            name: "run_end and the run record removed, so the run looks interrupted",
            tamper: cut_run_end,
            kind: BreakKind::Ledger,
            line: 26,
            says: "its trace has no run_end: the end of the run was removed",
        },
        Tampering {
            name: "run_end and the run record removed, and the ledger replaced by a link",
            tamper: |dir| {
                cut_run_end(dir);
                link_ledger(dir);
            },
            kind: BreakKind::Ledger,
            line: 26,
            says: "is a symbolic link",
        },
        Tampering {
            name: "the evidence root's ledger deleted",
            tamper: |dir| {
                let root = dir.parent().expect("the test controls these files");
                fs::remove_file(root.join(LEDGER_FILE)).expect("the test controls these files");
            },
            kind: BreakKind::Ledger,
            line: 26,
            says: "has no ledger.jsonl: it was deleted",
        },
        Tampering {
            name: "the ledger replaced by a link to a copy",
            tamper: link_ledger,
            kind: BreakKind::Ledger,
            line: 26,
            says: "is a symbolic link",
        },
    ];
    for tampering in &tamperings {
        let root = tempfile::tempdir().expect("a root");
        let dir = finished(root.path(), "run-tampered", None);
        (tampering.tamper)(&dir);
        let report = verify(&dir).expect("still a run directory");
        let (kind, message) = broken(&report);
        assert_eq!(kind, tampering.kind, "{}: {message}", tampering.name);
        let line = report.broken.as_ref().map(|broken| broken.line);
        assert_eq!(line, Some(tampering.line), "{}: {message}", tampering.name);
        assert!(
            message.contains(tampering.says),
            "{}: {message}",
            tampering.name
        );
    }
}

/// The screenshot a person was shown at an escalation is evidence of what they decided on: a
/// swapped one is caught at the escalation's line, not only at the run's end.
#[test]
fn an_escalations_screenshot_is_checked_at_its_line() {
    let root = tempfile::tempdir().expect("a root");
    let bus = bus(root.path(), "run-escalated", policy_redactor());
    replay_steps(&bus);
    let shot = bus
        .write_screenshot("needs-human", SCREENSHOT)
        .expect("the screenshot is written");
    bus.emit(
        Actor::Automation,
        0,
        Escalate {
            reason: "two cells match; a human must choose".into(),
            screenshot_ref: Some(shot.path.clone()),
            screenshot_digest: Some(shot.digest),
            ..Escalate::default()
        },
    )
    .expect("the escalation is written");
    let escalated_at = read_trace(bus.dir()).expect("the trace").len() as u64;
    end_run(&bus);
    bus.finish().expect("the run record is written");
    fs::write(bus.dir().join(&shot.path), b"\x89PNGanother screen").expect("the screenshot");
    let report = verify(bus.dir()).expect("a run directory");
    let broken = report.broken.expect("a swapped screenshot is caught");
    assert_eq!(
        (broken.line, broken.kind),
        (escalated_at, BreakKind::File),
        "{}",
        broken.message
    );
}

#[test]
fn the_ledger_is_found_from_the_run_directorys_real_path() {
    let root = tempfile::tempdir().expect("a root");
    let dir = finished(root.path(), "run-found", None);
    // As typed, this path's parent is the snapshot directory, which holds no ledger.
    let report = verify(&dir.join("snapshots/..")).expect("a run directory");
    assert!(report.is_intact(), "{report:?}");
}

#[test]
fn a_linked_run_directory_is_refused() {
    let root = tempfile::tempdir().expect("a root");
    let real = finished(root.path(), "run-real", None);
    let link = root.path().join("run-linked");
    std::os::unix::fs::symlink(&real, &link).expect("a link");
    assert!(verify(&link).is_err(), "a run directory given as a link");
}

/// Rewrites the run from its genesis as a forger who knows the format would: every line
/// re-sealed and re-chained with the balance changed, and the run record re-projected.
fn rechain(dir: &Path) {
    let run_id = dir
        .file_name()
        .expect("the test controls these files")
        .to_str()
        .expect("the test controls these files")
        .to_owned();
    let text = fs::read_to_string(dir.join(TRACE_FILE)).expect("the test controls these files");
    let mut prev = genesis_hash(&run_id);
    let mut forged = String::new();
    for line in text.lines() {
        let mut value: Value = serde_json::from_str(line).expect("the test controls these files");
        let object = value
            .as_object_mut()
            .expect("the test controls these files");
        object.remove("line_hash");
        object.insert("prev_hash".into(), json!(prev));
        if object["event"] == "run_end" {
            object["outputs"]["savings_balance"] = json!("$9,999.99");
        }
        let unsealed = serde_json::to_string(&value).expect("the test controls these files");
        let hash = format!("blake3:{}", blake3::hash(unsealed.as_bytes()).to_hex());
        let body = unsealed
            .strip_suffix('}')
            .expect("the test controls these files");
        forged.push_str(&format!("{body},\"line_hash\":\"{hash}\"}}\n"));
        prev = hash;
    }
    fs::write(dir.join(TRACE_FILE), forged).expect("the test controls these files");
    let record = project(&read_trace(dir).expect("the test controls these files"))
        .expect("the test controls these files");
    let mut bytes = serde_json::to_vec_pretty(&record).expect("the test controls these files");
    bytes.push(b'\n');
    fs::write(dir.join(RUN_RECORD_FILE), bytes).expect("the test controls these files");
}

/// Rewrites the ledger's last line to `head`, re-sealed as the format says.
fn rewrite_ledger(root: &Path, head: &str) {
    let path = root.join(LEDGER_FILE);
    let text = fs::read_to_string(&path).expect("the test controls these files");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let last = lines.last_mut().expect("the test controls these files");
    let mut value: Value = serde_json::from_str(last).expect("the test controls these files");
    value["head"] = json!(head);
    // The fields in the order the format fixes.
    let unsealed = format!(
        "{{\"seq\":{},\"run_id\":{},\"head\":{},\"events\":{},\"prev_hash\":{}}}",
        value["seq"], value["run_id"], value["head"], value["events"], value["prev_hash"]
    );
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"cua.ledger/v1\n");
    hasher.update(unsealed.as_bytes());
    value["line_hash"] = json!(format!("blake3:{}", hasher.finalize().to_hex()));
    *last = value.to_string();
    fs::write(&path, format!("{}\n", lines.join("\n"))).expect("the test controls these files");
}

#[test]
fn a_rechained_forgery_is_caught_by_the_ledger_and_a_rewritten_ledger_by_the_key() {
    let root = tempfile::tempdir().expect("a root");
    let key = Arc::new(InstallationKey::generate().expect("a key"));
    let public = key.public();
    let dir = finished(root.path(), "run-forged", Some(Arc::clone(&key)));
    let report = verify_with(&dir, Some(&public)).expect("the test controls these files");
    assert!(report.is_intact());
    assert!(
        report
            .summary()
            .ends_with(", head in the ledger (signature verified)"),
        "{}",
        report.summary()
    );
    assert!(
        verify(&dir)
            .expect("the test controls these files")
            .summary()
            .ends_with(", head in the ledger (signatures not checked)"),
        "without the key the reader is told the signature was not checked"
    );

    rechain(&dir);
    let report = verify(&dir).expect("a run directory");
    let (kind, message) = broken(&report);
    assert_eq!(kind, BreakKind::Ledger, "{message}");
    assert!(message.contains("rewritten"), "{message}");

    // The forger rewrites the ledger too: without the key nothing tells; with it, the
    // signature does not verify.
    rewrite_ledger(root.path(), &read_head(&dir));
    assert!(
        verify(&dir)
            .expect("the test controls these files")
            .is_intact(),
        "without the public key a re-sealed ledger cannot be told apart (documented)"
    );
    let report = verify_with(&dir, Some(&public)).expect("a run directory");
    let (kind, message) = broken(&report);
    assert_eq!(kind, BreakKind::Ledger, "{message}");
    assert!(message.contains("signature"), "{message}");
}

/// The `line_hash` of the trace's last line.
fn read_head(dir: &Path) -> String {
    let text = fs::read_to_string(dir.join(TRACE_FILE)).expect("the test controls these files");
    let last: Value =
        serde_json::from_str(text.lines().last().expect("the test controls these files"))
            .expect("the test controls these files");
    last["line_hash"]
        .as_str()
        .expect("the test controls these files")
        .to_owned()
}

/// The ledger line is a finished run's commit marker, written after its record: a run killed
/// after its `run_end` but before that line, with or without its record, verifies as
/// interrupted while finishing; a later line for its id with another head fails it.
#[test]
fn a_run_killed_while_finishing_verifies_as_such_and_a_later_head_fails_it() {
    let root = tempfile::tempdir().expect("a root");
    // Killed before its record: run_end written, finish never called.
    let bus = crate::bus(root.path(), "run-killed", crate::policy_redactor());
    crate::replay_run(&bus);
    let dir = bus.dir().to_owned();
    drop(bus);
    let report = verify(&dir).expect("a run directory");
    assert!(report.is_intact(), "{report:?}");
    assert!(report.finishing_interrupted);
    assert!(
        report.summary().contains("killed while finishing"),
        "{}",
        report.summary()
    );
    // Killed after its record: the record must still be the projection.
    let once = finished(root.path(), "run-once", None);
    let ledger = root.path().join(LEDGER_FILE);
    let recorded = fs::read_to_string(&ledger).expect("the test controls these files");
    let kept: String = recorded
        .lines()
        .filter(|line| !line.contains("\"run-once\""))
        .map(|line| format!("{line}\n"))
        .collect();
    fs::write(&ledger, kept).expect("the test controls these files");
    let report = verify(&once).expect("a run directory");
    assert!(
        report.is_intact() && report.finishing_interrupted,
        "{report:?}"
    );
    let record = once.join(RUN_RECORD_FILE);
    let edited = fs::read_to_string(&record)
        .expect("the test controls these files")
        .replace("\"authorized\": true", "\"authorized\": false");
    fs::write(&record, edited).expect("the test controls these files");
    let (kind, message) = broken(&verify(&once).expect("a run directory"));
    assert_eq!(kind, BreakKind::RunRecord, "{message}");
    // The id reused by a later run: the latest line is the one that counts.
    let dir = finished(root.path(), "run-again", None);
    cua_evidence::append_to_ledger(root.path(), "run-again", "blake3:later", 9, None)
        .expect("the test controls these files");
    let (kind, message) = broken(&verify(&dir).expect("the test controls these files"));
    assert_eq!(kind, BreakKind::Ledger, "{message}");
    assert!(message.contains("rewritten since"), "{message}");
}
