//! The recovery state graph and the walk an executor takes through it.
//!
//! The graph is a petgraph `DiGraph` built once. A [`RecoveryWalk`] sits on one of its
//! non-terminal nodes and moves only by [`RecoveryWalk::advance`], which hands the caller an
//! [`Offer`] of the current node's outgoing edges and follows the [`Edge`] the caller picks.
//! Edges have private fields and carry a lifetime brand: `advance` takes a closure that must
//! work for every brand (`for<'offer>`), so the edge it returns can only have come from the
//! offer it was given, for the node the walk is on now. No code can name an edge the graph does
//! not have, reuse an edge from an earlier node, or carry one across walks; such code does not
//! compile.
//!
//! Edges that need evidence are offered only against it: leaving `dispatched` takes the
//! attempt's outcome (the outcome, not the caller, picks the edge); `inspect → confirmed` takes
//! [`ConfirmingEvidence`]; `replan` takes a new [`RoutePlan`]. A retry is offered only when the
//! route's policy permits one, and it repeats the same provider and physical action, because the
//! walk has no way to change them except an explicit replan.

use std::marker::PhantomData;
use std::sync::LazyLock;

use petgraph::Direction;
use petgraph::graph::{DiGraph, EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;
use serde::Serialize;

use crate::axes::{LogicalAction, ProviderKind};
use crate::plan::{RoutePlan, Selection};
use crate::profile::PhysicalAction;
use crate::recovery::{FailureKind, RecoveryTrace};
use crate::verdict::{
    ConfirmingEvidence, DispatchPhase, DispatchReceipt, EffectVerdict, NoopEvidence,
    default_verdict,
};
use crate::wire::wire_enum;

wire_enum! {
    /// A node of the recovery state graph.
    pub enum RecoveryState: "recovery state" {
        Planned => "planned",
        Dispatched => "dispatched",
        Confirmed => "confirmed",
        Failed => "failed",
        Ambiguous => "ambiguous",
        Inspect => "inspect",
        Repair => "repair",
        Escalated => "escalated",
    }
}

impl RecoveryState {
    /// Whether the walk ends here.
    pub fn is_terminal(self) -> bool {
        matches!(self, RecoveryState::Confirmed | RecoveryState::Escalated)
    }
}

wire_enum! {
    /// An edge label of the recovery state graph.
    pub enum RecoveryEdge: "recovery edge" {
        /// Planned → dispatched: open the selected provider and dispatch once.
        Open => "open",
        /// Dispatched → confirmed: the effect is proven, or the read completed.
        SettleConfirmed => "settle_confirmed",
        /// Dispatched → failed: suspected no-op, or a failure that certainly changed nothing.
        SettleFailed => "settle_failed",
        /// Dispatched → ambiguous: dispatched, effect unproven.
        SettleAmbiguous => "settle_ambiguous",
        /// Failed → dispatched: the same primitive through the same provider, when declared safe.
        Retry => "retry",
        /// Failed → repair: restore the selected provider or its declared dependency.
        Repair => "repair",
        /// Repair or inspect → planned: a new route decision from new evidence.
        Replan => "replan",
        /// Ambiguous → inspect: observe the exact target before anything else.
        Inspect => "inspect",
        /// Inspect → confirmed: the effect was found.
        EffectFound => "effect_found",
        /// Hand the step to a human, or to an explicit route with more authority.
        Escalate => "escalate",
    }
}

/// Every edge of the graph: (from, label, to).
const TRANSITIONS: [(RecoveryState, RecoveryEdge, RecoveryState); 14] = {
    use RecoveryEdge as E;
    use RecoveryState as S;
    [
        (S::Planned, E::Open, S::Dispatched),
        (S::Planned, E::Escalate, S::Escalated),
        (S::Dispatched, E::SettleConfirmed, S::Confirmed),
        (S::Dispatched, E::SettleFailed, S::Failed),
        (S::Dispatched, E::SettleAmbiguous, S::Ambiguous),
        (S::Failed, E::Retry, S::Dispatched),
        (S::Failed, E::Repair, S::Repair),
        (S::Failed, E::Escalate, S::Escalated),
        (S::Repair, E::Replan, S::Planned),
        (S::Repair, E::Escalate, S::Escalated),
        (S::Ambiguous, E::Inspect, S::Inspect),
        (S::Inspect, E::EffectFound, S::Confirmed),
        (S::Inspect, E::Replan, S::Planned),
        (S::Inspect, E::Escalate, S::Escalated),
    ]
};

/// The recovery state graph.
#[derive(Debug)]
pub struct RecoveryGraph {
    graph: DiGraph<RecoveryState, RecoveryEdge>,
}

static GRAPH: LazyLock<RecoveryGraph> = LazyLock::new(|| {
    let mut graph = DiGraph::with_capacity(RecoveryState::ALL.len(), TRANSITIONS.len());
    for &state in RecoveryState::ALL {
        // Nodes are added in ordinal order, so a state's node index is its ordinal.
        graph.add_node(state);
    }
    for (from, label, to) in TRANSITIONS {
        graph.add_edge(node(from), node(to), label);
    }
    RecoveryGraph { graph }
});

/// The one recovery state graph.
pub fn recovery_graph() -> &'static RecoveryGraph {
    &GRAPH
}

