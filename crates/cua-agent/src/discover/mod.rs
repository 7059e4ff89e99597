//! The discovery loop: a model drives the live UI toward a goal through the same chokepoint as
//! every other actor (resolve → authorize → dispatch → evidence), as actor `agent`, until it
//! finishes or a budget runs out.
//!
//! Per tool call the loop: renders the last observation (redacted) into the prompt, asks the
//! model, records an `llm_call`, parses the tool call into the closed action space, and then,
//! for an action that touches the surface, resolves its target on the observation the model saw
//! (`resolve`), asks the policy engine as `agent` (`authorize`), dispatches only what was
//! granted (`dispatch`), waits for the screen to settle (`wait`) and observes it (`observe`).
//! A refusal is answered to the model as a tool result and recorded; it never reaches the
//! surface. Page text is data: an instruction on a page to go elsewhere or press "Transfer"
//! becomes, at most, a tool call the policy refuses.
//!
//! # The `agent_action` note
//!
//! After each tool call the loop writes one `note` event, `note: "agent_action"`, whose `data`
//! says what was proposed and what became of it. It is the contract `cua-compile` reads (a
//! human recording writes the same note):
//!
//! | key | meaning |
//! |---|---|
//! | `step` | 1-based number of the tool call |
//! | `tool` | `click`, `type`, `select`, `press_key`, `navigate`, `extract`, `observe`, `finish` |
//! | `outcome` | `dispatched`, `extracted`, `refused`, `failed`, `observed`, `finished`, `invalid` |
//! | `snapshot_ref` | the snapshot the action was resolved on |
//! | `node_id`, `target` | the resolved node and the descriptor that resolved it (JSON) |
//! | `value` | what was typed: a literal, `{"$secret": name}` or `{"$input": name}` |
//! | `option`, `key`, `url` | the selected option, the key pressed, the URL opened |
//! | `into`, `extracted` | an extraction's output name and the text read |
//! | `decision_id` | the policy decision of a dispatched or refused action |
//! | `reason`, `why`, `model_latency_ms` | why it was refused or failed; the model's reason; the call's latency |
//!
//! A `note: "phase"` event with `data.phase = "goal"` marks where the goal's own steps start
//! (after a sign-in run with `--sign-in-with`).

mod act;
mod converse;
mod observe;
mod sign_in;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use cua_artifact::{Actor, Capability, Identifier, RunKind, RunStatus};
use cua_evidence::{EvidenceBus, RunEnd, RunStart, SecretResolver};
use cua_policy::{BrowserAction, Lease, PolicyEngine, SurfaceAction};
use cua_snapshot::UiSnapshot;
use cua_surface::SurfaceDriver;
use serde::Serialize;
use serde_json::{Value, json};

use crate::error::AgentError;
use crate::llm::LlmPort;
use crate::render::{Outline, RenderConfig};

/// The note that records each proposed action (see the module documentation).
pub const ACTION_NOTE: &str = "agent_action";
/// The note that marks a phase of the run (`data.phase`: `sign_in`, `goal`).
pub const PHASE_NOTE: &str = "phase";

/// Budgets and bounds of one discovery run. Passed explicitly.
#[derive(Debug, Clone)]
pub struct DiscoveryConfig {
    /// Tool calls the model may make.
    pub max_steps: u32,
    /// Prompt plus completion tokens over the whole run.
    pub max_tokens: u64,
    /// Wall time of the whole run.
    pub max_duration: Duration,
    /// Refusals in a row after which the run stops (`policy_wall`).
    pub max_consecutive_refusals: u32,
    /// Answers without a tool call in a row after which the run stops.
    pub max_idle_answers: u32,
    /// Past turns (a tool call and its result) kept in the prompt.
    pub history_turns: usize,
    /// How long to wait for the screen to settle after an action.
    pub settle_timeout: Duration,
    pub render: RenderConfig,
}

impl Default for DiscoveryConfig {
    fn default() -> Self {
        Self {
            max_steps: 40,
            max_tokens: 200_000,
            max_duration: Duration::from_secs(300),
            max_consecutive_refusals: 3,
            max_idle_answers: 2,
            history_turns: 12,
            settle_timeout: Duration::from_secs(3),
            render: RenderConfig::default(),
        }
    }
}

