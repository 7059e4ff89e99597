//! The gate's passage on a real trace: what is recorded, in which order, and whether the port
//! was called, for each way an action is granted, denied, withheld or overtaken by the lease.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use cua_artifact::{
    Actor, ApprovalSchema, ApprovalScope, ApprovalState, Capability, CapabilityApproval,
    PolicyConfig, RiskTier, SealState, StepId,
};
use cua_evidence::{Event, EvidenceBus, FixedClock, Redactor, RunId, Timestamp, read_trace};
use cua_gate::{Gate, IntentKey, Refusal, Request, Withholding};
use cua_policy::{
    AuthorizationContext, BrowserAction, IrreversibleGrant, Lease, PolicyEngine, ResolvedTarget,
    SurfaceAction,
};
use cua_snapshot::NodeId;
use cua_surface::DispatchReceipt;

fn engine() -> PolicyEngine {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/policy.yaml"),
    )
    .expect("the repository's policy");
    let config = PolicyConfig::from_yaml(&text).expect("a valid policy");
    PolicyEngine::from_config(&config).expect("a valid allowlist")
}

fn bus(root: &Path) -> EvidenceBus {
    EvidenceBus::create(
        root,
        RunId::parse("run-gate").expect("a valid run id"),
        Arc::new(FixedClock(Timestamp::UNIX_EPOCH)),
        Redactor::default(),
    )
    .expect("a fresh run directory")
}

fn button(name: &str) -> Option<ResolvedTarget> {
    Some(ResolvedTarget {
        node_id: NodeId::new("main:/document[0]/button[0]"),
        role: "button".to_owned(),
        name: name.to_owned(),
    })
}

fn click(actor: Actor, epoch: u64, name: &str, declared: Option<RiskTier>) -> Request {
    Request {
        step: Some(StepId::parse("press").expect("a valid step id")),
        target: button(name),
        declared_risk: declared,
        ..Request::new(actor, epoch, SurfaceAction::Browser(BrowserAction::Click))
    }
}

fn receipt() -> DispatchReceipt {
    DispatchReceipt {
        ok: true,
        navigated: false,
        http_status: None,
        duration_ms: 3,
        message: "clicked".to_owned(),
    }
}

/// One line per event: its name and what decides the story.
fn story(bus: &EvidenceBus) -> Vec<String> {
    read_trace(bus.dir())
        .expect("a readable trace")
        .into_iter()
        .map(|line| match line.event {
            Event::Authorize(event) => format!(
                "authorize {} {} {} {}",
                line.actor.as_str(),
                if event.granted { "granted" } else { "denied" },
                event.risk.as_str(),
                event.denial.unwrap_or_default()
            )
            .trim_end()
            .to_owned(),
            Event::Intent(event) => format!(
                "intent {} attempt {} key {}",
                event.decision_id, event.attempt, event.idempotency_key
            ),
            Event::Dispatch(event) if event.refused => format!(
                "dispatch refused: {} (lease at {:?})",
                event.reason.unwrap_or_default(),
                event.expected_epoch
            ),
            Event::Dispatch(event) => format!("dispatch ok={} {}", event.ok, event.message),
            Event::BlockedRequest(event) => {
                format!("blocked {} navigation={}", event.url, event.navigation)
            }
            other => format!("{other:?}"),
        })
        .collect()
}

/// Counts the calls that reach the port.
#[derive(Default)]
struct Port(AtomicU32);

