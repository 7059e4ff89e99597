//! Integration tests of the evidence bus, the chain verifier, the redactor, the secret resolver
//! and the run-record projection.

mod anchoring;
mod chain;
mod fuzz;
mod intents;
mod paths;
mod projection;
mod redaction;
mod secrets;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use cua_artifact::{
    ActionKind, Actor, CapabilityRef, ContentHash, EffectVerdict, Identifier, ObservationClass,
    ResolutionStrategy, RiskTier, RunKind, RunStatus, TenantId,
};
use cua_evidence::{
    Authorize, Classify, Dispatch, Effect, EvidenceBus, Lease, LeaseTransition, Note, Observe,
    Redactor, Resolve, RunEnd, RunId, RunStart, SteppingClock, Timestamp, Verify,
};
use cua_snapshot::{NodeId, NodeScope, UiNode, UiSnapshot};
use serde_json::json;

/// The policy's redaction rules, as the reference policy file declares them.
const POLICY_RULES: [(&str, &str); 5] = [
    ("ssn", r"\b\d{3}-\d{2}-\d{4}\b"),
    ("card_pan", r"\b(?:\d[ -]?){13,19}\b"),
    ("account_number", r"\b\d{8,17}\b"),
    ("email", r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[a-zA-Z]{2,}"),
    ("phone", r"\b\(?\d{3}\)?[ -]?\d{3}[ -]?\d{4}\b"),
];

fn policy_redactor() -> Redactor {
    Redactor::new(POLICY_RULES).expect("the policy rules compile")
}

/// A clock starting at 2026-09-30T22:07:14Z that advances 1.5 ms per reading.
fn clock() -> Arc<SteppingClock> {
    let start = Timestamp::parse("2026-09-30T22:07:14.000000Z").expect("a valid timestamp");
    Arc::new(SteppingClock::new(start, 1_500))
}

fn bus(root: &Path, run_id: &str, redactor: Redactor) -> EvidenceBus {
    EvidenceBus::create(
        root,
        RunId::parse(run_id).expect("a valid run id"),
        clock(),
        redactor,
    )
    .expect("a fresh run directory")
}

fn id(text: &str) -> Identifier {
    Identifier::parse(text).expect("a valid identifier")
}

fn capability() -> CapabilityRef {
    CapabilityRef::parse("corebank.member.savings_balance@1.0.0").expect("a valid reference")
}

fn content_hash() -> ContentHash {
    ContentHash::of_bytes(b"corebank.member.savings_balance@1.0.0")
}

/// A small page: the member search form of the fixture app.
fn snapshot(member_number: &str) -> UiSnapshot {
    let node = |path: &str, role: &str, name: &str, value: Option<&str>, depth: u32| UiNode {
        id: NodeId::new(path),
        role: role.into(),
        name: name.into(),
        value: value.map(Into::into),
        states: vec![],
        bounds: None,
        scope: NodeScope {
            frame: Some("content".into()),
            region: None,
        },
        depth,
        parent: (depth > 0).then_some(0),
        children: vec![],
        css_hint: None,
        labels: Vec::new(),
    };
    let mut nodes = vec![
        node("content:/document[0]", "document", "Member Search", None, 0),
        node(
            "content:/document[0]/textbox[0]",
            "textbox",
            "Member Number",
            Some(member_number),
            1,
        ),
        node(
            "content:/document[0]/button[0]",
            "button",
            "Search",
            None,
            1,
        ),
    ];
    nodes[0].children = vec![1, 2];
    UiSnapshot {
        url: "http://127.0.0.1:8811/search".into(),
        title: "MemberDesk".into(),
        http_status: Some(200),
        nodes,
    }
}

/// One decision, authorized and dispatched, for `step` under `epoch`.
fn act(
    bus: &EvidenceBus,
    actor: Actor,
    epoch: u64,
    step: &str,
    decision: &str,
    action: ActionKind,
    target: Option<(&str, ResolutionStrategy, ResolutionStrategy)>,
) {
    let node_id = target.map(|(node, _, _)| NodeId::new(node));
    if let Some((node, recorded, used)) = target {
        bus.emit(
            actor,
            epoch,
            Resolve {
                step: Some(id(step)),
                target: format!("{} in frame content", action.as_str()),
                resolved: true,
                node_id: Some(NodeId::new(node)),
                strategy: Some(used),
                strategy_recorded: Some(recorded),
                candidates_considered: 1,
                ..Resolve::default()
            },
        )
        .expect("resolve is written");
    }
    bus.emit(
        actor,
        epoch,
        Authorize {
            step: Some(id(step)),
            decision_id: decision.into(),
            granted: true,
            action_type: action,
            risk: RiskTier::Safe,
            signals: vec![],
            reason: "safe (default)".into(),
            denial: None,
            approval: None,
            node_id: node_id.clone(),
        },
    )
    .expect("authorize is written");
    bus.emit(
        actor,
        epoch,
        Dispatch {
            step: Some(id(step)),
            decision_id: decision.into(),
            action_type: action,
            node_id,
            refused: false,
            ok: true,
            navigated: action == ActionKind::Navigate,
            http_status: None,
            duration_ms: 12,
            message: String::new(),
            reason: None,
            expected_epoch: None,
        },
    )
    .expect("dispatch is written");
}

/// A realistic replay of the savings-balance capability: navigation, typing the member number,
/// a stale-epoch dispatch refused after an operator claimed the session, the operator's own
/// action, the handback, the search with drift, the effect verdicts and the run end.
fn replay_run(bus: &EvidenceBus) {
    replay_steps(bus);
    end_run(bus);
}

/// The events of [`replay_run`] before its `run_end`.
fn replay_steps(bus: &EvidenceBus) {
    let system = Actor::System;
    let automation = Actor::Automation;
    bus.emit(
        automation,
        0,
        RunStart {
            kind: RunKind::Replay,
            capability: Some(capability()),
            content_hash: Some(content_hash()),
            sealed_hash: None,
            bound_by: None,
            tenant: Some(TenantId::parse("northgate-fcu").expect("a valid tenant")),
            inputs: BTreeMap::from([("member_id".to_owned(), json!("12345"))]),
            goal: None,
            target_url: None,
            model: None,
            scripted_model: None,
            resolver_config_hash: None,
        },
    )
    .expect("run_start is written");
    bus.emit(
        automation,
        1,
        Lease {
            transition: LeaseTransition::Acquired,
            holder: automation,
            operator: None,
            intervention: None,
            human_actions: None,
            human_delta: None,
            values_changed: vec![],
        },
    )
    .expect("lease is written");
    act(
        bus,
        automation,
        1,
        "open_search",
        "dec-000001",
        ActionKind::Navigate,
        None,
    );
    let page = snapshot("");
    let written = bus
        .write_snapshot("open_search", &page)
        .expect("snapshot is written");
    bus.emit(system, 0, Observe::of(&page, Some(written)))
        .expect("observe is written");
    bus.emit(
        automation,
        1,
        Classify {
            step: id("enter_member_id"),
            observation: ObservationClass::Expected,
            reason: "precondition holds".into(),
            matched: None,
        },
    )
    .expect("classify is written");
    act(
        bus,
        automation,
        1,
        "enter_member_id",
        "dec-000002",
        ActionKind::Type,
        Some((
            "content:/document[0]/textbox[0]",
            ResolutionStrategy::SemanticExact,
            ResolutionStrategy::SemanticExact,
        )),
    );
    bus.emit(
        automation,
        1,
        Effect {
            step: id("enter_member_id"),
            verdict: EffectVerdict::Confirmed,
            reason: "the textbox holds the typed value".into(),
            decision_id: Some("dec-000002".into()),
            route: Some(cua_artifact::RouteTrace {
                operator: "browser-semantic".into(),
                provider: "cdp-browser".into(),
                physical_action: "dom_type".into(),
                selected_by: "exact target evidence: browser renderer".into(),
                strategy: "none".into(),
                max_attempts: 1,
                attempts: 1,
                path: vec!["planned".into(), "dispatched".into(), "confirmed".into()],
                failures: vec![],
            }),
            undispatched: None,
            screenshot_ref: None,
            screenshot_digest: None,
        },
    )
    .expect("effect is written");
    // An operator claims the session: the next automation dispatch, authorized at epoch 1, is
    // refused at the dispatch and never becomes a step.
    bus.emit(
        Actor::Human,
        2,
        Lease {
            transition: LeaseTransition::Claimed,
            holder: Actor::Human,
            operator: Some("demo-operator".into()),
            intervention: Some("int-5893805d05".into()),
            human_actions: None,
            human_delta: None,
            values_changed: vec![],
        },
    )
    .expect("lease is written");
    bus.emit(
        automation,
        1,
        Dispatch {
            step: Some(id("submit_search")),
            decision_id: "dec-000003".into(),
            action_type: ActionKind::Click,
            node_id: None,
            refused: true,
            ok: false,
            navigated: false,
            http_status: None,
            duration_ms: 0,
            message: String::new(),
            reason: Some("lease epoch 1 is stale: the session is at epoch 2".into()),
            expected_epoch: Some(2),
        },
    )
    .expect("refused dispatch is written");
    act(
        bus,
        Actor::Human,
        2,
        "submit_search",
        "dec-000004",
        ActionKind::RawInput,
        None,
    );
    bus.emit(
        Actor::Human,
        3,
        Lease {
            transition: LeaseTransition::Released,
            holder: automation,
            operator: Some("demo-operator".into()),
            intervention: Some("int-5893805d05".into()),
            human_actions: Some(1),
            human_delta: Some("+12/-0 nodes".into()),
            values_changed: vec![NodeId::new("content:/document[0]/textbox[0]")],
        },
    )
    .expect("lease is written");
    bus.emit(
        automation,
        4,
        Lease {
            transition: LeaseTransition::Resumed,
            holder: automation,
            operator: None,
            intervention: None,
            human_actions: None,
            human_delta: None,
            values_changed: vec![],
        },
    )
    .expect("lease is written");
    act(
        bus,
        automation,
        4,
        "open_details",
        "dec-000005",
        ActionKind::Click,
        Some((
            "content:/document[0]/table[0]/row[1]/link[0]",
            ResolutionStrategy::SemanticExact,
            ResolutionStrategy::StructuralAnchor,
        )),
    );
    bus.emit(
        automation,
        4,
        Verify {
            step: id("open_details"),
            postcondition: "heading named \"Member Details\" exists".into(),
            holds: true,
            observed: None,
            snapshot_ref: None,
        },
    )
    .expect("verify is written");
    bus.emit(
        automation,
        4,
        Effect {
            step: id("open_details"),
            verdict: EffectVerdict::Confirmed,
            reason: "postcondition observed".into(),
            decision_id: Some("dec-000005".into()),
            route: None,
            undispatched: None,
            screenshot_ref: None,
            screenshot_digest: None,
        },
    )
    .expect("effect is written");
    // A read from the snapshot: resolved, never dispatched.
    bus.emit(
        automation,
        4,
        Resolve {
            step: Some(id("read_balance")),
            target: "the savings balance cell in the accounts table".into(),
            resolved: true,
            node_id: Some(NodeId::new("n42")),
            strategy: Some(ResolutionStrategy::SemanticExact),
            strategy_recorded: Some(ResolutionStrategy::SemanticExact),
            candidates_considered: 1,
            ..Resolve::default()
        },
    )
    .expect("resolve is written");
    bus.emit(
        automation,
        4,
        Effect {
            step: id("read_balance"),
            verdict: EffectVerdict::NotApplicable,
            reason: "a read from the snapshot".into(),
            decision_id: None,
            route: None,
            undispatched: Some(ActionKind::Extract),
            screenshot_ref: None,
            screenshot_digest: None,
        },
    )
    .expect("effect is written");
    bus.emit(
        automation,
        0,
        Note {
            note: "outputs extracted".into(),
            data: BTreeMap::from([("outputs".to_owned(), json!(["savings_balance"]))]),
        },
    )
    .expect("note is written");
}

/// The `run_end` of [`replay_run`]: a success with one output.
fn end_run(bus: &EvidenceBus) {
    bus.emit(
        Actor::Automation,
        0,
        RunEnd {
            outputs: BTreeMap::from([("savings_balance".to_owned(), json!("$4,210.55"))]),
            effect: Some(EffectVerdict::Confirmed),
            steps_executed: Some(4),
            steps_total: Some(4),
            ..RunEnd::with_status(RunStatus::Success)
        },
    )
    .expect("run_end is written");
}

/// Reads a file of the run as text.
fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("the file is readable")
}

/// An observer (a progress display) is told the name of every event once it is in the trace,
/// in the trace's order, and nothing more.
#[test]
fn an_observer_hears_every_event_name_in_trace_order() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let ear = Arc::clone(&heard);
    let bus =
        bus(root.path(), "observed", policy_redactor()).with_observer(Arc::new(move |event| {
            ear.lock().expect("the list").push(event)
        }));
    replay_run(&bus);
    let trace = read(&bus.dir().join("trace.jsonl"));
    let written: Vec<String> = trace
        .lines()
        .map(|line| {
            let line: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            line["event"].as_str().expect("an event name").to_owned()
        })
        .collect();
    let heard = heard.lock().expect("the list").clone();
    assert_eq!(heard, written);
    assert!(heard.contains(&"dispatch") && heard.last() == Some(&"run_end"));
}
