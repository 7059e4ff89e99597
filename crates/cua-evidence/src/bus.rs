//! The evidence bus: one directory per run, an append-only hash-chained `trace.jsonl`, the
//! snapshots and screenshots the trace refers to, and `run_record.json` at the end.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cua_artifact::{Actor, RunRecord};
use cua_fs::{Create, Dir, FileMode, FsError};
use cua_snapshot::UiSnapshot;
use serde::Serialize;
use serde_json::Value;

use crate::chain::{self, ENVELOPE_KEYS, Envelope};
use crate::clock::Clock;
use crate::error::EvidenceError;
use crate::event::{Event, Intent};
use crate::intent::IntentJournal;
use crate::ledger::{self, InstallationKey};
use crate::project::project;
use crate::redact::Redactor;
use crate::verify::read_trace;

/// The trace file's name inside a run directory.
pub const TRACE_FILE: &str = "trace.jsonl";
/// The run record's file name inside a run directory.
pub const RUN_RECORD_FILE: &str = "run_record.json";
/// The snapshot directory's name inside a run directory.
pub const SNAPSHOT_DIR: &str = "snapshots";
/// The screenshot directory's name inside a run directory.
pub const SCREENSHOT_DIR: &str = "screenshots";

/// Names in an evidence root that are not runs: the ledger and batch state files end in
/// `.jsonl`, and the console keeps interventions in their own directory.
pub const RESERVED_ROOT_NAMES: &[&str] = &[INTERVENTIONS_DIR];

/// The directory of an evidence root where the console keeps each run's interventions
/// (`interventions/<run id>/<intervention id>.json`): outside the run directory, whose files
/// are fixed when the run ends while an intervention changes as operators claim and release it.
pub const INTERVENTIONS_DIR: &str = "interventions";

/// A run id: the name of the run's evidence directory. Injected by the caller (so tests and
/// batch runs choose them), 1 to 128 ASCII letters, digits, `.`, `_` or `-`, starting with a
/// letter or digit and containing at least one letter, so no sink mistakes it for a number,
/// and never a name the evidence root keeps for itself ([`RESERVED_ROOT_NAMES`], `*.jsonl`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct RunId(String);

impl RunId {
    /// Parses a run id.
    pub fn parse(text: &str) -> Result<Self, EvidenceError> {
        let reason = if text.is_empty() || text.len() > 128 {
            Some("must be 1 to 128 characters")
        } else if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            Some("may hold only ASCII letters, digits, `.`, `_` and `-`")
        } else if !text.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            Some("must start with a letter or a digit")
        } else if !text.bytes().any(|b| b.is_ascii_alphabetic()) {
            Some("must contain a letter, so it is never read as a number")
        } else if text.ends_with(".jsonl") || RESERVED_ROOT_NAMES.contains(&text) {
            Some("names one of the evidence root's own files (`*.jsonl`, `interventions`)")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(EvidenceError::InvalidRunId {
                run_id: text.to_owned(),
                reason,
            }),
            None => Ok(Self(text.to_owned())),
        }
    }

    /// The id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// A file the bus wrote next to the trace: its path relative to the run directory, and the
/// blake3 of its bytes (`verify` checks both when an event names them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArtifactRef {
    pub path: String,
    pub digest: String,
}

