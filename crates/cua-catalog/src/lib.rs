//! The capability catalog: the store of sealed artifacts, their integrity, the approvals pinned
//! to their content hashes, the evaluations approvals rest on, the carry-over of an approval to
//! a tenant's binding, and search.
//!
//! Integrity and review are separate axes. Integrity says whether a file is what was sealed
//! (`sealed`, `draft`, `TAMPERED`); review says whether someone approved exactly this content.
//! An approval pins a content hash and is compared with the hash recomputed from the content,
//! so any change of meaning voids it.
//!
//! Architecture invariant: the store reads and writes files, and nothing else in the crate
//! does; it reads no clock (decision times come from the caller). Search is pure: building and
//! querying the index do no I/O, draw no randomness, and order results by score and then
//! reference, never by hash-map iteration order.

mod error;
mod evaluation;
mod review;
mod search;
mod signature;
mod store;

pub use error::CatalogError;
pub use evaluation::{
    Assessment, Criterion, CriterionResult, EvaluationRecord, UNAUTHORIZED_DISPATCHES_KEY,
};
pub use review::{
    ApprovalAnswer, ApprovalBasis, Integrity, ReviewStatus, carried_answer, direct_answer,
};
pub use search::{
    B, Explanation, Field, FieldMatch, K1, MAX_QUERY_WORDS, QueryWord, Resolution, SearchDocument,
    SearchFilters, SearchHit, SearchIndex, SearchQuery, SearchResults, Signal, TYPO_DISCOUNT,
};
pub use signature::signature;
pub use store::{
    APPROVAL_SUFFIX, ApproveRequest, CAPABILITY_SUFFIX, Catalog, CatalogConfig, CatalogEntry,
    DecisionRecorded, EVALUATION_SUFFIX, EvaluationScan, FileProblem, RevokeRequest, approval_path,
    tenant_approval_path,
};
