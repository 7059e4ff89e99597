//! The route planner: hard constraints before preference, in one fixed order, over the
//! providers that implement the requested action. It sees profiles only; it cannot probe or
//! open a provider, so nothing in the environment can reorder its answer.
//!
//! Every candidate is checked against the constraints in [`Constraint`] order and excluded by
//! the first one it fails. Exactly one survivor is the selection. None is `route_unavailable`,
//! named after the constraint that removed the last candidates; two or more are refused as
//! ambiguous, because the planner never breaks a tie between feasible providers.

use serde::Serialize;

use crate::axes::{
    Actuation, Effect, LogicalAction, Perception, Platform, ProviderKind, RouteAxes, RouteName,
    TargetScope,
};
use crate::profile::{ActionBinding, PhysicalAction, ProviderProfile};
use crate::recovery::RecoveryPolicy;
use crate::registry::ProviderRegistry;
use crate::request::{EvidenceKind, RouteRequest, TargetEvidence};
use crate::wire::wire_enum;

wire_enum! {
    /// The planner's constraints, in the order it applies them.
    pub enum Constraint: "constraint" {
        /// The provider implements the action on the request's platform.
        Platform => "platform",
        /// An explicit route names the provider family.
        ExplicitRoute => "explicit-route",
        /// A durable ref's owner executes every action on it.
        RefOwner => "ref-owner",
        /// Some operations exist on one provider only.
        IntrinsicOperation => "intrinsic-operation",
        /// The provider can honor every piece of target evidence, and has what it requires.
        TargetEvidence => "target-evidence",
        /// Without an explicit route, only implicit providers qualify.
        ImplicitSelection => "implicit-selection",
        /// With nothing else to go on, only the platform default qualifies.
        PlatformDefault => "platform-default",
    }
}

/// Why one candidate was excluded. Each reason belongs to exactly one [`Constraint`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Exclusion {
    NotOnPlatform {
        platform: Platform,
    },
    OtherRouteRequested {
        requested: RouteName,
    },
    RefOwnedElsewhere {
        owner: ProviderKind,
    },
    IntrinsicElsewhere {
        provider: ProviderKind,
    },
    ScopeConflict {
        evidence: EvidenceKind,
        scope: TargetScope,
    },
    ElementNeedsSemantics {
        perception: Perception,
    },
    CoordinatesNeedCoordinateActuation {
        actuation: Actuation,
    },
    ObservationIssuedElsewhere {
        issuer: ProviderKind,
    },
    ObservationSessionMismatch,
    MissingEvidence {
        evidence: EvidenceKind,
    },
    ExplicitOnly {
        route: RouteName,
    },
    NotPlatformDefault {
        platform: Platform,
    },
}

impl Exclusion {
    /// The constraint the reason belongs to.
    pub fn constraint(&self) -> Constraint {
        match self {
            Exclusion::NotOnPlatform { .. } => Constraint::Platform,
            Exclusion::OtherRouteRequested { .. } => Constraint::ExplicitRoute,
            Exclusion::RefOwnedElsewhere { .. } => Constraint::RefOwner,
            Exclusion::IntrinsicElsewhere { .. } => Constraint::IntrinsicOperation,
            Exclusion::ScopeConflict { .. }
            | Exclusion::ElementNeedsSemantics { .. }
            | Exclusion::CoordinatesNeedCoordinateActuation { .. }
            | Exclusion::ObservationIssuedElsewhere { .. }
            | Exclusion::ObservationSessionMismatch
            | Exclusion::MissingEvidence { .. } => Constraint::TargetEvidence,
            Exclusion::ExplicitOnly { .. } => Constraint::ImplicitSelection,
            Exclusion::NotPlatformDefault { .. } => Constraint::PlatformDefault,
        }
    }
}

