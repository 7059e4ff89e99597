//! The reference edge-case scenarios (seed004 reference facts §7.2), as one table run against
//! the real fixture in Chromium. Each row: a capability, a tenant, inputs, faults armed after
//! sign-on, whether a `run_capability` remedy source is wired, and what must come out.
//!
//! Dispatch counts are cua's, not the reference's: reads (`extract`) are never dispatched here,
//! so a successful savings lookup is three dispatches (entrypoint, type, click).

use cua_artifact::{EffectVerdict, FailureCode, ResolutionStrategy, RunStatus};
use cua_replay::RunRequest;
use memberdesk::{Fault, FaultCount, Variant};

use crate::live::Live;
use cua_replay::CapabilityList;

use crate::support::{inputs, prepared};

const SAVINGS: &str = "corebank.member.savings_balance@1.0.0";

struct Scenario {
    name: &'static str,
    tenant: Option<&'static str>,
    member_id: &'static str,
    faults: &'static [(Fault, u32)],
    /// Whether `run_capability` remedies can be loaded (the sign-on capability).
    remedies: bool,
    expect: Expect,
}

struct Expect {
    status: RunStatus,
    code: Option<FailureCode>,
    outcome: Option<&'static str>,
    outputs: &'static [(&'static str, &'static str)],
    dispatches: u32,
    recovery_attempts: u32,
}

const fn success(outputs: &'static [(&'static str, &'static str)], dispatches: u32) -> Expect {
    Expect {
        status: RunStatus::Success,
        code: None,
        outcome: None,
        outputs,
        dispatches,
        recovery_attempts: 0,
    }
}

const fn outcome(code: &'static str) -> Expect {
    Expect {
        status: RunStatus::BusinessOutcome,
        code: None,
        outcome: Some(code),
        outputs: &[],
        dispatches: 3,
        recovery_attempts: 0,
    }
}

const fn refused(code: FailureCode, status: RunStatus, dispatches: u32) -> Expect {
    Expect {
        status,
        code: Some(code),
        outcome: None,
        outputs: &[],
        dispatches,
        recovery_attempts: 0,
    }
}

const ADA: &[(&str, &str)] = &[
    ("account_status", "Active"),
    ("as_of", "2026-09-11"),
    ("savings_balance", "4210.55"),
];

