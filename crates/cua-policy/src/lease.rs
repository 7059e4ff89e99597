//! The session lease: who may act on the live session, in which control state, and under which
//! epoch; and the state machine an escalation, an operator's claim, a hand-back and a resume
//! move it through.
//!
//! ```text
//!   running ──escalate──▶ paused ──claim──▶ human_control ──release──▶ resuming ──resume──▶ running
//!                           ▲                     │
//!                           └──reclaim_expired────┘   (only once the hold has run out)
//! ```
//!
//! Every transition increments the epoch and returns a [`LeaseTransition`], the record the
//! caller writes as a `lease` evidence event. A transition that is not legal from the current
//! state is a [`LeaseError`] and changes nothing. An actor acting under an older epoch is
//! refused by [`Lease::permits`], which the policy engine checks before anything else.
//!
//! Architecture invariant: no clock is read here. Hold expiry takes the caller's `now` (epoch
//! milliseconds), so the same calls give the same lease.

use cua_artifact::Actor;

/// Who controls the live session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LeaseState {
    /// Automation (replay, or the discovery agent) acts.
    Running,
    /// Nobody acts: the run stopped for a human and waits to be claimed.
    Paused,
    /// A human operator holds the session, until the hold expires.
    HumanControl,
    /// The operator handed the session back; automation has not resumed yet.
    Resuming,
}

impl LeaseState {
    /// Every state, in the order of a full cycle.
    pub const ALL: [Self; 4] = [
        Self::Running,
        Self::Paused,
        Self::HumanControl,
        Self::Resuming,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::HumanControl => "human_control",
            Self::Resuming => "resuming",
        }
    }

    /// The holder a state implies: automation while running, the operator in human control,
    /// the system (nobody) otherwise.
    pub fn holder(self) -> Actor {
        match self {
            Self::Running => Actor::Automation,
            Self::HumanControl => Actor::Human,
            Self::Paused | Self::Resuming => Actor::System,
        }
    }
}

/// What was asked of the lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LeaseOperation {
    /// The run stopped for a human (or an operator paused it).
    Escalate,
    /// An operator took the session.
    Claim,
    /// The operator handed it back.
    Release,
    /// Automation resumed acting.
    Resume,
    /// An operator's hold ran out and the session returned to the queue.
    ReclaimExpired,
}

impl LeaseOperation {
    /// Every operation.
    pub const ALL: [Self; 5] = [
        Self::Escalate,
        Self::Claim,
        Self::Release,
        Self::Resume,
        Self::ReclaimExpired,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Escalate => "escalate",
            Self::Claim => "claim",
            Self::Release => "release",
            Self::Resume => "resume",
            Self::ReclaimExpired => "reclaim_expired",
        }
    }

    /// The one state this operation is legal from, and the state it leads to.
    pub fn edge(self) -> (LeaseState, LeaseState) {
        match self {
            Self::Escalate => (LeaseState::Running, LeaseState::Paused),
            Self::Claim => (LeaseState::Paused, LeaseState::HumanControl),
            Self::Release => (LeaseState::HumanControl, LeaseState::Resuming),
            Self::Resume => (LeaseState::Resuming, LeaseState::Running),
            Self::ReclaimExpired => (LeaseState::HumanControl, LeaseState::Paused),
        }
    }
}

/// Who holds the live session, in which state, and the epoch of that holding. Every
/// transition increments the epoch, so an action authorized under an older epoch is refused at
/// its dispatch. `Copy`, so a driver or executor can take a consistent reading under a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub holder: Actor,
    pub epoch: u64,
    pub state: LeaseState,
    /// When the operator's hold runs out (epoch milliseconds); set only in human control.
    pub hold_expires_at_ms: Option<u64>,
}

/// One transition, as the `lease` evidence event records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseTransition {
    pub operation: LeaseOperation,
    pub from: LeaseState,
    pub to: LeaseState,
    /// Who holds the session after the transition.
    pub holder: Actor,
    /// The epoch after the transition (always the previous epoch plus one).
    pub epoch: u64,
    /// The operator who claimed or released.
    pub operator: Option<String>,
    pub hold_expires_at_ms: Option<u64>,
    /// Why, in a few words (`unexpected_state at enter_member_id`, `hold expired`).
    pub note: String,
}

