//! Effect verdicts: the one replay boundary every executed operation reaches.
//!
//! The status/evidence compatibility table is the shape of [`EffectVerdict`] itself: each status
//! carries only the evidence the table allows it. `Confirmed` holds a [`ConfirmingEvidence`],
//! which is built from an [`AuthoritativeResponse`] or an [`ObservedPostcondition`] and from
//! nothing else; a [`DispatchReceipt`] has no conversion into either, so a receipt alone can
//! never become a confirmed effect. Provider claims arrive as strings, are read against the
//! same table, and are discarded, never coerced, when they do not fit; the conservative default
//! then applies.

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

use crate::axes::{ProviderKind, Verification};
use crate::profile::PhysicalAction;
use crate::wire::wire_enum;

wire_enum! {
    /// The five terminal effect statuses.
    pub enum EffectStatus: "effect status" {
        /// The contract is read-only.
        NotApplicable => "not_applicable",
        /// An authoritative response or a fresh postcondition proves the new state.
        Confirmed => "confirmed",
        /// The provider accepted the work and will complete it later.
        Pending => "pending",
        /// Dispatch happened; the external state is not proven.
        Unverifiable => "unverifiable",
        /// Rejected before dispatch, or fresh state stayed unchanged.
        SuspectedNoop => "suspected_noop",
    }
}

wire_enum! {
    /// The evidence a verdict rests on.
    pub enum EffectEvidence: "effect evidence" {
        DeclaredRead => "declared_read",
        PreDispatchRejection => "pre_dispatch_rejection",
        DispatchReceipt => "dispatch_receipt",
        AuthoritativeResponse => "authoritative_response",
        PostconditionObservation => "postcondition_observation",
        AcceptedDeferredObservation => "accepted_deferred_observation",
        ProviderNoopSignal => "provider_noop_signal",
        ProviderRefusal => "provider_refusal",
        StateUnchanged => "state_unchanged",
    }
}

impl EffectStatus {
    /// The evidence the closed compatibility table allows for this status.
    pub fn allowed_evidence(self) -> &'static [EffectEvidence] {
        match self {
            EffectStatus::NotApplicable => &[EffectEvidence::DeclaredRead],
            EffectStatus::Confirmed => &[
                EffectEvidence::AuthoritativeResponse,
                EffectEvidence::PostconditionObservation,
            ],
            EffectStatus::Pending => &[EffectEvidence::AcceptedDeferredObservation],
            EffectStatus::Unverifiable => &[EffectEvidence::DispatchReceipt],
            EffectStatus::SuspectedNoop => &[
                EffectEvidence::PreDispatchRejection,
                EffectEvidence::ProviderNoopSignal,
                EffectEvidence::ProviderRefusal,
                EffectEvidence::StateUnchanged,
            ],
        }
    }
}

wire_enum! {
    /// HTTP methods, for reading a response's authority.
    pub enum HttpMethod: "http method" {
        Get => "GET",
        Head => "HEAD",
        Options => "OPTIONS",
        Post => "POST",
        Put => "PUT",
        Patch => "PATCH",
        Delete => "DELETE",
    }
}

impl HttpMethod {
    /// Safe methods (RFC 9110) change nothing on the server.
    pub fn is_safe(self) -> bool {
        matches!(
            self,
            HttpMethod::Get | HttpMethod::Head | HttpMethod::Options
        )
    }
}

/// The fact that a provider sent an action. It proves dispatch and nothing about its effect.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct DispatchReceipt {
    pub provider: ProviderKind,
    pub physical_action: PhysicalAction,
}

/// What an authoritative response established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseAuthority {
    /// The service created the resource (`201 Created`).
    Created,
    /// The service deleted the resource (`DELETE` answered `200` or `204`).
    Deleted,
}

/// A protocol response whose semantics establish the new state. Generic success (a `200` to a
/// `POST`) is not one: it proves the request completed, not what it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct AuthoritativeResponse {
    method: HttpMethod,
    status: u16,
    authority: ResponseAuthority,
}

