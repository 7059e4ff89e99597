//! Interventions: what a stopped run asks of a human, as the queue shows it (a context card),
//! and their persistence under the evidence root (`interventions/<run id>/<id>.json`), one JSON
//! file each, written atomically, so a console restart loses none. They live beside the run
//! directory, not in it: a run's files are fixed by its `run_end`, while an intervention
//! changes as operators claim and release it.

use std::path::{Path, PathBuf};

use cua_fs::{Dir, FileMode, Limit};
use serde::{Deserialize, Serialize};

use crate::error::ConsoleError;

/// Where the evidence root keeps interventions, one directory per run.
pub use cua_evidence::INTERVENTIONS_DIR;

/// The largest intervention file read back. One is a context card of redacted text and a
/// lease history of a few lines: kilobytes.
const INTERVENTION_LIMIT: Limit = Limit {
    bytes: 1024 * 1024,
    what: "an intervention",
};

/// Where an intervention is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InterventionState {
    /// Waiting for an operator.
    Open,
    /// An operator holds the session.
    Claimed,
    /// The operator handed the session back.
    Released,
    /// Automation resumed: nothing is left to do.
    Resolved,
    /// The operator's hold expired; claimable again.
    Abandoned,
    /// Given up: the run ended as `needs_human` without resuming; nothing is left to claim.
    GivenUp,
}

impl InterventionState {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Claimed => "claimed",
            Self::Released => "released",
            Self::Resolved => "resolved",
            Self::Abandoned => "abandoned",
            Self::GivenUp => "given_up",
        }
    }

    /// Whether an operator may claim it.
    pub fn claimable(self) -> bool {
        matches!(self, Self::Open | Self::Abandoned)
    }
}

/// One intervention and its context card. Every text in it was redacted before it was stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intervention {
    /// `int-<run id>-<n>`.
    pub id: String,
    pub run_id: String,
    pub session_id: String,
    /// The capability reference (`id@version`).
    pub capability: Option<String>,
    /// What the run was for (the capability's title).
    pub goal: Option<String>,
    /// The step the run stopped at.
    pub stopped_at: Option<String>,
    pub step_index: Option<u32>,
    pub failure_code: String,
    /// Why it stopped (redacted).
    pub reason: String,
    /// The last snapshot and the failure screenshot, relative to the run directory.
    pub snapshot_ref: Option<String>,
    pub screenshot_ref: Option<String>,
    pub state: InterventionState,
    /// The operator holding (or who last held) the session.
    pub operator: Option<String>,
    /// When it was opened and last changed, and when the operator's hold runs out (UTC,
    /// RFC 3339).
    pub opened_at: String,
    pub updated_at: String,
    pub hold_expires_at: Option<String>,
    /// The lease epoch after the latest change.
    pub epoch: u64,
    /// The lease history, `"{epoch}:{state}:{note}"` per transition.
    pub history: Vec<String>,
    /// On release: how many actions the operator took and what changed (ids, never values).
    pub human_actions: u64,
    pub human_delta: Option<String>,
    pub values_changed: Vec<String>,
}

impl Intervention {
    /// The file this intervention is kept in, under the evidence root.
    pub fn path(&self, evidence_root: &Path) -> PathBuf {
        evidence_root
            .join(INTERVENTIONS_DIR)
            .join(&self.run_id)
            .join(format!("{}.json", self.id))
    }

    /// Writes the record atomically (0600): a temporary file in the same directory, created
    /// exclusively, synced, then renamed over the old one, and the directory synced. Every
    /// directory on the way must be a real directory of ours, never a link.
    pub fn persist(&self, evidence_root: &Path) -> Result<(), ConsoleError> {
        let run_id = cua_evidence::RunId::parse(&self.run_id)?;
        let all = Dir::create_all(evidence_root, FileMode::Private)?
            .ensure_dir(INTERVENTIONS_DIR, FileMode::Private)?;
        all.check_owned()?;
        let dir = all.ensure_dir(run_id.as_str(), FileMode::Private)?;
        dir.check_owned()?;
        let mut bytes = serde_json::to_vec_pretty(self).map_err(|source| {
            ConsoleError::File(cua_fs::FsError::Io {
                action: "serialize",
                path: self.path(evidence_root),
                source: source.into(),
            })
        })?;
        bytes.push(b'\n');
        dir.write_atomic(&format!("{}.json", self.id), &bytes, FileMode::Private)?;
        Ok(())
    }
}

/// Reads every intervention kept under the evidence root (`<root>/interventions/<run>/*.json`),
/// oldest first, from directories of ours only and never through a link. Unreadable files are
/// reported, not fatal.
pub fn load_all(evidence_root: &Path) -> (Vec<Intervention>, Vec<String>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    let Ok(all) = Dir::open(evidence_root).and_then(|root| root.open_dir(INTERVENTIONS_DIR)) else {
        return (found, problems);
    };
    if all.check_owned().is_err() {
        return (found, problems);
    }
    let Ok(runs) = all.entry_names() else {
        return (found, problems);
    };
    for run_id in runs {
        if cua_evidence::RunId::parse(&run_id).is_err() {
            continue;
        }
        let Ok(dir) = all.open_dir(&run_id) else {
            continue;
        };
        if dir.check_owned().is_err() {
            continue;
        }
        for name in dir.entry_names().unwrap_or_default() {
            if !name.ends_with(".json") || name.starts_with('.') {
                continue;
            }
            match dir
                .read(&name, INTERVENTION_LIMIT)
                .map_err(|error| error.to_string())
                .and_then(|bytes| {
                    serde_json::from_slice::<Intervention>(&bytes)
                        .map_err(|error| format!("{}: {error}", dir.path().join(&name).display()))
                }) {
                Ok(intervention) => found.push(intervention),
                Err(error) => problems.push(error),
            }
        }
    }
    found.sort_by(|a, b| (&a.opened_at, &a.id).cmp(&(&b.opened_at, &b.id)));
    (found, problems)
}

/// Epoch milliseconds as the RFC 3339 UTC text interventions store.
pub(crate) fn timestamp(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(|ms| ms.checked_mul(1000))
        .and_then(cua_evidence::Timestamp::from_unix_micros)
        .unwrap_or(cua_evidence::Timestamp::UNIX_EPOCH)
        .to_string()
}