impl Port {
    async fn dispatch(
        &self,
        _authorized: cua_policy::Authorized<BrowserAction>,
    ) -> Result<DispatchReceipt, cua_surface::SurfaceError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(receipt())
    }

    fn calls(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_safe_action_is_authorized_dispatched_and_recorded_without_an_intent() {
    let root = tempfile::tempdir().unwrap();
    let bus = bus(root.path());
    let engine = engine();
    let lease = || Lease::new(Actor::Automation);
    let port = Port::default();
    let blocked = || {
        vec![cua_surface::BlockedRequest {
            url: "https://elsewhere.test/".to_owned(),
            reason: "off the allowlist".to_owned(),
            resource_type: "Document".to_owned(),
        }]
    };
    let passed = Gate::new(&engine, Some(&bus), &lease)
        .pass(
            click(Actor::Automation, 1, "Search", None),
            |authorized| port.dispatch(authorized),
            blocked,
        )
        .await
        .unwrap()
        .unwrap();
    assert!(!passed.ticket.mutation);
    assert_eq!(port.calls(), 1);
    assert_eq!(
        story(&bus),
        [
            "authorize automation granted safe",
            "dispatch ok=true clicked",
            "blocked https://elsewhere.test/ navigation=true",
        ]
    );
}

#[tokio::test]
async fn a_mutation_is_announced_before_it_leaves_keyed_as_the_caller_says() {
    let root = tempfile::tempdir().unwrap();
    let bus = bus(root.path());
    let engine = engine();
    let lease = || Lease::new(Actor::Automation);
    let port = Port::default();
    let request = Request {
        intent: Some(IntentKey {
            row: Some(7),
            attempt: 2,
            idempotency_key: "row-7".to_owned(),
            remedy: None,
        }),
        ..click(Actor::Automation, 1, "Save", Some(RiskTier::Elevated))
    };
    let passed = Gate::new(&engine, Some(&bus), &lease)
        .pass(request, |authorized| port.dispatch(authorized), Vec::new)
        .await
        .unwrap()
        .unwrap();
    assert!(passed.ticket.mutation);
    assert_eq!(
        story(&bus),
        [
            "authorize automation granted elevated",
            "intent dec-000001 attempt 2 key row-7",
            "dispatch ok=true clicked",
        ]
    );
}

#[tokio::test]
async fn a_step_declared_a_mutation_gets_its_intent_whatever_its_tier() {
    // An HTTP POST or a command that is not read-only is a mutation by declaration, even when
    // the policy assesses it safe: it is announced before it leaves.
    let root = tempfile::tempdir().unwrap();
    let bus = bus(root.path());
    let engine = engine();
    let lease = || Lease::new(Actor::Automation);
    let port = Port::default();
    let request = Request {
        declared_mutation: true,
        ..click(Actor::Automation, 1, "Search", None)
    };
    let passed = Gate::new(&engine, Some(&bus), &lease)
        .pass(request, |authorized| port.dispatch(authorized), Vec::new)
        .await
        .unwrap()
        .unwrap();
    assert!(passed.ticket.mutation);
    assert_eq!(passed.ticket.risk, RiskTier::Safe);
    let story = story(&bus);
    assert_eq!(story.len(), 3, "{story:?}");
    assert!(story[1].starts_with("intent dec-000001"), "{story:?}");
}

#[tokio::test]
async fn a_denial_is_recorded_with_the_assessed_tier_and_nothing_reaches_the_port() {
    let root = tempfile::tempdir().unwrap();
    let bus = bus(root.path());
    let engine = engine();
    // The operator holds the session: automation's action is refused by the lease, and the
    // refusal still names what the action would have been.
    let mut held = Lease::new(Actor::Automation);
    held.escalate("stuck").unwrap();
    held.claim("ada", held.epoch, 0, 60_000).unwrap();
    let lease = || held;
    let port = Port::default();
    let refusal = Gate::new(&engine, Some(&bus), &lease)
        .pass(
            click(Actor::Automation, 1, "Transfer funds", None),
            |authorized| port.dispatch(authorized),
            Vec::new,
        )
        .await
        .unwrap()
        .unwrap_err();
    let Refusal::Denied { denial, risk } = refusal else {
        panic!("expected a denial, got {refusal:?}");
    };
    assert_eq!(denial.code.as_str(), "lease_lost");
    assert_eq!(risk, RiskTier::Irreversible);
    assert_eq!(port.calls(), 0);
    assert_eq!(
        story(&bus),
        ["authorize automation denied irreversible lease_lost"]
    );
}

#[tokio::test]
async fn a_claim_made_during_the_decision_wins_and_settles_the_intent_as_never_sent() {
    let root = tempfile::tempdir().unwrap();
    let bus = bus(root.path());
    let engine = engine();
    // The first read (the decision) sees automation; the second (the dispatch) sees the
    // operator's claim.
    let reads = AtomicU32::new(0);
    let lease = || {
        let mut lease = Lease::new(Actor::Automation);
        if reads.fetch_add(1, Ordering::SeqCst) > 0 {
            lease.escalate("stuck").unwrap();
            lease.claim("ada", lease.epoch, 0, 60_000).unwrap();
        }
        lease
    };
    let port = Port::default();
    let refusal = Gate::new(&engine, Some(&bus), &lease)
        .pass(
            click(Actor::Automation, 1, "Save", Some(RiskTier::Elevated)),
            |authorized| port.dispatch(authorized),
            Vec::new,
        )
        .await
        .unwrap()
        .unwrap_err();
    let Refusal::Stale { lease, .. } = refusal else {
        panic!("expected a stale lease, got {refusal:?}");
    };
    assert_eq!(lease.holder, Actor::Human);
    assert_eq!(port.calls(), 0);
    assert_eq!(
        story(&bus),
        [
            "authorize automation granted elevated",
            format!(
                "intent dec-000001 attempt 1 key {}",
                cua_evidence::idempotency_key("run-gate", None)
            )
            .as_str(),
            "dispatch refused: stale lease epoch (lease at Some(3))",
        ]
    );
    let intents = cua_evidence::intents(&read_trace(bus.dir()).unwrap());
    assert_eq!(intents.len(), 1);
    assert_eq!(intents[0].state, cua_evidence::IntentState::NotDispatched);
}

#[tokio::test]
async fn the_agent_is_held_to_the_lease_at_the_dispatch_like_automation() {
    let root = tempfile::tempdir().unwrap();
    let bus = bus(root.path());
    let engine = engine();
    let reads = AtomicU32::new(0);
    let lease = || {
        let mut lease = Lease::new(Actor::Agent);
        if reads.fetch_add(1, Ordering::SeqCst) > 0 {
            lease.escalate("the operator asked").unwrap();
        }
        lease
    };
    let port = Port::default();
    let refusal = Gate::new(&engine, Some(&bus), &lease)
        .pass(
            click(Actor::Agent, 1, "Search", None),
            |authorized| port.dispatch(authorized),
            Vec::new,
        )
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(refusal, Refusal::Stale { .. }), "{refusal:?}");
    assert_eq!(port.calls(), 0);
}

