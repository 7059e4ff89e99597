//! The witness type: an action the policy engine has allowed, bound to one actor, lease epoch
//! and resolved node.

use std::path::{Path, PathBuf};

use cua_artifact::{ActionKind, Actor, HttpMethod, RiskTier};
use cua_snapshot::NodeId;

use crate::engine::RiskAssessment;

/// Scroll direction for [`BrowserAction::Scroll`].
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

/// What the browser port performs, with every value already bound. Typed text may be a secret,
/// so `Debug` prints its length, never its characters.
#[derive(Clone, PartialEq)]
pub enum BrowserAction {
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
    /// A click at a point of the page's viewport, in CSS pixels (the visual-coordinate
    /// operator). The replay engine builds one only from a claimed observation ref, after the
    /// point was checked against the screenshot's bounds.
    PointClick {
        x: f64,
        y: f64,
    },
}

/// A concrete action with every value already bound, for whichever port performs it: what the
/// policy decides on. Each port takes only its own part, as an [`Authorized`] of it.
#[derive(Clone, PartialEq)]
pub enum SurfaceAction {
    /// An action in the browser (the surface driver).
    Browser(BrowserAction),
    /// A request to a declared service (the structured-api operator).
    Http(HttpRequest),
    /// A declared executable from an argv (the native-cli operator).
    Command(CommandInvocation),
    /// A capture of the page's viewport (the visual-observation operator): a read, authorized
    /// like any action so the policy and the lease decide it, then taken through
    /// `SurfaceDriver::screenshot`, never dispatched.
    Screenshot,
}

impl From<BrowserAction> for SurfaceAction {
    fn from(action: BrowserAction) -> Self {
        Self::Browser(action)
    }
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

impl BrowserAction {
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
            Self::PointClick { .. } => ActionKind::ClickAt,
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

impl SurfaceAction {
    /// The action's kind in the closed vocabulary.
    pub fn kind(&self) -> ActionKind {
        match self {
            Self::Browser(action) => action.kind(),
            Self::Http(_) => ActionKind::Http,
            Self::Command(_) => ActionKind::Command,
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
        matches!(self, Self::Browser(action) if action.needs_target())
    }
}

impl std::fmt::Debug for SurfaceAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Browser(action) => action.fmt(f),
            Self::Http(request) => write!(f, "Http({request:?})"),
            Self::Command(command) => write!(f, "Command({command:?})"),
            Self::Screenshot => f.write_str("Screenshot"),
        }
    }
}

impl std::fmt::Debug for BrowserAction {
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
            Self::PointClick { x, y } => write!(f, "PointClick({x}, {y})"),
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

/// An action the policy engine allowed, for the port that performs `A`. Private fields, no
/// public constructor: only [`crate::PolicyEngine::authorize`] makes one (as an
/// [`AuthorizedAction`], which [`Authorized::into_port`] splits by port), and each port accepts
/// nothing else: the surface driver an `Authorized<BrowserAction>`, the HTTP operator an
/// `Authorized<HttpRequest>`, the command operator an `Authorized<CommandInvocation>`. It is
/// not `Clone` and every port takes it by value, so one decision is dispatched at most once;
/// only a safe-method request may be sent again, through [`Authorized::retry_of_read`].
#[derive(Debug, PartialEq)]
pub struct Authorized<A> {
    grant: Grant,
    action: A,
}

/// What the policy decided, whichever port performs the action.
#[derive(Debug, PartialEq)]
struct Grant {
    actor: Actor,
    lease_epoch: u64,
    decision_id: String,
    assessment: RiskAssessment,
    target: Option<ResolvedTarget>,
    /// The program a command runs, from the policy's allowlist; `None` for every other action.
    program: Option<PathBuf>,
}

/// The policy's witness for any action, before it is split by port.
pub type AuthorizedAction = Authorized<SurfaceAction>;

/// An [`AuthorizedAction`] split by the port that performs it.
#[derive(Debug)]
pub enum ForPort {
    Browser(Authorized<BrowserAction>),
    Http(Authorized<HttpRequest>),
    Command(Authorized<CommandInvocation>),
    /// A screenshot is taken, not dispatched: the witness only shows it was allowed.
    Screenshot(Authorized<()>),
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
            grant: Grant {
                actor,
                lease_epoch,
                decision_id,
                assessment,
                target,
                program,
            },
            action,
        }
    }

    /// The witness for the port that performs this action.
    pub fn into_port(self) -> ForPort {
        let Self { grant, action } = self;
        match action {
            SurfaceAction::Browser(action) => ForPort::Browser(Authorized { grant, action }),
            SurfaceAction::Http(action) => ForPort::Http(Authorized { grant, action }),
            SurfaceAction::Command(action) => ForPort::Command(Authorized { grant, action }),
            SurfaceAction::Screenshot => ForPort::Screenshot(Authorized { grant, action: () }),
        }
    }

    /// The browser's witness, or the kind of the action when the browser does not perform it.
    pub fn into_browser(self) -> Result<Authorized<BrowserAction>, ActionKind> {
        let kind = self.action.kind();
        match self.into_port() {
            ForPort::Browser(browser) => Ok(browser),
            _ => Err(kind),
        }
    }

    /// The HTTP operator's witness, or the kind of the action when it is not a request.
    pub fn into_http(self) -> Result<Authorized<HttpRequest>, ActionKind> {
        let kind = self.action.kind();
        match self.into_port() {
            ForPort::Http(http) => Ok(http),
            _ => Err(kind),
        }
    }

    /// The command operator's witness, or the kind of the action when it is not a command.
    pub fn into_command(self) -> Result<Authorized<CommandInvocation>, ActionKind> {
        let kind = self.action.kind();
        match self.into_port() {
            ForPort::Command(command) => Ok(command),
            _ => Err(kind),
        }
    }
}