impl AuthoritativeResponse {
    /// Reads an HTTP response; `None` unless its semantics are authoritative for creation or
    /// deletion.
    pub fn from_http(method: HttpMethod, status: u16) -> Option<Self> {
        let authority = match (method, status) {
            (HttpMethod::Post | HttpMethod::Put, 201) => ResponseAuthority::Created,
            (HttpMethod::Delete, 200 | 204) => ResponseAuthority::Deleted,
            _ => return None,
        };
        Some(AuthoritativeResponse {
            method,
            status,
            authority,
        })
    }

    pub fn method(&self) -> HttpMethod {
        self.method
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn authority(&self) -> ResponseAuthority {
        self.authority
    }
}

/// A postcondition checked on fresh state after dispatch and found to hold. The verifier builds
/// one from what it observed; there is no way to build one from a receipt.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ObservedPostcondition {
    postcondition: String,
    observation: String,
}

impl ObservedPostcondition {
    /// `postcondition` held on the fresh `observation` (a snapshot id, say).
    pub fn new(postcondition: impl Into<String>, observation: impl Into<String>) -> Self {
        ObservedPostcondition {
            postcondition: postcondition.into(),
            observation: observation.into(),
        }
    }

    pub fn postcondition(&self) -> &str {
        &self.postcondition
    }

    pub fn observation(&self) -> &str {
        &self.observation
    }
}

/// The only evidence that confirms an effect. It is built from an [`AuthoritativeResponse`], an
/// [`ObservedPostcondition`], or a provider claim that passed [`ProviderClaim::read`]; it has no
/// other constructor, and nothing converts a [`DispatchReceipt`] into it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConfirmingEvidence(Confirmation);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Confirmation {
    Response(AuthoritativeResponse),
    Postcondition(ObservedPostcondition),
    /// A valid provider claim of an authoritative response or a fresh postcondition.
    Claimed {
        evidence: EffectEvidence,
        reason: String,
    },
}

impl ConfirmingEvidence {
    /// Which confirming evidence this is: `authoritative_response` or
    /// `postcondition_observation`.
    pub fn kind(&self) -> EffectEvidence {
        match &self.0 {
            Confirmation::Response(_) => EffectEvidence::AuthoritativeResponse,
            Confirmation::Postcondition(_) => EffectEvidence::PostconditionObservation,
            Confirmation::Claimed { evidence, .. } => *evidence,
        }
    }

    fn describe(&self) -> String {
        match &self.0 {
            Confirmation::Response(response) => format!(
                "{} answered {} ({})",
                response.method,
                response.status,
                match response.authority {
                    ResponseAuthority::Created => "created",
                    ResponseAuthority::Deleted => "deleted",
                }
            ),
            Confirmation::Postcondition(observed) => format!(
                "postcondition `{}` held on {}",
                observed.postcondition, observed.observation
            ),
            Confirmation::Claimed { reason, .. } => reason.clone(),
        }
    }
}

impl From<AuthoritativeResponse> for ConfirmingEvidence {
    fn from(response: AuthoritativeResponse) -> Self {
        ConfirmingEvidence(Confirmation::Response(response))
    }
}

impl From<ObservedPostcondition> for ConfirmingEvidence {
    fn from(observed: ObservedPostcondition) -> Self {
        ConfirmingEvidence(Confirmation::Postcondition(observed))
    }
}

/// The evidence a suspected no-op rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoopEvidence {
    PreDispatchRejection,
    ProviderNoopSignal,
    ProviderRefusal,
    StateUnchanged,
}

impl NoopEvidence {
    fn kind(self) -> EffectEvidence {
        match self {
            NoopEvidence::PreDispatchRejection => EffectEvidence::PreDispatchRejection,
            NoopEvidence::ProviderNoopSignal => EffectEvidence::ProviderNoopSignal,
            NoopEvidence::ProviderRefusal => EffectEvidence::ProviderRefusal,
            NoopEvidence::StateUnchanged => EffectEvidence::StateUnchanged,
        }
    }
}

