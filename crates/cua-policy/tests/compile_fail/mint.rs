use cua_artifact::{Actor, RiskTier};
use cua_policy::{AuthorizedAction, SurfaceAction};

fn main() {
    let _forged = AuthorizedAction::mint(
        Actor::Automation,
        1,
        "dec-forged".to_string(),
        RiskTier::Safe,
        SurfaceAction::Click,
        None,
    );
}
