//! Routing inside the executor. Every step of an execution is planned by `cua-route` before the
//! execution's first action, so which operator and provider performs each step is fixed before any
//! of them is asked to do anything; a step no provider may perform stops the run
//! (`route_unavailable`) with nothing dispatched. Each step's dispatch then walks the recovery
//! state graph of its route, and the walk's trace goes into the step's record.

use std::sync::LazyLock;

use cua_artifact::{
    Action, Capability, EffectVerdict, FailureCode, Identifier, RiskTier, RouteFailure, RouteTrace,
    Step, WaitPolicy,
};
use cua_route::{
    AttemptOutcome, DispatchReceipt, NoopEvidence, ObservedPostcondition, Platform,
    ProviderRegistry, RecoveryEdge, RecoveryResult, RecoveryWalk, RoutePlan, Selection,
};

use crate::stop::Stop;

static REGISTRY: LazyLock<ProviderRegistry> = LazyLock::new(ProviderRegistry::builtin);

/// The built-in providers the executor plans against.
pub(crate) fn registry() -> &'static ProviderRegistry {
    &REGISTRY
}

/// The platform this process runs on.
pub(crate) fn host_platform() -> Platform {
    if cfg!(target_os = "macos") {
        Platform::Macos
    } else if cfg!(target_os = "windows") {
        Platform::Windows
    } else {
        Platform::Linux
    }
}

/// Plans every step of `capability`, in order. The first step without a route stops the run
/// with the planner's reason.
pub(crate) fn plan_steps(capability: &Capability) -> Result<Vec<RoutePlan>, Stop> {
    capability
        .steps
        .iter()
        .map(|step| plan_step(capability, step, &format!("step `{}`", step.id)))
        .collect()
}

/// Plans an action that is not one of the capability's steps (the entrypoint's navigation, a
/// recovery rule's remedy) as a step with that action, no explicit route and no declared risk.
pub(crate) fn plan_action(
    capability: &Capability,
    action: &Action,
    what: &str,
) -> Result<RoutePlan, Stop> {
    let step = Step {
        id: Identifier::parse("unlisted").expect("`unlisted` is an identifier"),
        description: String::new(),
        action: action.clone(),
        precondition: None,
        wait: WaitPolicy::default(),
        postcondition: None,
        risk: RiskTier::Safe,
        via: None,
        reconcile: None,
    };
    plan_step(capability, &step, what)
}

fn plan_step(capability: &Capability, step: &Step, what: &str) -> Result<RoutePlan, Stop> {
    let unavailable = |reason: String| {
        Stop::new(
            FailureCode::RouteUnavailable,
            format!("{what} has no route: {reason}"),
        )
        .expected(format!(
            "a provider that may perform `{}` (see `cua route explain`)",
            step.action.kind().as_str()
        ))
    };
    let request =
        cua_route::step_request(capability, step, host_platform()).map_err(&unavailable)?;
    cua_route::plan(&request, registry())
        .map_err(|refusal| unavailable(refusal.reason().to_string()))
}

/// One dispatch's walk through its route's recovery graph.
pub(crate) struct RouteWalk {
    selection: Selection,
    /// Always `Some` between calls; `None` only while an edge is being followed.
    state: Option<Walk>,
}

enum Walk {
    On(RecoveryWalk),
    Done(RecoveryResult),
}

impl RouteWalk {
    /// A walk at `planned`.
    pub(crate) fn start(plan: &RoutePlan) -> Self {
        RouteWalk {
            selection: plan.selection().clone(),
            state: Some(Walk::On(RecoveryWalk::start(plan))),
        }
    }

    /// Follows `label` when the current node offers it without evidence (`open`, `retry` when
    /// the route's policy permits it). Whether it did.
    pub(crate) fn take(&mut self, label: RecoveryEdge) -> bool {
        self.advance(|walk| walk.advance(|offer| offer.take(label)))
    }

    /// Leaves `dispatched` by the edge `outcome` dictates.
    pub(crate) fn settle(&mut self, outcome: AttemptOutcome) -> bool {
        self.advance(|walk| walk.advance(|offer| offer.settle(outcome)))
    }

    fn advance(&mut self, follow: impl FnOnce(RecoveryWalk) -> cua_route::Position) -> bool {
        let (state, moved) = match self.state.take() {
            Some(Walk::On(walk)) => match follow(walk) {
                cua_route::Position::Moved(walk) => (Walk::On(walk), true),
                cua_route::Position::Stayed(walk) => (Walk::On(walk), false),
                cua_route::Position::Finished(result) => (Walk::Done(result), true),
            },
            Some(done @ Walk::Done(_)) => (done, false),
            None => unreachable!("a walk's state is restored before every return"),
        };
        self.state = Some(state);
        moved
    }

    /// The walk's trace for the run record, ending the walk where it stands.
    pub(crate) fn finish(self) -> RouteTrace {
        let result = match self.state {
            Some(Walk::On(walk)) => walk.stop(),
            Some(Walk::Done(result)) => result,
            None => unreachable!("a walk's state is restored before every return"),
        };
        trace(&self.selection, &result)
    }
}

