//! Tenant bindings (`cua.tenant_binding/v1`): how one tenant's deployment differs from the base
//! capability, as an overlay. Applying a binding to a sealed base yields an effective capability
//! that is re-validated and resealed, so its hash covers base and overlay together.
//!
//! An overlay fails closed: an override naming a step the base does not have, or a target
//! override on a step without a target, is an error, never a no-op. An overlay may narrow the
//! capability's policy and never widen it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::approval::CapabilityApproval;
use crate::capability::{Capability, CapabilityPolicy, RecoveryRule, WaitPolicy};
use crate::diagnostic::{DiagnosticCode, Problem};
use crate::document::TenantBindingSchema;
use crate::error::ArtifactError;
use crate::hash::SealState;
use crate::identifiers::{CapabilityRef, Identifier, StepId, TenantId};
use crate::predicate::{NodeScope, Predicate};
use crate::source_map::DocPath;
use crate::target::{Anchor, Hints, IdentityCheck, NameMatch};
use crate::validate::{ValidationConfig, validate_capability};
use crate::vocabulary::{ActionKind, ResolutionStrategy};

/// One tenant's overlay on one pinned capability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "cua tenant binding (cua.tenant_binding/v1)")]
pub struct TenantBinding {
    pub schema: TenantBindingSchema,
    /// The base capability, pinned.
    pub capability: CapabilityRef,
    pub tenant: TenantId,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Replaces `{name}` placeholders in every string of the base; unknown placeholders stay.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vars: BTreeMap<Identifier, String>,
    /// Per-step changes, by step id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<StepId, StepOverride>,
    /// Recovery rules appended after the base's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovery_extra: Vec<RecoveryRule>,
    /// Replaces the whole checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Predicate>,
    /// Narrows the capability's policy further.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyNarrowing>,
}

/// Changes to one step. `target` merges field by field; the others replace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepOverride {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetOverride>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<WaitPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precondition: Option<Predicate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postcondition: Option<Predicate>,
}

/// The target fields an overlay may set; each given field replaces the base's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetOverride {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<NameMatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<NodeScope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<Anchor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentityCheck>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Hints>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_strategy: Option<ResolutionStrategy>,
}

/// A narrower policy: every given field must be within the base's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyNarrowing {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_domains: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_actions: Option<Vec<ActionKind>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_ms: Option<u64>,
}

impl TenantBinding {
    /// Whether the binding only substitutes vars: no overrides, no extra recovery, no
    /// checkpoint, no policy. Only such a binding can carry the base's approval across.
    pub fn substitutes_only(&self) -> bool {
        self.overrides.is_empty()
            && self.recovery_extra.is_empty()
            && self.checkpoint.is_none()
            && self.policy.is_none()
    }

    /// The effective capability: base ⊕ overlay, re-validated and resealed. Overlay problems
    /// are reported with paths into the binding; problems of the result with paths into the
    /// effective capability, prefixed `effective:` in the message.
    pub fn apply(&self, base: &Capability) -> Result<Capability, ArtifactError> {
        self.apply_with(base, &ValidationConfig::default())
    }

    /// What a tenant's own approval is pinned to: the binding applied to its base without its
    /// `base_url` var, which names a deployment rather than what the capability does, so an
    /// approval holds wherever the tenant's app is served.
    pub fn reviewed(&self, base: &Capability) -> Result<Capability, ArtifactError> {
        let mut reviewed = self.clone();
        reviewed.vars.retain(|name, _| name.as_str() != "base_url");
        reviewed.apply(base)
    }

