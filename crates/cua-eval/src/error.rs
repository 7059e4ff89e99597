//! The crate's one error type. A wrong action is not an error: it is a finding, counted in the
//! report. These are the reasons a suite could not be evaluated at all.

use std::path::PathBuf;

/// Why a suite could not be evaluated or reported.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A setup capability did not succeed, so no measured run would start from a known state.
    #[error("setup {capability} did not succeed ({summary}); evidence in {}", run_dir.display())]
    SetupFailed {
        capability: String,
        run_dir: PathBuf,
        summary: String,
    },

    /// The replayer refused the document itself (tampered, draft, unbound placeholder, policy).
    #[error("run {run_id} was refused: {source}")]
    Replay {
        run_id: String,
        #[source]
        source: Box<cua_replay::ReplayError>,
    },

    /// The application could not be reset or its faults armed before a case.
    #[error("before run {run_id}: {reason}")]
    Prepare { run_id: String, reason: String },

    /// A run directory could not be created or its trace read back.
    #[error("evidence of run {run_id}: {reason}")]
    Evidence { run_id: String, reason: String },

    /// A report could not be serialized.
    #[error("cannot serialize the {what}: {reason}")]
    Serialize { what: &'static str, reason: String },

    /// A report file could not be written, or what is at its path was refused (a link).
    #[error(transparent)]
    Write(#[from] cua_fs::FsError),
}
