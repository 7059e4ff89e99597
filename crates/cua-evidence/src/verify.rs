//! Reading a run directory back: [`verify`] checks the hash chain and the files the trace names;
//! [`read_trace`] parses the committed lines for projection.

use std::fs;
use std::path::{Component, Path};

use cua_artifact::RunStatus;
use cua_fs::{Dir, Limit};
use serde::Serialize;
use serde_json::Value;

use crate::bus::{RUN_RECORD_FILE, TRACE_FILE};
use crate::chain::{self, Seal};
use crate::error::EvidenceError;
use crate::event::{Event, TraceLine};
use crate::ledger::{LEDGER_FILE, LedgerCheck, PublicKey, check as check_ledger, root_of};
use crate::project::project;

/// The largest trace read back, in bytes. Every event is bounded as it is emitted and a run by
/// its step and duration budgets, so a real trace is kilobytes to a few megabytes; this is far
/// above any, and still a size `verify` and the projection can hold in memory.
pub const MAX_TRACE_BYTES: u64 = 256 * 1024 * 1024;

/// The largest snapshot, screenshot or run record read back, in bytes. A snapshot of a large
/// page or a full-page PNG is a few megabytes.
pub const MAX_EVIDENCE_FILE_BYTES: u64 = 64 * 1024 * 1024;

const TRACE_LIMIT: Limit = Limit {
    bytes: MAX_TRACE_BYTES,
    what: "a trace",
};

/// The limit for the files a run directory holds beside its trace.
pub const EVIDENCE_FILE_LIMIT: Limit = Limit {
    bytes: MAX_EVIDENCE_FILE_BYTES,
    what: "an evidence file",
};

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifyReport {
    /// The run id, from the directory name.
    pub run_id: String,
    /// Committed lines that verified, in order, before any break.
    pub events: u64,
    /// Whether the verified lines include `run_end`.
    pub ended: bool,
    /// The run's status, from `run_end`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<RunStatus>,
    /// The `line_hash` of the last verified line (the genesis hash for an empty trace): the
    /// head to anchor elsewhere if a stronger guarantee is wanted.
    pub head: String,
    /// A final line without its newline: a write the run did not finish (it was killed). It is
    /// not counted and not trusted, and it is not tampering.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torn_tail: Option<TornTail>,
    /// The first place the evidence stops being trustworthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broken: Option<ChainBreak>,
    /// What the evidence root's ledger says of a finished run (`None` for one that did not
    /// finish, or whose chain broke first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger: Option<LedgerCheck>,
    /// The trace has its `run_end` but the ledger does not record the run: it was killed
    /// while finishing, before its commit marker (the ledger line) was written. Its lines and
    /// files verify, a run record present equals the projection, and nothing more is claimed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub finishing_interrupted: bool,
}

impl VerifyReport {
    /// Whether everything committed verifies (a truncated run can be intact: it is a prefix).
    pub fn is_intact(&self) -> bool {
        self.broken.is_none()
    }

    /// One line for people: `12 events, chain intact, run_end (success)`.
    pub fn summary(&self) -> String {
        let mut summary = format!(
            "{} event{}",
            self.events,
            if self.events == 1 { "" } else { "s" }
        );
        match &self.broken {
            Some(broken) => {
                summary.push_str(&format!(
                    ", chain broken at line {}: {}",
                    broken.line, broken.message
                ));
            }
            None => {
                summary.push_str(", chain intact");
                // `status` is the run_end's: there is one exactly when the run ended.
                match self.status {
                    Some(status) => {
                        summary.push_str(&format!(", run_end ({})", status.as_str()));
                    }
                    None => {
                        summary.push_str(", no run_end (the run was interrupted or is running)")
                    }
                }
            }
        }
        match &self.ledger {
            Some(LedgerCheck::Recorded { signed: true, .. }) => {
                summary.push_str(", head in the ledger (signature verified)");
            }
            Some(LedgerCheck::Recorded { signed: false, .. }) => {
                summary.push_str(", head in the ledger (signatures not checked)");
            }
            _ if self.finishing_interrupted => summary.push_str(
                ", not in the ledger: killed while finishing (or the ledger's last lines were cut)",
            ),
            _ => {}
        }
        if let Some(torn) = &self.torn_tail {
            summary.push_str(&format!(
                "; torn final line {} ({} bytes) ignored",
                torn.line, torn.bytes
            ));
        }
        summary
    }
}