impl std::fmt::Display for Exclusion {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exclusion::NotOnPlatform { platform } => {
                write!(formatter, "not available on {platform}")
            }
            Exclusion::OtherRouteRequested { requested } => {
                write!(formatter, "route {requested} was requested explicitly")
            }
            Exclusion::RefOwnedElsewhere { owner } => {
                write!(formatter, "the durable ref is owned by {owner}")
            }
            Exclusion::IntrinsicElsewhere { provider } => {
                write!(formatter, "the operation is intrinsic to {provider}")
            }
            Exclusion::ScopeConflict { evidence, scope } => write!(
                formatter,
                "{} evidence cannot be honored by a {scope}-scoped provider",
                evidence.phrase()
            ),
            Exclusion::ElementNeedsSemantics { perception } => write!(
                formatter,
                "a DOM element needs dom-accessibility perception, this binding perceives {perception}"
            ),
            Exclusion::CoordinatesNeedCoordinateActuation { actuation } => write!(
                formatter,
                "pixel coordinates need coordinate actuation, this binding actuates by {actuation}"
            ),
            Exclusion::ObservationIssuedElsewhere { issuer } => write!(
                formatter,
                "the visual observation was issued by {issuer}; coordinate authority never crosses providers"
            ),
            Exclusion::ObservationSessionMismatch => {
                formatter.write_str("the visual observation belongs to another session")
            }
            Exclusion::MissingEvidence { evidence } => write!(
                formatter,
                "a coordinate action requires {} evidence",
                evidence.phrase()
            ),
            Exclusion::ExplicitOnly { route } => {
                write!(
                    formatter,
                    "never selected implicitly: requires an explicit {route} route"
                )
            }
            Exclusion::NotPlatformDefault { platform } => write!(
                formatter,
                "not the {platform} default, and no route, ref or target evidence selects it"
            ),
        }
    }
}

/// Why the selected provider was selected: the first deciding constraint that applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SelectionReason {
    ExplicitRoute { route: RouteName },
    RefOwner { owner: ProviderKind },
    IntrinsicOperation { provider: ProviderKind },
    ExactTarget { evidence: EvidenceKind },
    PlatformDefault { platform: Platform },
}

impl SelectionReason {
    /// The constraint that decided.
    pub fn constraint(&self) -> Constraint {
        match self {
            SelectionReason::ExplicitRoute { .. } => Constraint::ExplicitRoute,
            SelectionReason::RefOwner { .. } => Constraint::RefOwner,
            SelectionReason::IntrinsicOperation { .. } => Constraint::IntrinsicOperation,
            SelectionReason::ExactTarget { .. } => Constraint::TargetEvidence,
            SelectionReason::PlatformDefault { .. } => Constraint::PlatformDefault,
        }
    }

    fn decide(request: &RouteRequest) -> SelectionReason {
        if let Some(route) = request.via {
            return SelectionReason::ExplicitRoute { route };
        }
        if let Some(durable_ref) = &request.evidence.durable_ref {
            return SelectionReason::RefOwner {
                owner: durable_ref.owner(),
            };
        }
        if let Some(provider) = request.action.intrinsic_provider() {
            return SelectionReason::IntrinsicOperation { provider };
        }
        if let Some(evidence) = designating_evidence(&request.evidence) {
            return SelectionReason::ExactTarget { evidence };
        }
        SelectionReason::PlatformDefault {
            platform: request.platform,
        }
    }
}

impl std::fmt::Display for SelectionReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SelectionReason::ExplicitRoute { route } => write!(formatter, "explicit {route} route"),
            SelectionReason::RefOwner { owner } => write!(formatter, "exact ref owner {owner}"),
            SelectionReason::IntrinsicOperation { provider } => {
                write!(formatter, "the operation is intrinsic to {provider}")
            }
            SelectionReason::ExactTarget { evidence } => {
                write!(formatter, "exact {} target", evidence.phrase())
            }
            SelectionReason::PlatformDefault { platform } => {
                write!(formatter, "{platform} platform default")
            }
        }
    }
}

/// Where a candidate ended up.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CandidateStatus {
    Selected(SelectionReason),
    /// Feasible, but so was another: the planner refuses rather than pick.
    Tied,
    Excluded(Exclusion),
}

/// One provider that implements the requested action, with its axes for that action and its
/// fate.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Candidate {
    provider: ProviderKind,
    route: RouteName,
    axes: RouteAxes,
    physical_action: PhysicalAction,
    automatic: bool,
    recovery: RecoveryPolicy,
    status: CandidateStatus,
}

impl Candidate {
    pub fn provider(&self) -> ProviderKind {
        self.provider
    }

    pub fn route(&self) -> RouteName {
        self.route
    }

    pub fn axes(&self) -> RouteAxes {
        self.axes
    }

    pub fn physical_action(&self) -> &PhysicalAction {
        &self.physical_action
    }

    pub fn recovery(&self) -> RecoveryPolicy {
        self.recovery
    }

    pub fn status(&self) -> &CandidateStatus {
        &self.status
    }

    /// Whether the candidate survived every constraint.
    pub fn feasible(&self) -> bool {
        !matches!(self.status, CandidateStatus::Excluded(_))
    }
}

