//! Waiting after an action: navigation, a stable screen, or a predicate, each bounded and recorded
//! as `wait`.

use std::time::Duration;

use cua_artifact::{Actor, FailureCode, Predicate, Step, StepId, WaitCondition};
use cua_evidence::Wait;
use cua_snapshot::UiSnapshot;
use cua_surface::{SurfaceDriver, WaitOutcome};

use crate::executor::{Execution, Replayer, RunState, millis};
use crate::stop::{Halt, Position, Stop};
use crate::values::RunValues;

use super::explain;

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// Waits after an action as its step declares: whether the condition held, and the last
    /// snapshot the wait observed.
    pub(super) async fn wait_after(
        &self,
        frame: &Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        step: &Step,
        before: &UiSnapshot,
    ) -> Result<(bool, UiSnapshot), Halt> {
        let timeout = Duration::from_millis(u64::from(step.wait.timeout_ms));
        match step.wait.condition {
            WaitCondition::Predicate => {
                let Some(until) = &step.wait.until else {
                    return Err(Stop::new(
                        FailureCode::Internal,
                        format!(
                            "step `{}` waits for a predicate but declares none",
                            position.id
                        ),
                    )
                    .into());
                };
                self.wait_predicate(
                    frame,
                    tally,
                    Some(&position.id),
                    until,
                    step.wait.timeout_ms,
                    before,
                )
                .await
            }
            WaitCondition::SnapshotStable | WaitCondition::Navigation => {
                let condition = match step.wait.condition {
                    WaitCondition::Navigation => cua_surface::WaitCondition::Navigation {
                        before: Box::new(before.clone()),
                    },
                    _ => cua_surface::WaitCondition::SnapshotStable,
                };
                let started = self.clock.elapsed();
                let outcome = self
                    .driver
                    .wait(condition, timeout)
                    .await
                    .map_err(|error| Stop::surface(&error, "waiting after the action"))?;
                let (satisfied, snapshot) = match outcome {
                    WaitOutcome::Met(snapshot) => (true, *snapshot),
                    WaitOutcome::TimedOut(snapshot) => (false, *snapshot),
                };
                self.emit_wait(
                    tally,
                    Some(&position.id),
                    wait_name(step.wait.condition),
                    satisfied,
                    started,
                    Some(timeout),
                )?;
                self.drain_blocked()?;
                Ok((satisfied, snapshot))
            }
        }
    }

    /// Polls the surface until `until` holds, bounded. Returns whether it held and the last
    /// snapshot seen.
    pub(super) async fn wait_predicate(
        &self,
        frame: &Execution<'_>,
        tally: &mut RunState,
        step: Option<&StepId>,
        until: &Predicate,
        timeout_ms: u32,
        before: &UiSnapshot,
    ) -> Result<(bool, UiSnapshot), Halt> {
        // Evaluate once up front, so an unbound value is a failure rather than a silent
        // never-true poll.
        explain(until, before, &frame.values, "a wait condition")?;
        let timeout = Duration::from_millis(u64::from(timeout_ms));
        let predicate = until.clone();
        let values: RunValues = frame.values.clone();
        let started = self.clock.elapsed();
        let outcome = self
            .driver
            .wait_until(
                move |snapshot: &UiSnapshot| {
                    cua_target::evaluate(&predicate, snapshot, &values).unwrap_or(false)
                },
                timeout,
            )
            .await
            .map_err(|error| Stop::surface(&error, "waiting for a condition"))?;
        let (satisfied, snapshot) = match outcome {
            WaitOutcome::Met(snapshot) => (true, *snapshot),
            WaitOutcome::TimedOut(snapshot) => (false, *snapshot),
        };
        self.emit_wait(tally, step, "predicate", satisfied, started, Some(timeout))?;
        self.drain_blocked()?;
        Ok((satisfied, snapshot))
    }

    /// Waits for the screen to settle (entrypoint, remedies); a timeout is not a failure, the
    /// next classification judges the screen. Returns whether it settled and the last snapshot.
    pub(crate) async fn settle_screen(
        &self,
        tally: &RunState,
        step: Option<&StepId>,
        timeout: Duration,
    ) -> Result<(bool, UiSnapshot), Halt> {
        let started = self.clock.elapsed();
        let outcome = self
            .driver
            .wait(cua_surface::WaitCondition::SnapshotStable, timeout)
            .await
            .map_err(|error| Stop::surface(&error, "waiting for the screen to settle"))?;
        let (satisfied, snapshot) = match outcome {
            WaitOutcome::Met(snapshot) => (true, *snapshot),
            WaitOutcome::TimedOut(snapshot) => (false, *snapshot),
        };
        self.emit_wait(
            tally,
            step,
            "snapshot_stable",
            satisfied,
            started,
            Some(timeout),
        )?;
        self.drain_blocked()?;
        Ok((satisfied, snapshot))
    }

    pub(super) fn emit_wait(
        &self,
        tally: &RunState,
        step: Option<&StepId>,
        condition: &str,
        satisfied: bool,
        started: Duration,
        timeout: Option<Duration>,
    ) -> Result<(), cua_evidence::EvidenceError> {
        self.bus
            .emit(
                Actor::Automation,
                tally.epoch,
                Wait {
                    step: step.cloned(),
                    condition: condition.to_owned(),
                    satisfied,
                    waited_ms: millis(self.clock.elapsed().saturating_sub(started)),
                    timeout_ms: timeout.map(millis),
                },
            )
            .map(drop)
    }
}

pub(super) fn describe_predicate(predicate: &Predicate) -> String {
    serde_json::to_string(predicate).unwrap_or_else(|_| predicate.kind().to_owned())
}

pub(super) fn wait_name(condition: WaitCondition) -> &'static str {
    match condition {
        WaitCondition::SnapshotStable => "snapshot_stable",
        WaitCondition::Navigation => "navigation",
        WaitCondition::Predicate => "predicate",
    }
}
