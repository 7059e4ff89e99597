//! Interventions: what a stopped run asks of a human, as the queue shows it (a context card),
//! and their persistence in the run's evidence directory, one JSON file each, written
//! atomically, so a console restart loses none.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ConsoleError;

/// Where a run directory keeps its interventions.
pub const INTERVENTIONS_DIR: &str = "interventions";

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
            .join(&self.run_id)
            .join(INTERVENTIONS_DIR)
            .join(format!("{}.json", self.id))
    }

    /// Writes the record atomically: a temporary file in the same directory, synced, then
    /// renamed over the old one, and the directory synced.
    pub fn persist(&self, evidence_root: &Path) -> Result<(), ConsoleError> {
        let path = self.path(evidence_root);
        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| evidence_root.to_path_buf());
        fs::create_dir_all(&dir).map_err(|source| ConsoleError::io("create", &dir, source))?;
        let mut bytes = serde_json::to_vec_pretty(self)
            .map_err(|source| ConsoleError::io("serialize", &path, source.into()))?;
        bytes.push(b'\n');
        let temporary = dir.join(format!(".{}.json.tmp", self.id));
        let mut file = fs::File::create(&temporary)
            .map_err(|source| ConsoleError::io("create", &temporary, source))?;
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .map_err(|source| ConsoleError::io("write", &temporary, source))?;
        fs::rename(&temporary, &path)
            .map_err(|source| ConsoleError::io("rename", &path, source))?;
        fs::File::open(&dir)
            .and_then(|handle| handle.sync_all())
            .map_err(|source| ConsoleError::io("sync", &dir, source))
    }
}

/// Reads every intervention kept under the evidence root (`<root>/<run>/interventions/*.json`),
/// oldest first. Unreadable files are reported, not fatal.
pub fn load_all(evidence_root: &Path) -> (Vec<Intervention>, Vec<String>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    let Ok(runs) = fs::read_dir(evidence_root) else {
        return (found, problems);
    };
    for run in runs.flatten() {
        let dir = run.path().join(INTERVENTIONS_DIR);
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|ext| ext.to_str()) != Some("json") {
                continue;
            }
            match fs::read(&path)
                .map_err(|error| error.to_string())
                .and_then(|bytes| {
                    serde_json::from_slice::<Intervention>(&bytes)
                        .map_err(|error| error.to_string())
                }) {
                Ok(intervention) => found.push(intervention),
                Err(error) => problems.push(format!("{}: {error}", path.display())),
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