/// One terminal effect verdict. Each status carries only the evidence the compatibility table
/// allows it, so an incompatible pair cannot be represented.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EffectVerdict {
    NotApplicable {
        reason: String,
    },
    Confirmed {
        evidence: ConfirmingEvidence,
        verification: Option<Verification>,
    },
    Pending {
        reason: String,
        verification: Option<Verification>,
    },
    Unverifiable {
        reason: String,
        verification: Option<Verification>,
    },
    SuspectedNoop {
        evidence: NoopEvidence,
        reason: String,
        verification: Option<Verification>,
    },
}

impl EffectVerdict {
    /// The verdict of a read-only contract.
    pub fn not_applicable() -> Self {
        EffectVerdict::NotApplicable {
            reason: "the operation contract is read-only".to_owned(),
        }
    }

    /// The verdict of a dispatched mutation with nothing but a receipt: unverifiable. This is
    /// the only thing a receipt becomes.
    pub fn from_receipt(receipt: &DispatchReceipt) -> Self {
        EffectVerdict::Unverifiable {
            reason: format!(
                "{} dispatched {}; the external state is not proven",
                receipt.provider, receipt.physical_action
            ),
            verification: None,
        }
    }

    /// A confirmed effect.
    pub fn confirmed(evidence: impl Into<ConfirmingEvidence>) -> Self {
        EffectVerdict::Confirmed {
            evidence: evidence.into(),
            verification: None,
        }
    }

    /// Accepted, to be completed later.
    pub fn pending(reason: impl Into<String>) -> Self {
        EffectVerdict::Pending {
            reason: reason.into(),
            verification: None,
        }
    }

    /// Nothing changed, on `evidence`.
    pub fn suspected_noop(evidence: NoopEvidence, reason: impl Into<String>) -> Self {
        EffectVerdict::SuspectedNoop {
            evidence,
            reason: reason.into(),
            verification: None,
        }
    }

    /// Reads an HTTP exchange: a safe method is a read; an authoritative creation or deletion
    /// confirms; `202 Accepted` is pending; a `4xx` is the service refusing, so nothing changed;
    /// any other answer proves only that the request was sent.
    pub fn from_http(method: HttpMethod, status: u16) -> Self {
        if method.is_safe() {
            return EffectVerdict::not_applicable();
        }
        let verdict = match status {
            _ if let Some(response) = AuthoritativeResponse::from_http(method, status) => {
                EffectVerdict::confirmed(response)
            }
            202 => EffectVerdict::pending(format!("{method} answered 202 Accepted")),
            400..=499 => EffectVerdict::suspected_noop(
                NoopEvidence::ProviderRefusal,
                format!("{method} was refused with {status}"),
            ),
            _ => EffectVerdict::Unverifiable {
                reason: format!("{method} answered {status}, which does not establish the effect"),
                verification: None,
            },
        };
        verdict.with_verification(Verification::ProtocolResponse)
    }

    /// Names the verification channel, if the verdict has none yet.
    pub fn with_verification(mut self, channel: Verification) -> Self {
        match &mut self {
            EffectVerdict::NotApplicable { .. } => {}
            EffectVerdict::Confirmed { verification, .. }
            | EffectVerdict::Pending { verification, .. }
            | EffectVerdict::Unverifiable { verification, .. }
            | EffectVerdict::SuspectedNoop { verification, .. } => {
                verification.get_or_insert(channel);
            }
        }
        self
    }

    pub fn status(&self) -> EffectStatus {
        match self {
            EffectVerdict::NotApplicable { .. } => EffectStatus::NotApplicable,
            EffectVerdict::Confirmed { .. } => EffectStatus::Confirmed,
            EffectVerdict::Pending { .. } => EffectStatus::Pending,
            EffectVerdict::Unverifiable { .. } => EffectStatus::Unverifiable,
            EffectVerdict::SuspectedNoop { .. } => EffectStatus::SuspectedNoop,
        }
    }

