//! The run record as a projection of the trace: nothing in `run_record.json` is known that
//! `trace.jsonl` does not say, so the record can always be rebuilt from the trace and checked
//! against it.

use std::collections::{BTreeMap, BTreeSet};

use cua_artifact::{
    ActionKind, Actor, EffectVerdict, FailureCode, FailureDetail, InterventionRef,
    ObservationClass, OutcomeResult, ResolutionDebug, ResolutionRecord, RunRecord, RunRecordSchema,
    RunResult, StepId, StepRecord,
};

use crate::error::EvidenceError;
use crate::event::{Authorize, Dispatch, Effect, Escalate, Event, Resolve, RunEnd, TraceLine};

/// Projects committed trace lines into a run record. The trace must start with `run_start`.
///
/// * One step per `dispatch` that was not refused, and one per `effect` of a step that
///   dispatched nothing (a read, a wait, an assert, a screenshot: `undispatched`, not
///   authorized, since nothing needed a decision), in trace order, so the record lists every
///   step the run's report does.
/// * A step takes the `resolve` emitted since the previous dispatch when it is for the same
///   step (a `navigate` does not inherit the previous click's resolution), the latest
///   `classify` when it is for the same step (`expected` otherwise, as for a discovery or
///   operator action that nothing classified), and the latest `observe` and `recovery`
///   before it.
/// * `authorized` requires a granted `authorize` earlier in the trace with the same decision id,
///   **actor and lease epoch**, so a decision cannot be reused by another actor or after the
///   session changed hands.
/// * A step's effect is `unverifiable` (a receipt only) or, for read-only actions,
///   `not_applicable`, until an `effect` event for its decision id or step says otherwise.
/// * Drift comes from the recorded and used strategies of each resolution; the result's
///   `drift_score` and `strategy_mix` are computed from the steps, not copied from the executor.
/// * The result exists once `run_end` does; its intervention comes from the latest `escalate`
///   that opened one, and a target failure's resolution debug from the failed `resolve`.
pub fn project(lines: &[TraceLine]) -> Result<RunRecord, EvidenceError> {
    let Some(first) = lines.first() else {
        return Err(EvidenceError::NotProjectable {
            reason: "the trace is empty".into(),
        });
    };
    let Event::RunStart(start) = &first.event else {
        return Err(EvidenceError::NotProjectable {
            reason: format!("line 1 is `{}`, not run_start", first.event.name()),
        });
    };
    let mut projection = Projection::default();
    for line in &lines[1..] {
        projection.apply(line);
    }
    let Projection {
        steps,
        escalation,
        failed_resolves,
        recovery_attempts,
        lease_transitions,
        tokens_used,
        first_model,
        end,
        ..
    } = projection;
    let last_at = lines.last().map_or(first.at, |line| line.at);
    let end_at = end.as_ref().map_or(last_at, |(at, _)| *at);
    let duration_ms = u64::try_from(end_at.millis_since(first.at)).unwrap_or(0);
    let human_actions = steps
        .iter()
        .filter(|step| step.actor == Actor::Human)
        .count();
    let model_name = start.model.clone().or(first_model).map(|model| {
        if start.scripted_model == Some(true) {
            format!("{model} (scripted)")
        } else {
            model
        }
    });
    let mut record = RunRecord {
        schema: RunRecordSchema::default(),
        run_id: first.run_id.clone(),
        kind: start.kind,
        capability: start.capability.clone(),
        capability_content_hash: start.content_hash.clone(),
        sealed_content_hash: start.sealed_hash.clone(),
        bound_by: start.bound_by.clone(),
        tenant: start.tenant.clone(),
        goal: start.goal.clone(),
        inputs: start.inputs.clone(),
        steps,
        result: None,
        started_at: first.at.to_string(),
        duration_ms,
        evidence_ref: first.run_id.clone(),
        model_name,
        tokens_used,
        resolver_config_hash: start.resolver_config_hash.clone(),
        human_actions: u32::try_from(human_actions).unwrap_or(u32::MAX),
        lease_transitions,
    };
    if let Some((_, end)) = end {
        let result = RunResult {
            status: end.status,
            capability: start.capability.clone(),
            run_id: first.run_id.clone(),
            outputs: end.outputs.clone(),
            outcome: end.outcome.clone().map(|code| OutcomeResult {
                code,
                data: end.outcome_data.clone(),
            }),
            error: failure_detail(&end, &failed_resolves),
            intervention: escalation.map(|escalate| InterventionRef {
                intervention_id: escalate.intervention.unwrap_or_default(),
                reason: escalate.reason,
                step_id: escalate.step,
                step_index: escalate.step_index,
                outputs_so_far: end.outputs.clone(),
            }),
            steps_executed: end.steps_executed.unwrap_or_else(|| {
                let ids: BTreeSet<&str> = record
                    .steps
                    .iter()
                    .map(|step| step.step_id.as_str())
                    .collect();
                u32::try_from(ids.len()).unwrap_or(u32::MAX)
            }),
            steps_total: end.steps_total.unwrap_or(0),
            duration_ms,
            drift_score: record.drift_score(),
            strategy_mix: strategy_mix(&record.steps),
            recovery_attempts,
            evidence_ref: first.run_id.clone(),
        };
        record.result = Some(result);
    }
    Ok(record)
}

