//! Recovery: the state graph, the walk, retry rules, and that a provider failure never calls
//! another provider.

use std::collections::BTreeMap;

use cua_route::{
    AttemptOutcome, DispatchPhase, DispatchReceipt, EffectStatus, LogicalAction,
    ObservedPostcondition, Platform, Position, ProviderFailure, ProviderKind, ProviderRegistry,
    RecoveryEdge, RecoveryResult, RecoveryState, RecoveryWalk, RouteName, RoutePlan, RouteRequest,
    TargetEvidence, plan, recovery_graph,
};

use crate::support::wide_registry;

/// A scripted provider set: each call pops the provider's next outcome, and every call is
/// counted, so a test can see exactly which providers were invoked.
#[derive(Default)]
struct Providers {
    scripts: BTreeMap<ProviderKind, Vec<Scripted>>,
    calls: BTreeMap<ProviderKind, u32>,
}

#[derive(Clone, Copy, Debug)]
enum Scripted {
    /// Returns a receipt only.
    Receipt,
    /// Fails; `retryable` as the provider claims, `phase` as observed.
    Fail {
        retryable: bool,
        after_dispatch: bool,
    },
}

impl Providers {
    fn script(mut self, provider: ProviderKind, outcomes: &[Scripted]) -> Self {
        let mut outcomes = outcomes.to_vec();
        outcomes.reverse();
        self.scripts.insert(provider, outcomes);
        self
    }

    fn dispatch(&mut self, walk: &RecoveryWalk) -> AttemptOutcome {
        let selection = walk.selection();
        *self.calls.entry(selection.provider()).or_default() += 1;
        let next = self
            .scripts
            .get_mut(&selection.provider())
            .and_then(Vec::pop)
            .unwrap_or(Scripted::Receipt);
        match next {
            Scripted::Receipt => AttemptOutcome::Receipt(DispatchReceipt {
                provider: selection.provider(),
                physical_action: selection.physical_action().clone(),
            }),
            Scripted::Fail {
                retryable,
                after_dispatch,
            } => AttemptOutcome::Failed(ProviderFailure {
                phase: if after_dispatch {
                    DispatchPhase::Dispatched
                } else {
                    DispatchPhase::PreDispatch
                },
                retryable,
                reason: format!("{} timed out", selection.provider()),
            }),
        }
    }
}

/// The executor the replay engine will be: open, dispatch, settle, retry when offered, and
/// otherwise stop. It can only move along edges the walk offers.
fn drive(plan: &RoutePlan, providers: &mut Providers) -> RecoveryResult {
    let mut walk = RecoveryWalk::start(plan);
    for _ in 0..MAX_MOVES {
        let position = match walk.state() {
            RecoveryState::Planned => walk.advance(|offer| offer.take(RecoveryEdge::Open)),
            RecoveryState::Dispatched => {
                let outcome = providers.dispatch(&walk);
                walk.advance(|offer| offer.settle(outcome))
            }
            RecoveryState::Failed => walk.advance(|offer| offer.take(RecoveryEdge::Retry)),
            _ => return walk.stop(),
        };
        walk = match position {
            Position::Moved(walk) => walk,
            Position::Stayed(walk) => return walk.stop(),
            Position::Finished(result) => return result,
        };
    }
    panic!("the walk did not finish in {MAX_MOVES} moves")
}

/// More moves than any walk here takes: a walk that goes round in circles fails the test.
const MAX_MOVES: usize = 64;

fn summarize(result: &RecoveryResult, providers: &Providers) -> String {
    let trace = result.recovery_trace();
    let verdict = result
        .effect_verdict()
        .map(|verdict| format!("{}/{}", verdict.status(), verdict.evidence()))
        .unwrap_or_else(|| "none".to_owned());
    let calls: Vec<String> = providers
        .calls
        .iter()
        .map(|(provider, count)| format!("{provider}×{count}"))
        .collect();
    let failures: Vec<String> = trace
        .failures()
        .iter()
        .map(|failure| format!("{}@{}", failure.kind, failure.attempt))
        .collect();
    let path: Vec<&str> = trace.path().iter().map(|state| state.as_str()).collect();
    format!(
        "{} {} attempts={} recovered={} calls=[{}] failures=[{}] path={}",
        result.state(),
        verdict,
        trace.attempts(),
        trace.recovered(),
        calls.join(" "),
        failures.join(" "),
        path.join(">"),
    )
}

fn planned(request: RouteRequest) -> RoutePlan {
    plan(&request, &wide_registry()).expect("test request plans")
}

