// An edge offered to one walk cannot move another.
use cua_route::{
    LogicalAction, Platform, Position, ProviderRegistry, RecoveryEdge, RecoveryWalk, RouteRequest,
    plan,
};

fn main() {
    let request = RouteRequest::new(LogicalAction::HttpRead, Platform::Linux);
    let plan = plan(&request, &ProviderRegistry::builtin()).expect("plans");
    let first = RecoveryWalk::start(&plan);
    let second = RecoveryWalk::start(&plan);
    let _ = first.advance(|first_offer| {
        let _: Position = second.advance(|_second_offer| first_offer.take(RecoveryEdge::Open));
        None
    });
}
