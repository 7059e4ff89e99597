//! What to do with a unit of work (a batch row) whose earlier attempt was interrupted: run it
//! again, report its mutation as done, ask its capability's read-only reconciliation, or hand
//! it to a person. Decided from the attempts' write-ahead intents, never from their
//! `dispatch` lines (a crash between the two is exactly the case that matters).
//!
//! The rules, over every earlier attempt's intents (one idempotency key covers them all):
//! - no intent was handed over (none, or each refused before it left the process): run again;
//! - none is in doubt and one was confirmed: the mutation happened, report it `confirmed`;
//! - one is in doubt: its step's `reconcile` capability answers. *Done* reports the row
//!   `confirmed` with no new dispatch. *Not done* runs the row again, unless another mutation of
//!   the row was confirmed (running again would repeat that one). *Unknown*, no `reconcile`
//!   declared, or in-doubt intents at two different steps: a person decides (`needs_human`).

use std::collections::BTreeMap;

use cua_artifact::{Capability, Reconcile, RiskTier, RunStatus, StepId, ValueExpr};
use cua_evidence::{IntentRecord, IntentState};
use serde_json::Value;

use crate::report::ReplayReport;

/// The fate of an interrupted unit of work, before any reconciliation has run.
#[derive(Debug, Clone, PartialEq)]
pub enum Interrupted {
    /// Nothing was handed over: the work may run again.
    RunAgain,
    /// The work's last mutation was observed to happen; nothing is in doubt.
    Confirmed { step: Option<StepId> },
    /// A mutation is in doubt and its step declares how to find out.
    Reconcile(InDoubt),
    /// A person must decide, for this reason.
    NeedsHuman {
        step: Option<StepId>,
        reason: String,
    },
}

/// An in-doubt mutation whose step declares a reconciliation, and what the answer will mean.
#[derive(Debug, Clone, PartialEq)]
pub struct InDoubt {
    pub step: StepId,
    pub reconcile: Reconcile,
    /// Whether another mutation of the same work was confirmed (then *not done* cannot allow a
    /// retry: it would repeat that one).
    pub other_confirmed: bool,
    /// Whether the step is the capability's last mutating step: a *done* from a step with
    /// mutations after it leaves those never run, which only a person can finish.
    pub last: bool,
}

/// What a reconciliation answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reconciliation {
    Done,
    NotDone,
    Unknown(String),
}

impl Reconciliation {
    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::NotDone => "not_done",
            Self::Unknown(_) => "unknown",
        }
    }
}

/// Decides an interrupted unit of work from every earlier attempt's intents, in order.
pub fn interrupted(capability: &Capability, intents: &[IntentRecord]) -> Interrupted {
    let confirmed: Vec<&IntentRecord> = intents
        .iter()
        .filter(|record| record.state == IntentState::Confirmed)
        .collect();
    let in_doubt: Vec<&IntentRecord> = intents
        .iter()
        .filter(|record| record.state == IntentState::InDoubt)
        .collect();
    let step_name = |record: &IntentRecord| {
        record
            .intent
            .step
            .as_ref()
            .map_or_else(|| "the entrypoint".to_owned(), |step| format!("`{step}`"))
    };
    let last_mutating = capability
        .steps
        .iter()
        .rev()
        .find(|step| step.mutates())
        .map(|step| step.id.clone());
    let is_last = |record: &IntentRecord| {
        record.intent.remedy.is_none()
            && record.intent.step.is_some()
            && record.intent.step == last_mutating
    };
    let Some(first) = in_doubt.first() else {
        return match confirmed.last() {
            None => Interrupted::RunAgain,
            Some(record) if is_last(record) => Interrupted::Confirmed {
                step: record.intent.step.clone(),
            },
            Some(record) => Interrupted::NeedsHuman {
                step: record.intent.step.clone(),
                reason: format!(
                    "the run stopped after its mutation at {} was confirmed and before {}; \
                     running it again would repeat that mutation, so a person must finish it",
                    step_name(record),
                    last_mutating
                        .as_ref()
                        .map_or_else(|| "its end".to_owned(), |step| format!("`{step}`"))
                ),
            },
        };
    };
    if let Some(remedy) = &first.intent.remedy {
        return Interrupted::NeedsHuman {
            step: first.intent.step.clone(),
            reason: format!(
                "a mutation of the remedy {remedy} (recovering {}) is in doubt, and no \
                 `reconcile` answers for a remedy's steps",
                step_name(first)
            ),
        };
    }
    if let Some(other) = in_doubt
        .iter()
        .find(|record| record.intent.step != first.intent.step)
    {
        return Interrupted::NeedsHuman {
            step: first.intent.step.clone(),
            reason: format!(
                "mutations at {} and {} are both in doubt; one reconciliation cannot answer for both",
                step_name(first),
                step_name(other)
            ),
        };
    }
    let declared = first
        .intent
        .step
        .as_ref()
        .and_then(|step| capability.step(step.as_str()))
        .and_then(|step| step.reconcile.clone());
    match (first.intent.step.clone(), declared) {
        (Some(step), Some(reconcile)) => Interrupted::Reconcile(InDoubt {
            step,
            reconcile,
            other_confirmed: !confirmed.is_empty(),
            last: is_last(first),
        }),
        (step, _) => Interrupted::NeedsHuman {
            reason: format!(
                "the mutation at {} (idempotency key {}) was handed over and never confirmed, and \
                 the step declares no `reconcile` to find out whether it happened; check the \
                 application before running it again",
                step_name(first),
                first.intent.idempotency_key
            ),
            step,
        },
    }
}

