//! The independent axes of a route: each is its own closed enum, and a route is their product
//! ([`RouteAxes`]), never a branch of one inheritance tree.

use serde::Serialize;

use crate::wire::wire_enum;

wire_enum! {
    /// How an operation is perceived and actuated: the operator class.
    pub enum Operator: "operator" {
        /// A declared HTTP or service contract.
        StructuredApi => "structured-api",
        /// Structured data that exists only inside an authenticated browser context.
        BrowserProtocol => "browser-protocol",
        /// An installed executable with a typed command contract.
        NativeCli => "native-cli",
        /// DOM and accessibility structure of a browser renderer.
        BrowserSemantic => "browser-semantic",
        /// An operating system accessibility tree and native controls.
        DesktopAccessibility => "desktop-accessibility",
        /// Pixels read as observation evidence, with no coordinate actuation.
        VisualObservation => "visual-observation",
        /// Pixels plus explicit coordinates: the control has no usable semantic handle.
        VisualCoordinate => "visual-coordinate",
        /// Local selection, indexing, validation or transformation.
        LocalRuntime => "local-runtime",
    }
}

wire_enum! {
    /// What the provider reads to perceive the target.
    pub enum Perception: "perception" {
        StructuredData => "structured-data",
        ProcessOutput => "process-output",
        DomAccessibility => "dom-accessibility",
        OsAccessibility => "os-accessibility",
        Pixels => "pixels",
        LocalState => "local-state",
    }
}

wire_enum! {
    /// How the provider acts on the target.
    pub enum Actuation: "actuation" {
        None => "none",
        ProtocolCall => "protocol-call",
        ProcessCall => "process-call",
        DomAction => "dom-action",
        AccessibilityAction => "accessibility-action",
        DesktopInput => "desktop-input",
        CoordinateAction => "coordinate-action",
        ScreenCapture => "screen-capture",
        LocalFunction => "local-function",
    }
}

wire_enum! {
    /// Where the exact target lives, as far as the provider can address it.
    pub enum TargetScope: "target scope" {
        Service => "service",
        HostProcess => "host-process",
        BrowserRenderer => "browser-renderer",
        NativeWindow => "native-window",
        Desktop => "desktop",
        LocalRuntime => "local-runtime",
    }
}

wire_enum! {
    /// Which observation channel can confirm the result.
    pub enum Verification: "verification" {
        ProcessResult => "process-result",
        DomState => "dom-state",
        AccessibilityState => "accessibility-state",
        PixelObservation => "pixel-observation",
        ProviderEffect => "provider-effect",
        /// An authoritative protocol response (cua's addition for structured APIs: a `201
        /// Created` is the service itself reporting the new state).
        ProtocolResponse => "protocol-response",
        LocalResult => "local-result",
    }
}

wire_enum! {
    /// How much of the user's environment an action disturbs. Ordered from least to most.
    pub enum InteractionImpact: "interaction impact" {
        Background => "background",
        TargetScoped => "target-scoped",
        Foreground => "foreground",
    }
}

wire_enum! {
    /// The external state transition an operation causes.
    pub enum Effect: "effect" {
        Read => "read",
        DownloadFile => "download_file",
        SendMessage => "send_message",
        PublishContent => "publish_content",
        AccountState => "account_state",
        RemoteTransform => "remote_transform",
        RemoteResource => "remote_resource",
        ServiceState => "service_state",
        LocalApp => "local_app",
        LocalFile => "local_file",
        Destructive => "destructive",
        UnknownWrite => "unknown_write",
    }
}

impl Effect {
    /// Whether the operation may change external state. Everything but `read` may.
    pub fn mutates(self) -> bool {
        self != Effect::Read
    }
}

wire_enum! {
    /// The host platform the route runs on. The caller supplies it; the crate never asks.
    pub enum Platform: "platform" {
        Linux => "linux",
        Macos => "macos",
        Windows => "windows",
    }
}

wire_enum! {
    /// The concrete provider implementations cua knows about.
    pub enum ProviderKind: "provider" {
        /// HTTP requests to a declared service.
        Http => "http",
        /// Chromium over the DevTools protocol.
        CdpBrowser => "cdp-browser",
        /// A child process started from an argv, never a shell.
        Subprocess => "subprocess",
        /// macOS accessibility.
        DesktopAx => "desktop-ax",
        /// Windows UI Automation.
        DesktopUia => "desktop-uia",
        /// Linux AT-SPI.
        DesktopAtspi => "desktop-atspi",
        /// An external coordinate driver.
        CuaDriver => "cua-driver",
        /// Screenshots and pixel-coordinate input.
        Visual => "visual",
    }
}

