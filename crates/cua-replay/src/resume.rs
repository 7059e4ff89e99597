//! Supervised runs: an escalation that a supervisor (the console's broker) takes over keeps the
//! run open, waits for the operator to hand the session back, re-anchors on the live screen and
//! carries on under the new lease epoch, in the same trace.
//!
//! With the default [`EscalationSink`](crate::EscalationSink), which supervises nothing, an
//! escalation ends the run as `needs_human` instead.
//!
//! # Re-anchoring
//!
//! [`reanchor`] scans the capability from the step the run stopped at (never from the start,
//! and the entrypoint is never opened again): a step whose postcondition holds on the live
//! screen is skipped as done; the first step not visibly done is where the run resumes, if its
//! precondition holds (or it has none); otherwise the run fails closed with
//! `unexpected_state`, since the operator may have left the application somewhere this
//! capability does not describe. A step with no postcondition is never skipped. When every
//! remaining step is done, the run goes straight to its checkpoint.
//!
//! Outputs already extracted and recovery attempts already spent are carried forward (the
//! run's own execution is kept), and the time the run spent paused does not count against its
//! duration budget. A step whose mutating action was already dispatched before the escalation
//! is never dispatched again: resuming there fails closed (a mutation is never retried).

use std::future::Future;
use std::pin::Pin;

use cua_artifact::{Capability, FailureCode, RiskTier, StepId};
use cua_evidence::Escalate;
use cua_snapshot::UiSnapshot;
use cua_surface::SurfaceDriver;
use serde_json::Value;

use crate::executor::{Execution, Replayer, RunState};
use crate::ports::EscalationRequest;
use crate::step::explain;
use crate::stop::{Halt, Stop};
use crate::values::RunValues;

/// What the operator's hand-back gives the executor: the lease epoch automation now holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handback {
    pub epoch: u64,
}

/// The future a supervising sink returns: the hand-back, or `None` when the run is given up
/// (it then ends as `needs_human`).
pub type HandbackFuture<'a> = Pin<Box<dyn Future<Output = Option<Handback>> + Send + 'a>>;

/// Where a run resumes after a hand-back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reanchor {
    /// The step to resume at (`steps.len()` goes straight to the checkpoint); `None` fails
    /// closed.
    pub resume_index: Option<usize>,
    /// Steps skipped because their postcondition already holds.
    pub skipped: Vec<StepId>,
    pub reason: String,
}

/// Finds where to resume on `snapshot`, scanning from `from_index` (see the module docs).
/// `Err` is a predicate that cannot be evaluated (an unbound value).
pub fn reanchor(
    capability: &Capability,
    snapshot: &UiSnapshot,
    values: &RunValues,
    from_index: usize,
) -> Result<Reanchor, String> {
    let holds = |predicate, what| {
        explain(predicate, snapshot, values, what)
            .map(|explanation| explanation.holds)
            .map_err(|stop| stop.message)
    };
    let mut skipped = Vec::new();
    for (index, step) in capability.steps.iter().enumerate().skip(from_index) {
        if let Some(postcondition) = &step.postcondition
            && holds(postcondition, "a postcondition")?
        {
            skipped.push(step.id.clone());
            continue;
        }
        let ready = match &step.precondition {
            None => true,
            Some(precondition) => holds(precondition, "a precondition")?,
        };
        let reason = if ready {
            format!(
                "resuming at step `{}`; {} step(s) already completed by the operator",
                step.id,
                skipped.len()
            )
        } else {
            format!(
                "step `{}` is not visibly done and its precondition does not hold: the operator may have left the application somewhere this capability does not describe",
                step.id
            )
        };
        return Ok(Reanchor {
            resume_index: ready.then_some(index),
            skipped,
            reason,
        });
    }
    Ok(Reanchor {
        resume_index: Some(capability.steps.len()),
        reason: format!(
            "every remaining step is visibly done ({} skipped); checking the checkpoint",
            skipped.len()
        ),
        skipped,
    })
}

