//! The one error type of the crate.

use std::path::PathBuf;

/// Everything that can go wrong while writing, reading or verifying evidence, redacting, or
/// resolving a secret. A broken hash chain is not an error: [`crate::verify`] reports it in its
/// [`crate::VerifyReport`].
#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    #[error("invalid run id `{run_id}`: {reason}")]
    InvalidRunId {
        run_id: String,
        reason: &'static str,
    },

    #[error(
        "run directory {} already exists and is not empty; evidence is never overwritten",
        path.display()
    )]
    RunDirNotEmpty { path: PathBuf },

    /// A file or directory of the run was refused (a link, a device, a foreign directory, an
    /// oversized file) or could not be read or written.
    #[error(transparent)]
    File(#[from] cua_fs::FsError),

    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "an earlier write to {} failed; the bus refuses further writes so the trace stays a \
         verifiable prefix",
        path.display()
    )]
    BusFailed { path: PathBuf },

    #[error("the run has ended: nothing may be written after run_end")]
    RunEnded,

    #[error("the run has not ended: emit run_end before writing the run record")]
    RunNotEnded,

    #[error("the `{event}` payload uses `{key}`, a key reserved for the trace line envelope")]
    ReservedKey { event: &'static str, key: String },

    #[error("cannot serialize {what}")]
    Serialize {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },

    #[error("invalid redaction rule `{name}`: {reason}")]
    InvalidRedactionRule { name: String, reason: String },

    #[error("secret `{name}` is not set: set the environment variable {env_var}")]
    SecretNotFound { name: String, env_var: String },

    #[error(
        "secret `{name}` (from {env_var}) is shorter than {min} characters, too short to be \
         scrubbed from evidence reliably; refusing to issue it"
    )]
    SecretTooShort {
        name: String,
        env_var: String,
        min: usize,
    },

    #[error("screenshot `{label}` contains a registered secret and was not written")]
    SecretInScreenshot { label: String },

    #[error("{} is not a run directory: {reason}", path.display())]
    NotARunDir { path: PathBuf, reason: String },

    #[error("the installation key: {reason}")]
    Key { reason: String },

    #[error("the ledger {path}: {reason}")]
    Ledger { path: PathBuf, reason: String },

    #[error(
        "invalid timestamp `{text}`: expected RFC 3339 UTC such as 2026-09-30T22:07:14.687487Z"
    )]
    InvalidTimestamp { text: String },

    #[error("the trace cannot be projected into a run record: {reason}")]
    NotProjectable { reason: String },

    #[error("trace line {line} is not a well-formed event")]
    MalformedLine {
        line: u64,
        #[source]
        source: serde_json::Error,
    },
}

impl EvidenceError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