impl RecoveryGraph {
    /// Every transition, sorted.
    pub fn transitions(&self) -> Vec<(RecoveryState, RecoveryEdge, RecoveryState)> {
        let mut transitions: Vec<_> = self
            .graph
            .edge_references()
            .map(|edge| {
                (
                    self.graph[edge.source()],
                    *edge.weight(),
                    self.graph[edge.target()],
                )
            })
            .collect();
        transitions.sort();
        transitions
    }

    /// The outgoing edges of `state`, sorted by label.
    pub fn outgoing(&self, state: RecoveryState) -> Vec<(RecoveryEdge, RecoveryState)> {
        let mut outgoing: Vec<_> = self
            .outgoing_edges(node(state))
            .into_iter()
            .map(|(_, label, target)| (label, target))
            .collect();
        outgoing.sort();
        outgoing
    }

    /// Whether `to` is reachable from `from`.
    pub fn reachable(&self, from: RecoveryState, to: RecoveryState) -> bool {
        petgraph::algo::has_path_connecting(&self.graph, node(from), node(to), None)
    }

    fn outgoing_edges(&self, from: NodeIndex) -> Vec<(EdgeIndex, RecoveryEdge, RecoveryState)> {
        let mut edges: Vec<_> = self
            .graph
            .edges_directed(from, Direction::Outgoing)
            .map(|edge| (edge.id(), *edge.weight(), self.graph[edge.target()]))
            .collect();
        edges.sort_by_key(|(_, label, _)| *label);
        edges
    }

    fn edge(&self, from: NodeIndex, label: RecoveryEdge) -> Option<(EdgeIndex, RecoveryState)> {
        self.outgoing_edges(from)
            .into_iter()
            .find(|(_, edge_label, _)| *edge_label == label)
            .map(|(index, _, target)| (index, target))
    }
}

fn node(state: RecoveryState) -> NodeIndex {
    NodeIndex::new(state as usize)
}

/// A provider failure, as the executor observed it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ProviderFailure {
    /// Whether anything was sent before it failed.
    pub phase: DispatchPhase,
    /// Whether the provider says repeating the same primitive could succeed. Ignored for
    /// mutations.
    pub retryable: bool,
    pub reason: String,
}

/// What one dispatch produced.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AttemptOutcome {
    /// A verdict settled by [`settle`](crate::settle) or built from evidence.
    Settled(EffectVerdict),
    /// Nothing but a receipt: a completed read, or an unverifiable mutation.
    Receipt(DispatchReceipt),
    /// The provider failed.
    Failed(ProviderFailure),
}

