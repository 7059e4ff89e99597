//! `PolicyEngine::authorize`: the single chokepoint every actor's action passes.
//!
//! Order of checks, each a refusal of its own: the lease (first, before anything else), the
//! system actor, human-only actions, the action allowlist and the capability's narrowing of it,
//! a target for actions that need one, the navigation allowlist, then the risk tier and the
//! actor's disposition for it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use cua_artifact::{
    ActionKind, Actor, Budgets, Capability, Disposition, DispositionTable, Dispositions,
    PolicyConfig, ReplayGates, RiskLexicon, RiskRules, RiskTier,
};

use crate::allowlist::{Allowlist, AllowlistError, BlockedUrl};
use crate::authorized::{AuthorizedAction, BrowserAction, ResolvedTarget, SurfaceAction};
use crate::budget::RunBudget;
use crate::grant::IrreversibleGrant;
use crate::lease::Lease;

/// A policy that cannot be turned into an engine.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("the policy's allowlist is malformed")]
    Allowlist(#[from] AllowlistError),
}

/// The minimal rules: where to go and what to do. [`PolicyEngine::new`] completes them with
/// the default risk lexicon, dispositions, gates and budgets; [`PolicyEngine::from_config`]
/// reads every rule from the policy file.
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

/// What accompanies a request beyond the action itself: a human's explicit confirmation, and
/// the irreversible grant of a replay.
#[derive(Debug, Clone)]
pub struct AuthorizationContext {
    /// The operator confirmed this exact action (the console's "Confirm").
    pub confirmed: bool,
    pub grant: IrreversibleGrant,
}

impl Default for AuthorizationContext {
    fn default() -> Self {
        Self {
            confirmed: false,
            grant: IrreversibleGrant::none(),
        }
    }
}

/// The risk tier of an action and the signals that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RiskAssessment {
    pub tier: RiskTier,
    /// Each signal that raised the tier, e.g. `lexicon:"transfer funds"`, `declared:irreversible`.
    pub signals: Vec<String>,
    /// One line for evidence, e.g. `irreversible (lexicon:"transfer funds", declared:irreversible)`.
    pub reason: String,
}

/// Why an action was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenialCode {
    /// The actor does not hold the session at the epoch it acts under.
    LeaseLost,
    /// A navigation (or its destination) is outside the allowlist.
    NavigationBlocked,
    /// A human must confirm this action explicitly before it is dispatched.
    NeedsConfirmation,
    /// Anything else the policy does not permit.
    PolicyDenied,
}

impl DenialCode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LeaseLost => "lease_lost",
            Self::NavigationBlocked => "navigation_blocked",
            Self::NeedsConfirmation => "needs_confirmation",
            Self::PolicyDenied => "policy_denied",
        }
    }
}

/// A refusal with its code, a reason for the evidence, and the decision id it was logged under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub code: DenialCode,
    pub reason: String,
    pub decision_id: String,
    /// The risk assessment, when the refusal came from the risk stage.
    pub assessment: Option<RiskAssessment>,
}

/// The policy engine. Decision ids come from a per-engine counter (`dec-000001`, …), so the
/// same run makes the same ids; [`PolicyEngine::for_capability`] starts a fresh counter.
#[derive(Debug)]
pub struct PolicyEngine {
    allowlist: Allowlist,
    allowed_actions: BTreeSet<ActionKind>,
    human_only: BTreeSet<ActionKind>,
    risk: RiskRules,
    dispositions: Dispositions,
    gates: ReplayGates,
    budgets: Budgets,
    /// Declared executables by name (`commands.allowed`).
    commands: BTreeMap<String, PathBuf>,
    /// Set for a nested run sharing its parent's trace: ids read `dec-<namespace>-000001`.
    decision_namespace: String,
    next_decision: AtomicU64,
}

impl Clone for PolicyEngine {
    fn clone(&self) -> Self {
        Self {
            allowlist: self.allowlist.clone(),
            allowed_actions: self.allowed_actions.clone(),
            human_only: self.human_only.clone(),
            risk: self.risk.clone(),
            dispositions: self.dispositions.clone(),
            gates: self.gates,
            budgets: self.budgets,
            commands: self.commands.clone(),
            decision_namespace: self.decision_namespace.clone(),
            next_decision: AtomicU64::new(1),
        }
    }
}

