//! A browser step that acts: resolve its target, bind its value, pass the gate, dispatch, wait,
//! check the postcondition and give the effect verdict.

use cua_artifact::{
    Action, Actor, EffectVerdict, FailureCode, ObservationClass, OutcomeResult, RiskTier, Step,
    StepId,
};
use cua_evidence::{Classify, Verify};
use cua_policy::ResolvedTarget;
use cua_snapshot::UiSnapshot;
use cua_surface::SurfaceDriver;

use crate::executor::{Execution, Replayer, RunState};
use crate::stop::{Halt, Position, Stop, placed};

use super::record::StepRecordInput;
use super::settle::outcome_result;
use super::wait::{describe_predicate, wait_name};
use super::{DispatchFailure, explain};

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// A step that acts on the surface: resolve, bind, authorize, dispatch, wait, verify.
    pub(super) async fn act_step(
        &self,
        frame: &mut Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        step: &Step,
        before: Box<UiSnapshot>,
    ) -> Result<Option<OutcomeResult>, Halt> {
        let kind = step.action.kind();
        let refused = |reason: String| StepRecordInput {
            kind,
            resolution: None,
            decision_id: None,
            dispatched: false,
            verdict: EffectVerdict::SuspectedNoop,
            reason,
            risk: step.risk,
            route: None,
        };
        let (target, resolved) = match step.action.target() {
            Some(descriptor) => match self.resolve(frame, tally, position, descriptor, &before)? {
                Ok((resolution, resolved)) => {
                    let node = &before.nodes[resolution.node];
                    let target = ResolvedTarget {
                        node_id: resolution.node_id.clone(),
                        role: node.role.clone(),
                        name: node.name.clone(),
                    };
                    (Some(target), Some(resolved))
                }
                Err(stop) => {
                    let reason = format!("refused before dispatch: {}", stop.code.as_str());
                    self.record_step(frame, tally, position, refused(reason))?;
                    return Err(placed(stop.into(), position));
                }
            },
            None => (None, None),
        };
        // Values, secrets included, are bound now and not a moment earlier; a coordinate click
        // claims its observation ref now, and its point is checked against the screenshot.
        let bound = match &step.action {
            Action::ClickAt { observation, x, y } => self
                .claim_point(frame, tally, position, observation, (*x, *y), &before)
                .map(|action| (action, false)),
            action => self.bind(frame, action),
        };
        let (action, sensitive) = match bound {
            Ok(bound) => bound,
            Err(stop) => {
                let reason = format!("refused before dispatch: {}", stop.code.as_str());
                self.record_step(frame, tally, position, refused(reason))?;
                return Err(placed(stop.into(), position));
            }
        };
        if sensitive && let Some(target) = &target {
            tally.sensitive_nodes.insert(target.node_id.clone());
        }
        let dispatched = match self
            .chokepoint(
                frame,
                tally,
                Some(&position.id),
                action,
                target,
                Some(step.risk),
            )
            .await
        {
            Ok(dispatched) => dispatched,
            Err(DispatchFailure::Refused {
                stop,
                decision_id,
                risk,
            }) => {
                let mut input = refused(format!("refused before dispatch: {}", stop.code.as_str()));
                input.decision_id = Some(decision_id);
                input.resolution = resolved;
                input.risk = risk;
                self.record_step(frame, tally, position, input)?;
                return Err(placed(stop.into(), position));
            }
            Err(DispatchFailure::Failed {
                stop,
                decision_id,
                risk,
                reached,
            }) => {
                let after = self.observe(tally, &format!("{}-after", position.id)).await;
                let (verdict, reason) = match (&after, reached) {
                    (_, false) => (
                        EffectVerdict::SuspectedNoop,
                        "the surface refused the action before performing it".to_owned(),
                    ),
                    (Ok(after), true) if after.digest() == before.digest() => (
                        EffectVerdict::SuspectedNoop,
                        "the dispatch failed and the screen is unchanged".to_owned(),
                    ),
                    _ => (
                        EffectVerdict::Unverifiable,
                        "the dispatch failed part-way; nothing proves what happened".to_owned(),
                    ),
                };
                self.mark_mutation(tally, &position.id, risk, false);
                self.record_step(
                    frame,
                    tally,
                    position,
                    StepRecordInput {
                        kind,
                        resolution: resolved,
                        decision_id: Some(decision_id),
                        dispatched: true,
                        verdict,
                        reason,
                        risk,
                        route: None,
                    },
                )?;
                return Err(placed(stop.into(), position));
            }
            Err(DispatchFailure::Fatal(error)) => return Err(Halt::Fatal(error)),
        };
        self.mark_mutation(
            tally,
            &position.id,
            dispatched.risk,
            dispatched.receipt.navigated,
        );
        let record = |verdict, reason: String| StepRecordInput {
            kind,
            resolution: resolved.clone(),
            decision_id: Some(dispatched.decision_id.clone()),
            dispatched: true,
            verdict,
            reason,
            risk: dispatched.risk,
            route: None,
        };
        if !dispatched.receipt.ok {
            let after = self
                .observe(tally, &format!("{}-after", position.id))
                .await?;
            let (verdict, reason) = if after.digest() == before.digest() {
                (
                    EffectVerdict::SuspectedNoop,
                    "the surface reported failure and the screen is unchanged",
                )
            } else {
                (
                    EffectVerdict::Unverifiable,
                    "the surface reported failure and the screen changed",
                )
            };
            self.record_step(frame, tally, position, record(verdict, reason.to_owned()))?;
            return Err(placed(
                Stop::new(
                    FailureCode::ActionFailed,
                    format!(
                        "the surface could not perform `{}` for step `{}`: {}",
                        kind.as_str(),
                        position.id,
                        dispatched.receipt.message
                    ),
                )
                .into(),
                position,
            ));
        }
        // The wait's last observation is taken after the action: the fresh snapshot the
        // postcondition is judged on (and, when the wait was met, the next step's screen).
        let (waited, after) = self
            .wait_after(frame, tally, position, step, &before)
            .await?;
        self.record(tally, &format!("{}-after", position.id), &after)?;
        self.capture_step(tally, frame.capability, &frame.values, position)
            .await?;
        if waited {
            tally.fresh = Some(after.clone());
        }
        if (dispatched.receipt.navigated || after.url != before.url)
            && let Err(stop) = self.check_landing(frame, &after, &format!("step `{}`", position.id))
        {
            self.record_step(
                frame,
                tally,
                position,
                record(
                    EffectVerdict::Unverifiable,
                    "the action navigated outside the allowlist".to_owned(),
                ),
            )?;
            return Err(placed(stop.into(), position));
        }
        let verification = match &step.postcondition {
            Some(postcondition) => {
                let explanation = explain(postcondition, &after, &frame.values, "a postcondition")
                    .map_err(|stop| placed(stop.into(), position))?;
                self.bus.emit(
                    Actor::Automation,
                    tally.epoch,
                    Verify {
                        step: position.id.clone(),
                        postcondition: describe_predicate(postcondition),
                        holds: explanation.holds,
                        observed: (!explanation.holds).then(|| explanation.text.clone()),
                        snapshot_ref: tally.last_snapshot_ref.clone(),
                    },
                )?;
                Some(explanation)
            }
            None => None,
        };
        let unchanged = after.digest() == before.digest();
        let (verdict, reason) = match (&verification, unchanged) {
            (Some(explanation), _) if explanation.holds => (
                EffectVerdict::Confirmed,
                "the postcondition was observed on a fresh snapshot",
            ),
            (_, true) => (
                EffectVerdict::SuspectedNoop,
                "the screen after the action is identical to the screen before it",
            ),
            (Some(_), false) => (
                EffectVerdict::Unverifiable,
                "the screen changed but the postcondition does not hold",
            ),
            (None, false) => (
                EffectVerdict::Unverifiable,
                "dispatch receipt only: no postcondition is declared",
            ),
        };
        self.record_step(frame, tally, position, record(verdict, reason.to_owned()))?;
        let postcondition_holds = verification.as_ref().map(|explanation| explanation.holds);
        if !waited && postcondition_holds != Some(true) {
            return Err(placed(
                Stop::new(
                    FailureCode::Timeout,
                    format!(
                        "step `{}` waited {} ms for {} without it happening",
                        position.id,
                        step.wait.timeout_ms,
                        wait_name(step.wait.condition)
                    ),
                )
                .into(),
                position,
            ));
        }
        if let Some(explanation) = verification.filter(|explanation| !explanation.holds) {
            // A declared outcome may explain why the effect is not there ("No records found").
            let (classification, _) = self
                .classify_outcomes_only(frame, &after)
                .map_err(|stop| placed(stop.into(), position))?;
            if let Some(outcome) = classification {
                self.bus.emit(
                    Actor::Automation,
                    tally.epoch,
                    Classify {
                        step: position.id.clone(),
                        observation: ObservationClass::BusinessOutcome,
                        reason: format!(
                            "declared outcome `{}` detected after the action",
                            outcome.code
                        ),
                        matched: Some(outcome.code.clone()),
                    },
                )?;
                let result =
                    outcome_result(frame, outcome).map_err(|stop| placed(stop.into(), position))?;
                return Ok(Some(result));
            }
            return Err(placed(
                Stop::new(
                    FailureCode::PreconditionFailed,
                    format!(
                        "the postcondition of step `{}` does not hold after the action: {}",
                        position.id, explanation.text
                    ),
                )
                .observed(explanation.text)
                .into(),
                position,
            ));
        }
        Ok(None)
    }

    /// Updates the mutation mark after a dispatch (see the crate documentation).
    pub(crate) fn mark_mutation(
        &self,
        tally: &mut RunState,
        step: &StepId,
        risk: RiskTier,
        navigated: bool,
    ) {
        if risk > RiskTier::Safe {
            tally.mutation_mark = Some(step.to_string());
        } else if navigated {
            tally.mutation_mark = None;
        }
    }
}
