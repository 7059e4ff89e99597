//! Test profiles beyond the built-ins: platform-native accessibility providers (the platform
//! default case), a desktop visual provider that also binds `click` (as the reference's does),
//! and a second renderer provider (the tie case).

use cua_route::{
    ActionBinding, Actuation, InteractionImpact, LogicalAction, Operator, Perception, Platform,
    ProviderKind, ProviderProfile, ProviderRegistry, RouteAxes, RouteName, TargetScope,
    Verification, builtin_profiles,
};

pub(crate) fn native_axes() -> RouteAxes {
    RouteAxes {
        operator: Operator::DesktopAccessibility,
        perception: Perception::OsAccessibility,
        actuation: Actuation::AccessibilityAction,
        target_scope: TargetScope::NativeWindow,
        verification: Verification::AccessibilityState,
        interaction_impact: InteractionImpact::TargetScoped,
    }
}

/// A platform-native accessibility provider: implicit and the platform default.
pub(crate) fn native(provider: ProviderKind, platform: Platform, prefix: &str) -> ProviderProfile {
    let name = |suffix: &str| format!("{prefix}_{suffix}");
    ProviderProfile::builder(provider, RouteName::Native, native_axes())
        .platforms([platform])
        .platform_default()
        .action(
            LogicalAction::Snapshot,
            ActionBinding::observe(name("snapshot")),
        )
        .action(LogicalAction::Click, ActionBinding::perform(name("press")))
        .action(
            LogicalAction::Type,
            ActionBinding::perform(name("set_value")),
        )
        .action(
            LogicalAction::PressKey,
            ActionBinding::perform(name("key")).actuation(Actuation::DesktopInput),
        )
        .action(
            LogicalAction::Screenshot,
            ActionBinding::capture(name("screenshot")),
        )
        .build()
        .expect("test native profile is valid")
}

/// A desktop-scoped coordinate driver that binds `click` and `screenshot`, like the reference's
/// visual provider. Explicit only.
pub(crate) fn desktop_driver() -> ProviderProfile {
    ProviderProfile::builder(
        ProviderKind::CuaDriver,
        RouteName::Driver,
        RouteAxes {
            operator: Operator::VisualCoordinate,
            perception: Perception::Pixels,
            actuation: Actuation::CoordinateAction,
            target_scope: TargetScope::Desktop,
            verification: Verification::ProviderEffect,
            interaction_impact: InteractionImpact::Foreground,
        },
    )
    .action(LogicalAction::Click, ActionBinding::perform("driver_click"))
    .action(
        LogicalAction::PointClick,
        ActionBinding::perform("driver_point_click"),
    )
    .action(
        LogicalAction::Screenshot,
        ActionBinding::capture("driver_get_desktop_state"),
    )
    .build()
    .expect("test driver profile is valid")
}

/// A second implicit renderer provider: with renderer evidence it ties with cdp-browser.
pub(crate) fn second_renderer() -> ProviderProfile {
    ProviderProfile::builder(
        ProviderKind::CuaDriver,
        RouteName::Driver,
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
    .action(
        LogicalAction::Snapshot,
        ActionBinding::observe("remote_snapshot"),
    )
    .build()
    .expect("test renderer profile is valid")
}

/// Every test profile plus the built-ins, except the tie-maker.
pub(crate) fn wide_profiles() -> Vec<ProviderProfile> {
    let mut profiles = builtin_profiles();
    profiles.push(native(ProviderKind::DesktopAtspi, Platform::Linux, "atspi"));
    profiles.push(native(ProviderKind::DesktopAx, Platform::Macos, "ax"));
    profiles.push(native(ProviderKind::DesktopUia, Platform::Windows, "uia"));
    profiles.push(desktop_driver());
    profiles
}

pub(crate) fn wide_registry() -> ProviderRegistry {
    ProviderRegistry::new(wide_profiles()).expect("the wide test registry is valid")
}
