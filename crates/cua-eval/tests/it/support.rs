//! Synthetic runs of the repository's savings-balance capability: what a replay of it reports
//! for a member, built by hand so that scoring and rendering are tested without a browser.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cua_artifact::{
    ActionKind, Actor, Capability, EffectVerdict, FailureCode, FailureDetail, Identifier,
    ObservationClass, OutcomeResult, ResolutionStrategy, RiskTier, RunResult, RunStatus, StepId,
};
use cua_eval::{EvalSuite, RunObservation, SuitePlan, SuiteRuns};
use cua_replay::{PreparedCapability, ReplayReport, StepReport, StepResolution};
use serde_json::Value;

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The sealed savings-balance capability from the catalog.
pub(crate) fn savings() -> Capability {
    let text = std::fs::read_to_string(
        root().join("capabilities/corebank.member.savings_balance@1.0.0.yaml"),
    )
    .unwrap();
    Capability::from_yaml(&text).unwrap()
}

/// A suite from YAML text.
pub(crate) fn suite(text: &str) -> EvalSuite {
    EvalSuite::from_yaml(text).unwrap()
}

/// A plan for `suite` over the savings-balance capability bound to a fixed base URL.
pub(crate) fn plan(suite: EvalSuite) -> SuitePlan {
    let base = savings();
    let prepared =
        PreparedCapability::bind(base.clone(), None, Some("http://127.0.0.1:8811"), None).unwrap();
    SuitePlan {
        suite,
        base,
        prepared,
        setup: Vec::new(),
        target: "fixture first-valley".to_owned(),
    }
}