/// The reconciling capability's inputs: each `{$input: name}` from the interrupted work's own
/// inputs (with its idempotency key filled in), literals as written. Refused when a name is
/// missing or a value is an output or a secret.
pub fn reconcile_inputs(
    reconcile: &Reconcile,
    inputs: &BTreeMap<String, Value>,
) -> Result<BTreeMap<String, Value>, String> {
    let mut bound = BTreeMap::new();
    for (name, value) in &reconcile.inputs {
        let value = match value {
            ValueExpr::Input(input) => inputs.get(input.as_str()).cloned().ok_or_else(|| {
                format!("the reconciliation needs input `{input}`, which the work did not have")
            })?,
            ValueExpr::String(text) => Value::from(text.clone()),
            ValueExpr::Integer(number) => Value::from(*number),
            ValueExpr::Number(number) => Value::from(*number),
            ValueExpr::Boolean(flag) => Value::from(*flag),
            ValueExpr::Output(_) | ValueExpr::Secret(_) => {
                return Err(format!(
                    "the reconciliation passes an output or a secret as `{name}`"
                ));
            }
        };
        bound.insert(name.to_string(), value);
    }
    Ok(bound)
}

/// A reconciliation runs only a read-only capability: no step declares a mutation
/// (`Step::mutates`). The run itself is also read-only (`ReplayConfig::read_only`), so an
/// action the policy assesses above `safe` is refused at its dispatch all the same.
pub fn check_read_only(capability: &Capability) -> Result<(), String> {
    match capability.steps.iter().find(|step| step.mutates()) {
        Some(step) => Err(format!(
            "{} cannot reconcile: its step `{}` may change the application (declared {}), and a \
             reconciliation may only read",
            capability.reference(),
            step.id,
            step.risk.as_str()
        )),
        None => Ok(()),
    }
}

/// What the reconciling run's ending answers: `success` is done; a business outcome listed
/// under `not_done` is not done; anything else is unknown. A run that handed over anything
/// above `safe` answers nothing.
pub fn judge(reconcile: &Reconcile, report: &ReplayReport) -> Reconciliation {
    if let Some(step) = report
        .steps
        .iter()
        .find(|step| step.dispatched && step.risk > RiskTier::Safe)
    {
        return Reconciliation::Unknown(format!(
            "the reconciliation dispatched `{}` at risk {}",
            step.step,
            step.risk.as_str()
        ));
    }
    let result = &report.result;
    match result.status {
        RunStatus::Success => Reconciliation::Done,
        RunStatus::BusinessOutcome => match &result.outcome {
            Some(outcome) if reconcile.not_done.contains(&outcome.code) => Reconciliation::NotDone,
            Some(outcome) => Reconciliation::Unknown(format!(
                "the reconciliation ended with outcome `{}`, which is not listed under `not_done`",
                outcome.code
            )),
            None => Reconciliation::Unknown("the reconciliation ended with no outcome".to_owned()),
        },
        RunStatus::Failed | RunStatus::NeedsHuman => Reconciliation::Unknown(format!(
            "the reconciliation {}: {}",
            result.status.as_str(),
            result
                .error
                .as_ref()
                .map_or_else(String::new, |error| error.message.clone())
        )),
    }
}

