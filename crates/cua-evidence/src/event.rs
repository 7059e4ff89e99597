//! The closed set of trace events and the trace line that carries one.
//!
//! Payloads are typed with the shared vocabulary of `cua-artifact`. Optional fields are left
//! out of the line when absent, so a line says only what happened.

use std::collections::BTreeMap;

use cua_artifact::{
    ActionKind, Actor, CapabilityRef, ContentHash, EffectVerdict, FailureCode, Identifier,
    ObservationClass, ResolutionStrategy, RiskTier, RunKind, RunStatus, StepId, TenantId,
};
use cua_snapshot::{NodeId, UiSnapshot};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bus::ArtifactRef;
use crate::clock::Timestamp;

/// One line of `trace.jsonl`, as read back: the envelope and the event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceLine {
    /// 1-based, equal to the line number.
    pub seq: u64,
    pub at: Timestamp,
    pub run_id: String,
    pub actor: Actor,
    /// The lease epoch the actor acted under (0 for events outside the lease, like `observe`).
    pub lease_epoch: u64,
    pub prev_hash: String,
    pub line_hash: String,
    #[serde(flatten)]
    pub event: Event,
}

/// Everything that can happen in a run. The serde tag is the `event` member of the line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    RunStart(RunStart),
    Observe(Observe),
    Resolve(Resolve),
    Authorize(Authorize),
    Intent(Intent),
    Dispatch(Dispatch),
    Classify(Classify),
    Wait(Wait),
    Verify(Verify),
    Effect(Effect),
    Recovery(Recovery),
    Escalate(Escalate),
    Lease(Lease),
    LlmCall(LlmCall),
    BlockedRequest(BlockedRequest),
    RunEnd(RunEnd),
    Note(Note),
}

impl Event {
    /// Every event name, in declaration order.
    pub const NAMES: [&'static str; 17] = [
        "run_start",
        "observe",
        "resolve",
        "authorize",
        "intent",
        "dispatch",
        "classify",
        "wait",
        "verify",
        "effect",
        "recovery",
        "escalate",
        "lease",
        "llm_call",
        "blocked_request",
        "run_end",
        "note",
    ];

    /// The step the event is about, when it names one.
    pub fn step(&self) -> Option<&StepId> {
        match self {
            Self::Resolve(Resolve { step, .. })
            | Self::Authorize(Authorize { step, .. })
            | Self::Intent(Intent { step, .. })
            | Self::Dispatch(Dispatch { step, .. })
            | Self::Wait(Wait { step, .. })
            | Self::Recovery(Recovery { step, .. })
            | Self::Escalate(Escalate { step, .. })
            | Self::RunEnd(RunEnd { step, .. }) => step.as_ref(),
            Self::Classify(Classify { step, .. })
            | Self::Verify(Verify { step, .. })
            | Self::Effect(Effect { step, .. }) => Some(step),
            Self::RunStart(_)
            | Self::Observe(_)
            | Self::Lease(_)
            | Self::LlmCall(_)
            | Self::BlockedRequest(_)
            | Self::Note(_) => None,
        }
    }

    /// The event's wire name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::RunStart(_) => "run_start",
            Self::Observe(_) => "observe",
            Self::Resolve(_) => "resolve",
            Self::Authorize(_) => "authorize",
            Self::Intent(_) => "intent",
            Self::Dispatch(_) => "dispatch",
            Self::Classify(_) => "classify",
            Self::Wait(_) => "wait",
            Self::Verify(_) => "verify",
            Self::Effect(_) => "effect",
            Self::Recovery(_) => "recovery",
            Self::Escalate(_) => "escalate",
            Self::Lease(_) => "lease",
            Self::LlmCall(_) => "llm_call",
            Self::BlockedRequest(_) => "blocked_request",
            Self::RunEnd(_) => "run_end",
            Self::Note(_) => "note",
        }
    }

    /// Applies the size limits a trace keeps (model reasoning is cut to
    /// [`LlmCall::MAX_REASONING_CHARS`]).
    pub(crate) fn bounded(mut self) -> Self {
        if let Self::LlmCall(call) = &mut self
            && let Some((cut, _)) = call
                .reasoning
                .char_indices()
                .nth(LlmCall::MAX_REASONING_CHARS)
        {
            call.reasoning.truncate(cut);
        }
        self
    }
}

