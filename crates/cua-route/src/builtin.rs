//! The provider profiles cua ships: Chromium over CDP, HTTP, argv subprocesses and the explicit
//! visual provider.

use crate::axes::{
    Actuation, InteractionImpact, LogicalAction, Operator, Perception, ProviderKind, RouteAxes,
    RouteName, TargetScope, Verification,
};
use crate::profile::{ActionBinding, ProviderProfile};
use crate::registry::ProviderRegistry;

impl ProviderRegistry {
    /// The registry of cua's built-in providers.
    pub fn builtin() -> ProviderRegistry {
        ProviderRegistry::new(builtin_profiles())
            .expect("the built-in profiles are valid and pairwise compatible (tested)")
    }
}

/// Every built-in profile, in no particular order: the registry's indexes impose the order.
pub fn builtin_profiles() -> Vec<ProviderProfile> {
    vec![cdp_browser(), http(), subprocess(), visual()]
}

/// Chromium over the DevTools protocol: semantic DOM and accessibility actions on one renderer.
/// It is implicit but not a platform default, so it is chosen only when the target evidence
/// names a renderer, an element or a ref it owns; a task is not a browser task merely because a
/// browser could perform it.
pub fn cdp_browser() -> ProviderProfile {
    use LogicalAction::*;
    ProviderProfile::builder(
        ProviderKind::CdpBrowser,
        RouteName::Browser,
        RouteAxes {
            operator: Operator::BrowserSemantic,
            perception: Perception::DomAccessibility,
            actuation: Actuation::DomAction,
            target_scope: TargetScope::BrowserRenderer,
            verification: Verification::DomState,
            interaction_impact: InteractionImpact::Background,
        },
    )
    .implicit()
    .action(Snapshot, ActionBinding::observe("ax_full_tree"))
    .action(Click, ActionBinding::perform("dom_click"))
    .action(Type, ActionBinding::perform("dom_insert_text"))
    .action(Select, ActionBinding::perform("dom_select_option"))
    .action(PressKey, ActionBinding::perform("dom_key_press"))
    .action(Navigate, ActionBinding::perform("page_navigate"))
    .action(Reload, ActionBinding::perform("page_reload"))
    .action(Scroll, ActionBinding::gesture("dom_scroll_into_view"))
    .action(WaitFor, ActionBinding::observe("ax_wait"))
    .action(Extract, ActionBinding::observe("ax_read_value"))
    .action(Assert, ActionBinding::observe("ax_assert"))
    .action(
        Screenshot,
        ActionBinding::capture("page_capture_screenshot"),
    )
    .action(
        Evaluate,
        ActionBinding::perform("runtime_evaluate")
            .operator(Operator::BrowserProtocol)
            .perception(Perception::StructuredData)
            .actuation(Actuation::ProtocolCall),
    )
    .build()
    .expect("the cdp-browser profile is valid (tested)")
}

/// HTTP requests to a declared service. A safe-method request is a read and may be retried
/// once; any other method is a mutation and is sent at most once.
pub fn http() -> ProviderProfile {
    ProviderProfile::builder(
        ProviderKind::Http,
        RouteName::Api,
        RouteAxes {
            operator: Operator::StructuredApi,
            perception: Perception::StructuredData,
            actuation: Actuation::ProtocolCall,
            target_scope: TargetScope::Service,
            verification: Verification::ProtocolResponse,
            interaction_impact: InteractionImpact::Background,
        },
    )
    .implicit()
    .action(
        LogicalAction::HttpRead,
        ActionBinding::observe("http_safe_request").actuation(Actuation::ProtocolCall),
    )
    .action(
        LogicalAction::HttpWrite,
        ActionBinding::perform("http_unsafe_request"),
    )
    .build()
    .expect("the http profile is valid (tested)")
}

/// A declared executable started from an argv, never through a shell.
pub fn subprocess() -> ProviderProfile {
    ProviderProfile::builder(
        ProviderKind::Subprocess,
        RouteName::Process,
        RouteAxes {
            operator: Operator::NativeCli,
            perception: Perception::ProcessOutput,
            actuation: Actuation::ProcessCall,
            target_scope: TargetScope::HostProcess,
            verification: Verification::ProcessResult,
            interaction_impact: InteractionImpact::Background,
        },
    )
    .implicit()
    .action(
        LogicalAction::RunCommand,
        ActionBinding::perform("spawn_argv"),
    )
    .build()
    .expect("the subprocess profile is valid (tested)")
}

/// Screenshots of a renderer's viewport and input at its pixel coordinates. Never implicit: the
/// screenshot issues a single-use observation ref, and a coordinate action must claim it.
pub fn visual() -> ProviderProfile {
    use LogicalAction::*;
    ProviderProfile::builder(
        ProviderKind::Visual,
        RouteName::Visual,
        RouteAxes {
            operator: Operator::VisualCoordinate,
            perception: Perception::Pixels,
            actuation: Actuation::CoordinateAction,
            target_scope: TargetScope::BrowserRenderer,
            verification: Verification::PixelObservation,
            interaction_impact: InteractionImpact::TargetScoped,
        },
    )
    .action(
        Screenshot,
        ActionBinding::capture("viewport_screenshot")
            .interaction_impact(InteractionImpact::Background),
    )
    .action(PointClick, ActionBinding::perform("pointer_click"))
    .action(Drag, ActionBinding::perform("pointer_drag"))
    .action(PointScroll, ActionBinding::gesture("pointer_wheel"))
    .build()
    .expect("the visual profile is valid (tested)")
}