impl Serialize for Candidate {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct CandidateView<'a> {
            provider: ProviderKind,
            route: RouteName,
            #[serde(flatten)]
            axes: RouteAxes,
            physical_action: &'a PhysicalAction,
            automatic: bool,
            feasible: bool,
            selected: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            excluded_by: Option<Constraint>,
            reason: String,
            recovery: RecoveryPolicy,
        }
        let (selected, excluded_by, reason) = match &self.status {
            CandidateStatus::Selected(reason) => (true, None, reason.to_string()),
            CandidateStatus::Tied => (false, None, TIED.to_owned()),
            CandidateStatus::Excluded(exclusion) => {
                (false, Some(exclusion.constraint()), exclusion.to_string())
            }
        };
        CandidateView {
            provider: self.provider,
            route: self.route,
            axes: self.axes,
            physical_action: &self.physical_action,
            automatic: self.automatic,
            feasible: self.feasible(),
            selected,
            excluded_by,
            reason,
            recovery: self.recovery,
        }
        .serialize(serializer)
    }
}

/// The selected route: one provider, one physical action, fixed before the provider is opened.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Selection {
    provider: ProviderKind,
    route: RouteName,
    axes: RouteAxes,
    physical_action: PhysicalAction,
    effect: Effect,
    mutates: bool,
    recovery: RecoveryPolicy,
    reason: SelectionReason,
    explicit: bool,
}

impl Selection {
    pub fn provider(&self) -> ProviderKind {
        self.provider
    }

    pub fn route(&self) -> RouteName {
        self.route
    }

    pub fn axes(&self) -> RouteAxes {
        self.axes
    }

    pub fn physical_action(&self) -> &PhysicalAction {
        &self.physical_action
    }

    /// The declared effect, or the binding's default.
    pub fn effect(&self) -> Effect {
        self.effect
    }

    /// Whether the operation may change external state: its effect or its primitive says so.
    pub fn mutates(&self) -> bool {
        self.mutates
    }

    /// The policy recovery applies: none for every mutation.
    pub fn recovery(&self) -> RecoveryPolicy {
        self.recovery
    }

    pub fn reason(&self) -> SelectionReason {
        self.reason
    }

    /// Whether the caller requested the route explicitly.
    pub fn explicit(&self) -> bool {
        self.explicit
    }
}

impl Serialize for Selection {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct SelectionView<'a> {
            provider: ProviderKind,
            route: RouteName,
            #[serde(flatten)]
            axes: RouteAxes,
            physical_action: &'a PhysicalAction,
            effect: Effect,
            mutates: bool,
            recovery: RecoveryPolicy,
            decided_by: Constraint,
            reason: String,
            explicit: bool,
        }
        SelectionView {
            provider: self.provider,
            route: self.route,
            axes: self.axes,
            physical_action: &self.physical_action,
            effect: self.effect,
            mutates: self.mutates,
            recovery: self.recovery,
            decided_by: self.reason.constraint(),
            reason: self.reason.to_string(),
            explicit: self.explicit,
        }
        .serialize(serializer)
    }
}

/// A planned route. Only [`plan`] makes one, so holding a `RoutePlan` proves the route was
/// decided by the planner, before any provider was opened.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RoutePlan {
    request: Box<RouteRequest>,
    selection: Selection,
    candidates: Vec<Candidate>,
}

impl RoutePlan {
    pub fn request(&self) -> &RouteRequest {
        &self.request
    }

    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// Every provider that implements the action, in provider order.
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }
}

/// Why no route exists.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Unavailability {
    /// No registered provider implements the action at all.
    NotImplemented {
        action: LogicalAction,
    },
    NotOnPlatform {
        action: LogicalAction,
        platform: Platform,
    },
    RouteLacksAction {
        route: RouteName,
        action: LogicalAction,
        platform: Platform,
    },
    RefOwnerCannotAct {
        owner: ProviderKind,
        action: LogicalAction,
    },
    IntrinsicProviderUnavailable {
        provider: ProviderKind,
        action: LogicalAction,
    },
    EvidenceUnsatisfiable {
        action: LogicalAction,
    },
    ExplicitRouteRequired {
        action: LogicalAction,
    },
    NoImplicitProvider {
        action: LogicalAction,
        platform: Platform,
    },
    Ambiguous {
        providers: Vec<ProviderKind>,
    },
}

