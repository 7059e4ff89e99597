//! The crate's one error type, and the split every caller needs from it: a refusal by a review
//! criterion (exit 1) or a bad request, a missing or broken document (exit 2).

use std::path::PathBuf;

use cua_artifact::{CapabilityRef, ContentHash, TenantId};

use crate::evaluation::Assessment;

/// Everything that can go wrong reading, judging or writing the catalog.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// A directory the catalog needs could not be read.
    #[error("cannot read the directory {}: {source}", path.display())]
    ReadDirectory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A file could not be read, or what is at its path was refused (a link, a device, a file
    /// over the document limit).
    #[error(transparent)]
    Read(cua_fs::FsError),

    /// A file could not be written, or what is at its path was refused (a link); the previous
    /// content, if any, is intact.
    #[error(transparent)]
    Write(cua_fs::FsError),

    /// The text given as a capability reference is not one.
    #[error("`{text}` is not a capability reference: {reason}")]
    InvalidReference {
        text: String,
        reason: String,
        /// The catalog's nearest reference, for a "did you mean" (`savings_balance` names
        /// `corebank.member.savings_balance`).
        closest: Option<String>,
    },

    /// No capability file has this reference.
    #[error("{reference} is not in the catalog at {}", directory.display())]
    NotFound {
        reference: String,
        directory: PathBuf,
        /// The catalog's nearest reference, for a "did you mean".
        closest: Option<String>,
    },

    /// A document did not parse or broke a rule.
    #[error("{} is not a valid document: {reason}", path.display())]
    Invalid { path: PathBuf, reason: String },

    /// The capability's declared hash is not the hash of its content.
    #[error("{reference} is tampered: declared {declared}, computed {computed}")]
    Tampered {
        reference: Box<CapabilityRef>,
        declared: ContentHash,
        computed: ContentHash,
    },

    /// The capability carries no hash, so there is nothing an approval could pin.
    #[error("{reference} is an unsealed draft; seal it with `cua seal` before it can be approved")]
    Unsealed { reference: Box<CapabilityRef> },

    /// A reviewer must be named.
    #[error("the reviewer name is empty; say who decides with --by")]
    NoReviewer,

    /// A tenant decision for a tenant that has no binding of the capability.
    #[error(
        "tenant {tenant} has no binding of {reference} (expected {}); a tenant without one runs \
         the base, whose own approval applies",
        path.display()
    )]
    NoBinding {
        reference: Box<CapabilityRef>,
        tenant: TenantId,
        path: PathBuf,
    },

    /// `revoke` found no approval to revoke.
    #[error("no approval of {reference} is recorded; there is nothing to revoke")]
    NothingToRevoke { reference: Box<CapabilityRef> },

    /// `approve --from-eval` found no evaluation at this exact content.
    #[error("refused: {reason}")]
    NoEvaluation {
        reference: Box<CapabilityRef>,
        content_hash: ContentHash,
        reason: String,
    },

    /// `approve --from-eval` found evaluations at this content, and at least one fails a
    /// criterion.
    #[error("refused: {}", refusal_summary(.assessments))]
    EvaluationFailed {
        reference: Box<CapabilityRef>,
        content_hash: ContentHash,
        assessments: Vec<Assessment>,
    },
}

impl CatalogError {
    /// Whether this is a refusal by a review criterion (exit 1) rather than a bad request or a
    /// missing, invalid or tampered document (exit 2).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::NoEvaluation { .. } | Self::EvaluationFailed { .. }
        )
    }

    /// A stable machine-readable code for the error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::ReadDirectory { .. } | Self::Read(_) => "read_failed",
            Self::Write(file) if file.is_refusal() => "refused_path",
            Self::Write(_) => "write_failed",
            Self::InvalidReference { .. } => "invalid_reference",
            Self::NotFound { .. } => "not_found",
            Self::Invalid { .. } => "invalid_document",
            Self::Tampered { .. } => "tampered",
            Self::Unsealed { .. } => "unsealed",
            Self::NoReviewer => "no_reviewer",
            Self::NoBinding { .. } => "no_binding",
            Self::NothingToRevoke { .. } => "nothing_to_revoke",
            Self::NoEvaluation { .. } => "no_evaluation",
            Self::EvaluationFailed { .. } => "evaluation_failed",
        }
    }
}

fn refusal_summary(assessments: &[Assessment]) -> String {
    assessments
        .iter()
        .filter(|assessment| !assessment.passed())
        .map(|assessment| {
            let failed: Vec<String> = assessment
                .failures()
                .map(|result| format!("{} ({})", result.criterion.as_str(), result.detail))
                .collect();
            format!(
                "evaluation {} fails {}",
                assessment.source.display(),
                failed.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