fn renderer() -> TargetEvidence {
    TargetEvidence::default().renderer("page:7f3a")
}

#[test]
fn reads_retry_once_on_the_same_provider_and_mutations_never_retry() {
    fn check(request: RouteRequest, script: &[Scripted], expect: &str) {
        let plan = planned(request);
        let mut providers = Providers::default().script(plan.selection().provider(), script);
        let result = drive(&plan, &mut providers);
        assert_eq!(summarize(&result, &providers), expect);
        assert_eq!(
            result.recovery_trace().physical_action(),
            plan.selection().physical_action(),
            "a retry keeps the physical action"
        );
    }
    use Scripted::{Fail, Receipt};
    let transient = Fail {
        retryable: true,
        after_dispatch: true,
    };
    let snapshot = RouteRequest::new(LogicalAction::Snapshot, Platform::Linux).evidence(renderer());
    let click = RouteRequest::new(LogicalAction::Click, Platform::Linux).evidence(renderer());
    check(
        snapshot.clone(),
        &[Receipt],
        "confirmed not_applicable/declared_read attempts=1 recovered=false calls=[cdp-browser×1] \
         failures=[] path=planned>dispatched>confirmed",
    );
    check(
        snapshot.clone(),
        &[transient, Receipt],
        "confirmed not_applicable/declared_read attempts=2 recovered=true calls=[cdp-browser×2] \
         failures=[retryable-read-failure@1] path=planned>dispatched>failed>dispatched>confirmed",
    );
    check(
        snapshot.clone(),
        &[transient, transient, Receipt],
        "failed not_applicable/declared_read attempts=2 recovered=false calls=[cdp-browser×2] \
         failures=[retryable-read-failure@1 retryable-read-failure@2] \
         path=planned>dispatched>failed>dispatched>failed",
    );
    check(
        snapshot,
        &[Fail {
            retryable: false,
            after_dispatch: true,
        }],
        "failed not_applicable/declared_read attempts=1 recovered=false calls=[cdp-browser×1] \
         failures=[read-failure@1] path=planned>dispatched>failed",
    );
    // A provider that says "retryable" cannot make a mutation retry.
    check(
        click.clone(),
        &[transient, Receipt],
        "ambiguous unverifiable/dispatch_receipt attempts=1 recovered=false \
         calls=[cdp-browser×1] failures=[outcome-ambiguous@1] path=planned>dispatched>ambiguous",
    );
    check(
        click.clone(),
        &[Fail {
            retryable: true,
            after_dispatch: false,
        }],
        "failed suspected_noop/pre_dispatch_rejection attempts=1 recovered=false \
         calls=[cdp-browser×1] failures=[pre-dispatch-rejection@1] path=planned>dispatched>failed",
    );
    // A receipt alone leaves a mutation ambiguous, never confirmed.
    check(
        click.clone(),
        &[Receipt],
        "ambiguous unverifiable/dispatch_receipt attempts=1 recovered=false \
         calls=[cdp-browser×1] failures=[] path=planned>dispatched>ambiguous",
    );
    // A read whose declared effect is a write is a mutation for recovery.
    check(
        RouteRequest::new(LogicalAction::HttpRead, Platform::Linux)
            .effect(cua_route::Effect::RemoteResource),
        &[transient],
        "ambiguous unverifiable/dispatch_receipt attempts=1 recovered=false calls=[http×1] \
         failures=[outcome-ambiguous@1] path=planned>dispatched>ambiguous",
    );
}

#[test]
fn every_builtin_binding_follows_its_recovery_rule() {
    let registry = ProviderRegistry::builtin();
    let mut checked = 0;
    for profile in registry.profiles() {
        for action in profile.actions() {
            let request = RouteRequest::new(action, Platform::Linux).via(profile.route());
            let Ok(plan) = plan(&request, &registry) else {
                // Coordinate actions need an observation to plan; they are mutations either way.
                continue;
            };
            let selected = plan.selection().provider();
            let mut providers = Providers::default().script(
                selected,
                &[Scripted::Fail {
                    retryable: true,
                    after_dispatch: true,
                }; 3],
            );
            let result = drive(&plan, &mut providers);
            let expected_attempts = if plan.selection().mutates() {
                1
            } else {
                plan.selection().recovery().max_attempts()
            };
            assert_eq!(
                result.recovery_trace().attempts(),
                expected_attempts,
                "{selected} {action}"
            );
            assert_eq!(
                providers.calls.keys().copied().collect::<Vec<_>>(),
                [selected],
                "only the selected provider is called for {action}"
            );
            assert!(result.recovery_trace().attempts() <= 2);
            checked += 1;
        }
    }
    assert!(checked >= 15, "checked {checked} bindings");
}