/// What to discover.
#[derive(Debug, Clone)]
pub struct DiscoveryRequest {
    /// The goal in plain words, e.g. "Look up member 12345 and report their savings balance".
    pub goal: String,
    /// Where the run starts.
    pub target_url: String,
    /// Secrets the model may type by name (`{$secret: name}`); it never sees their values.
    pub secret_names: Vec<cua_artifact::SecretName>,
    /// Sensitive inputs: the model types `{$input: name}` and never sees the value, which is
    /// redacted wherever the page shows it.
    pub sensitive_inputs: BTreeMap<Identifier, String>,
    /// A sign-in capability run (through the same chokepoint) before the goal's first step.
    pub sign_in: Option<Capability>,
}

impl DiscoveryRequest {
    /// A goal at a URL with nothing else.
    pub fn new(goal: impl Into<String>, target_url: impl Into<String>) -> Self {
        Self {
            goal: goal.into(),
            target_url: target_url.into(),
            secret_names: Vec::new(),
            sensitive_inputs: BTreeMap::new(),
            sign_in: None,
        }
    }
}

/// Why discovery stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished and extracted what it was asked for.
    GoalMet,
    /// The model said it cannot reach the goal.
    GaveUp,
    StepBudget,
    TokenBudget,
    TimeBudget,
    /// Too many refusals in a row.
    PolicyWall,
    /// The model stopped calling tools.
    NoToolCall,
    /// A model call failed (model errors are not retried).
    ModelError,
    /// The surface failed.
    SurfaceError,
}

impl StopReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::GoalMet => "goal_met",
            Self::GaveUp => "gave_up",
            Self::StepBudget => "step_budget",
            Self::TokenBudget => "token_budget",
            Self::TimeBudget => "time_budget",
            Self::PolicyWall => "policy_wall",
            Self::NoToolCall => "no_tool_call",
            Self::ModelError => "model_error",
            Self::SurfaceError => "surface_error",
        }
    }
}

/// A proposal the policy refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub step: u32,
    pub tool: String,
    pub decision_id: String,
    pub code: String,
    pub reason: String,
}

/// How a discovery run went.
#[derive(Debug, Clone, Serialize)]
pub struct DiscoveryReport {
    pub run_id: String,
    pub stop_reason: StopReason,
    pub model: String,
    pub scripted: bool,
    pub model_calls: u32,
    pub tokens: u64,
    /// Tool calls made.
    pub steps_attempted: u32,
    /// Tool calls that changed or read the screen (dispatched or extracted).
    pub steps_effective: u32,
    /// Extracted outputs by name, as read (redacted like the trace).
    pub outputs: BTreeMap<String, String>,
    pub refusals: Vec<Refusal>,
    /// The model's finish summary.
    pub summary: Option<String>,
    pub elapsed_ms: u64,
}

/// The discovery loop, wired with everything it uses.
pub struct Discovery<'a, D: SurfaceDriver, L: LlmPort> {
    pub driver: &'a D,
    /// The global policy; discovery acts as `agent` under its dispositions.
    pub policy: &'a PolicyEngine,
    pub bus: &'a EvidenceBus,
    pub llm: &'a L,
    /// Resolves `{$secret: …}` at the dispatch that types it, registering the value with the
    /// bus's redactor first.
    pub secrets: &'a SecretResolver,
    pub config: DiscoveryConfig,
}

/// The result of one pass through the chokepoint.
enum Passage {
    Dispatched {
        decision_id: String,
        node_id: Option<String>,
        descriptor: Option<Value>,
        navigated: bool,
    },
    Refused {
        decision_id: String,
        code: String,
        reason: String,
        node_id: Option<String>,
        descriptor: Option<Value>,
    },
    /// The target could not be resolved or the surface failed: nothing was authorized.
    Failed { reason: String },
}

/// What the loop keeps between turns.
struct Session {
    lease: Lease,
    snapshot: UiSnapshot,
    snapshot_ref: Option<String>,
    outline: Option<Outline>,
    expanded: BTreeSet<usize>,
    /// The sensitive inputs `{$input: name}` binds to.
    sensitive: BTreeMap<Identifier, String>,
}