/// What became of an escalation under supervision.
pub(crate) enum Supervision {
    /// Not supervised, not escalating, or given up: the run ends with the stop as it is.
    Ended,
    /// Handed back and re-anchored: carry on at this step.
    ResumeAt(usize),
    /// Handed back, but the run cannot resume: a new stop (which may escalate again).
    Refused(Box<Stop>),
}

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// Hands a stop to the supervisor when the capability escalates it and the sink supervises:
    /// captures the failure, opens the intervention (the supervisor pauses the lease), emits
    /// `escalate`, waits for the hand-back, adopts the new epoch and re-anchors.
    pub(crate) async fn supervise(
        &self,
        frame: &mut Execution<'_>,
        tally: &mut RunState,
        stop: &Stop,
    ) -> Result<Supervision, Halt> {
        let capability = frame.capability;
        let escalates = capability.escalation.policy
            == cua_artifact::EscalationPolicy::PauseAndRequestHuman
            && capability.escalation.triggers.contains(&stop.code);
        if !escalates || !self.escalations.supervises() {
            return Ok(Supervision::Ended);
        }
        let screenshot = self.capture_failure(tally, stop).await?;
        let redacted_reason = self.bus.redactor().redact_text(&stop.message);
        let intervention = self.escalations.escalate(&EscalationRequest {
            run_id: self.bus.run_id().to_string(),
            capability: capability.reference(),
            failure_code: stop.code,
            reason: redacted_reason.clone(),
            step: stop.step.clone(),
            step_index: stop.step_index,
            snapshot_ref: tally.last_snapshot_ref.clone(),
            screenshot_ref: screenshot.as_ref().map(|shot| shot.path.clone()),
        });
        // The supervisor paused the lease; the escalation is recorded under that epoch.
        let paused_epoch = self.current_lease().epoch;
        self.bus.emit(
            cua_artifact::Actor::System,
            paused_epoch,
            Escalate {
                step: stop.step.clone(),
                step_index: stop.step_index,
                status: Some(cua_artifact::RunStatus::NeedsHuman),
                failure_code: Some(stop.code),
                reason: stop.message.clone(),
                intervention: Some(intervention.clone()),
                snapshot_ref: tally.last_snapshot_ref.clone(),
                screenshot_ref: screenshot.as_ref().map(|shot| shot.path.clone()),
                screenshot_digest: screenshot.as_ref().map(|shot| shot.digest.clone()),
            },
        )?;
        let paused_at = self.clock.elapsed();
        let handback = self.escalations.handed_back(&intervention).await;
        let Some(handback) = handback else {
            tally.open_intervention = Some(intervention);
            return Ok(Supervision::Ended);
        };
        // The time spent with the operator is not the run's own time.
        frame.started += self.clock.elapsed().saturating_sub(paused_at);
        tally.epoch = handback.epoch;
        let snapshot = self.observe(tally, "reanchor").await?;
        let from_index = stop
            .step_index
            .map_or(0, |index| index as usize)
            .min(capability.steps.len());
        let found = reanchor(capability, &snapshot, &frame.values, from_index)
            .map_err(|reason| Stop::new(FailureCode::Internal, reason))?;
        let mut reason = found.reason.clone();
        let mut resume_index = found.resume_index;
        if let Some(index) = resume_index
            && let Some(step) = capability.steps.get(index)
            && tally.steps.iter().any(|report| {
                report.capability.is_none()
                    && report.index as usize == index
                    && report.step == step.id.as_str()
                    && report.dispatched
                    && report.risk > RiskTier::Safe
            })
        {
            reason = format!(
                "step `{}` already dispatched a {} action before the escalation; a mutation is never retried automatically",
                step.id,
                capability.steps[index].risk.as_str()
            );
            resume_index = None;
        }
        self.note(
            "re-anchor after handoff",
            [
                (
                    "resume_index",
                    resume_index.map_or(Value::Null, |index| Value::from(index as u64)),
                ),
                (
                    "skipped",
                    Value::from(
                        found
                            .skipped
                            .iter()
                            .map(|id| Value::from(id.as_str()))
                            .collect::<Vec<_>>(),
                    ),
                ),
                ("reason", Value::from(reason.clone())),
                ("epoch", Value::from(handback.epoch)),
            ],
        )?;
        match resume_index {
            Some(index) => Ok(Supervision::ResumeAt(index)),
            None => {
                let at = capability.steps.get(from_index).map(|step| step.id.clone());
                let mut refused = Stop::new(FailureCode::UnexpectedState, reason.clone())
                    .observed(reason)
                    .expected("the live screen at a step of the capability after the hand-back");
                refused.step = at;
                refused.step_index = u32::try_from(from_index).ok();
                Ok(Supervision::Refused(Box::new(refused)))
            }
        }
    }
}
