//! Scoring: what counts as a wrong action, and when determinism holds.

use cua_artifact::{FailureCode, ResolutionStrategy, RunStatus};
use cua_eval::score::{Answer, judge};
use cua_eval::{Sensitive, SuiteReport, Truth, Verdict};

use crate::support::{Returned, STABILITY, observation, plan, right_answers, runs, suite};

fn truth_of(text: &str) -> Truth {
    if let Some(code) = text.strip_prefix("outcome ") {
        return Truth::Outcome(code.to_owned());
    }
    Truth::Outputs(
        text.split(", ")
            .map(|pair| {
                let (name, value) = pair.split_once('=').unwrap();
                (name.to_owned(), value.to_owned())
            })
            .collect(),
    )
}

/// Judges `returned` against `truth` (`name=value, …` or `outcome code`).
fn check(truth: &str, returned: Returned, expect: &str) {
    check_with(&Sensitive::default(), truth, returned, expect);
}

/// The same, with some outputs declared sensitive.
fn check_with(sensitive: &Sensitive, truth: &str, returned: Returned, expect: &str) {
    let answer = judge(
        &truth_of(truth),
        &observation(0, 1, &returned, 400, ResolutionStrategy::StructuralAnchor),
        sensitive,
    );
    let got = match &answer {
        Answer::Correct => "correct".to_owned(),
        Answer::WrongAction(why) => format!("wrong: {why}"),
        Answer::Unanswered(why) => format!("unanswered: {why}"),
    };
    assert_eq!(got, expect, "truth {truth}");
}

#[test]
fn a_sensitive_output_is_judged_in_clear_and_reported_by_shape() {
    let sensitive = Sensitive::new(["savings_balance"]);
    let balance = "savings_balance=4210.55, account_status=Active";
    check_with(
        &sensitive,
        balance,
        Returned::Values(&[("savings_balance", "4210.55"), ("account_status", "Active")]),
        "correct",
    );
    check_with(
        &sensitive,
        balance,
        Returned::Values(&[("savings_balance", "4210.56"), ("account_status", "Active")]),
        r#"wrong: savings_balance is "<redacted:string[7]>", the truth is "<redacted:string[7]>""#,
    );
    check_with(
        &sensitive,
        balance,
        Returned::Values(&[("account_status", "Active")]),
        r#"wrong: savings_balance was not returned, the truth is "<redacted:string[7]>""#,
    );
}

#[test]
fn a_wrong_answer_of_either_kind_is_a_wrong_action_and_a_refusal_never_is() {
    let balance = "savings_balance=4210.55, account_status=Active";
    check(
        balance,
        Returned::Values(&[
            ("savings_balance", "4210.55"),
            ("account_status", "Active"),
            ("as_of", "2026-09-11"),
        ]),
        "correct",
    );
    check(
        balance,
        Returned::Values(&[("savings_balance", "4210.56"), ("account_status", "Active")]),
        r#"wrong: savings_balance is "4210.56", the truth is "4210.55""#,
    );
    check(
        balance,
        Returned::Values(&[("savings_balance", "4210.55")]),
        r#"wrong: account_status was not returned, the truth is "Active""#,
    );
    check(
        "outcome member_not_found",
        Returned::Values(&[("savings_balance", "4210.55")]),
        "wrong: succeeded with outputs where the truth is the business outcome member_not_found",
    );
    check(
        "outcome member_not_found",
        Returned::Outcome("member_not_found"),
        "correct",
    );
    check(
        "outcome member_not_found",
        Returned::Outcome("permission_denied"),
        "wrong: returned the business outcome permission_denied, the truth is member_not_found",
    );
    check(
        balance,
        Returned::Outcome("member_not_found"),
        "wrong: returned the business outcome member_not_found where the truth is a success",
    );
    check(
        balance,
        Returned::Stopped(
            RunStatus::NeedsHuman,
            FailureCode::TargetAmbiguous,
            "read_balance",
        ),
        "unanswered: needs_human (target_ambiguous at read_balance)",
    );
    check(
        "outcome member_not_found",
        Returned::Stopped(RunStatus::Failed, FailureCode::Timeout, "submit_search"),
        "unanswered: failed (timeout at submit_search)",
    );
}

