//! What becomes of a proposal, against MemberDesk in real Chromium with a canned model: an
//! assist makes exactly one call, never dispatches, refuses to navigate, refuses any action but
//! the stopped step's own, and lets the policy refuse, as the agent, a target whose name says it
//! moves money.

use cua_artifact::{ActionKind, FailureCode, RunStatus, StepId};
use cua_assist::Decision;
use memberdesk::Variant;
use serde_json::json;

use crate::support::{Canned, Scene, capability, inputs, transfers};

/// The refusal code, or `accepted`.
fn decision(outcome: &cua_assist::AssistOutcome) -> String {
    match &outcome.decision {
        Decision::Accepted(_) => "accepted".to_owned(),
        Decision::Refused { code, .. } => code.clone(),
    }
}

fn events(dir: &std::path::Path) -> Vec<cua_evidence::TraceLine> {
    let lines = cua_evidence::read_trace(dir).unwrap();
    assert!(
        cua_evidence::verify(dir).unwrap().is_intact(),
        "the assist's trace verifies"
    );
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relabelled_read_is_proposed_navigation_and_other_actions_are_refused() {
    let scene = Scene::start(Variant::NorthgateFcu).await;
    let prepared = scene.prepared(capability("corebank.member.savings_balance@1.0.0"), None);
    let member = inputs(&[("member_id", "12345")]);
    let stopped = scene.replay(&prepared, &member).await;
    let error = stopped.result.error.clone().unwrap();
    assert_eq!(
        (
            stopped.result.status,
            error.code,
            error.step_id.as_ref().map(StepId::as_str)
        ),
        (
            RunStatus::NeedsHuman,
            FailureCode::UnexpectedState,
            Some("read_balance")
        ),
        "northgate's \"Savings Bal.\" fails the artifact's precondition"
    );

    // A model that wants to go somewhere else is refused before anything is judged.
    let model = Canned::new("navigate", json!({ "url": "http://127.0.0.1:1/elsewhere" }));
    let outcome = scene.assist(&prepared, &stopped, &member, &model).await;
    assert_eq!(decision(&outcome), "navigation_refused");
    assert_eq!(model.calls(), 1);
    assert!(outcome.candidate().is_none());
    assert!(
        !outcome
            .evidence_dir
            .join(cua_assist::CANDIDATE_FILE)
            .exists()
    );

    // A model that proposes a different action than the step's own is refused.
    let model = Canned::new(
        "click",
        json!({ "target": { "role": "link", "name": "Transfer Funds" } }),
    );
    let outcome = scene.assist(&prepared, &stopped, &member, &model).await;
    assert_eq!(decision(&outcome), "not_the_step_action");

    // A model that gives up gives up.
    let model = Canned::new("give_up", json!({ "reason": "nothing looks like it" }));
    let outcome = scene.assist(&prepared, &stopped, &member, &model).await;
    assert_eq!(decision(&outcome), "gave_up");

    // The value cell beside "Savings Bal." is accepted, found by its new label, with the
    // precondition relabelled; a read is never authorized and nothing is dispatched.
    let model = Canned::beside("extract", "Savings Bal.");
    let outcome = scene.assist(&prepared, &stopped, &member, &model).await;
    assert_eq!(decision(&outcome), "accepted", "{:?}", outcome.decision);
    let candidate = outcome.candidate().unwrap();
    assert_eq!(candidate.decision_id, None, "a read is never authorized");
    let anchor = candidate.target.anchor.as_ref().unwrap();
    assert_eq!(anchor.text, "Savings Bal.");
    let query = serde_json::to_value(candidate.precondition.as_ref().unwrap()).unwrap();
    assert_eq!(query["query"]["name"], "Savings Bal.");
    let text = std::fs::read_to_string(&candidate.path).unwrap();
    let binding = cua_artifact::TenantBinding::from_yaml(&text).unwrap();
    assert!(
        binding.vars.is_empty(),
        "the invocation's base URL is left out"
    );
    assert_eq!(binding.overrides.len(), 1);
    let prompt = &model.requests.lock().unwrap()[0];
    assert_eq!(
        prompt
            .tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect::<Vec<_>>(),
        ["click", "type", "select", "extract", "give_up"]
    );
    let lines = events(&outcome.evidence_dir);
    let llm_calls = lines
        .iter()
        .filter(|line| line.event.name() == "llm_call")
        .count();
    assert_eq!(llm_calls, 1);
    assert!(
        lines.iter().all(|line| line.event.name() != "dispatch"),
        "an assist never dispatches"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_to_press_an_irreversible_button_is_refused_by_the_policy_as_the_agent() {
    let scene = Scene::start(Variant::FirstValley).await;
    // The transfer flow up to its review page, then a confirm step whose button does not exist
    // ("Complete Transfer"), declared safe: the review page's real confirm button is named
    // "Transfer Funds", which the policy's lexicon reads as irreversible.
    let mut transfer = capability("corebank.member.transfer_funds@1.0.0");
    let review = transfer
        .steps
        .iter()
        .position(|step| step.id.as_str() == "review_transfer")
        .unwrap();
    transfer.steps.truncate(review + 1);
    let mut confirm = transfer.steps[review].clone();
    confirm.id = StepId::parse("confirm_transfer").unwrap();
    confirm.description = "Confirm the transfer.".to_owned();
    confirm.precondition = None;
    confirm.postcondition = None;
    if let Some(target) = confirm.action.target_mut() {
        target.name = Some(cua_artifact::NameMatch {
            value: "Complete Transfer".to_owned(),
            match_mode: cua_artifact::MatchMode::Exact,
        });
    }
    transfer.steps.push(confirm);
    let kept: Vec<String> = transfer
        .steps
        .iter()
        .map(|step| step.id.to_string())
        .collect();
    transfer
        .outputs
        .retain(|output| kept.iter().any(|step| *step == output.source.step.as_str()));
    transfer.content_hash = Some(transfer.compute_hash());
    let prepared = scene.prepared(transfer, None);
    let request = inputs(&[
        ("member_id", "12345"),
        ("from_account", "S-12345-01"),
        ("to_account", "C-12345-02"),
        ("amount", "25.00"),
    ]);
    let stopped = scene.replay(&prepared, &request).await;
    let error = stopped.result.error.clone().unwrap();
    assert_eq!(
        (error.code, error.step_id.as_ref().map(StepId::as_str)),
        (FailureCode::TargetNotFound, Some("confirm_transfer")),
        "{:?}",
        stopped.result
    );
    let model = Canned::new(
        "click",
        json!({ "target": { "role": "button", "name": "Transfer Funds" } }),
    );
    let outcome = scene.assist(&prepared, &stopped, &request, &model).await;
    assert_eq!(
        decision(&outcome),
        "policy_denied",
        "{:?}",
        outcome.decision
    );
    assert_eq!(model.calls(), 1);
    let lines = events(&outcome.evidence_dir);
    let denied = lines
        .iter()
        .find(|line| line.event.name() == "authorize")
        .unwrap();
    assert_eq!(denied.actor, cua_artifact::Actor::Agent);
    let payload = serde_json::to_value(&denied.event).unwrap();
    assert_eq!(payload["granted"], false, "{payload}");
    assert_eq!(payload["risk"], "irreversible", "{payload}");
    assert!(lines.iter().all(|line| line.event.name() != "dispatch"));
    assert_eq!(transfers(&scene), 0, "no money moved");
    assert_eq!(
        cua_assist::assistable(&prepared.capability, &stopped)
            .unwrap()
            .action,
        ActionKind::Click
    );
}
