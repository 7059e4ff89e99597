//! The lease state machine: every operation from every state (legal moves and refusals), the
//! full cycle's epochs, the race of two claimers, hold expiry on an injected clock, and a
//! stale epoch refused by the engine before anything else.

use cua_artifact::Actor;
use cua_policy::{
    ActionRequest, BrowserAction, DenialCode, Lease, LeaseError, LeaseOperation, LeaseState,
    SurfaceAction,
};

const HOLD_MS: u64 = 30 * 60 * 1000;

/// A lease in `state` at epoch 7, reached through the legal cycle (the hold expires at
/// 1 000 + [`HOLD_MS`]).
fn lease_in(state: LeaseState) -> Lease {
    let mut lease = Lease::new(Actor::Automation);
    let cycle = [
        LeaseState::Running,
        LeaseState::Paused,
        LeaseState::HumanControl,
        LeaseState::Resuming,
    ];
    // Go round once, so the epoch is not the trivial 1.
    lease.escalate("warm-up").unwrap();
    lease.claim("ada", 2, 0, HOLD_MS).unwrap();
    lease.release("ada", 3).unwrap();
    lease.resume().unwrap();
    for current in cycle {
        if current == state {
            return lease;
        }
        let epoch = lease.epoch;
        match current {
            LeaseState::Running => lease.escalate("test").map(drop),
            LeaseState::Paused => lease.claim("ada", epoch, 1_000, HOLD_MS).map(drop),
            LeaseState::HumanControl => lease.release("ada", epoch).map(drop),
            LeaseState::Resuming => lease.resume().map(drop),
        }
        .unwrap();
    }
    unreachable!("every state is on the cycle")
}

/// Applies `operation` at `now_ms` with the lease's own epoch as the caller's reading.
fn apply(lease: &mut Lease, operation: LeaseOperation, now_ms: u64) -> Result<(), LeaseError> {
    let epoch = lease.epoch;
    match operation {
        LeaseOperation::Escalate => lease.escalate("test"),
        LeaseOperation::Claim => lease.claim("grace", epoch, now_ms, HOLD_MS),
        LeaseOperation::Release => lease.release("ada", epoch),
        LeaseOperation::Resume => lease.resume(),
        LeaseOperation::ReclaimExpired => lease.reclaim_expired(now_ms),
    }
    .map(drop)
}

/// What each (state, operation) pair must do: `Ok((new state, new holder))` or the refusal.
#[derive(Debug, PartialEq)]
enum Expect {
    Moves(LeaseState, Actor),
    Illegal,
    HoldNotExpired,
}

fn check(state: LeaseState, operation: LeaseOperation, now_ms: u64, expect: &Expect) {
    let mut lease = lease_in(state);
    let before = lease;
    let got = apply(&mut lease, operation, now_ms);
    let described = format!("{} from {} at {now_ms}", operation.as_str(), state.as_str());
    match expect {
        Expect::Moves(to, holder) => {
            assert_eq!(got, Ok(()), "{described}");
            assert_eq!(lease.state, *to, "{described}");
            assert_eq!(lease.holder, *holder, "{described}");
            assert_eq!(
                lease.epoch,
                before.epoch + 1,
                "{described}: every transition +1"
            );
        }
        Expect::Illegal => {
            assert!(
                matches!(got, Err(LeaseError::Illegal { operation: o, state: s, .. }) if o == operation && s == state),
                "{described}: {got:?}"
            );
            assert_eq!(lease, before, "{described}: a refusal changes nothing");
        }
        Expect::HoldNotExpired => {
            assert!(
                matches!(got, Err(LeaseError::HoldNotExpired { .. })),
                "{described}: {got:?}"
            );
            assert_eq!(lease, before, "{described}: a refusal changes nothing");
        }
    }
}