/// The evidence of one run. Every method takes `&self`: the executor, the console and the
/// broker may share one bus; lines are serialized under a lock, so `seq` and the chain follow
/// the order in which events were emitted.
pub struct EvidenceBus {
    run_id: RunId,
    root: PathBuf,
    dir: Dir,
    clock: Arc<dyn Clock>,
    redactor: Redactor,
    writer: Mutex<Writer>,
    /// Signs the ledger line of this run, when the installation has a key.
    key: Option<Arc<InstallationKey>>,
    /// Where intents are recorded besides the trace (a batch queue), when anywhere.
    journal: Option<Arc<dyn IntentJournal>>,
    /// Told the name of every event once it is in the trace (a progress display).
    observer: Option<Arc<dyn Fn(&'static str) + Send + Sync>>,
}

impl EvidenceBus {
    /// Creates `<root>/<run_id>/` (mode 0700) with an empty `trace.jsonl` (0600). Refuses an
    /// evidence root or run directory that is a symbolic link, a run directory another user
    /// owns, and one that already exists and is not empty: evidence is never overwritten, nor
    /// written where someone else chose.
    pub fn create(
        root: &Path,
        run_id: RunId,
        clock: Arc<dyn Clock>,
        redactor: Redactor,
    ) -> Result<Self, EvidenceError> {
        let root_dir = Dir::create_all(root, FileMode::Private)?;
        let dir = match root_dir.create_dir(run_id.as_str(), FileMode::Private) {
            Ok(dir) => dir,
            Err(FsError::Exists { .. }) => {
                let dir = root_dir.open_dir(run_id.as_str())?;
                check_reusable(&dir)?;
                dir
            }
            Err(error) => return Err(error.into()),
        };
        let file = dir.open_append(TRACE_FILE, Create::New, FileMode::Private)?;
        let trace_path = dir.path().join(TRACE_FILE);
        // Both entries must survive a power cut: a resume that finds no run directory takes it
        // that nothing was written, which an intent synced into a lost directory would belie.
        dir.sync()?;
        // The ledger exists from a root's first run on, so a root without one was tampered
        // with rather than interrupted before its first run finished.
        ledger::ensure(&root_dir)?;
        root_dir.sync()?;
        let prev_hash = chain::genesis_hash(run_id.as_str());
        Ok(Self {
            run_id,
            root: root.to_owned(),
            dir,
            clock,
            redactor,
            writer: Mutex::new(Writer {
                file,
                trace_path,
                next_seq: 1,
                prev_hash,
                ended: false,
                failed: false,
                snapshots: 0,
                screenshots: 0,
                files: BTreeMap::new(),
            }),
            key: None,
            journal: None,
            observer: None,
        })
    }

    /// Tells `observer` the name of every event (`dispatch`, `llm_call`, …) once it is in the
    /// trace; it sees no payload.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn Fn(&'static str) + Send + Sync>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Signs this run's ledger line with the installation's key.
    #[must_use]
    pub fn with_signing_key(mut self, key: Arc<InstallationKey>) -> Self {
        self.key = Some(key);
        self
    }

    /// Records every intent in `journal` too, through [`EvidenceBus::journal`].
    #[must_use]
    pub fn with_intent_journal(mut self, journal: Arc<dyn IntentJournal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Records `intent`, already in the trace as line `seq`, in the journal, or says why the
    /// journal refused it. Without a journal, the trace is the whole record.
    pub fn journal(&self, seq: u64, intent: &Intent) -> Result<(), String> {
        match &self.journal {
            Some(journal) => journal.record(self.run_id.as_str(), seq, intent),
            None => Ok(()),
        }
    }

    /// Whether the journal still holds the work its intents are for (see
    /// [`IntentJournal::holds`]); without a journal, the trace is the whole record and holds.
    pub fn journal_holds(&self) -> Result<(), String> {
        self.journal
            .as_ref()
            .map_or(Ok(()), |journal| journal.holds())
    }

    /// The run id.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `bytes` as the new file `name` in the run directory (0600, whole or not at all,
    /// never over an existing file): what a caller keeps beside the trace, such as an assisted
    /// run's proposal. The caller redacts it.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<(), EvidenceError> {
        let mut writer = self.lock()?;
        if writer.ended {
            return Err(EvidenceError::RunEnded);
        }
        let written = write_new_file(&self.dir, None, name, bytes)?;
        writer.files.insert(written.path, written.digest);
        Ok(())
    }

