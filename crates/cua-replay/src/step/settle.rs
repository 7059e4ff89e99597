//! Settling the screen after an action and classifying it: a declared outcome, a recovery rule, the
//! precondition, or nothing declared (fail closed); two explanations at once are an ambiguous
//! screen.

use cua_artifact::{
    Actor, FailureCode, ObservationClass, Outcome, OutcomeResult, RecoveryScope, ValueExpr,
};
use cua_evidence::Classify;
use cua_snapshot::UiSnapshot;
use cua_surface::SurfaceDriver;
use serde_json::Value;

use crate::executor::{Execution, Replayer, RunState, millis};
use crate::stop::{Halt, Position, Stop, placed};

use super::{Classification, Settled, explain};

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// Observes and classifies until the screen is one the step (or checkpoint) expects,
    /// recovering along the way; fails closed on anything undeclared.
    pub(crate) async fn settle(
        &self,
        frame: &mut Execution<'_>,
        tally: &mut RunState,
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
        frame: &Execution<'c>,
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

    /// Terminal outcomes only, for a screen after an action.
    pub(super) fn classify_outcomes_only<'c>(
        &self,
        frame: &Execution<'c>,
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
}

pub(super) fn outcome_result(
    frame: &Execution<'_>,
    outcome: &Outcome,
) -> Result<OutcomeResult, Stop> {
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

pub(super) fn exclusive_outcome<'c>(holding: &[&'c Outcome]) -> Result<Option<&'c Outcome>, Stop> {
    match holding {
        [] => Ok(None),
        [only] => Ok(Some(only)),
        [first, second, ..] => Err(ambiguous_screen(format!(
            "the outcomes `{}` and `{}` both hold on this screen",
            first.code, second.code
        ))),
    }
}

pub(super) fn ambiguous_screen(reason: String) -> Stop {
    Stop::new(
        FailureCode::AmbiguousScreen,
        format!("{reason}; refusing to pick one"),
    )
    .expected("exactly one declared explanation of the screen")
}
