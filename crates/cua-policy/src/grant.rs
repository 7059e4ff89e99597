//! The irreversible grant: what `allow_if_approved` requires, computed from the documents
//! themselves so that nobody can hand the engine a pre-approved flag.

use cua_artifact::{
    Capability, CapabilityApproval, PreparedCapability, ReplayGates, SealState, TenantBinding,
};

/// Evidence that an irreversible step may run unattended: the caller's opt-in and an approval
/// pinned to the recomputed content hash (directly, through a substitution-only tenant binding
/// re-derived from its approved base, or as a tenant's own approval of its binding). Private fields; built only by
/// [`IrreversibleGrant::evaluate`], which checks the documents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrreversibleGrant {
    caller_opt_in: bool,
    approval: Result<String, String>,
}

/// The tenant side of an approval: the sealed base and the binding that produced the
/// capability being run.
#[derive(Debug, Clone, Copy)]
pub struct BoundFrom<'a> {
    pub base: &'a Capability,
    pub binding: &'a TenantBinding,
}

/// A tenant's own approval: scoped to the binding's tenant and pinned to the hash of the binding
/// applied to the sealed base without an invocation's `base_url` (what `cua validate` prints as
/// the binding's effective hash, the capability a reviewer read for that tenant). What is about
/// to run must be that same binding re-derived from the base, with only `base_url` added.
fn tenant_approval(
    bound: BoundFrom<'_>,
    approval: &CapabilityApproval,
    capability: &Capability,
) -> Result<String, String> {
    let approved = bound
        .binding
        .reviewed(bound.base)
        .map_err(|error| format!("the binding does not apply: {error}"))?;
    let Some(hash) = approved.content_hash else {
        return Err("the binding's capability has no content hash".to_owned());
    };
    if !approval.covers(&hash) {
        return Err(format!(
            "it does not cover tenant {}'s capability at {hash} (it pins {}, state {:?})",
            bound.binding.tenant, approval.content_hash, approval.state
        ));
    }
    let derived = bound
        .binding
        .apply(bound.base)
        .map_err(|error| format!("the binding does not apply: {error}"))?;
    if derived.content_hash != capability.content_hash {
        return Err(
            "the capability about to run is not the binding applied to its base".to_owned(),
        );
    }
    Ok(format!(
        "{} approved for tenant {} at {hash} by {}",
        capability.reference(),
        bound.binding.tenant,
        approval
            .approved_by
            .as_deref()
            .unwrap_or("an unnamed reviewer")
    ))
}

impl IrreversibleGrant {
    /// The grant of a prepared capability: its approval matched against the recomputed hash
    /// (or carried through its binding), and the caller's opt-in.
    pub fn for_prepared(prepared: &PreparedCapability, caller_opt_in: bool) -> Self {
        Self::evaluate(
            &prepared.capability,
            prepared.approval.as_ref(),
            prepared.overlay.as_ref().map(|overlay| BoundFrom {
                base: &overlay.base,
                binding: &overlay.binding,
            }),
            caller_opt_in,
        )
    }

    /// Checks the approval against the capability about to run. The hash is recomputed from
    /// the capability's content, so a stale declared hash cannot match.
    pub fn evaluate(
        capability: &Capability,
        approval: Option<&CapabilityApproval>,
        bound_from: Option<BoundFrom<'_>>,
        caller_opt_in: bool,
    ) -> Self {
        let approval = match (approval, bound_from) {
            (None, _) => Err(format!(
                "no approval is recorded for {}",
                capability.reference()
            )),
            (Some(approval), Some(bound)) => {
                match bound
                    .binding
                    .carries_approval(bound.base, approval, capability)
                {
                    Ok(()) => Ok(format!(
                        "approved base {} by {} through substitution-only binding for {}",
                        bound.base.reference(),
                        approval
                            .approved_by
                            .as_deref()
                            .unwrap_or("an unnamed reviewer"),
                        bound.binding.tenant
                    )),
                    Err(carried) if approval.scope.tenants.contains(&bound.binding.tenant) => {
                        tenant_approval(bound, approval, capability).map_err(|tenant| {
                            format!("{carried}; as the tenant's own approval: {tenant}")
                        })
                    }
                    Err(carried) => Err(carried),
                }
            }
            // An approval scoped to tenants speaks for those tenants' runs only, never for a
            // run bound to no tenant, even when the content is the same.
            (Some(approval), None) if !approval.scope.tenants.is_empty() => Err(format!(
                "the approval of {} is scoped to tenants {}; this run is bound to none",
                capability.reference(),
                approval
                    .scope
                    .tenants
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            (Some(approval), None) => match capability.seal_state() {
                SealState::Sealed(hash) if approval.covers(&hash) => Ok(format!(
                    "{} approved by {} at {hash}",
                    capability.reference(),
                    approval
                        .approved_by
                        .as_deref()
                        .unwrap_or("an unnamed reviewer")
                )),
                SealState::Sealed(hash) => Err(format!(
                    "the approval does not cover {} at {hash} (approval pins {}, state {:?})",
                    capability.reference(),
                    approval.content_hash,
                    approval.state
                )),
                SealState::Draft => Err(format!(
                    "{} is an unsealed draft; only a sealed capability can be approved",
                    capability.reference()
                )),
                SealState::Tampered { declared, computed } => Err(format!(
                    "{} is tampered: declared {declared}, computed {computed}",
                    capability.reference()
                )),
            },
        };
        Self {
            caller_opt_in,
            approval,
        }
    }

    /// A grant with no approval and no opt-in: what discovery and assisted recovery present.
    pub fn none() -> Self {
        Self {
            caller_opt_in: false,
            approval: Err("no approval was presented".to_string()),
        }
    }

    /// Why the gates refuse this grant, or `None` when they pass.
    pub fn refusal(&self, gates: &ReplayGates) -> Option<String> {
        let mut reasons = Vec::new();
        if gates.irreversible_requires_caller_optin && !self.caller_opt_in {
            reasons.push(
                "the caller did not opt in to irreversible actions (--allow-irreversible)"
                    .to_string(),
            );
        }
        if gates.irreversible_requires_approval
            && let Err(reason) = &self.approval
        {
            reasons.push(reason.clone());
        }
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }

    /// What the approval rests on, for the authorize event; `None` when there is none.
    pub fn approved_under(&self) -> Option<&str> {
        self.approval.as_deref().ok()
    }
}