#[tokio::test]
async fn a_read_only_run_and_a_session_without_a_trace_dispatch_no_mutation() {
    let root = tempfile::tempdir().unwrap();
    let bus = bus(root.path());
    let engine = engine();
    let lease = || Lease::new(Actor::Automation);
    let port = Port::default();
    let read_only = Request {
        read_only: true,
        ..click(Actor::Automation, 1, "Save", Some(RiskTier::Elevated))
    };
    let refusal = Gate::new(&engine, Some(&bus), &lease)
        .pass(read_only, |authorized| port.dispatch(authorized), Vec::new)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            refusal,
            Refusal::Withheld {
                why: Withholding::ReadOnly,
                ..
            }
        ),
        "{refusal:?}"
    );
    assert_eq!(
        story(&bus),
        [
            "authorize automation granted elevated",
            "dispatch refused: a read-only run (a reconciliation) may dispatch no mutation \
             (lease at None)",
        ]
    );
    // Without a trace a mutation has nowhere to be announced; a safe action still passes.
    let untraced = Gate::new(&engine, None, &lease);
    let refusal = untraced
        .pass(
            click(Actor::Automation, 1, "Save", Some(RiskTier::Elevated)),
            |authorized| port.dispatch(authorized),
            Vec::new,
        )
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            refusal,
            Refusal::Withheld {
                why: Withholding::NoTrace,
                ..
            }
        ),
        "{refusal:?}"
    );
    assert_eq!(port.calls(), 0);
    untraced
        .pass(
            click(Actor::Automation, 1, "Search", None),
            |authorized| port.dispatch(authorized),
            Vec::new,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(port.calls(), 1);
}

