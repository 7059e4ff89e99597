//! The bus writes a trace that verifies; every kind of tampering is found at the line where it
//! happened; a killed run verifies as a prefix.

use std::fs;
use std::path::{Path, PathBuf};

use cua_artifact::{ActionKind, Actor, RunKind, RunStatus};
use cua_evidence::{
    BreakKind, EvidenceBus, EvidenceError, Note, RUN_RECORD_FILE, Redactor, RunId, RunStart,
    TRACE_FILE, genesis_hash, read_trace, unauthorized_dispatches, verify,
};
use serde_json::Value;

use crate::{act, bus, end_run, policy_redactor, read, replay_run, replay_steps, snapshot};

/// A finished replay run in a fresh temporary directory.
fn finished_run(run_id: &str) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), run_id, policy_redactor());
    replay_run(&bus);
    bus.finish().expect("the run record is written");
    let dir = bus.dir().to_owned();
    (root, dir)
}

fn trace_lines(dir: &Path) -> Vec<Vec<u8>> {
    fs::read(dir.join(TRACE_FILE))
        .expect("the trace is readable")
        .split_inclusive(|&byte| byte == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn write_lines(dir: &Path, lines: &[Vec<u8>]) {
    fs::write(dir.join(TRACE_FILE), lines.concat()).expect("the trace is writable");
}

/// Seals an unsealed line the way the bus does, as a forger who knows the format would.
fn seal(unsealed: &str) -> Vec<u8> {
    let hash = blake3::hash(unsealed.as_bytes()).to_hex();
    let body = unsealed.strip_suffix('}').expect("a JSON object");
    format!("{body},\"line_hash\":\"blake3:{hash}\"}}\n").into_bytes()
}

/// The line without its seal and newline, as JSON.
fn unsealed_json(line: &[u8]) -> Value {
    let mut value: Value = serde_json::from_slice(line).expect("a JSON line");
    value
        .as_object_mut()
        .expect("an object")
        .remove("line_hash");
    value
}

fn line_hash(line: &[u8]) -> String {
    let value: Value = serde_json::from_slice(line).expect("a JSON line");
    value["line_hash"].as_str().expect("a line hash").to_owned()
}

/// A long run on a large page (a grid of 10,000 rows): megabytes of trace and of snapshot
/// verify as a short run does.
#[test]
fn a_long_run_on_a_large_page_verifies() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-long", policy_redactor());
    replay_steps(&bus);
    let mut page = snapshot("12345");
    let cell = page.nodes[2].clone();
    for row in 0..10_000 {
        let mut node = cell.clone();
        node.id = cua_snapshot::NodeId::new(format!("content:/document[0]/cell[{row}]"));
        node.name = format!("Row {row}: statement line {row}, posted, cleared, reconciled");
        page.nodes.push(node);
    }
    let written = bus
        .write_snapshot("large_grid", &page)
        .expect("the snapshot is written");
    for poll in 0..1_000 {
        bus.emit(
            Actor::Automation,
            0,
            Note {
                note: format!("poll {poll}: {}", "the grid is still loading; ".repeat(60)),
                data: Default::default(),
            },
        )
        .expect("a note");
    }
    end_run(&bus);
    bus.finish().expect("the run record is written");
    let dir = bus.dir();
    let size = |path: PathBuf| fs::metadata(path).expect("written").len();
    let (trace, page) = (size(dir.join(TRACE_FILE)), size(dir.join(&written.path)));
    assert!(
        trace > 3 << 19 && page > 3 << 19,
        "{trace} and {page} bytes"
    );
    let report = verify(dir).expect("a run directory");
    assert!(report.is_intact(), "{}", report.summary());
}

#[test]
fn a_finished_run_verifies_and_has_no_unauthorized_dispatch() {
    let (_root, dir) = finished_run("run-intact");
    let report = verify(&dir).expect("a run directory");
    assert!(report.is_intact(), "{report:?}");
    assert!(report.ended);
    assert_eq!(report.status, Some(RunStatus::Success));
    assert_eq!(report.events, trace_lines(&dir).len() as u64);
    assert_eq!(report.torn_tail, None);
    let last = trace_lines(&dir).pop().expect("a last line");
    assert_eq!(report.head, line_hash(&last));
    assert_eq!(
        report.summary(),
        format!(
            "{} events, chain intact, run_end (success), head in the ledger (signatures not checked)",
            report.events
        )
    );
    let lines = read_trace(&dir).expect("the trace parses");
    assert_eq!(
        unauthorized_dispatches(&lines),
        Vec::<&cua_evidence::TraceLine>::new()
    );
}

#[test]
fn the_chain_starts_at_the_run_genesis_and_links_every_line() {
    let (_root, dir) = finished_run("run-links");
    let lines = trace_lines(&dir);
    let mut expected_prev = genesis_hash("run-links");
    for (index, line) in lines.iter().enumerate() {
        let value: Value = serde_json::from_slice(line).expect("a JSON line");
        assert_eq!(value["seq"], index as u64 + 1);
        assert_eq!(value["prev_hash"], expected_prev.as_str());
        // The seal is BLAKE3 over the line without its last member.
        let text = std::str::from_utf8(line).expect("UTF-8");
        let cut = text.rfind(",\"line_hash\":").expect("a sealed line");
        let unsealed = format!("{}}}", &text[..cut]);
        let hash = format!("blake3:{}", blake3::hash(unsealed.as_bytes()).to_hex());
        assert_eq!(value["line_hash"], hash.as_str());
        expected_prev = hash;
    }
}

#[test]
fn the_same_events_and_clock_give_byte_identical_evidence() {
    let (_first_root, first) = finished_run("run-determinism");
    let (_second_root, second) = finished_run("run-determinism");
    for file in [
        TRACE_FILE,
        RUN_RECORD_FILE,
        "snapshots/0001-open_search.json",
    ] {
        assert_eq!(
            fs::read(first.join(file)).expect("readable"),
            fs::read(second.join(file)).expect("readable"),
            "{file} differs between two identical runs"
        );
    }
    insta::assert_snapshot!("replay_trace", read(&first.join(TRACE_FILE)));
}

/// One way to tamper with a finished run, and where `verify` must say it broke.
struct Tampering {
    name: &'static str,
    tamper: fn(&Path, &mut Vec<Vec<u8>>),
    line: u64,
    kind: BreakKind,
}

fn check(tampering: &Tampering) {
    let (_root, dir) = finished_run("run-tamper");
    let mut lines = trace_lines(&dir);
    (tampering.tamper)(&dir, &mut lines);
    write_lines(&dir, &lines);
    let report = verify(&dir).expect("still a run directory");
    let broken = report
        .broken
        .as_ref()
        .unwrap_or_else(|| panic!("{}: not detected: {report:?}", tampering.name));
    assert_eq!(
        (broken.line, broken.kind),
        (tampering.line, tampering.kind),
        "{}: {}",
        tampering.name,
        broken.message
    );
    assert!(!report.is_intact());
    // Everything before the break verified.
    assert_eq!(report.events, tampering.line - 1, "{}", tampering.name);
}

/// Changes the one byte that follows `needle` in the line to another digit.
fn flip_byte(line: &mut [u8], needle: &[u8]) {
    let at = line
        .windows(needle.len())
        .position(|window| window == needle)
        .expect("the needle is in the line")
        + needle.len();
    line[at] = if line[at] == b'2' { b'3' } else { b'2' };
}

#[test]
fn tampering_is_found_at_the_line_where_it_happened() {
    let table = [
        Tampering {
            name: "delete the first line",
            tamper: |_, lines| {
                lines.remove(0);
            },
            line: 1,
            kind: BreakKind::Missing,
        },
        Tampering {
            name: "delete a middle line",
            tamper: |_, lines| {
                lines.remove(4);
            },
            line: 5,
            kind: BreakKind::Missing,
        },
        Tampering {
            name: "delete two middle lines",
            tamper: |_, lines| {
                lines.drain(6..8);
            },
            line: 7,
            kind: BreakKind::Missing,
        },
        Tampering {
            name: "edit one byte of a middle line",
            tamper: |_, lines| flip_byte(&mut lines[3], b"\"duration_ms\":"),
            line: 4,
            kind: BreakKind::Altered,
        },
        Tampering {
            name: "edit one byte of the last line",
            tamper: |_, lines| {
                let last = lines.len() - 1;
                flip_byte(&mut lines[last], b"\"steps_total\":");
            },
            line: 25,
            kind: BreakKind::Altered,
        },
        Tampering {
            name: "edit one byte of a line's own hash",
            tamper: |_, lines| flip_byte(&mut lines[2], b"\"line_hash\":\"blake3:"),
            line: 3,
            kind: BreakKind::Altered,
        },
        Tampering {
            name: "swap two lines",
            tamper: |_, lines| lines.swap(3, 4),
            line: 4,
            kind: BreakKind::OutOfOrder,
        },
        Tampering {
            name: "move a line to the end",
            tamper: |_, lines| {
                let moved = lines.remove(2);
                lines.push(moved);
            },
            line: 3,
            kind: BreakKind::OutOfOrder,
        },
        Tampering {
            name: "insert a copy of an earlier line",
            tamper: |_, lines| {
                let copy = lines[1].clone();
                lines.insert(6, copy);
            },
            line: 7,
            kind: BreakKind::OutOfOrder,
        },
        Tampering {
            name: "insert a hand-written line",
            tamper: |_, lines| {
                let forged = br#"{"seq":3,"at":"2026-09-30T22:07:14.003000Z","run_id":"run-tamper","event":"note","actor":"human","lease_epoch":0,"note":"all good"}"#;
                let mut line = forged.to_vec();
                line.push(b'\n');
                lines.insert(2, line);
            },
            line: 3,
            kind: BreakKind::Unsealed,
        },
        Tampering {
            name: "insert a correctly sealed forgery (caught at the next line)",
            tamper: |_, lines| {
                let mut forged = unsealed_json(&lines[2]);
                forged["event"] = "note".into();
                let object = forged.as_object_mut().expect("an object");
                object.retain(|key, _| {
                    [
                        "seq",
                        "at",
                        "run_id",
                        "event",
                        "actor",
                        "lease_epoch",
                        "prev_hash",
                    ]
                    .contains(&key.as_str())
                });
                object.insert("note".into(), "all good".into());
                lines.insert(2, seal(&forged.to_string()));
            },
            line: 4,
            kind: BreakKind::OutOfOrder,
        },
        Tampering {
            name: "rewrite a line and reseal it (caught by the next line's prev_hash)",
            tamper: |_, lines| {
                let mut edited = unsealed_json(&lines[3]);
                edited["duration_ms"] = 99.into();
                lines[3] = seal(&edited.to_string());
            },
            line: 5,
            kind: BreakKind::ChainMismatch,
        },
        Tampering {
            name: "append a sealed event after run_end",
            tamper: |_, lines| {
                let last = lines.last().expect("a last line").clone();
                let mut appended = unsealed_json(&last);
                let object = appended.as_object_mut().expect("an object");
                object.retain(|key, _| {
                    [
                        "seq",
                        "at",
                        "run_id",
                        "event",
                        "actor",
                        "lease_epoch",
                        "prev_hash",
                    ]
                    .contains(&key.as_str())
                });
                object.insert("seq".into(), (lines.len() as u64 + 1).into());
                object.insert("event".into(), "note".into());
                object.insert("note".into(), "late".into());
                object.insert("prev_hash".into(), line_hash(&last).into());
                lines.push(seal(&appended.to_string()));
            },
            line: 26,
            kind: BreakKind::AfterRunEnd,
        },
        Tampering {
            name: "cut the tail of a finished run at a line boundary",
            tamper: |_, lines| lines.truncate(20),
            line: 21,
            kind: BreakKind::TailRemoved,
        },
        Tampering {
            name: "a torn line that is not the last",
            tamper: |_, lines| {
                let torn = lines[5][..40].to_vec();
                lines[5] = [torn, b"\n".to_vec()].concat();
            },
            line: 6,
            kind: BreakKind::Unsealed,
        },
        Tampering {
            name: "edit the run record",
            tamper: |dir, _| {
                let path = dir.join(RUN_RECORD_FILE);
                let edited = read(&path).replace("\"authorized\": true", "\"authorized\": false");
                fs::write(path, edited).expect("writable");
            },
            line: 26,
            kind: BreakKind::RunRecord,
        },
        Tampering {
            name: "edit a snapshot",
            tamper: |dir, _| {
                let path = dir.join("snapshots/0001-open_search.json");
                let edited = read(&path).replace("Member Search", "Member Sea rch");
                fs::write(path, edited).expect("writable");
            },
            line: 5,
            kind: BreakKind::File,
        },
        Tampering {
            name: "delete a snapshot",
            tamper: |dir, _| {
                fs::remove_file(dir.join("snapshots/0001-open_search.json")).expect("removable");
            },
            line: 5,
            kind: BreakKind::File,
        },
    ];
    for tampering in &table {
        check(tampering);
    }
}

#[test]
fn a_trace_moved_under_another_run_id_does_not_verify() {
    let (root, dir) = finished_run("run-original");
    let moved = root.path().join("run-moved");
    fs::rename(&dir, &moved).expect("renamable");
    let report = verify(&moved).expect("a run directory");
    let broken = report.broken.expect("detected");
    assert_eq!((broken.line, broken.kind), (1, BreakKind::WrongRun));
    assert_eq!(
        broken.message,
        "line 1 belongs to run run-original, not to run-moved"
    );
}

#[test]
fn messages_name_the_line_and_the_cause() {
    let (_root, dir) = finished_run("run-messages");
    let mut lines = trace_lines(&dir);
    lines.remove(4);
    write_lines(&dir, &lines);
    let report = verify(&dir).expect("a run directory");
    insta::assert_snapshot!(report.summary(), @"4 events, chain broken at line 5: line 5 has seq 6: line 5 of the original trace was removed");

    let (_root, dir) = finished_run("run-messages");
    let mut lines = trace_lines(&dir);
    lines.swap(3, 5);
    write_lines(&dir, &lines);
    let report = verify(&dir).expect("a run directory");
    insta::assert_snapshot!(report.summary(), @"3 events, chain broken at line 4: line 4 is out of order: seq 4 appears later, at line 6; lines were reordered");

    // A broken link names what the line should have pointed at.
    for (index, expect) in [
        (0, "the genesis hash of the run"),
        (4, "line 4's line_hash"),
    ] {
        let (_root, dir) = finished_run("run-messages");
        let mut lines = trace_lines(&dir);
        let mut relinked = unsealed_json(&lines[index]);
        relinked["prev_hash"] = format!("blake3:{}", "0".repeat(64)).into();
        lines[index] = seal(&relinked.to_string());
        write_lines(&dir, &lines);
        let report = verify(&dir).expect("a run directory");
        let message = report
            .broken
            .map(|broken| broken.message)
            .unwrap_or_default();
        assert!(message.contains(expect), "{message}");
    }

    // The projection's reader names the line it cannot parse.
    let mut lines = trace_lines(&dir);
    lines[2] = b"{\"seq\":3,\n".to_vec();
    write_lines(&dir, &lines);
    let error = read_trace(&dir).expect_err("a malformed line");
    assert!(
        error
            .to_string()
            .starts_with("trace line 3 is not a well-formed event"),
        "{error}"
    );
}

/// A run killed midway: the bus is dropped without `run_end`, possibly mid-write.
fn killed_run(root: &Path) -> PathBuf {
    let bus = bus(root, "run-killed", Redactor::default());
    bus.emit(
        Actor::Automation,
        0,
        RunStart {
            kind: RunKind::Replay,
            ..run_start()
        },
    )
    .expect("written");
    act(
        &bus,
        Actor::Automation,
        1,
        "open_search",
        "dec-000001",
        ActionKind::Navigate,
        None,
    );
    bus.dir().to_owned()
}

fn run_start() -> RunStart {
    RunStart {
        kind: RunKind::Replay,
        capability: None,
        content_hash: None,
        sealed_hash: None,
        bound_by: None,
        tenant: None,
        inputs: Default::default(),
        goal: None,
        target_url: None,
        model: None,
        scripted_model: None,
        resolver_config_hash: None,
    }
}

#[test]
fn a_killed_run_verifies_as_a_prefix() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let dir = killed_run(root.path());
    let report = verify(&dir).expect("a run directory");
    assert!(report.is_intact());
    assert!(!report.ended);
    assert_eq!(
        report.summary(),
        "3 events, chain intact, no run_end (the run was interrupted or is running)"
    );
}

