use cua_artifact::{Actor, RiskTier};
use cua_policy::{AuthorizedAction, SurfaceAction};

fn main() {
    let _forged = AuthorizedAction {
        actor: Actor::Automation,
        lease_epoch: 1,
        decision_id: "dec-forged".to_string(),
        assessment: cua_policy::RiskAssessment { tier: RiskTier::Safe, signals: vec![], reason: String::new() },
        action: SurfaceAction::Click,
        target: None,
        program: Some(std::path::PathBuf::from("/bin/sh")),
    };
}
