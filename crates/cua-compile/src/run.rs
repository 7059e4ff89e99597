//! A recorded run as the compiler reads it: the trace lines and the snapshots they name.

use std::collections::BTreeMap;
use std::path::Path;

use cua_evidence::{EVIDENCE_FILE_LIMIT, Event, TraceLine, read_trace};
use cua_snapshot::UiSnapshot;

use crate::error::CompileError;

/// A run's trace and every snapshot it refers to, by `snapshot_ref`.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRun {
    pub lines: Vec<TraceLine>,
    pub snapshots: BTreeMap<String, UiSnapshot>,
}

/// Reads `trace.jsonl` and the snapshots its `observe` events name from a run directory.
pub fn load_run(run_dir: &Path) -> Result<RecordedRun, CompileError> {
    let lines = read_trace(run_dir)?;
    let run = cua_fs::Dir::open(run_dir).map_err(|error| CompileError::Snapshot {
        path: run_dir.display().to_string(),
        reason: error.to_string(),
    })?;
    let mut snapshots = BTreeMap::new();
    for line in &lines {
        if let Event::Observe(observe) = &line.event
            && let Some(reference) = &observe.snapshot_ref
        {
            // Below the run directory nothing is read through a link, nor without a bound.
            let bytes = run.read(reference, EVIDENCE_FILE_LIMIT).map_err(|error| {
                CompileError::Snapshot {
                    path: reference.clone(),
                    reason: error.to_string(),
                }
            })?;
            let snapshot: UiSnapshot =
                serde_json::from_slice(&bytes).map_err(|error| CompileError::Snapshot {
                    path: reference.clone(),
                    reason: error.to_string(),
                })?;
            snapshots.insert(reference.clone(), snapshot);
        }
    }
    Ok(RecordedRun { lines, snapshots })
}