/// An edge the walk may take, branded with the offer it came from.
pub struct Edge<'offer> {
    index: EdgeIndex,
    label: RecoveryEdge,
    target: RecoveryState,
    payload: Payload,
    brand: PhantomData<fn(&'offer ()) -> &'offer ()>,
}

impl Edge<'_> {
    pub fn label(&self) -> RecoveryEdge {
        self.label
    }

    pub fn target(&self) -> RecoveryState {
        self.target
    }
}

impl std::fmt::Debug for Edge<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "Edge({} → {})", self.label, self.target)
    }
}

enum Payload {
    None,
    Settled {
        verdict: EffectVerdict,
        failure: Option<(FailureKind, String)>,
    },
    Found(ConfirmingEvidence),
    Plan(Box<RoutePlan>),
}

/// The outgoing edges of the walk's current node, for one `advance`.
pub struct Offer<'offer> {
    state: RecoveryState,
    action: LogicalAction,
    mutates: bool,
    retry_permitted: bool,
    provider: ProviderKind,
    physical_action: PhysicalAction,
    brand: PhantomData<fn(&'offer ()) -> &'offer ()>,
}

impl<'offer> Offer<'offer> {
    /// The node the walk is on.
    pub fn state(&self) -> RecoveryState {
        self.state
    }

