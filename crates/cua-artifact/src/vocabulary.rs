//! Closed vocabularies shared by documents, policy and evidence.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How much harm an action can do. Ordered: the policy takes the maximum of its signals.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
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
}

impl ActionKind {
    /// Every kind, in declaration order.
    pub const ALL: [ActionKind; 11] = [
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
        }
    }

    /// Actions that only read the surface: they are safe whatever the control says.
    pub fn is_read_only(self) -> bool {
        matches!(self, Self::WaitFor | Self::Assert | Self::Extract | Self::Scroll)
    }

    /// Actions only a human operator may originate.
    pub fn is_human_only(self) -> bool {
        matches!(self, Self::RawInput)
    }
}
