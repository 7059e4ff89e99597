//! The run record is a projection of the trace: steps, authorization, drift, effects, the
//! lease and the result all come from the lines.

use std::collections::BTreeMap;

use cua_artifact::{
    ActionKind, Actor, EffectVerdict, FailureCode, ObservationClass, ResolutionStrategy, RiskTier,
    RunKind, RunStatus,
};
use cua_evidence::{
    Authorize, Classify, Dispatch, Effect, Escalate, EvidenceBus, EvidenceError, Note, Recovery,
    Resolve, RunEnd, RunStart, TraceLine, project, read_trace, unauthorized_dispatches, verify,
};
use cua_snapshot::NodeId;

use crate::{act, bus, id, policy_redactor, read, replay_run};

#[test]
fn a_replay_projects_into_its_run_record() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-replay", policy_redactor());
    replay_run(&bus);
    let record = bus.finish().expect("the run record is written");

    // Five steps: the refused stale-epoch dispatch is not one of them; the read, which
    // dispatched nothing, is, and is not counted as an unauthorized dispatch.
    let steps: Vec<(&str, Actor, u64, bool)> = record
        .steps
        .iter()
        .map(|step| {
            (
                step.step_id.as_str(),
                step.actor,
                step.lease_epoch,
                step.authorized,
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("open_search", Actor::Automation, 1, true),
            ("enter_member_id", Actor::Automation, 1, true),
            ("submit_search", Actor::Human, 2, true),
            ("open_details", Actor::Automation, 4, true),
            ("read_balance", Actor::Automation, 4, false),
        ]
    );
    let extract = &record.steps[4];
    assert!(extract.undispatched);
    assert_eq!(extract.action_type, ActionKind::Extract);
    assert_eq!(
        extract
            .resolution
            .as_ref()
            .map(|resolution| resolution.strategy_used),
        Some(Some(ResolutionStrategy::SemanticExact)),
        "the read keeps its own resolution"
    );
    assert_eq!(record.unauthorized_dispatches(), 0);
    assert_eq!(record.human_actions, 1);
    assert_eq!(
        record.drift_score(),
        1.0 / 3.0,
        "one of three resolutions drifted"
    );
    let result = record.result.as_ref().expect("the run ended");
    assert_eq!(result.status, RunStatus::Success);
    assert_eq!(result.drift_score, 1.0 / 3.0);
    assert_eq!(
        result.strategy_mix,
        BTreeMap::from([
            (ResolutionStrategy::SemanticExact, 2),
            (ResolutionStrategy::StructuralAnchor, 1),
        ])
    );
    assert_eq!(
        record
            .steps
            .iter()
            .map(|step| step.effect)
            .collect::<Vec<_>>(),
        [
            EffectVerdict::Unverifiable,
            EffectVerdict::Confirmed,
            EffectVerdict::Unverifiable,
            EffectVerdict::Confirmed,
            EffectVerdict::NotApplicable,
        ],
        "a receipt alone is unverifiable; only an observed postcondition confirms"
    );

    // What is written is what is projected, and projecting the trace again gives the same.
    let written = read(&bus.dir().join("run_record.json"));
    let lines = read_trace(bus.dir()).expect("the trace parses");
    let again = project(&lines).expect("a projection");
    assert_eq!(again, record);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&written).expect("JSON"),
        serde_json::to_value(&record).expect("serializable")
    );
    insta::assert_snapshot!("replay_run_record", written);
}

/// Emits a bare run start so the projection has a run to project.
fn start(bus: &EvidenceBus) {
    bus.emit(
        Actor::Automation,
        0,
        RunStart {
            kind: RunKind::Replay,
            capability: None,
            content_hash: None,
            sealed_hash: None,
            bound_by: None,
            tenant: None,
            inputs: BTreeMap::new(),
            goal: None,
            target_url: None,
            model: None,
            scripted_model: None,
            resolver_config_hash: None,
        },
    )
    .expect("written");
}

fn dispatch(step: &str, decision: &str) -> Dispatch {
    Dispatch {
        step: Some(id(step)),
        decision_id: decision.into(),
        action_type: ActionKind::Click,
        node_id: None,
        refused: false,
        ok: true,
        navigated: false,
        http_status: None,
        duration_ms: 5,
        message: String::new(),
        reason: None,
        expected_epoch: None,
    }
}

fn authorize(decision: &str, granted: bool) -> Authorize {
    Authorize {
        step: None,
        decision_id: decision.into(),
        granted,
        action_type: ActionKind::Click,
        risk: RiskTier::Safe,
        signals: vec![],
        reason: if granted { "safe (default)" } else { "denied" }.into(),
        denial: (!granted).then(|| "not_allowlisted".to_owned()),
        approval: None,
        node_id: None,
    }
}

