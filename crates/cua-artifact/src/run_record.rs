//! The run record (`cua.run_record/v1`): one execution, projected from its trace. It is what a
//! reviewer reads after a run and what evaluations aggregate; the trace stays the source of truth.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostic::{DiagnosticCode, Problem};
use crate::document::RunRecordSchema;
use crate::identifiers::{CapabilityRef, ContentHash, Identifier, StepId, TenantId};
use crate::source_map::DocPath;
use crate::vocabulary::{
    ActionKind, Actor, EffectVerdict, FailureCode, ObservationClass, ResolutionStrategy, RunStatus,
};

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "cua run record (cua.run_record/v1)")]
pub struct RunRecord {
    pub schema: RunRecordSchema,
    pub run_id: String,
    pub kind: RunKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<CapabilityRef>,
    /// The hash of the capability as it ran (a binding applied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability_content_hash: Option<ContentHash>,
    /// When a binding produced what ran: the sealed base's hash, the one a reviewer approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_content_hash: Option<ContentHash>,
    /// What bound the difference between the two hashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<TenantId>,
    /// The goal a discovery run was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// Inputs as redacted for evidence.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, serde_json::Value>,
    pub steps: Vec<StepRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<RunResult>,
    /// RFC 3339, from the injected clock.
    pub started_at: String,
    pub duration_ms: u64,
    /// Where the trace, snapshots and screenshots of this run are.
    pub evidence_ref: String,
    /// Discovery only; replay makes no model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_used: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver_config_hash: Option<String>,
    #[serde(default)]
    pub human_actions: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lease_transitions: Vec<String>,
}

/// Why the run happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    Discovery,
    Replay,
    Intervention,
}

/// One step: dispatched, or (`undispatched`) one that read, waited, asserted, or was refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepRecord {
    pub index: u32,
    pub step_id: String,
    pub action_type: ActionKind,
    pub actor: Actor,
    pub lease_epoch: u64,
    /// Whether a granted decision of the same actor and epoch authorized its dispatch; false
    /// for a step that dispatched nothing.
    pub authorized: bool,
    /// The step dispatched nothing: a read from the snapshot, a wait or an assert (no policy
    /// decision), or a screenshot or an action the policy refused (`policy_decision` names the
    /// decision).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undispatched: bool,
    /// The policy decision id and reason.
    pub policy_decision: String,
    pub observation: ObservationClass,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<ResolutionRecord>,
    pub effect: EffectVerdict,
    pub started_at: String,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_rule_applied: Option<Identifier>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<FailureCode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_ref: Option<String>,
    /// Which operator and provider performed the step, and the path its dispatch took through
    /// the recovery state graph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteTrace>,
}

/// A step's route as the planner selected it before dispatch, and its recovery trace: every
/// attempt, every failure, and the states of the recovery graph the dispatch passed through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteTrace {
    /// The operator class (`browser-semantic`, `structured-api`, `native-cli`,
    /// `visual-coordinate`, …).
    pub operator: String,
    /// The provider that performed it (`cdp-browser`, `http`, `subprocess`, `visual`).
    pub provider: String,
    /// The provider's physical action (`dom_click`, `http_unsafe_request`, `pointer_click`, …).
    pub physical_action: String,
    /// Why the planner selected this provider.
    pub selected_by: String,
    /// The recovery strategy the route permits (`none`, `same-primitive-retry`).
    pub strategy: String,
    pub max_attempts: u8,
    pub attempts: u8,
    /// The recovery states passed through, from `planned`.
    pub path: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<RouteFailure>,
}

/// One failed attempt of a route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteFailure {
    pub attempt: u8,
    /// `retryable-read-failure`, `read-failure`, `pre-dispatch-rejection`,
    /// `outcome-ambiguous` or `suspected-noop`.
    pub kind: String,
    pub reason: String,
}

/// How a step's target was resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolutionRecord {
    pub target_description: String,
    #[serde(default)]
    pub strategy_recorded: Option<ResolutionStrategy>,
    #[serde(default)]
    pub strategy_used: Option<ResolutionStrategy>,
    #[serde(default)]
    pub resolved_node_id: Option<String>,
    pub candidates_considered: u32,
    pub ambiguity_score: f64,
    /// Whether an identity check ran on the resolved row, and passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_verified: Option<bool>,
}

impl ResolutionRecord {
    /// Whether resolution fell to a weaker rung than recorded.
    pub fn drifted(&self) -> bool {
        matches!((self.strategy_recorded, self.strategy_used), (Some(recorded), Some(used)) if recorded.drifted_to(used))
    }
}

