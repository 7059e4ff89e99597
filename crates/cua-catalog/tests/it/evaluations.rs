//! `approve --from-eval`: each criterion refused with its own message, evaluations of other
//! content ignored, and a passing evaluation at this exact hash recorded in the approval.

use std::fmt::Write as _;
use std::path::Path;

use cua_catalog::{Catalog, CatalogConfig, Integrity};
use serde_json::{Value, json};

use crate::{Fixture, SAVINGS};

/// A passing evaluation of `hash`: 20 runs, 16 successes and 4 business outcomes, nothing bad.
fn passing(hash: &str) -> Value {
    json!({
        "schema": "cua.capability_evaluation/v1",
        "capability": SAVINGS,
        "content_hash": hash,
        "suite": "savings-balance",
        "runs": 20,
        "successes": 16,
        "business_outcomes": 4,
        "needs_human": 0,
        "failures": 0,
        "wrong_actions": 0,
        "ambiguity_refusals": 0,
        "determinism_holds": true,
        "mean_drift": 0.0,
        "fallback_rate": 0.0,
        "unauthorized_dispatches": 0,
    })
}

fn sealed_hash(fixture: &Fixture) -> String {
    match fixture.entry(SAVINGS).integrity {
        Integrity::Sealed { content_hash } => content_hash.to_string(),
        other => panic!("the fixture is sealed, not {other:?}"),
    }
}

fn write_evaluation(directory: &Path, suite: &str, evaluation: &Value) {
    std::fs::create_dir_all(directory).unwrap();
    std::fs::write(
        directory.join(format!("{suite}.evaluation.json")),
        serde_json::to_string_pretty(evaluation).unwrap(),
    )
    .unwrap();
}

/// Sets fields of an evaluation; `Value::Null` under `unauthorized_dispatches` removes it.
fn with(mut evaluation: Value, changes: &[(&str, Value)]) -> Value {
    let object = evaluation.as_object_mut().unwrap();
    for (key, value) in changes {
        if *key == "unauthorized_dispatches" && value.is_null() {
            object.remove(*key);
        } else {
            object.insert((*key).to_owned(), value.clone());
        }
    }
    evaluation
}

#[test]
fn each_criterion_is_refused_with_its_message() {
    let cases: Vec<(&str, Vec<(&str, Value)>)> = vec![
        (
            "four runs",
            vec![
                ("runs", json!(4)),
                ("successes", json!(4)),
                ("business_outcomes", json!(0)),
            ],
        ),
        ("a wrong action", vec![("wrong_actions", json!(1))]),
        (
            "an unauthorized dispatch",
            vec![("unauthorized_dispatches", json!(2))],
        ),
        (
            "unauthorized dispatches not recorded",
            vec![("unauthorized_dispatches", Value::Null)],
        ),
        (
            "stability 90%",
            vec![("successes", json!(14)), ("failures", json!(2))],
        ),
        (
            "stability 94.9%",
            vec![
                ("runs", json!(1000)),
                ("successes", json!(949)),
                ("business_outcomes", json!(0)),
                ("failures", json!(51)),
            ],
        ),
        (
            "determinism broken",
            vec![("determinism_holds", json!(false))],
        ),
        (
            "determinism not shown",
            vec![("determinism_holds", Value::Null)],
        ),
        (
            "three at once",
            vec![
                ("runs", json!(3)),
                ("successes", json!(2)),
                ("business_outcomes", json!(0)),
                ("needs_human", json!(1)),
                ("wrong_actions", json!(1)),
            ],
        ),
    ];
    let mut out = String::new();
    for (name, changes) in cases {
        let fixture = Fixture::new();
        let evaluation = with(passing(&sealed_hash(&fixture)), &changes);
        write_evaluation(
            &fixture.config().evaluations,
            "savings-balance",
            &evaluation,
        );
        let error = fixture.approve(SAVINGS, true).unwrap_err();
        assert!(error.is_refusal(), "{name}: a refusal exits 1");
        assert_eq!(error.code(), "evaluation_failed", "{name}");
        assert_eq!(
            fixture.entry(SAVINGS).review.label(),
            "draft",
            "{name}: nothing written"
        );
        writeln!(out, "{name}:\n  {}", fixture.clean(&error.to_string())).unwrap();
    }
    insta::assert_snapshot!(out);
}

#[test]
fn passing_evaluations_at_this_hash_back_an_unattended_approval() {
    let cases: Vec<(&str, Vec<(&str, Value)>)> = vec![
        ("twenty clean runs", vec![]),
        (
            "exactly 95% stable",
            vec![("successes", json!(15)), ("failures", json!(1))],
        ),
        (
            "exactly five runs",
            vec![
                ("runs", json!(5)),
                ("successes", json!(5)),
                ("business_outcomes", json!(0)),
            ],
        ),
    ];
    let mut out = String::new();
    for (name, changes) in cases {
        let fixture = Fixture::new();
        let evaluation = with(passing(&sealed_hash(&fixture)), &changes);
        write_evaluation(
            &fixture.config().evaluations,
            "savings-balance",
            &evaluation,
        );
        fixture.approve(SAVINGS, true).unwrap();
        let approval = fixture.entry(SAVINGS).approval.unwrap();
        assert!(approval.scope.unattended_replay, "{name}");
        writeln!(out, "{name}:\n  {}", fixture.clean(&approval.notes)).unwrap();
    }
    // A plain approval does not claim unattended replay.
    let fixture = Fixture::new();
    fixture.approve(SAVINGS, false).unwrap();
    assert!(
        !fixture
            .entry(SAVINGS)
            .approval
            .unwrap()
            .scope
            .unattended_replay
    );
    insta::assert_snapshot!(out);
}

