//! Immutable provider profiles: a provider's default axes, its platforms, whether it may be
//! selected implicitly, and the physical action each logical action binds to.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde::Serialize;
use serde::ser::SerializeMap;

use crate::RouteError;
use crate::axes::{
    Actuation, AxisOverrides, Effect, InteractionImpact, LogicalAction, Operator, Perception,
    Platform, ProviderKind, RouteAxes, RouteName, TargetScope, Verification,
};
use crate::recovery::{RecoveryPolicy, RecoveryStrategy};
use crate::wire::wire_enum;

/// A provider's own name for what it does (`dom_click`, `http_safe_request`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct PhysicalAction(Cow<'static, str>);

impl PhysicalAction {
    /// Names a physical action.
    pub fn new(name: impl Into<Cow<'static, str>>) -> Self {
        PhysicalAction(name.into())
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for PhysicalAction {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

wire_enum! {
    /// What kind of primitive a binding is; it fixes the default effect and the recovery policy.
    pub enum BindingKind: "binding kind" {
        /// Reads the target without changing it; may be retried once.
        Observe => "observe",
        /// Captures pixels as evidence; may be retried once.
        Capture => "capture",
        /// Moves the view (scrolling) without changing external state; never repeated, because
        /// a second scroll lands somewhere else.
        Gesture => "gesture",
        /// May change external state; dispatched at most once.
        Perform => "perform",
    }
}

impl BindingKind {
    /// The effect an operation bound this way has unless the request declares one.
    pub fn default_effect(self) -> Effect {
        match self {
            BindingKind::Observe | BindingKind::Capture | BindingKind::Gesture => Effect::Read,
            BindingKind::Perform => Effect::UnknownWrite,
        }
    }

    /// Whether the primitive itself may change external state.
    pub fn mutates(self) -> bool {
        self == BindingKind::Perform
    }
}

/// How one provider implements one logical action.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ActionBinding {
    physical_action: PhysicalAction,
    kind: BindingKind,
    overrides: AxisOverrides,
    retry: bool,
}

impl ActionBinding {
    /// A read of the target, with the provider's default axes and actuation `none`.
    pub fn observe(physical_action: impl Into<Cow<'static, str>>) -> Self {
        Self::with_kind(physical_action, BindingKind::Observe).actuation(Actuation::None)
    }

    /// A pixel capture: visual observation, pixels, screen capture, pixel-observation.
    pub fn capture(physical_action: impl Into<Cow<'static, str>>) -> Self {
        Self::with_kind(physical_action, BindingKind::Capture)
            .operator(Operator::VisualObservation)
            .perception(Perception::Pixels)
            .actuation(Actuation::ScreenCapture)
            .verification(Verification::PixelObservation)
    }

    /// A view movement that changes no external state but must not be repeated.
    pub fn gesture(physical_action: impl Into<Cow<'static, str>>) -> Self {
        Self::with_kind(physical_action, BindingKind::Gesture)
    }

    /// A primitive that may change external state.
    pub fn perform(physical_action: impl Into<Cow<'static, str>>) -> Self {
        Self::with_kind(physical_action, BindingKind::Perform)
    }

    /// Overrides the operator for this action.
    pub fn operator(mut self, operator: Operator) -> Self {
        self.overrides.operator = Some(operator);
        self
    }

    /// Overrides the perception for this action.
    pub fn perception(mut self, perception: Perception) -> Self {
        self.overrides.perception = Some(perception);
        self
    }

    /// Overrides the actuation for this action.
    pub fn actuation(mut self, actuation: Actuation) -> Self {
        self.overrides.actuation = Some(actuation);
        self
    }

    /// Overrides the target scope for this action.
    pub fn target_scope(mut self, target_scope: TargetScope) -> Self {
        self.overrides.target_scope = Some(target_scope);
        self
    }

    /// Overrides the verification channel for this action.
    pub fn verification(mut self, verification: Verification) -> Self {
        self.overrides.verification = Some(verification);
        self
    }

    /// Overrides the interaction impact for this action.
    pub fn interaction_impact(mut self, interaction_impact: InteractionImpact) -> Self {
        self.overrides.interaction_impact = Some(interaction_impact);
        self
    }

    /// Declares that even a failed read of this primitive must not be repeated (a capture
    /// written to a file, say).
    pub fn without_retry(mut self) -> Self {
        self.retry = false;
        self
    }

    /// The provider's name for the primitive.
    pub fn physical_action(&self) -> &PhysicalAction {
        &self.physical_action
    }

    /// The kind of primitive.
    pub fn kind(&self) -> BindingKind {
        self.kind
    }

    /// The per-action overrides.
    pub fn overrides(&self) -> &AxisOverrides {
        &self.overrides
    }

    /// The recovery policy the binding declares. Only reads that have not opted out may retry;
    /// there is no way to declare a retrying mutation.
    pub fn recovery(&self) -> RecoveryPolicy {
        match self.kind {
            BindingKind::Observe | BindingKind::Capture if self.retry => {
                RecoveryPolicy::SafeReadRetry
            }
            _ => RecoveryPolicy::NoAutomaticRecovery,
        }
    }

    fn with_kind(physical_action: impl Into<Cow<'static, str>>, kind: BindingKind) -> Self {
        ActionBinding {
            physical_action: PhysicalAction::new(physical_action),
            kind,
            overrides: AxisOverrides::default(),
            retry: true,
        }
    }
}

/// An immutable provider declaration. Built only through [`ProviderProfile::builder`], which
/// validates it; no field can change afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderProfile {
    provider: ProviderKind,
    route: RouteName,
    defaults: RouteAxes,
    platforms: BTreeSet<Platform>,
    implicit: bool,
    platform_default: bool,
    /// Indexed by [`LogicalAction`] ordinal, so physical adaptation is one array access.
    bindings: Box<[Option<ActionBinding>]>,
}

impl ProviderProfile {
    /// Starts a profile. It is explicit-only and available on every platform until told
    /// otherwise.
    pub fn builder(
        provider: ProviderKind,
        route: RouteName,
        defaults: RouteAxes,
    ) -> ProfileBuilder {
        ProfileBuilder {
            provider,
            route,
            defaults,
            platforms: BTreeSet::new(),
            implicit: false,
            platform_default: false,
            bindings: Vec::new(),
        }
    }