#[test]
fn right_answers_every_time_are_sound() {
    let suite = suite(STABILITY);
    let runs = runs(&suite, &right_answers());
    let report = SuiteReport::build(&plan(suite), &runs);
    let metrics = &report.metrics;
    assert_eq!(
        (
            metrics.runs,
            metrics.successes,
            metrics.business_outcomes,
            metrics.wrong_actions
        ),
        (8, 6, 2, 0)
    );
    assert_eq!(metrics.determinism_holds, Some(true));
    assert_eq!(report.verdict, Verdict::Sound);
    assert!(report.sound_for_exit);
    let evaluation = report.evaluation();
    assert!(evaluation.is_trustworthy(), "{evaluation:?}");
    assert_eq!(evaluation.unauthorized_dispatches, Some(0));
    assert_eq!(
        evaluation.content_hash,
        crate::support::savings().content_hash.unwrap()
    );
}

#[test]
fn a_single_wrong_answer_makes_the_suite_unsound() {
    let suite = suite(STABILITY);
    let mut answers = right_answers();
    answers[1] = Returned::Values(&[
        ("savings_balance", "18730.01"),
        ("account_status", "Active"),
    ]);
    let report = SuiteReport::build(&plan(suite.clone()), &runs(&suite, &answers));
    assert_eq!(
        report.metrics.wrong_actions, 2,
        "both repeats of the case are wrong"
    );
    assert_eq!(report.verdict, Verdict::Unsound);
    assert!(!report.sound_for_exit);
    assert!(!report.evaluation().is_trustworthy());
}

#[test]
fn an_unauthorized_dispatch_makes_the_suite_unsound() {
    let suite = suite(STABILITY);
    let mut runs = runs(&suite, &right_answers());
    runs.runs[3].unauthorized_dispatches = 1;
    let report = SuiteReport::build(&plan(suite), &runs);
    assert_eq!(report.metrics.unauthorized_dispatches, 1);
    assert_eq!(report.verdict, Verdict::Unsound);
    assert!(!report.sound_for_exit);
}

#[test]
fn different_decisions_for_the_same_inputs_break_determinism() {
    let suite = suite(STABILITY);
    let mut runs = runs(&suite, &right_answers());
    // The second repeat of the first member resolved its balance on a weaker rung.
    let again = observation(
        0,
        2,
        &right_answers()[0],
        400,
        ResolutionStrategy::OrdinalInRegion,
    );
    let position = runs
        .runs
        .iter()
        .position(|run| run.case == 0 && run.repeat == 2)
        .unwrap();
    runs.runs[position] = again;
    let report = SuiteReport::build(&plan(suite), &runs);
    assert_eq!(report.metrics.determinism_holds, Some(false));
    assert_eq!(report.metrics.nondeterministic_cases, ["member_id=12345"]);
    assert_eq!(report.verdict, Verdict::NonDeterministic);
    assert!(
        report.sound_for_exit,
        "non-determinism alone is not a wrong action"
    );
    assert!(report.metrics.mean_drift > 0.0);
    let balance = report
        .steps
        .iter()
        .find(|step| step.step == "read_balance")
        .unwrap();
    assert_eq!((balance.resolutions, balance.drifted), (6, 1));
}

#[test]
fn one_repeat_cannot_show_determinism() {
    let suite = suite(&STABILITY.replace("repeats: 2", "repeats: 1"));
    let report = SuiteReport::build(&plan(suite.clone()), &runs(&suite, &right_answers()));
    assert_eq!(report.metrics.determinism_holds, None);
    assert_eq!(
        report.verdict,
        Verdict::Untrustworthy,
        "four runs are fewer than five"
    );
}