/// Dispatches that were not refused and have no granted `authorize` before them with the same
/// decision id, actor and lease epoch. Must always be empty.
pub fn unauthorized_dispatches(lines: &[TraceLine]) -> Vec<&TraceLine> {
    let mut granted: BTreeSet<(&str, Actor, u64)> = BTreeSet::new();
    let mut unauthorized = Vec::new();
    for line in lines {
        match &line.event {
            Event::Authorize(authorize) if authorize.granted => {
                granted.insert((&authorize.decision_id, line.actor, line.lease_epoch));
            }
            Event::Dispatch(dispatch) if !dispatch.refused => {
                let key = (dispatch.decision_id.as_str(), line.actor, line.lease_epoch);
                if !granted.contains(&key) {
                    unauthorized.push(line);
                }
            }
            _ => {}
        }
    }
    unauthorized
}

/// What the projection accumulates line by line.
#[derive(Default)]
struct Projection {
    steps: Vec<StepRecord>,
    /// The decision id of each step, by index.
    decisions: Vec<String>,
    /// Pending since the last dispatch.
    resolve: Option<Resolve>,
    recovery: Option<cua_artifact::Identifier>,
    /// Latest before the next dispatch.
    observation: Option<(StepId, ObservationClass)>,
    snapshot_ref: Option<String>,
    authorizations: BTreeMap<String, (Actor, u64, Authorize)>,
    escalation: Option<Escalate>,
    failed_resolves: BTreeMap<Option<StepId>, Resolve>,
    recovery_attempts: u32,
    lease_transitions: Vec<String>,
    tokens_used: Option<u64>,
    first_model: Option<String>,
    end: Option<(crate::clock::Timestamp, RunEnd)>,
}