    /// The redactor this bus writes through (shared with the secret resolver and other sinks).
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Appends one event, redacted, and flushes it to the file before returning its `seq`.
    /// `intent` and `run_end` also sync the file to disk; `run_end` closes the trace to further
    /// events.
    pub fn emit(
        &self,
        actor: Actor,
        lease_epoch: u64,
        event: impl Into<Event>,
    ) -> Result<u64, EvidenceError> {
        let event = event.into().bounded();
        let name = event.name();
        let mut writer = self.lock()?;
        let mut payload = self.redacted_payload(&event)?;
        if matches!(event, Event::RunEnd(_)) && !writer.files.is_empty() {
            // The manifest is added after redaction: its names are already redacted labels and
            // its digests are ours, and a registered literal that happened to occur in a digest
            // would otherwise break the run's own verification.
            let files =
                serde_json::to_value(&writer.files).map_err(|source| EvidenceError::Serialize {
                    what: "the run's file manifest",
                    source,
                })?;
            payload.insert("files".to_owned(), files);
        }
        let seq = writer.next_seq;
        let sealed = chain::seal(
            &Envelope {
                seq,
                at: self.clock.now(),
                run_id: self.run_id.as_str(),
                event: name,
                actor,
                lease_epoch,
                prev_hash: &writer.prev_hash,
            },
            &payload,
        )?;
        let is_run_end = matches!(event, Event::RunEnd(_));
        // A write-ahead intent must survive a power cut, not just a killed process: it is the
        // only record that a mutation may have been handed over.
        let durable = is_run_end || matches!(event, Event::Intent(_));
        writer.append(&sealed.bytes, durable)?;
        writer.prev_hash = sealed.line_hash;
        writer.next_seq += 1;
        writer.ended = is_run_end;
        drop(writer);
        if let Some(observer) = &self.observer {
            observer(name);
        }
        Ok(seq)
    }

    /// Writes a snapshot, redacted, as `snapshots/NNNN-<label>.json`.
    pub fn write_snapshot(
        &self,
        label: &str,
        snapshot: &UiSnapshot,
    ) -> Result<ArtifactRef, EvidenceError> {
        let bytes = self.redactor.redact_snapshot(snapshot).to_json_bytes();
        let label = self.file_label(label);
        let mut writer = self.lock()?;
        if writer.ended {
            return Err(EvidenceError::RunEnded);
        }
        writer.snapshots += 1;
        let name = format!("{:04}-{label}.json", writer.snapshots);
        let written = write_new_file(&self.dir, Some(SNAPSHOT_DIR), &name, &bytes)?;
        writer
            .files
            .insert(written.path.clone(), written.digest.clone());
        Ok(written)
    }

    /// Writes a screenshot as `screenshots/NNNN-<label>.png`. Pixels cannot be redacted here:
    /// the driver paints sensitive regions before capture. The bytes are still checked, and a
    /// screenshot carrying a registered secret (in its metadata, say) is refused.
    pub fn write_screenshot(&self, label: &str, png: &[u8]) -> Result<ArtifactRef, EvidenceError> {
        if self.redactor.contains_secret(png) {
            return Err(EvidenceError::SecretInScreenshot {
                label: self.redactor.redact_text(label),
            });
        }
        let label = self.file_label(label);
        let mut writer = self.lock()?;
        if writer.ended {
            return Err(EvidenceError::RunEnded);
        }
        writer.screenshots += 1;
        let name = format!("{:04}-{label}.png", writer.screenshots);
        let written = write_new_file(&self.dir, Some(SCREENSHOT_DIR), &name, png)?;
        writer
            .files
            .insert(written.path.clone(), written.digest.clone());
        Ok(written)
    }

