//! The two axes of a catalog entry, kept apart: integrity (is the file what was sealed?) and
//! review (has someone approved exactly this content?), and the answer to "may this capability
//! run as approved, for this tenant?".
//!
//! An approval pins a content hash. It is compared with the hash recomputed from the content,
//! never with the hash the file declares, so editing an artifact voids its approval whether or
//! not the edit was resealed.

use cua_artifact::{
    ApprovalState, Capability, CapabilityApproval, CapabilityRef, ContentHash, SealState,
    TenantBinding, TenantId,
};
use serde::Serialize;

/// Whether a capability file is what was sealed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Integrity {
    /// The declared hash is the hash of the content.
    Sealed { content_hash: ContentHash },
    /// No hash is declared; `computed` is the hash of the content as it is.
    Draft { computed: ContentHash },
    /// The declared hash is not the hash of the content. Listed, never loaded.
    Tampered {
        declared: ContentHash,
        computed: ContentHash,
    },
    /// The file could not be read as a capability at all.
    Invalid { reason: String },
}

/// Where the review of a capability stands, judged against its current content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ReviewStatus {
    /// No approval document is recorded.
    Unreviewed,
    /// An approval document pinned to this exact, sealed content.
    Current { decision: ApprovalState },
    /// An approval document pinned to other content, or to content that is no longer sealed:
    /// the artifact changed after the decision, which therefore no longer counts.
    Stale {
        pinned: ContentHash,
        #[serde(skip_serializing_if = "Option::is_none")]
        current: Option<ContentHash>,
        why: String,
    },
    /// The approval file exists and cannot be read.
    Invalid { reason: String },
}

/// Why a capability counts as approved, or does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalBasis {
    /// The capability's own approval, pinned to its hash.
    Direct,
    /// The base's approval, carried through a substitution-only tenant binding whose effective
    /// capability was re-derived and compared.
    CarriedFromBase,
    /// The tenant's own approval, pinned to the effective hash of its binding and scoped to it.
    Tenant,
    /// Nothing approves it.
    None,
}

/// The answer to `approval_for(reference, tenant)`, with the reason in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalAnswer {
    pub reference: CapabilityRef,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<TenantId>,
    pub approved: bool,
    pub basis: ApprovalBasis,
    /// The hash the answer is about: the base's, or the effective capability's for a tenant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<ContentHash>,
    pub reason: String,
}

impl Integrity {
    /// Reads the seal state of a parsed, valid capability.
    pub fn of(capability: &Capability) -> Self {
        match capability.seal_state() {
            SealState::Sealed(content_hash) => Self::Sealed { content_hash },
            SealState::Draft => Self::Draft {
                computed: capability.compute_hash(),
            },
            SealState::Tampered { declared, computed } => Self::Tampered { declared, computed },
        }
    }

    /// `sealed`, `draft`, `TAMPERED` or `invalid`; tampering is shouted on purpose.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Sealed { .. } => "sealed",
            Self::Draft { .. } => "draft",
            Self::Tampered { .. } => "TAMPERED",
            Self::Invalid { .. } => "invalid",
        }
    }

    /// The hash of the content as it is now, when the content could be read.
    pub fn computed_hash(&self) -> Option<&ContentHash> {
        match self {
            Self::Sealed { content_hash } => Some(content_hash),
            Self::Draft { computed } | Self::Tampered { computed, .. } => Some(computed),
            Self::Invalid { .. } => None,
        }
    }
}

