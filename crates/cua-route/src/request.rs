//! What the planner is asked: one logical action on one platform, an optional explicit route,
//! the operation's declared effect, and the exact target evidence the caller holds.

use serde::{Deserialize, Serialize};

use crate::RouteError;
use crate::axes::{Effect, LogicalAction, Platform, ProviderKind, RouteName, TargetScope};
use crate::observation::PixelPoint;
use crate::wire::wire_enum;

/// One planning request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteRequest {
    pub action: LogicalAction,
    pub platform: Platform,
    /// An explicit route: a hard constraint that also permits non-implicit providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<RouteName>,
    /// The operation's declared effect; the binding's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<Effect>,
    #[serde(default, skip_serializing_if = "TargetEvidence::is_empty")]
    pub evidence: TargetEvidence,
}

impl RouteRequest {
    /// A request with no route, no declared effect and no evidence.
    pub fn new(action: LogicalAction, platform: Platform) -> Self {
        RouteRequest {
            action,
            platform,
            via: None,
            effect: None,
            evidence: TargetEvidence::default(),
        }
    }

    /// Requests an explicit route.
    pub fn via(mut self, route: RouteName) -> Self {
        self.via = Some(route);
        self
    }

    /// Declares the operation's effect.
    pub fn effect(mut self, effect: Effect) -> Self {
        self.effect = Some(effect);
        self
    }

    /// Attaches target evidence.
    pub fn evidence(mut self, evidence: TargetEvidence) -> Self {
        self.evidence = evidence;
        self
    }
}

wire_enum! {
    /// A kind of target evidence. The order is the order the planner reads evidence in when it
    /// names the evidence that decided a route.
    pub enum EvidenceKind: "evidence kind" {
        DurableRef => "durable-ref",
        Renderer => "renderer",
        Element => "element",
        NativeWindow => "native-window",
        Service => "service",
        Executable => "executable",
        Observation => "observation",
        Coordinates => "coordinates",
    }
}

impl EvidenceKind {
    /// How the evidence reads in a sentence.
    pub fn phrase(self) -> &'static str {
        match self {
            EvidenceKind::DurableRef => "durable ref",
            EvidenceKind::Renderer => "browser renderer",
            EvidenceKind::Element => "DOM element",
            EvidenceKind::NativeWindow => "native window",
            EvidenceKind::Service => "service endpoint",
            EvidenceKind::Executable => "declared executable",
            EvidenceKind::Observation => "visual observation",
            EvidenceKind::Coordinates => "pixel coordinates",
        }
    }
}