impl<D: SurfaceDriver, L: LlmPort> Discovery<'_, D, L> {
    /// Runs discovery to a stop reason, leaving the trace (and run record) in the bus's run
    /// directory.
    pub async fn run(&self, request: &DiscoveryRequest) -> Result<DiscoveryReport, AgentError> {
        let started = Instant::now();
        let redactor = self.bus.redactor();
        for value in request.sensitive_inputs.values() {
            redactor.register_sensitive_value(value);
        }
        let scripted = self.llm.scripted();
        let lease = Lease::new(Actor::Agent);
        self.bus.emit(
            Actor::Agent,
            lease.epoch,
            RunStart {
                kind: RunKind::Discovery,
                capability: None,
                content_hash: None,
                sealed_hash: None,
                bound_by: None,
                tenant: None,
                inputs: request
                    .sensitive_inputs
                    .keys()
                    .map(|name| (name.to_string(), Value::from("<sensitive>")))
                    .collect(),
                goal: Some(request.goal.clone()),
                target_url: Some(request.target_url.clone()),
                model: Some(self.llm.model().to_owned()),
                scripted_model: Some(scripted),
                resolver_config_hash: None,
            },
        )?;
        let mut report = DiscoveryReport {
            run_id: self.bus.run_id().to_string(),
            stop_reason: StopReason::SurfaceError,
            model: self.llm.model().to_owned(),
            scripted,
            model_calls: 0,
            tokens: 0,
            steps_attempted: 0,
            steps_effective: 0,
            outputs: BTreeMap::new(),
            refusals: Vec::new(),
            summary: None,
            elapsed_ms: 0,
        };
        let first = self.open(request, lease).await;
        let stop = match first {
            Ok(mut session) => {
                self.converse(request, &mut session, &mut report, started)
                    .await?
            }
            Err(AgentError::Evidence(error)) => return Err(AgentError::Evidence(error)),
            Err(error) => {
                self.note(
                    "discovery could not start",
                    json!({ "reason": error.to_string() }),
                )?;
                self.end(&report, StopReason::SurfaceError, Some(error.to_string()))?;
                return Err(error);
            }
        };
        report.stop_reason = stop;
        report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.end(&report, stop, None)?;
        Ok(report)
    }

    /// Opens the target through the chokepoint, signs in when asked, and observes.
    async fn open(&self, request: &DiscoveryRequest, lease: Lease) -> Result<Session, AgentError> {
        let mut session = Session {
            lease,
            snapshot: UiSnapshot {
                url: String::new(),
                title: String::new(),
                http_status: None,
                nodes: Vec::new(),
            },
            snapshot_ref: None,
            outline: None,
            expanded: BTreeSet::new(),
            sensitive: request.sensitive_inputs.clone(),
        };
        let navigate = SurfaceAction::Browser(BrowserAction::Navigate {
            url: request.target_url.clone(),
        });
        match self.chokepoint(&mut session, None, navigate, None).await? {
            Passage::Dispatched { .. } => {}
            Passage::Refused { reason, .. } | Passage::Failed { reason } => {
                return Err(AgentError::TargetRefused {
                    url: request.target_url.clone(),
                    reason,
                });
            }
        }
        self.settle(&mut session, "entrypoint").await?;
        if let Some(sign_in) = &request.sign_in {
            self.sign_in(&mut session, sign_in).await?;
        }
        self.note(PHASE_NOTE, json!({ "phase": "goal" }))?;
        Ok(session)
    }

    fn end(
        &self,
        report: &DiscoveryReport,
        stop: StopReason,
        reason: Option<String>,
    ) -> Result<(), AgentError> {
        let status = if stop == StopReason::GoalMet {
            RunStatus::Success
        } else {
            RunStatus::Failed
        };
        self.bus.emit(
            Actor::Agent,
            1,
            RunEnd {
                reason,
                outputs: report
                    .outputs
                    .iter()
                    .map(|(name, value)| (name.clone(), Value::from(value.as_str())))
                    .collect(),
                steps_executed: Some(report.steps_effective),
                stop_reason: Some(stop.as_str().to_owned()),
                steps_attempted: Some(report.steps_attempted),
                steps_effective: Some(report.steps_effective),
                ..RunEnd::with_status(status)
            },
        )?;
        self.bus.finish()?;
        Ok(())
    }
}
