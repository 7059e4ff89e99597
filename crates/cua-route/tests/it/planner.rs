//! The planner: route explanations for the intrinsic, exact-target, ref-owned, explicit,
//! platform-default and unavailable cases; visual is never selected implicitly; registry
//! validation.

use cua_route::{
    ActionBinding, DurableRef, LogicalAction, ObservationEvidence, Platform, ProviderKind,
    ProviderProfile, ProviderRegistry, RouteError, RouteExplanation, RouteName, RouteRequest,
    TargetEvidence, TargetScope, builtin_profiles, explain, plan,
};

use crate::support::{desktop_driver, native, native_axes, second_renderer, wide_registry};

/// Snapshots the text rendering of an explanation, and its JSON when `json` is set.
fn check(name: &str, request: RouteRequest, registry: &ProviderRegistry, json: bool) {
    let explanation = explain(&request, registry);
    insta::assert_snapshot!(name, explanation.to_string());
    if json {
        insta::assert_json_snapshot!(format!("{name}.json"), explanation);
    }
}

fn linux(action: LogicalAction) -> RouteRequest {
    RouteRequest::new(action, Platform::Linux)
}

fn renderer() -> TargetEvidence {
    TargetEvidence::default()
        .renderer("page:7f3a")
        .element("button \"Save member\"")
}

fn visual_observation() -> TargetEvidence {
    TargetEvidence::default()
        .renderer("page:7f3a")
        .observation(ObservationEvidence {
            issuer: ProviderKind::Visual,
            target_scope: TargetScope::BrowserRenderer,
            session: "run-1".to_owned(),
        })
        .session("run-1")
        .coordinates(640, 480)
}

fn durable(input: &str) -> DurableRef {
    DurableRef::parse(input).expect("test ref parses")
}

#[test]
fn explains_intrinsic_operations() {
    let builtin = ProviderRegistry::builtin();
    check(
        "intrinsic_http_read",
        linux(LogicalAction::HttpRead)
            .evidence(TargetEvidence::default().service("http://127.0.0.1:8080/api")),
        &builtin,
        true,
    );
    check(
        "intrinsic_run_command",
        linux(LogicalAction::RunCommand)
            .effect(cua_route::Effect::LocalFile)
            .evidence(TargetEvidence::default().executable("memberdesk-export")),
        &builtin,
        false,
    );
    check(
        "intrinsic_evaluate",
        linux(LogicalAction::Evaluate).evidence(TargetEvidence::default().renderer("page:7f3a")),
        &builtin,
        false,
    );
}

#[test]
fn explains_exact_target_evidence() {
    check(
        "exact_target_click",
        linux(LogicalAction::Click).evidence(renderer()),
        &ProviderRegistry::builtin(),
        true,
    );
    // A renderer beats the platform-native default, and the native provider says why.
    check(
        "exact_target_over_platform_default",
        linux(LogicalAction::Screenshot).evidence(TargetEvidence::default().renderer("page:7f3a")),
        &wide_registry(),
        false,
    );
    check(
        "exact_target_native_window",
        linux(LogicalAction::Click).evidence(TargetEvidence::default().native_window("window-7")),
        &wide_registry(),
        false,
    );
}

#[test]
fn explains_ref_owned_routes() {
    check(
        "ref_owned_click",
        linux(LogicalAction::Click)
            .evidence(TargetEvidence::default().durable_ref(durable("cdp:node-42"))),
        &ProviderRegistry::builtin(),
        true,
    );
    check(
        "ref_owned_native_beats_default",
        linux(LogicalAction::Click).evidence(
            TargetEvidence::default().durable_ref(durable("desktop-atspi:window-7:button-0")),
        ),
        &wide_registry(),
        false,
    );
}

#[test]
fn explains_explicit_routes() {
    check(
        "explicit_visual_point_click",
        linux(LogicalAction::PointClick)
            .via(RouteName::Visual)
            .evidence(visual_observation()),
        &ProviderRegistry::builtin(),
        true,
    );
    check(
        "explicit_visual_screenshot",
        linux(LogicalAction::Screenshot)
            .via(RouteName::Visual)
            .evidence(TargetEvidence::default().renderer("page:7f3a")),
        &ProviderRegistry::builtin(),
        false,
    );
}

#[test]
fn explains_platform_defaults() {
    check(
        "platform_default_click",
        linux(LogicalAction::Click),
        &wide_registry(),
        false,
    );
}

