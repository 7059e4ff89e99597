//! The witness type: an action the policy engine has allowed, bound to one actor, lease epoch
//! and resolved node.

use cua_artifact::{ActionKind, Actor, RiskTier};
use cua_snapshot::NodeId;

use crate::engine::RiskAssessment;

/// Scroll direction for [`SurfaceAction::Scroll`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrollDirection {
    Up,
    Down,
    IntoView,
}

/// A human operator's low-level gesture from the console's live view.
#[derive(Clone, PartialEq)]
pub enum RawInput {
    /// A click at top-level page coordinates (CSS pixels).
    MouseClick { x: f64, y: f64 },
    /// Text typed at the focused element.
    Text { text: String },
    /// One key press, by DOM key name (`Enter`, `Tab`, `a`).
    Key { key: String },
}

impl std::fmt::Debug for RawInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::MouseClick { x, y } => write!(f, "MouseClick({x}, {y})"),
            Self::Text { text } => write!(f, "Text(<{} chars>)", text.chars().count()),
            Self::Key { key } => write!(f, "Key({key})"),
        }
    }
}

/// A concrete action with every value already bound. Typed text may be a secret, so `Debug`
/// prints its length, never its characters.
#[derive(Clone, PartialEq)]
pub enum SurfaceAction {
    Click,
    Type {
        text: String,
        clear_first: bool,
    },
    Select {
        value: String,
    },
    PressKey {
        key: String,
    },
    Navigate {
        url: String,
    },
    Reload,
    Scroll {
        direction: ScrollDirection,
        amount: Option<i64>,
    },
    RawInput(RawInput),
}

impl SurfaceAction {
    /// The action's kind in the closed vocabulary.
    pub fn kind(&self) -> ActionKind {
        match self {
            Self::Click => ActionKind::Click,
            Self::Type { .. } => ActionKind::Type,
            Self::Select { .. } => ActionKind::Select,
            Self::PressKey { .. } => ActionKind::PressKey,
            Self::Navigate { .. } => ActionKind::Navigate,
            Self::Reload => ActionKind::Reload,
            Self::Scroll { .. } => ActionKind::Scroll,
            Self::RawInput(_) => ActionKind::RawInput,
        }
    }

    /// Whether this action needs a resolved node to act on.
    pub fn needs_target(&self) -> bool {
        matches!(self, Self::Click | Self::Type { .. } | Self::Select { .. })
    }
}

impl std::fmt::Debug for SurfaceAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Click => f.write_str("Click"),
            Self::Type { text, clear_first } => {
                write!(
                    f,
                    "Type(<{} chars>, clear_first: {clear_first})",
                    text.chars().count()
                )
            }
            Self::Select { value } => write!(f, "Select(<{} chars>)", value.chars().count()),
            Self::PressKey { key } => write!(f, "PressKey({key})"),
            Self::Navigate { url } => write!(f, "Navigate({url})"),
            Self::Reload => f.write_str("Reload"),
            Self::Scroll { direction, amount } => write!(f, "Scroll({direction:?}, {amount:?})"),
            Self::RawInput(raw) => write!(f, "RawInput({raw:?})"),
        }
    }
}

/// The node a target descriptor resolved to, as the policy saw it: its name feeds the risk
/// lexicon ("Transfer Funds" is irreversible whatever the step declares).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedTarget {
    pub node_id: NodeId,
    pub role: String,
    pub name: String,
}

/// An action the policy engine allowed. Private fields, no public constructor: only
/// [`crate::PolicyEngine::authorize`] makes one, and a surface driver accepts nothing else.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthorizedAction {
    actor: Actor,
    lease_epoch: u64,
    decision_id: String,
    assessment: RiskAssessment,
    action: SurfaceAction,
    target: Option<ResolvedTarget>,
}

impl AuthorizedAction {
    pub(crate) fn mint(
        actor: Actor,
        lease_epoch: u64,
        decision_id: String,
        assessment: RiskAssessment,
        action: SurfaceAction,
        target: Option<ResolvedTarget>,
    ) -> Self {
        Self {
            actor,
            lease_epoch,
            decision_id,
            assessment,
            action,
            target,
        }
    }

    pub fn actor(&self) -> Actor {
        self.actor
    }

    pub fn lease_epoch(&self) -> u64 {
        self.lease_epoch
    }

    pub fn decision_id(&self) -> &str {
        &self.decision_id
    }

    pub fn risk(&self) -> RiskTier {
        self.assessment.tier
    }

    /// The risk tier with the signals and the reason the engine recorded.
    pub fn assessment(&self) -> &RiskAssessment {
        &self.assessment
    }

    pub fn action(&self) -> &SurfaceAction {
        &self.action
    }

    pub fn target(&self) -> Option<&ResolvedTarget> {
        self.target.as_ref()
    }
}