    pub fn evidence(&self) -> EffectEvidence {
        match self {
            EffectVerdict::NotApplicable { .. } => EffectEvidence::DeclaredRead,
            EffectVerdict::Confirmed { evidence, .. } => evidence.kind(),
            EffectVerdict::Pending { .. } => EffectEvidence::AcceptedDeferredObservation,
            EffectVerdict::Unverifiable { .. } => EffectEvidence::DispatchReceipt,
            EffectVerdict::SuspectedNoop { evidence, .. } => evidence.kind(),
        }
    }

    pub fn reason(&self) -> String {
        match self {
            EffectVerdict::Confirmed { evidence, .. } => evidence.describe(),
            EffectVerdict::NotApplicable { reason }
            | EffectVerdict::Pending { reason, .. }
            | EffectVerdict::Unverifiable { reason, .. }
            | EffectVerdict::SuspectedNoop { reason, .. } => reason.clone(),
        }
    }

    pub fn verification(&self) -> Option<Verification> {
        match self {
            EffectVerdict::NotApplicable { .. } => None,
            EffectVerdict::Confirmed { verification, .. }
            | EffectVerdict::Pending { verification, .. }
            | EffectVerdict::Unverifiable { verification, .. }
            | EffectVerdict::SuspectedNoop { verification, .. } => *verification,
        }
    }

    /// Whether replaying the operation is known to be safe: the effect is proven, or there was
    /// none to cause.
    pub fn settles_replay(&self) -> bool {
        matches!(
            self,
            EffectVerdict::NotApplicable { .. } | EffectVerdict::Confirmed { .. }
        )
    }
}

impl Serialize for EffectVerdict {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let verification = self.verification();
        let mut state = serializer
            .serialize_struct("EffectVerdict", 3 + usize::from(verification.is_some()))?;
        state.serialize_field("status", &self.status())?;
        state.serialize_field("evidence", &self.evidence())?;
        state.serialize_field("reason", &self.reason())?;
        if let Some(verification) = verification {
            state.serialize_field("verification", &verification)?;
        } else {
            state.skip_field("verification")?;
        }
        state.end()
    }
}

/// A verdict as a provider reports it: untyped strings, to be read against the table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProviderClaim {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub evidence: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub verification: Option<String>,
}

wire_enum! {
    /// Why a provider claim was discarded.
    pub enum ClaimDefect: "claim defect" {
        UnknownStatus => "unknown_status",
        UnknownEvidence => "unknown_evidence",
        /// The table does not allow this evidence for this status (`confirmed` on a
        /// `dispatch_receipt`, say).
        IncompatibleEvidence => "incompatible_evidence",
        EmptyReason => "empty_reason",
        UnknownVerification => "unknown_verification",
        /// Well formed, but impossible for this operation: a read claiming an effect, a
        /// mutation claiming to be a read, a rejected dispatch claiming anything but a no-op.
        InconsistentWithContract => "inconsistent_with_contract",
    }
}