/// `run_start`: what is about to run, with which inputs (redacted at the sink).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStart {
    pub kind: RunKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<CapabilityRef>,
    /// The hash of the capability as it runs (a binding applied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<ContentHash>,
    /// When a binding produced the running capability: the sealed base's hash, the one a
    /// reviewer approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_hash: Option<ContentHash>,
    /// What bound the difference between the two hashes, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<TenantId>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, Value>,
    /// Discovery: the goal the model was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_url: Option<String>,
    /// Discovery: the model name; `scripted_model` says whether it was the scripted test model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scripted_model: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver_config_hash: Option<String>,
}

/// `observe`: a snapshot was taken (always `actor: system`, epoch 0).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observe {
    pub url: String,
    pub title: String,
    pub node_count: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// Where the (redacted) snapshot was written, relative to the run directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_ref: Option<String>,
    /// The blake3 of the written snapshot file; `verify` checks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_digest: Option<String>,
}

impl Observe {
    /// The observation of a snapshot, with where the bus wrote it (if it did). The URL and title
    /// are redacted when the event is written, like every payload.
    pub fn of(snapshot: &UiSnapshot, written: Option<ArtifactRef>) -> Self {
        let (snapshot_ref, snapshot_digest) = written
            .map(|written| (written.path, written.digest))
            .unzip();
        Self {
            url: snapshot.url.clone(),
            title: snapshot.title.clone(),
            node_count: snapshot.nodes.len() as u64,
            http_status: snapshot.http_status,
            snapshot_ref,
            snapshot_digest,
        }
    }
}

/// `resolve`: the target resolver's answer for one step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resolve {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepId>,
    /// The descriptor, described (`textbox named "Member Number" in frame content`).
    pub target: String,
    pub resolved: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<NodeId>,
    /// The rung that resolved the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<ResolutionStrategy>,
    /// The rung recorded in the artifact. Drift is derived from the two strategies
    /// ([`ResolutionStrategy::drifted_to`]), never stated separately.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy_recorded: Option<ResolutionStrategy>,
    pub candidates_considered: u32,
    /// Whether the target's identity check ran on the chosen row, and passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_verified: Option<bool>,
    /// On failure: `target_not_found` or `target_ambiguous`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<FailureCode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strategies_tried: Vec<ResolutionStrategy>,
    /// On ambiguity: one summary per surviving candidate, in document order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    /// The resolver's ambiguity measure, reported for debugging (it never breaks a tie).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ambiguity_score: Option<f64>,
}

/// `authorize`: the policy engine's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Authorize {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepId>,
    pub decision_id: String,
    pub granted: bool,
    pub action_type: ActionKind,
    pub risk: RiskTier,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<String>,
    pub reason: String,
    /// When refused: the policy's denial code (`lease_stale`, `not_allowlisted`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denial: Option<String>,
    /// The approval the decision relied on, for irreversible actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<NodeId>,
}

/// `intent`: the write-ahead record of a mutating dispatch (an action the policy assessed
/// above `safe`), durable on disk before the action is handed to any surface or operator. An
/// intent with no `effect` for its decision is *in doubt*: the action may or may not have
/// happened, and it is never dispatched again blindly (see [`in_doubt`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepId>,
    /// The `authorize` decision this intent is for.
    pub decision_id: String,
    pub action_type: ActionKind,
    pub risk: RiskTier,
    /// The batch row the run serves, when it serves one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row: Option<u64>,
    /// Which attempt at the row (or run) this is, from 1.
    pub attempt: u32,
    /// The same for every attempt at one row: what a `reconcile` looks the effect up by.
    pub idempotency_key: String,
    /// The remedy capability whose step this is, when a `run_capability` remedy mutated; its
    /// `step` is then the run's step being recovered, and that step's `reconcile` does not
    /// answer for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<CapabilityRef>,
}