impl PolicyEngine {
    /// An engine from minimal rules, with the default lexicon, dispositions (automation:
    /// safe allow, elevated allow_if_declared, irreversible allow_if_approved; agent: the same
    /// but irreversible blocked; human: allow, allow, require_confirmation), both replay gates
    /// on, and default budgets.
    pub fn new(rules: PolicyRules) -> Self {
        let table = |safe, elevated, irreversible| DispositionTable {
            safe,
            elevated,
            irreversible,
        };
        Self {
            allowlist: rules.allowlist,
            allowed_actions: rules.allowed_actions,
            human_only: rules.human_only,
            risk: RiskRules {
                default_tier: RiskTier::Safe,
                tiers_by_action: [(ActionKind::RawInput, RiskTier::Elevated)]
                    .into_iter()
                    .collect(),
                lexicon: RiskLexicon::default(),
            },
            dispositions: Dispositions {
                automation: table(
                    Disposition::Allow,
                    Disposition::AllowIfDeclared,
                    Disposition::AllowIfApproved,
                ),
                agent: table(
                    Disposition::Allow,
                    Disposition::AllowIfDeclared,
                    Disposition::BlockAndEscalate,
                ),
                human: table(
                    Disposition::Allow,
                    Disposition::Allow,
                    Disposition::RequireConfirmation,
                ),
            },
            gates: ReplayGates {
                irreversible_requires_approval: true,
                irreversible_requires_caller_optin: true,
            },
            budgets: Budgets {
                max_steps: 40,
                max_duration_ms: 120_000,
                max_recovery_attempts_total: 6,
            },
            commands: BTreeMap::new(),
            decision_namespace: String::new(),
            next_decision: AtomicU64::new(1),
        }
    }

    /// An engine enforcing every rule of the policy file.
    pub fn from_config(config: &PolicyConfig) -> Result<Self, PolicyError> {
        Ok(Self {
            allowlist: Allowlist::new(&config.allowlist.hosts, &config.allowlist.url_patterns)?,
            allowed_actions: config.actions.allowed.iter().copied().collect(),
            human_only: config.actions.human_only.iter().copied().collect(),
            risk: config.risk.clone(),
            dispositions: config.dispositions.clone(),
            gates: config.replay_gates,
            budgets: config.budgets,
            commands: config
                .commands
                .allowed
                .iter()
                .map(|command| (command.name.clone(), PathBuf::from(&command.path)))
                .collect(),
            decision_namespace: String::new(),
            next_decision: AtomicU64::new(1),
        })
    }

    /// This engine narrowed by a capability's own policy (its allowed domains and actions),
    /// with a fresh decision counter for the run. A capability can only narrow.
    pub fn for_capability(&self, capability: &Capability) -> Result<Self, PolicyError> {
        let mut narrowed = self.clone();
        narrowed.allowlist = self
            .allowlist
            .narrowed(&capability.policy.allowed_domains)?;
        let allowed: BTreeSet<ActionKind> =
            capability.policy.allowed_actions.iter().copied().collect();
        narrowed.allowed_actions = self
            .allowed_actions
            .intersection(&allowed)
            .copied()
            .collect();
        Ok(narrowed)
    }

    /// This engine with its decision ids in a namespace, `dec-<namespace>-000001`, and a fresh
    /// counter. A nested run (a `run_capability` remedy) writes into its parent's trace, where
    /// its decisions must not repeat the parent's ids. Characters other than ASCII letters,
    /// digits, `-` and `_` are dropped from the namespace.
    pub fn with_decision_namespace(mut self, namespace: &str) -> Self {
        self.decision_namespace = namespace
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
            .collect();
        self.next_decision = AtomicU64::new(1);
        self
    }

    /// This engine with its relative command paths resolved against `base` (the directory of
    /// the policy file that declared them).
    pub fn with_command_base(mut self, base: &std::path::Path) -> Self {
        for path in self.commands.values_mut() {
            if path.is_relative() {
                *path = base.join(&*path);
            }
        }
        self
    }

    /// The allowlist this engine enforces (drivers enforce it again inside the browser).
    pub fn allowlist(&self) -> &Allowlist {
        &self.allowlist
    }

    /// The replay gates for irreversible steps.
    pub fn gates(&self) -> &ReplayGates {
        &self.gates
    }

    /// The budget of one run of `capability` under this policy.
    pub fn run_budget(&self, capability: &Capability) -> RunBudget {
        RunBudget::for_capability(&self.budgets, capability)
    }