#[test]
fn explains_unavailable_routes() {
    let builtin = ProviderRegistry::builtin();
    check(
        "unavailable_no_implicit_provider",
        linux(LogicalAction::Click),
        &builtin,
        true,
    );
    check(
        "unavailable_coordinates_need_explicit_route",
        linux(LogicalAction::PointClick).evidence(visual_observation()),
        &builtin,
        false,
    );
    check(
        "unavailable_route_lacks_action",
        linux(LogicalAction::Click)
            .via(RouteName::Visual)
            .evidence(renderer()),
        &builtin,
        false,
    );
    check(
        "unavailable_ref_owner_conflicts_with_route",
        linux(LogicalAction::Screenshot)
            .via(RouteName::Visual)
            .evidence(TargetEvidence::default().durable_ref(durable("cdp-browser:node-42"))),
        &builtin,
        false,
    );
    check(
        "unavailable_evidence_conflict",
        linux(LogicalAction::Click).evidence(
            TargetEvidence::default()
                .renderer("page:7f3a")
                .native_window("window-7"),
        ),
        &wide_registry(),
        false,
    );
    check(
        "unavailable_observation_from_other_provider",
        linux(LogicalAction::PointClick)
            .via(RouteName::Visual)
            .evidence(TargetEvidence {
                observation: Some(ObservationEvidence {
                    issuer: ProviderKind::CdpBrowser,
                    target_scope: TargetScope::BrowserRenderer,
                    session: "run-1".to_owned(),
                }),
                ..visual_observation()
            }),
        &builtin,
        false,
    );
    check(
        "unavailable_not_on_platform",
        RouteRequest::new(LogicalAction::Click, Platform::Macos)
            .evidence(TargetEvidence::default().native_window("window-7"))
            .via(RouteName::Native),
        &ProviderRegistry::new([native(ProviderKind::DesktopAtspi, Platform::Linux, "atspi")])
            .expect("valid"),
        false,
    );
    check(
        "unavailable_not_implemented",
        linux(LogicalAction::Drag),
        &ProviderRegistry::new([cua_route::http(), cua_route::cdp_browser()]).expect("valid"),
        false,
    );
    let tied = ProviderRegistry::new(builtin_profiles().into_iter().chain([second_renderer()]))
        .expect("valid");
    check(
        "unavailable_tie_is_refused",
        linux(LogicalAction::Snapshot).evidence(TargetEvidence::default().renderer("page:7f3a")),
        &tied,
        true,
    );
}

#[test]
fn a_refusal_names_the_action_the_platform_and_the_reason() {
    let refusal = plan(&linux(LogicalAction::Click), &ProviderRegistry::builtin())
        .expect_err("no provider clicks implicitly without target evidence");
    assert_eq!(
        refusal.to_string(),
        "route unavailable for click on linux: no implicit provider is defined for click on linux"
    );
}

/// Every subset of these evidence values, for exhaustive sweeps.
fn evidence_pieces() -> Vec<fn(TargetEvidence) -> TargetEvidence> {
    vec![
        |evidence| evidence.renderer("page:7f3a"),
        |evidence| evidence.element("button \"Save\""),
        |evidence| evidence.native_window("window-7"),
        |evidence| evidence.service("http://127.0.0.1:8080"),
        |evidence| evidence.executable("memberdesk-export"),
        |evidence| evidence.coordinates(10, 10).session("run-1"),
        |evidence| {
            evidence.observation(ObservationEvidence {
                issuer: ProviderKind::Visual,
                target_scope: TargetScope::BrowserRenderer,
                session: "run-1".to_owned(),
            })
        },
        |evidence| {
            evidence.observation(ObservationEvidence {
                issuer: ProviderKind::CuaDriver,
                target_scope: TargetScope::Desktop,
                session: "run-1".to_owned(),
            })
        },
        |evidence| evidence.durable_ref(DurableRef::parse("visual:region-1").expect("parses")),
        |evidence| evidence.durable_ref(DurableRef::parse("cua-driver:region-1").expect("parses")),
    ]
}

fn every_evidence() -> Vec<TargetEvidence> {
    let pieces = evidence_pieces();
    (0u32..1 << pieces.len())
        .map(|mask| {
            pieces
                .iter()
                .enumerate()
                .filter(|(index, _)| mask & (1 << index) != 0)
                .fold(TargetEvidence::default(), |evidence, (_, add)| {
                    add(evidence)
                })
        })
        .collect()
}

