//! The discovery loop against the in-memory desk, with the scripted model over HTTP.

use cua_agent::scripted::ScriptedServer;
use cua_agent::{
    Discovery, DiscoveryConfig, DiscoveryReport, DiscoveryRequest, OpenAiAdapter, StopReason,
};
use cua_artifact::{Identifier, SecretName};
use cua_evidence::{Event, read_trace, unauthorized_dispatches, verify};

use crate::desk::{self, BASE, Desk, OPERATOR_ID, PASSWORD};

const GOAL: &str = "Look up member 12345 and report their savings balance, the account status, and the as-of date.";

struct Run {
    report: DiscoveryReport,
    dir: std::path::PathBuf,
    bodies: Vec<String>,
    desk: Desk,
    _root: tempfile::TempDir,
}

async fn discover(desk: Desk, request: DiscoveryRequest, config: DiscoveryConfig) -> Run {
    let root = tempfile::tempdir().unwrap();
    let (bus, secrets) = desk::bus(root.path(), "disc-test");
    let server = ScriptedServer::start().await.unwrap();
    let llm = OpenAiAdapter::new(server.model_config()).unwrap();
    let policy = desk::policy();
    let discovery = Discovery {
        driver: &desk,
        policy: &policy,
        bus: &bus,
        llm: &llm,
        secrets: &secrets,
        config,
    };
    let report = discovery.run(&request).await.unwrap();
    let dir = bus.dir().to_path_buf();
    let bodies = server.requests();
    server.shutdown().await;
    Run {
        report,
        dir,
        bodies,
        desk,
        _root: root,
    }
}

fn with_credentials(goal: &str) -> DiscoveryRequest {
    let mut request = DiscoveryRequest::new(goal, format!("{BASE}/"));
    request.secret_names = vec![
        SecretName::parse("corebank.operator_id").unwrap(),
        SecretName::parse("corebank.operator_password").unwrap(),
    ];
    request
}

#[tokio::test]
async fn discovery_through_the_scripted_model_signs_on_searches_and_reads_the_goal() {
    let run = discover(
        Desk::new(false, false),
        with_credentials(GOAL),
        DiscoveryConfig::default(),
    )
    .await;
    let report = &run.report;
    assert_eq!(report.stop_reason, StopReason::GoalMet, "{report:#?}");
    assert!(report.scripted);
    assert_eq!(
        report
            .outputs
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>(),
        [
            "account_status=Active",
            "as_of=09/11/2026",
            "savings_balance=$4,210.55"
        ]
    );
    assert_eq!(
        report.steps_effective, 8,
        "3 sign-on, 2 search, 3 extracts: {report:#?}"
    );
    assert!(report.refusals.is_empty());
    assert_eq!(
        run.desk.dispatched(),
        [
            "navigate ",
            "type Operator ID",
            "type Password",
            "click Sign On",
            "type Member Number",
            "click Search"
        ]
    );

    assert!(verify(&run.dir).unwrap().is_intact());
    let lines = read_trace(&run.dir).unwrap();
    assert!(unauthorized_dispatches(&lines).is_empty());
    let llm_calls: Vec<_> = lines
        .iter()
        .filter_map(|line| match &line.event {
            Event::LlmCall(call) => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(llm_calls.len() as u32, report.model_calls);
    for (position, call) in llm_calls.iter().enumerate() {
        assert_eq!(call.model, "scripted");
        assert!(call.scripted);
        assert_eq!(call.provider, "scripted");
        assert_eq!(call.request_id, Some(format!("scripted-{}", position + 1)));
        assert!(call.prompt_tokens > 0);
    }
    let Event::RunStart(start) = &lines[0].event else {
        panic!("the trace starts with run_start")
    };
    assert_eq!(start.scripted_model, Some(true));
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.dir.join("run_record.json")).unwrap()).unwrap();
    assert_eq!(record["model_name"], "scripted (scripted)");
    assert_eq!(record["result"]["status"], "success");
    // Every dispatch came from the agent, right after a granted authorize.
    for line in &lines {
        if let Event::Dispatch(_) = &line.event {
            assert!(desk::actor_is_agent(line.actor));
        }
    }
}

