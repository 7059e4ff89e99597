//! The witness type: an action the policy engine has allowed, bound to one actor, lease epoch
//! and resolved node.

use std::path::{Path, PathBuf};

use cua_artifact::{ActionKind, Actor, HttpMethod, RiskTier};
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
    /// A click that answers OK to the JavaScript `confirm()` it raises, when the dialog's
    /// message is exactly `confirm` (whitespace squashed); every other dialog is declined. The
    /// policy classifies the message as it classifies a control's name.
    ClickAcceptingConfirm {
        confirm: String,
    },
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
    /// A request to a declared service (the structured-api operator).
    Http(HttpRequest),
    /// A declared executable from an argv (the native-cli operator).
    Command(CommandInvocation),
    /// A click at a point of the page's viewport, in CSS pixels (the visual-coordinate
    /// operator). The replay engine builds one only from a claimed observation ref, after the
    /// point was checked against the screenshot's bounds.
    PointClick {
        x: f64,
        y: f64,
    },
    /// A capture of the page's viewport (the visual-observation operator): a read, authorized
    /// like any action so the policy and the lease decide it, then taken through
    /// `SurfaceDriver::screenshot`, never dispatched.
    Screenshot,
}

/// An HTTP request with every value bound. Header values and the body may hold secrets, so
/// `Debug` prints header names and the body's length only.
#[derive(Clone, PartialEq)]
pub struct HttpRequest {
    pub method: HttpMethod,
    pub url: String,
    /// Names in lower case, in the artifact's (sorted) order.
    pub headers: Vec<(String, String)>,
    /// A JSON document, sent with `content-type: application/json`.
    pub body: Option<String>,
    pub timeout_ms: u32,
}

impl std::fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        write!(
            f,
            "HttpRequest({} {}, headers: {names:?}, body: {:?} bytes, timeout {} ms)",
            self.method.as_str(),
            self.url,
            self.body.as_ref().map(String::len),
            self.timeout_ms
        )
    }
}

/// A command by its declared name, with its bound argv. The program path is not here: the
/// policy engine looks the name up in its allowlist and puts the path on the
/// [`AuthorizedAction`], so a proposer cannot choose what runs.
#[derive(Clone, PartialEq)]
pub struct CommandInvocation {
    pub executable: String,
    pub args: Vec<String>,
    pub timeout_ms: u32,
}

impl std::fmt::Debug for CommandInvocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CommandInvocation({}, {} args, timeout {} ms)",
            self.executable,
            self.args.len(),
            self.timeout_ms
        )
    }
}

impl SurfaceAction {
    /// The action's kind in the closed vocabulary.
    pub fn kind(&self) -> ActionKind {
        match self {
            Self::Click | Self::ClickAcceptingConfirm { .. } => ActionKind::Click,
            Self::Type { .. } => ActionKind::Type,
            Self::Select { .. } => ActionKind::Select,
            Self::PressKey { .. } => ActionKind::PressKey,
            Self::Navigate { .. } => ActionKind::Navigate,
            Self::Reload => ActionKind::Reload,
            Self::Scroll { .. } => ActionKind::Scroll,
            Self::RawInput(_) => ActionKind::RawInput,
            Self::Http(_) => ActionKind::Http,
            Self::Command(_) => ActionKind::Command,
            Self::PointClick { .. } => ActionKind::ClickAt,
            Self::Screenshot => ActionKind::Screenshot,
        }
    }

    /// Whether the action only reads: a read-only kind, or an HTTP request with a safe method.
    pub fn is_read_only(&self) -> bool {
        match self {
            Self::Http(request) => request.method.is_safe(),
            other => other.kind().is_read_only(),
        }
    }

    /// Whether this action needs a resolved node to act on.
    pub fn needs_target(&self) -> bool {
        matches!(
            self,
            Self::Click
                | Self::ClickAcceptingConfirm { .. }
                | Self::Type { .. }
                | Self::Select { .. }
        )
    }
}

impl std::fmt::Debug for SurfaceAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Click => f.write_str("Click"),
            Self::ClickAcceptingConfirm { confirm } => {
                write!(f, "ClickAcceptingConfirm({confirm:?})")
            }
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
            Self::Http(request) => write!(f, "Http({request:?})"),
            Self::Command(command) => write!(f, "Command({command:?})"),
            Self::PointClick { x, y } => write!(f, "PointClick({x}, {y})"),
            Self::Screenshot => f.write_str("Screenshot"),
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
/// It is not `Clone` and every port takes it by value, so one decision is dispatched at most
/// once; only a safe-method request may be sent again, through
/// [`AuthorizedAction::retry_of_read`].
#[derive(Debug, PartialEq)]
pub struct AuthorizedAction {
    actor: Actor,
    lease_epoch: u64,
    decision_id: String,
    assessment: RiskAssessment,
    action: SurfaceAction,
    target: Option<ResolvedTarget>,
    /// The program a command runs, from the policy's allowlist; `None` for every other action.
    program: Option<PathBuf>,
}

impl AuthorizedAction {
    pub(crate) fn mint(
        actor: Actor,
        lease_epoch: u64,
        decision_id: String,
        assessment: RiskAssessment,
        action: SurfaceAction,
        target: Option<ResolvedTarget>,
        program: Option<PathBuf>,
    ) -> Self {
        Self {
            actor,
            lease_epoch,
            decision_id,
            assessment,
            action,
            target,
            program,
        }
    }

    /// A second witness for the same read, for the one retry a route offers after a failure:
    /// only a request with a safe method (GET, HEAD, OPTIONS) the policy assessed `safe`.
    /// `None` for anything else, whatever its declared risk: a step that may mutate is never
    /// sent twice under one decision.
    pub fn retry_of_read(&self) -> Option<Self> {
        let read = matches!(&self.action, SurfaceAction::Http(request) if request.method.is_safe());
        (read && self.assessment.tier == RiskTier::Safe).then(|| Self {
            actor: self.actor,
            lease_epoch: self.lease_epoch,
            decision_id: self.decision_id.clone(),
            assessment: self.assessment.clone(),
            action: self.action.clone(),
            target: self.target.clone(),
            program: self.program.clone(),
        })
    }

    /// The program the policy allowed for a command action: the only path a command runner
    /// may start.
    pub fn program(&self) -> Option<&Path> {
        self.program.as_deref()
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