/// An unterminated final line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TornTail {
    /// Its line number.
    pub line: u64,
    /// Its length in bytes.
    pub bytes: usize,
}

/// Where and why the evidence stops verifying.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainBreak {
    /// The 1-based line number in `trace.jsonl` the problem was found at.
    pub line: u64,
    pub kind: BreakKind,
    pub message: String,
}

/// The kinds of break, from the most local (one line's bytes) to the run as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakKind {
    /// The line does not end with a `line_hash` member.
    Unsealed,
    /// The line's bytes do not match its `line_hash`: it was edited.
    Altered,
    /// The line is sealed but is not a well-formed event.
    Malformed,
    /// `seq` skips ahead: lines before this one were removed.
    Missing,
    /// `seq` repeats or goes back: a line was inserted, or lines were reordered.
    OutOfOrder,
    /// The line belongs to another run.
    WrongRun,
    /// `prev_hash` is not the previous line's `line_hash`.
    ChainMismatch,
    /// An event follows `run_end`.
    AfterRunEnd,
    /// A file the line names is missing or differs from its recorded digest.
    File,
    /// `run_record.json` exists but the trace has no `run_end`: its tail was removed.
    TailRemoved,
    /// `run_record.json` is missing from a finished run, or is not the projection of the trace.
    RunRecord,
    /// A finished run's directory holds a file its `run_end` does not name, or something that
    /// is not a regular file (a link, a device).
    Unreferenced,
    /// The evidence root's ledger does not record this run's head (see `ledger.rs`).
    Ledger,
}

/// Verifies a run directory: every committed line's seal, `seq`, run id and `prev_hash`, the
/// files the trace names, and the run record against the trace. A broken chain is reported in
/// the report; the error is for a path that is not a run directory at all.
pub fn verify(run_dir: &Path) -> Result<VerifyReport, EvidenceError> {
    verify_with(run_dir, None)
}