impl LeaseTransition {
    /// The history line `"{epoch}:{state}:{note}"`.
    pub fn history_line(&self) -> String {
        format!("{}:{}:{}", self.epoch, self.to.as_str(), self.note)
    }
}

/// Why a transition was refused. The lease is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeaseError {
    /// The operation is not legal from the current state (claiming a session someone already
    /// holds is the lost race of two claimers).
    #[error("cannot {} the session while it is {} (epoch {epoch})", operation.as_str(), state.as_str())]
    Illegal {
        operation: LeaseOperation,
        state: LeaseState,
        epoch: u64,
    },
    /// The caller acted on a reading of the lease that is no longer current.
    #[error("cannot {} the session at epoch {expected}: it is at epoch {current}", operation.as_str())]
    StaleEpoch {
        operation: LeaseOperation,
        expected: u64,
        current: u64,
    },
    /// The operator's hold has not run out yet.
    #[error("the operator's hold runs until {expires_at_ms} ms, it is {now_ms} ms")]
    HoldNotExpired { expires_at_ms: u64, now_ms: u64 },
}

impl LeaseError {
    /// Whether another party changed the lease first: a claim that lost its race, or a
    /// reading gone stale. The console answers these with 409.
    pub fn is_conflict(&self) -> bool {
        match self {
            Self::StaleEpoch { .. } => true,
            Self::Illegal {
                operation, state, ..
            } => *operation == LeaseOperation::Claim && *state == LeaseState::HumanControl,
            Self::HoldNotExpired { .. } => false,
        }
    }
}

impl Lease {
    /// A fresh lease held by `holder` at epoch 1, in the state that holder implies: running for
    /// automation or the agent, human control (with no expiry) for a human, paused for the
    /// system.
    pub fn new(holder: Actor) -> Self {
        Self {
            holder,
            epoch: 1,
            state: state_of(holder),
            hold_expires_at_ms: None,
        }
    }

    /// Hands the session to `holder` unconditionally, incrementing the epoch. For tools and
    /// tests outside the supervised cycle; the console uses the checked transitions.
    pub fn transfer(&mut self, holder: Actor) -> u64 {
        self.holder = holder;
        self.state = state_of(holder);
        self.hold_expires_at_ms = None;
        self.epoch += 1;
        self.epoch
    }

    /// Whether `actor` may act now under `epoch`: the same epoch, and the actor is on the side
    /// the state gives control to. Automation and the discovery agent both act through the
    /// automation side; the system never acts. Expiry is not considered (see
    /// [`Lease::permits_at`]).
    pub fn permits(&self, actor: Actor, epoch: u64) -> bool {
        let side = |a: Actor| match a {
            Actor::Automation | Actor::Agent => Actor::Automation,
            other => other,
        };
        let acting = match self.state {
            LeaseState::Running => Some(Actor::Automation),
            LeaseState::HumanControl => Some(Actor::Human),
            LeaseState::Paused | LeaseState::Resuming => None,
        };
        epoch == self.epoch && side(actor) == side(self.holder) && acting == Some(side(actor))
    }

    /// [`Lease::permits`], and the operator's hold has not run out at `now_ms`.
    pub fn permits_at(&self, actor: Actor, epoch: u64, now_ms: u64) -> bool {
        self.permits(actor, epoch) && !self.hold_expired(now_ms)
    }

    /// Whether an operator's hold exists and has run out at `now_ms`.
    pub fn hold_expired(&self, now_ms: u64) -> bool {
        self.state == LeaseState::HumanControl
            && self
                .hold_expires_at_ms
                .is_some_and(|expires| now_ms >= expires)
    }

    /// Running → paused: the run stopped for a human; nobody holds the session.
    pub fn escalate(&mut self, note: &str) -> Result<LeaseTransition, LeaseError> {
        self.apply(LeaseOperation::Escalate, None, None, None, note)
    }