wire_enum! {
    /// A provider family that a caller may request explicitly (`--via`).
    pub enum RouteName: "route" {
        Api => "api",
        Browser => "browser",
        Process => "process",
        Native => "native",
        Driver => "driver",
        Visual => "visual",
    }
}

impl RouteName {
    /// Parses a route the way a user types it: the wire name or one of its aliases
    /// (`cdp` → browser, `cli` → process, `pixel` → visual, …).
    pub fn parse_alias(input: &str) -> Result<RouteName, crate::RouteError> {
        let route = match input.trim().to_ascii_lowercase().as_str() {
            "api" | "http" | "structured" | "structured-api" => RouteName::Api,
            "browser" | "cdp" | "cdp-browser" => RouteName::Browser,
            "process" | "subprocess" | "cli" | "command" => RouteName::Process,
            "native" | "desktop" | "accessibility" | "desktop-ax" | "desktop-uia"
            | "desktop-atspi" => RouteName::Native,
            "driver" | "cua" | "cua-driver" | "os-driver" => RouteName::Driver,
            "visual" | "pixel" | "pixels" | "coordinates" => RouteName::Visual,
            _ => {
                return Err(crate::RouteError::UnknownRoute {
                    input: input.to_owned(),
                });
            }
        };
        Ok(route)
    }
}

wire_enum! {
    /// A logical action: what a step asks for, independent of any provider. Each provider binds
    /// the logical actions it implements to its own physical actions.
    pub enum LogicalAction: "logical action" {
        Snapshot => "snapshot",
        Click => "click",
        Type => "type",
        Select => "select",
        PressKey => "press_key",
        Navigate => "navigate",
        Reload => "reload",
        Scroll => "scroll",
        WaitFor => "wait_for",
        Extract => "extract",
        Assert => "assert",
        Screenshot => "screenshot",
        Evaluate => "evaluate",
        /// A request with a safe method (GET, HEAD, OPTIONS).
        HttpRead => "http_read",
        /// A request with any other method.
        HttpWrite => "http_write",
        RunCommand => "run_command",
        PointClick => "point_click",
        Drag => "drag",
        PointScroll => "point_scroll",
    }
}

impl LogicalAction {
    /// The provider an operation is intrinsic to, whatever the target evidence says: JavaScript
    /// evaluation needs a renderer, a request needs an HTTP client, a command needs a process.
    pub fn intrinsic_provider(self) -> Option<ProviderKind> {
        match self {
            LogicalAction::Evaluate => Some(ProviderKind::CdpBrowser),
            LogicalAction::HttpRead | LogicalAction::HttpWrite => Some(ProviderKind::Http),
            LogicalAction::RunCommand => Some(ProviderKind::Subprocess),
            _ => None,
        }
    }

    /// Whether the action places input at pixel coordinates.
    pub fn is_coordinate_action(self) -> bool {
        matches!(
            self,
            LogicalAction::PointClick | LogicalAction::Drag | LogicalAction::PointScroll
        )
    }
}

/// The product of the independent axes that one provider applies to one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct RouteAxes {
    pub operator: Operator,
    pub perception: Perception,
    pub actuation: Actuation,
    pub target_scope: TargetScope,
    pub verification: Verification,
    pub interaction_impact: InteractionImpact,
}

impl RouteAxes {
    /// Whether these axes describe coordinate authority: visual-coordinate operation or
    /// coordinate actuation. Such a route is never selected implicitly.
    pub fn is_coordinate(&self) -> bool {
        self.operator == Operator::VisualCoordinate || self.actuation == Actuation::CoordinateAction
    }
}

/// Per-action overrides of a provider's default axes; `None` keeps the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AxisOverrides {
    pub operator: Option<Operator>,
    pub perception: Option<Perception>,
    pub actuation: Option<Actuation>,
    pub target_scope: Option<TargetScope>,
    pub verification: Option<Verification>,
    pub interaction_impact: Option<InteractionImpact>,
}

impl AxisOverrides {
    /// The defaults with every present override applied.
    pub fn apply(&self, defaults: RouteAxes) -> RouteAxes {
        RouteAxes {
            operator: self.operator.unwrap_or(defaults.operator),
            perception: self.perception.unwrap_or(defaults.perception),
            actuation: self.actuation.unwrap_or(defaults.actuation),
            target_scope: self.target_scope.unwrap_or(defaults.target_scope),
            verification: self.verification.unwrap_or(defaults.verification),
            interaction_impact: self
                .interaction_impact
                .unwrap_or(defaults.interaction_impact),
        }
    }
}