#[test]
fn visual_is_never_selected_implicitly() {
    let registries = [ProviderRegistry::builtin(), wide_registry()];
    let evidence = every_evidence();
    let mut plans = 0;
    let mut coordinate_selections = 0;
    for registry in &registries {
        for &action in LogicalAction::ALL {
            for &platform in Platform::ALL {
                for evidence in &evidence {
                    let implicit = RouteRequest::new(action, platform).evidence(evidence.clone());
                    if let Ok(plan) = plan(&implicit, registry) {
                        plans += 1;
                        let selection = plan.selection();
                        assert!(!selection.explicit(), "{implicit:?} named no route");
                        assert!(
                            !selection.axes().is_coordinate()
                                && !matches!(
                                    selection.provider(),
                                    ProviderKind::Visual | ProviderKind::CuaDriver
                                ),
                            "implicitly selected {} for {implicit:?}",
                            selection.provider()
                        );
                    }
                    for route in [RouteName::Visual, RouteName::Driver] {
                        let explicit = implicit.clone().via(route);
                        if let Ok(plan) = plan(&explicit, registry)
                            && plan.selection().axes().is_coordinate()
                        {
                            coordinate_selections += 1;
                            assert!(plan.selection().explicit());
                        }
                    }
                }
            }
        }
    }
    // The sweep is not vacuous: it planned routes, and explicit coordinate routes do exist.
    assert!(plans > 250, "only {plans} implicit plans");
    assert!(coordinate_selections > 0);
}

#[test]
fn an_implicit_coordinate_provider_does_not_build() {
    let error = ProviderProfile::builder(
        ProviderKind::Visual,
        RouteName::Visual,
        cua_route::visual().defaults(),
    )
    .implicit()
    .action(
        LogicalAction::PointClick,
        ActionBinding::perform("pointer_click"),
    )
    .build()
    .expect_err("implicit coordinate providers are refused");
    assert_eq!(
        error,
        RouteError::ImplicitCoordinateBinding {
            provider: ProviderKind::Visual,
            action: LogicalAction::PointClick,
        }
    );
    // A coordinate override on an otherwise semantic provider is refused the same way.
    let error =
        ProviderProfile::builder(ProviderKind::CdpBrowser, RouteName::Browser, native_axes())
            .implicit()
            .action(
                LogicalAction::Click,
                ActionBinding::perform("click_at")
                    .actuation(cua_route::Actuation::CoordinateAction),
            )
            .build()
            .expect_err("refused");
    assert_eq!(
        error.to_string(),
        "provider profile cdp-browser is implicit but click places input at coordinates; \
         coordinate routes are only ever selected explicitly"
    );
}

#[test]
fn registries_refuse_conflicting_profiles() {
    fn check(profiles: Vec<ProviderProfile>, expect: &str) {
        let error = ProviderRegistry::new(profiles).expect_err("conflicting profiles are refused");
        assert_eq!(error.to_string(), expect);
    }
    check(
        vec![cua_route::http(), cua_route::http()],
        "provider http is registered twice",
    );
    check(
        vec![desktop_driver(), second_renderer()],
        "provider cua-driver is registered twice",
    );
    check(
        vec![
            native(ProviderKind::DesktopAtspi, Platform::Linux, "atspi"),
            native(ProviderKind::DesktopAx, Platform::Linux, "ax"),
        ],
        "route native on linux is claimed by both desktop-ax and desktop-atspi",
    );
    let default_on_two =
        ProviderProfile::builder(ProviderKind::DesktopUia, RouteName::Api, native_axes())
            .platforms([Platform::Linux])
            .platform_default()
            .action(
                LogicalAction::Snapshot,
                ActionBinding::observe("uia_snapshot"),
            )
            .build()
            .expect("valid alone");
    check(
        vec![
            default_on_two,
            native(ProviderKind::DesktopAtspi, Platform::Linux, "atspi"),
        ],
        "desktop-uia and desktop-atspi both claim to be the linux default for snapshot",
    );
    let error = ProviderProfile::builder(ProviderKind::Http, RouteName::Api, native_axes())
        .action(LogicalAction::HttpRead, ActionBinding::observe("a"))
        .action(LogicalAction::HttpRead, ActionBinding::observe("b"))
        .build()
        .expect_err("refused");
    assert_eq!(
        error.to_string(),
        "provider profile http binds http_read twice"
    );
}