    /// After `run_end`: projects the trace as written (already redacted) into a run record,
    /// writes it as `run_record.json`, then appends the run's head to the evidence root's ledger
    /// (signed when the bus has a key), and returns the record.
    pub fn finish(&self) -> Result<RunRecord, EvidenceError> {
        let (head, events) = {
            let writer = self.lock()?;
            if !writer.ended {
                return Err(EvidenceError::RunNotEnded);
            }
            (writer.prev_hash.clone(), writer.next_seq - 1)
        };
        let lines = read_trace(self.dir.path())?;
        let record = project(&lines)?;
        // The record is projected from lines redacted as they were written, and holds nothing
        // the trace does not say; redacting it again would change what it computes (a drift
        // of 1/3 reads as a card number) and it would no longer equal the projection.
        let serialize = |source| EvidenceError::Serialize {
            what: "the run record",
            source,
        };
        // Through a `Value`, so keys are written sorted, as every evidence document is.
        let value = serde_json::to_value(&record).map_err(serialize)?;
        let mut bytes = serde_json::to_vec_pretty(&value).map_err(serialize)?;
        bytes.push(b'\n');
        write_new_file(&self.dir, None, RUN_RECORD_FILE, &bytes)?;
        // The ledger line is the run's commit marker, written last: a run killed before it is
        // one that was interrupted while finishing, which `verify` accepts as such, and a run
        // the ledger records always holds its record.
        ledger::append(
            &self.root,
            self.run_id.as_str(),
            &head,
            events,
            self.key.as_deref(),
        )?;
        Ok(record)
    }

    fn redacted_payload(
        &self,
        event: &Event,
    ) -> Result<serde_json::Map<String, Value>, EvidenceError> {
        let serialize = |source| EvidenceError::Serialize {
            what: "an event",
            source,
        };
        let Value::Object(mut payload) = serde_json::to_value(event).map_err(serialize)? else {
            unreachable!("an internally tagged enum of structs serializes to an object")
        };
        payload.remove("event");
        if let Some(key) = payload
            .keys()
            .find(|key| ENVELOPE_KEYS.contains(&key.as_str()))
        {
            return Err(EvidenceError::ReservedKey {
                event: event.name(),
                key: key.clone(),
            });
        }
        match self.redactor.redact_json(&Value::Object(payload)) {
            Value::Object(redacted) => Ok(redacted),
            _ => unreachable!("redacting an object yields an object"),
        }
    }

