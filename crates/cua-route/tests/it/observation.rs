//! Observation refs: single use, and bound to provider, scope, session, time and bounds.

use cua_route::{
    CoordinateClaim, MAX_LIVE_OBSERVATIONS, Millis, OBSERVATION_TTL_MILLIS, ObservationBinding,
    ObservationLedger, ObservationRef, ObservationScope, PixelPoint, ProviderKind, RouteError,
    TargetScope,
};

const ISSUED_AT: Millis = Millis(1_000_000);

fn scope(target: &str) -> ObservationScope {
    ObservationScope {
        target_scope: TargetScope::BrowserRenderer,
        target: target.to_owned(),
    }
}

/// A 1280×800 screenshot of a viewport whose action space is 640×400 (device scale 2).
fn binding() -> ObservationBinding {
    ObservationBinding::new(
        ProviderKind::Visual,
        scope("page:7f3a"),
        "run-1",
        (1280, 800),
        (640, 400),
    )
    .expect("non-empty")
}

fn matching_claim() -> CoordinateClaim {
    CoordinateClaim {
        provider: ProviderKind::Visual,
        scope: scope("page:7f3a"),
        session: "run-1".to_owned(),
        point: PixelPoint { x: 640, y: 480 },
    }
}

fn outcome(result: Result<cua_route::ClaimedObservation, RouteError>) -> String {
    match result {
        Ok(claimed) => format!(
            "ok ({}, {}) -> ({}, {})",
            claimed.point.x, claimed.point.y, claimed.action_point.x, claimed.action_point.y
        ),
        Err(RouteError::ObservationRejected(rejection)) => rejection.to_string(),
        Err(other) => format!("error: {other}"),
    }
}

#[test]
fn claims_are_checked_against_every_binding() {
    /// Issues one ref at `ISSUED_AT`, then claims it `after` milliseconds later with `claim`.
    fn check(after: i64, claim: CoordinateClaim, expect: &str) {
        let mut ledger = ObservationLedger::new();
        let reference = ledger.issue([7; 32], ISSUED_AT, binding()).expect("issues");
        let now = Millis(ISSUED_AT.0.checked_add_signed(after).expect("in range"));
        assert_eq!(outcome(ledger.claim(&reference, &claim, now)), expect);
        // Whatever happened, the ref is gone: a claim attempt consumes it.
        assert_eq!(
            outcome(ledger.claim(&reference, &matching_claim(), ISSUED_AT)),
            "not_found"
        );
    }
    let ttl = i64::try_from(OBSERVATION_TTL_MILLIS).expect("fits");
    check(0, matching_claim(), "ok (640, 480) -> (320, 240)");
    check(ttl - 1, matching_claim(), "ok (640, 480) -> (320, 240)");
    check(ttl, matching_claim(), "expired");
    check(-1, matching_claim(), "expired");
    check(
        0,
        CoordinateClaim {
            provider: ProviderKind::CuaDriver,
            ..matching_claim()
        },
        "provider_mismatch",
    );
    check(
        0,
        CoordinateClaim {
            scope: scope("page:other"),
            ..matching_claim()
        },
        "scope_mismatch",
    );
    check(
        0,
        CoordinateClaim {
            scope: ObservationScope {
                target_scope: TargetScope::Desktop,
                target: "page:7f3a".to_owned(),
            },
            ..matching_claim()
        },
        "scope_mismatch",
    );
    check(
        0,
        CoordinateClaim {
            session: "run-2".to_owned(),
            ..matching_claim()
        },
        "session_mismatch",
    );
    check(
        0,
        CoordinateClaim {
            point: PixelPoint { x: 1279, y: 799 },
            ..matching_claim()
        },
        "ok (1279, 799) -> (639.5, 399.5)",
    );
    check(
        0,
        CoordinateClaim {
            point: PixelPoint { x: 1280, y: 10 },
            ..matching_claim()
        },
        "out_of_bounds",
    );
    check(
        0,
        CoordinateClaim {
            point: PixelPoint { x: 10, y: 800 },
            ..matching_claim()
        },
        "out_of_bounds",
    );
}