/// What the caller of a run gets back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunResult {
    pub status: RunStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<CapabilityRef>,
    pub run_id: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<OutcomeResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<FailureDetail>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervention: Option<InterventionRef>,
    pub steps_executed: u32,
    pub steps_total: u32,
    pub duration_ms: u64,
    pub drift_score: f64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub strategy_mix: BTreeMap<ResolutionStrategy, u32>,
    #[serde(default)]
    pub recovery_attempts: u32,
    pub evidence_ref: String,
}

impl RunResult {
    /// The status carries the payload it needs and no other: a business outcome carries its
    /// outcome, a failure its error, needs-human its intervention, and success no error.
    pub fn validate(&self, path: &DocPath) -> Vec<Problem> {
        let needed = match self.status {
            RunStatus::Success => self.error.is_none() && self.outcome.is_none(),
            RunStatus::BusinessOutcome => self.outcome.is_some() && self.error.is_none(),
            RunStatus::NeedsHuman => self.intervention.is_some(),
            RunStatus::Failed => self.error.is_some(),
        };
        if needed {
            return Vec::new();
        }
        vec![Problem::new(
            DiagnosticCode::ResultInconsistent,
            path.key("status"),
            format!(
                "a `{}` result does not carry the payload that status needs",
                self.status.as_str()
            ),
            "success has no error or outcome; business_outcome has `outcome`; needs_human has `intervention`; failed has `error`",
        )]
    }

    /// One line: `SUCCESS - 3 output(s) in 503ms`, `FAILED - target_not_found at step x: …`.
    pub fn summary(&self) -> String {
        match self.status {
            RunStatus::Success => format!(
                "SUCCESS - {} output(s) in {}ms",
                self.outputs.len(),
                self.duration_ms
            ),
            RunStatus::BusinessOutcome => {
                format!(
                    "BUSINESS OUTCOME - {}",
                    self.outcome
                        .as_ref()
                        .map_or("?", |outcome| outcome.code.as_str())
                )
            }
            RunStatus::NeedsHuman => {
                format!(
                    "NEEDS HUMAN - {}",
                    self.intervention
                        .as_ref()
                        .map_or("?", |intervention| intervention.reason.as_str())
                )
            }
            RunStatus::Failed => match &self.error {
                Some(error) => format!(
                    "FAILED - {} at step {}: {}",
                    error.code.as_str(),
                    error.step_id.as_ref().map_or("-", |step| step.as_str()),
                    error.message
                ),
                None => "FAILED".to_owned(),
            },
        }
    }
}

/// A business outcome with what it returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeResult {
    pub code: Identifier,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, serde_json::Value>,
}

/// Why and where a run failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailureDetail {
    pub code: FailureCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<StepId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<ResolutionDebug>,
}

/// What the resolver tried, for a failure that is about finding a control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolutionDebug {
    pub target_description: String,
    pub strategies_tried: Vec<ResolutionStrategy>,
    pub candidates_considered: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidate_summaries: Vec<String>,
    pub ambiguity_score: f64,
}

/// The intervention a needs-human run opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InterventionRef {
    pub intervention_id: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<StepId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_index: Option<u32>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs_so_far: BTreeMap<String, serde_json::Value>,
}

impl RunRecord {
    /// Drifted resolutions over resolutions (0 when there were none).
    pub fn drift_score(&self) -> f64 {
        let resolutions: Vec<&ResolutionRecord> = self
            .steps
            .iter()
            .filter_map(|step| step.resolution.as_ref())
            .collect();
        if resolutions.is_empty() {
            return 0.0;
        }
        let drifted = resolutions
            .iter()
            .filter(|resolution| resolution.drifted())
            .count();
        drifted as f64 / resolutions.len() as f64
    }

    /// Steps dispatched without authorization. Always zero in a correct run; a test asserts it.
    pub fn unauthorized_dispatches(&self) -> usize {
        self.steps
            .iter()
            .filter(|step| !step.undispatched && !step.authorized)
            .count()
    }

    /// Load-time checks beyond types; empty means valid.
    pub fn validate(&self) -> Vec<Problem> {
        let root = DocPath::root();
        let mut problems: Vec<Problem> =
            crate::timestamp_problem(root.key("started_at"), &self.started_at)
                .into_iter()
                .collect();
        for (index, step) in self.steps.iter().enumerate() {
            problems.extend(crate::timestamp_problem(
                root.key("steps").index(index).key("started_at"),
                &step.started_at,
            ));
        }
        problems.extend(
            self.result
                .as_ref()
                .map(|result| result.validate(&root.key("result")))
                .unwrap_or_default(),
        );
        problems
    }
}
