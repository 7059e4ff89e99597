//! Declared recovery: bounded attempts per rule and per run, backoff as bounded sleeps, remedy
//! actions through the same chokepoint, and `run_capability` remedies one level deep.

use std::collections::BTreeMap;
use std::time::Duration;

use cua_artifact::{
    Action, ActionKind, Backoff, EffectVerdict, FailureCode, ObservationClass, RecoveryRule,
    Remedy, RunCapability, SealState, ValueExpr,
};
use cua_evidence::Recovery;
use cua_surface::SurfaceDriver;
use serde_json::Value;

use crate::executor::{Execution, ExecutionEnd, Replayer, RunState, millis};
use crate::report::StepReport;
use crate::step::DispatchFailure;
use crate::stop::{Halt, Position, Stop};
use cua_artifact::PreparedCapability;

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// Applies a recovery rule that matched the screen before the step at `position`.
    ///
    /// Recovery happens only here, in the classification before a step's action: the step's
    /// own action has not been dispatched, and no earlier step's action is ever dispatched
    /// again. The one remedy that could repeat an earlier request, `reload`, is refused while
    /// the page may show the result of a dispatched mutation (the mutation mark).
    pub(crate) async fn recover(
        &self,
        frame: &mut Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        rule: &RecoveryRule,
    ) -> Result<(), Halt> {
        let attempt = {
            let attempts = frame.attempts.entry(rule.id.clone()).or_insert(0);
            *attempts += 1;
            *attempts
        };
        let max_attempts = u32::from(rule.max_attempts);
        if attempt > max_attempts {
            return Err(Stop::new(
                FailureCode::RecoveryExhausted,
                format!(
                    "recovery rule `{}` matched again after {max_attempts} attempt(s); the condition persists",
                    rule.id
                ),
            )
            .into());
        }
        frame
            .budget
            .charge_recovery()
            .map_err(|exceeded| Stop::new(FailureCode::RecoveryExhausted, exceeded.to_string()))?;
        tally.recovery_attempts += 1;
        let loaded: Vec<Option<Result<PreparedCapability, String>>> = rule
            .remedy
            .iter()
            .map(|remedy| match remedy {
                Remedy::RunCapability(run) => Some(self.capabilities.load(&run.capability)),
                Remedy::Action(_) => None,
            })
            .collect();
        let remedy_capability = rule.remedy.iter().find_map(|remedy| match remedy {
            Remedy::RunCapability(run) => Some(run.capability.clone()),
            Remedy::Action(_) => None,
        });
        let content_hash = loaded
            .iter()
            .flatten()
            .find_map(|loaded| loaded.as_ref().ok())
            .and_then(|prepared| prepared.capability.content_hash.clone());
        self.bus.emit(
            cua_artifact::Actor::Automation,
            tally.epoch,
            Recovery {
                step: Some(position.id.clone()),
                rule: rule.id.clone(),
                attempt: u64::from(attempt),
                max_attempts: u64::from(max_attempts),
                remedy: Some(
                    rule.remedy
                        .iter()
                        .map(|remedy| match remedy {
                            Remedy::RunCapability(_) => "run_capability",
                            Remedy::Action(action) => action.kind().as_str(),
                        })
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                capability: remedy_capability,
                content_hash,
            },
        )?;
        self.backoff(frame, tally, position, rule.backoff, attempt)
            .await?;
        for (remedy, loaded) in rule.remedy.iter().zip(loaded) {
            match (remedy, loaded) {
                (Remedy::Action(action), _) => {
                    self.remedy_action(frame, tally, position, rule, action)
                        .await?;
                }
                (Remedy::RunCapability(run), Some(loaded)) => {
                    self.remedy_capability(frame, tally, run, loaded).await?;
                }
                (Remedy::RunCapability(run), None) => {
                    return Err(Stop::new(
                        FailureCode::Internal,
                        format!("remedy {} was not looked up", run.capability),
                    )
                    .into());
                }
            }
        }
        Ok(())
    }

    /// Sleeps the rule's backoff before an attempt, never past the execution's duration budget.
    async fn backoff(
        &self,
        frame: &Execution<'_>,
        tally: &RunState,
        position: &Position,
        backoff: Backoff,
        attempt: u32,
    ) -> Result<(), Halt> {
        let base = self.config.backoff_base;
        let wanted = match backoff {
            Backoff::None => Duration::ZERO,
            Backoff::Linear => base.saturating_mul(attempt),
            Backoff::Exponential => base.saturating_mul(1_u32 << attempt.saturating_sub(1).min(16)),
        };
        let spent = self.clock.elapsed().saturating_sub(frame.started);
        let remaining = Duration::from_millis(frame.budget.max_duration_ms()).saturating_sub(spent);
        let delay = wanted.min(self.config.backoff_cap).min(remaining);
        if delay.is_zero() {
            return Ok(());
        }
        let started = self.clock.elapsed();
        self.clock.sleep(delay).await;
        self.bus.emit(
            cua_artifact::Actor::Automation,
            tally.epoch,
            cua_evidence::Wait {
                step: Some(position.id.clone()),
                condition: "backoff".to_owned(),
                satisfied: true,
                waited_ms: millis(self.clock.elapsed().saturating_sub(started)),
                timeout_ms: Some(millis(delay)),
            },
        )?;
        Ok(())
    }

    /// A remedy action: resolved, bound, authorized and dispatched like any step's action. A
    /// refusal or failure ends the run with its own code.
    async fn remedy_action(
        &self,
        frame: &Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        rule: &RecoveryRule,
        action: &Action,
    ) -> Result<(), Halt> {
        if matches!(action, Action::Reload {})
            && let Some(mutation) = &tally.mutation_mark
        {
            return Err(Stop::new(
                FailureCode::RecoveryExhausted,
                format!(
                    "recovery rule `{}` would reload the page, which may send the request of step `{mutation}` again; its effect may already have happened, and a mutation is never retried automatically",
                    rule.id
                ),
            )
            .into());
        }
        let target = match action.target() {
            Some(descriptor) => {
                let snapshot = self.observe(tally, &format!("{}-remedy", rule.id)).await?;
                match self.resolve(frame, tally, position, descriptor, &snapshot)? {
                    Ok((resolution, _)) => {
                        let node = &snapshot.nodes[resolution.node];
                        Some(cua_policy::ResolvedTarget {
                            node_id: resolution.node_id.clone(),
                            role: node.role.clone(),
                            name: node.name.clone(),
                        })
                    }
                    Err(stop) => return Err(stop.into()),
                }
            }
            None => None,
        };
        // The remedy's route is fixed before it is dispatched, like a step's.
        let plan = crate::route::plan_action(
            frame.capability,
            action,
            &format!("the remedy of rule `{}`", rule.id),
        )?;
        let (bound, _) = self.bind(frame, action)?;
        let kind = action.kind();
        let dispatched = match self
            .chokepoint(frame, tally, Some(&position.id), bound, target, None)
            .await
        {
            Ok(dispatched) => dispatched,
            Err(DispatchFailure::Refused { stop, .. } | DispatchFailure::Failed { stop, .. }) => {
                let message = format!("remedy of rule `{}` failed: {}", rule.id, stop.message);
                return Err(Stop { message, ..stop }.into());
            }
            Err(DispatchFailure::Fatal(error)) => return Err(Halt::Fatal(error)),
        };
        self.mark_mutation(
            tally,
            &position.id,
            dispatched.risk,
            dispatched.receipt.navigated,
        );
        let reason = "a remedy's dispatch receipt; the next classification judges the screen";
        let route = crate::route::settled_walk(&plan, true, EffectVerdict::Unverifiable, reason);
        self.bus.emit(
            cua_artifact::Actor::Automation,
            tally.epoch,
            cua_evidence::Effect {
                step: position.id.clone(),
                verdict: EffectVerdict::Unverifiable,
                reason: reason.to_owned(),
                decision_id: Some(dispatched.decision_id.clone()),
                route: Some(route.clone()),
                undispatched: None,
                screenshot_ref: None,
                screenshot_digest: None,
            },
        )?;
        tally.steps.push(StepReport {
            capability: frame.remedy.then(|| frame.reference.clone()),
            step: format!("{}:{}", position.id, rule.id),
            index: position.index,
            action: kind,
            actor: cua_artifact::Actor::Automation,
            observation: ObservationClass::Recoverable,
            resolution: None,
            dispatched: true,
            decision_id: Some(dispatched.decision_id),
            verdict: EffectVerdict::Unverifiable,
            verdict_reason: reason.to_owned(),
            risk: dispatched.risk,
            route: Some(route),
        });
        if !dispatched.receipt.ok {
            return Err(Stop::new(
                FailureCode::ActionFailed,
                format!(
                    "remedy `{}` of rule `{}` failed on the surface: {}",
                    kind.as_str(),
                    rule.id,
                    dispatched.receipt.message
                ),
            )
            .into());
        }
        if kind == ActionKind::Reload || kind == ActionKind::Navigate || kind == ActionKind::Click {
            self.settle_screen(tally, Some(&position.id), self.config.remedy_settle)
                .await?;
        }
        Ok(())
    }

    /// A `run_capability` remedy: its own hash, approval gate, budget and inputs; the current
    /// screen, no entrypoint; the same lease and evidence; its sensitive names added for the
    /// duration. It never escalates by itself: the parent fails with its code, or with
    /// `recovery_exhausted`, and escalates by the parent's triggers.
    async fn remedy_capability(
        &self,
        frame: &Execution<'_>,
        tally: &mut RunState,
        run: &RunCapability,
        loaded: Result<PreparedCapability, String>,
    ) -> Result<(), Halt> {
        let exhausted =
            |message: String| Halt::from(Stop::new(FailureCode::RecoveryExhausted, message));
        if frame.remedy {
            return Err(exhausted(format!(
                "{} is run as a remedy of a remedy; run_capability nests one level deep",
                run.capability
            )));
        }
        if run.capability == frame.reference {
            return Err(exhausted(format!(
                "{} names itself as its remedy",
                run.capability
            )));
        }
        let prepared = loaded.map_err(|reason| {
            exhausted(format!(
                "the remedy {} is not available: {reason}",
                run.capability
            ))
        })?;
        match prepared.capability.seal_state() {
            SealState::Sealed(_) => {}
            SealState::Draft if self.config.allow_drafts => {}
            SealState::Draft => {
                return Err(Stop::new(
                    FailureCode::PolicyDenied,
                    format!("the remedy {} is an unsealed draft", run.capability),
                )
                .into());
            }
            SealState::Tampered { declared, computed } => {
                return Err(Stop::new(
                    FailureCode::PolicyDenied,
                    format!(
                        "content hash mismatch for the remedy {}: declared {declared}, computed {computed}",
                        run.capability
                    ),
                )
                .into());
            }
        }
        if prepared.capability.reference() != run.capability {
            return Err(exhausted(format!(
                "the loader answered {} for {}",
                prepared.capability.reference(),
                run.capability
            )));
        }
        let mut inputs = BTreeMap::new();
        for (name, value) in &run.inputs {
            let text = match value {
                ValueExpr::Input(input) => cua_target::Bindings::input(&frame.values, input),
                ValueExpr::Output(output) => cua_target::Bindings::output(&frame.values, output),
                ValueExpr::Secret(_) => {
                    return Err(Stop::new(
                        FailureCode::Internal,
                        format!(
                            "the remedy {} would receive a secret as an input; secrets are bound only at dispatch",
                            run.capability
                        ),
                    )
                    .into());
                }
                literal => {
                    inputs.insert(
                        name.to_string(),
                        Value::from(literal.literal_text().unwrap_or_default()),
                    );
                    continue;
                }
            };
            if let Some(text) = text {
                inputs.insert(name.to_string(), Value::from(text));
            }
        }
        let redactor = self.bus.redactor();
        let parent_names = frame.capability.sensitive_names();
        let added: Vec<String> = prepared
            .capability
            .sensitive_names()
            .into_iter()
            .filter(|name| !parent_names.contains(name))
            .map(str::to_owned)
            .collect();
        redactor.add_sensitive_keys(added.iter().cloned());
        for input in prepared
            .capability
            .inputs
            .iter()
            .filter(|input| input.sensitive)
        {
            if let Some(Value::String(value)) = inputs.get(input.name.as_str()) {
                redactor.register_sensitive_value(value);
            }
        }
        tally.remedy_runs += 1;
        let number = Some(tally.remedy_runs);
        let ending = match self.open_frame(&prepared, &inputs, frame.allow_irreversible, number) {
            Ok(mut nested) => self.run_execution(&mut nested, tally).await,
            Err(Halt::Stop(stop)) => Ok(ExecutionEnd::Stopped(stop)),
            Err(fatal) => Err(fatal),
        };
        redactor.remove_sensitive_keys(added);
        match ending? {
            ExecutionEnd::Success => Ok(()),
            ExecutionEnd::Outcome(outcome) => Err(exhausted(format!(
                "the remedy {} ended with its outcome `{}`; the condition was not remedied",
                run.capability, outcome.code
            ))),
            ExecutionEnd::Stopped(stop) => {
                let at = stop
                    .step
                    .as_ref()
                    .map(|step| format!(" at its step `{step}`"))
                    .unwrap_or_default();
                Err(Stop {
                    message: format!("the remedy {} failed{at}: {}", run.capability, stop.message),
                    step: None,
                    step_index: None,
                    ..*stop
                }
                .into())
            }
        }
    }
}