#[test]
fn evaluations_of_other_content_or_none_at_all_are_refused() {
    let mut out = String::new();

    let fixture = Fixture::new();
    let error = fixture.approve(SAVINGS, true).unwrap_err();
    assert!(error.is_refusal());
    writeln!(
        out,
        "none: [{}] {}",
        error.code(),
        fixture.clean(&error.to_string())
    )
    .unwrap();

    // The evaluation ran against the content before an edit.
    let fixture = Fixture::new();
    let before = sealed_hash(&fixture);
    write_evaluation(
        &fixture.config().evaluations,
        "savings-balance",
        &passing(&before),
    );
    fixture.edit_and_reseal(SAVINGS, "max_steps: 12", "max_steps: 11");
    let error = fixture.approve(SAVINGS, true).unwrap_err();
    assert!(error.is_refusal());
    writeln!(
        out,
        "stale: [{}] {}",
        error.code(),
        fixture.clean(&error.to_string())
    )
    .unwrap();

    // An evaluation of another capability at this hash does not count, and a broken
    // evaluation file is named.
    let fixture = Fixture::new();
    let hash = sealed_hash(&fixture);
    let other = with(
        passing(&hash),
        &[("capability", json!("corebank.member.transfer_funds@1.0.0"))],
    );
    write_evaluation(&fixture.config().evaluations, "transfer", &other);
    std::fs::write(
        fixture.config().evaluations.join("broken.evaluation.json"),
        "{\"schema\": \"cua.capability_evaluation/v1\"}",
    )
    .unwrap();
    let error = fixture.approve(SAVINGS, true).unwrap_err();
    assert!(error.is_refusal());
    writeln!(
        out,
        "other: [{}] {}",
        error.code(),
        fixture.clean(&error.to_string())
    )
    .unwrap();

    // One passing and one failing evaluation at this hash: the failing one decides.
    let fixture = Fixture::new();
    let hash = sealed_hash(&fixture);
    write_evaluation(&fixture.config().evaluations, "base", &passing(&hash));
    let failing = with(
        passing(&hash),
        &[
            ("tenant", json!("northgate-fcu")),
            ("wrong_actions", json!(1)),
        ],
    );
    write_evaluation(&fixture.config().evaluations, "northgate", &failing);
    let error = fixture.approve(SAVINGS, true).unwrap_err();
    writeln!(
        out,
        "mixed: [{}] {}",
        error.code(),
        fixture.clean(&error.to_string())
    )
    .unwrap();
    insta::assert_snapshot!(out);
}

#[test]
fn evaluations_are_found_beside_the_artifact_or_in_an_overridden_directory() {
    // Beside the artifact.
    let fixture = Fixture::new();
    let hash = sealed_hash(&fixture);
    write_evaluation(&fixture.config().capabilities, "beside", &passing(&hash));
    fixture.approve(SAVINGS, true).unwrap();

    // In a directory given instead of evidence/evals (`--evals DIR`).
    let fixture = Fixture::new();
    let hash = sealed_hash(&fixture);
    let elsewhere = fixture.root.path().join("elsewhere");
    write_evaluation(&elsewhere, "savings-balance", &passing(&hash));
    let default_layout = fixture.approve(SAVINGS, true).unwrap_err();
    assert_eq!(default_layout.code(), "no_evaluation");
    let catalog = Catalog::new(CatalogConfig {
        evaluations: elsewhere,
        ..fixture.config().clone()
    });
    catalog
        .approve(&cua_catalog::ApproveRequest {
            reference: crate::reference_of(SAVINGS),
            by: "aditya".to_owned(),
            at: crate::AT.to_owned(),
            notes: None,
            from_eval: true,
            tenant: None,
        })
        .unwrap();
    let scan = catalog.evaluations().unwrap();
    assert_eq!(scan.records.len(), 1);
    assert_eq!(scan.problems.len(), 0);
}

#[test]
fn an_unauthorized_dispatch_count_must_be_a_count() {
    let fixture = Fixture::new();
    let hash = sealed_hash(&fixture);
    let evaluation = with(passing(&hash), &[("unauthorized_dispatches", json!(-1))]);
    write_evaluation(&fixture.config().evaluations, "negative", &evaluation);
    let scan = fixture.catalog.evaluations().unwrap();
    assert_eq!(scan.records.len(), 0);
    assert_eq!(
        scan.problems[0].reason,
        "unauthorized_dispatches must be a non-negative integer"
    );
}