impl Intent {
    /// The intent of a run that serves no batch row (discovery, a console gesture, a single
    /// replay): attempt 1, keyed by the run id.
    pub fn of_run(
        run_id: &str,
        step: Option<StepId>,
        decision_id: &str,
        action_type: ActionKind,
        risk: RiskTier,
    ) -> Self {
        Self {
            step,
            decision_id: decision_id.to_owned(),
            action_type,
            risk,
            row: None,
            attempt: 1,
            idempotency_key: crate::intent::idempotency_key(run_id, None),
            remedy: None,
        }
    }

    /// Whether a dispatch needs a write-ahead intent: the policy assessed it above `safe`, or
    /// the artifact declares it a mutation whatever its tier (`Step::mutates`).
    pub fn required(risk: RiskTier, declared_mutation: bool) -> bool {
        risk > RiskTier::Safe || declared_mutation
    }
}

/// `dispatch`: an authorized action was handed to the surface, or refused at the dispatch
/// (`refused: true`, with the reason and the epoch the lease expected).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dispatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepId>,
    pub decision_id: String,
    pub action_type: ActionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<NodeId>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub refused: bool,
    /// Whether the surface accepted the action (a receipt, not a confirmation).
    pub ok: bool,
    #[serde(default)]
    pub navigated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(default)]
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_epoch: Option<u64>,
}

impl Dispatch {
    /// An authorized action refused right at its dispatch: nothing left the process (a stale
    /// lease, a read-only run). Settles its intent as never dispatched.
    pub fn refused(
        step: Option<StepId>,
        decision_id: &str,
        action_type: ActionKind,
        node_id: Option<NodeId>,
        reason: &str,
        expected_epoch: Option<u64>,
    ) -> Self {
        Self {
            step,
            decision_id: decision_id.to_owned(),
            action_type,
            node_id,
            refused: true,
            ok: false,
            navigated: false,
            http_status: None,
            duration_ms: 0,
            message: String::new(),
            reason: Some(reason.to_owned()),
            expected_epoch,
        }
    }
}

/// `classify`: what the executor made of the screen before a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Classify {
    pub step: StepId,
    pub observation: ObservationClass,
    pub reason: String,
    /// The declared outcome or recovery rule that matched, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched: Option<Identifier>,
}

/// `wait`: a wait for a condition ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wait {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepId>,
    pub condition: String,
    pub satisfied: bool,
    pub waited_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// `verify`: a step's postcondition, evaluated on a fresh snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verify {
    pub step: StepId,
    pub postcondition: String,
    pub holds: bool,
    /// What was seen instead, when it does not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_ref: Option<String>,
}

/// `effect`: the effect verdict of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    pub step: StepId,
    pub verdict: EffectVerdict,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_id: Option<String>,
    /// The step's route and recovery trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<cua_artifact::RouteTrace>,
    /// The action of a step that dispatched nothing (a read from the snapshot, a wait, an
    /// assert, a screenshot, an action the policy refused): the run record lists such a step
    /// from this event, since it has no `dispatch` of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undispatched: Option<ActionKind>,
    /// A screenshot of the step's last screen (when the policy keeps one of every dispatched
    /// step), relative to the run directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_ref: Option<String>,
    /// The blake3 of that screenshot's file; `verify` checks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_digest: Option<String>,
}

/// `recovery`: a declared recovery rule fired (an attempt of a remedy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recovery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepId>,
    pub rule: Identifier,
    pub attempt: u64,
    pub max_attempts: u64,
    /// The remedy (`reload`, `run_capability`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<CapabilityRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<ContentHash>,
}

/// `escalate`: the run stopped for a human, or failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Escalate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepId>,
    /// The step's position in the capability, for resuming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RunStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<FailureCode>,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervention: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_digest: Option<String>,
}

/// A change of who holds the live session. Every transition increments the lease epoch; the
/// line's `lease_epoch` is the epoch after the transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseTransition {
    /// Automation took the session at the start of a run.
    Acquired,
    /// The run stopped for a human: the session is paused and nobody holds it.
    Escalated,
    /// An operator claimed the session.
    Claimed,
    /// The operator handed it back.
    Released,
    /// Automation resumed acting.
    Resumed,
    /// An operator's hold ran out.
    HoldExpired,
}

