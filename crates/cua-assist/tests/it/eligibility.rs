//! Which stopped runs may be assisted, decided from the report alone.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cua_artifact::{
    ActionKind, Actor, EffectVerdict, FailureCode, FailureDetail, ObservationClass, RiskTier,
    RunResult, RunStatus, StepId,
};
use cua_replay::{ReplayReport, StepReport};

use crate::support::capability;

/// A report of `corebank.member.open_subaccount` that stopped with `code` at `step`, the
/// step having dispatched (at `risk`) or not.
fn stopped(
    status: RunStatus,
    code: Option<FailureCode>,
    step: Option<&str>,
    dispatched: Option<RiskTier>,
) -> ReplayReport {
    ReplayReport {
        result: RunResult {
            status,
            capability: None,
            run_id: "run-1".to_owned(),
            outputs: BTreeMap::new(),
            outcome: None,
            error: code.map(|code| FailureDetail {
                code,
                message: "stopped".to_owned(),
                step_id: step.map(|step| StepId::parse(step).unwrap()),
                expected: None,
                observed: None,
                resolution: None,
            }),
            intervention: None,
            steps_executed: 0,
            steps_total: 7,
            duration_ms: 0,
            drift_score: 0.0,
            strategy_mix: BTreeMap::new(),
            recovery_attempts: 0,
            evidence_ref: String::new(),
        },
        effect: EffectVerdict::NotApplicable,
        steps: dispatched
            .map(|risk| StepReport {
                capability: None,
                step: step.unwrap_or_default().to_owned(),
                index: 5,
                action: ActionKind::Click,
                actor: Actor::Automation,
                observation: ObservationClass::Expected,
                resolution: None,
                dispatched: true,
                decision_id: None,
                verdict: EffectVerdict::Unverifiable,
                verdict_reason: String::new(),
                risk,
                route: None,
            })
            .into_iter()
            .collect(),
        dispatches: 0,
        evidence_dir: PathBuf::new(),
    }
}

fn check(report: ReplayReport, expect: &str) {
    let capability = capability("corebank.member.open_subaccount@1.0.0");
    let got = match cua_assist::assistable(&capability, &report) {
        Ok(stuck) => format!(
            "assist {} #{} {}{}",
            stuck.step,
            stuck.step_index,
            stuck.action.as_str(),
            if stuck.precondition {
                " (precondition)"
            } else {
                ""
            }
        ),
        Err(reason) => format!("no: {reason}"),
    };
    assert!(got.starts_with(expect), "expected `{expect}…`, got `{got}`");
}

#[test]
fn only_a_step_whose_target_was_not_where_the_artifact_says_is_assisted() {
    use FailureCode::*;
    use RunStatus::*;
    check(
        stopped(
            NeedsHuman,
            Some(TargetNotFound),
            Some("submit_request"),
            None,
        ),
        "assist submit_request #5 click",
    );
    check(
        stopped(Failed, Some(TargetAmbiguous), Some("open_form"), None),
        "assist open_form #2 click",
    );
    check(
        stopped(
            NeedsHuman,
            Some(UnexpectedState),
            Some("choose_account_type"),
            None,
        ),
        "assist choose_account_type #3 select (precondition)",
    );
    check(
        stopped(
            Failed,
            Some(PreconditionFailed),
            Some("enter_member_id"),
            Some(RiskTier::Safe),
        ),
        "assist enter_member_id #0 type",
    );
    check(
        stopped(
            Failed,
            Some(PreconditionFailed),
            Some("submit_request"),
            Some(RiskTier::Elevated),
        ),
        "no: step `submit_request` dispatched a elevated action whose effect was not observed; a mutation is never retried",
    );
    check(
        stopped(Success, None, None, None),
        "no: the run ended success",
    );
    check(
        stopped(BusinessOutcome, None, None, None),
        "no: the run ended with a business outcome",
    );
    check(
        stopped(Failed, Some(InputValidationFailed), None, None),
        "no: input_validation_failed happened before the first step",
    );
    check(
        stopped(Failed, Some(PolicyDenied), Some("submit_request"), None),
        "no: the run stopped with policy_denied",
    );
    check(
        stopped(Failed, Some(Timeout), Some("open_form"), None),
        "no: the run stopped with timeout",
    );
    check(
        stopped(NeedsHuman, Some(CheckpointFailed), Some("checkpoint"), None),
        "no: the run stopped at `checkpoint`, which is not a step",
    );
    check(
        stopped(
            NeedsHuman,
            Some(UnexpectedState),
            Some("enter_initial_deposit"),
            None,
        ),
        "no: the run stopped with unexpected_state",
    );
    check(
        stopped(
            NeedsHuman,
            Some(TargetNotFound),
            Some("read_reference"),
            None,
        ),
        "assist read_reference #6 extract",
    );
}