    /// The provider.
    pub fn provider(&self) -> ProviderKind {
        self.provider
    }

    /// The route family that selects it explicitly.
    pub fn route(&self) -> RouteName {
        self.route
    }

    /// Its default axes.
    pub fn defaults(&self) -> RouteAxes {
        self.defaults
    }

    /// The platforms it runs on.
    pub fn platforms(&self) -> &BTreeSet<Platform> {
        &self.platforms
    }

    /// Whether it runs on `platform`.
    pub fn supports(&self, platform: Platform) -> bool {
        self.platforms.contains(&platform)
    }

    /// Whether the planner may select it without an explicit route.
    pub fn implicit(&self) -> bool {
        self.implicit
    }

    /// Whether it is the platform default for the actions it implements on its platforms.
    pub fn platform_default(&self) -> bool {
        self.platform_default
    }

    /// The binding for `action`, if the provider implements it.
    pub fn binding(&self, action: LogicalAction) -> Option<&ActionBinding> {
        self.bindings
            .get(action_index(action))
            .and_then(Option::as_ref)
    }

    /// The axes the provider applies to `action`: its defaults with the binding's overrides.
    pub fn axes(&self, action: LogicalAction) -> Option<RouteAxes> {
        self.binding(action)
            .map(|binding| binding.overrides.apply(self.defaults))
    }

    /// The logical actions it implements, in total order.
    pub fn actions(&self) -> impl Iterator<Item = LogicalAction> + '_ {
        LogicalAction::ALL
            .iter()
            .copied()
            .filter(|action| self.binding(*action).is_some())
    }
}