impl Projection {
    fn apply(&mut self, line: &TraceLine) {
        match &line.event {
            Event::Observe(observe) => self.snapshot_ref = observe.snapshot_ref.clone(),
            Event::Resolve(resolve) => {
                if !resolve.resolved {
                    self.failed_resolves
                        .insert(resolve.step.clone(), resolve.clone());
                }
                self.resolve = Some(resolve.clone());
            }
            Event::Authorize(authorize) => {
                self.authorizations.insert(
                    authorize.decision_id.clone(),
                    (line.actor, line.lease_epoch, authorize.clone()),
                );
            }
            Event::Classify(classify) => {
                self.observation = Some((classify.step.clone(), classify.observation));
            }
            Event::Recovery(recovery) => {
                self.recovery = Some(recovery.rule.clone());
                self.recovery_attempts = self.recovery_attempts.saturating_add(1);
            }
            Event::Dispatch(dispatch) => {
                let resolve = self.resolve.take();
                if !dispatch.refused {
                    let step = self.step(line, dispatch, resolve);
                    self.steps.push(step);
                    self.decisions.push(dispatch.decision_id.clone());
                }
            }
            Event::Effect(effect) if effect.undispatched.is_some() => {
                let step = self.undispatched_step(line, effect);
                self.steps.push(step);
                self.decisions
                    .push(effect.decision_id.clone().unwrap_or_default());
            }
            Event::Effect(effect) => {
                let position = match &effect.decision_id {
                    Some(decision) => self.decisions.iter().rposition(|id| id == decision),
                    None => self
                        .steps
                        .iter()
                        .rposition(|step| step.step_id == effect.step.as_str()),
                };
                if let Some(step) = position.and_then(|index| self.steps.get_mut(index)) {
                    step.effect = effect.verdict;
                    step.route.clone_from(&effect.route);
                    if effect.screenshot_ref.is_some() {
                        step.screenshot_ref.clone_from(&effect.screenshot_ref);
                    }
                    // A dispatch outside the capability's steps (the entrypoint's navigation)
                    // is named by its effect.
                    if step.step_id.is_empty() {
                        step.step_id = effect.step.to_string();
                    }
                }
            }
            Event::Escalate(escalate) => {
                if let (Some(reference), Some(id)) = (&escalate.screenshot_ref, &escalate.step)
                    && let Some(step) = self
                        .steps
                        .iter_mut()
                        .rev()
                        .find(|step| step.step_id == id.as_str())
                {
                    step.screenshot_ref = Some(reference.clone());
                }
                if escalate.intervention.is_some() {
                    self.escalation = Some(escalate.clone());
                }
            }
            Event::Lease(lease) => self.lease_transitions.push(format!(
                "{} (holder {}, epoch {})",
                lease.transition.as_str(),
                lease.holder.as_str(),
                line.lease_epoch
            )),
            Event::LlmCall(call) => {
                let tokens = call.prompt_tokens.saturating_add(call.completion_tokens);
                self.tokens_used = Some(self.tokens_used.unwrap_or(0).saturating_add(tokens));
                if self.first_model.is_none() {
                    self.first_model = Some(call.model.clone());
                }
            }
            Event::RunEnd(end) => self.end = Some((line.at, end.clone())),
            Event::RunStart(_)
            | Event::Intent(_)
            | Event::Wait(_)
            | Event::Verify(_)
            | Event::BlockedRequest(_)
            | Event::Note(_) => {}
        }
    }

    fn step(
        &mut self,
        line: &TraceLine,
        dispatch: &Dispatch,
        resolve: Option<Resolve>,
    ) -> StepRecord {
        let authorization = self.authorizations.get(&dispatch.decision_id);
        let authorized = authorization.is_some_and(|(actor, epoch, authorize)| {
            authorize.granted && *actor == line.actor && *epoch == line.lease_epoch
        });
        let policy_decision = match authorization {
            Some((_, _, authorize)) => format!("{}: {}", dispatch.decision_id, authorize.reason),
            None => format!(
                "{}: no authorization precedes this dispatch",
                dispatch.decision_id
            ),
        };
        let same_step = |resolve: &Resolve| match (&resolve.step, &dispatch.step) {
            (Some(resolved), Some(dispatched)) => resolved == dispatched,
            _ => true,
        };
        let resolution = resolve
            .filter(|resolve| resolve.resolved && same_step(resolve))
            .map(resolution_record);
        let effect = if dispatch.action_type.is_read_only() {
            EffectVerdict::NotApplicable
        } else {
            EffectVerdict::Unverifiable
        };
        StepRecord {
            index: u32::try_from(self.steps.len()).unwrap_or(u32::MAX),
            step_id: dispatch
                .step
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            action_type: dispatch.action_type,
            actor: line.actor,
            lease_epoch: line.lease_epoch,
            authorized,
            undispatched: false,
            policy_decision,
            observation: self
                .observation
                .as_ref()
                .filter(|(step, _)| dispatch.step.as_ref() == Some(step))
                .map_or(ObservationClass::Expected, |(_, observation)| *observation),
            resolution,
            effect,
            started_at: line.at.to_string(),
            duration_ms: dispatch.duration_ms,
            recovery_rule_applied: self.recovery.take(),
            error_code: (!dispatch.ok).then_some(FailureCode::ActionFailed),
            snapshot_ref: self.snapshot_ref.clone(),
            screenshot_ref: None,
            route: None,
        }
    }

