//! The broker's lease cycle, races, expiry, confirmation and persistence.

use cua_artifact::Actor;
use cua_console::{Broker, BrokerConfig, ConsoleClock, ConsoleError, Gesture, InterventionState};
use cua_evidence::{Event, LeaseTransition, read_trace};
use cua_policy::LeaseState;
use cua_replay::EscalationSink;

use crate::support::{CANARY, HOLD, World};

/// The button "Transfer Funds" (its label text is hit; the button classifies it).
const TRANSFER: Gesture = Gesture::Click { x: 30.0, y: 160.0 };

#[tokio::test]
async fn a_full_cycle_goes_through_epochs_two_to_five_and_hands_the_run_back() {
    let world = World::new();
    let id = world.escalate();
    assert_eq!(id, "int-run-1-1");
    assert_eq!(world.session.lease().state, LeaseState::Paused);
    let sink = world.broker.sink("live-1");
    let handback = sink.handed_back(&id);
    let claimed = world.broker.claim(&id, "ada", Some(2)).await.unwrap();
    assert_eq!((claimed.epoch, claimed.state), (3, "human_control"));
    // Automation's next dispatch at its old epoch is refused by the lease.
    assert!(!world.session.lease().permits(Actor::Automation, 1));
    let typed = world
        .broker
        .gesture(
            "live-1",
            "ada",
            Gesture::Text {
                text: "12345".to_owned(),
            },
        )
        .await
        .unwrap();
    assert_eq!(typed.outcome, "dispatched", "{typed:?}");
    assert_eq!(typed.target.as_deref(), Some("textbox \"Amount\""));
    let released = world.broker.release("live-1", "ada").await.unwrap();
    assert_eq!(released.epoch, 5);
    assert!(released.resumed_run);
    assert_eq!(released.human_actions, 1);
    assert_eq!(handback.await.map(|handback| handback.epoch), Some(5));
    let card = world.broker.intervention(&id).unwrap();
    assert_eq!(card.intervention.state, InterventionState::Resolved);
    assert_eq!(
        card.intervention.history.len(),
        4,
        "{:?}",
        card.intervention.history
    );
    // The trace: every transition a lease event, by the actor it concerns, at its epoch.
    let lines = read_trace(world.bus.dir()).unwrap();
    let leases: Vec<(LeaseTransition, Actor, u64)> = lines
        .iter()
        .filter_map(|line| match &line.event {
            Event::Lease(lease) => Some((lease.transition, line.actor, line.lease_epoch)),
            _ => None,
        })
        .collect();
    assert_eq!(
        leases,
        [
            (LeaseTransition::Escalated, Actor::System, 2),
            (LeaseTransition::Claimed, Actor::Human, 3),
            (LeaseTransition::Released, Actor::Human, 4),
            (LeaseTransition::Resumed, Actor::Automation, 5),
        ]
    );
    let human_dispatches = lines
        .iter()
        .filter(|line| {
            matches!(&line.event, Event::Dispatch(d) if !d.refused) && line.actor == Actor::Human
        })
        .count();
    assert_eq!(human_dispatches, 1);
    assert!(cua_evidence::unauthorized_dispatches(&lines).is_empty());
    assert_eq!(
        world.surface.dispatched(),
        ["RawInput(Text(<5 chars>)) by human at epoch 3"]
    );
}

#[tokio::test]
async fn two_claimers_race_and_one_gets_a_conflict() {
    let world = World::new();
    let id = world.escalate();
    let (first, second) = tokio::join!(
        world.broker.claim(&id, "ada", Some(2)),
        world.broker.claim(&id, "grace", Some(2))
    );
    let (won, lost) = match (first, second) {
        (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, lost),
        other => panic!("exactly one claim must win: {other:?}"),
    };
    assert_eq!(won.epoch, 3);
    assert_eq!(lost.status(), 409, "{lost}");
    // The loser cannot act on the session either.
    let holder = world
        .broker
        .intervention(&id)
        .unwrap()
        .intervention
        .operator
        .unwrap();
    let loser = if holder == "ada" { "grace" } else { "ada" };
    let refused = world
        .broker
        .gesture("live-1", loser, TRANSFER)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ConsoleError::NotHolder { .. }),
        "{refused}"
    );
    assert!(world.surface.dispatched().is_empty());
}