#[test]
fn every_operation_from_every_state() {
    use Expect::{HoldNotExpired, Illegal, Moves};
    use LeaseOperation::{Claim, Escalate, ReclaimExpired, Release, Resume};
    use LeaseState::{HumanControl, Paused, Resuming, Running};
    let during_hold = 2_000;
    let after_hold = 1_000 + HOLD_MS;
    let table = [
        (Running, Escalate, during_hold, Moves(Paused, Actor::System)),
        (Running, Claim, during_hold, Illegal),
        (Running, Release, during_hold, Illegal),
        (Running, Resume, during_hold, Illegal),
        (Running, ReclaimExpired, after_hold, Illegal),
        (Paused, Escalate, during_hold, Illegal),
        (
            Paused,
            Claim,
            during_hold,
            Moves(HumanControl, Actor::Human),
        ),
        (Paused, Release, during_hold, Illegal),
        (Paused, Resume, during_hold, Illegal),
        (Paused, ReclaimExpired, after_hold, Illegal),
        (HumanControl, Escalate, during_hold, Illegal),
        (HumanControl, Claim, during_hold, Illegal),
        (
            HumanControl,
            Release,
            during_hold,
            Moves(Resuming, Actor::System),
        ),
        (HumanControl, Resume, during_hold, Illegal),
        (HumanControl, ReclaimExpired, during_hold, HoldNotExpired),
        (
            HumanControl,
            ReclaimExpired,
            after_hold,
            Moves(Paused, Actor::System),
        ),
        (Resuming, Escalate, during_hold, Illegal),
        (Resuming, Claim, during_hold, Illegal),
        (Resuming, Release, during_hold, Illegal),
        (
            Resuming,
            Resume,
            during_hold,
            Moves(Running, Actor::Automation),
        ),
        (Resuming, ReclaimExpired, after_hold, Illegal),
    ];
    // The table covers every pair.
    for state in LeaseState::ALL {
        for operation in LeaseOperation::ALL {
            assert!(
                table
                    .iter()
                    .any(|(s, o, _, _)| *s == state && *o == operation),
                "{} from {} is not in the table",
                operation.as_str(),
                state.as_str()
            );
        }
    }
    for (state, operation, now_ms, expect) in &table {
        check(*state, *operation, *now_ms, expect);
    }
}

#[test]
fn a_full_cycle_goes_through_epochs_one_to_five() {
    let mut lease = Lease::new(Actor::Automation);
    assert_eq!((lease.state, lease.epoch), (LeaseState::Running, 1));
    let escalated = lease
        .escalate("unexpected_state at enter_member_id")
        .unwrap();
    let claimed = lease.claim("ada", 2, 10_000, HOLD_MS).unwrap();
    let released = lease.release("ada", 3).unwrap();
    let resumed = lease.resume().unwrap();
    let epochs: Vec<u64> = [&escalated, &claimed, &released, &resumed]
        .iter()
        .map(|transition| transition.epoch)
        .collect();
    assert_eq!(epochs, [2, 3, 4, 5]);
    assert_eq!(claimed.operator.as_deref(), Some("ada"));
    assert_eq!(claimed.hold_expires_at_ms, Some(10_000 + HOLD_MS));
    assert_eq!(released.holder, Actor::System);
    assert_eq!(resumed.holder, Actor::Automation);
    assert_eq!(
        escalated.history_line(),
        "2:paused:unexpected_state at enter_member_id"
    );
    assert_eq!(
        lease.hold_expires_at_ms, None,
        "a hold ends with the release"
    );
}

#[test]
fn two_claimers_race_and_one_wins() {
    let mut lease = lease_in(LeaseState::Paused);
    let seen = lease.epoch;
    let first = lease.claim("ada", seen, 5_000, HOLD_MS);
    let second = lease.claim("grace", seen, 5_001, HOLD_MS);
    assert!(first.is_ok());
    let lost = second.unwrap_err();
    assert!(lost.is_conflict(), "{lost}");
    assert_eq!(lease.epoch, seen + 1, "the loser changed nothing");
    // A claim on a reading that went stale (the session was claimed and given back meanwhile)
    // is a conflict too, even though the state is claimable again.
    lease.reclaim_expired(5_000 + HOLD_MS).unwrap();
    let stale = lease
        .claim("grace", seen, 5_000 + HOLD_MS, HOLD_MS)
        .unwrap_err();
    assert!(
        matches!(stale, LeaseError::StaleEpoch { expected, current, .. } if expected == seen && current == seen + 2)
    );
    assert!(stale.is_conflict());
}