#[test]
fn a_dispatch_is_authorized_only_by_a_granted_decision_of_the_same_actor_and_epoch() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-authority", policy_redactor());
    start(&bus);
    let automation = Actor::Automation;
    // Authorized properly.
    bus.emit(automation, 1, authorize("dec-000001", true))
        .expect("written");
    bus.emit(automation, 1, dispatch("a", "dec-000001"))
        .expect("written");
    // Never authorized.
    bus.emit(automation, 1, dispatch("b", "dec-000002"))
        .expect("written");
    // Denied, dispatched anyway.
    bus.emit(automation, 1, authorize("dec-000003", false))
        .expect("written");
    bus.emit(automation, 1, dispatch("c", "dec-000003"))
        .expect("written");
    // Authorized at epoch 1, dispatched after the session changed hands.
    bus.emit(automation, 1, authorize("dec-000004", true))
        .expect("written");
    bus.emit(automation, 3, dispatch("d", "dec-000004"))
        .expect("written");
    // Authorized for automation, dispatched as a human.
    bus.emit(automation, 3, authorize("dec-000005", true))
        .expect("written");
    bus.emit(Actor::Human, 3, dispatch("e", "dec-000005"))
        .expect("written");
    // Authorized after the fact.
    bus.emit(automation, 3, dispatch("f", "dec-000006"))
        .expect("written");
    bus.emit(automation, 3, authorize("dec-000006", true))
        .expect("written");
    // Refused at the dispatch: not a dispatch at all.
    bus.emit(
        automation,
        3,
        Dispatch {
            refused: true,
            ok: false,
            reason: Some("stale epoch".into()),
            expected_epoch: Some(4),
            ..dispatch("g", "dec-000007")
        },
    )
    .expect("written");

    let lines = read_trace(bus.dir()).expect("parses");
    let unauthorized: Vec<&str> = unauthorized_dispatches(&lines)
        .into_iter()
        .map(|line: &TraceLine| match &line.event {
            cua_evidence::Event::Dispatch(dispatch) => dispatch.decision_id.as_str(),
            _ => unreachable!("only dispatches are reported"),
        })
        .collect();
    assert_eq!(
        unauthorized,
        [
            "dec-000002",
            "dec-000003",
            "dec-000004",
            "dec-000005",
            "dec-000006"
        ]
    );
    let record = project(&lines).expect("a projection");
    let authorized: Vec<(&str, bool, &str)> = record
        .steps
        .iter()
        .map(|step| {
            (
                step.step_id.as_str(),
                step.authorized,
                step.policy_decision.as_str(),
            )
        })
        .collect();
    assert_eq!(
        authorized,
        [
            ("a", true, "dec-000001: safe (default)"),
            (
                "b",
                false,
                "dec-000002: no authorization precedes this dispatch"
            ),
            ("c", false, "dec-000003: denied"),
            ("d", false, "dec-000004: safe (default)"),
            ("e", false, "dec-000005: safe (default)"),
            (
                "f",
                false,
                "dec-000006: no authorization precedes this dispatch"
            ),
        ]
    );
    assert_eq!(record.unauthorized_dispatches(), 5);
    assert!(record.result.is_none(), "no run_end, no result");
}

#[test]
fn a_resolution_belongs_to_the_dispatch_of_its_own_step() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-resolutions", policy_redactor());
    start(&bus);
    act(
        &bus,
        Actor::Automation,
        1,
        "click_search",
        "dec-000001",
        ActionKind::Click,
        Some((
            "content:/button[0]",
            ResolutionStrategy::SemanticExact,
            ResolutionStrategy::SemanticNormalized,
        )),
    );
    // A navigation right after: it must not inherit the click's resolution.
    act(
        &bus,
        Actor::Automation,
        1,
        "go_home",
        "dec-000002",
        ActionKind::Navigate,
        None,
    );
    let record = project(&read_trace(bus.dir()).expect("parses")).expect("a projection");
    let resolution = record.steps[0].resolution.as_ref().expect("resolved");
    assert_eq!(
        resolution.resolved_node_id.as_deref(),
        Some("content:/button[0]")
    );
    assert!(resolution.drifted());
    assert_eq!(record.steps[1].resolution, None);
    assert_eq!(record.drift_score(), 1.0);
}