/// What one synthetic run returned.
#[derive(Debug, Clone)]
pub(crate) enum Returned {
    /// A success with these outputs.
    Values(&'static [(&'static str, &'static str)]),
    /// A business outcome.
    Outcome(&'static str),
    /// Stopped with this code at this step.
    Stopped(RunStatus, FailureCode, &'static str),
}

/// A replay of the savings-balance capability that returned `returned`, took `duration_ms`,
/// and resolved `read_balance` on `balance_rung` (a weaker rung than recorded drifts).
pub(crate) fn observation(
    case: usize,
    repeat: u32,
    returned: &Returned,
    duration_ms: u64,
    balance_rung: ResolutionStrategy,
) -> RunObservation {
    let run_id = format!("suite-{:02}-{repeat:02}", case + 1);
    let mut steps = vec![
        step(
            "enter_member_id",
            ActionKind::Type,
            ResolutionStrategy::SemanticExact,
            ResolutionStrategy::SemanticExact,
            true,
        ),
        step(
            "submit_search",
            ActionKind::Click,
            ResolutionStrategy::SemanticExact,
            ResolutionStrategy::SemanticExact,
            true,
        ),
    ];
    let mut result = RunResult {
        status: RunStatus::Success,
        capability: Some(savings().reference()),
        run_id: run_id.clone(),
        outputs: BTreeMap::new(),
        outcome: None,
        error: None,
        intervention: None,
        steps_executed: 2,
        steps_total: 5,
        duration_ms,
        drift_score: 0.0,
        strategy_mix: BTreeMap::new(),
        recovery_attempts: 0,
        evidence_ref: format!("runs/{run_id}"),
    };
    match returned {
        Returned::Values(values) => {
            steps.push(step(
                "read_balance",
                ActionKind::Extract,
                ResolutionStrategy::StructuralAnchor,
                balance_rung,
                false,
            ));
            steps.push(step(
                "read_status",
                ActionKind::Extract,
                ResolutionStrategy::StructuralAnchor,
                ResolutionStrategy::StructuralAnchor,
                false,
            ));
            steps.push(step(
                "read_as_of",
                ActionKind::Extract,
                ResolutionStrategy::StructuralAnchor,
                ResolutionStrategy::StructuralAnchor,
                false,
            ));
            result.steps_executed = 5;
            result.outputs = values
                .iter()
                .map(|(name, value)| ((*name).to_owned(), Value::from(*value)))
                .collect();
        }
        Returned::Outcome(code) => {
            result.status = RunStatus::BusinessOutcome;
            result.outcome = Some(OutcomeResult {
                code: Identifier::parse(code).unwrap(),
                data: BTreeMap::new(),
            });
        }
        Returned::Stopped(status, code, at) => {
            result.status = *status;
            result.error = Some(FailureDetail {
                code: *code,
                message: format!("stopped at {at}"),
                step_id: Some(StepId::parse(at).unwrap()),
                expected: None,
                observed: None,
                resolution: None,
            });
        }
    }
    let resolutions: Vec<&StepResolution> = steps
        .iter()
        .filter_map(|step| step.resolution.as_ref())
        .collect();
    for resolution in &resolutions {
        *result.strategy_mix.entry(resolution.strategy).or_insert(0) += 1;
    }
    result.drift_score = resolutions
        .iter()
        .filter(|resolution| resolution.drifted)
        .count() as f64
        / resolutions.len() as f64;
    let report = ReplayReport {
        result,
        effect: EffectVerdict::NotApplicable,
        steps,
        dispatches: 3,
        evidence_dir: PathBuf::from(format!("runs/{run_id}")),
    };
    RunObservation {
        case,
        repeat,
        run_id,
        decision_trace: report.decision_trace(),
        report,
        unauthorized_dispatches: 0,
    }
}

/// Runs of every case of `suite`, `repeats` times, each returning what `answers[case]` says.
pub(crate) fn runs(suite: &EvalSuite, answers: &[Returned]) -> SuiteRuns {
    let mut runs = Vec::new();
    let mut duration = 380;
    for repeat in 1..=suite.repeats {
        for (case, returned) in answers.iter().enumerate() {
            duration += 37 % (repeat as u64 + case as u64 + 2);
            runs.push(observation(
                case,
                repeat,
                returned,
                duration,
                ResolutionStrategy::StructuralAnchor,
            ));
        }
    }
    SuiteRuns {
        setup: Vec::new(),
        runs,
    }
}

fn step(
    id: &str,
    action: ActionKind,
    recorded: ResolutionStrategy,
    used: ResolutionStrategy,
    dispatched: bool,
) -> StepReport {
    StepReport {
        capability: None,
        step: id.to_owned(),
        index: 0,
        action,
        actor: Actor::Automation,
        observation: ObservationClass::Expected,
        resolution: Some(StepResolution {
            node_id: format!("content:/{id}"),
            strategy: used,
            recorded: Some(recorded),
            drifted: used.rank() > recorded.rank(),
            identity_verified: false,
        }),
        dispatched,
        decision_id: None,
        verdict: EffectVerdict::NotApplicable,
        verdict_reason: String::new(),
        risk: RiskTier::Safe,
        route: None,
    }
}

/// The suite used by the scoring and report tests: the repository's stability suite, twice.
pub(crate) const STABILITY: &str = r#"
schema: cua.eval_suite/v1
name: stability_sample
description: Four members of the base tenant, twice each.
capability: corebank.member.savings_balance@1.0.0
fixture: first-valley
repeats: 2
cases:
  - inputs: {member_id: "12345"}
    expect:
      outputs: {savings_balance: "4210.55", account_status: Active}
  - inputs: {member_id: "67890"}
    expect:
      outputs: {savings_balance: "18730.00", account_status: Active}
  - inputs: {member_id: "24680"}
    expect:
      outputs: {savings_balance: "0.00", account_status: Closed}
  - inputs: {member_id: "99999"}
    expect: {outcome: member_not_found}
"#;

/// Right answers for [`STABILITY`]'s cases.
pub(crate) fn right_answers() -> Vec<Returned> {
    vec![
        Returned::Values(&[
            ("savings_balance", "4210.55"),
            ("account_status", "Active"),
            ("as_of", "2026-09-11"),
        ]),
        Returned::Values(&[
            ("savings_balance", "18730.00"),
            ("account_status", "Active"),
            ("as_of", "2026-09-11"),
        ]),
        Returned::Values(&[
            ("savings_balance", "0.00"),
            ("account_status", "Closed"),
            ("as_of", "2026-09-11"),
        ]),
        Returned::Outcome("member_not_found"),
    ]
}