/// The exact target the caller can name. Every field is optional; more evidence narrows the
/// route, it never widens it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetEvidence {
    /// A provider-namespaced ref (`cdp-browser:…`); its owner must execute the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable_ref: Option<DurableRef>,
    /// A browser renderer: a CDP endpoint or page target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renderer: Option<String>,
    /// A semantic element inside a renderer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element: Option<String>,
    /// A native window id, process id or application identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_window: Option<String>,
    /// A declared service base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// A declared executable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
    /// The binding of the visual observation a coordinate action will claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<ObservationEvidence>,
    /// Pixel coordinates in screenshot space.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinates: Option<PixelPoint>,
    /// The named session the step runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl TargetEvidence {
    /// Whether no evidence at all is present.
    pub fn is_empty(&self) -> bool {
        self == &TargetEvidence::default()
    }

    /// Adds a durable ref.
    pub fn durable_ref(mut self, durable_ref: DurableRef) -> Self {
        self.durable_ref = Some(durable_ref);
        self
    }

    /// Adds a renderer.
    pub fn renderer(mut self, renderer: impl Into<String>) -> Self {
        self.renderer = Some(renderer.into());
        self
    }

    /// Adds an element.
    pub fn element(mut self, element: impl Into<String>) -> Self {
        self.element = Some(element.into());
        self
    }

    /// Adds a native window.
    pub fn native_window(mut self, native_window: impl Into<String>) -> Self {
        self.native_window = Some(native_window.into());
        self
    }

    /// Adds a service base URL.
    pub fn service(mut self, service: impl Into<String>) -> Self {
        self.service = Some(service.into());
        self
    }

    /// Adds an executable.
    pub fn executable(mut self, executable: impl Into<String>) -> Self {
        self.executable = Some(executable.into());
        self
    }

    /// Adds the binding of a visual observation.
    pub fn observation(mut self, observation: ObservationEvidence) -> Self {
        self.observation = Some(observation);
        self
    }

    /// Adds pixel coordinates.
    pub fn coordinates(mut self, x: u32, y: u32) -> Self {
        self.coordinates = Some(PixelPoint { x, y });
        self
    }

    /// Names the session.
    pub fn session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// The kinds present, in [`EvidenceKind`] order.
    pub fn kinds(&self) -> Vec<EvidenceKind> {
        let present = [
            (EvidenceKind::DurableRef, self.durable_ref.is_some()),
            (EvidenceKind::Renderer, self.renderer.is_some()),
            (EvidenceKind::Element, self.element.is_some()),
            (EvidenceKind::NativeWindow, self.native_window.is_some()),
            (EvidenceKind::Service, self.service.is_some()),
            (EvidenceKind::Executable, self.executable.is_some()),
            (EvidenceKind::Observation, self.observation.is_some()),
            (EvidenceKind::Coordinates, self.coordinates.is_some()),
        ];
        present
            .into_iter()
            .filter_map(|(kind, is_present)| is_present.then_some(kind))
            .collect()
    }
}

/// What the planner needs to know about the observation a coordinate action will claim: who
/// issued it, for which scope and session. The planner sees only this; the single-use claim
/// happens at dispatch, against the [`ObservationLedger`](crate::ObservationLedger).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationEvidence {
    pub issuer: ProviderKind,
    pub target_scope: TargetScope,
    pub session: String,
}

impl From<&crate::observation::ObservationBinding> for ObservationEvidence {
    /// The planning view of a live observation (see
    /// [`ObservationLedger::peek`](crate::ObservationLedger::peek)).
    fn from(binding: &crate::observation::ObservationBinding) -> Self {
        ObservationEvidence {
            issuer: binding.provider(),
            target_scope: binding.scope().target_scope,
            session: binding.session().to_owned(),
        }
    }
}

/// A ref whose namespace names the provider that owns it: `cdp-browser:node-42`. Only that
/// provider may act on it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DurableRef {
    owner: ProviderKind,
    id: String,
}

impl DurableRef {
    /// Parses `<provider>:<id>`. `cdp:` is accepted for `cdp-browser:`; visual observations are
    /// not durable refs and are refused here.
    pub fn parse(input: &str) -> Result<DurableRef, RouteError> {
        let invalid = |problem| RouteError::InvalidDurableRef {
            input: input.to_owned(),
            problem,
        };
        let (namespace, id) = input
            .split_once(':')
            .ok_or_else(|| invalid("it has no provider namespace"))?;
        if id.is_empty() {
            return Err(invalid("its id is empty"));
        }
        let owner = match namespace {
            "cdp" => ProviderKind::CdpBrowser,
            "visual-observation" => {
                return Err(invalid(
                    "a visual observation confers coordinate authority, not a durable target",
                ));
            }
            other => other
                .parse::<ProviderKind>()
                .map_err(|_| invalid("its namespace names no known provider"))?,
        };
        Ok(DurableRef {
            owner,
            id: id.to_owned(),
        })
    }

    /// The provider that owns the ref.
    pub fn owner(&self) -> ProviderKind {
        self.owner
    }

    /// The provider-local id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl std::fmt::Display for DurableRef {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}:{}", self.owner, self.id)
    }
}

impl std::str::FromStr for DurableRef {
    type Err = RouteError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        DurableRef::parse(input)
    }
}

impl Serialize for DurableRef {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DurableRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let input = String::deserialize(deserializer)?;
        DurableRef::parse(&input).map_err(serde::de::Error::custom)
    }
}