    /// Checks where a navigation landed (the action was allowed; its destination may not be).
    pub fn check_landing(&self, url: &str) -> Result<(), BlockedUrl> {
        self.allowlist.check(url)
    }

    /// The preflight gate for a capability whose highest risk is irreversible, checked before
    /// the first action (and again by [`PolicyEngine::authorize_with`] at the dispatch).
    pub fn preflight_irreversible(
        &self,
        capability: &Capability,
        grant: &IrreversibleGrant,
    ) -> Result<(), String> {
        if capability.max_risk() < RiskTier::Irreversible {
            return Ok(());
        }
        match grant.refusal(&self.gates) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    /// The risk tier of an action: the maximum of the policy's default, the action type, the
    /// resolved control's name against the lexicon, and the declared risk. A read-only action
    /// is safe whatever the control says.
    pub fn assess(
        &self,
        kind: ActionKind,
        target: Option<&ResolvedTarget>,
        declared: Option<RiskTier>,
    ) -> RiskAssessment {
        self.assess_with_confirm(kind, target, declared, None)
    }

    /// [`PolicyEngine::assess`] for an action that may answer OK to a `confirm()` with this
    /// message: saying OK is at least elevated, and the message is read by the lexicon as a
    /// button's name would be ("Delete this category?" is what "Delete" is).
    pub fn assess_with_confirm(
        &self,
        kind: ActionKind,
        target: Option<&ResolvedTarget>,
        declared: Option<RiskTier>,
        confirm: Option<&str>,
    ) -> RiskAssessment {
        if kind.is_read_only() {
            return RiskAssessment {
                tier: RiskTier::Safe,
                signals: vec!["read_only_action".to_string()],
                reason: "safe (read_only_action)".to_string(),
            };
        }
        let mut tier = self.risk.default_tier;
        let mut signals = Vec::new();
        let mut raise = |candidate: RiskTier, signal: String| {
            if candidate > RiskTier::Safe {
                signals.push(signal);
            }
            tier = tier.max(candidate);
        };
        if let Some(by_action) = self.risk.tiers_by_action.get(&kind) {
            raise(*by_action, format!("action:{}", kind.as_str()));
        }
        // A click at coordinates cannot see what it clicks: never safe, whatever the rules say.
        if kind == ActionKind::ClickAt {
            raise(RiskTier::Elevated, "coordinate_action".to_string());
        }
        if let Some(target) = target
            && let Some((lexicon_tier, phrase)) =
                self.risk.lexicon.classify(&target.role, &target.name)
        {
            raise(lexicon_tier, format!("lexicon:{phrase:?}"));
        }
        if let Some(message) = confirm {
            raise(RiskTier::Elevated, "accepts_confirm".to_string());
            if let Some((lexicon_tier, phrase)) = self.risk.lexicon.classify("button", message) {
                raise(lexicon_tier, format!("confirm_lexicon:{phrase:?}"));
            }
        }
        if let Some(declared) = declared {
            raise(declared, format!("declared:{}", declared.as_str()));
        }
        let reason = if signals.is_empty() {
            format!("{} (default)", tier.as_str())
        } else {
            format!("{} ({})", tier.as_str(), signals.join(", "))
        };
        RiskAssessment {
            tier,
            signals,
            reason,
        }
    }

    /// Decides one action with no confirmation and no irreversible grant.
    pub fn authorize(
        &self,
        lease: &Lease,
        request: ActionRequest,
    ) -> Result<AuthorizedAction, Denial> {
        self.authorize_with(lease, request, &AuthorizationContext::default())
    }

    /// Decides one action. The lease is checked first, before anything else is considered.
    pub fn authorize_with(
        &self,
        lease: &Lease,
        request: ActionRequest,
        context: &AuthorizationContext,
    ) -> Result<AuthorizedAction, Denial> {
        let number = self.next_decision.fetch_add(1, Ordering::Relaxed);
        let decision_id = if self.decision_namespace.is_empty() {
            format!("dec-{number:06}")
        } else {
            format!("dec-{}-{number:06}", self.decision_namespace)
        };
        let deny = |code, reason: String| Denial {
            code,
            reason,
            decision_id: decision_id.clone(),
            assessment: None,
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
        if request.actor == Actor::System {
            return Err(deny(
                DenialCode::PolicyDenied,
                "the system actor never acts".to_string(),
            ));
        }
        let kind = request.action.kind();
        let human_only = kind.is_human_only() || self.human_only.contains(&kind);
        if human_only && request.actor != Actor::Human {
            return Err(deny(
                DenialCode::PolicyDenied,
                format!(
                    "`{}` is human-only; {} may not originate it",
                    kind.as_str(),
                    request.actor.as_str()
                ),
            ));
        }
        if !self.allowed_actions.contains(&kind) && !human_only {
            return Err(deny(
                DenialCode::PolicyDenied,
                format!("action `{}` is not on the action allowlist", kind.as_str()),
            ));
        }
        if request.action.needs_target() && request.target.is_none() {
            return Err(deny(
                DenialCode::PolicyDenied,
                format!("`{}` needs a resolved target", kind.as_str()),
            ));
        }
        let mut program = None;
        match &request.action {
            SurfaceAction::Browser(BrowserAction::Navigate { url }) => {
                self.allowlist
                    .check(url)
                    .map_err(|blocked| deny(DenialCode::NavigationBlocked, blocked.reason))?;
            }
            // A request reaches a service exactly where a navigation could: the same allowlist.
            SurfaceAction::Http(http) => {
                self.allowlist
                    .check(&http.url)
                    .map_err(|blocked| deny(DenialCode::NavigationBlocked, blocked.reason))?;
            }
            SurfaceAction::Command(command) => match self.commands.get(&command.executable) {
                Some(path) => program = Some(path.clone()),
                None => {
                    return Err(deny(
                        DenialCode::PolicyDenied,
                        format!(
                            "command `{}` is not declared in the policy's `commands.allowed`",
                            command.executable
                        ),
                    ));
                }
            },
            _ => {}
        }
        let assessment = if request.action.is_read_only() && !kind.is_read_only() {
            RiskAssessment {
                tier: RiskTier::Safe,
                signals: vec!["safe_method".to_string()],
                reason: "safe (safe_method)".to_string(),
            }
        } else {
            let confirm = match &request.action {
                SurfaceAction::Browser(BrowserAction::ClickAcceptingConfirm { confirm }) => {
                    Some(confirm.as_str())
                }
                _ => None,
            };
            self.assess_with_confirm(
                kind,
                request.target.as_ref(),
                request.declared_risk,
                confirm,
            )
        };
        let disposition = self
            .dispositions
            .disposition(request.actor, assessment.tier);
        let refuse = |code, reason: String| Denial {
            code,
            reason: format!(
                "{reason} [{}; disposition {}]",
                assessment.reason,
                disposition.as_str()
            ),
            decision_id: decision_id.clone(),
            assessment: Some(assessment.clone()),
        };
        let declared_covers = request
            .declared_risk
            .is_some_and(|declared| declared >= assessment.tier);
        match disposition {
            Disposition::Allow => {}
            Disposition::AllowIfDeclared if declared_covers => {}
            Disposition::AllowIfDeclared => {
                return Err(refuse(
                    DenialCode::PolicyDenied,
                    format!(
                        "{} action not declared by the capability",
                        assessment.tier.as_str()
                    ),
                ));
            }
            Disposition::AllowIfApproved => {
                if request.declared_risk != Some(assessment.tier) {
                    return Err(refuse(
                        DenialCode::PolicyDenied,
                        format!(
                            "the step must declare risk {} to be approved for it",
                            assessment.tier.as_str()
                        ),
                    ));
                }
                if let Some(reason) = context.grant.refusal(&self.gates) {
                    return Err(refuse(DenialCode::PolicyDenied, reason));
                }
            }
            Disposition::RequireConfirmation if context.confirmed => {}
            Disposition::RequireConfirmation => {
                return Err(refuse(
                    DenialCode::NeedsConfirmation,
                    "the operator must confirm this action explicitly".to_string(),
                ));
            }
            Disposition::BlockAndEscalate => {
                return Err(refuse(
                    DenialCode::PolicyDenied,
                    format!(
                        "{} may not take {} actions",
                        request.actor.as_str(),
                        assessment.tier.as_str()
                    ),
                ));
            }
        }
        Ok(AuthorizedAction::mint(
            request.actor,
            request.epoch,
            decision_id,
            assessment,
            request.action,
            request.target,
            program,
        ))
    }
}