impl Unavailability {
    /// The constraint that removed the last candidates; `None` when there were none to remove
    /// or more than one survived.
    pub fn constraint(&self) -> Option<Constraint> {
        match self {
            Unavailability::NotImplemented { .. } | Unavailability::Ambiguous { .. } => None,
            Unavailability::NotOnPlatform { .. } => Some(Constraint::Platform),
            Unavailability::RouteLacksAction { .. } => Some(Constraint::ExplicitRoute),
            Unavailability::RefOwnerCannotAct { .. } => Some(Constraint::RefOwner),
            Unavailability::IntrinsicProviderUnavailable { .. } => {
                Some(Constraint::IntrinsicOperation)
            }
            Unavailability::EvidenceUnsatisfiable { .. } => Some(Constraint::TargetEvidence),
            Unavailability::ExplicitRouteRequired { .. } => Some(Constraint::ImplicitSelection),
            Unavailability::NoImplicitProvider { .. } => Some(Constraint::PlatformDefault),
        }
    }

    /// What the caller can do about it.
    pub fn suggestion(&self) -> &'static str {
        match self {
            Unavailability::NotImplemented { .. } | Unavailability::NotOnPlatform { .. } => {
                "use an operation that a registered provider implements on this platform"
            }
            Unavailability::RouteLacksAction { .. } => {
                "request a route whose provider implements this action, or drop the explicit route"
            }
            Unavailability::RefOwnerCannotAct { .. } => {
                "act on the ref through its owner, or bind a target the requested route can honor"
            }
            Unavailability::IntrinsicProviderUnavailable { .. } => {
                "this operation runs only through its intrinsic provider"
            }
            Unavailability::EvidenceUnsatisfiable { .. } => {
                "bind target evidence that a provider of this action can honor"
            }
            Unavailability::ExplicitRouteRequired { .. } => {
                "select an explicit route: coordinate and visual routes are never implicit"
            }
            Unavailability::NoImplicitProvider { .. } => {
                "bind an exact ref or target, or select an explicit route"
            }
            Unavailability::Ambiguous { .. } => {
                "bind an exact target or select an explicit route: the planner never breaks a tie"
            }
        }
    }
}

impl std::fmt::Display for Unavailability {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailability::NotImplemented { action } => {
                write!(formatter, "no registered provider implements {action}")
            }
            Unavailability::NotOnPlatform { action, platform } => {
                write!(
                    formatter,
                    "no registered provider implements {action} on {platform}"
                )
            }
            Unavailability::RouteLacksAction {
                route,
                action,
                platform,
            } => {
                write!(
                    formatter,
                    "route {route} does not implement {action} on {platform}"
                )
            }
            Unavailability::RefOwnerCannotAct { owner, action } => write!(
                formatter,
                "the durable ref's owner {owner} cannot execute {action} under the other constraints"
            ),
            Unavailability::IntrinsicProviderUnavailable { provider, action } => write!(
                formatter,
                "{action} is intrinsic to {provider}, which cannot execute it here"
            ),
            Unavailability::EvidenceUnsatisfiable { action } => write!(
                formatter,
                "no provider of {action} can honor the target evidence"
            ),
            Unavailability::ExplicitRouteRequired { action } => {
                write!(formatter, "only explicit routes implement {action} here")
            }
            Unavailability::NoImplicitProvider { action, platform } => write!(
                formatter,
                "no implicit provider is defined for {action} on {platform}"
            ),
            Unavailability::Ambiguous { providers } => {
                formatter.write_str("ambiguous: ")?;
                for (index, provider) in providers.iter().enumerate() {
                    if index > 0 {
                        formatter.write_str(", ")?;
                    }
                    write!(formatter, "{provider}")?;
                }
                formatter.write_str(" could each execute it")
            }
        }
    }
}

/// The planner's refusal: `route_unavailable`, with every candidate and why it fell.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RouteUnavailable {
    request: Box<RouteRequest>,
    reason: Unavailability,
    candidates: Vec<Candidate>,
}

impl RouteUnavailable {
    /// The stable error code.
    pub const CODE: &'static str = "route_unavailable";

    pub fn request(&self) -> &RouteRequest {
        &self.request
    }

    pub fn reason(&self) -> &Unavailability {
        &self.reason
    }

    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }
}

impl std::fmt::Display for RouteUnavailable {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "route unavailable for {} on {}: {}",
            self.request.action, self.request.platform, self.reason
        )
    }
}