#[test]
fn a_provider_failure_does_not_call_another_provider() {
    // Every implementer of screenshot is scripted to fail; only the selected one may be called,
    // whatever the failure.
    let scripts = [
        Scripted::Fail {
            retryable: true,
            after_dispatch: true,
        },
        Scripted::Fail {
            retryable: false,
            after_dispatch: false,
        },
    ];
    let requests = [
        RouteRequest::new(LogicalAction::Screenshot, Platform::Linux).evidence(renderer()),
        RouteRequest::new(LogicalAction::Screenshot, Platform::Linux),
        RouteRequest::new(LogicalAction::Screenshot, Platform::Linux)
            .via(RouteName::Visual)
            .evidence(renderer()),
        RouteRequest::new(LogicalAction::Click, Platform::Linux).evidence(renderer()),
    ];
    for request in requests {
        let plan = planned(request.clone());
        for script in scripts {
            let mut providers = Providers::default();
            for provider in ProviderKind::ALL {
                providers = providers.script(*provider, &[script; 3]);
            }
            let result = drive(&plan, &mut providers);
            assert_eq!(
                providers.calls.keys().copied().collect::<Vec<_>>(),
                [plan.selection().provider()],
                "{request:?} {script:?}"
            );
            assert_eq!(
                result.recovery_trace().provider(),
                plan.selection().provider()
            );
            assert!(result.recovery_trace().replans().is_empty());
        }
    }
}

#[test]
fn the_graph_is_the_seeds_state_diagram() {
    let graph = recovery_graph();
    let rendered: Vec<String> = graph
        .transitions()
        .into_iter()
        .map(|(from, edge, to)| format!("{from} --{edge}--> {to}"))
        .collect();
    insta::assert_snapshot!("recovery_graph", rendered.join("\n"));
    for &state in RecoveryState::ALL {
        assert_eq!(
            graph.outgoing(state).is_empty(),
            state.is_terminal(),
            "{state}: only terminal states have no way out"
        );
        assert!(graph.reachable(RecoveryState::Planned, state), "{state}");
        for &other in RecoveryState::ALL {
            if other != state && state.is_terminal() {
                assert!(
                    !graph.reachable(state, other),
                    "{state} leads to {other}: a walk never leaves a terminal state"
                );
            }
        }
    }
    // Ambiguity is contained: from ambiguous, the only way is to inspect first.
    assert_eq!(
        graph.outgoing(RecoveryState::Ambiguous),
        [(RecoveryEdge::Inspect, RecoveryState::Inspect)]
    );
}

#[test]
fn offers_hold_only_the_current_nodes_edges() {
    fn labels(walk: RecoveryWalk) -> (String, RecoveryWalk) {
        let mut seen = String::new();
        let position = walk.advance(|offer| {
            let available: Vec<String> = offer
                .available()
                .iter()
                .map(|edge| format!("{}→{}", edge.label(), edge.target()))
                .collect();
            seen = format!("{}: {}", offer.state(), available.join(" "));
            None
        });
        match position {
            Position::Stayed(walk) => (seen, walk),
            other => panic!("declining moves nothing, got {other:?}"),
        }
    }
    let plan =
        planned(RouteRequest::new(LogicalAction::Snapshot, Platform::Linux).evidence(renderer()));
    let walk = RecoveryWalk::start(&plan);
    let (seen, walk) = labels(walk);
    assert_eq!(seen, "planned: open→dispatched escalate→escalated");
    // Gated edges are not on offer, and settlement is refused off `dispatched`.
    let Position::Stayed(walk) = walk.advance(|offer| {
        offer
            .settle(AttemptOutcome::Receipt(DispatchReceipt {
                provider: ProviderKind::CdpBrowser,
                physical_action: cua_route::PhysicalAction::new("ax_full_tree"),
            }))
            .or_else(|| offer.effect_found(ObservedPostcondition::new("x", "y").into()))
            .or_else(|| offer.take(RecoveryEdge::Retry))
    }) else {
        panic!("nothing to take on planned");
    };
    let Position::Moved(walk) = walk.advance(|offer| offer.take(RecoveryEdge::Open)) else {
        panic!("open is offered on planned");
    };
    let (seen, walk) = labels(walk);
    assert_eq!(seen, "dispatched: ", "leaving dispatched needs an outcome");
    let Position::Moved(walk) = walk.advance(|offer| {
        offer.settle(AttemptOutcome::Failed(ProviderFailure {
            phase: DispatchPhase::Dispatched,
            retryable: true,
            reason: "socket closed".to_owned(),
        }))
    }) else {
        panic!("settles to failed");
    };
    let (seen, walk) = labels(walk);
    assert_eq!(
        seen,
        "failed: retry→dispatched repair→repair escalate→escalated"
    );
    let Position::Moved(walk) = walk.advance(|offer| offer.take(RecoveryEdge::Retry)) else {
        panic!("retry is offered once");
    };
    let Position::Moved(walk) = walk.advance(|offer| {
        offer.settle(AttemptOutcome::Failed(ProviderFailure {
            phase: DispatchPhase::Dispatched,
            retryable: true,
            reason: "socket closed".to_owned(),
        }))
    }) else {
        panic!("settles to failed");
    };
    let (seen, _walk) = labels(walk);
    assert_eq!(
        seen, "failed: repair→repair escalate→escalated",
        "the retry budget is spent"
    );
}

