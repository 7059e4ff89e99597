//! Closed vocabularies shared by documents, policy and evidence.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How much harm an action can do. Ordered: the policy takes the maximum of its signals.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RiskTier {
    #[default]
    Safe,
    Elevated,
    Irreversible,
}

impl RiskTier {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Safe => "safe",
            Self::Elevated => "elevated",
            Self::Irreversible => "irreversible",
        }
    }
}

/// Who originated an action. Discovery acts as `agent`, replay as `automation`, an operator in
/// the console as `human`; `system` observes and escalates but never acts.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    Automation,
    Agent,
    Human,
    System,
}

impl Actor {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Automation => "automation",
            Self::Agent => "agent",
            Self::Human => "human",
            Self::System => "system",
        }
    }
}

/// The closed set of step actions. `raw_input` exists only so an operator's console gestures
/// are policed like everything else; no artifact may contain one.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    Click,
    Type,
    Select,
    PressKey,
    Navigate,
    Reload,
    Scroll,
    WaitFor,
    Extract,
    Assert,
    RawInput,
    /// A request to a declared HTTP service.
    Http,
    /// A declared executable run from an argv.
    Command,
    /// A screenshot that issues a visual observation ref.
    Screenshot,
    /// A click at a screenshot's pixel coordinates.
    ClickAt,
}

impl ActionKind {
    /// Every kind, in declaration order.
    pub const ALL: [ActionKind; 15] = [
        Self::Click,
        Self::Type,
        Self::Select,
        Self::PressKey,
        Self::Navigate,
        Self::Reload,
        Self::Scroll,
        Self::WaitFor,
        Self::Extract,
        Self::Assert,
        Self::RawInput,
        Self::Http,
        Self::Command,
        Self::Screenshot,
        Self::ClickAt,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Click => "click",
            Self::Type => "type",
            Self::Select => "select",
            Self::PressKey => "press_key",
            Self::Navigate => "navigate",
            Self::Reload => "reload",
            Self::Scroll => "scroll",
            Self::WaitFor => "wait_for",
            Self::Extract => "extract",
            Self::Assert => "assert",
            Self::RawInput => "raw_input",
            Self::Http => "http",
            Self::Command => "command",
            Self::Screenshot => "screenshot",
            Self::ClickAt => "click_at",
        }
    }

    /// The kind with this wire name (what traces name a tool call or a gesture by).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// Actions that only read the surface: they are safe whatever the control says.
    pub fn is_read_only(self) -> bool {
        matches!(
            self,
            Self::WaitFor | Self::Assert | Self::Extract | Self::Scroll | Self::Screenshot
        )
    }

    /// Actions only a human operator may originate.
    pub fn is_human_only(self) -> bool {
        matches!(self, Self::RawInput)
    }
}

/// Why a run failed. Failures are not declared in an artifact; `escalation.triggers` decides which
/// of them pause for a human and which fail the run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FailureCode {
    TargetNotFound,
    TargetAmbiguous,
    PreconditionFailed,
    CheckpointFailed,
    ActionFailed,
    Timeout,
    NavigationBlocked,
    PolicyDenied,
    SurfaceUnavailable,
    RecoveryExhausted,
    InputValidationFailed,
    UnexpectedState,
    LeaseLost,
    /// No provider may perform a step as the artifact asks (a `via` that names no route, a
    /// route that lacks the action, a coordinate action without an explicit visual route),
    /// decided by the route planner before anything is dispatched.
    RouteUnavailable,
    /// The process was asked to stop (SIGINT, SIGTERM) and dispatched nothing more; an action
    /// already handed over was let settle first.
    Interrupted,
    /// The screen supports two explanations at once (a declared business outcome after a
    /// mutation that was handed over): the run refuses to pick one.
    AmbiguousScreen,
    Internal,
}

impl FailureCode {
    /// Every code, in declaration order.
    pub const ALL: [FailureCode; 17] = [
        Self::TargetNotFound,
        Self::TargetAmbiguous,
        Self::PreconditionFailed,
        Self::CheckpointFailed,
        Self::ActionFailed,
        Self::Timeout,
        Self::NavigationBlocked,
        Self::PolicyDenied,
        Self::SurfaceUnavailable,
        Self::RecoveryExhausted,
        Self::InputValidationFailed,
        Self::UnexpectedState,
        Self::LeaseLost,
        Self::RouteUnavailable,
        Self::Interrupted,
        Self::AmbiguousScreen,
        Self::Internal,
    ];