    /// A label safe as part of a file name, with nothing sensitive in it: redacted, then
    /// lowercase ASCII letters, digits and `-`, with every other run of characters one `_`.
    fn file_label(&self, label: &str) -> String {
        let mut safe = String::new();
        for c in self.redactor.redact_text(label).chars() {
            if c.is_ascii_alphanumeric() || c == '-' {
                safe.push(c.to_ascii_lowercase());
            } else if !safe.is_empty() && !safe.ends_with('_') {
                safe.push('_');
            }
            if safe.len() >= MAX_LABEL_CHARS {
                break;
            }
        }
        let safe = safe.trim_end_matches('_');
        if safe.is_empty() {
            "unlabelled".to_owned()
        } else {
            safe.to_owned()
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Writer>, EvidenceError> {
        let writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if writer.failed {
            return Err(EvidenceError::BusFailed {
                path: writer.trace_path.clone(),
            });
        }
        Ok(writer)
    }
}

impl std::fmt::Debug for EvidenceBus {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("EvidenceBus")
            .field("run_id", &self.run_id)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

const MAX_LABEL_CHARS: usize = 48;

struct Writer {
    file: File,
    trace_path: PathBuf,
    next_seq: u64,
    prev_hash: String,
    ended: bool,
    failed: bool,
    snapshots: u32,
    screenshots: u32,
    /// Every file written beside the trace: relative path → digest, for `run_end`.
    files: BTreeMap<String, String>,
}

impl Writer {
    /// Writes one sealed line in one `write_all`, so an interrupted write leaves at most one
    /// torn final line (no newline), which `verify` reports as torn rather than tampered.
    fn append(&mut self, bytes: &[u8], sync: bool) -> Result<(), EvidenceError> {
        if self.ended {
            return Err(EvidenceError::RunEnded);
        }
        let written = self
            .file
            .write_all(bytes)
            .and_then(|()| self.file.flush())
            .and_then(|()| if sync { self.file.sync_data() } else { Ok(()) });
        written.map_err(|source| {
            // After a failed write the file may end in a torn line; appending more would bury
            // it mid-file, where it reads as tampering.
            self.failed = true;
            EvidenceError::io("append to", &self.trace_path, source)
        })
    }
}

/// Writes a new file of the run, in `subdirectory` when given, whole or not at all: the bytes
/// go to a temporary file first and are linked under their name only once written and synced,
/// so a process killed mid-write leaves a hidden temporary file nothing refers to, never a
/// truncated artifact a reader takes for the real one. Linking fails if the name exists.
fn write_new_file(
    run: &Dir,
    subdirectory: Option<&str>,
    name: &str,
    bytes: &[u8],
) -> Result<ArtifactRef, EvidenceError> {
    let path = match subdirectory {
        Some(subdirectory) => {
            run.ensure_dir(subdirectory, FileMode::Private)?.write_new(
                name,
                bytes,
                FileMode::Private,
            )?;
            format!("{subdirectory}/{name}")
        }
        None => {
            run.write_new(name, bytes, FileMode::Private)?;
            name.to_owned()
        }
    };
    Ok(ArtifactRef {
        path,
        digest: format!("{}{}", chain::HASH_PREFIX, blake3::hash(bytes).to_hex()),
    })
}

/// Checks, before a run starts, that `<root>/<run_id>` can become its directory: the evidence
/// root is a directory (created if missing) and not a link, and the run directory is either
/// missing or an empty directory of the current user's, not a link. [`EvidenceBus::create`]
/// checks the same again as it creates it.
pub fn check_run_dir(root: &Path, run_id: &RunId) -> Result<(), EvidenceError> {
    let root_dir = Dir::create_all(root, FileMode::Private)?;
    match root_dir.open_dir(run_id.as_str()) {
        Ok(dir) => check_reusable(&dir),
        Err(error) if error.is_not_found() => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// A run directory that already exists may be used only if it is ours and empty: another
/// user's could be read or planted in by them, and a full one holds another run's evidence.
fn check_reusable(dir: &Dir) -> Result<(), EvidenceError> {
    dir.check_owned()?;
    if dir.entry_names()?.is_empty() {
        Ok(())
    } else {
        Err(EvidenceError::RunDirNotEmpty {
            path: dir.path().to_path_buf(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn an_artifact_is_linked_whole_once_and_leaves_nothing_partial() {
        let root = tempfile::tempdir().expect("a directory");
        let run = Dir::open(root.path()).expect("a directory");
        // A leftover from a writer killed mid-write: never linked under an artifact's name.
        fs::create_dir(root.path().join("snapshots")).expect("a directory");
        let leftover = root.path().join("snapshots/.cua-0000000000000000.tmp");
        fs::write(&leftover, b"{\"trunc").expect("written");
        let written =
            write_new_file(&run, Some("snapshots"), "0001-a.json", b"{}").expect("written");
        assert_eq!(written.path, "snapshots/0001-a.json");
        assert_eq!(
            fs::read(root.path().join("snapshots/0001-a.json")).expect("readable"),
            b"{}"
        );
        // A name is written once: the second write fails and the first bytes stay.
        assert!(write_new_file(&run, Some("snapshots"), "0001-a.json", b"[]").is_err());
        assert_eq!(
            fs::read(root.path().join("snapshots/0001-a.json")).expect("readable"),
            b"{}"
        );
        let names = Dir::open(&root.path().join("snapshots"))
            .and_then(|snapshots| snapshots.entry_names())
            .expect("listable");
        assert_eq!(names, [".cua-0000000000000000.tmp", "0001-a.json"]);
    }
}