#[test]
fn a_live_observation_plans_its_coordinate_action() {
    use cua_route::{
        LogicalAction, ObservationEvidence, Platform, ProviderRegistry, RouteName, RouteRequest,
        TargetEvidence, plan,
    };
    let mut ledger = ObservationLedger::new();
    let reference = ledger.issue([9; 32], ISSUED_AT, binding()).expect("issues");
    let live = ledger.peek(&reference, ISSUED_AT).expect("live");
    let request = RouteRequest::new(LogicalAction::PointClick, Platform::Linux)
        .via(RouteName::Visual)
        .evidence(
            TargetEvidence::default()
                .observation(ObservationEvidence::from(live))
                .session("run-1")
                .coordinates(640, 480),
        );
    let planned = plan(&request, &ProviderRegistry::builtin()).expect("plans");
    assert_eq!(planned.selection().provider(), ProviderKind::Visual);
    // The claim happens at dispatch, against the provider the plan selected.
    let claim = CoordinateClaim {
        provider: planned.selection().provider(),
        ..matching_claim()
    };
    assert_eq!(
        outcome(ledger.claim(&reference, &claim, Millis(ISSUED_AT.0 + 500))),
        "ok (640, 480) -> (320, 240)"
    );
}

#[test]
fn refs_are_single_use() {
    let mut ledger = ObservationLedger::new();
    let reference = ledger.issue([1; 32], ISSUED_AT, binding()).expect("issues");
    assert!(
        ledger.peek(&reference, ISSUED_AT).is_some(),
        "peeking does not consume"
    );
    assert_eq!(
        outcome(ledger.claim(&reference, &matching_claim(), ISSUED_AT)),
        "ok (640, 480) -> (320, 240)"
    );
    assert_eq!(
        outcome(ledger.claim(&reference, &matching_claim(), ISSUED_AT)),
        "not_found",
        "a replayed ref is refused"
    );
    let unknown =
        ObservationRef::parse(&format!("visual-observation:{}", "ab".repeat(32))).expect("parses");
    assert_eq!(
        outcome(ledger.claim(&unknown, &matching_claim(), ISSUED_AT)),
        "not_found"
    );
    assert!(ledger.is_empty());
}

#[test]
fn refs_are_opaque_256_bit_strings() {
    let mut ledger = ObservationLedger::new();
    let mut bytes = [0u8; 32];
    for (index, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::try_from(index * 7).expect("small");
    }
    let reference = ledger.issue(bytes, ISSUED_AT, binding()).expect("issues");
    let text = reference.to_string();
    assert_eq!(
        text,
        "visual-observation:00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9"
    );
    assert_eq!(
        ObservationRef::parse(&text).expect("round trips"),
        reference
    );
    assert_eq!(format!("{reference:?}"), "visual-observation:00070e15…");
    for bad in [
        "visual-observation:00",
        "observation:00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9",
        "visual-observation:00070E151C232A31383F464D545B626970777E858C939AA1A8AFB6BDC4CBD2D9",
        "visual-observation:zz070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9",
    ] {
        assert!(
            matches!(
                ObservationRef::parse(bad),
                Err(RouteError::InvalidObservationRef { .. })
            ),
            "{bad}"
        );
    }
    assert_eq!(
        ledger.issue(bytes, ISSUED_AT, binding()),
        Err(RouteError::DuplicateObservationRef)
    );
}

#[test]
fn the_ledger_is_bounded_and_prunes_expired_refs() {
    let mut ledger = ObservationLedger::new();
    let mut refs = Vec::new();
    for index in 0..=MAX_LIVE_OBSERVATIONS {
        let byte = u8::try_from(index).expect("small");
        let now = Millis(ISSUED_AT.0 + u64::from(byte));
        refs.push(ledger.issue([byte; 32], now, binding()).expect("issues"));
    }
    assert_eq!(ledger.len(), MAX_LIVE_OBSERVATIONS);
    let now = Millis(ISSUED_AT.0 + 100);
    assert_eq!(
        outcome(ledger.claim(&refs[0], &matching_claim(), now)),
        "not_found",
        "the oldest ref was evicted"
    );
    assert!(ledger.peek(&refs[1], now).is_some());
    ledger.prune(Millis(ISSUED_AT.0 + OBSERVATION_TTL_MILLIS + 1_000));
    assert!(ledger.is_empty());
    assert_eq!(
        ObservationBinding::new(ProviderKind::Visual, scope("p"), "s", (0, 10), (10, 10)),
        Err(RouteError::EmptyObservation)
    );
}
