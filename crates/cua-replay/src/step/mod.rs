//! The per-step pipeline: observe → classify → bind → resolve → authorize → dispatch → wait →
//! postcondition on a fresh snapshot → effect verdict; reads and assertions evaluated locally;
//! the checkpoint after the last step.

mod act;
mod bind;
mod gate;
mod read;
mod record;
mod resolve;
mod settle;
mod wait;

use std::future::Future;
use std::pin::Pin;

use cua_artifact::{
    Action, FailureCode, Outcome, OutcomeResult, Predicate, RecoveryRule, RiskTier,
};
use cua_snapshot::UiSnapshot;
use cua_surface::{DispatchReceipt, SurfaceDriver};

use crate::error::ReplayError;
use crate::executor::{Execution, ExecutionEnd, Replayer, RunState, checkpoint_id};
use crate::stop::{Halt, Position, Stop, placed};
use crate::values::RunValues;
pub(crate) use record::StepRecordInput;

/// A boxed future of a capability's execution, so remedies can run capabilities recursively.
pub(crate) type ExecutionFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ExecutionEnd, Halt>> + Send + 'a>>;

/// What the screen was found to be, once any recovery is done.
pub(crate) enum Settled {
    /// The step (or checkpoint) may proceed on this snapshot.
    Expected(Box<UiSnapshot>),
    /// A declared, terminal business outcome.
    Outcome(OutcomeResult),
}

/// One classification of a screen, in the fixed order: a declared outcome, a recovery rule,
/// the checkpoint (at the end) or the step's precondition, else expected.
pub(crate) enum Classification<'c> {
    Expected(String),
    Outcome(&'c Outcome),
    Recoverable(&'c RecoveryRule),
    Unexpected(String),
}

/// An action handed to the surface.
pub(crate) struct Dispatched {
    pub(crate) decision_id: String,
    pub(crate) risk: RiskTier,
    pub(crate) receipt: DispatchReceipt,
}

/// What the artifact says of an action before the policy assesses it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Declared {
    /// The step's declared risk tier, if the action is a step's.
    pub(crate) risk: Option<RiskTier>,
    /// Whether the artifact declares the action a mutation whatever its tier (an operator
    /// call that is not a read: `Step::mutates`). Browser actions go by their assessed tier.
    pub(crate) mutates: bool,
}

/// Why the chokepoint did not produce a receipt.
pub(crate) enum DispatchFailure {
    /// Nothing reached the surface (a policy denial, a stale lease at the dispatch).
    Refused {
        stop: Stop,
        decision_id: String,
        risk: RiskTier,
    },
    /// The surface was asked and failed. `reached` says whether it may have acted.
    Failed {
        stop: Stop,
        decision_id: String,
        risk: RiskTier,
        reached: bool,
    },
    Fatal(ReplayError),
}

impl DispatchFailure {
    pub(crate) fn into_halt(self) -> Halt {
        match self {
            Self::Refused { stop, .. } | Self::Failed { stop, .. } => stop.into(),
            Self::Fatal(error) => Halt::Fatal(error),
        }
    }
}

impl From<cua_evidence::EvidenceError> for DispatchFailure {
    fn from(error: cua_evidence::EvidenceError) -> Self {
        Self::Fatal(ReplayError::Evidence(error))
    }
}

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// Runs a capability's steps and checkpoint (no entrypoint navigation: the run's own
    /// execution navigated before, and a remedy runs on the current screen).
    pub(crate) fn run_execution<'a, 'c: 'a>(
        &'a self,
        frame: &'a mut Execution<'c>,
        tally: &'a mut RunState,
    ) -> ExecutionFuture<'a> {
        self.run_execution_from(frame, tally, 0)
    }

    /// [`Replayer::run_execution`] from step `start` on (a resume after a hand-back).
    pub(crate) fn run_execution_from<'a, 'c: 'a>(
        &'a self,
        frame: &'a mut Execution<'c>,
        tally: &'a mut RunState,
        start: usize,
    ) -> ExecutionFuture<'a> {
        Box::pin(async move {
            for index in start..frame.capability.steps.len() {
                match self.run_step(frame, tally, index).await {
                    Ok(None) => {}
                    Ok(Some(outcome)) => return Ok(ExecutionEnd::Outcome(outcome)),
                    Err(Halt::Stop(stop)) => {
                        // Whatever happens next (an operator's hand, a remedy's caller) starts
                        // from a new observation, never from one taken before the stop.
                        tally.fresh = None;
                        return Ok(ExecutionEnd::Stopped(stop));
                    }
                    Err(fatal @ Halt::Fatal(_)) => return Err(fatal),
                }
            }
            let position = Position {
                id: checkpoint_id(),
                index: to_u32(frame.capability.steps.len()),
                checkpoint: true,
            };
            match self.settle(frame, tally, &position).await {
                Ok(Settled::Expected(_)) => Ok(ExecutionEnd::Success),
                Ok(Settled::Outcome(outcome)) => Ok(ExecutionEnd::Outcome(outcome)),
                Err(Halt::Stop(stop)) => {
                    tally.fresh = None;
                    Ok(ExecutionEnd::Stopped(stop))
                }
                Err(fatal @ Halt::Fatal(_)) => Err(fatal),
            }
        })
    }

    /// One step. `Some` is a business outcome that ends the run.
    async fn run_step(
        &self,
        frame: &mut Execution<'_>,
        tally: &mut RunState,
        index: usize,
    ) -> Result<Option<OutcomeResult>, Halt> {
        let capability = frame.capability;
        let step = &capability.steps[index];
        // A screenshot belongs to the step that took it, never to a later one.
        tally.step_screenshot = None;
        let position = Position {
            id: step.id.clone(),
            index: to_u32(index),
            checkpoint: false,
        };
        let before = match self.settle(frame, tally, &position).await? {
            Settled::Outcome(outcome) => return Ok(Some(outcome)),
            Settled::Expected(snapshot) => snapshot,
        };
        let done = match &step.action {
            Action::Assert { that } => self.assert_step(frame, tally, &position, that, &before),
            Action::WaitFor { until, timeout_ms } => {
                self.wait_for_step(frame, tally, &position, until, *timeout_ms, &before)
                    .await
            }
            Action::Extract {
                target,
                into,
                transform,
            } => self.extract_step(frame, tally, &position, target, into, *transform, &before),
            Action::Screenshot {} => {
                self.screenshot_step(frame, tally, &position, step, &before)
                    .await
            }
            Action::Http(call) => self.http_step(frame, tally, &position, step, call).await,
            Action::Command(call) => self.command_step(frame, tally, &position, step, call).await,
            _ => return self.act_step(frame, tally, &position, step, before).await,
        };
        done.map_err(|halt| placed(halt, &position))?;
        // A read or an assertion acts on nothing, so the screen it was judged on is still the
        // freshest observation (a wait step leaves its own last one when it held).
        if matches!(
            step.action,
            Action::Assert { .. } | Action::Extract { .. } | Action::Screenshot {}
        ) {
            tally.fresh = Some(*before);
        }
        Ok(None)
    }
}

pub(crate) fn explain(
    predicate: &Predicate,
    snapshot: &UiSnapshot,
    values: &RunValues,
    what: &str,
) -> Result<cua_target::Explanation, Stop> {
    cua_target::explain(predicate, snapshot, values).map_err(|error| {
        Stop::new(
            FailureCode::Internal,
            format!("{what} cannot be evaluated: {error}"),
        )
    })
}

pub(crate) fn to_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}
