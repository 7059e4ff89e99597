//! Which stopped runs an assist may touch, decided from the report alone, before any model is
//! asked anything.
//!
//! Only a run that stopped at one of its own steps because that step's target was not where
//! the artifact says:
//!
//! - `target_not_found` or `target_ambiguous`: the target did not resolve to exactly one node;
//! - the step's own precondition did not hold: in cua's taxonomy a step whose declared
//!   precondition is false on a screen no outcome or recovery rule explains stops as
//!   `unexpected_state` (a relabelled label usually fails there, before the target is tried);
//! - `precondition_failed`: the step's postcondition (or assertion) did not hold, and only when
//!   the step dispatched nothing above `safe` risk, because a mutation is never retried.
//!
//! Everything else is excluded on purpose: business outcomes, input validation, policy
//! denials, lease loss, timeouts, a failed checkpoint, a stop inside a remedy, a screen that
//! matches nothing at the checkpoint. A step with no target, or whose action is not a click,
//! type, select or extract, has nothing an assist could propose.

use cua_artifact::{ActionKind, Capability, FailureCode, RiskTier, RunStatus, StepId};
use cua_replay::ReplayReport;
use serde::Serialize;

/// Where and why an assistable run stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stuck {
    /// The index of the step in the run's capability.
    pub step_index: usize,
    pub step: StepId,
    pub action: ActionKind,
    pub code: FailureCode,
    /// The failure message, as the report gives it (redacted).
    pub message: String,
    /// Whether the stop was the step's own precondition not holding.
    pub precondition: bool,
}

/// Decides whether `report` (a run of `capability`) may be assisted; `Err` says why not.
pub fn assistable(capability: &Capability, report: &ReplayReport) -> Result<Stuck, String> {
    let result = &report.result;
    if !matches!(result.status, RunStatus::Failed | RunStatus::NeedsHuman) {
        return Err(format!(
            "the run ended {}; only a run that stopped can be assisted",
            status_name(result.status)
        ));
    }
    let Some(error) = &result.error else {
        return Err("the run stopped without a failure code".to_owned());
    };
    let Some(step_id) = &error.step_id else {
        return Err(format!(
            "{} happened before the first step; there is no step to assist",
            error.code.as_str()
        ));
    };
    let Some(step_index) = capability.steps.iter().position(|step| step.id == *step_id) else {
        return Err(format!(
            "the run stopped at `{step_id}`, which is not a step of {} (a remedy or the checkpoint)",
            capability.reference()
        ));
    };
    let step = &capability.steps[step_index];
    let precondition = match error.code {
        FailureCode::TargetNotFound | FailureCode::TargetAmbiguous => false,
        FailureCode::UnexpectedState if step.precondition.is_some() => true,
        FailureCode::PreconditionFailed => {
            let mutated = report.steps.iter().any(|reported| {
                reported.capability.is_none()
                    && reported.step == step_id.as_str()
                    && reported.dispatched
                    && reported.risk > RiskTier::Safe
            });
            if mutated {
                return Err(format!(
                    "step `{step_id}` dispatched a {} action whose effect was not observed; a mutation is never retried",
                    step.risk.as_str()
                ));
            }
            false
        }
        other => {
            return Err(format!(
                "the run stopped with {}; an assist only helps a step whose target was not found, was ambiguous, or whose precondition or postcondition failed",
                other.as_str()
            ));
        }
    };
    let action = step.action.kind();
    if !matches!(
        action,
        ActionKind::Click | ActionKind::Type | ActionKind::Select | ActionKind::Extract
    ) {
        return Err(format!(
            "step `{step_id}` is a {} step; an assist proposes only a click, type, select or extract target",
            action.as_str()
        ));
    }
    if step.action.target().is_none() {
        return Err(format!("step `{step_id}` has no target to propose"));
    }
    Ok(Stuck {
        step_index,
        step: step_id.clone(),
        action,
        code: error.code,
        message: error.message.clone(),
        precondition,
    })
}

pub(crate) fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Success => "success",
        RunStatus::BusinessOutcome => "with a business outcome",
        RunStatus::NeedsHuman => "needs_human",
        RunStatus::Failed => "failed",
    }
}
