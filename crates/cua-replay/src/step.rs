//! The per-step pipeline: observe → classify → bind → resolve → authorize → dispatch → wait →
//! postcondition on a fresh snapshot → effect verdict; reads and assertions evaluated locally;
//! the checkpoint after the last step.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use cua_artifact::{
    Action, ActionKind, Actor, EffectVerdict, FailureCode, ObservationClass, Outcome,
    OutcomeResult, Predicate, RecoveryRule, RecoveryScope, ResolutionDebug, ResolutionStrategy,
    RiskTier, Step, StepId, TargetDescriptor, ValueExpr, WaitCondition,
};
use cua_evidence::{BlockedRequest, Classify, Effect, Observe, Resolve, Verify, Wait};
use cua_gate::{Cleared, Gate, IntentKey, Refusal, Request as GateRequest, Sent, Ticket};
use cua_policy::{
    AuthorizationContext, DenialCode, ResolvedTarget, ScrollDirection, SurfaceAction,
};
use cua_snapshot::UiSnapshot;
use cua_surface::{DispatchReceipt, SurfaceDriver, WaitOutcome};
use cua_target::{Resolution, TargetError};
use serde_json::Value;

use crate::error::ReplayError;
use crate::executor::{Ending, Frame, Replayer, Tally, checkpoint_id, millis};
use crate::report::{StepReport, StepResolution};
use crate::stop::{Halt, Position, Stop, placed};
use crate::transform;
use crate::values::RunValues;