impl LeaseTransition {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Acquired => "acquired",
            Self::Escalated => "escalated",
            Self::Claimed => "claimed",
            Self::Released => "released",
            Self::Resumed => "resumed",
            Self::HoldExpired => "hold_expired",
        }
    }
}

/// `lease`: the session changed hands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lease {
    pub transition: LeaseTransition,
    /// Who holds the session after the transition.
    pub holder: Actor,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervention: Option<String>,
    /// On release: how many actions the operator took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_actions: Option<u64>,
    /// On release: a summary of what changed on screen (`+77/-4 nodes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_delta: Option<String>,
    /// On release: the nodes whose values changed (ids only, never values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values_changed: Vec<NodeId>,
}

/// `llm_call`: one model call during discovery or assisted recovery.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmCall {
    pub model: String,
    pub provider: String,
    #[serde(default)]
    pub scripted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The model's stated reasoning, cut to [`Self::MAX_REASONING_CHARS`] by the bus.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
}

impl LlmCall {
    /// How much of the model's reasoning a trace keeps.
    pub const MAX_REASONING_CHARS: usize = 500;
}

/// `blocked_request`: the surface refused a request outside the allowlist.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockedRequest {
    pub url: String,
    pub reason: String,
    /// Whether it was a navigation of a frame (as opposed to a subresource).
    #[serde(default)]
    pub navigation: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
}

impl BlockedRequest {
    /// A request the surface refused to fetch, with the resource type as the surface named it
    /// (a `Document` is a frame's navigation).
    pub fn refused(url: String, reason: String, resource_type: String) -> Self {
        Self {
            navigation: resource_type.eq_ignore_ascii_case("document"),
            url,
            reason,
            resource_type: Some(resource_type),
        }
    }
}

/// `run_end`: how the run ended, with everything its result holds, so the run record can be
/// projected from the trace alone. Output values and outcome data pass through the redactor
/// like every payload: a sensitive output is masked by its name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunEnd {
    pub status: RunStatus,
    /// Every file the run wrote beside its trace (snapshots, screenshots, notes), relative
    /// path → blake3 digest. Filled in by the bus when it writes `run_end`, whatever the
    /// caller put here, so a finished run names each of its files exactly once.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<FailureCode>,
    /// The failure's (or escalation's) message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The step the run failed at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<String>,
    /// The declared business outcome's code, and what it returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Identifier>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outcome_data: BTreeMap<String, Value>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, Value>,
    /// The run's effect verdict: the weakest over its mutating steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<EffectVerdict>,
    /// Capability steps executed and declared (replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_executed: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_total: Option<u32>,
    /// Discovery: why the loop stopped (`goal_met`, `budget_exhausted`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_attempted: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_effective: Option<u32>,
}

impl RunEnd {
    /// A run's end with `status` and nothing else said: the fields a caller has, it sets over
    /// this (`RunEnd { outputs, ..RunEnd::with_status(RunStatus::Success) }`).
    pub fn with_status(status: RunStatus) -> Self {
        Self {
            status,
            files: BTreeMap::new(),
            failure_code: None,
            reason: None,
            step: None,
            expected: None,
            observed: None,
            outcome: None,
            outcome_data: BTreeMap::new(),
            outputs: BTreeMap::new(),
            effect: None,
            steps_executed: None,
            steps_total: None,
            stop_reason: None,
            steps_attempted: None,
            steps_effective: None,
        }
    }
}

/// `note`: anything else worth a line (`failure capture: timeout`, `re-anchor after handoff`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Note {
    pub note: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, Value>,
}

/// Lets `bus.emit(actor, epoch, payload)` take any payload directly.
macro_rules! event_from_payload {
    ($($variant:ident),* $(,)?) => {
        $(
            impl From<$variant> for Event {
                fn from(payload: $variant) -> Self {
                    Self::$variant(payload)
                }
            }
        )*
    };
}

event_from_payload!(
    RunStart,
    Observe,
    Resolve,
    Authorize,
    Intent,
    Dispatch,
    Classify,
    Wait,
    Verify,
    Effect,
    Recovery,
    Escalate,
    Lease,
    LlmCall,
    BlockedRequest,
    RunEnd,
    Note,
);