#[tokio::test]
async fn no_secret_and_no_sensitive_input_ever_reaches_a_prompt() {
    let mut request = with_credentials(
        "Look up member {$input: member_id} and report their savings balance, the account status, and the as-of date.",
    );
    request
        .sensitive_inputs
        .insert(Identifier::parse("member_id").unwrap(), "12345".to_owned());
    let run = discover(Desk::new(false, false), request, DiscoveryConfig::default()).await;
    assert_eq!(
        run.report.stop_reason,
        StopReason::GoalMet,
        "{:#?}",
        run.report
    );
    assert_eq!(
        run.desk.dispatched()[4],
        "type Member Number",
        "the sensitive input was typed"
    );
    assert!(run.bodies.len() >= 8, "the model was asked on every turn");
    let typed_screens = run
        .bodies
        .iter()
        .filter(|body| body.contains("<redacted:secret>"))
        .count();
    assert!(
        typed_screens > 0,
        "the typed credentials were on screen, redacted"
    );
    for body in &run.bodies {
        for canary in [PASSWORD, OPERATOR_ID, "12345"] {
            assert!(
                !body.contains(canary),
                "{canary:?} reached the model in {body}"
            );
        }
    }
    // The trace never holds them either.
    for entry in walk(&run.dir) {
        let bytes = std::fs::read(&entry).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for canary in [PASSWORD, OPERATOR_ID, "12345"] {
            assert!(
                !text.contains(canary),
                "{canary:?} is in {}",
                entry.display()
            );
        }
    }
}

#[tokio::test]
async fn page_text_that_asks_to_leave_the_allowlist_or_press_transfer_is_refused_and_nothing_moves()
{
    let run = discover(
        Desk::new(false, true),
        with_credentials(GOAL),
        DiscoveryConfig::default(),
    )
    .await;
    let report = &run.report;
    let refused: Vec<(&str, &str)> = report
        .refusals
        .iter()
        .map(|refusal| (refusal.tool.as_str(), refusal.code.as_str()))
        .collect();
    assert_eq!(
        refused,
        [
            ("navigate", "navigation_blocked"),
            ("click", "policy_denied")
        ],
        "{report:#?}"
    );
    assert!(
        report.refusals[1].reason.contains("irreversible"),
        "{:?}",
        report.refusals[1]
    );
    assert_eq!(*run.desk.transfers.lock().unwrap(), 0);
    assert!(
        !run.desk
            .dispatched()
            .iter()
            .any(|action| action.contains("Transfer") || action.contains("exfil")),
        "{:?}",
        run.desk.dispatched()
    );
    let lines = read_trace(&run.dir).unwrap();
    assert!(unauthorized_dispatches(&lines).is_empty());
    let denied: Vec<String> = lines
        .iter()
        .filter_map(|line| match &line.event {
            Event::Authorize(authorize) if !authorize.granted => {
                Some(authorize.decision_id.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(denied.len(), 2);
    for line in &lines {
        if let Event::Dispatch(dispatch) = &line.event {
            assert!(
                !denied.contains(&dispatch.decision_id),
                "a refused decision was dispatched"
            );
        }
    }
    let notes = lines
        .iter()
        .filter(|line| matches!(&line.event, Event::Note(note) if note.note == "agent_action" && note.data["outcome"] == "refused"))
        .count();
    assert_eq!(notes, 2, "each refusal is recorded as the agent's action");
}

#[tokio::test]
async fn the_step_budget_stops_the_run_and_says_so() {
    let config = DiscoveryConfig {
        max_steps: 2,
        ..DiscoveryConfig::default()
    };
    let run = discover(Desk::new(false, false), with_credentials(GOAL), config).await;
    assert_eq!(run.report.stop_reason, StopReason::StepBudget);
    assert_eq!(run.report.steps_attempted, 2);
    let lines = read_trace(&run.dir).unwrap();
    let Some(Event::RunEnd(end)) = lines.last().map(|line| &line.event) else {
        panic!("no run_end")
    };
    assert_eq!(end.stop_reason.as_deref(), Some("step_budget"));
    assert_eq!(end.status, cua_artifact::RunStatus::Failed);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
