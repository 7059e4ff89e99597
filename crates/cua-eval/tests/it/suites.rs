//! The suite document: the repository's suites load and fit their capability; anything else is
//! refused with every problem named.

use cua_eval::{EvalSuite, Truth};

use crate::support::{root, savings};

/// Loads `text` and checks it against the savings-balance capability: the problems, one per
/// line, or `ok`.
fn problems(text: &str) -> String {
    match EvalSuite::from_yaml(text) {
        Err(error) => error.to_string(),
        Ok(suite) => {
            let problems = suite.check(&savings());
            if problems.is_empty() {
                "ok".to_owned()
            } else {
                problems.join("\n")
            }
        }
    }
}

fn check(text: &str, expect: &str) {
    let got = problems(text);
    assert!(
        got.contains(expect),
        "expected a problem containing {expect:?}, got:\n{got}"
    );
}

const VALID: &str = r#"
schema: cua.eval_suite/v1
name: sample
capability: corebank.member.savings_balance@1.0.0
fixture: first-valley
repeats: 2
cases:
  - inputs: {member_id: "12345"}
    expect:
      outputs: {savings_balance: "4210.55"}
  - inputs: {member_id: "99999"}
    expect: {outcome: member_not_found}
"#;

#[test]
fn the_repository_suites_load_and_fit_their_capability() {
    for name in ["replay_stability", "cross_tenant"] {
        let text = std::fs::read_to_string(root().join(format!("evals/{name}.yaml"))).unwrap();
        let suite = EvalSuite::from_yaml(&text).unwrap();
        assert_eq!(suite.name.as_str(), name);
        assert_eq!(suite.check(&savings()), Vec::<String>::new(), "{name}");
        assert_eq!(suite.repeats, 5, "{name}");
        assert_eq!(suite.cases.len(), 4, "{name}");
        let outcomes = suite
            .cases
            .iter()
            .filter(|case| matches!(case.expect, Truth::Outcome(_)))
            .count();
        assert_eq!(outcomes, 1, "{name}: one member does not exist");
    }
}

#[test]
fn a_valid_suite_has_no_problem() {
    assert_eq!(problems(VALID), "ok");
}

#[test]
fn every_rule_is_enforced() {
    let cases: [(&str, &str, &str); 11] = [
        (
            "repeats: 2",
            "repeats: 2\nretries: 3",
            "unknown field `retries`",
        ),
        (
            "schema: cua.eval_suite/v1",
            "schema: cua.eval_suite/v2",
            "cua.eval_suite/v2",
        ),
        ("name: sample", "name: Sample Suite", "is not a suite name"),
        (
            "fixture: first-valley",
            "fixture: first-valley\nbase_url: http://127.0.0.1:1",
            "not both",
        ),
        ("fixture: first-valley\n", "", "say what to run against"),
        ("repeats: 2", "repeats: 0", "`repeats` must be at least 1"),
        (
            r#"{member_id: "99999"}"#,
            r#"{member_no: "99999"}"#,
            "has no input `member_no`",
        ),
        (
            "{savings_balance: \"4210.55\"}",
            "{balance: \"4210.55\"}",
            "returns no output `balance`",
        ),
        (
            "{outcome: member_not_found}",
            "{outcome: member_missing}",
            "declares no outcome `member_missing`",
        ),
        (
            "{outcome: member_not_found}",
            "{outcome: member_not_found, outputs: {savings_balance: \"1.00\"}}",
            "expect",
        ),
        (
            r#"{member_id: "99999"}"#,
            r#"{member_id: "12345"}"#,
            "cases[0] and cases[1] have the same label",
        ),
    ];
    for (from, to, expect) in cases {
        assert!(VALID.contains(from), "{from}");
        check(&VALID.replacen(from, to, 1), expect);
    }
}

#[test]
fn yaml_one_point_one_booleans_are_strings_and_duplicate_keys_are_refused() {
    check(
        &VALID.replace("repeats: 2", "repeats: 2\nrepeats: 3"),
        "duplicate",
    );
    let suite = EvalSuite::from_yaml(
        &VALID.replace(r#"{savings_balance: "4210.55"}"#, "{account_status: no}"),
    )
    .unwrap();
    match &suite.cases[0].expect {
        Truth::Outputs(outputs) => assert_eq!(outputs["account_status"], "no"),
        Truth::Outcome(_) => panic!("outputs expected"),
    }
}

#[test]
fn every_problem_is_reported_at_once() {
    let text = VALID
        .replace(r#"{member_id: "99999"}"#, r#"{member_no: "99999"}"#)
        .replace("{savings_balance: \"4210.55\"}", "{balance: \"4210.55\"}");
    let got = problems(&text);
    assert_eq!(got.lines().count(), 2, "{got}");
}