fn scenarios() -> Vec<Scenario> {
    let row = |name, member_id, expect| Scenario {
        name,
        tenant: None,
        member_id,
        faults: &[],
        remedies: false,
        expect,
    };
    let invalid = |name, member_id| {
        row(
            name,
            member_id,
            refused(FailureCode::InputValidationFailed, RunStatus::Failed, 0),
        )
    };
    vec![
        row("member-active", "12345", success(ADA, 3)),
        row(
            "member-closed-account",
            "24680",
            success(
                &[
                    ("account_status", "Closed"),
                    ("as_of", "2026-09-11"),
                    ("savings_balance", "0.00"),
                ],
                3,
            ),
        ),
        row("member-no-savings", "13579", outcome("no_savings_account")),
        row("member-restricted", "55555", outcome("permission_denied")),
        row("member-not-found", "99999", outcome("member_not_found")),
        row("input-minimum-length", "1234", outcome("member_not_found")),
        row(
            "input-maximum-length",
            "1234567890",
            outcome("member_not_found"),
        ),
        invalid("input-too-short", "123"),
        invalid("input-too-long", "12345678901"),
        invalid("input-empty", ""),
        invalid("input-padded-with-space", " 12345"),
        invalid("input-non-ascii-digits", "١٢٣٤٥"),
        invalid("input-sql-shaped", "1'; DROP TABLE members; --"),
        invalid("input-html-shaped", "<script>alert(1)</script>"),
        Scenario {
            faults: &[(Fault::TransientLoad, 1)],
            expect: Expect {
                recovery_attempts: 1,
                ..success(ADA, 4)
            },
            ..row("fault-transient-recovered", "12345", success(ADA, 4))
        },
        Scenario {
            faults: &[(Fault::TransientLoad, 9)],
            expect: Expect {
                recovery_attempts: 3,
                ..refused(FailureCode::RecoveryExhausted, RunStatus::NeedsHuman, 4)
            },
            ..row("fault-transient-exhausted", "12345", success(ADA, 0))
        },
        Scenario {
            faults: &[(Fault::SessionTimeout, 1)],
            remedies: true,
            expect: Expect {
                recovery_attempts: 1,
                ..success(ADA, 6)
            },
            ..row("fault-session-expired-reauth", "12345", success(ADA, 0))
        },
        Scenario {
            faults: &[(Fault::SessionTimeout, 1)],
            expect: Expect {
                recovery_attempts: 1,
                ..refused(FailureCode::RecoveryExhausted, RunStatus::NeedsHuman, 1)
            },
            ..row("fault-session-expired-no-remedy", "12345", success(ADA, 0))
        },
        Scenario {
            faults: &[(Fault::UndeclaredDialog, 3)],
            expect: refused(FailureCode::UnexpectedState, RunStatus::NeedsHuman, 1),
            ..row("fault-undeclared-screen", "12345", success(ADA, 0))
        },
        Scenario {
            faults: &[(Fault::LookalikeRow, 1)],
            ..row(
                "fault-lookalike-row-summary-unaffected",
                "12345",
                success(ADA, 3),
            )
        },
        Scenario {
            faults: &[(Fault::SlowPage, 2)],
            ..row("fault-slow-page", "12345", success(ADA, 3))
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_edge_cases() {
    let mut failures = Vec::new();
    let live = Live::start(Variant::FirstValley).await;
    let mut remedial = Live::start(Variant::FirstValley).await;
    let sign_on = remedial.prepared("corebank.auth.sign_on@1.0.0", None);
    remedial.harness.loader = Box::new(CapabilityList::new(vec![sign_on]));
    for scenario in scenarios() {
        let live = if scenario.remedies { &remedial } else { &live };
        live.fixture.handle().reset();
        live.sign_on().await;
        for (fault, count) in scenario.faults {
            live.fixture.handle().arm(*fault, FaultCount::Times(*count));
        }
        let request = RunRequest::new(
            prepared(SAVINGS, scenario.tenant, &live.base_url(), None),
            inputs(&[("member_id", scenario.member_id)]),
        );
        let (report, run_dir) = live.run(request).await;
        let result = &report.result;
        let outputs: Vec<(String, String)> = result
            .outputs
            .iter()
            .map(|(name, value)| (name.clone(), value.as_str().unwrap_or_default().to_owned()))
            .collect();
        let expected_outputs: Vec<(String, String)> = scenario
            .expect
            .outputs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        let observed = (
            result.status,
            result.error.as_ref().map(|error| error.code),
            result
                .outcome
                .as_ref()
                .map(|outcome| outcome.code.to_string()),
            outputs,
            report.dispatches,
            result.recovery_attempts,
        );
        let expected = (
            scenario.expect.status,
            scenario.expect.code,
            scenario.expect.outcome.map(str::to_owned),
            expected_outputs,
            scenario.expect.dispatches,
            scenario.expect.recovery_attempts,
        );
        if observed != expected {
            failures.push(format!(
                "{}: expected {expected:?}\n   observed {observed:?}\n   error {:?}\n   evidence {}",
                scenario.name,
                result.error,
                run_dir.display()
            ));
        }
        let trace = cua_evidence::read_trace(&run_dir).unwrap();
        assert!(
            cua_evidence::unauthorized_dispatches(&trace).is_empty(),
            "{}: a dispatch without authorization",
            scenario.name
        );
        assert!(
            cua_evidence::verify(&run_dir).unwrap().is_intact(),
            "{}",
            scenario.name
        );
    }
    // Keep the evidence of a failing table for inspection.
    if !failures.is_empty() {
        let kept = live.harness.evidence.path().to_path_buf();
        std::mem::forget(live);
        std::mem::forget(remedial);
        panic!(
            "{} scenario(s) failed (evidence under {}):\n{}",
            failures.len(),
            kept.display(),
            failures.join("\n")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn northgate_with_its_overlay_succeeds_with_every_css_hint_dead() {
    let live = Live::start(Variant::NorthgateFcu).await;
    live.sign_on().await;
    let request = RunRequest::new(
        live.prepared(SAVINGS, Some("northgate-fcu")),
        inputs(&[("member_id", "67890")]),
    );
    let (report, run_dir) = live.run(request).await;
    assert_eq!(
        report.result.status,
        RunStatus::Success,
        "{:?} ({})",
        report.result.error,
        run_dir.display()
    );
    assert_eq!(report.result.outputs["savings_balance"], "18730.00");
    assert_eq!(report.result.outputs["account_status"], "Active");
    assert!(
        !report
            .result
            .strategy_mix
            .contains_key(&ResolutionStrategy::HintCached),
        "{:?}",
        report.result.strategy_mix
    );
    assert_eq!(report.result.drift_score, 0.0);
    assert_eq!(report.effect, EffectVerdict::NotApplicable);
}

/// Help text that quotes the app's refusal, beside the record it refuses: the not-found
/// detector (here made to match text the member record shows, as a caption quoting "No records
/// found" would) and the read's precondition both hold, so the lookup is an ambiguous screen
/// and goes to a person, never the business outcome `member_not_found` with exit 0. Two
/// outcomes at once are refused the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screen_two_explanations_fit_is_refused_never_answered() {
    let live = Live::start(Variant::FirstValley).await;
    for second_outcome in [false, true] {
        live.fixture.handle().reset();
        live.sign_on().await;
        let mut prepared = prepared(SAVINGS, None, &live.base_url(), None);
        let mut capability = prepared.capability.clone();
        capability.content_hash = None;
        for outcome in &mut capability.outcomes {
            let quoted = match outcome.code.as_str() {
                "member_not_found" => "Open Sub-Account",
                "no_savings_account" if second_outcome => "New Search",
                _ => continue,
            };
            outcome.detect = cua_artifact::Predicate::TextPresent {
                value: cua_artifact::ValueExpr::String(quoted.to_owned()),
            };
        }
        prepared.capability = capability.sealed();
        let (report, run_dir) = live
            .run(RunRequest::new(prepared, inputs(&[("member_id", "12345")])))
            .await;
        let error = report.result.error.clone().unwrap();
        assert_eq!(
            (report.result.status, error.code),
            (RunStatus::NeedsHuman, FailureCode::AmbiguousScreen),
            "{error:?} ({})",
            run_dir.display()
        );
        let expected = if second_outcome {
            "the outcomes `member_not_found` and `no_savings_account` both hold"
        } else {
            "the outcome `member_not_found` and the precondition of `read_balance` both hold"
        };
        assert!(error.message.contains(expected), "{}", error.message);
        assert!(report.result.outcome.is_none());
    }
}