/// A boxed future of a capability's execution, so remedies can run capabilities recursively.
pub(crate) type FrameFuture<'a> = Pin<Box<dyn Future<Output = Result<Ending, Halt>> + Send + 'a>>;

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
    /// frame navigated before, and a remedy runs on the current screen).
    pub(crate) fn run_frame<'a, 'c: 'a>(
        &'a self,
        frame: &'a mut Frame<'c>,
        tally: &'a mut Tally,
    ) -> FrameFuture<'a> {
        self.run_frame_from(frame, tally, 0)
    }

    /// [`Replayer::run_frame`] from step `start` on (a resume after a hand-back).
    pub(crate) fn run_frame_from<'a, 'c: 'a>(
        &'a self,
        frame: &'a mut Frame<'c>,
        tally: &'a mut Tally,
        start: usize,
    ) -> FrameFuture<'a> {
        Box::pin(async move {
            for index in start..frame.capability.steps.len() {
                match self.run_step(frame, tally, index).await {
                    Ok(None) => {}
                    Ok(Some(outcome)) => return Ok(Ending::Outcome(outcome)),
                    Err(Halt::Stop(stop)) => {
                        // Whatever happens next (an operator's hand, a remedy's caller) starts
                        // from a new observation, never from one taken before the stop.
                        tally.fresh = None;
                        return Ok(Ending::Stopped(stop));
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
                Ok(Settled::Expected(_)) => Ok(Ending::Success),
                Ok(Settled::Outcome(outcome)) => Ok(Ending::Outcome(outcome)),
                Err(Halt::Stop(stop)) => {
                    tally.fresh = None;
                    Ok(Ending::Stopped(stop))
                }
                Err(fatal @ Halt::Fatal(_)) => Err(fatal),
            }
        })
    }

    /// One step. `Some` is a business outcome that ends the run.
    async fn run_step(
        &self,
        frame: &mut Frame<'_>,
        tally: &mut Tally,
        index: usize,
    ) -> Result<Option<OutcomeResult>, Halt> {
        let capability = frame.capability;
        let step = &capability.steps[index];
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

    /// Observes and classifies until the screen is one the step (or checkpoint) expects,
    /// recovering along the way; fails closed on anything undeclared.
    pub(crate) async fn settle(
        &self,
        frame: &mut Frame<'_>,
        tally: &mut Tally,
        position: &Position,
    ) -> Result<Settled, Halt> {
        loop {
            let elapsed = millis(self.clock.elapsed().saturating_sub(frame.started));
            frame.budget.check_elapsed(elapsed).map_err(|exceeded| {
                Stop::new(FailureCode::Timeout, exceeded.to_string()).at(position)
            })?;
            let label = if position.checkpoint {
                "checkpoint".to_owned()
            } else {
                format!("{}-before", position.id)
            };
            // The screen the last action settled on is the freshest observation there is;
            // anything else (a first look, a look after a remedy) is observed now.
            let snapshot = match tally.fresh.take() {
                Some(snapshot) => snapshot,
                None => self.observe(tally, &label).await?,
            };
            let (classification, noted) = self
                .classify(frame, position, &snapshot)
                .map_err(|stop| stop.at(position))?;
            for outcome in noted {
                self.note(
                    "non-terminal outcome observed",
                    [("outcome", Value::from(outcome.code.to_string()))],
                )?;
            }
            let (observation, reason, matched) = match &classification {
                Classification::Expected(reason) => {
                    (ObservationClass::Expected, reason.clone(), None)
                }
                Classification::Outcome(outcome) => (
                    ObservationClass::BusinessOutcome,
                    format!("declared outcome `{}` detected", outcome.code),
                    Some(outcome.code.clone()),
                ),
                Classification::Recoverable(rule) => (
                    ObservationClass::Recoverable,
                    format!("recovery rule `{}` detected", rule.id),
                    Some(rule.id.clone()),
                ),
                Classification::Unexpected(reason) => {
                    (ObservationClass::UnexpectedState, reason.clone(), None)
                }
            };
            self.bus.emit(
                Actor::Automation,
                tally.epoch,
                Classify {
                    step: position.id.clone(),
                    observation,
                    reason,
                    matched,
                },
            )?;
            match classification {
                Classification::Expected(_) => return Ok(Settled::Expected(Box::new(snapshot))),
                Classification::Outcome(outcome) => {
                    let result =
                        outcome_result(frame, outcome).map_err(|stop| stop.at(position))?;
                    return Ok(Settled::Outcome(result));
                }
                Classification::Recoverable(rule) => {
                    self.recover(frame, tally, position, rule)
                        .await
                        .map_err(|halt| placed(halt, position))?;
                }
                Classification::Unexpected(explanation) => {
                    let (code, message) = if position.checkpoint {
                        (
                            FailureCode::CheckpointFailed,
                            format!(
                                "the checkpoint of {} does not hold after the last step: {explanation}",
                                frame.reference
                            ),
                        )
                    } else {
                        (
                            FailureCode::UnexpectedState,
                            format!(
                                "step `{}` {explanation}, and no declared outcome or recovery rule explains the screen",
                                position.id
                            ),
                        )
                    };
                    return Err(Stop::new(code, message)
                        .observed(explanation)
                        .at(position)
                        .into());
                }
            }
        }
    }

    /// The classification order. A predicate that cannot be evaluated (an unbound value) is
    /// an internal failure, never a guess.
    pub(crate) fn classify<'c>(
        &self,
        frame: &Frame<'c>,
        position: &Position,
        snapshot: &UiSnapshot,
    ) -> Result<(Classification<'c>, Vec<&'c Outcome>), Stop> {
        let capability = frame.capability;
        let values = &frame.values;
        let mut noted = Vec::new();
        let mut terminal = Vec::new();
        for outcome in &capability.outcomes {
            if explain(&outcome.detect, snapshot, values, "an outcome detector")?.holds {
                if outcome.terminal {
                    terminal.push(outcome);
                } else {
                    noted.push(outcome);
                }
            }
        }
        let condition = if position.checkpoint {
            Some(&capability.checkpoint)
        } else {
            capability.steps[position.index as usize]
                .precondition
                .as_ref()
        };
        let what = if position.checkpoint {
            "the checkpoint"
        } else {
            "the precondition"
        };
        // Classification is exclusive: a screen two explanations fit is refused, never read as
        // whichever is checked first (help text quoting a refusal beside the record it refuses).
        if let Some(outcome) = exclusive_outcome(&terminal)? {
            if let Some(predicate) = condition
                && explain(predicate, snapshot, values, what)?.holds
            {
                return Err(ambiguous_screen(format!(
                    "the outcome `{}` and {what} of {} both hold on this screen",
                    outcome.code,
                    if position.checkpoint {
                        "the capability".to_owned()
                    } else {
                        format!("`{}`", position.id)
                    }
                )));
            }
            return Ok((Classification::Outcome(outcome), noted));
        }
        for rule in &capability.recovery {
            let watched = match rule.scope {
                RecoveryScope::AnyStep => true,
                RecoveryScope::NamedSteps => {
                    !position.checkpoint && rule.steps.contains(&position.id)
                }
            };
            if watched && explain(&rule.detect, snapshot, values, "a recovery detector")?.holds {
                return Ok((Classification::Recoverable(rule), noted));
            }
        }
        let classification = match condition {
            None => Classification::Expected("no precondition is declared".to_owned()),
            Some(predicate) => {
                let what = if position.checkpoint {
                    "the checkpoint"
                } else {
                    "a precondition"
                };
                let explanation = explain(predicate, snapshot, values, what)?;
                if explanation.holds {
                    Classification::Expected(format!("{what} holds"))
                } else {
                    Classification::Unexpected(explanation.text)
                }
            }
        };
        Ok((classification, noted))
    }

    /// `assert`: evaluated on the snapshot, never dispatched.
    fn assert_step(
        &self,
        frame: &Frame<'_>,
        tally: &mut Tally,
        position: &Position,
        that: &Predicate,
        snapshot: &UiSnapshot,
    ) -> Result<(), Halt> {
        let explanation = explain(that, snapshot, &frame.values, "an assertion")?;
        self.record_step(
            frame,
            tally,
            position,
            StepRecordInput::read(ActionKind::Assert, "an assertion reads the screen"),
        )?;
        if explanation.holds {
            Ok(())
        } else {
            Err(Stop::new(
                FailureCode::PreconditionFailed,
                format!(
                    "the assertion of step `{}` does not hold: {}",
                    position.id, explanation.text
                ),
            )
            .observed(explanation.text)
            .into())
        }
    }

    /// `wait_for`: polled on the surface, bounded; a timeout is a result.
    async fn wait_for_step(
        &self,
        frame: &Frame<'_>,
        tally: &mut Tally,
        position: &Position,
        until: &Predicate,
        timeout_ms: u32,
        before: &UiSnapshot,
    ) -> Result<(), Halt> {
        let (satisfied, snapshot) = self
            .wait_predicate(frame, tally, Some(&position.id), until, timeout_ms, before)
            .await?;
        self.record(tally, &format!("{}-after", position.id), &snapshot)?;
        if satisfied {
            tally.fresh = Some(snapshot.clone());
        }
        self.record_step(
            frame,
            tally,
            position,
            StepRecordInput::read(ActionKind::WaitFor, "a wait reads the screen"),
        )?;
        if satisfied {
            Ok(())
        } else {
            let explanation = explain(until, &snapshot, &frame.values, "a wait")?;
            Err(Stop::new(
                FailureCode::Timeout,
                format!(
                    "step `{}` waited {timeout_ms} ms and its condition never held: {}",
                    position.id, explanation.text
                ),
            )
            .observed(explanation.text)
            .into())
        }
    }

    /// `extract`: resolves the node on the snapshot and reads its value (or its name); never
    /// authorized or dispatched, since nothing is done to the surface.
    #[expect(
        clippy::too_many_arguments,
        reason = "the fields of one extract action"
    )]
    fn extract_step(
        &self,
        frame: &mut Frame<'_>,
        tally: &mut Tally,
        position: &Position,
        target: &TargetDescriptor,
        into: &cua_artifact::OutputName,
        transform: Option<cua_artifact::Transform>,
        snapshot: &UiSnapshot,
    ) -> Result<(), Halt> {
        let (resolution, resolved) = match self.resolve(frame, tally, position, target, snapshot)? {
            Ok(found) => found,
            Err(stop) => {
                self.record_step(
                    frame,
                    tally,
                    position,
                    StepRecordInput::read(ActionKind::Extract, "a read that found no target"),
                )?;
                return Err(stop.into());
            }
        };
        // A control's value, else the node's name, else its rendered text (the names of the
        // text inside it, joined): a paragraph or a landmark has no name of its own.
        let node = &snapshot.nodes[resolution.node];
        let text = match node
            .value
            .as_deref()
            .filter(|value| !value.trim().is_empty())
        {
            Some(value) => value.to_owned(),
            None if !node.name.trim().is_empty() => node.name.clone(),
            None => cua_target::cell_text(snapshot, resolution.node),
        };
        let text = text.as_str();
        let mut input = StepRecordInput::read(ActionKind::Extract, "a read from the snapshot");
        input.resolution = Some(resolved);
        self.record_step(frame, tally, position, input)?;
        if text.trim().is_empty() {
            return Err(Stop::new(
                FailureCode::ActionFailed,
                format!(
                    "step `{}` resolved {} but it holds no text to extract",
                    position.id, resolution.node_id
                ),
            )
            .into());
        }
        let value = transform::apply(transform, text).map_err(|reason| {
            Stop::new(
                FailureCode::ActionFailed,
                format!("step `{}` cannot extract `{into}`: {reason}", position.id),
            )
        })?;
        if frame
            .capability
            .output(into.as_str())
            .is_some_and(|output| output.sensitive)
        {
            self.bus.redactor().register_sensitive_value(&value);
        }
        frame.values.set_output(into.clone(), value);
        Ok(())
    }

    /// A step that acts on the surface: resolve, bind, authorize, dispatch, wait, verify.
    async fn act_step(
        &self,
        frame: &mut Frame<'_>,
        tally: &mut Tally,
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

    /// Terminal outcomes only, for a screen after an action.
    fn classify_outcomes_only<'c>(
        &self,
        frame: &Frame<'c>,
        snapshot: &UiSnapshot,
    ) -> Result<(Option<&'c Outcome>, ()), Stop> {
        let mut holding = Vec::new();
        for outcome in frame
            .capability
            .outcomes
            .iter()
            .filter(|outcome| outcome.terminal)
        {
            if explain(
                &outcome.detect,
                snapshot,
                &frame.values,
                "an outcome detector",
            )?
            .holds
            {
                holding.push(outcome);
            }
        }
        Ok((exclusive_outcome(&holding)?, ()))
    }

    /// Updates the mutation mark after a dispatch (see the crate documentation).
    pub(crate) fn mark_mutation(
        &self,
        tally: &mut Tally,
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

    /// Passes one action through the gate as automation (lease, allowlist, risk, approval, the
    /// write-ahead intent of a mutation, the lease again) and maps a refusal to the stop it
    /// ends the run on. Every operator passes here: the browser, the HTTP client, the command
    /// runner and the screenshot.
    pub(crate) fn authorize_action(
        &self,
        frame: &Frame<'_>,
        tally: &mut Tally,
        step: Option<&StepId>,
        action: SurfaceAction,
        target: Option<ResolvedTarget>,
        declared: Declared,
    ) -> Result<Cleared, DispatchFailure> {
        let kind = action.kind();
        if self.config.interrupt.is_raised() {
            return Err(DispatchFailure::Refused {
                stop: interrupted(step.map_or("the entrypoint", StepId::as_str)),
                decision_id: String::new(),
                risk: declared.risk.unwrap_or_default(),
            });
        }
        let request = GateRequest {
            step: step.cloned(),
            target,
            declared_risk: declared.risk,
            declared_mutation: declared.mutates,
            context: AuthorizationContext {
                confirmed: false,
                grant: frame.grant.clone(),
            },
            intent: Some(IntentKey {
                row: tally.attempt.row,
                attempt: tally.attempt.attempt,
                idempotency_key: tally.attempt.idempotency_key.clone(),
                remedy: frame.remedy.then(|| frame.reference.clone()),
            }),
            read_only: self.config.read_only,
            ..GateRequest::new(Actor::Automation, tally.epoch, action)
        };
        let lease = || self.current_lease();
        let refusal = match Gate::new(&frame.engine, Some(self.bus), &lease).clear(request)? {
            Ok(cleared) => {
                if cleared.ticket.mutation {
                    tally
                        .intents
                        .push((step.cloned(), cleared.ticket.decision_id.clone()));
                }
                return Ok(cleared);
            }
            Err(refusal) => refusal,
        };
        let (stop, decision_id, risk) = match refusal {
            Refusal::Denied { denial, risk } => {
                let code = match denial.code {
                    DenialCode::LeaseLost => FailureCode::LeaseLost,
                    DenialCode::NavigationBlocked => FailureCode::NavigationBlocked,
                    DenialCode::NeedsConfirmation | DenialCode::PolicyDenied => {
                        FailureCode::PolicyDenied
                    }
                };
                let reason = format!("policy refused `{}`: {}", kind.as_str(), denial.reason);
                (Stop::new(code, reason), denial.decision_id, risk)
            }
            Refusal::Withheld {
                decision_id,
                risk,
                why,
            } => {
                let reason = format!(
                    "`{}` is assessed {}: {}",
                    kind.as_str(),
                    risk.as_str(),
                    why.reason()
                );
                (
                    Stop::new(FailureCode::PolicyDenied, reason),
                    decision_id,
                    risk,
                )
            }
            Refusal::Stale {
                decision_id,
                risk,
                lease,
            } => {
                let reason = format!(
                    "the session passed to {} (epoch {}) before `{}` was dispatched",
                    lease.holder.as_str(),
                    lease.epoch,
                    kind.as_str()
                );
                (Stop::new(FailureCode::LeaseLost, reason), decision_id, risk)
            }
        };
        Err(DispatchFailure::Refused {
            stop,
            decision_id,
            risk,
        })
    }

    /// Records what a port reported for a cleared action, and the requests the browser
    /// blocked meanwhile.
    pub(crate) fn record_sent(
        &self,
        frame: &Frame<'_>,
        ticket: &Ticket,
        sent: Sent,
        blocked: Vec<cua_surface::BlockedRequest>,
    ) -> Result<(), cua_evidence::EvidenceError> {
        let lease = || self.current_lease();
        Gate::new(&frame.engine, Some(self.bus), &lease).record(ticket, sent, blocked)
    }

    /// The chokepoint every browser action passes: the gate, then the surface, then the
    /// record of what it reported.
    pub(crate) async fn chokepoint(
        &self,
        frame: &Frame<'_>,
        tally: &mut Tally,
        step: Option<&StepId>,
        action: SurfaceAction,
        target: Option<ResolvedTarget>,
        declared_risk: Option<RiskTier>,
    ) -> Result<Dispatched, DispatchFailure> {
        let Cleared { authorized, ticket } = self.authorize_action(
            frame,
            tally,
            step,
            action,
            target,
            Declared {
                risk: declared_risk,
                mutates: false,
            },
        )?;
        tally.fresh = None;
        let outcome = self.driver.dispatch(authorized).await;
        tally.dispatches += 1;
        self.record_sent(
            frame,
            &ticket,
            Sent::from(&outcome),
            self.driver.take_blocked_requests(),
        )?;
        let Ticket {
            decision_id,
            risk,
            kind,
            ..
        } = ticket;
        match outcome {
            Ok(receipt) => Ok(Dispatched {
                decision_id,
                risk,
                receipt,
            }),
            Err(error) => {
                let reached = !matches!(
                    error,
                    cua_surface::SurfaceError::NodeGone { .. }
                        | cua_surface::SurfaceError::NavigationBlocked { .. }
                );
                Err(DispatchFailure::Failed {
                    stop: Stop::surface(&error, &format!("dispatching `{}`", kind.as_str())),
                    decision_id,
                    risk,
                    reached,
                })
            }
        }
    }

    /// Resolves a target on a snapshot and emits `resolve`. The outer error is evidence; the
    /// inner one is the refusal (`target_not_found`, `target_ambiguous`).
    ///
    /// An identity check that fails is reported as `target_ambiguous`, not as not-found: the
    /// screen holds a lookalike of the intended row, so the descriptor no longer singles out
    /// the right control, and acting on either would be a guess.
    pub(crate) fn resolve(
        &self,
        frame: &Frame<'_>,
        tally: &Tally,
        position: &Position,
        descriptor: &TargetDescriptor,
        snapshot: &UiSnapshot,
    ) -> Result<Result<(Resolution, StepResolution), Stop>, cua_evidence::EvidenceError> {
        let described = descriptor.describe();
        match cua_target::resolve(snapshot, descriptor, &frame.values) {
            Ok(resolution) => {
                self.bus.emit(
                    Actor::Automation,
                    tally.epoch,
                    Resolve {
                        step: Some(position.id.clone()),
                        target: described,
                        resolved: true,
                        node_id: Some(resolution.node_id.clone()),
                        strategy: Some(resolution.strategy),
                        strategy_recorded: resolution.recorded_strategy,
                        candidates_considered: resolution.candidates_considered,
                        identity_verified: descriptor
                            .identity
                            .is_some()
                            .then_some(resolution.identity_verified),
                        failure_code: None,
                        reason: None,
                        strategies_tried: Vec::new(),
                        candidates: Vec::new(),
                        ambiguity_score: Some(rounded(resolution.ambiguity)),
                    },
                )?;
                let resolved = StepResolution {
                    node_id: resolution.node_id.to_string(),
                    strategy: resolution.strategy,
                    recorded: resolution.recorded_strategy,
                    drifted: resolution.drifted,
                    identity_verified: resolution.identity_verified,
                };
                Ok(Ok((resolution, resolved)))
            }
            Err(error) => {
                let debug = resolution_debug(&described, &error);
                let code = match &error {
                    TargetError::IdentityMismatch { .. } => FailureCode::TargetAmbiguous,
                    other => other.failure_code(),
                };
                self.bus.emit(
                    Actor::Automation,
                    tally.epoch,
                    Resolve {
                        step: Some(position.id.clone()),
                        target: described.clone(),
                        resolved: false,
                        node_id: None,
                        strategy: None,
                        strategy_recorded: descriptor.recorded_strategy,
                        candidates_considered: debug.candidates_considered,
                        identity_verified: matches!(
                            error,
                            TargetError::IdentityMismatch { .. }
                                | TargetError::IdentityNotUnique { .. }
                        )
                        .then_some(false),
                        failure_code: Some(code),
                        reason: Some(error.to_string()),
                        strategies_tried: debug.strategies_tried.clone(),
                        candidates: debug.candidate_summaries.clone(),
                        ambiguity_score: Some(debug.ambiguity_score),
                    },
                )?;
                let stop = Stop::new(
                    code,
                    format!("step `{}` cannot act on {described}: {error}", position.id),
                )
                .expected(described)
                .resolution(debug);
                Ok(Err(stop))
            }
        }
    }

    /// Binds an action's values into a concrete surface action. Secrets are resolved here,
    /// registered with the redactor as they are issued, and held only by the action. The flag
    /// says whether a secret or sensitive value was bound (its node is painted in screenshots).
    pub(crate) fn bind(
        &self,
        frame: &Frame<'_>,
        action: &Action,
    ) -> Result<(SurfaceAction, bool), Stop> {
        let mut sensitive = false;
        let surface = match action {
            Action::Click { accept_confirm, .. } => match accept_confirm {
                Some(confirm) => SurfaceAction::ClickAcceptingConfirm {
                    confirm: confirm.clone(),
                },
                None => SurfaceAction::Click,
            },
            Action::Type {
                value, clear_first, ..
            } => SurfaceAction::Type {
                text: self.bind_value(frame, value, &mut sensitive)?,
                clear_first: *clear_first,
            },
            Action::Select { value, .. } => SurfaceAction::Select {
                value: self.bind_value(frame, value, &mut sensitive)?,
            },
            Action::PressKey { key, .. } => SurfaceAction::PressKey { key: key.clone() },
            Action::Navigate { url } => SurfaceAction::Navigate {
                url: self.bind_url(frame, url)?,
            },
            Action::Reload {} => SurfaceAction::Reload,
            Action::Scroll {
                direction, amount, ..
            } => SurfaceAction::Scroll {
                direction: match direction {
                    cua_artifact::ScrollDirection::Up => ScrollDirection::Up,
                    cua_artifact::ScrollDirection::Down => ScrollDirection::Down,
                    cua_artifact::ScrollDirection::IntoView => ScrollDirection::IntoView,
                },
                amount: amount.map(i64::from),
            },
            Action::RawInput { .. } => {
                return Err(Stop::new(
                    FailureCode::PolicyDenied,
                    "raw_input is an operator's gesture; no artifact may replay one",
                ));
            }
            Action::WaitFor { .. } | Action::Extract { .. } | Action::Assert { .. } => {
                return Err(Stop::new(
                    FailureCode::Internal,
                    format!("`{}` is never dispatched", action.kind().as_str()),
                ));
            }
            Action::Http(_)
            | Action::Command(_)
            | Action::Screenshot {}
            | Action::ClickAt { .. } => {
                return Err(Stop::new(
                    FailureCode::PolicyDenied,
                    format!(
                        "`{}` runs only as a step, through its own operator; it cannot be a remedy",
                        action.kind().as_str()
                    ),
                ));
            }
        };
        Ok((surface, sensitive))
    }

    pub(crate) fn bind_value(
        &self,
        frame: &Frame<'_>,
        value: &ValueExpr,
        sensitive: &mut bool,
    ) -> Result<String, Stop> {
        let capability = frame.capability;
        let unbound = |what: &str, name: &str| {
            Stop::new(
                FailureCode::Internal,
                format!("{what} `{name}` has no value when the step runs"),
            )
        };
        match value {
            ValueExpr::Input(name) => {
                *sensitive |= capability
                    .input(name.as_str())
                    .is_some_and(|input| input.sensitive);
                cua_target::Bindings::input(&frame.values, name)
                    .map(str::to_owned)
                    .ok_or_else(|| unbound("input", name.as_str()))
            }
            ValueExpr::Output(name) => {
                *sensitive |= capability
                    .output(name.as_str())
                    .is_some_and(|output| output.sensitive);
                cua_target::Bindings::output(&frame.values, name)
                    .map(str::to_owned)
                    .ok_or_else(|| unbound("output", name.as_str()))
            }
            ValueExpr::Secret(name) => {
                let secret = self.secrets.resolve(name).map_err(|error| {
                    Stop::new(
                        FailureCode::Internal,
                        format!("cannot bind a secret: {error}"),
                    )
                })?;
                // The resolver registers it with its redactor; registering it with the bus's
                // too costs nothing and holds even if the two were wired apart.
                self.bus.redactor().register_secret(secret.expose());
                *sensitive = true;
                Ok(secret.expose().to_owned())
            }
            literal => Ok(literal.literal_text().unwrap_or_default()),
        }
    }

    /// Waits after an action as its step declares: whether the condition held, and the last
    /// snapshot the wait observed.
    async fn wait_after(
        &self,
        frame: &Frame<'_>,
        tally: &mut Tally,
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
    async fn wait_predicate(
        &self,
        frame: &Frame<'_>,
        tally: &mut Tally,
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
        tally: &Tally,
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

    fn emit_wait(
        &self,
        tally: &Tally,
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

    /// Observes the surface and records the snapshot.
    pub(crate) async fn observe(&self, tally: &mut Tally, label: &str) -> Result<UiSnapshot, Halt> {
        let snapshot = self
            .driver
            .observe()
            .await
            .map_err(|error| Stop::surface(&error, "observing the surface"))?;
        self.record(tally, label, &snapshot)?;
        Ok(snapshot)
    }

    /// Writes a snapshot (redacted) and its `observe` event, and reports blocked requests.
    pub(crate) fn record(
        &self,
        tally: &mut Tally,
        label: &str,
        snapshot: &UiSnapshot,
    ) -> Result<(), cua_evidence::EvidenceError> {
        let written = self.bus.write_snapshot(label, snapshot)?;
        self.bus.emit(
            Actor::System,
            0,
            Observe {
                url: snapshot.url.clone(),
                title: snapshot.title.clone(),
                node_count: u64::try_from(snapshot.nodes.len()).unwrap_or(u64::MAX),
                http_status: snapshot.http_status,
                snapshot_ref: Some(written.path.clone()),
                snapshot_digest: Some(written.digest),
            },
        )?;
        tally.last_snapshot_ref = Some(written.path);
        tally.last_snapshot = Some(snapshot.clone());
        self.drain_blocked()
    }

    /// Requests the surface refused (off the allowlist) go to the evidence.
    pub(crate) fn drain_blocked(&self) -> Result<(), cua_evidence::EvidenceError> {
        for blocked in self.driver.take_blocked_requests() {
            let event = BlockedRequest::refused(blocked.url, blocked.reason, blocked.resource_type);
            self.bus.emit(Actor::System, 0, event)?;
        }
        Ok(())
    }

    /// Where a navigation landed must be on the allowlist too: the action was permitted, its
    /// destination may not be.
    pub(crate) fn check_landing(
        &self,
        frame: &Frame<'_>,
        snapshot: &UiSnapshot,
        what: &str,
    ) -> Result<(), Stop> {
        frame.engine.check_landing(&snapshot.url).map_err(|blocked| {
            let _ = self.note(
                "navigation left the allowlist",
                [("reason", Value::from(blocked.reason.clone()))],
            );
            Stop::new(
                FailureCode::NavigationBlocked,
                format!(
                    "{what} landed on {}, outside the allowlist ({}); the action was permitted, its destination was not",
                    blocked.url, blocked.reason
                ),
            )
        })
    }

    /// Records a step's report and its `effect` event.
    pub(crate) fn record_step(
        &self,
        frame: &Frame<'_>,
        tally: &mut Tally,
        position: &Position,
        input: StepRecordInput,
    ) -> Result<(), cua_evidence::EvidenceError> {
        // A step whose operator walked its own route brings its trace; any other step's walk is
        // the one its dispatch and settled verdict stand for.
        let route = input.route.or_else(|| {
            frame
                .routes
                .get(position.index as usize)
                .filter(|_| !position.checkpoint)
                .map(|plan| {
                    crate::route::settled_walk(plan, input.dispatched, input.verdict, &input.reason)
                })
        });
        self.bus.emit(
            Actor::Automation,
            tally.epoch,
            Effect {
                step: position.id.clone(),
                verdict: input.verdict,
                reason: input.reason.clone(),
                decision_id: input.decision_id.clone(),
                route: route.clone(),
                undispatched: (!input.dispatched).then_some(input.kind),
            },
        )?;
        tally.steps.push(StepReport {
            capability: frame.remedy.then(|| frame.reference.clone()),
            step: position.id.to_string(),
            index: position.index,
            action: input.kind,
            actor: Actor::Automation,
            observation: ObservationClass::Expected,
            resolution: input.resolution,
            dispatched: input.dispatched,
            decision_id: input.decision_id,
            verdict: input.verdict,
            verdict_reason: input.reason,
            risk: input.risk,
            route,
        });
        Ok(())
    }
}

/// What [`Replayer::record_step`] records.
pub(crate) struct StepRecordInput {
    pub(crate) kind: ActionKind,
    pub(crate) resolution: Option<StepResolution>,
    pub(crate) decision_id: Option<String>,
    pub(crate) dispatched: bool,
    pub(crate) verdict: EffectVerdict,
    pub(crate) reason: String,
    pub(crate) risk: RiskTier,
    /// The route trace of an operator that walked its route itself.
    pub(crate) route: Option<cua_artifact::RouteTrace>,
}

impl StepRecordInput {
    /// A step that only reads: nothing to verify.
    fn read(kind: ActionKind, reason: &str) -> Self {
        Self {
            kind,
            resolution: None,
            decision_id: None,
            dispatched: false,
            verdict: EffectVerdict::NotApplicable,
            reason: reason.to_owned(),
            risk: RiskTier::Safe,
            route: None,
        }
    }
}

/// Evaluates a predicate with its explanation; an unevaluable one is an internal failure.
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

/// A declared outcome with its `returns` bound (inputs and outputs; never secrets).
fn outcome_result(frame: &Frame<'_>, outcome: &Outcome) -> Result<OutcomeResult, Stop> {
    let mut data = std::collections::BTreeMap::new();
    for (name, value) in &outcome.returns {
        let text = match value {
            ValueExpr::Input(input) => cua_target::Bindings::input(&frame.values, input),
            ValueExpr::Output(output) => cua_target::Bindings::output(&frame.values, output),
            ValueExpr::Secret(_) => {
                return Err(Stop::new(
                    FailureCode::Internal,
                    format!("outcome `{}` would return a secret", outcome.code),
                ));
            }
            literal => {
                data.insert(
                    name.to_string(),
                    Value::from(literal.literal_text().unwrap_or_default()),
                );
                continue;
            }
        };
        if let Some(text) = text {
            data.insert(name.to_string(), Value::from(text));
        }
    }
    Ok(OutcomeResult {
        code: outcome.code.clone(),
        data,
    })
}

/// What the resolver tried, for the failure detail and the `resolve` event.
fn resolution_debug(described: &str, error: &TargetError) -> ResolutionDebug {
    let mut debug = ResolutionDebug {
        target_description: described.to_owned(),
        strategies_tried: Vec::new(),
        candidates_considered: 0,
        candidate_summaries: Vec::new(),
        ambiguity_score: 0.0,
    };
    match error {
        TargetError::NotFound { tried, .. } => {
            debug.strategies_tried = tried.iter().map(|attempt| attempt.strategy).collect();
        }
        TargetError::Ambiguous {
            strategy,
            count,
            candidates,
            ..
        } => {
            debug.strategies_tried = ResolutionStrategy::LADDER
                .into_iter()
                .filter(|rung| rung.rank() <= strategy.rank())
                .collect();
            debug.candidates_considered = *count;
            debug.candidate_summaries = candidates.iter().map(ToString::to_string).collect();
            debug.ambiguity_score = if *count == 0 {
                0.0
            } else {
                rounded(f64::from(*count - 1) / f64::from(*count))
            };
        }
        TargetError::IdentityNotUnique { count, rows, .. } => {
            debug.candidates_considered = *count;
            debug.candidate_summaries = rows.iter().map(ToString::to_string).collect();
            debug.ambiguity_score = rounded(f64::from(count - 1) / f64::from(*count));
        }
        TargetError::IdentityMismatch {
            node, key, found, ..
        } => {
            debug.candidates_considered = 1;
            debug.candidate_summaries = vec![format!(
                "{node}: {key} holds {}",
                found.as_deref().unwrap_or("nothing")
            )];
        }
        _ => {}
    }
    debug
}

/// One line for a predicate in evidence: its compact JSON (references, never their values).
fn describe_predicate(predicate: &Predicate) -> String {
    serde_json::to_string(predicate).unwrap_or_else(|_| predicate.kind().to_owned())
}

fn wait_name(condition: WaitCondition) -> &'static str {
    match condition {
        WaitCondition::SnapshotStable => "snapshot_stable",
        WaitCondition::Navigation => "navigation",
        WaitCondition::Predicate => "predicate",
    }
}

/// A score to three decimals. Evidence shows it for debugging; a long fraction such as
/// 0.6666666666666666 would also read as a card number to the redactor's pattern rules.
fn rounded(score: f64) -> f64 {
    (score * 1000.0).round() / 1000.0
}

/// The one terminal outcome that holds, or none; two at once are an ambiguous screen.
fn exclusive_outcome<'c>(holding: &[&'c Outcome]) -> Result<Option<&'c Outcome>, Stop> {
    match holding {
        [] => Ok(None),
        [only] => Ok(Some(only)),
        [first, second, ..] => Err(ambiguous_screen(format!(
            "the outcomes `{}` and `{}` both hold on this screen",
            first.code, second.code
        ))),
    }
}

/// A screen that two declared explanations fit: refused, never decided by declaration order.
fn ambiguous_screen(reason: String) -> Stop {
    Stop::new(
        FailureCode::AmbiguousScreen,
        format!("{reason}; refusing to pick one"),
    )
    .expected("exactly one declared explanation of the screen")
}

/// The stop of a run asked to stop before `what` was dispatched.
fn interrupted(what: &str) -> Stop {
    Stop::new(
        FailureCode::Interrupted,
        format!(
            "the run was asked to stop (a signal) before `{what}`; nothing more was dispatched"
        ),
    )
}

pub(crate) fn to_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}