#[test]
fn a_torn_final_line_is_reported_but_is_not_tampering() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let dir = killed_run(root.path());
    let mut lines = trace_lines(&dir);
    let torn = lines[2][..57].to_vec();
    lines[2] = torn;
    write_lines(&dir, &lines);
    let report = verify(&dir).expect("a run directory");
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.events, 2);
    assert_eq!(
        report.summary(),
        "2 events, chain intact, no run_end (the run was interrupted or is running); torn \
         final line 3 (57 bytes) ignored"
    );
    // Only the committed lines are read back.
    assert_eq!(read_trace(&dir).expect("parses").len(), 2);
}

#[test]
fn an_empty_trace_is_an_intact_run_that_never_started() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-empty", Redactor::default());
    let report = verify(bus.dir()).expect("a run directory");
    assert!(report.is_intact());
    assert_eq!(report.events, 0);
    assert_eq!(report.head, genesis_hash("run-empty"));
}

#[test]
fn nothing_is_written_after_run_end_and_the_record_needs_it() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-closed", Redactor::default());
    bus.emit(Actor::Automation, 0, run_start())
        .expect("written");
    assert!(matches!(bus.finish(), Err(EvidenceError::RunNotEnded)));
    bus.emit(
        Actor::Automation,
        0,
        cua_evidence::RunEnd {
            failure_code: Some(cua_artifact::FailureCode::Internal),
            reason: Some("test".into()),
            ..cua_evidence::RunEnd::with_status(RunStatus::Failed)
        },
    )
    .expect("written");
    let late = bus.emit(
        Actor::Automation,
        0,
        Note {
            note: "late".into(),
            data: Default::default(),
        },
    );
    assert!(matches!(late, Err(EvidenceError::RunEnded)), "{late:?}");
    let snapshot = bus.write_snapshot("late", &crate::snapshot("1"));
    assert!(matches!(snapshot, Err(EvidenceError::RunEnded)));
    bus.finish().expect("the record is written once");
    assert!(verify(bus.dir()).expect("a run directory").is_intact());
}