/// [`verify`], also checking every signature of the evidence root's ledger with `public`.
///
/// What it proves: every line of the trace is as it was written and in order; a finished run
/// holds exactly the files its `run_end` names, each with its recorded digest, and a run record
/// that is the trace's projection; with a ledger, that the run's head is the one recorded when
/// it ended, and that a run the ledger records as finished still has its end; with the public
/// key, that the run's ledger line was written with the installation's key. What it does not
/// prove: that an interrupted run the ledger never recorded was not rewritten, that a run removed
/// together with its ledger line and every later one existed, that a ledger without signatures
/// was not re-chained, or that the screen showed what a snapshot says.
pub fn verify_with(
    run_dir: &Path,
    public: Option<&PublicKey>,
) -> Result<VerifyReport, EvidenceError> {
    let (run, run_id, bytes) = open_trace(run_dir)?;
    let mut report = VerifyReport {
        run_id: run_id.clone(),
        events: 0,
        ended: false,
        status: None,
        head: chain::genesis_hash(&run_id),
        torn_tail: None,
        broken: None,
        ledger: None,
        finishing_interrupted: false,
    };
    let segments: Vec<&[u8]> = bytes.split_inclusive(|&byte| byte == b'\n').collect();
    let mut lines = Vec::new();
    for (index, segment) in segments.iter().enumerate() {
        let number = index as u64 + 1;
        let Some(line) = segment.strip_suffix(b"\n") else {
            report.torn_tail = Some(TornTail {
                line: number,
                bytes: segment.len(),
            });
            break;
        };
        match check_line(&run, &run_id, number, line, &report) {
            Ok(checked) => {
                report.events = number;
                report.head = checked.line_hash.clone();
                if let Event::RunEnd(end) = &checked.event {
                    report.ended = true;
                    report.status = Some(end.status);
                }
                lines.push(checked);
            }
            Err((kind, message)) => {
                let (kind, message) = explain_skip(kind, message, number, &segments[index + 1..]);
                report.broken = Some(ChainBreak {
                    line: number,
                    kind,
                    message,
                });
                return Ok(report);
            }
        }
    }
    let ledger = check_ledger(&root_of(run_dir)?, &run_id, &report.head, public)?;
    if report.ended {
        // The ledger line is a finished run's commit marker, written after its record: a run
        // the ledger does not record (in a ledger that exists) was killed while finishing.
        let committed = !matches!(ledger, LedgerCheck::NotRecorded);
        report.broken = finished_run_problem(&run, &lines, &report, committed);
        if report.broken.is_none() {
            if !committed {
                report.finishing_interrupted = true;
            } else if ledger.is_failure() {
                report.broken = Some(ChainBreak {
                    line: report.events,
                    kind: BreakKind::Ledger,
                    message: ledger_message(&ledger),
                });
            }
        }
    } else if run.has_file(RUN_RECORD_FILE) {
        report.broken = check_run_record(&run, &lines, &report);
    } else {
        report.broken = match &ledger {
            // The ledger says the run finished: its end was cut off the trace.
            LedgerCheck::Recorded { .. } | LedgerCheck::HeadDiffers { .. } => Some(ChainBreak {
                line: report.events + 1,
                kind: BreakKind::Ledger,
                message: format!(
                    "the evidence root's {LEDGER_FILE} records this run as finished, but its \
                     trace has no run_end: the end of the run was removed"
                ),
            }),
            LedgerCheck::Broken { .. } => Some(ChainBreak {
                line: report.events + 1,
                kind: BreakKind::Ledger,
                message: ledger_message(&ledger),
            }),
            LedgerCheck::NoLedger | LedgerCheck::NotRecorded => None,
        };
    }
    report.ledger = Some(ledger);
    Ok(report)
}

/// What is wrong with a finished run beyond its lines: bytes after `run_end`, a missing or
/// edited run record, a file its `run_end` names missing or changed, a file it does not name.
/// A run not `committed` to the ledger was killed while finishing: its record may be missing
/// and a temporary file of the record's write may be left, so neither is held against it.
fn finished_run_problem(
    run: &Dir,
    lines: &[TraceLine],
    report: &VerifyReport,
    committed: bool,
) -> Option<ChainBreak> {
    let after = report.events + 1;
    if let Some(torn) = &report.torn_tail {
        return Some(ChainBreak {
            line: torn.line,
            kind: BreakKind::AfterRunEnd,
            message: format!(
                "{} bytes follow run_end: nothing may be appended to a finished run",
                torn.bytes
            ),
        });
    }
    if committed && !run.has_file(RUN_RECORD_FILE) {
        return Some(ChainBreak {
            line: after,
            kind: BreakKind::RunRecord,
            message: format!(
                "the run ended and the ledger records it, but {RUN_RECORD_FILE} is missing: it \
                 was deleted"
            ),
        });
    }
    if run.has_file(RUN_RECORD_FILE)
        && let Some(broken) = check_run_record(run, lines, report)
    {
        return Some(broken);
    }
    let Some(Event::RunEnd(end)) = lines.last().map(|line| &line.event) else {
        return None;
    };
    for (reference, digest) in &end.files {
        if let Err((kind, message)) = check_file(run, report.events, reference, digest) {
            return Some(ChainBreak {
                line: report.events,
                kind,
                message,
            });
        }
    }
    if !committed {
        return None;
    }
    let unreferenced = |message: String| {
        Some(ChainBreak {
            line: after,
            kind: BreakKind::Unreferenced,
            message,
        })
    };
    match stray_entries(run, &end.files) {
        Ok(stray) if stray.is_empty() => None,
        Ok(stray) => unreferenced(format!(
            "the run directory holds what its run_end does not name: {}",
            stray.join(", ")
        )),
        Err(error) => unreferenced(format!("the run directory cannot be listed: {error}")),
    }
}