/// The route record of a finished walk.
pub(crate) fn trace(selection: &Selection, result: &RecoveryResult) -> RouteTrace {
    let recovery = result.recovery_trace();
    RouteTrace {
        operator: selection.axes().operator.to_string(),
        provider: recovery.provider().to_string(),
        physical_action: recovery.physical_action().to_string(),
        selected_by: selection.reason().to_string(),
        strategy: recovery.strategy().to_string(),
        max_attempts: selection.recovery().max_attempts(),
        attempts: recovery.attempts(),
        path: recovery
            .path()
            .iter()
            .map(|state| state.to_string())
            .collect(),
        failures: recovery
            .failures()
            .iter()
            .map(|failure| RouteFailure {
                attempt: failure.attempt,
                kind: failure.kind.to_string(),
                reason: failure.reason.clone(),
            })
            .collect(),
    }
}

/// The walk of a step whose dispatch the executor settled itself (a browser action, a read):
/// `planned`, then, when it was dispatched, `open` and the settlement its verdict stands for.
/// The walk classifies conservatively on its own: a receipt never confirms a mutation.
pub(crate) fn settled_walk(
    plan: &RoutePlan,
    dispatched: bool,
    verdict: EffectVerdict,
    reason: &str,
) -> RouteTrace {
    let mut walk = RouteWalk::start(plan);
    if dispatched && walk.take(RecoveryEdge::Open) {
        walk.settle(outcome_of(plan.selection(), verdict, reason));
    }
    walk.finish()
}

/// The attempt outcome a settled verdict stands for. Only `confirmed` carries confirming
/// evidence, and the executor gives it only when a postcondition held on a fresh observation.
fn outcome_of(selection: &Selection, verdict: EffectVerdict, reason: &str) -> AttemptOutcome {
    let receipt = || {
        AttemptOutcome::Receipt(DispatchReceipt {
            provider: selection.provider(),
            physical_action: selection.physical_action().clone(),
        })
    };
    match verdict {
        EffectVerdict::Confirmed => AttemptOutcome::Settled(cua_route::EffectVerdict::confirmed(
            ObservedPostcondition::new(reason, "the observation after the action"),
        )),
        EffectVerdict::SuspectedNoop => AttemptOutcome::Settled(
            cua_route::EffectVerdict::suspected_noop(NoopEvidence::StateUnchanged, reason),
        ),
        EffectVerdict::Pending => {
            AttemptOutcome::Settled(cua_route::EffectVerdict::pending(reason))
        }
        EffectVerdict::Unverifiable | EffectVerdict::NotApplicable => receipt(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn browser(action: cua_route::LogicalAction) -> RoutePlan {
        let request = cua_route::RouteRequest::new(action, Platform::Linux)
            .evidence(cua_route::TargetEvidence::default().renderer("page"));
        cua_route::plan(&request, registry()).expect("the browser performs it")
    }

    fn browser_click() -> RoutePlan {
        browser(cua_route::LogicalAction::Click)
    }

    #[test]
    fn a_confirmed_mutation_walks_planned_dispatched_confirmed() {
        let trace = settled_walk(&browser_click(), true, EffectVerdict::Confirmed, "held");
        assert_eq!(trace.provider, "cdp-browser");
        assert_eq!(trace.path, ["planned", "dispatched", "confirmed"]);
        assert_eq!(trace.attempts, 1);
    }

    #[test]
    fn a_receipt_leaves_a_mutation_ambiguous() {
        let trace = settled_walk(&browser_click(), true, EffectVerdict::Unverifiable, "x");
        assert_eq!(trace.path, ["planned", "dispatched", "ambiguous"]);
    }

    #[test]
    fn a_noop_is_a_failure_and_an_undispatched_step_stays_planned() {
        let trace = settled_walk(&browser_click(), true, EffectVerdict::SuspectedNoop, "x");
        assert_eq!(trace.path, ["planned", "dispatched", "failed"]);
        assert_eq!(trace.failures.len(), 1);
        assert_eq!(trace.failures[0].kind, "suspected-noop");
        let refused = settled_walk(&browser_click(), false, EffectVerdict::SuspectedNoop, "x");
        assert_eq!(refused.path, ["planned"]);
        assert_eq!(refused.attempts, 0);
    }

    #[test]
    fn a_walk_that_finished_takes_no_more_edges() {
        // A read completes on its receipt; a click, even one declared safe, is a mutation.
        let read = browser(cua_route::LogicalAction::Extract);
        let mut walk = RouteWalk::start(&read);
        assert!(walk.take(RecoveryEdge::Open));
        assert!(walk.settle(AttemptOutcome::Receipt(DispatchReceipt {
            provider: cua_route::ProviderKind::CdpBrowser,
            physical_action: read.selection().physical_action().clone(),
        })));
        assert!(!walk.take(RecoveryEdge::Retry));
        assert_eq!(walk.finish().path, ["planned", "dispatched", "confirmed"]);
    }
}
