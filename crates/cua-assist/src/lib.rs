//! Assisted replay: when a deterministic run stops because one step's target is not where the
//! artifact says, one model call proposes the node that step should use; the policy judges the
//! proposal as the agent; the run then continues deterministically from that step with a
//! candidate tenant overlay applied, and the overlay is written for a person to review.
//!
//! - [`assistable`] decides from the stopped run's report alone whether an assist may be tried
//!   (before any model is asked): a target not found or ambiguous, the step's own precondition
//!   false, or its postcondition false without a mutation having been dispatched.
//! - [`Assistant::propose`] makes the one model call through [`cua_agent::LlmPort`], judges the
//!   answer (the step's own action only, never navigate; a node of the screen shown, with the
//!   step's role; a descriptor that resolves back to it; an overlay that applies and resolves
//!   to it; the policy's grant as the agent) and writes the candidate overlay
//!   (`cua.tenant_binding/v1`) with the evidence that motivated it: the failing step, the
//!   snapshot the model saw, the model's proposal, the policy's decision.
//! - [`continuation`] prepares the run's continuation: the candidate overlay applied to the
//!   sealed base, and [`cua_replay::ContinueAt`] the stopped step with the outputs already read.
//!
//! It never rewrites an artifact and never dispatches anything itself: the step is performed by
//! the executor, as automation, in the continued run.
//!
//! Architecture invariant: this crate sits above both `cua-replay` and `cua-agent`, so replay
//! never depends on a model client; a plain `cua replay` never reaches this crate's model call.

mod eligibility;
mod error;
mod propose;

use std::collections::BTreeMap;

use cua_artifact::ArtifactError;
use cua_replay::{ContinueAt, PreparedCapability, ReplayReport};

pub use eligibility::{Stuck, assistable};
pub use error::AssistError;
pub use propose::{
    AssistOutcome, AssistRequest, Assistant, CANDIDATE_FILE, Candidate, Decision, PROPOSAL_FILE,
    PURPOSE,
};

/// The continuation of a stopped run after an accepted proposal: the sealed base with the
/// candidate overlay applied (and `base_url`, when the invocation gave one), and where to
/// continue: at the stopped step, with the outputs the stopped run had already read.
pub fn continuation(
    prepared: &PreparedCapability,
    candidate: &Candidate,
    failed: &ReplayReport,
    base_url: Option<&str>,
) -> Result<(PreparedCapability, ContinueAt), ArtifactError> {
    let base = prepared
        .overlay
        .as_ref()
        .map_or(&prepared.capability, |overlay| &overlay.base)
        .clone();
    let continued = PreparedCapability::bind(
        base,
        Some(candidate.binding.clone()),
        base_url,
        prepared.approval.clone(),
    )?;
    let outputs: BTreeMap<String, String> = failed
        .result
        .outputs
        .iter()
        .map(|(name, value)| {
            let text = match value {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            (name.clone(), text)
        })
        .collect();
    let at = ContinueAt {
        step_index: candidate.continue_at,
        outputs,
        reason: format!(
            "assisted: the candidate overlay retargets step `{}` to {}",
            failed
                .result
                .error
                .as_ref()
                .and_then(|error| error.step_id.as_ref())
                .map_or_else(String::new, ToString::to_string),
            candidate.target.describe()
        ),
    };
    Ok((continued, at))
}