/// The entries of a finished run's directory that are not its trace, its run record, a file
/// its `run_end` names, or a directory holding only such files.
fn stray_entries(
    run: &Dir,
    files: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<String>, cua_fs::FsError> {
    let mut stray = Vec::new();
    let mut pending = vec![(String::new(), None::<Dir>)];
    while let Some((prefix, dir)) = pending.pop() {
        let dir = dir.as_ref().unwrap_or(run);
        for name in dir.entry_names()? {
            let path = format!("{prefix}{name}");
            if prefix.is_empty() && (name == TRACE_FILE || name == RUN_RECORD_FILE) {
                if !dir.has_file(&name) {
                    stray.push(format!("{path} (not a regular file)"));
                }
                continue;
            }
            if files.contains_key(&path) {
                if !dir.has_file(&name) {
                    stray.push(format!("{path} (not a regular file)"));
                }
                continue;
            }
            let below = format!("{path}/");
            if files.keys().any(|file| file.starts_with(&below)) {
                match dir.open_dir(&name) {
                    Ok(sub) => pending.push((below, Some(sub))),
                    Err(_) => stray.push(format!("{path} (not a directory)")),
                }
                continue;
            }
            stray.push(path);
        }
    }
    stray.sort();
    Ok(stray)
}

fn ledger_message(check: &LedgerCheck) -> String {
    match check {
        LedgerCheck::NoLedger => format!(
            "the run ended but its evidence root has no {LEDGER_FILE}: it was deleted, the run \
             was copied out of its root (verify it where it was written), or the run was killed \
             while finishing"
        ),
        LedgerCheck::NotRecorded => format!(
            "the run ended but the evidence root's {LEDGER_FILE} does not record it: it was \
             removed, or the run was killed while finishing"
        ),
        LedgerCheck::HeadDiffers { recorded } => format!(
            "the evidence root's {LEDGER_FILE} recorded the head {recorded} when the run \
             ended: the run was rewritten since"
        ),
        LedgerCheck::Broken { line, reason } => {
            format!("the evidence root's {LEDGER_FILE} is broken at line {line}: {reason}")
        }
        LedgerCheck::Recorded { .. } => String::new(),
    }
}

/// Parses the committed lines of a run's trace (an unterminated final line is skipped), for
/// projection. It does not check the chain; [`verify`] does.
pub fn read_trace(run_dir: &Path) -> Result<Vec<TraceLine>, EvidenceError> {
    let (_, _, bytes) = open_trace(run_dir)?;
    bytes
        .split_inclusive(|&byte| byte == b'\n')
        .filter_map(|segment| segment.strip_suffix(b"\n"))
        .enumerate()
        .map(|(index, line)| {
            serde_json::from_slice(line).map_err(|source| EvidenceError::MalformedLine {
                line: index as u64 + 1,
                source,
            })
        })
        .collect()
}

/// The run directory, held open (it may not be a link, nor may anything read below it), its
/// name, and its trace's bytes.
fn open_trace(run_dir: &Path) -> Result<(Dir, String, Vec<u8>), EvidenceError> {
    let not_a_run_dir = |reason: String| EvidenceError::NotARunDir {
        path: run_dir.to_owned(),
        reason,
    };
    let run = match Dir::open(run_dir) {
        Ok(run) => run,
        Err(error) if error.is_not_found() => {
            return Err(not_a_run_dir("no such directory".into()));
        }
        Err(cua_fs::FsError::NotADirectory { kind, .. }) => {
            return Err(not_a_run_dir(format!("it is {kind}")));
        }
        Err(error) => return Err(error.into()),
    };
    let bytes = match run.read(TRACE_FILE, TRACE_LIMIT) {
        Ok(bytes) => bytes,
        Err(error) if error.is_not_found() => {
            return Err(not_a_run_dir(format!("it has no {TRACE_FILE}")));
        }
        Err(error) => return Err(error.into()),
    };
    let canonical = fs::canonicalize(run_dir)
        .map_err(|source| EvidenceError::io("resolve", run_dir, source))?;
    let run_id = canonical
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| not_a_run_dir("its name is not a run id".into()))?
        .to_owned();
    Ok((run, run_id, bytes))
}

