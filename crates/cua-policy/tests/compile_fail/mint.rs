use cua_artifact::{Actor, RiskTier};
use cua_policy::{AuthorizedAction, BrowserAction, SurfaceAction};

fn main() {
    let _forged = AuthorizedAction::mint(
        Actor::Automation,
        1,
        "dec-forged".to_string(),
        cua_policy::RiskAssessment { tier: RiskTier::Safe, signals: vec![], reason: String::new() },
        SurfaceAction::Browser(BrowserAction::Click),
        None,
        None,
    );
}