#[tokio::test]
async fn an_operators_expired_hold_is_refused_at_the_dispatch_before_any_sweep() {
    let root = tempfile::tempdir().unwrap();
    let bus = bus(root.path());
    let engine = engine();
    let mut held = Lease::new(Actor::Automation);
    held.escalate("stuck").unwrap();
    held.claim("ada", held.epoch, 1_000, 5_000).unwrap();
    let lease = || held;
    let port = Port::default();
    let request = || Request {
        confirmed_by: Some("ada".to_owned()),
        ..click(Actor::Human, held.epoch, "Search", None)
    };
    let within = || 2_000;
    Gate::new(&engine, Some(&bus), &lease)
        .with_hold_clock(&within)
        .pass(request(), |authorized| port.dispatch(authorized), Vec::new)
        .await
        .unwrap()
        .unwrap();
    let after = || 6_000;
    let refusal = Gate::new(&engine, Some(&bus), &lease)
        .with_hold_clock(&after)
        .pass(request(), |authorized| port.dispatch(authorized), Vec::new)
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(refusal, Refusal::Stale { .. }), "{refusal:?}");
    assert_eq!(port.calls(), 1);
}

#[test]
fn a_human_irreversible_action_needs_a_confirmation_named_in_the_record() {
    let root = tempfile::tempdir().unwrap();
    let bus = bus(root.path());
    let engine = engine();
    let mut held = Lease::new(Actor::Automation);
    held.escalate("stuck").unwrap();
    held.claim("ada", held.epoch, 0, 60_000).unwrap();
    let lease = || held;
    let gate = Gate::new(&engine, Some(&bus), &lease);
    let unconfirmed = gate
        .clear(click(Actor::Human, held.epoch, "Transfer funds", None))
        .unwrap()
        .unwrap_err();
    let Refusal::Denied { denial, .. } = unconfirmed else {
        panic!("expected a denial, got {unconfirmed:?}");
    };
    assert_eq!(denial.code.as_str(), "needs_confirmation");
    let confirmed = Request {
        confirmed_by: Some("ada".to_owned()),
        ..click(Actor::Human, held.epoch, "Transfer funds", None)
    };
    let cleared = gate.clear(confirmed).unwrap().unwrap();
    assert!(cleared.ticket.mutation);
    let trace = read_trace(bus.dir()).unwrap();
    let Event::Authorize(granted) = &trace[1].event else {
        panic!("expected the granted decision second");
    };
    assert!(
        granted.reason.ends_with("; confirmed by ada"),
        "{}",
        granted.reason
    );
    assert!(matches!(trace[2].event, Event::Intent(_)));
}

#[test]
fn a_judgement_records_the_decision_and_performs_nothing() {
    let root = tempfile::tempdir().unwrap();
    let bus = bus(root.path());
    let engine = engine();
    let lease = || Lease::new(Actor::Agent);
    let gate = Gate::new(&engine, Some(&bus), &lease);
    let granted = gate
        .judge(click(Actor::Agent, 1, "Search", None))
        .unwrap()
        .unwrap();
    let denied = gate
        .judge(click(Actor::Agent, 1, "Save", Some(RiskTier::Elevated)))
        .unwrap()
        .unwrap_err();
    assert_eq!(granted, "dec-000001");
    assert_eq!(denied.decision_id, "dec-000002");
    assert_eq!(
        story(&bus),
        [
            "authorize agent granted safe",
            "authorize agent denied elevated policy_denied",
        ]
    );
}

