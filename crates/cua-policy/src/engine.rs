//! `PolicyEngine::authorize`: the single chokepoint every actor's action passes.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use cua_artifact::{ActionKind, Actor, RiskTier};

use crate::allowlist::Allowlist;
use crate::authorized::{AuthorizedAction, ResolvedTarget, SurfaceAction};
use crate::lease::Lease;

/// The rules the engine enforces, already parsed.
#[derive(Debug, Clone)]
pub struct PolicyRules {
    pub allowlist: Allowlist,
    /// Actions any actor may take.
    pub allowed_actions: BTreeSet<ActionKind>,
    /// Actions only a human operator may take (allowed for humans even when not listed above).
    pub human_only: BTreeSet<ActionKind>,
}

/// One proposed action, resolved and bound, with who proposes it and under which epoch.
#[derive(Debug, Clone)]
pub struct ActionRequest {
    pub actor: Actor,
    /// The lease epoch the proposer believes it acts under.
    pub epoch: u64,
    pub action: SurfaceAction,
    pub target: Option<ResolvedTarget>,
    /// The risk the capability declared for this step, if any.
    pub declared_risk: Option<RiskTier>,
}

/// Why an action was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenialCode {
    /// The actor does not hold the session at the epoch it acts under.
    LeaseLost,
    /// A navigation (or its destination) is outside the allowlist.
    NavigationBlocked,
    /// Anything else the policy does not permit.
    PolicyDenied,
}

/// A refusal with its code, a reason for the evidence, and the decision id it was logged under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub code: DenialCode,
    pub reason: String,
    pub decision_id: String,
}

/// The policy engine. Decision ids come from a per-engine counter, so the same run makes the
/// same ids.
#[derive(Debug)]
pub struct PolicyEngine {
    rules: PolicyRules,
    next_decision: AtomicU64,
}

impl PolicyEngine {
    pub fn new(rules: PolicyRules) -> Self {
        Self {
            rules,
            next_decision: AtomicU64::new(1),
        }
    }

    /// The allowlist this engine enforces (drivers enforce it again inside the browser).
    pub fn allowlist(&self) -> &Allowlist {
        &self.rules.allowlist
    }

    /// Decides one action. The lease is checked first, before anything else is considered.
    pub fn authorize(
        &self,
        lease: &Lease,
        request: ActionRequest,
    ) -> Result<AuthorizedAction, Denial> {
        let decision_id = format!(
            "dec-{:06}",
            self.next_decision.fetch_add(1, Ordering::Relaxed)
        );
        let deny = |code, reason: String| Denial {
            code,
            reason,
            decision_id: decision_id.clone(),
        };
        if !lease.permits(request.actor, request.epoch) {
            return Err(deny(
                DenialCode::LeaseLost,
                format!(
                    "{} acts under epoch {} but the session is held by {} at epoch {}",
                    request.actor.as_str(),
                    request.epoch,
                    lease.holder.as_str(),
                    lease.epoch
                ),
            ));
        }
        let kind = request.action.kind();
        if self.rules.human_only.contains(&kind) && request.actor != Actor::Human {
            return Err(deny(
                DenialCode::PolicyDenied,
                format!(
                    "`{}` is human-only; {} may not originate it",
                    kind.as_str(),
                    request.actor.as_str()
                ),
            ));
        }
        let human_only_for_human =
            request.actor == Actor::Human && self.rules.human_only.contains(&kind);
        if !self.rules.allowed_actions.contains(&kind) && !human_only_for_human {
            return Err(deny(
                DenialCode::PolicyDenied,
                format!(
                    "action `{}` is not on the policy's action allowlist",
                    kind.as_str()
                ),
            ));
        }
        if request.actor == Actor::System {
            return Err(deny(
                DenialCode::PolicyDenied,
                "the system actor never acts".to_string(),
            ));
        }
        if request.action.needs_target() && request.target.is_none() {
            return Err(deny(
                DenialCode::PolicyDenied,
                format!("`{}` needs a resolved target", kind.as_str()),
            ));
        }
        if let SurfaceAction::Navigate { url } = &request.action {
            self.rules
                .allowlist
                .check(url)
                .map_err(|blocked| deny(DenialCode::NavigationBlocked, blocked.reason))?;
        }
        let risk = request.declared_risk.unwrap_or_default();
        Ok(AuthorizedAction::mint(
            request.actor,
            request.epoch,
            decision_id,
            risk,
            request.action,
            request.target,
        ))
    }
}