    /// A step that dispatched nothing, from its `effect`: what it resolved (when the pending
    /// resolution is its own), the decision the policy made about it when it made one (a
    /// refused action, a screenshot), the screen it was classified on, and its verdict.
    fn undispatched_step(&mut self, line: &TraceLine, effect: &Effect) -> StepRecord {
        let policy_decision = match &effect.decision_id {
            None => "none: the step dispatched nothing".to_owned(),
            Some(id) => match self.authorizations.get(id) {
                Some((_, _, authorize)) if authorize.granted => {
                    format!("{id}: {}; nothing was dispatched", authorize.reason)
                }
                Some((_, _, authorize)) => format!("{id}: refused: {}", authorize.reason),
                None => format!("{id}: no authorization precedes this step"),
            },
        };
        let resolution = self
            .resolve
            .take()
            .filter(|resolve| resolve.resolved && resolve.step.as_ref() == Some(&effect.step))
            .map(resolution_record);
        StepRecord {
            index: u32::try_from(self.steps.len()).unwrap_or(u32::MAX),
            step_id: effect.step.to_string(),
            action_type: effect.undispatched.unwrap_or(ActionKind::Extract),
            actor: line.actor,
            lease_epoch: line.lease_epoch,
            authorized: false,
            undispatched: true,
            policy_decision,
            observation: self
                .observation
                .as_ref()
                .filter(|(step, _)| *step == effect.step)
                .map_or(ObservationClass::Expected, |(_, observation)| *observation),
            resolution,
            effect: effect.verdict,
            started_at: line.at.to_string(),
            duration_ms: 0,
            recovery_rule_applied: self.recovery.take(),
            error_code: None,
            snapshot_ref: self.snapshot_ref.clone(),
            screenshot_ref: None,
            route: effect.route.clone(),
        }
    }
}

fn resolution_record(resolve: Resolve) -> ResolutionRecord {
    ResolutionRecord {
        target_description: resolve.target,
        strategy_recorded: resolve.strategy_recorded,
        strategy_used: resolve.strategy,
        resolved_node_id: resolve.node_id.map(|node| node.to_string()),
        candidates_considered: resolve.candidates_considered,
        ambiguity_score: resolve.ambiguity_score.unwrap_or(0.0),
        identity_verified: resolve.identity_verified,
    }
}

fn failure_detail(
    end: &RunEnd,
    failed_resolves: &BTreeMap<Option<StepId>, Resolve>,
) -> Option<FailureDetail> {
    let code = end.failure_code?;
    let resolution = matches!(
        code,
        FailureCode::TargetNotFound | FailureCode::TargetAmbiguous
    )
    .then(|| failed_resolves.get(&end.step))
    .flatten()
    .map(|resolve| ResolutionDebug {
        target_description: resolve.target.clone(),
        strategies_tried: resolve.strategies_tried.clone(),
        candidates_considered: resolve.candidates_considered,
        candidate_summaries: resolve.candidates.clone(),
        ambiguity_score: resolve.ambiguity_score.unwrap_or(0.0),
    });
    Some(FailureDetail {
        code,
        message: end.reason.clone().unwrap_or_default(),
        step_id: end.step.clone(),
        expected: end.expected.clone(),
        observed: end.observed.clone(),
        resolution,
    })
}

fn strategy_mix(steps: &[StepRecord]) -> BTreeMap<cua_artifact::ResolutionStrategy, u32> {
    let mut mix = BTreeMap::new();
    for strategy in steps
        .iter()
        .filter_map(|step| step.resolution.as_ref()?.strategy_used)
    {
        *mix.entry(strategy).or_insert(0_u32) += 1;
    }
    mix
}
