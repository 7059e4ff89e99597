//! A capability ready to run: the effective document a tenant binding (or an invocation's
//! origin) made of a sealed base, how it was derived, and the approval recorded for it. What
//! the catalog prepares and the executor runs.

use std::collections::BTreeMap;

use crate::{
    ArtifactError, Capability, CapabilityApproval, Identifier, TenantBinding, TenantBindingSchema,
    TenantId,
};

/// A capability ready to run: the effective document, how it was derived, and its approval.
#[derive(Debug, Clone)]
pub struct PreparedCapability {
    /// The effective capability (a tenant binding already applied).
    pub capability: Capability,
    /// The sealed base and the binding that produced `capability`, when one did. Only through
    /// it can an approval of the base carry over (substitution-only bindings).
    pub overlay: Option<TenantOverlay>,
    /// The approval recorded for the capability (or for its base), if any.
    pub approval: Option<CapabilityApproval>,
}

impl PreparedCapability {
    /// A capability run as it is, with no binding and no approval.
    pub fn plain(capability: Capability) -> Self {
        Self {
            capability,
            overlay: None,
            approval: None,
        }
    }

    /// Prepares a sealed base capability for a run: applies the tenant's binding, if any, with
    /// `base_url` (an invocation's `--base-url`) added to its vars. A `base_url` without a
    /// tenant becomes a substitution-only binding for the tenant [`INVOCATION_TENANT`], so an
    /// approval of the base still carries over to it (unless the approval is scoped to named
    /// tenants). The effective capability is re-validated and resealed by the binding.
    pub fn bind(
        base: Capability,
        binding: Option<TenantBinding>,
        base_url: Option<&str>,
        approval: Option<CapabilityApproval>,
    ) -> Result<Self, ArtifactError> {
        let base_url_var = || Identifier::parse("base_url");
        let binding = match (binding, base_url) {
            (None, None) => {
                return Ok(Self {
                    capability: base,
                    overlay: None,
                    approval,
                });
            }
            (Some(binding), None) => binding,
            (Some(mut binding), Some(url)) => {
                binding.vars.insert(base_url_var()?, url.to_owned());
                binding
            }
            (None, Some(url)) => TenantBinding {
                schema: TenantBindingSchema::default(),
                capability: base.reference(),
                tenant: TenantId::parse(INVOCATION_TENANT)?,
                description: "the base URL given at invocation".to_owned(),
                vars: BTreeMap::from([(base_url_var()?, url.to_owned())]),
                overrides: BTreeMap::new(),
                recovery_extra: Vec::new(),
                checkpoint: None,
                policy: None,
            },
        };
        let capability = binding.apply(&base)?;
        Ok(Self {
            capability,
            overlay: Some(TenantOverlay { base, binding }),
            approval,
        })
    }
}

/// The tenant id of the binding [`PreparedCapability::bind`] makes for a bare `--base-url`.
pub const INVOCATION_TENANT: &str = "invocation";

/// A sealed base capability and the tenant binding applied to it.
#[derive(Debug, Clone)]
pub struct TenantOverlay {
    pub base: Capability,
    pub binding: TenantBinding,
}