#[tokio::test]
async fn an_expired_hold_requeues_the_intervention_as_abandoned() {
    let world = World::new();
    let id = world.escalate();
    world.broker.claim(&id, "ada", None).await.unwrap();
    world.clock.advance(HOLD);
    world.broker.sweep();
    let card = world.broker.intervention(&id).unwrap();
    assert_eq!(card.intervention.state, InterventionState::Abandoned);
    let lease = world.session.lease();
    assert_eq!((lease.state, lease.epoch), (LeaseState::Paused, 4));
    // Ada's epoch is stale: her next gesture is refused and nothing reaches the surface.
    let refused = world
        .broker
        .gesture(
            "live-1",
            "ada",
            Gesture::Key {
                key: "Enter".to_owned(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(refused.status(), 409, "{refused}");
    assert!(world.surface.dispatched().is_empty());
    // Claimable again, by anyone, at the new epoch.
    let again = world.broker.claim(&id, "grace", Some(4)).await.unwrap();
    assert_eq!(again.epoch, 5);
    let lines = read_trace(world.bus.dir()).unwrap();
    assert!(lines.iter().any(|line| matches!(&line.event, Event::Lease(lease) if lease.transition == LeaseTransition::HoldExpired) && line.lease_epoch == 4));
}

#[tokio::test]
async fn an_irreversible_click_waits_for_the_operators_confirmation() {
    let world = World::new();
    let id = world.escalate();
    world.broker.claim(&id, "ada", None).await.unwrap();
    let answer = world
        .broker
        .gesture("live-1", "ada", TRANSFER)
        .await
        .unwrap();
    assert_eq!(answer.outcome, "needs_confirmation", "{answer:?}");
    assert_eq!(answer.target.as_deref(), Some("button \"Transfer Funds\""));
    assert_eq!(answer.risk.as_deref(), Some("irreversible"));
    assert!(
        world.surface.dispatched().is_empty(),
        "not dispatched without confirmation"
    );
    let pending = world.broker.sessions()[0].pending_confirmation.clone();
    assert_eq!(pending.as_deref(), Some("button \"Transfer Funds\""));
    // A click elsewhere is fine without confirmation.
    let cancel = world
        .broker
        .gesture("live-1", "ada", Gesture::Click { x: 210.0, y: 160.0 })
        .await
        .unwrap();
    assert_eq!(cancel.outcome, "dispatched");
    assert_eq!(world.surface.dispatched().len(), 1);
    // Confirming performs exactly the pending click, recorded as confirmed by the operator.
    let confirmed = world.broker.confirm("live-1", "ada").await.unwrap();
    assert_eq!(confirmed.outcome, "dispatched", "{confirmed:?}");
    assert_eq!(world.surface.dispatched().len(), 2);
    assert!(world.surface.dispatched()[1].starts_with("RawInput(MouseClick(30, 160))"));
    let lines = read_trace(world.bus.dir()).unwrap();
    let denials: Vec<&str> = lines
        .iter()
        .filter_map(|line| match &line.event {
            Event::Authorize(authorize) => authorize.denial.as_deref(),
            _ => None,
        })
        .collect();
    assert_eq!(denials, ["needs_confirmation"]);
    assert!(lines.iter().any(|line| matches!(&line.event, Event::Authorize(a) if a.granted && a.reason.contains("confirmed by ada"))));
    // Write-ahead: both raw clicks (a human's raw input is at least elevated) were announced by
    // a durable intent, as the human, each before its dispatch; the confirmed one as
    // irreversible.
    let intents: Vec<(usize, &cua_evidence::Intent)> = lines
        .iter()
        .enumerate()
        .filter_map(|(index, line)| match &line.event {
            Event::Intent(intent) => Some((index, intent)),
            _ => None,
        })
        .collect();
    let risks: Vec<cua_artifact::RiskTier> =
        intents.iter().map(|(_, intent)| intent.risk).collect();
    assert_eq!(
        risks,
        [
            cua_artifact::RiskTier::Elevated,
            cua_artifact::RiskTier::Irreversible
        ]
    );
    for (at, intent) in intents {
        assert_eq!(lines[at].actor, cua_artifact::Actor::Human);
        let dispatched_at = lines
            .iter()
            .position(|line| matches!(&line.event, Event::Dispatch(d) if d.decision_id == intent.decision_id))
            .expect("the click's dispatch");
        assert!(
            at < dispatched_at,
            "intent {at} before dispatch {dispatched_at}"
        );
    }
    // Nothing is left to confirm.
    assert_eq!(
        world
            .broker
            .confirm("live-1", "ada")
            .await
            .unwrap_err()
            .status(),
        409
    );
}

#[tokio::test]
async fn interventions_survive_a_restart_and_say_their_session_is_gone() {
    let world = World::new();
    let id = world.escalate();
    world.broker.claim(&id, "ada", None).await.unwrap();
    let restarted = Broker::new(
        BrokerConfig {
            evidence_root: world.root.path().to_path_buf(),
            hold_for: HOLD,
        },
        std::sync::Arc::clone(&world.clock) as std::sync::Arc<dyn ConsoleClock>,
    );
    let cards = restarted.interventions();
    assert_eq!(cards.len(), 1);
    let card = &cards[0];
    assert_eq!(card.intervention.id, id);
    assert_eq!(card.intervention.state, InterventionState::Claimed);
    assert_eq!(card.intervention.operator.as_deref(), Some("ada"));
    assert!(!card.live);
    // Everything stored was redacted: the canary in the reason and goal is masked.
    let stored = std::fs::read_to_string(card.intervention.path(world.root.path())).unwrap();
    assert!(!stored.contains(CANARY), "{stored}");
    assert!(
        card.intervention.reason.contains("<redacted"),
        "{}",
        card.intervention.reason
    );
    let gone = restarted.claim(&id, "grace", None).await.unwrap_err();
    assert_eq!(gone.status(), 410, "{gone}");
}

#[tokio::test]
async fn only_the_holder_hands_back_and_nobody_releases_a_paused_session() {
    let world = World::new();
    let id = world.escalate();
    assert_eq!(
        world
            .broker
            .release("live-1", "ada")
            .await
            .unwrap_err()
            .status(),
        409
    );
    world.broker.claim(&id, "ada", None).await.unwrap();
    assert_eq!(
        world
            .broker
            .release("live-1", "grace")
            .await
            .unwrap_err()
            .status(),
        403
    );
    assert_eq!(
        world
            .broker
            .claim(&id, "grace", None)
            .await
            .unwrap_err()
            .status(),
        409
    );
    world.broker.release("live-1", "ada").await.unwrap();
    assert_eq!(world.session.lease().state, LeaseState::Running);
}

#[tokio::test]
async fn giving_up_ends_the_wait_without_a_hand_back_and_nothing_can_claim_it_again() {
    let world = World::new();
    let id = world.escalate();
    let sink = world.broker.sink("live-1");
    let handback = sink.handed_back(&id);
    world.broker.give_up(&id).unwrap();
    // The paused run learns it will not be resumed (it ends as needs_human).
    assert_eq!(handback.await.map(|handback| handback.epoch), None);
    let card = world.broker.intervention(&id).unwrap();
    assert_eq!(card.intervention.state, InterventionState::GivenUp);
    assert_eq!(
        card.intervention.history.last().map(String::as_str),
        Some("given up: the run ends as needs_human")
    );
    // Nothing waits any more: a second give-up and a claim are both conflicts, and nothing
    // reached the surface.
    let again = world.broker.give_up(&id).unwrap_err();
    assert_eq!(again.status(), 409, "{again}");
    let claim = world.broker.claim(&id, "ada", None).await.unwrap_err();
    assert_eq!(claim.status(), 409, "{claim}");
    assert!(world.surface.dispatched().is_empty());
    // Persisted: a restarted console does not offer it again.
    let restarted = Broker::new(
        BrokerConfig {
            evidence_root: world.root.path().to_path_buf(),
            hold_for: HOLD,
        },
        std::sync::Arc::clone(&world.clock) as std::sync::Arc<dyn ConsoleClock>,
    );
    let cards = restarted.interventions();
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].intervention.state, InterventionState::GivenUp);
    assert!(!cards[0].intervention.state.claimable());
}