#[test]
fn failures_and_escalations_project_into_the_result() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-ambiguous", policy_redactor());
    start(&bus);
    // A transient error page first: a declared recovery rule reloads, through the chokepoint.
    bus.emit(
        Actor::Automation,
        1,
        Classify {
            step: id("read_balance"),
            observation: ObservationClass::Recoverable,
            reason: "recovery rule 'transient_load'".into(),
            matched: Some(id("transient_load")),
        },
    )
    .expect("written");
    bus.emit(
        Actor::Automation,
        1,
        Recovery {
            step: Some(id("read_balance")),
            rule: id("transient_load"),
            attempt: 1,
            max_attempts: 3,
            remedy: Some("reload".into()),
            capability: None,
            content_hash: None,
        },
    )
    .expect("written");
    act(
        &bus,
        Actor::Automation,
        1,
        "read_balance",
        "dec-000001",
        ActionKind::Reload,
        None,
    );
    bus.emit(
        Actor::Automation,
        1,
        Resolve {
            step: Some(id("read_balance")),
            target: "cell adjacent_to \"Savings Balance\"".into(),
            resolved: false,
            candidates_considered: 2,
            failure_code: Some(FailureCode::TargetAmbiguous),
            reason: Some("2 candidates on semantic_exact".into()),
            strategies_tried: vec![ResolutionStrategy::SemanticExact],
            candidates: vec![
                "cell \"$4,210.55\" in row 3".into(),
                "cell \"$4,210.55\" in row 9".into(),
            ],
            node_id: Some(NodeId::new("content:/row[3]/cell[1]")),
            ..Resolve::default()
        },
    )
    .expect("written");
    let screenshot = bus
        .write_screenshot("target_ambiguous", b"\x89PNG painted")
        .expect("written");
    bus.emit(
        Actor::System,
        2,
        Escalate {
            step: Some(id("read_balance")),
            step_index: Some(3),
            status: Some(RunStatus::NeedsHuman),
            failure_code: Some(FailureCode::TargetAmbiguous),
            reason: "two cells match; a human must choose".into(),
            intervention: Some("int-000001".into()),
            screenshot_ref: Some(screenshot.path),
            screenshot_digest: Some(screenshot.digest),
            ..Escalate::default()
        },
    )
    .expect("written");
    bus.emit(
        Actor::Automation,
        0,
        RunEnd {
            failure_code: Some(FailureCode::TargetAmbiguous),
            reason: Some("two cells match".into()),
            step: Some(id("read_balance")),
            expected: Some("one cell".into()),
            observed: Some("two cells".into()),
            effect: Some(EffectVerdict::NotApplicable),
            steps_executed: Some(3),
            steps_total: Some(4),
            ..RunEnd::with_status(RunStatus::NeedsHuman)
        },
    )
    .expect("written");
    let record = bus.finish().expect("written");
    assert!(record.validate().is_empty(), "{:?}", record.validate());
    assert!(verify(bus.dir()).expect("a run directory").is_intact());
    insta::assert_snapshot!(
        "needs_human_run_record",
        read(&bus.dir().join("run_record.json"))
    );
}

#[test]
fn a_trace_that_does_not_start_with_run_start_cannot_be_projected() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-headless", policy_redactor());
    bus.emit(
        Actor::Automation,
        0,
        Note {
            note: "hello".into(),
            data: BTreeMap::new(),
        },
    )
    .expect("written");
    let lines = read_trace(bus.dir()).expect("parses");
    let error = project(&lines).expect_err("no run_start");
    assert!(matches!(error, EvidenceError::NotProjectable { .. }));
    assert_eq!(
        error.to_string(),
        "the trace cannot be projected into a run record: line 1 is `note`, not run_start"
    );
    assert_eq!(
        project(&[]).expect_err("empty").to_string(),
        "the trace cannot be projected into a run record: the trace is empty"
    );
}

/// A click the policy refused dispatched nothing: the record lists it, names the refusal, and
/// does not count it as an unauthorized dispatch.
#[test]
fn a_refused_action_is_listed_with_its_refusal_not_as_needing_no_decision() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-refused", policy_redactor());
    start(&bus);
    bus.emit(Actor::Automation, 1, authorize("dec-9", false))
        .expect("written");
    bus.emit(
        Actor::Automation,
        1,
        Effect {
            step: id("post_transfer"),
            verdict: EffectVerdict::NotApplicable,
            reason: "refused by the policy".into(),
            decision_id: Some("dec-9".into()),
            route: None,
            undispatched: Some(ActionKind::Click),
            screenshot_ref: None,
            screenshot_digest: None,
        },
    )
    .expect("written");
    let record = project(&read_trace(bus.dir()).expect("the trace")).expect("a projection");
    let step = &record.steps[0];
    assert!(step.undispatched && !step.authorized);
    assert_eq!(step.action_type, ActionKind::Click);
    assert_eq!(step.policy_decision, "dec-9: refused: denied");
    assert_eq!(record.unauthorized_dispatches(), 0);
}