#[cfg(test)]
mod tests {
    use cua_artifact::{ActionKind, Capability, Identifier, RiskTier};
    use cua_evidence::{Intent, IntentRecord, IntentState};

    use super::{Interrupted, interrupted};

    fn transfer() -> Capability {
        Capability::from_yaml(include_str!(
            "../../../capabilities/corebank.member.transfer_funds@1.0.0.yaml"
        ))
        .expect("the reference capability")
    }

    fn record(step: &str, state: IntentState) -> IntentRecord {
        IntentRecord {
            seq: 1,
            intent: Intent {
                step: Some(Identifier::parse(step).expect("a step id")),
                decision_id: format!("dec-{step}"),
                action_type: ActionKind::Click,
                risk: RiskTier::Irreversible,
                row: Some(1),
                attempt: 1,
                idempotency_key: "cua-0123456789abcdef0123".into(),
                remedy: None,
            },
            state,
        }
    }

    /// The decision's shape for each combination of earlier intents.
    fn check(intents: &[(&str, IntentState)], expect: &str) {
        let records: Vec<IntentRecord> = intents
            .iter()
            .map(|(step, state)| record(step, *state))
            .collect();
        let decided = match interrupted(&transfer(), &records) {
            Interrupted::RunAgain => "run again".to_owned(),
            Interrupted::Confirmed { step } => format!("confirmed {}", step.expect("a step")),
            Interrupted::Reconcile(super::InDoubt {
                step,
                reconcile,
                other_confirmed,
                last,
            }) => format!(
                "reconcile {step} via {} (other confirmed: {other_confirmed}, last: {last})",
                reconcile.capability
            ),
            Interrupted::NeedsHuman { reason, .. } => format!("needs human: {reason}"),
        };
        assert!(
            decided.starts_with(expect),
            "{intents:?}: expected {expect:?}, got {decided:?}"
        );
    }

    fn check_remedy() {
        let mut in_doubt = record("post_transfer", IntentState::InDoubt);
        in_doubt.intent.remedy =
            Some(cua_artifact::CapabilityRef::parse("corebank.auth.sign_on@1.0.0").expect("a ref"));
        let decided = interrupted(&transfer(), &[in_doubt]);
        assert!(
            matches!(&decided, Interrupted::NeedsHuman { reason, .. } if reason.contains("remedy corebank.auth.sign_on@1.0.0")),
            "{decided:?}"
        );
    }

    #[test]
    fn an_interrupted_row_is_decided_by_its_intents() {
        use IntentState::{Confirmed, InDoubt, NotDispatched};
        check(&[], "run again");
        check(&[("post_transfer", NotDispatched)], "run again");
        check(&[("post_transfer", Confirmed)], "confirmed post_transfer");
        check(
            &[("post_transfer", InDoubt)],
            "reconcile post_transfer via corebank.transfer.find_by_reference@1.0.0 (other confirmed: false, last: true)",
        );
        // Attempt 1 was refused, attempt 2 is in doubt: still one question to ask.
        check(
            &[("post_transfer", NotDispatched), ("post_transfer", InDoubt)],
            "reconcile post_transfer",
        );
        check(
            &[("review_transfer", Confirmed), ("post_transfer", InDoubt)],
            "reconcile post_transfer via corebank.transfer.find_by_reference@1.0.0 (other confirmed: true, last: true)",
        );
        // A step with no reconcile, or two steps in doubt, is a person's question.
        check(
            &[("review_transfer", InDoubt)],
            "needs human: the mutation at `review_transfer`",
        );
        check(
            &[("review_transfer", InDoubt), ("post_transfer", InDoubt)],
            "needs human: mutations at `review_transfer` and `post_transfer` are both in doubt",
        );
        // A confirmed mutation with a mutating step after it: the run stopped half-way.
        check(
            &[("review_transfer", Confirmed)],
            "needs human: the run stopped after its mutation at `review_transfer` was confirmed and before `post_transfer`",
        );
        // A remedy's mutation in doubt: the step's reconcile does not answer for it.
        check_remedy();
        // In doubt outranks confirmed: the doubtful one is still to be answered.
        check(
            &[("post_transfer", Confirmed), ("post_transfer", InDoubt)],
            "reconcile post_transfer",
        );
    }
}