impl ProviderClaim {
    /// Reads the claim against the closed table. A valid claim becomes a typed verdict; an
    /// invalid one is reported, never repaired.
    pub fn read(&self) -> Result<EffectVerdict, ClaimDefect> {
        let status: EffectStatus = parse_claim_field(&self.status, ClaimDefect::UnknownStatus)?;
        let evidence: EffectEvidence =
            parse_claim_field(&self.evidence, ClaimDefect::UnknownEvidence)?;
        if !status.allowed_evidence().contains(&evidence) {
            return Err(ClaimDefect::IncompatibleEvidence);
        }
        let reason = self
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|reason| !reason.is_empty())
            .ok_or(ClaimDefect::EmptyReason)?
            .to_owned();
        let verification = match &self.verification {
            None => None,
            Some(name) => Some(
                name.parse::<Verification>()
                    .map_err(|_| ClaimDefect::UnknownVerification)?,
            ),
        };
        let verdict = match (status, evidence) {
            (EffectStatus::NotApplicable, _) => EffectVerdict::NotApplicable { reason },
            (EffectStatus::Confirmed, evidence) => EffectVerdict::Confirmed {
                evidence: ConfirmingEvidence(Confirmation::Claimed { evidence, reason }),
                verification,
            },
            (EffectStatus::Pending, _) => EffectVerdict::Pending {
                reason,
                verification,
            },
            (EffectStatus::Unverifiable, _) => EffectVerdict::Unverifiable {
                reason,
                verification,
            },
            (EffectStatus::SuspectedNoop, evidence) => EffectVerdict::SuspectedNoop {
                evidence: match evidence {
                    EffectEvidence::PreDispatchRejection => NoopEvidence::PreDispatchRejection,
                    EffectEvidence::ProviderNoopSignal => NoopEvidence::ProviderNoopSignal,
                    EffectEvidence::ProviderRefusal => NoopEvidence::ProviderRefusal,
                    _ => NoopEvidence::StateUnchanged,
                },
                reason,
                verification,
            },
        };
        Ok(verdict)
    }
}

/// Where in its life the operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DispatchPhase {
    /// Refused before anything was sent.
    PreDispatch,
    /// Sent.
    Dispatched,
}

/// A settled verdict and, when the provider's claim was thrown away, why.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Settlement {
    pub verdict: EffectVerdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discarded_claim: Option<ClaimDefect>,
}

/// Settles an operation's effect from its contract, its phase and the provider's claim, if any.
/// A valid claim consistent with the contract stands. Otherwise the conservative default
/// applies: a read is `not_applicable`; a mutation refused before dispatch is `suspected_noop`;
/// any dispatched mutation is `unverifiable`. Nothing here upgrades anything to `confirmed`.
pub fn settle(mutates: bool, phase: DispatchPhase, claim: Option<&ProviderClaim>) -> Settlement {
    let read = claim.map(|claim| {
        claim.read().and_then(|verdict| {
            let consistent = match (mutates, phase, verdict.status()) {
                (false, _, status) => status == EffectStatus::NotApplicable,
                (true, _, EffectStatus::NotApplicable) => false,
                (true, DispatchPhase::PreDispatch, status) => status == EffectStatus::SuspectedNoop,
                (true, DispatchPhase::Dispatched, _) => true,
            };
            if consistent {
                Ok(verdict)
            } else {
                Err(ClaimDefect::InconsistentWithContract)
            }
        })
    });
    match read {
        Some(Ok(verdict)) => Settlement {
            verdict,
            discarded_claim: None,
        },
        Some(Err(defect)) => Settlement {
            verdict: default_verdict(mutates, phase),
            discarded_claim: Some(defect),
        },
        None => Settlement {
            verdict: default_verdict(mutates, phase),
            discarded_claim: None,
        },
    }
}

/// The verdict with no usable provider claim.
pub fn default_verdict(mutates: bool, phase: DispatchPhase) -> EffectVerdict {
    match (mutates, phase) {
        (false, _) => EffectVerdict::not_applicable(),
        (true, DispatchPhase::PreDispatch) => EffectVerdict::suspected_noop(
            NoopEvidence::PreDispatchRejection,
            "the mutation was rejected before dispatch",
        ),
        (true, DispatchPhase::Dispatched) => EffectVerdict::Unverifiable {
            reason: "the mutation was dispatched; the external state is not proven".to_owned(),
            verification: None,
        },
    }
}

fn parse_claim_field<T: std::str::FromStr>(
    field: &Option<String>,
    defect: ClaimDefect,
) -> Result<T, ClaimDefect> {
    field
        .as_deref()
        .map(str::trim)
        .and_then(|name| name.parse().ok())
        .ok_or(defect)
}