impl ReviewStatus {
    /// Judges an approval document against the capability's integrity. Only sealed content can
    /// be approved, and only by an approval pinned to its recomputed hash.
    pub fn judge(integrity: &Integrity, approval: Option<&CapabilityApproval>) -> Self {
        let Some(approval) = approval else {
            return Self::Unreviewed;
        };
        let pinned = approval.content_hash.clone();
        match integrity {
            Integrity::Sealed { content_hash } if *content_hash == pinned => Self::Current {
                decision: approval.state,
            },
            Integrity::Sealed { content_hash } => Self::Stale {
                pinned,
                current: Some(content_hash.clone()),
                why: "the content changed after the decision".to_owned(),
            },
            Integrity::Draft { computed } => Self::Stale {
                pinned,
                current: Some(computed.clone()),
                why: "the artifact is an unsealed draft".to_owned(),
            },
            Integrity::Tampered { computed, .. } => Self::Stale {
                pinned,
                current: Some(computed.clone()),
                why: "the artifact is tampered".to_owned(),
            },
            Integrity::Invalid { .. } => Self::Stale {
                pinned,
                current: None,
                why: "the artifact cannot be read".to_owned(),
            },
        }
    }

    /// The state as `list` prints it: `draft` when nothing was decided, `approved`, `rejected`,
    /// `revoked`, `stale approval` when the content moved on, `invalid approval`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Unreviewed
            | Self::Current {
                decision: ApprovalState::Draft,
            } => "draft",
            Self::Current {
                decision: ApprovalState::Approved,
            } => "approved",
            Self::Current {
                decision: ApprovalState::Rejected,
            } => "rejected",
            Self::Current {
                decision: ApprovalState::Revoked,
            } => "revoked",
            Self::Stale { .. } => "stale approval",
            Self::Invalid { .. } => "invalid approval",
        }
    }

    /// Whether the current content is approved.
    pub fn is_approved(&self) -> bool {
        matches!(
            self,
            Self::Current {
                decision: ApprovalState::Approved
            }
        )
    }
}

/// The direct answer for a capability and its own approval document.
pub fn direct_answer(
    reference: &CapabilityRef,
    integrity: &Integrity,
    approval: Option<&CapabilityApproval>,
) -> ApprovalAnswer {
    let status = ReviewStatus::judge(integrity, approval);
    let content_hash = integrity.computed_hash().cloned();
    let (approved, reason) = match (&status, approval) {
        (ReviewStatus::Current { decision }, Some(approval)) => {
            let who = decided_by(approval);
            match decision {
                ApprovalState::Approved => (
                    true,
                    format!("approved by {who}, pinned to {}", approval.content_hash),
                ),
                ApprovalState::Draft => (false, "the review is still a draft".to_owned()),
                ApprovalState::Rejected => (false, format!("rejected by {who}")),
                ApprovalState::Revoked => (false, format!("revoked by {who}")),
            }
        }
        (ReviewStatus::Stale { pinned, why, .. }, _) => (
            false,
            format!(
                "the approval is pinned to {pinned} and no longer counts: {why}{}",
                match integrity {
                    Integrity::Sealed { content_hash } => format!(" (now {content_hash})"),
                    _ => String::new(),
                }
            ),
        ),
        (ReviewStatus::Invalid { reason }, _) => {
            (false, format!("the approval file is invalid: {reason}"))
        }
        (ReviewStatus::Unreviewed | ReviewStatus::Current { .. }, _) => {
            (false, "no approval is recorded".to_owned())
        }
    };
    let basis = if approved {
        ApprovalBasis::Direct
    } else {
        ApprovalBasis::None
    };
    ApprovalAnswer {
        reference: reference.clone(),
        tenant: None,
        approved,
        basis,
        content_hash,
        reason,
    }
}