    /// [`TenantBinding::apply`] with explicit validation settings.
    pub fn apply_with(
        &self,
        base: &Capability,
        config: &ValidationConfig,
    ) -> Result<Capability, ArtifactError> {
        if self.capability != base.reference() {
            return Err(ArtifactError::BindingMismatch {
                binding: Box::new(self.capability.clone()),
                base: Box::new(base.reference()),
            });
        }
        match base.seal_state() {
            SealState::Sealed(_) => {}
            SealState::Draft => {
                return Err(ArtifactError::BaseNotSealed {
                    reference: Box::new(base.reference()),
                });
            }
            SealState::Tampered { declared, computed } => {
                return Err(ArtifactError::Tampered {
                    reference: Box::new(base.reference()),
                    declared,
                    computed,
                });
            }
        }
        let mut problems = Vec::new();
        let mut effective = self.substitute(base)?;
        let root = DocPath::root();

        for (step_id, step_override) in &self.overrides {
            let path = root.key("overrides").key(step_id.as_str());
            let Some(step) = effective.steps.iter_mut().find(|step| step.id == *step_id) else {
                problems.push(Problem::new(
                    DiagnosticCode::OverlayUnknownStep,
                    path,
                    format!(
                        "override names step `{step_id}`, which {} does not have",
                        self.capability
                    ),
                    format!(
                        "steps are: {}",
                        base.steps
                            .iter()
                            .map(|s| s.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
                continue;
            };
            if let Some(target_override) = &step_override.target {
                match step.action.target_mut() {
                    Some(target) => {
                        let o = target_override.clone();
                        if let Some(role) = o.role {
                            target.role = role;
                        }
                        if o.name.is_some() {
                            target.name = o.name;
                        }
                        if o.scope.is_some() {
                            target.scope = o.scope;
                        }
                        if o.anchor.is_some() {
                            target.anchor = o.anchor;
                        }
                        if o.ordinal.is_some() {
                            target.ordinal = o.ordinal;
                        }
                        if o.identity.is_some() {
                            target.identity = o.identity;
                        }
                        if let Some(hints) = o.hints {
                            target.hints = hints;
                        }
                        if o.recorded_strategy.is_some() {
                            target.recorded_strategy = o.recorded_strategy;
                        }
                    }
                    None => problems.push(Problem::new(
                        DiagnosticCode::OverlayTargetWithoutTarget,
                        path.key("target"),
                        format!("step `{step_id}` ({}) has no target to override", step.action.kind().as_str()),
                        "override the step's wait or conditions instead, or drop the target override",
                    )),
                }
            }
            if let Some(wait) = &step_override.wait {
                step.wait = wait.clone();
            }
            if let Some(precondition) = &step_override.precondition {
                step.precondition = Some(precondition.clone());
            }
            if let Some(postcondition) = &step_override.postcondition {
                step.postcondition = Some(postcondition.clone());
            }
        }
        effective
            .recovery
            .extend(self.recovery_extra.iter().cloned());
        if let Some(checkpoint) = &self.checkpoint {
            effective.checkpoint = checkpoint.clone();
        }
        if let Some(narrowing) = &self.policy {
            problems.extend(narrowing.narrow(
                &mut effective.policy,
                &root.key("policy"),
                &self.vars,
            ));
        }
        if !problems.is_empty() {
            return Err(ArtifactError::Invalid(problems));
        }
        effective.content_hash = None;
        let effective_problems: Vec<Problem> = validate_capability(&effective, config)
            .into_iter()
            .map(|problem| Problem {
                message: format!("effective: {}", problem.message),
                ..problem
            })
            .collect();
        if !effective_problems.is_empty() {
            return Err(ArtifactError::Invalid(effective_problems));
        }
        Ok(effective.sealed())
    }

    /// Whether an approval of the base carries to the effective capability: the binding only
    /// substitutes, the approval covers the base's sealed hash, and applying the binding again
    /// yields exactly `effective` (same hash). Returns the refusal reason otherwise.
    pub fn carries_approval(
        &self,
        base: &Capability,
        approval: &CapabilityApproval,
        effective: &Capability,
    ) -> Result<(), String> {
        if !self.substitutes_only() {
            return Err(
                "the binding overrides more than vars; it needs its own approval".to_owned(),
            );
        }
        let SealState::Sealed(base_hash) = base.seal_state() else {
            return Err("the base capability is not sealed".to_owned());
        };
        if !approval.covers(&base_hash) {
            return Err(format!(
                "the approval does not cover {} at {base_hash}",
                base.reference()
            ));
        }
        if !approval.scope.tenants.is_empty() && !approval.scope.tenants.contains(&self.tenant) {
            return Err(format!(
                "the approval does not extend to tenant {}",
                self.tenant
            ));
        }
        let derived = self
            .apply(base)
            .map_err(|error| format!("the binding does not apply: {error}"))?;
        match (derived.content_hash, &effective.content_hash) {
            (Some(derived), Some(claimed))
                if derived == *claimed
                    && effective.seal_state() == SealState::Sealed(derived.clone()) =>
            {
                Ok(())
            }
            _ => Err(
                "the effective capability is not what this binding derives from this base"
                    .to_owned(),
            ),
        }
    }

    /// The base with every `{var}` replaced in every string.
    fn substitute(&self, base: &Capability) -> Result<Capability, ArtifactError> {
        if self.vars.is_empty() {
            return Ok(base.clone());
        }
        let mut value = serde_json::to_value(base).map_err(ArtifactError::serialize)?;
        substitute_strings(&mut value, &self.vars);
        serde_json::from_value(value).map_err(ArtifactError::serialize)
    }
}

impl PolicyNarrowing {
    /// Applies the narrowing to `policy`, reporting every field that would widen it.
    fn narrow(
        &self,
        policy: &mut CapabilityPolicy,
        path: &DocPath,
        vars: &BTreeMap<Identifier, String>,
    ) -> Vec<Problem> {
        let mut problems = Vec::new();
        let widen = |field: &str, message: String| {
            Problem::new(
                DiagnosticCode::OverlayWidensPolicy,
                path.key(field),
                message,
                "a tenant binding may only narrow the capability's policy; widening needs a new capability version and its own review",
            )
        };
        if let Some(domains) = &self.allowed_domains {
            // The base's domains were substituted already; compare like with like.
            let domains: Vec<String> = domains
                .iter()
                .map(|domain| {
                    let mut value = serde_json::Value::from(domain.as_str());
                    substitute_strings(&mut value, vars);
                    value.as_str().unwrap_or(domain).to_owned()
                })
                .collect();
            let extra: Vec<&String> = domains
                .iter()
                .filter(|domain| !policy.allowed_domains.contains(domain))
                .collect();
            if extra.is_empty() {
                policy.allowed_domains = domains;
            } else {
                problems.push(widen(
                    "allowed_domains",
                    format!("allowed_domains adds {extra:?}, which the capability does not allow"),
                ));
            }
        }
        if let Some(actions) = &self.allowed_actions {
            let extra: Vec<&str> = actions
                .iter()
                .filter(|action| !policy.allowed_actions.contains(action))
                .map(|action| action.as_str())
                .collect();
            if extra.is_empty() {
                policy.allowed_actions = actions.clone();
            } else {
                problems.push(widen(
                    "allowed_actions",
                    format!("allowed_actions adds {extra:?}, which the capability does not allow"),
                ));
            }
        }
        if let Some(max_steps) = self.max_steps {
            if max_steps > policy.max_steps {
                problems.push(widen(
                    "max_steps",
                    format!(
                        "max_steps {max_steps} is above the capability's {}",
                        policy.max_steps
                    ),
                ));
            } else {
                policy.max_steps = max_steps;
            }
        }
        if let Some(max_duration_ms) = self.max_duration_ms {
            if max_duration_ms > policy.max_duration_ms {
                problems.push(widen(
                    "max_duration_ms",
                    format!(
                        "max_duration_ms {max_duration_ms} is above the capability's {}",
                        policy.max_duration_ms
                    ),
                ));
            } else {
                policy.max_duration_ms = max_duration_ms;
            }
        }
        problems
    }
}

fn substitute_strings(value: &mut serde_json::Value, vars: &BTreeMap<Identifier, String>) {
    match value {
        serde_json::Value::String(text) => {
            if text.contains('{') {
                for (name, replacement) in vars {
                    let placeholder = format!("{{{name}}}");
                    if text.contains(&placeholder) {
                        *text = text.replace(&placeholder, replacement);
                    }
                }
            }
        }
        serde_json::Value::Array(items) => items
            .iter_mut()
            .for_each(|item| substitute_strings(item, vars)),
        serde_json::Value::Object(object) => object
            .values_mut()
            .for_each(|item| substitute_strings(item, vars)),
        serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {}
    }
}