#[test]
fn builtin_profiles_are_indexed() {
    let registry = ProviderRegistry::builtin();
    insta::assert_json_snapshot!(
        "builtin_profiles.json",
        registry.profiles().collect::<Vec<_>>()
    );
    assert_eq!(
        registry.implementers(LogicalAction::Screenshot),
        [ProviderKind::CdpBrowser, ProviderKind::Visual]
    );
    assert_eq!(
        registry.route_provider(RouteName::Browser, Platform::Macos),
        Some(ProviderKind::CdpBrowser)
    );
    assert_eq!(
        registry.platform_default(Platform::Linux, LogicalAction::Click),
        None
    );
    let physical = registry
        .profile(ProviderKind::Http)
        .and_then(|profile| profile.binding(LogicalAction::HttpWrite))
        .map(|binding| binding.physical_action().as_str().to_owned());
    assert_eq!(physical.as_deref(), Some("http_unsafe_request"));
}

#[test]
fn route_names_parse_with_aliases() {
    fn check(input: &str, expect: &str) {
        let actual = match RouteName::parse_alias(input) {
            Ok(route) => route.to_string(),
            Err(error) => error.to_string(),
        };
        assert_eq!(actual, expect, "{input}");
    }
    check("cdp", "browser");
    check("CLI", "process");
    check("pixel", "visual");
    check("desktop-atspi", "native");
    check("http", "api");
    check(
        "robot",
        "unknown route `robot`: use api, browser, process, native, driver or visual",
    );
}

#[test]
fn durable_refs_name_their_owner() {
    fn check(input: &str, expect: &str) {
        let actual = match DurableRef::parse(input) {
            Ok(durable_ref) => format!("{} owns {}", durable_ref.owner(), durable_ref.id()),
            Err(error) => error.to_string(),
        };
        assert_eq!(actual, expect, "{input}");
    }
    check("cdp:node-42", "cdp-browser owns node-42");
    check(
        "desktop-atspi:window-7:a/b",
        "desktop-atspi owns window-7:a/b",
    );
    check(
        "node-42",
        "`node-42` is not a durable ref: it has no provider namespace",
    );
    check("cdp:", "`cdp:` is not a durable ref: its id is empty");
    check(
        "olo:accessibility:1",
        "`olo:accessibility:1` is not a durable ref: its namespace names no known provider",
    );
    check(
        "visual-observation:00",
        "`visual-observation:00` is not a durable ref: a visual observation confers coordinate \
         authority, not a durable target",
    );
}

#[test]
fn requests_round_trip_through_json() {
    let request = linux(LogicalAction::PointClick)
        .via(RouteName::Visual)
        .evidence(visual_observation().durable_ref(durable("visual:region-1")));
    let json = serde_json::to_string(&request).expect("serializes");
    let back: RouteRequest = serde_json::from_str(&json).expect("deserializes");
    assert_eq!(back, request);
    let unknown = serde_json::from_str::<RouteRequest>(
        r#"{"action":"click","platform":"linux","via":"robot"}"#,
    )
    .expect_err("unknown route refused");
    assert!(
        unknown.to_string().contains("unknown variant `robot`"),
        "{unknown}"
    );
    let explanation = explain(&request, &ProviderRegistry::builtin());
    assert!(matches!(explanation, RouteExplanation::Selected(_)));
}

#[test]
fn step_action_names_parse_as_logical_actions() {
    // The replay engine maps a capability step's action by name; every action a capability may
    // contain (cua-artifact's `ActionKind`, less the console-only `raw_input`) must parse.
    for name in [
        "click",
        "type",
        "select",
        "press_key",
        "navigate",
        "reload",
        "scroll",
        "wait_for",
        "extract",
        "assert",
    ] {
        let action: LogicalAction = name.parse().expect("step actions are logical actions");
        assert_eq!(action.as_str(), name);
    }
    assert_eq!(
        "raw_input".parse::<LogicalAction>(),
        Err(RouteError::UnknownName {
            kind: "logical action",
            name: "raw_input".to_owned(),
        })
    );
}

#[test]
fn every_route_name_a_step_may_give_parses() {
    // `cua validate` accepts a step's `via` from cua-artifact's list; each must name a route.
    for name in cua_artifact::ROUTE_NAMES {
        assert!(
            RouteName::parse_alias(name).is_ok(),
            "`via: {name}` validates but names no route"
        );
    }
    assert_eq!(
        RouteName::parse_alias("visual"),
        Ok(RouteName::Visual),
        "the visual route is named `visual`"
    );
}
