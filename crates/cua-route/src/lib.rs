//! `cua-route`: which operator and provider execute an operation against this exact target,
//! decided before any provider is opened; what its effect verdict is; and how a failure may be
//! recovered without ever calling another provider.
//!
//! - [`axes`](RouteAxes): operation × operator × provider × perception × actuation × target
//!   scope × effect × verification × interaction impact, each its own closed enum.
//! - [`ProviderProfile`] and [`ProviderRegistry`]: immutable declarations compiled into a
//!   by-provider hash index and a by-action posting list.
//! - [`plan`] and [`explain`]: hard constraints before preference, in a fixed order.
//! - [`EffectVerdict`] and [`settle`]: the closed status/evidence table, in the types.
//! - [`RecoveryWalk`]: the recovery state graph, walked only along edges it offers.
//! - [`ObservationLedger`]: single-use, 30-second, bound visual observation refs.
//! - [`explain_capability`]: every step of a capability read as a request and planned.
//!
//! Architecture invariant: this crate does no I/O, reads no clock and draws no randomness.
//! Clock readings and random bytes are arguments; nothing here can open a provider.

mod axes;
mod builtin;
mod capability;
mod error;
mod explain;
mod observation;
mod plan;
mod profile;
mod recovery;
mod registry;
mod request;
mod verdict;
mod walk;
mod wire;

pub use axes::{
    Actuation, AxisOverrides, Effect, InteractionImpact, LogicalAction, Operator, Perception,
    Platform, ProviderKind, RouteAxes, RouteName, TargetScope, Verification,
};
pub use builtin::{builtin_profiles, cdp_browser, http, subprocess, visual};
pub use capability::{
    CAPABILITY_ROUTES_SCHEMA, CapabilityRoutes, StepRoute, THIS_RUN, explain_capability,
    logical_actions, step_request,
};
pub use error::RouteError;
pub use explain::{EXPLANATION_SCHEMA, PROVIDER_RECOVERY, RouteExplanation, explain};
pub use observation::{
    ActionPoint, ClaimedObservation, CoordinateClaim, MAX_LIVE_OBSERVATIONS, Millis,
    OBSERVATION_TTL_MILLIS, ObservationBinding, ObservationLedger, ObservationRef,
    ObservationRejection, ObservationScope, PixelPoint,
};
pub use plan::{
    Candidate, CandidateStatus, Constraint, Exclusion, RoutePlan, RouteUnavailable, Selection,
    SelectionReason, Unavailability, plan,
};
pub use profile::{ActionBinding, BindingKind, PhysicalAction, ProfileBuilder, ProviderProfile};
pub use recovery::{
    FailureKind, Preserved, RecoveryFailure, RecoveryPolicy, RecoveryStrategy, RecoveryTrace,
    Replan,
};
pub use registry::ProviderRegistry;
pub use request::{DurableRef, EvidenceKind, ObservationEvidence, RouteRequest, TargetEvidence};
pub use verdict::{
    AuthoritativeResponse, ClaimDefect, ConfirmingEvidence, DispatchPhase, DispatchReceipt,
    EffectEvidence, EffectStatus, EffectVerdict, HttpMethod, NoopEvidence, ObservedPostcondition,
    ProviderClaim, ResponseAuthority, Settlement, default_verdict, settle,
};
pub use walk::{
    AttemptOutcome, Edge, Offer, Position, ProviderFailure, RecoveryEdge, RecoveryGraph,
    RecoveryResult, RecoveryState, RecoveryWalk, recovery_graph,
};
