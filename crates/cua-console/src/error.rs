//! The crate's one error type, with the HTTP status the console answers each case with.

use cua_policy::LeaseError;

/// Why a console or broker operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// No intervention, session or run by that id.
    #[error("{what} `{id}` does not exist")]
    NotFound { what: &'static str, id: String },

    /// Someone else changed the session first (a lost claim race, a stale reading), or the
    /// request does not fit the session's state (releasing a session nobody holds).
    #[error("{reason}")]
    Conflict { reason: String },

    /// The intervention's live session is gone (the console restarted, the browser closed).
    #[error("the live session of `{id}` is gone; the intervention is kept for the record")]
    SessionGone { id: String },

    /// The operator does not hold the session they act on.
    #[error("{operator} does not hold session `{session}`")]
    NotHolder { operator: String, session: String },

    /// A request that is malformed (an unknown gesture, a bad path).
    #[error("{reason}")]
    BadRequest { reason: String },

    /// The console cannot serve as asked (a non-loopback address without the opt-in).
    #[error(transparent)]
    Access(#[from] cua_access::AccessError),

    /// The lease refused a transition.
    #[error(transparent)]
    Lease(#[from] LeaseError),

    /// Evidence could not be written.
    #[error("evidence could not be written")]
    Evidence(#[from] cua_evidence::EvidenceError),

    /// The live surface failed.
    #[error("the live surface failed: {0}")]
    Surface(#[from] cua_surface::SurfaceError),

    /// A file of the console's own (an intervention record) could not be read or written, or
    /// what was found at its path was refused.
    #[error(transparent)]
    File(#[from] cua_fs::FsError),

    /// The server could not start.
    #[error("the console could not listen on {address}")]
    Bind {
        address: String,
        #[source]
        source: std::io::Error,
    },
}

impl ConsoleError {
    /// The HTTP status this error is answered with.
    pub fn status(&self) -> u16 {
        match self {
            Self::NotFound { .. } => 404,
            Self::Conflict { .. } => 409,
            Self::Lease(error) if error.is_conflict() => 409,
            Self::Lease(_) => 409,
            Self::SessionGone { .. } => 410,
            Self::NotHolder { .. } => 403,
            Self::BadRequest { .. } | Self::Access(_) => 400,
            Self::Surface(_) => 502,
            Self::Evidence(_) | Self::File(_) | Self::Bind { .. } => 500,
        }
    }

    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "not_found",
            Self::Conflict { .. } | Self::Lease(_) => "conflict",
            Self::SessionGone { .. } => "session_gone",
            Self::NotHolder { .. } => "not_holder",
            Self::BadRequest { .. } | Self::Access(_) => "bad_request",
            Self::Surface(_) => "surface_failed",
            Self::Evidence(_) | Self::File(_) | Self::Bind { .. } => "internal",
        }
    }
}
