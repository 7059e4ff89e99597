// No code outside the crate can build an edge, or an offer to take one from.
use cua_route::{Edge, Offer, RecoveryEdge, RecoveryState};

fn main() {
    let _edge = Edge {
        label: RecoveryEdge::SettleConfirmed,
        target: RecoveryState::Confirmed,
    };
    let _offer = Offer {
        state: RecoveryState::Failed,
        retry_permitted: true,
    };
}