#[test]
fn an_ambiguous_mutation_is_inspected_before_it_is_confirmed() {
    let plan =
        planned(RouteRequest::new(LogicalAction::Click, Platform::Linux).evidence(renderer()));
    let mut providers = Providers::default();
    let walk = RecoveryWalk::start(&plan);
    let Position::Moved(walk) = walk.advance(|offer| offer.take(RecoveryEdge::Open)) else {
        panic!("opens");
    };
    let outcome = providers.dispatch(&walk);
    let Position::Moved(walk) = walk.advance(|offer| offer.settle(outcome)) else {
        panic!("settles");
    };
    assert_eq!(walk.state(), RecoveryState::Ambiguous);
    assert_eq!(
        walk.verdict().map(|verdict| verdict.status()),
        Some(EffectStatus::Unverifiable)
    );
    let Position::Moved(walk) = walk.advance(|offer| offer.take(RecoveryEdge::Inspect)) else {
        panic!("inspects");
    };
    let Position::Finished(result) = walk.advance(|offer| {
        offer.effect_found(ObservedPostcondition::new("status says \"Saved\"", "snapshot 3").into())
    }) else {
        panic!("an observed postcondition confirms");
    };
    insta::assert_json_snapshot!("inspected_confirmation.json", result);
}

#[test]
fn a_replan_is_explicit_and_recorded() {
    let registry = wide_registry();
    let first = plan(
        &RouteRequest::new(LogicalAction::Screenshot, Platform::Linux).evidence(renderer()),
        &registry,
    )
    .expect("plans");
    let second = plan(
        &RouteRequest::new(LogicalAction::Screenshot, Platform::Linux)
            .via(RouteName::Visual)
            .evidence(renderer()),
        &registry,
    )
    .expect("plans");
    let unrelated = plan(
        &RouteRequest::new(LogicalAction::Snapshot, Platform::Linux).evidence(renderer()),
        &registry,
    )
    .expect("plans");
    let mut providers = Providers::default().script(
        ProviderKind::CdpBrowser,
        &[Scripted::Fail {
            retryable: false,
            after_dispatch: true,
        }],
    );
    // The executor repairs, then replans explicitly; a plan for another action is refused.
    let mut walk = RecoveryWalk::start(&first);
    for step in 0..MAX_MOVES {
        let position = match walk.state() {
            RecoveryState::Planned => walk.advance(|offer| offer.take(RecoveryEdge::Open)),
            RecoveryState::Dispatched => {
                let outcome = providers.dispatch(&walk);
                walk.advance(|offer| offer.settle(outcome))
            }
            RecoveryState::Failed => walk.advance(|offer| offer.take(RecoveryEdge::Repair)),
            RecoveryState::Repair => {
                let unrelated = unrelated.clone();
                let second = second.clone();
                walk.advance(|offer| offer.replan(unrelated).or_else(|| offer.replan(second)))
            }
            state => panic!("unexpected {state} at step {step}"),
        };
        walk = match position {
            Position::Moved(walk) => walk,
            Position::Stayed(walk) => panic!("stuck at {}", walk.state()),
            Position::Finished(result) => {
                insta::assert_json_snapshot!("replanned.json", result);
                assert_eq!(
                    result.recovery_trace().replans().len(),
                    1,
                    "the one replan taken"
                );
                return;
            }
        };
    }
    panic!("the walk did not finish in {MAX_MOVES} moves");
}