impl Serialize for ProviderProfile {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct BindingView<'a> {
            physical_action: &'a PhysicalAction,
            kind: BindingKind,
            #[serde(flatten)]
            axes: RouteAxes,
            recovery: RecoveryStrategy,
        }
        struct Bindings<'a>(&'a ProviderProfile);
        impl Serialize for Bindings<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let profile = self.0;
                let mut map = serializer.serialize_map(None)?;
                for action in profile.actions() {
                    if let (Some(binding), Some(axes)) =
                        (profile.binding(action), profile.axes(action))
                    {
                        map.serialize_entry(
                            &action,
                            &BindingView {
                                physical_action: &binding.physical_action,
                                kind: binding.kind,
                                axes,
                                recovery: binding.recovery().strategy(),
                            },
                        )?;
                    }
                }
                map.end()
            }
        }
        #[derive(Serialize)]
        struct ProfileView<'a> {
            provider: ProviderKind,
            route: RouteName,
            #[serde(flatten)]
            defaults: RouteAxes,
            platforms: &'a BTreeSet<Platform>,
            implicit: bool,
            platform_default: bool,
            actions: Bindings<'a>,
        }
        ProfileView {
            provider: self.provider,
            route: self.route,
            defaults: self.defaults,
            platforms: &self.platforms,
            implicit: self.implicit,
            platform_default: self.platform_default,
            actions: Bindings(self),
        }
        .serialize(serializer)
    }
}

/// Collects a profile's declaration; [`ProfileBuilder::build`] validates it.
#[derive(Debug, Clone)]
pub struct ProfileBuilder {
    provider: ProviderKind,
    route: RouteName,
    defaults: RouteAxes,
    platforms: BTreeSet<Platform>,
    implicit: bool,
    platform_default: bool,
    bindings: Vec<(LogicalAction, ActionBinding)>,
}

impl ProfileBuilder {
    /// Restricts the profile to these platforms (default: every platform).
    pub fn platforms(mut self, platforms: impl IntoIterator<Item = Platform>) -> Self {
        self.platforms.extend(platforms);
        self
    }

    /// Lets the planner select the provider without an explicit route. Refused at build time
    /// for any provider that binds a coordinate action.
    pub fn implicit(mut self) -> Self {
        self.implicit = true;
        self
    }

    /// Makes the provider its platforms' default for the actions it implements (the
    /// platform-native accessibility provider, say). Implies [`ProfileBuilder::implicit`].
    pub fn platform_default(mut self) -> Self {
        self.implicit = true;
        self.platform_default = true;
        self
    }

    /// Binds a logical action.
    pub fn action(mut self, action: LogicalAction, binding: ActionBinding) -> Self {
        self.bindings.push((action, binding));
        self
    }

    /// Validates and freezes the profile.
    pub fn build(self) -> Result<ProviderProfile, RouteError> {
        let provider = self.provider;
        if self.bindings.is_empty() {
            return Err(RouteError::InvalidProfile {
                provider,
                problem: "it binds no logical action",
            });
        }
        let mut bindings: Vec<Option<ActionBinding>> = vec![None; LogicalAction::ALL.len()];
        for (action, binding) in self.bindings {
            let axes = binding.overrides.apply(self.defaults);
            if self.implicit && (axes.is_coordinate() || action.is_coordinate_action()) {
                return Err(RouteError::ImplicitCoordinateBinding { provider, action });
            }
            let slot = &mut bindings[action_index(action)];
            if slot.is_some() {
                return Err(RouteError::DuplicateBinding { provider, action });
            }
            *slot = Some(binding);
        }
        let platforms = if self.platforms.is_empty() {
            Platform::ALL.iter().copied().collect()
        } else {
            self.platforms
        };
        Ok(ProviderProfile {
            provider,
            route: self.route,
            defaults: self.defaults,
            platforms,
            implicit: self.implicit,
            platform_default: self.platform_default,
            bindings: bindings.into_boxed_slice(),
        })
    }
}

/// The position of `action` in [`LogicalAction::ALL`], which lists every variant in
/// declaration order.
pub(crate) fn action_index(action: LogicalAction) -> usize {
    action as usize
}