    /// Paused → human control: `operator` holds the session until `now_ms + hold_for_ms`.
    /// `expected_epoch` is the epoch the operator saw; if the lease moved since (another
    /// operator claimed first), the claim is refused and nothing changes.
    pub fn claim(
        &mut self,
        operator: &str,
        expected_epoch: u64,
        now_ms: u64,
        hold_for_ms: u64,
    ) -> Result<LeaseTransition, LeaseError> {
        let expires = now_ms.saturating_add(hold_for_ms);
        self.apply(
            LeaseOperation::Claim,
            Some(expected_epoch),
            Some(operator),
            Some(expires),
            &format!("claimed by {operator}"),
        )
    }

    /// Human control → resuming: the operator handed the session back.
    pub fn release(
        &mut self,
        operator: &str,
        expected_epoch: u64,
    ) -> Result<LeaseTransition, LeaseError> {
        self.apply(
            LeaseOperation::Release,
            Some(expected_epoch),
            Some(operator),
            None,
            &format!("released by {operator}"),
        )
    }

    /// Resuming → running: automation acts again, under the new epoch.
    pub fn resume(&mut self) -> Result<LeaseTransition, LeaseError> {
        self.apply(
            LeaseOperation::Resume,
            None,
            None,
            None,
            "automation resumed",
        )
    }

    /// Human control → paused, once the hold has run out at `now_ms`.
    pub fn reclaim_expired(&mut self, now_ms: u64) -> Result<LeaseTransition, LeaseError> {
        if self.state == LeaseState::HumanControl && !self.hold_expired(now_ms) {
            // A hold without an expiry (a lease created for a human) never runs out.
            return Err(LeaseError::HoldNotExpired {
                expires_at_ms: self.hold_expires_at_ms.unwrap_or(u64::MAX),
                now_ms,
            });
        }
        self.apply(
            LeaseOperation::ReclaimExpired,
            None,
            None,
            None,
            "hold expired",
        )
    }

    /// Moves the operator's hold to `now_ms + hold_for_ms` while they keep working. Not a
    /// transition: the holder, state and epoch stay; only a current, unexpired hold extends.
    pub fn extend_hold(
        &mut self,
        expected_epoch: u64,
        now_ms: u64,
        hold_for_ms: u64,
    ) -> Result<(), LeaseError> {
        if self.state != LeaseState::HumanControl || self.hold_expired(now_ms) {
            return Err(LeaseError::Illegal {
                operation: LeaseOperation::Claim,
                state: self.state,
                epoch: self.epoch,
            });
        }
        if expected_epoch != self.epoch {
            return Err(LeaseError::StaleEpoch {
                operation: LeaseOperation::Claim,
                expected: expected_epoch,
                current: self.epoch,
            });
        }
        self.hold_expires_at_ms = Some(now_ms.saturating_add(hold_for_ms));
        Ok(())
    }

    fn apply(
        &mut self,
        operation: LeaseOperation,
        expected_epoch: Option<u64>,
        operator: Option<&str>,
        hold_expires_at_ms: Option<u64>,
        note: &str,
    ) -> Result<LeaseTransition, LeaseError> {
        let (from, to) = operation.edge();
        if self.state != from {
            return Err(LeaseError::Illegal {
                operation,
                state: self.state,
                epoch: self.epoch,
            });
        }
        if let Some(expected) = expected_epoch
            && expected != self.epoch
        {
            return Err(LeaseError::StaleEpoch {
                operation,
                expected,
                current: self.epoch,
            });
        }
        self.state = to;
        self.holder = to.holder();
        self.hold_expires_at_ms = hold_expires_at_ms;
        self.epoch += 1;
        Ok(LeaseTransition {
            operation,
            from,
            to,
            holder: self.holder,
            epoch: self.epoch,
            operator: operator.map(str::to_owned),
            hold_expires_at_ms,
            note: note.to_owned(),
        })
    }
}

/// The state a fresh or transferred lease is in for its holder.
fn state_of(holder: Actor) -> LeaseState {
    match holder {
        Actor::Automation | Actor::Agent => LeaseState::Running,
        Actor::Human => LeaseState::HumanControl,
        Actor::System => LeaseState::Paused,
    }
}
