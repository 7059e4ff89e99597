//! The crate's one error type: what stops an assist from producing any outcome at all. A
//! refused or failed proposal is not an error; it is an [`crate::AssistOutcome`].

/// Why an assist could not run.
#[derive(Debug, thiserror::Error)]
pub enum AssistError {
    /// The assist's own evidence could not be written.
    #[error("assist evidence: {0}")]
    Evidence(#[from] cua_evidence::EvidenceError),

    /// The surface could not be observed.
    #[error("the surface could not be observed: {reason}")]
    Surface { reason: String },

    /// A file of the assist (the candidate overlay, the proposal) could not be written.
    #[error("cannot write {}: {reason}", path.display())]
    Write {
        path: std::path::PathBuf,
        reason: String,
    },
}