    /// The edges that need no evidence, sorted by label: open, retry (only when the policy
    /// permits it), repair, inspect and escalate, as far as the current node has them.
    pub fn available(&self) -> Vec<Edge<'offer>> {
        recovery_graph()
            .outgoing_edges(node(self.state))
            .into_iter()
            .filter(|(_, label, _)| match label {
                RecoveryEdge::Open
                | RecoveryEdge::Repair
                | RecoveryEdge::Inspect
                | RecoveryEdge::Escalate => true,
                RecoveryEdge::Retry => self.retry_permitted,
                RecoveryEdge::SettleConfirmed
                | RecoveryEdge::SettleFailed
                | RecoveryEdge::SettleAmbiguous
                | RecoveryEdge::EffectFound
                | RecoveryEdge::Replan => false,
            })
            .map(|(index, label, target)| Edge {
                index,
                label,
                target,
                payload: Payload::None,
                brand: PhantomData,
            })
            .collect()
    }

    /// The available edge labelled `label`, if there is one.
    pub fn take(&self, label: RecoveryEdge) -> Option<Edge<'offer>> {
        self.available()
            .into_iter()
            .find(|edge| edge.label == label)
    }

    /// Leaves `dispatched` by the edge the outcome dictates. `None` on any other node.
    pub fn settle(&self, outcome: AttemptOutcome) -> Option<Edge<'offer>> {
        if self.state != RecoveryState::Dispatched {
            return None;
        }
        let (label, verdict, failure) = self.classify(outcome);
        self.gated(label, Payload::Settled { verdict, failure })
    }

    /// Leaves `inspect` for `confirmed` on evidence that the effect happened. `None` on any
    /// other node.
    pub fn effect_found(&self, evidence: ConfirmingEvidence) -> Option<Edge<'offer>> {
        if self.state != RecoveryState::Inspect {
            return None;
        }
        self.gated(RecoveryEdge::EffectFound, Payload::Found(evidence))
    }

    /// Returns to `planned` with a new, explicit route decision for the same logical action.
    /// `None` where the graph has no replan edge or the plan is for another action.
    pub fn replan(&self, plan: RoutePlan) -> Option<Edge<'offer>> {
        if plan.request().action != self.action {
            return None;
        }
        self.gated(RecoveryEdge::Replan, Payload::Plan(Box::new(plan)))
    }

    fn gated(&self, label: RecoveryEdge, payload: Payload) -> Option<Edge<'offer>> {
        recovery_graph()
            .edge(node(self.state), label)
            .map(|(index, target)| Edge {
                index,
                label,
                target,
                payload,
                brand: PhantomData,
            })
    }

    /// Maps an outcome to its settlement edge, verdict and failure, conservatively: a receipt
    /// never confirms a mutation, and a mutation that failed after dispatch is ambiguous.
    fn classify(
        &self,
        outcome: AttemptOutcome,
    ) -> (RecoveryEdge, EffectVerdict, Option<(FailureKind, String)>) {
        use RecoveryEdge::{SettleAmbiguous, SettleConfirmed, SettleFailed};
        if !self.mutates {
            return match outcome {
                AttemptOutcome::Settled(_) | AttemptOutcome::Receipt(_) => {
                    (SettleConfirmed, EffectVerdict::not_applicable(), None)
                }
                AttemptOutcome::Failed(failure) => {
                    let kind = if failure.retryable {
                        FailureKind::RetryableReadFailure
                    } else {
                        FailureKind::ReadFailure
                    };
                    (
                        SettleFailed,
                        EffectVerdict::not_applicable(),
                        Some((kind, failure.reason)),
                    )
                }
            };
        }
        match outcome {
            AttemptOutcome::Settled(verdict) => match verdict {
                EffectVerdict::Confirmed { .. } => (SettleConfirmed, verdict, None),
                EffectVerdict::SuspectedNoop { .. } => {
                    let reason = verdict.reason();
                    (
                        SettleFailed,
                        verdict,
                        Some((FailureKind::SuspectedNoop, reason)),
                    )
                }
                EffectVerdict::Pending { .. } | EffectVerdict::Unverifiable { .. } => {
                    (SettleAmbiguous, verdict, None)
                }
                EffectVerdict::NotApplicable { .. } => (
                    SettleAmbiguous,
                    default_verdict(true, DispatchPhase::Dispatched),
                    None,
                ),
            },
            AttemptOutcome::Receipt(receipt) => {
                (SettleAmbiguous, EffectVerdict::from_receipt(&receipt), None)
            }
            AttemptOutcome::Failed(failure) => match failure.phase {
                DispatchPhase::PreDispatch => (
                    SettleFailed,
                    EffectVerdict::suspected_noop(
                        NoopEvidence::PreDispatchRejection,
                        failure.reason.clone(),
                    ),
                    Some((FailureKind::PreDispatchRejection, failure.reason)),
                ),
                DispatchPhase::Dispatched => (
                    SettleAmbiguous,
                    EffectVerdict::Unverifiable {
                        reason: format!(
                            "{} failed after dispatching {}: the outcome is ambiguous",
                            self.provider, self.physical_action
                        ),
                        verification: None,
                    },
                    Some((FailureKind::OutcomeAmbiguous, failure.reason)),
                ),
            },
        }
    }
}

/// Where a walk is after one step.
#[derive(Debug)]
pub enum Position {
    /// It followed the chosen edge to a non-terminal node.
    Moved(RecoveryWalk),
    /// The chooser picked no edge; nothing changed.
    Stayed(RecoveryWalk),
    /// It followed the chosen edge to a terminal node.
    Finished(RecoveryResult),
}

/// What the walk ends with: its last state, the last settled verdict, and the recovery trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecoveryResult {
    state: RecoveryState,
    #[serde(skip_serializing_if = "Option::is_none")]
    effect_verdict: Option<EffectVerdict>,
    recovery_trace: RecoveryTrace,
}

impl RecoveryResult {
    pub fn state(&self) -> RecoveryState {
        self.state
    }

    pub fn effect_verdict(&self) -> Option<&EffectVerdict> {
        self.effect_verdict.as_ref()
    }

    pub fn recovery_trace(&self) -> &RecoveryTrace {
        &self.recovery_trace
    }
}

