//! Write-ahead intents read back from a real trace: what followed each intent decides whether
//! its mutation was confirmed, never left the process, or is in doubt. One case per shape a
//! killed, refused or finished run leaves.

use cua_artifact::{ActionKind, Actor, EffectVerdict, RiskTier};
use cua_evidence::{Dispatch, Effect, Event, Intent, IntentState, intents, read_trace};

use crate::{bus, id, policy_redactor};

/// What follows an intent for `post_transfer` (decision `dec-7`) in a trace.
#[derive(Clone, Copy)]
enum Then {
    DispatchRefused,
    DispatchSent,
    Effect(&'static str, EffectVerdict),
    AnotherIntent,
    /// An intent for another step or decision, in the same trace.
    IntentFor(&'static str, &'static str),
}

fn check(then: &[Then], expect: &[IntentState]) {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-20260930-000000001", policy_redactor());
    let intent_for = |step: &str, decision: &str| Intent {
        step: Some(id(step)),
        decision_id: decision.into(),
        action_type: ActionKind::Click,
        risk: RiskTier::Irreversible,
        row: Some(3),
        attempt: 1,
        idempotency_key: "cua-0123456789abcdef0123".into(),
        remedy: None,
    };
    let intent = || intent_for("post_transfer", "dec-7");
    bus.emit(Actor::Automation, 1, intent()).expect("an intent");
    for step in then {
        let event: Event = match *step {
            Then::DispatchRefused | Then::DispatchSent => Dispatch {
                step: Some(id("post_transfer")),
                decision_id: "dec-7".into(),
                action_type: ActionKind::Click,
                node_id: None,
                refused: matches!(step, Then::DispatchRefused),
                ok: matches!(step, Then::DispatchSent),
                navigated: false,
                http_status: None,
                duration_ms: 0,
                message: String::new(),
                reason: None,
                expected_epoch: None,
            }
            .into(),
            Then::Effect(step, verdict) => Effect {
                step: id(step),
                verdict,
                reason: String::new(),
                decision_id: Some("dec-7".into()),
                route: None,
                undispatched: None,
                screenshot_ref: None,
                screenshot_digest: None,
            }
            .into(),
            Then::AnotherIntent => intent().into(),
            Then::IntentFor(step, decision) => intent_for(step, decision).into(),
        };
        bus.emit(Actor::Automation, 1, event).expect("an event");
    }
    let trace = read_trace(bus.dir()).expect("the trace");
    let states: Vec<IntentState> = intents(&trace).iter().map(|record| record.state).collect();
    assert_eq!(states, expect);
    let first = &intents(&trace)[0];
    assert_eq!(first.seq, 1);
    assert_eq!(first.intent, intent());
}

#[test]
fn an_intent_is_settled_only_by_what_follows_it() {
    use EffectVerdict::{Confirmed, SuspectedNoop, Unverifiable};
    use IntentState::{Confirmed as Done, InDoubt, NotDispatched};
    // Killed right after the intent: in doubt.
    check(&[], &[InDoubt]);
    // Handed over, nothing after (killed waiting): in doubt.
    check(&[Then::DispatchSent], &[InDoubt]);
    // Refused at the dispatch (the lease moved): it never left the process.
    check(&[Then::DispatchRefused], &[NotDispatched]);
    // Observed: done.
    check(
        &[Then::DispatchSent, Then::Effect("post_transfer", Confirmed)],
        &[Done],
    );
    // A receipt or an unchanged screen proves nothing either way.
    check(
        &[
            Then::DispatchSent,
            Then::Effect("post_transfer", Unverifiable),
        ],
        &[InDoubt],
    );
    check(
        &[
            Then::DispatchSent,
            Then::Effect("post_transfer", SuspectedNoop),
        ],
        &[InDoubt],
    );
    // A confirmation of another step with the same decision id does not settle this one.
    check(
        &[
            Then::DispatchSent,
            Then::Effect("read_confirmation", Confirmed),
        ],
        &[InDoubt],
    );
    // The same decision announced again (another frame) ends the search for the first: each is
    // settled by its own followers.
    check(
        &[
            Then::AnotherIntent,
            Then::DispatchSent,
            Then::Effect("post_transfer", Confirmed),
        ],
        &[InDoubt, Done],
    );
    // An intent for another step of the same decision, or the same step of another decision,
    // is another mutation: it neither ends the search for this one nor is settled by its effect.
    for other in [
        Then::IntentFor("read_confirmation", "dec-7"),
        Then::IntentFor("post_transfer", "dec-8"),
    ] {
        check(
            &[
                other,
                Then::DispatchSent,
                Then::Effect("post_transfer", Confirmed),
            ],
            &[Done, InDoubt],
        );
    }
}

#[test]
fn intent_states_have_their_wire_names() {
    let names: Vec<&str> = [
        IntentState::Confirmed,
        IntentState::NotDispatched,
        IntentState::InDoubt,
    ]
    .into_iter()
    .map(IntentState::as_str)
    .collect();
    assert_eq!(names, ["confirmed", "not_dispatched", "in_doubt"]);
}

/// Keeps what it is given, or refuses.
struct Journal {
    kept: std::sync::Mutex<Vec<(String, u64, String)>>,
    refuse: bool,
}

impl cua_evidence::IntentJournal for Journal {
    fn record(&self, run_id: &str, seq: u64, intent: &Intent) -> Result<(), String> {
        if self.refuse {
            return Err("the row passed to another worker".to_owned());
        }
        self.kept.lock().expect("the journal's lock").push((
            run_id.to_owned(),
            seq,
            intent.decision_id.clone(),
        ));
        Ok(())
    }

    fn holds(&self) -> Result<(), String> {
        if self.refuse {
            return Err("the lease ran out".to_owned());
        }
        Ok(())
    }
}

/// A bus passes intents to its journal under its own run id, and the journal's answer back; a
/// bus without a journal takes every intent. The journal's hold is asked the same way.
#[test]
fn a_bus_passes_intents_to_its_journal() {
    let intent = Intent::of_run(
        "run",
        Some(id("post_transfer")),
        "dec-7",
        ActionKind::Click,
        RiskTier::Irreversible,
    );
    let root = tempfile::tempdir().expect("a temporary directory");
    let plain = bus(root.path(), "run-20260930-000000002", policy_redactor());
    assert_eq!(plain.journal(4, &intent), Ok(()));

    let keeping = std::sync::Arc::new(Journal {
        kept: std::sync::Mutex::new(Vec::new()),
        refuse: false,
    });
    let kept = bus(root.path(), "run-20260930-000000003", policy_redactor())
        .with_intent_journal(keeping.clone());
    assert_eq!(kept.journal(4, &intent), Ok(()));
    assert_eq!(
        *keeping.kept.lock().expect("the journal's lock"),
        [("run-20260930-000000003".to_owned(), 4, "dec-7".to_owned())]
    );

    let refusing = bus(root.path(), "run-20260930-000000004", policy_redactor())
        .with_intent_journal(std::sync::Arc::new(Journal {
            kept: std::sync::Mutex::new(Vec::new()),
            refuse: true,
        }));
    assert_eq!(
        refusing.journal(4, &intent),
        Err("the row passed to another worker".to_owned())
    );
    assert_eq!(plain.journal_holds(), Ok(()));
    assert_eq!(kept.journal_holds(), Ok(()));
    assert_eq!(
        refusing.journal_holds(),
        Err("the lease ran out".to_owned())
    );
}
