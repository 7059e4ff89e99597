//! What happens before the first action, on a surface that records every call: refusals there
//! reach nothing.

use cua_artifact::{Actor, FailureCode, RunStatus};
use cua_replay::{PreparedCapability, ReplayError, RunRequest};

use crate::fake::FakeSurface;
use crate::support::{Harness, capability, events, inputs, prepared};

const BASE_URL: &str = "http://127.0.0.1:9";

fn savings() -> PreparedCapability {
    prepared(
        "corebank.member.savings_balance@1.0.0",
        None,
        BASE_URL,
        None,
    )
}

#[tokio::test]
async fn a_stale_lease_epoch_is_refused_before_anything_else() {
    let harness = Harness::new();
    harness.lease.lock().unwrap().transfer(Actor::Human);
    harness.lease.lock().unwrap().transfer(Actor::Automation);
    let surface = FakeSurface::default();
    let mut request = RunRequest::new(savings(), inputs(&[("member_id", "12345")]));
    request.lease_epoch = Some(1);
    let (report, run_dir) = harness.run(&surface, request).await;
    let report = report.unwrap();
    assert_eq!(report.result.status, RunStatus::Failed);
    assert_eq!(
        report.result.error.as_ref().unwrap().code,
        FailureCode::LeaseLost
    );
    assert_eq!(report.dispatches, 0);
    // Nothing reached the surface: no observation, no dispatch, not even a screenshot.
    assert_eq!(surface.calls(), Vec::<String>::new());
    assert_eq!(events(&run_dir), ["run_start", "escalate", "run_end"]);
    let record = cua_evidence::read_trace(&run_dir).unwrap();
    assert!(cua_evidence::unauthorized_dispatches(&record).is_empty());
}

#[tokio::test]
async fn a_lease_held_by_a_human_is_refused_before_anything_else() {
    let harness = Harness::new();
    harness.lease.lock().unwrap().transfer(Actor::Human);
    let surface = FakeSurface::default();
    let request = RunRequest::new(savings(), inputs(&[("member_id", "12345")]));
    let (report, _) = harness.run(&surface, request).await;
    let report = report.unwrap();
    assert_eq!(report.result.error.unwrap().code, FailureCode::LeaseLost);
    assert_eq!(surface.calls(), Vec::<String>::new());
}

#[tokio::test]
async fn invalid_inputs_dispatch_nothing() {
    let harness = Harness::new();
    let surface = FakeSurface::default();
    let request = RunRequest::new(savings(), inputs(&[("member_id", " 12345")]));
    let (report, _) = harness.run(&surface, request).await;
    let report = report.unwrap();
    assert_eq!(report.result.status, RunStatus::Failed);
    let error = report.result.error.unwrap();
    assert_eq!(error.code, FailureCode::InputValidationFailed);
    assert_eq!(
        error.message,
        "input `member_id` does not match its pattern ^[0-9]{4,10}$ (6 character(s) given)"
    );
    assert_eq!(report.dispatches, 0);
    assert!(
        surface
            .calls()
            .iter()
            .all(|call| !call.starts_with("dispatch"))
    );
}

#[tokio::test]
async fn a_tampered_artifact_is_refused_naming_both_hashes() {
    let harness = Harness::new();
    let surface = FakeSurface::default();
    let mut tampered = capability("corebank.member.savings_balance@1.0.0");
    tampered
        .outcomes
        .retain(|outcome| outcome.code.as_str() != "permission_denied");
    let declared = tampered.content_hash.clone().unwrap();
    let computed = tampered.compute_hash();
    let request = RunRequest::new(
        PreparedCapability::plain(tampered),
        inputs(&[("member_id", "12345")]),
    );
    let (report, run_dir) = harness.run(&surface, request).await;
    let error = report.unwrap_err();
    assert!(matches!(error, ReplayError::Tampered { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "content hash mismatch for corebank.member.savings_balance@1.0.0: declared {declared}, computed {computed}"
        )
    );
    assert_eq!(surface.calls(), Vec::<String>::new());
    assert_eq!(events(&run_dir), ["run_start", "note", "run_end"]);
    assert!(run_dir.join("run_record.json").exists());
}

#[tokio::test]
async fn an_unbound_entrypoint_is_refused() {
    let harness = Harness::new();
    let surface = FakeSurface::default();
    let request = RunRequest::new(
        PreparedCapability::plain(capability("corebank.member.savings_balance@1.0.0")),
        inputs(&[("member_id", "12345")]),
    );
    let (report, _) = harness.run(&surface, request).await;
    let error = report.unwrap_err();
    assert!(
        matches!(error, ReplayError::UnboundPlaceholder { .. }),
        "{error:?}"
    );
    assert_eq!(surface.calls(), Vec::<String>::new());
}

#[tokio::test]
async fn an_irreversible_capability_without_approval_or_opt_in_dispatches_nothing() {
    let harness = Harness::new();
    let surface = FakeSurface::default();
    let transfer = prepared("corebank.member.transfer_funds@1.0.0", None, BASE_URL, None);
    let mut request = RunRequest::new(
        transfer,
        inputs(&[
            ("member_id", "12345"),
            ("from_account", "S-12345-01"),
            ("to_account", "C-12345-02"),
            ("amount", "10.00"),
        ]),
    );
    request.allow_irreversible = true;
    let (report, _) = harness.run(&surface, request).await;
    let error = report.unwrap().result.error.unwrap();
    assert_eq!(error.code, FailureCode::PolicyDenied);
    assert!(
        error.message.contains("no approval is recorded"),
        "{}",
        error.message
    );
    assert_eq!(surface.calls(), Vec::<String>::new());
}