/// A walk through the recovery graph for one planned route. It always sits on a non-terminal
/// node; reaching a terminal node turns it into a [`RecoveryResult`].
#[derive(Debug)]
pub struct RecoveryWalk {
    node: NodeIndex,
    action: LogicalAction,
    selection: Selection,
    trace: RecoveryTrace,
    last_failure: Option<FailureKind>,
    verdict: Option<EffectVerdict>,
}

impl RecoveryWalk {
    /// Starts at `planned` with the plan's selection.
    pub fn start(plan: &RoutePlan) -> RecoveryWalk {
        let selection = plan.selection().clone();
        RecoveryWalk {
            node: node(RecoveryState::Planned),
            action: plan.request().action,
            trace: RecoveryTrace::new(
                selection.provider(),
                selection.physical_action().clone(),
                selection.recovery(),
            ),
            selection,
            last_failure: None,
            verdict: None,
        }
    }

    /// The node the walk is on.
    pub fn state(&self) -> RecoveryState {
        recovery_graph().graph[self.node]
    }

    /// The route the walk dispatches through: the plan's, or the latest explicit replan's.
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    pub fn trace(&self) -> &RecoveryTrace {
        &self.trace
    }

    /// The last settled verdict.
    pub fn verdict(&self) -> Option<&EffectVerdict> {
        self.verdict.as_ref()
    }

    /// Offers the current node's edges to `choose` and follows the one it returns. If it
    /// returns none, the walk stays where it is.
    pub fn advance<F>(mut self, choose: F) -> Position
    where
        F: for<'offer> FnOnce(Offer<'offer>) -> Option<Edge<'offer>>,
    {
        let state = self.state();
        let offer = Offer {
            state,
            action: self.action,
            mutates: self.selection.mutates(),
            retry_permitted: state == RecoveryState::Failed
                && self.last_failure.is_some_and(|failure| {
                    !self.selection.mutates()
                        && self
                            .selection
                            .recovery()
                            .permits_retry(failure, self.trace.attempts())
                }),
            provider: self.selection.provider(),
            physical_action: self.selection.physical_action().clone(),
            brand: PhantomData,
        };
        let Some(Edge {
            index,
            label,
            payload,
            ..
        }) = choose(offer)
        else {
            return Position::Stayed(self);
        };
        let graph = &recovery_graph().graph;
        let (source, target) = graph
            .edge_endpoints(index)
            .expect("an edge from an offer is an edge of the graph");
        debug_assert_eq!(
            source, self.node,
            "an offer holds the current node's edges only"
        );
        let target_state = graph[target];
        match (label, payload) {
            (RecoveryEdge::Open | RecoveryEdge::Retry, _) => self.trace.record_attempt(),
            (_, Payload::Settled { verdict, failure }) => {
                self.last_failure = failure.as_ref().map(|(kind, _)| *kind);
                if let Some((kind, reason)) = failure {
                    self.trace.record_failure(kind, reason);
                }
                self.verdict = Some(verdict);
            }
            (_, Payload::Found(evidence)) => {
                self.verdict = Some(EffectVerdict::confirmed(evidence));
            }
            (_, Payload::Plan(plan)) => {
                let selection = plan.selection().clone();
                self.trace.record_replan(
                    selection.provider(),
                    selection.physical_action().clone(),
                    selection.recovery(),
                );
                self.selection = selection;
                self.last_failure = None;
            }
            (_, Payload::None) => {}
        }
        self.node = target;
        self.trace.enter(target_state);
        if target_state == RecoveryState::Confirmed {
            self.trace.record_confirmation();
        }
        if target_state.is_terminal() {
            return Position::Finished(self.finish());
        }
        Position::Moved(self)
    }

    /// Ends the walk where it stands (a failed read out of retries, say).
    pub fn stop(self) -> RecoveryResult {
        self.finish()
    }

    fn finish(self) -> RecoveryResult {
        RecoveryResult {
            state: recovery_graph().graph[self.node],
            effect_verdict: self.verdict,
            recovery_trace: self.trace,
        }
    }
}