/// Plans a route for `request` from `registry`'s profiles. Pure and deterministic: the same
/// request and the same set of profiles give the same answer, whatever order the profiles were
/// registered in.
pub fn plan(
    request: &RouteRequest,
    registry: &ProviderRegistry,
) -> Result<RoutePlan, RouteUnavailable> {
    let reason = SelectionReason::decide(request);
    let mut candidates = Vec::new();
    for &provider in registry.implementers(request.action) {
        let profile = registry
            .profile(provider)
            .expect("every provider in a posting list has a profile");
        let binding = profile
            .binding(request.action)
            .expect("a provider is in an action's posting list only if it binds the action");
        let axes = binding.overrides().apply(profile.defaults());
        let effect = request.effect.unwrap_or(binding.kind().default_effect());
        let status = match first_exclusion(request, registry, profile, axes, reason) {
            Some(exclusion) => CandidateStatus::Excluded(exclusion),
            None => CandidateStatus::Selected(reason),
        };
        candidates.push(Candidate {
            provider,
            route: profile.route(),
            axes,
            physical_action: binding.physical_action().clone(),
            automatic: profile.implicit(),
            recovery: effective_recovery(binding, effect),
            status,
        });
    }
    let survivors: Vec<ProviderKind> = candidates
        .iter()
        .filter(|candidate| candidate.feasible())
        .map(|candidate| candidate.provider)
        .collect();
    match survivors.as_slice() {
        [provider] => {
            let selected = candidates
                .iter()
                .find(|candidate| candidate.provider == *provider)
                .expect("the survivor is a candidate");
            let binding = registry
                .profile(*provider)
                .and_then(|profile| profile.binding(request.action))
                .expect("the survivor binds the action");
            let effect = request.effect.unwrap_or(binding.kind().default_effect());
            let selection = Selection {
                provider: selected.provider,
                route: selected.route,
                axes: selected.axes,
                physical_action: selected.physical_action.clone(),
                effect,
                mutates: mutates(binding, effect),
                recovery: selected.recovery,
                reason,
                explicit: request.via.is_some(),
            };
            Ok(RoutePlan {
                request: Box::new(request.clone()),
                selection,
                candidates,
            })
        }
        [] => Err(RouteUnavailable {
            request: Box::new(request.clone()),
            reason: emptied(request, &candidates),
            candidates,
        }),
        _ => {
            for candidate in &mut candidates {
                if candidate.feasible() {
                    candidate.status = CandidateStatus::Tied;
                }
            }
            Err(RouteUnavailable {
                request: Box::new(request.clone()),
                reason: Unavailability::Ambiguous {
                    providers: survivors,
                },
                candidates,
            })
        }
    }
}

const TIED: &str = "feasible, but so is another provider: the planner never breaks a tie";

/// The first constraint, in [`Constraint`] order, that excludes `profile`.
fn first_exclusion(
    request: &RouteRequest,
    registry: &ProviderRegistry,
    profile: &ProviderProfile,
    axes: RouteAxes,
    reason: SelectionReason,
) -> Option<Exclusion> {
    let provider = profile.provider();
    if !profile.supports(request.platform) {
        return Some(Exclusion::NotOnPlatform {
            platform: request.platform,
        });
    }
    if let Some(requested) = request.via
        && profile.route() != requested
    {
        return Some(Exclusion::OtherRouteRequested { requested });
    }
    if let Some(durable_ref) = &request.evidence.durable_ref
        && durable_ref.owner() != provider
    {
        return Some(Exclusion::RefOwnedElsewhere {
            owner: durable_ref.owner(),
        });
    }
    if let Some(intrinsic) = request.action.intrinsic_provider()
        && intrinsic != provider
    {
        return Some(Exclusion::IntrinsicElsewhere {
            provider: intrinsic,
        });
    }
    if let Some(exclusion) = evidence_exclusion(&request.evidence, provider, axes) {
        return Some(exclusion);
    }
    if request.via.is_none() && !profile.implicit() {
        return Some(Exclusion::ExplicitOnly {
            route: profile.route(),
        });
    }
    if let SelectionReason::PlatformDefault { platform } = reason
        && registry.platform_default(platform, request.action) != Some(provider)
    {
        return Some(Exclusion::NotPlatformDefault { platform });
    }
    None
}