    /// The triggers an artifact escalates on when it does not say: the failures a human
    /// looking at the live screen can usually resolve.
    pub const DEFAULT_ESCALATION_TRIGGERS: [FailureCode; 5] = [
        Self::TargetAmbiguous,
        Self::TargetNotFound,
        Self::CheckpointFailed,
        Self::RecoveryExhausted,
        Self::UnexpectedState,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TargetNotFound => "target_not_found",
            Self::TargetAmbiguous => "target_ambiguous",
            Self::PreconditionFailed => "precondition_failed",
            Self::CheckpointFailed => "checkpoint_failed",
            Self::ActionFailed => "action_failed",
            Self::Timeout => "timeout",
            Self::NavigationBlocked => "navigation_blocked",
            Self::PolicyDenied => "policy_denied",
            Self::SurfaceUnavailable => "surface_unavailable",
            Self::RecoveryExhausted => "recovery_exhausted",
            Self::InputValidationFailed => "input_validation_failed",
            Self::UnexpectedState => "unexpected_state",
            Self::LeaseLost => "lease_lost",
            Self::RouteUnavailable => "route_unavailable",
            Self::Interrupted => "interrupted",
            Self::AmbiguousScreen => "ambiguous_screen",
            Self::Internal => "internal",
        }
    }
}

/// How a run ended. A business outcome is not a failure: "no such member" is an answer.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Success,
    BusinessOutcome,
    NeedsHuman,
    Failed,
}

impl RunStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::BusinessOutcome => "business_outcome",
            Self::NeedsHuman => "needs_human",
            Self::Failed => "failed",
        }
    }
}

/// What is known about whether a dispatched action had its effect. A dispatch receipt alone is
/// never `confirmed`: only an observed postcondition or an authoritative response is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EffectVerdict {
    /// The action has no effect to verify (reads, waits, assertions).
    NotApplicable,
    /// The postcondition was observed on a fresh snapshot.
    Confirmed,
    /// The effect may still land; it was not observed yet.
    Pending,
    /// Nothing declared can tell whether it happened.
    Unverifiable,
    /// The screen after the action is indistinguishable from before it.
    SuspectedNoop,
}

impl EffectVerdict {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotApplicable => "not_applicable",
            Self::Confirmed => "confirmed",
            Self::Pending => "pending",
            Self::Unverifiable => "unverifiable",
            Self::SuspectedNoop => "suspected_noop",
        }
    }
}

/// The rungs of the resolution ladder, strongest first. Resolving on a weaker rung than the one
/// recorded is drift; resolving on a stronger one is not.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ResolutionStrategy {
    SemanticExact,
    SemanticNormalized,
    LabelAssociation,
    StructuralAnchor,
    HintCached,
    OrdinalInRegion,
    Vision,
}

impl ResolutionStrategy {
    /// The ladder, in the order the resolver walks it.
    pub const LADDER: [ResolutionStrategy; 7] = [
        Self::SemanticExact,
        Self::SemanticNormalized,
        Self::LabelAssociation,
        Self::StructuralAnchor,
        Self::HintCached,
        Self::OrdinalInRegion,
        Self::Vision,
    ];

    /// Position on the ladder: 0 is the strongest rung.
    pub fn rank(self) -> u8 {
        match self {
            Self::SemanticExact => 0,
            Self::SemanticNormalized => 1,
            Self::LabelAssociation => 2,
            Self::StructuralAnchor => 3,
            Self::HintCached => 4,
            Self::OrdinalInRegion => 5,
            Self::Vision => 6,
        }
    }

    /// Whether resolving with `used` when `self` was recorded is drift (a weaker rung).
    pub fn drifted_to(self, used: ResolutionStrategy) -> bool {
        used.rank() > self.rank()
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SemanticExact => "semantic_exact",
            Self::SemanticNormalized => "semantic_normalized",
            Self::LabelAssociation => "label_association",
            Self::StructuralAnchor => "structural_anchor",
            Self::HintCached => "hint_cached",
            Self::OrdinalInRegion => "ordinal_in_region",
            Self::Vision => "vision",
        }
    }
}

/// What the executor made of a screen before acting on it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ObservationClass {
    /// The screen is one the step expects.
    Expected,
    /// A declared outcome matched.
    BusinessOutcome,
    /// A declared recovery rule matched.
    Recoverable,
    /// Nothing declared matches: the run stops (fail closed).
    UnexpectedState,
}

impl ObservationClass {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Expected => "expected",
            Self::BusinessOutcome => "business_outcome",
            Self::Recoverable => "recoverable",
            Self::UnexpectedState => "unexpected_state",
        }
    }
}