#[test]
fn an_existing_run_directory_is_never_overwritten() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let run_id = RunId::parse("run-exists").expect("valid");
    let clock = crate::clock();
    // An empty directory (created by a caller ahead of time) is fine.
    fs::create_dir(root.path().join("run-exists")).expect("creatable");
    let bus = EvidenceBus::create(
        root.path(),
        run_id.clone(),
        clock.clone(),
        Redactor::default(),
    )
    .expect("an empty run directory is accepted");
    bus.emit(Actor::Automation, 0, run_start())
        .expect("written");
    let again = EvidenceBus::create(root.path(), run_id, clock, Redactor::default());
    let Err(EvidenceError::RunDirNotEmpty { path }) = again else {
        panic!("expected RunDirNotEmpty, got {again:?}");
    };
    assert_eq!(path, root.path().join("run-exists"));
    assert_eq!(
        trace_lines(bus.dir()).len(),
        1,
        "the first run is untouched"
    );
}

#[test]
fn run_ids_are_validated() {
    let check = |text: &str, expect: Result<(), &str>| {
        let parsed = RunId::parse(text)
            .map(|_| ())
            .map_err(|error| error.to_string());
        assert_eq!(parsed, expect.map_err(str::to_owned), "{text}");
    };
    check("run-20260930-0001", Ok(()));
    check("demo.escalation_2", Ok(()));
    check("", Err("invalid run id ``: must be 1 to 128 characters"));
    check(
        "20260930",
        Err("invalid run id `20260930`: must contain a letter, so it is never read as a number"),
    );
    check(
        "../etc",
        Err("invalid run id `../etc`: may hold only ASCII letters, digits, `.`, `_` and `-`"),
    );
    check(
        ".hidden",
        Err("invalid run id `.hidden`: must start with a letter or a digit"),
    );
    check(
        "run id",
        Err("invalid run id `run id`: may hold only ASCII letters, digits, `.`, `_` and `-`"),
    );
    // Nothing the evidence root keeps for itself.
    check(
        "ledger.jsonl",
        Err(
            "invalid run id `ledger.jsonl`: names one of the evidence root's own files \
             (`*.jsonl`, `interventions`)",
        ),
    );
    assert!(RunId::parse("interventions").is_err());
    // Nothing that could name another directory: a separator, `..`, a NUL, or a name longer
    // than the bus allows.
    for text in ["runs/pwned", "..", "run\0id"] {
        assert!(RunId::parse(text).is_err(), "{text:?}");
    }
    assert!(RunId::parse(&"r".repeat(128)).is_ok());
    check(
        &"r".repeat(129),
        Err(&format!(
            "invalid run id `{}`: must be 1 to 128 characters",
            "r".repeat(129)
        )),
    );
}

#[test]
fn verify_refuses_what_is_not_a_run_directory() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let missing = verify(&root.path().join("nope")).expect_err("not a run directory");
    assert!(
        missing
            .to_string()
            .ends_with("is not a run directory: no such directory"),
        "{missing}"
    );
    let empty = verify(root.path()).expect_err("not a run directory");
    assert!(
        empty
            .to_string()
            .ends_with("is not a run directory: it has no trace.jsonl"),
        "{empty}"
    );
}

#[test]
fn concurrent_emitters_share_one_chain() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-concurrent", Redactor::default());
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let bus = &bus;
            scope.spawn(move || {
                for index in 0..50 {
                    bus.emit(
                        Actor::System,
                        0,
                        Note {
                            note: format!("thread {thread} note {index}"),
                            data: Default::default(),
                        },
                    )
                    .expect("written");
                }
            });
        }
    });
    let report = verify(bus.dir()).expect("a run directory");
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.events, 200);
}