/// The grant of the repository's sealed transfer, approved by `reviewer` and opted into.
fn approved_transfer() -> AuthorizationContext {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../capabilities/corebank.member.transfer_funds@1.0.0.yaml"),
    )
    .expect("the repository's transfer capability");
    let capability = Capability::from_yaml(&text).expect("a valid capability");
    let SealState::Sealed(hash) = capability.seal_state() else {
        panic!("the transfer is sealed")
    };
    let approval = CapabilityApproval {
        schema: ApprovalSchema::V1,
        capability: capability.reference(),
        content_hash: hash,
        state: ApprovalState::Approved,
        approved_by: Some("reviewer".to_owned()),
        approved_at: None,
        scope: ApprovalScope::default(),
        notes: String::new(),
    };
    AuthorizationContext {
        confirmed: false,
        grant: IrreversibleGrant::evaluate(&capability, Some(&approval), None, true),
    }
}

/// The approval an action was granted under is in its record exactly when the action is
/// irreversible: a reviewer reading the trace sees which approval let the transfer through, and
/// no other action claims one.
#[tokio::test]
async fn the_approval_is_recorded_for_the_irreversible_action_and_no_other() {
    let root = tempfile::tempdir().unwrap();
    let bus = bus(root.path());
    let engine = engine();
    let lease = || Lease::new(Actor::Automation);
    let port = Port::default();
    for (name, declared) in [
        ("Transfer Funds", Some(RiskTier::Irreversible)),
        ("Search", Some(RiskTier::Safe)),
    ] {
        let request = Request {
            context: approved_transfer(),
            ..click(Actor::Automation, 1, name, declared)
        };
        Gate::new(&engine, Some(&bus), &lease)
            .pass(request, |authorized| port.dispatch(authorized), Vec::new)
            .await
            .unwrap()
            .unwrap();
    }
    let approvals: Vec<(RiskTier, Option<String>)> = read_trace(bus.dir())
        .expect("a readable trace")
        .into_iter()
        .filter_map(|line| match line.event {
            Event::Authorize(event) => Some((event.risk, event.approval)),
            _ => None,
        })
        .collect();
    assert_eq!(approvals.len(), 2, "{approvals:?}");
    assert_eq!(approvals[0].0, RiskTier::Irreversible);
    assert!(
        approvals[0]
            .1
            .as_deref()
            .is_some_and(|approval| approval.contains("reviewer")),
        "{approvals:?}"
    );
    assert_eq!(approvals[1], (RiskTier::Safe, None));
}

/// A journal that keeps what it is given, or refuses everything with `refusal`; its hold on the
/// work runs out with `lapse`.
struct Journal {
    kept: std::sync::Mutex<Vec<(String, u64, String)>>,
    refusal: Option<&'static str>,
    lapse: Option<&'static str>,
}

impl cua_evidence::IntentJournal for Journal {
    fn record(&self, run_id: &str, seq: u64, intent: &cua_evidence::Intent) -> Result<(), String> {
        if let Some(refusal) = self.refusal {
            return Err(refusal.to_owned());
        }
        self.kept.lock().expect("the journal's lock").push((
            run_id.to_owned(),
            seq,
            intent.decision_id.clone(),
        ));
        Ok(())
    }

    fn holds(&self) -> Result<(), String> {
        self.lapse.map_or(Ok(()), |lapse| Err(lapse.to_owned()))
    }
}