#[cfg(test)]
mod tests {
    use cua_snapshot::NodeId;

    use super::*;

    fn engine() -> PolicyEngine {
        PolicyEngine::new(PolicyRules {
            allowlist: Allowlist::new(&["127.0.0.1".to_string()], &[]).unwrap(),
            allowed_actions: [ActionKind::Click, ActionKind::Navigate]
                .into_iter()
                .collect(),
            human_only: [ActionKind::RawInput].into_iter().collect(),
        })
    }

    fn request(actor: Actor, epoch: u64, action: SurfaceAction) -> ActionRequest {
        let target = action.needs_target().then(|| ResolvedTarget {
            node_id: NodeId::new("main:/document[0]/button[0]"),
            role: "button".into(),
            name: "Search".into(),
        });
        ActionRequest {
            actor,
            epoch,
            action,
            target,
            declared_risk: None,
        }
    }

    #[test]
    fn decisions() {
        let engine = engine();
        let lease = Lease::new(Actor::Automation);
        let cases: Vec<(ActionRequest, Result<(), DenialCode>)> = vec![
            (request(Actor::Automation, 1, SurfaceAction::Click), Ok(())),
            (
                request(Actor::Automation, 0, SurfaceAction::Click),
                Err(DenialCode::LeaseLost),
            ),
            (
                request(Actor::Human, 1, SurfaceAction::Click),
                Err(DenialCode::LeaseLost),
            ),
            (
                request(
                    Actor::Automation,
                    1,
                    SurfaceAction::Navigate {
                        url: "http://127.0.0.1:1/".into(),
                    },
                ),
                Ok(()),
            ),
            (
                request(
                    Actor::Automation,
                    1,
                    SurfaceAction::Navigate {
                        url: "http://evil.example/".into(),
                    },
                ),
                Err(DenialCode::NavigationBlocked),
            ),
            (
                request(Actor::Automation, 1, SurfaceAction::Reload),
                Err(DenialCode::PolicyDenied),
            ),
            (
                request(
                    Actor::Automation,
                    1,
                    SurfaceAction::RawInput(crate::RawInput::MouseClick { x: 1.0, y: 1.0 }),
                ),
                Err(DenialCode::PolicyDenied),
            ),
        ];
        for (request, expect) in cases {
            let described = format!("{request:?}");
            let got = engine
                .authorize(&lease, request)
                .map(|_| ())
                .map_err(|denial| denial.code);
            assert_eq!(got, expect, "{described}");
        }
    }

    #[test]
    fn human_may_use_human_only_actions_while_holding_the_session() {
        let engine = engine();
        let mut lease = Lease::new(Actor::Automation);
        let epoch = lease.transfer(Actor::Human);
        let raw = SurfaceAction::RawInput(crate::RawInput::MouseClick { x: 1.0, y: 2.0 });
        let authorized = engine
            .authorize(&lease, request(Actor::Human, epoch, raw))
            .unwrap();
        assert_eq!(authorized.actor(), Actor::Human);
        assert_eq!(authorized.lease_epoch(), 2);
        let stale = engine.authorize(&lease, request(Actor::Automation, 1, SurfaceAction::Click));
        assert_eq!(stale.unwrap_err().code, DenialCode::LeaseLost);
    }

    #[test]
    fn decision_ids_are_sequential() {
        let engine = engine();
        let lease = Lease::new(Actor::Automation);
        let first = engine
            .authorize(&lease, request(Actor::Automation, 1, SurfaceAction::Click))
            .unwrap();
        let denied = engine
            .authorize(&lease, request(Actor::Automation, 9, SurfaceAction::Click))
            .unwrap_err();
        assert_eq!(first.decision_id(), "dec-000001");
        assert_eq!(denied.decision_id, "dec-000002");
    }
}
