//! The session lease: who may act on the live session, and under which epoch.

use cua_artifact::Actor;

/// Who holds the live session and the epoch of that holding. Every transition increments the
/// epoch, so an action authorized under an older epoch is refused at its dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub holder: Actor,
    pub epoch: u64,
}

impl Lease {
    /// A fresh lease held by `holder` at epoch 1.
    pub fn new(holder: Actor) -> Self {
        Self { holder, epoch: 1 }
    }

    /// Hands the session to `holder`, incrementing the epoch.
    pub fn transfer(&mut self, holder: Actor) -> u64 {
        self.holder = holder;
        self.epoch += 1;
        self.epoch
    }

    /// Whether `actor` may act now under `epoch`. Automation and the discovery agent both act
    /// through the automation side of the lease.
    pub fn permits(&self, actor: Actor, epoch: u64) -> bool {
        let side = |a: Actor| match a {
            Actor::Automation | Actor::Agent => Actor::Automation,
            other => other,
        };
        epoch == self.epoch && side(actor) == side(self.holder)
    }
}