/// The answer for a tenant's binding of a sealed base: the base's approval carries over only
/// through a substitution-only binding, and only when applying the binding again yields exactly
/// the effective capability (see [`TenantBinding::carries_approval`]).
pub fn carried_answer(
    base: &Capability,
    base_approval: Option<&CapabilityApproval>,
    binding: &TenantBinding,
) -> ApprovalAnswer {
    let refuse = |content_hash: Option<ContentHash>, reason: String| ApprovalAnswer {
        reference: base.reference(),
        tenant: Some(binding.tenant.clone()),
        approved: false,
        basis: ApprovalBasis::None,
        content_hash,
        reason,
    };
    let effective = match binding.apply(base) {
        Ok(effective) => effective,
        Err(error) => return refuse(None, format!("the binding does not apply: {error}")),
    };
    let effective_hash = effective.content_hash.clone();
    let Some(approval) = base_approval else {
        return refuse(
            effective_hash,
            format!("no approval of the base {} is recorded", base.reference()),
        );
    };
    match binding.carries_approval(base, approval, &effective) {
        Ok(()) => ApprovalAnswer {
            reference: base.reference(),
            tenant: Some(binding.tenant.clone()),
            approved: true,
            basis: ApprovalBasis::CarriedFromBase,
            reason: format!(
                "the base's approval by {} (pinned to {}) carries through {}'s substitution-only \
                 binding; the effective capability was re-derived as {}",
                decided_by(approval),
                approval.content_hash,
                binding.tenant,
                effective_hash
                    .as_ref()
                    .map_or_else(|| "an unsealed capability".to_owned(), ToString::to_string),
            ),
            content_hash: effective_hash,
        },
        Err(reason) => refuse(effective_hash, reason),
    }
}

/// Judges a tenant's own approval: it counts only when approved, pinned to the capability the
/// policy re-derives from the base and the binding ([`TenantBinding::reviewed`]), and scoped to
/// the tenant. When it does not, nothing
/// else is consulted: the tenant's own decision (a revocation, say) stands over the base's.
pub(crate) fn tenant_answer(
    base: &Capability,
    approval: &CapabilityApproval,
    binding: &TenantBinding,
) -> ApprovalAnswer {
    let tenant = &binding.tenant;
    let answer = |approved: bool, basis: ApprovalBasis, content_hash, reason| ApprovalAnswer {
        reference: base.reference(),
        tenant: Some(tenant.clone()),
        approved,
        basis,
        content_hash,
        reason,
    };
    let effective = match binding.reviewed(base) {
        Ok(effective) => effective,
        Err(error) => {
            return answer(
                false,
                ApprovalBasis::None,
                None,
                format!("the binding does not apply: {error}"),
            );
        }
    };
    let effective_hash = effective.content_hash.clone();
    let refused =
        |reason: String| answer(false, ApprovalBasis::None, effective_hash.clone(), reason);
    if approval.state != ApprovalState::Approved {
        return refused(format!(
            "{tenant}'s own approval is {} by {}",
            state_name(approval.state),
            decided_by(approval)
        ));
    }
    if !approval.scope.tenants.contains(tenant) {
        return refused(format!("{tenant}'s own approval is not scoped to {tenant}"));
    }
    match &effective_hash {
        Some(hash) if approval.covers(hash) => answer(
            true,
            ApprovalBasis::Tenant,
            effective_hash.clone(),
            format!(
                "{tenant}'s own approval by {} is pinned to the effective capability {hash}, \
                 re-derived from the base and the binding",
                decided_by(approval)
            ),
        ),
        _ => refused(format!(
            "{tenant}'s own approval is pinned to {}, but the base and the binding now make {}: \
             approve it again",
            approval.content_hash,
            effective_hash
                .as_ref()
                .map_or_else(|| "an unsealed capability".to_owned(), ToString::to_string)
        )),
    }
}

/// A decision's state in words.
pub(crate) fn state_name(state: ApprovalState) -> &'static str {
    match state {
        ApprovalState::Draft => "draft",
        ApprovalState::Approved => "approved",
        ApprovalState::Rejected => "rejected",
        ApprovalState::Revoked => "revoked",
    }
}

fn decided_by(approval: &CapabilityApproval) -> String {
    let who = approval
        .approved_by
        .as_deref()
        .unwrap_or("an unnamed reviewer");
    match &approval.approved_at {
        Some(at) => format!("{who} at {at}"),
        None => who.to_owned(),
    }
}