#[test]
fn an_expired_hold_returns_the_session_to_the_queue() {
    let mut lease = lease_in(LeaseState::HumanControl);
    let epoch = lease.epoch;
    let expires = lease.hold_expires_at_ms.unwrap();
    assert!(lease.permits_at(Actor::Human, epoch, expires - 1));
    assert!(
        !lease.permits_at(Actor::Human, epoch, expires),
        "expired at the instant"
    );
    assert!(
        lease.permits(Actor::Human, epoch),
        "permits alone ignores the clock"
    );
    // Working extends the hold without a transition.
    lease.extend_hold(epoch, expires - 1, HOLD_MS).unwrap();
    assert_eq!(lease.epoch, epoch);
    assert!(lease.permits_at(Actor::Human, epoch, expires));
    let later = expires - 1 + HOLD_MS;
    let reclaimed = lease.reclaim_expired(later).unwrap();
    assert_eq!(
        (reclaimed.from, reclaimed.to),
        (LeaseState::HumanControl, LeaseState::Paused)
    );
    assert_eq!(reclaimed.epoch, epoch + 1);
    assert!(
        !lease.permits(Actor::Human, epoch),
        "the operator's epoch is stale"
    );
    // Claimable again, by anyone.
    lease.claim("grace", epoch + 1, later, HOLD_MS).unwrap();
    // An expired hold cannot be extended.
    let mut expired = lease;
    let refused = expired.extend_hold(expired.epoch, later + HOLD_MS, HOLD_MS);
    assert!(refused.is_err());
    // A human lease made without a hold never expires.
    let mut forever = Lease::new(Actor::Human);
    assert!(matches!(
        forever.reclaim_expired(u64::MAX - 1),
        Err(LeaseError::HoldNotExpired { .. })
    ));
}

#[test]
fn a_stale_epoch_is_refused_before_anything_else() {
    let engine = super::engine();
    let mut lease = Lease::new(Actor::Automation);
    let request = |actor, epoch| ActionRequest {
        actor,
        epoch,
        // Off the allowlist: a lease refusal must come first, before the navigation check.
        action: SurfaceAction::Browser(BrowserAction::Navigate {
            url: "http://evil.example/".to_string(),
        }),
        target: None,
        declared_risk: None,
    };
    // Automation authorized at epoch 1; the run escalates and an operator claims.
    lease.escalate("test").unwrap();
    let denied = engine
        .authorize(&lease, request(Actor::Automation, 1))
        .unwrap_err();
    assert_eq!(denied.code, DenialCode::LeaseLost);
    assert!(
        denied.reason.contains("epoch 1") && denied.reason.contains("epoch 2"),
        "{}",
        denied.reason
    );
    lease.claim("ada", 2, 0, HOLD_MS).unwrap();
    for epoch in [1, 2, 3] {
        let denied = engine
            .authorize(&lease, request(Actor::Automation, epoch))
            .unwrap_err();
        assert_eq!(
            denied.code,
            DenialCode::LeaseLost,
            "automation at epoch {epoch}"
        );
    }
    // The human at the current epoch passes the lease (and is then stopped by the allowlist).
    let denied = engine
        .authorize(&lease, request(Actor::Human, 3))
        .unwrap_err();
    assert_eq!(denied.code, DenialCode::NavigationBlocked);
    // Nobody acts while paused or resuming, not even the system.
    lease.release("ada", 3).unwrap();
    for actor in [Actor::Automation, Actor::Human, Actor::System] {
        assert!(
            !lease.permits(actor, 4),
            "{} while resuming",
            actor.as_str()
        );
    }
    lease.resume().unwrap();
    assert!(lease.permits(Actor::Automation, 5));
    assert!(lease.permits(Actor::Agent, 5));
    assert!(!lease.permits(Actor::Automation, 4));
}

/// The wire names are a contract (evidence, the console's API): pinned here.
#[test]
fn lease_operations_have_fixed_wire_names() {
    let names: Vec<&str> = LeaseOperation::ALL
        .iter()
        .map(|operation| operation.as_str())
        .collect();
    assert_eq!(
        names,
        ["escalate", "claim", "release", "resume", "reclaim_expired"]
    );
}

/// Only a lost race is a conflict (409): a stale reading, or a claim of a session someone
/// holds. Any other illegal operation, and a hold not yet run out, is the caller's mistake.
#[test]
fn only_a_lost_race_is_a_conflict() {
    let illegal = |operation, state| LeaseError::Illegal {
        operation,
        state,
        epoch: 3,
    };
    assert!(illegal(LeaseOperation::Claim, LeaseState::HumanControl).is_conflict());
    assert!(!illegal(LeaseOperation::Claim, LeaseState::Running).is_conflict());
    assert!(!illegal(LeaseOperation::Escalate, LeaseState::HumanControl).is_conflict());
    assert!(
        LeaseError::StaleEpoch {
            operation: LeaseOperation::Release,
            expected: 2,
            current: 3
        }
        .is_conflict()
    );
    assert!(
        !LeaseError::HoldNotExpired {
            expires_at_ms: 10,
            now_ms: 5
        }
        .is_conflict()
    );
}