type LineProblem = (BreakKind, String);

/// A `seq` that skips ahead means lines were removed, unless the skipped `seq` turns up later,
/// in which case lines were moved.
fn explain_skip(kind: BreakKind, message: String, number: u64, later: &[&[u8]]) -> LineProblem {
    if kind != BreakKind::Missing {
        return (kind, message);
    }
    let seq_of = |segment: &&[u8]| {
        serde_json::from_slice::<Value>(segment.strip_suffix(b"\n").unwrap_or(segment))
            .ok()?
            .get("seq")?
            .as_u64()
    };
    match later
        .iter()
        .position(|segment| seq_of(segment) == Some(number))
    {
        Some(offset) => (
            BreakKind::OutOfOrder,
            format!(
                "line {number} is out of order: seq {number} appears later, at line {}; lines \
                 were reordered",
                number + 1 + offset as u64
            ),
        ),
        None => (kind, message),
    }
}

fn check_line(
    run: &Dir,
    run_id: &str,
    number: u64,
    line: &[u8],
    report: &VerifyReport,
) -> Result<TraceLine, LineProblem> {
    match chain::unseal(line) {
        Seal::Missing => {
            return Err((
                BreakKind::Unsealed,
                format!(
                    "line {number} does not end with a line_hash: it was edited, or it is not a \
                     trace line"
                ),
            ));
        }
        Seal::Present { claimed, computed } if claimed != computed => {
            return Err((
                BreakKind::Altered,
                format!(
                    "line {number} was altered: its bytes hash to {computed}, not to its \
                     line_hash {claimed}"
                ),
            ));
        }
        Seal::Present { .. } => {}
    }
    let value: Value = serde_json::from_slice(line).map_err(|error| {
        (
            BreakKind::Malformed,
            format!("line {number} is not JSON: {error}"),
        )
    })?;
    let seq = value.get("seq").and_then(Value::as_u64).ok_or_else(|| {
        (
            BreakKind::Malformed,
            format!("line {number} has no numeric seq"),
        )
    })?;
    if seq > number {
        let missing = if seq == number + 1 {
            format!("line {number} of the original trace was")
        } else {
            format!("lines {number} to {} of the original trace were", seq - 1)
        };
        return Err((
            BreakKind::Missing,
            format!("line {number} has seq {seq}: {missing} removed"),
        ));
    }
    if seq < number {
        return Err((
            BreakKind::OutOfOrder,
            format!(
                "line {number} has seq {seq}, which comes earlier: a line was inserted or lines \
                 were reordered"
            ),
        ));
    }
    let line_run_id = value.get("run_id").and_then(Value::as_str);
    if line_run_id != Some(run_id) {
        return Err((
            BreakKind::WrongRun,
            format!(
                "line {number} belongs to run {}, not to {run_id}",
                line_run_id.unwrap_or("<none>")
            ),
        ));
    }
    let prev_hash = value.get("prev_hash").and_then(Value::as_str);
    if prev_hash != Some(report.head.as_str()) {
        let previous = if number == 1 {
            "the genesis hash of the run".to_owned()
        } else {
            format!("line {}'s line_hash", number - 1)
        };
        return Err((
            BreakKind::ChainMismatch,
            format!(
                "line {number}'s prev_hash is not {previous}: a line before it was inserted, \
                 removed or rewritten"
            ),
        ));
    }
    if report.ended {
        return Err((
            BreakKind::AfterRunEnd,
            format!("line {number} follows run_end: nothing may be appended to a finished run"),
        ));
    }
    let parsed: TraceLine = serde_json::from_value(value).map_err(|error| {
        (
            BreakKind::Malformed,
            format!("line {number} is not a well-formed event: {error}"),
        )
    })?;
    check_files(run, number, &parsed)?;
    Ok(parsed)
}

