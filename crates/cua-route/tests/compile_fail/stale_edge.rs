// An edge cannot leave the offer it came from: keeping one to take later does not compile.
use cua_route::{
    LogicalAction, Platform, ProviderRegistry, RecoveryEdge, RecoveryWalk, RouteRequest, plan,
};

fn main() {
    let request = RouteRequest::new(LogicalAction::HttpRead, Platform::Linux);
    let plan = plan(&request, &ProviderRegistry::builtin()).expect("plans");
    let walk = RecoveryWalk::start(&plan);
    let mut stash = None;
    let _ = walk.advance(|offer| {
        stash = offer.take(RecoveryEdge::Open);
        None
    });
}