/// A batch queue's journal takes every intent after the trace does, under the intent's line
/// number; when it refuses (another worker holds the row), nothing is dispatched and the trace
/// settles the intent as never sent.
#[tokio::test]
async fn an_intent_the_journal_refuses_is_never_dispatched() {
    let engine = engine();
    let lease = || Lease::new(Actor::Automation);
    let port = Port::default();
    let save = || click(Actor::Automation, 1, "Save", Some(RiskTier::Elevated));

    let root = tempfile::tempdir().unwrap();
    let keeping = Arc::new(Journal {
        kept: std::sync::Mutex::new(Vec::new()),
        refusal: None,
        lapse: None,
    });
    let kept = bus(root.path()).with_intent_journal(keeping.clone());
    Gate::new(&engine, Some(&kept), &lease)
        .pass(save(), |authorized| port.dispatch(authorized), Vec::new)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(port.calls(), 1);
    assert_eq!(
        *keeping.kept.lock().unwrap(),
        [("run-gate".to_owned(), 2, "dec-000001".to_owned())],
        "the journal holds the trace's second line, the intent"
    );

    let root = tempfile::tempdir().unwrap();
    let refusing = Arc::new(Journal {
        kept: std::sync::Mutex::new(Vec::new()),
        refusal: Some("row 4 of batch b is no longer this worker's at epoch 2"),
        lapse: None,
    });
    let bus = bus(root.path()).with_intent_journal(refusing);
    let refusal = Gate::new(&engine, Some(&bus), &lease)
        .pass(save(), |authorized| port.dispatch(authorized), Vec::new)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            refusal,
            Refusal::Withheld {
                why: Withholding::Unjournaled,
                risk: RiskTier::Elevated,
                ..
            }
        ),
        "{refusal:?}"
    );
    assert_eq!(port.calls(), 1, "the port was not called again");
    let story = story(&bus);
    assert_eq!(story.len(), 3, "{story:?}");
    // The engine numbers its decisions across sessions: this one is its second.
    assert!(story[1].starts_with("intent dec-000002"), "{story:?}");
    assert_eq!(
        story[2],
        "dispatch refused: the intent journal refused the write-ahead intent: row 4 of batch b \
         is no longer this worker's at epoch 2 (lease at None)"
    );
    let intents = cua_evidence::intents(&read_trace(bus.dir()).unwrap());
    assert_eq!(intents.len(), 1);
    assert_eq!(intents[0].state, cua_evidence::IntentState::NotDispatched);
}

/// A journal that took the intent but whose hold has run out by the time the gate asks, last,
/// before the dispatch (the worker was paused in between): nothing is dispatched, and the trace
/// settles the intent as never sent. A read that announces nothing is not asked.
#[tokio::test]
async fn a_mutation_whose_journal_hold_lapsed_is_never_dispatched() {
    let engine = engine();
    let lease = || Lease::new(Actor::Automation);
    let port = Port::default();
    let root = tempfile::tempdir().unwrap();
    let lapsed = Arc::new(Journal {
        kept: std::sync::Mutex::new(Vec::new()),
        refusal: None,
        lapse: Some("21.0 s passed since the queue was asked to take the intent"),
    });
    let bus = bus(root.path()).with_intent_journal(lapsed.clone());
    let save = click(Actor::Automation, 1, "Save", Some(RiskTier::Elevated));
    let refusal = Gate::new(&engine, Some(&bus), &lease)
        .pass(save, |authorized| port.dispatch(authorized), Vec::new)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            refusal,
            Refusal::Withheld {
                why: Withholding::JournalLapsed,
                risk: RiskTier::Elevated,
                ..
            }
        ),
        "{refusal:?}"
    );
    assert_eq!(port.calls(), 0);
    assert_eq!(lapsed.kept.lock().unwrap().len(), 1, "the journal took it");
    let story = story(&bus);
    assert_eq!(
        story.last().map(String::as_str),
        Some(
            "dispatch refused: the intent journal's hold on the work ran out before the \
             dispatch: 21.0 s passed since the queue was asked to take the intent (lease at None)"
        ),
        "{story:?}"
    );
    let intents = cua_evidence::intents(&read_trace(bus.dir()).unwrap());
    assert_eq!(intents.len(), 1);
    assert_eq!(intents[0].state, cua_evidence::IntentState::NotDispatched);

    let read = click(Actor::Automation, 1, "Search", Some(RiskTier::Safe));
    Gate::new(&engine, Some(&bus), &lease)
        .pass(read, |authorized| port.dispatch(authorized), Vec::new)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(port.calls(), 1, "a safe read goes through");
}