/// Every `<x>_ref` with a `<x>_digest` beside it names a file that must exist, inside the run
/// directory, with that digest.
fn check_files(run: &Dir, number: u64, line: &TraceLine) -> Result<(), LineProblem> {
    let (snapshot, screenshot) = match &line.event {
        Event::Observe(observe) => (
            observe
                .snapshot_ref
                .as_ref()
                .zip(observe.snapshot_digest.as_ref()),
            None,
        ),
        Event::Escalate(escalate) => (
            None,
            escalate
                .screenshot_ref
                .as_ref()
                .zip(escalate.screenshot_digest.as_ref()),
        ),
        Event::Effect(effect) => (
            None,
            effect
                .screenshot_ref
                .as_ref()
                .zip(effect.screenshot_digest.as_ref()),
        ),
        _ => (None, None),
    };
    let noted = match &line.event {
        Event::Note(note) => note
            .data
            .get("screenshot_ref")
            .and_then(Value::as_str)
            .zip(note.data.get("screenshot_digest").and_then(Value::as_str)),
        _ => None,
    };
    let named = snapshot
        .into_iter()
        .chain(screenshot)
        .map(|(reference, digest)| (reference.as_str(), digest.as_str()))
        .chain(noted);
    for (reference, digest) in named {
        check_file(run, number, reference, digest)?;
    }
    Ok(())
}

/// The file `reference` names must be inside the run directory, a regular file reached without
/// a link, with `digest`.
fn check_file(run: &Dir, number: u64, reference: &str, digest: &str) -> Result<(), LineProblem> {
    let relative = Path::new(reference);
    let inside = relative
        .components()
        .all(|component| matches!(component, Component::Normal(_)));
    if !inside {
        return Err((
            BreakKind::File,
            format!("line {number} names {reference}, which is outside the run directory"),
        ));
    }
    let bytes = match run.read(reference, EVIDENCE_FILE_LIMIT) {
        Ok(bytes) => bytes,
        Err(error) if error.is_not_found() => {
            return Err((
                BreakKind::File,
                format!("line {number} names {reference}, which is missing"),
            ));
        }
        Err(error) => {
            return Err((
                BreakKind::File,
                format!("line {number} names {reference}, which is not read: {error}"),
            ));
        }
    };
    let actual = format!("{}{}", chain::HASH_PREFIX, blake3::hash(&bytes).to_hex());
    if actual != digest {
        return Err((
            BreakKind::File,
            format!("line {number} names {reference}, whose bytes no longer match {digest}"),
        ));
    }
    Ok(())
}

fn check_run_record(run: &Dir, lines: &[TraceLine], report: &VerifyReport) -> Option<ChainBreak> {
    let next_line = report.events + 1;
    if !report.ended {
        return Some(ChainBreak {
            line: next_line,
            kind: BreakKind::TailRemoved,
            message: format!(
                "{RUN_RECORD_FILE} exists, so the run finished, but the trace has no run_end: \
                 its tail from line {next_line} was removed"
            ),
        });
    }
    let mismatch = |detail: String| ChainBreak {
        line: next_line,
        kind: BreakKind::RunRecord,
        message: format!("{RUN_RECORD_FILE} {detail}"),
    };
    let written: Value = match run
        .read(RUN_RECORD_FILE, EVIDENCE_FILE_LIMIT)
        .map_err(|error| error.to_string())
        .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|error| error.to_string()))
    {
        Ok(written) => written,
        Err(error) => return Some(mismatch(format!("cannot be read: {error}"))),
    };
    let projected = project(lines)
        .map_err(|error| error.to_string())
        .and_then(|record| serde_json::to_value(record).map_err(|error| error.to_string()));
    match projected {
        Ok(projected) if projected == written => None,
        Ok(_) => Some(mismatch(
            "is not the projection of trace.jsonl: one of them was edited".into(),
        )),
        Err(error) => Some(mismatch(format!("cannot be checked: {error}"))),
    }
}