impl Authorized<HttpRequest> {
    /// A second witness for the same read, for the one retry a route offers after a failure:
    /// only a request with a safe method (GET, HEAD, OPTIONS) the policy assessed `safe`.
    /// `None` for anything else, whatever its declared risk: a step that may mutate is never
    /// sent twice under one decision.
    pub fn retry_of_read(&self) -> Option<Self> {
        let grant = &self.grant;
        (self.action.method.is_safe() && grant.assessment.tier == RiskTier::Safe).then(|| Self {
            grant: Grant {
                actor: grant.actor,
                lease_epoch: grant.lease_epoch,
                decision_id: grant.decision_id.clone(),
                assessment: grant.assessment.clone(),
                target: grant.target.clone(),
                program: grant.program.clone(),
            },
            action: self.action.clone(),
        })
    }
}

impl<A> Authorized<A> {
    /// The program the policy allowed for a command action: the only path a command runner
    /// may start.
    pub fn program(&self) -> Option<&Path> {
        self.grant.program.as_deref()
    }

    pub fn actor(&self) -> Actor {
        self.grant.actor
    }

    pub fn lease_epoch(&self) -> u64 {
        self.grant.lease_epoch
    }

    pub fn decision_id(&self) -> &str {
        &self.grant.decision_id
    }

    pub fn risk(&self) -> RiskTier {
        self.grant.assessment.tier
    }

    /// The risk tier with the signals and the reason the engine recorded.
    pub fn assessment(&self) -> &RiskAssessment {
        &self.grant.assessment
    }

    pub fn action(&self) -> &A {
        &self.action
    }

    pub fn target(&self) -> Option<&ResolvedTarget> {
        self.grant.target.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use cua_artifact::HttpMethod;

    use super::*;

    /// What an action prints for logs and panics: its shape, never a value that may be a
    /// secret (typed text, a selected value, header values, a body, a command's arguments).
    #[test]
    fn debug_shows_the_shape_and_never_a_value() {
        let shown = [
            format!(
                "{:?}",
                SurfaceAction::Browser(BrowserAction::Type {
                    text: "hunter2".to_owned(),
                    clear_first: true,
                })
            ),
            format!(
                "{:?}",
                BrowserAction::Select {
                    value: "hunter2".to_owned()
                }
            ),
            format!(
                "{:?}",
                RawInput::Text {
                    text: "hunter2".to_owned()
                }
            ),
            format!(
                "{:?}",
                SurfaceAction::Http(HttpRequest {
                    method: HttpMethod::Post,
                    url: "http://127.0.0.1:8811/api/notes".to_owned(),
                    headers: vec![("authorization".to_owned(), "Bearer hunter2".to_owned())],
                    body: Some("{\"pin\":\"hunter2\"}".to_owned()),
                    timeout_ms: 5_000,
                })
            ),
            format!(
                "{:?}",
                SurfaceAction::Command(CommandInvocation {
                    executable: "member-risk".to_owned(),
                    args: vec!["hunter2".to_owned()],
                    timeout_ms: 1_000,
                })
            ),
        ];
        assert_eq!(
            shown,
            [
                "Type(<7 chars>, clear_first: true)",
                "Select(<7 chars>)",
                "Text(<7 chars>)",
                "Http(HttpRequest(POST http://127.0.0.1:8811/api/notes, headers: [\"authorization\"], body: Some(17) bytes, timeout 5000 ms))",
                "Command(CommandInvocation(member-risk, 1 args, timeout 1000 ms))",
            ]
        );
    }

    #[test]
    fn only_actions_on_a_node_need_a_target() {
        let needs: Vec<bool> = [
            BrowserAction::Click,
            BrowserAction::ClickAcceptingConfirm {
                confirm: "Post it?".to_owned(),
            },
            BrowserAction::Type {
                text: String::new(),
                clear_first: false,
            },
            BrowserAction::Select {
                value: String::new(),
            },
            BrowserAction::PressKey {
                key: "Enter".to_owned(),
            },
            BrowserAction::Reload,
            BrowserAction::PointClick { x: 1.0, y: 2.0 },
        ]
        .iter()
        .map(BrowserAction::needs_target)
        .collect();
        assert_eq!(needs, [true, true, true, true, false, false, false]);
        assert!(SurfaceAction::Browser(BrowserAction::Click).needs_target());
        assert!(!SurfaceAction::Screenshot.needs_target());
    }
}
