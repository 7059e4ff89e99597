//! Target resolution and predicate evaluation: the pure functions that turn a snapshot and a
//! semantic description into one node, or a refusal.
//!
//! - [`resolve`] walks the resolution ladder (semantic_exact, semantic_normalized,
//!   label_association, structural_anchor, hint_cached, ordinal_in_region) in that fixed order.
//!   The first rung with any candidate decides; one candidate wins; several without an in-range
//!   ordinal are refused as ambiguous; none anywhere is not found. An `identity` check on the
//!   target is verified on the chosen node's row before the node is returned.
//! - [`drift_score`] measures how often resolution fell to a weaker rung than was recorded.
//! - [`evaluate`] and [`explain`] decide predicates over a snapshot and bound values. The
//!   [`Bindings`] port has no way to reach a secret, so a secret can never be compared with
//!   screen text.
//! - [`synthesize`] writes a descriptor for a node (for the compiler) and proves it by resolving
//!   it back; [`read_by_column`] reads a grid cell by its column header.
//!
//! Architecture invariant: this crate is pure and synchronous. It does no I/O, reads no clock,
//! draws no randomness and never iterates a hash map: every tie is broken by document order.

mod bindings;
mod error;
mod index;
mod predicate;
mod resolve;
mod structure;
mod synthesize;
mod text;

pub use bindings::{Bindings, BoundValues};
pub use error::{CandidateSummary, RungAttempt, RungOutcome, TargetError};
pub use index::SnapshotIndex;
pub use predicate::{Explanation, evaluate, evaluate_indexed, explain, explain_indexed};
pub use resolve::{Resolution, ResolverConfig, drift_score, resolve, resolve_with};
pub use structure::{cell_text, label_of, read_by_column};
pub use synthesize::{SynthesisConfig, SynthesisWarning, Synthesized, synthesize, synthesize_with};
pub use text::looks_like_datum;