/// The first piece of evidence, in [`EvidenceKind`] order, that `provider` cannot honor, or
/// that it needs and lacks.
fn evidence_exclusion(
    evidence: &TargetEvidence,
    provider: ProviderKind,
    axes: RouteAxes,
) -> Option<Exclusion> {
    let scope = axes.target_scope;
    let scoped = [
        (
            EvidenceKind::Renderer,
            evidence.renderer.is_some(),
            TargetScope::BrowserRenderer,
        ),
        (
            EvidenceKind::Element,
            evidence.element.is_some(),
            TargetScope::BrowserRenderer,
        ),
        (
            EvidenceKind::NativeWindow,
            evidence.native_window.is_some(),
            TargetScope::NativeWindow,
        ),
        (
            EvidenceKind::Service,
            evidence.service.is_some(),
            TargetScope::Service,
        ),
        (
            EvidenceKind::Executable,
            evidence.executable.is_some(),
            TargetScope::HostProcess,
        ),
    ];
    for (kind, present, required_scope) in scoped {
        if !present {
            continue;
        }
        if scope != required_scope {
            return Some(Exclusion::ScopeConflict {
                evidence: kind,
                scope,
            });
        }
        if kind == EvidenceKind::Element && axes.perception != Perception::DomAccessibility {
            return Some(Exclusion::ElementNeedsSemantics {
                perception: axes.perception,
            });
        }
    }
    if let Some(observation) = &evidence.observation {
        if observation.issuer != provider {
            return Some(Exclusion::ObservationIssuedElsewhere {
                issuer: observation.issuer,
            });
        }
        if observation.target_scope != scope {
            return Some(Exclusion::ScopeConflict {
                evidence: EvidenceKind::Observation,
                scope,
            });
        }
        if evidence.session.as_deref() != Some(observation.session.as_str()) {
            return Some(Exclusion::ObservationSessionMismatch);
        }
    }
    if evidence.coordinates.is_some() && !axes.is_coordinate() {
        return Some(Exclusion::CoordinatesNeedCoordinateActuation {
            actuation: axes.actuation,
        });
    }
    if axes.is_coordinate() {
        if evidence.observation.is_none() {
            return Some(Exclusion::MissingEvidence {
                evidence: EvidenceKind::Observation,
            });
        }
        if evidence.coordinates.is_none() {
            return Some(Exclusion::MissingEvidence {
                evidence: EvidenceKind::Coordinates,
            });
        }
    }
    None
}

/// The evidence that names an exact target, if any: the first present designating kind.
fn designating_evidence(evidence: &TargetEvidence) -> Option<EvidenceKind> {
    evidence
        .kinds()
        .into_iter()
        .find(|kind| !matches!(kind, EvidenceKind::DurableRef | EvidenceKind::Coordinates))
}

/// The unavailability named after the constraint that removed the last candidates.
fn emptied(request: &RouteRequest, candidates: &[Candidate]) -> Unavailability {
    let action = request.action;
    let platform = request.platform;
    let last = candidates
        .iter()
        .filter_map(|candidate| match &candidate.status {
            CandidateStatus::Excluded(exclusion) => Some(exclusion.constraint()),
            _ => None,
        })
        .max();
    match last {
        None => Unavailability::NotImplemented { action },
        Some(Constraint::Platform) => Unavailability::NotOnPlatform { action, platform },
        Some(Constraint::ExplicitRoute) => Unavailability::RouteLacksAction {
            route: request
                .via
                .expect("the explicit-route constraint applies only with a route"),
            action,
            platform,
        },
        Some(Constraint::RefOwner) => Unavailability::RefOwnerCannotAct {
            owner: request
                .evidence
                .durable_ref
                .as_ref()
                .map(|durable_ref| durable_ref.owner())
                .expect("the ref-owner constraint applies only with a durable ref"),
            action,
        },
        Some(Constraint::IntrinsicOperation) => Unavailability::IntrinsicProviderUnavailable {
            provider: action
                .intrinsic_provider()
                .expect("the intrinsic constraint applies only to intrinsic operations"),
            action,
        },
        Some(Constraint::TargetEvidence) => Unavailability::EvidenceUnsatisfiable { action },
        Some(Constraint::ImplicitSelection) => Unavailability::ExplicitRouteRequired { action },
        Some(Constraint::PlatformDefault) => {
            Unavailability::NoImplicitProvider { action, platform }
        }
    }
}

fn mutates(binding: &ActionBinding, effect: Effect) -> bool {
    binding.kind().mutates() || effect.mutates()
}

/// The binding's policy, except that anything that may mutate gets no automatic recovery.
fn effective_recovery(binding: &ActionBinding, effect: Effect) -> RecoveryPolicy {
    if mutates(binding, effect) {
        RecoveryPolicy::NoAutomaticRecovery
    } else {
        binding.recovery()
    }
}
