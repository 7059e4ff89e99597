//! The crate's one error type: why a run could not be carried out or recorded at all.
//!
//! A run that starts and then stops (a target not found, a denial, a timeout) is not an error:
//! it is a [`crate::ReplayReport`] with status `failed` or `needs_human`. These errors are the
//! cases where there is no trustworthy run to report: a document that must not run, or evidence
//! that could not be written.

use cua_artifact::{CapabilityRef, ContentHash};
use cua_evidence::EvidenceError;

/// Why a replay was refused or could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The declared content hash is not the hash of the content: the artifact changed after
    /// it was sealed (and reviewed). Refused before anything is observed or dispatched.
    #[error("content hash mismatch for {reference}: declared {declared}, computed {computed}")]
    Tampered {
        reference: Box<CapabilityRef>,
        declared: ContentHash,
        computed: ContentHash,
    },

    /// The capability carries no content hash and the configuration does not run drafts.
    #[error(
        "{reference} is an unsealed draft; replay runs sealed capabilities only (seal and review it first)"
    )]
    Draft { reference: Box<CapabilityRef> },

    /// A `{placeholder}` in the entrypoint was never bound by a tenant binding or `--base-url`.
    #[error(
        "the entrypoint {url} of {reference} still holds the placeholder {{{placeholder}}}; bind it with a tenant binding or --base-url"
    )]
    UnboundPlaceholder {
        reference: Box<CapabilityRef>,
        url: String,
        placeholder: String,
    },

    /// The policy engine could not be narrowed to the capability (a malformed allowed domain).
    #[error("the policy cannot be narrowed to {reference}: {reason}")]
    Policy {
        reference: Box<CapabilityRef>,
        reason: String,
    },

    /// Evidence could not be written; a run without its evidence is not carried on.
    #[error("evidence could not be written")]
    Evidence(#[from] EvidenceError),
}
