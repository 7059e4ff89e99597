//! A batch's state file, `<evidence>/<batch id>.batch.jsonl`: what `--resume` trusts about an
//! earlier run of the same batch, so it is bound to that batch and held by one process.
//!
//! - The first line is the batch's header: the rows file's digest, the capability's content
//!   hash and a random nonce. `--resume` refuses a state file whose rows or capability changed
//!   (a row number would then name another row, whose key would differ), and every row's
//!   idempotency key mixes in the nonce, so a batch id reused elsewhere never shares keys.
//! - An exclusive lock on the file is held for the whole batch: a second `cua` on the same
//!   batch is refused instead of resuming rows the first one is still running.
//! - The file is opened inside the evidence root, held open, without following a link, and
//!   only as a regular file of the current user's (0600 when created): a link or a file another
//!   user planted is refused. It is read bounded by `limits::BATCH_STATE`. Lines are appended
//!   whole and synced; a line torn by a kill is ignored when read, and a newline is written
//!   after it first, so the next line is never glued onto it. A `started` line whose run id is
//!   not a run id is ignored: it names no run directory.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use cua_evidence::RunId;
use cua_fs::{Create, Dir, FileMode};
use serde::{Deserialize, Serialize};

use super::batch::{RowLine, refused};
use crate::error::{CliError, ErrorCode};
use crate::limits;

/// A line of the state file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(super) enum StateLine {
    Batch(Header),
    Started { row: usize, run_id: String },
    Done { row: usize, line: RowLine },
}

/// What the batch is: the first line of its state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Header {
    /// blake3 of the rows file's bytes.
    pub(super) rows_digest: String,
    /// The content hash of the capability the rows run (after any tenant overlay).
    pub(super) content_hash: String,
    /// 128 random bits, hex, mixed into every row's idempotency key.
    pub(super) nonce: String,
}

/// What an earlier run of the batch left for a row.
#[derive(Debug, Clone)]
pub(super) enum Earlier {
    Done(RowLine),
    /// Started but never finished, with every attempt's run id.
    Started(Vec<String>),
}

/// The open, locked state file of one batch.
pub(super) struct BatchState {
    file: Mutex<File>,
    path: PathBuf,
    header: Header,
    /// What earlier runs of the batch left, by row.
    pub(super) previous: BTreeMap<usize, Earlier>,
}

impl BatchState {
    /// Opens (or creates) the state file `name` in the evidence root and locks it. A new file
    /// gets `fresh` as its header; an existing one must carry the same rows digest and content
    /// hash.
    pub(super) fn open(evidence: &Dir, name: &str, fresh: Header) -> Result<Self, CliError> {
        let path = &evidence.path().join(name);
        let unwritable = |what: &str, error: std::io::Error| {
            CliError::new(
                ErrorCode::EvidenceUnwritable,
                format!("cannot {what} {}: {error}", path.display()),
            )
        };
        let file = evidence
            .open_append(name, Create::IfMissing, FileMode::Private)
            .map_err(refused)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(CliError::new(
                    ErrorCode::BatchLocked,
                    format!(
                        "another cua is running this batch ({} is locked): wait for it to end, or stop it, before resuming",
                        path.display()
                    ),
                ));
            }
            Err(std::fs::TryLockError::Error(error)) => return Err(unwritable("lock", error)),
        }
        let bytes = cua_fs::read_open(&file, path, limits::BATCH_STATE).map_err(refused)?;
        let (header, previous) = parse(&bytes);
        let header = match header {
            Some(header) => {
                if header.rows_digest != fresh.rows_digest
                    || header.content_hash != fresh.content_hash
                {
                    return Err(CliError::usage(format!(
                        "{} belongs to another batch: its rows file or capability changed since it started \
                         (rows {} now {}, capability {} now {}); a row number would name another row, so resume \
                         the original rows, or start a new batch with another --run-id",
                        path.display(),
                        header.rows_digest,
                        fresh.rows_digest,
                        header.content_hash,
                        fresh.content_hash
                    )));
                }
                header
            }
            None if previous.is_empty() => fresh,
            None => {
                return Err(CliError::usage(format!(
                    "{} has no batch header (written by an older cua): resume it with that version, or start a new batch with another --run-id",
                    path.display()
                )));
            }
        };
        let state = Self {
            file: Mutex::new(file),
            path: path.to_path_buf(),
            header,
            previous,
        };
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            state
                .append(b"\n")
                .map_err(|error| unwritable("repair", error))?;
        }
        if bytes.is_empty() {
            state
                .write(&StateLine::Batch(state.header.clone()))
                .map_err(|error| unwritable("write", error))?;
        }
        Ok(state)
    }

    /// The idempotency key of `row`: the same for every attempt at it in this batch, and for
    /// no row of any other batch.
    pub(super) fn key(&self, batch_id: &str, row: usize) -> String {
        cua_evidence::idempotency_key(
            &format!("{batch_id}/{}", self.header.nonce),
            Some(row as u64),
        )
    }

    /// Appends one line and syncs it.
    pub(super) fn write(&self, line: &StateLine) -> std::io::Result<()> {
        let mut text = serde_json::to_string(line).map_err(std::io::Error::other)?;
        text.push('\n');
        self.append(text.as_bytes())
    }

    fn append(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        file.write_all(bytes)?;
        file.sync_data()
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

/// Whether the state file `name` in the evidence root records a row that started and never
/// finished.
pub(super) fn unfinished(evidence: &Dir, name: &str) -> bool {
    let Ok(bytes) = evidence.read(name, limits::BATCH_STATE) else {
        return false;
    };
    parse(&bytes)
        .1
        .values()
        .any(|earlier| matches!(earlier, Earlier::Started(_)))
}

/// The header and each row's earlier state. A line that does not parse (the torn last line of a
/// killed run) is skipped; its row is decided from what the other lines say.
fn parse(bytes: &[u8]) -> (Option<Header>, BTreeMap<usize, Earlier>) {
    let mut header = None;
    let mut rows = BTreeMap::new();
    for line in bytes.split(|byte| *byte == b'\n') {
        let Ok(state) = serde_json::from_slice::<StateLine>(line) else {
            continue;
        };
        match state {
            StateLine::Batch(found) => {
                header.get_or_insert(found);
            }
            StateLine::Started { run_id, .. } if RunId::parse(&run_id).is_err() => {}
            StateLine::Started { row, run_id } => match rows.entry(row) {
                std::collections::btree_map::Entry::Vacant(entry) => {
                    entry.insert(Earlier::Started(vec![run_id]));
                }
                std::collections::btree_map::Entry::Occupied(mut entry) => {
                    if let Earlier::Started(attempts) = entry.get_mut() {
                        attempts.push(run_id);
                    }
                }
            },
            StateLine::Done { row, line } => {
                rows.insert(row, Earlier::Done(line));
            }
        }
    }
    (header, rows)
}
