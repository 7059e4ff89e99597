//! Determinism: the same request and the same set of profiles give the same plan, whatever
//! order the profiles were registered in.

use cua_route::{
    ActionBinding, Actuation, InteractionImpact, LogicalAction, Operator, Perception, Platform,
    ProviderKind, ProviderProfile, ProviderRegistry, RouteAxes, RouteError, RouteExplanation,
    RouteName, RouteRequest, TargetEvidence, TargetScope, Verification, explain,
};
use proptest::prelude::*;

use crate::support::wide_profiles;

/// Every order of the wide profile set that rotations and reversal produce.
fn orders(profiles: &[ProviderProfile]) -> Vec<Vec<ProviderProfile>> {
    let mut orders = Vec::new();
    for rotation in 0..profiles.len() {
        let mut order = profiles.to_vec();
        order.rotate_left(rotation);
        orders.push(order.clone());
        order.reverse();
        orders.push(order);
    }
    orders
}

fn outcome(
    profiles: Vec<ProviderProfile>,
    request: &RouteRequest,
) -> Result<(RouteExplanation, String), RouteError> {
    let registry = ProviderRegistry::new(profiles)?;
    let explanation = explain(request, &registry);
    let json = serde_json::to_string(&explanation).expect("explanations serialize");
    Ok((explanation, json))
}

#[test]
fn plans_do_not_depend_on_registration_order() {
    let requests = [
        RouteRequest::new(LogicalAction::Click, Platform::Linux),
        RouteRequest::new(LogicalAction::Screenshot, Platform::Macos)
            .evidence(TargetEvidence::default().renderer("page:1")),
        RouteRequest::new(LogicalAction::Click, Platform::Windows).via(RouteName::Driver),
        RouteRequest::new(LogicalAction::HttpWrite, Platform::Linux),
    ];
    for request in &requests {
        let outcomes: Vec<_> = orders(&wide_profiles())
            .into_iter()
            .map(|order| outcome(order, request).expect("the wide set is valid"))
            .collect();
        assert!(
            outcomes.windows(2).all(|pair| pair[0] == pair[1]),
            "{request:?}"
        );
    }
}

const PROVIDERS: [ProviderKind; 8] = [
    ProviderKind::Http,
    ProviderKind::CdpBrowser,
    ProviderKind::Subprocess,
    ProviderKind::DesktopAx,
    ProviderKind::DesktopUia,
    ProviderKind::DesktopAtspi,
    ProviderKind::CuaDriver,
    ProviderKind::Visual,
];

const SCOPES: [TargetScope; 4] = [
    TargetScope::Service,
    TargetScope::HostProcess,
    TargetScope::BrowserRenderer,
    TargetScope::NativeWindow,
];

/// A random valid-or-invalid profile for `provider`: random route, scope, platforms, flags and
/// bindings. Invalid sets must fail the same way in every order.
fn profile_strategy(provider: ProviderKind) -> impl Strategy<Value = Option<ProviderProfile>> {
    (
        0..RouteName::ALL.len(),
        0..SCOPES.len(),
        proptest::collection::btree_set(0..Platform::ALL.len(), 0..=3),
        0..3u8,
        proptest::collection::btree_map(0..LogicalAction::ALL.len(), 0..3u8, 1..6),
    )
        .prop_map(move |(route, scope, platforms, selection, actions)| {
            let mut builder = ProviderProfile::builder(
                provider,
                RouteName::ALL[route],
                RouteAxes {
                    operator: Operator::BrowserSemantic,
                    perception: Perception::DomAccessibility,
                    actuation: Actuation::DomAction,
                    target_scope: SCOPES[scope],
                    verification: Verification::DomState,
                    interaction_impact: InteractionImpact::Background,
                },
            )
            .platforms(platforms.into_iter().map(|index| Platform::ALL[index]));
            builder = match selection {
                0 => builder,
                1 => builder.implicit(),
                _ => builder.platform_default(),
            };
            for (action, kind) in actions {
                let action = LogicalAction::ALL[action];
                let name = format!("{provider}_{action}");
                let binding = match kind {
                    0 => ActionBinding::observe(name),
                    1 => ActionBinding::perform(name),
                    _ => ActionBinding::capture(name),
                };
                builder = builder.action(action, binding);
            }
            // Profiles that do not build (an implicit coordinate action) are left out.
            builder.build().ok()
        })
}

fn registry_strategy() -> impl Strategy<Value = Vec<ProviderProfile>> {
    let per_provider: Vec<_> = PROVIDERS
        .iter()
        .map(|provider| proptest::option::of(profile_strategy(*provider)))
        .collect();
    per_provider.prop_map(|profiles| profiles.into_iter().flatten().flatten().collect())
}

fn request_strategy() -> impl Strategy<Value = RouteRequest> {
    (
        0..LogicalAction::ALL.len(),
        0..Platform::ALL.len(),
        proptest::option::of(0..RouteName::ALL.len()),
        any::<[bool; 5]>(),
    )
        .prop_map(|(action, platform, via, evidence)| {
            let mut request =
                RouteRequest::new(LogicalAction::ALL[action], Platform::ALL[platform]);
            request.via = via.map(|index| RouteName::ALL[index]);
            let mut target = TargetEvidence::default();
            if evidence[0] {
                target = target.renderer("page:1");
            }
            if evidence[1] {
                target = target.native_window("window-1");
            }
            if evidence[2] {
                target = target.service("http://127.0.0.1:1");
            }
            if evidence[3] {
                target = target.executable("tool");
            }
            if evidence[4] {
                target = target.element("button \"Go\"");
            }
            request.evidence = target;
            request
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_registries_plan_independently_of_insertion_order(
        (profiles, shuffled) in registry_strategy()
            .prop_flat_map(|profiles| (Just(profiles.clone()), Just(profiles).prop_shuffle())),
        requests in proptest::collection::vec(request_strategy(), 1..8),
    ) {
        for request in &requests {
            let forward = outcome(profiles.clone(), request);
            let shuffled_outcome = outcome(shuffled.clone(), request);
            let mut reversed = profiles.clone();
            reversed.reverse();
            prop_assert_eq!(&forward, &shuffled_outcome);
            prop_assert_eq!(&forward, &outcome(reversed, request));
            // Planning twice from one registry is the same too.
            if let Ok(registry) = ProviderRegistry::new(profiles.clone()) {
                prop_assert_eq!(explain(request, &registry), explain(request, &registry));
            }
        }
    }
}
