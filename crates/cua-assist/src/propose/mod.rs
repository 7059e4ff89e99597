//! The one model call and what is done with its answer.
//!
//! The model is shown the stopped step (its description, action, the target as the artifact
//! describes it, why it stopped) and the live screen as the redacted outline discovery uses.
//! It may answer with exactly one tool call: the step's own action on a node of that screen, or
//! `give_up`. Then, in order, and any refusal ends the assist with nothing done:
//!
//! 1. the tool is the step's own action (`navigate` is refused outright: a model never chooses
//!    where the session goes; any other action than the step's is refused);
//! 2. the node is on the screen shown, with the role the step's target has;
//! 3. a semantic descriptor is synthesized for it and resolves back to exactly that node;
//! 4. the policy authorizes the proposal **as the agent** (reads need no authorization):
//!    the agent profile allows only safe actions, so an elevated or irreversible target, by its
//!    declared risk or by what its name says, is refused here;
//! 5. the candidate overlay (the run's binding plus a target override for the step, and, when
//!    the step stopped on its own precondition, that precondition with the old label replaced
//!    by the new one) applies to the sealed base, and the effective step resolves to that node
//!    and its precondition holds on the live screen.
//!
//! The authorization is a judgement of the proposal, not a dispatch: the assist never acts on
//! the surface. The caller continues the run deterministically from the stopped step with the
//! candidate overlay applied ([`cua_replay::Replayer::continue_run`]), so the step is performed
//! by the executor as automation, with its declared wait and postcondition, exactly as the
//! overlay would make it run once a reviewer adopts it.

mod evidence;
mod judge;
mod overlay;
mod prompt;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use cua_agent::render::{RenderConfig, render};
use cua_agent::{LlmPort, Message, ModelRequest};
use cua_artifact::{
    Actor, FailureCode, Predicate, RunKind, RunStatus, TargetDescriptor, TenantBinding, TenantId,
};
use cua_evidence::{EvidenceBus, Note, Observe, RunStart};
use cua_policy::{Lease, PolicyEngine};
use cua_replay::{PreparedCapability, ReplayReport};
use cua_surface::SurfaceDriver;
use cua_target::BoundValues;
use serde::Serialize;
use serde_json::Value;

use crate::eligibility::Stuck;
use crate::error::AssistError;
use prompt::{SYSTEM_PROMPT, brief, tools};

/// The `llm_call` purpose of the assist's one model call.
pub const PURPOSE: &str = "assisted_recovery";

/// The candidate overlay's file name in the assist's run directory.
pub const CANDIDATE_FILE: &str = "candidate-overlay.yaml";

/// The proposal's evidence file name in the assist's run directory.
pub const PROPOSAL_FILE: &str = "assist.json";

/// Everything an assist is wired with.
pub struct Assistant<'a, D: SurfaceDriver, L: LlmPort> {
    pub driver: &'a D,
    /// The global policy; the assist narrows it to the effective capability.
    pub policy: &'a PolicyEngine,
    pub llm: &'a L,
    /// The assist's own run directory (`<run>-assist`).
    pub bus: &'a EvidenceBus,
}

/// What the assist is asked to help with.
pub struct AssistRequest<'a> {
    /// The capability as the stopped run ran it (a binding applied, when there was one).
    pub prepared: &'a PreparedCapability,
    /// The run that stopped.
    pub failed: &'a ReplayReport,
    pub stuck: &'a Stuck,
    /// The run's inputs (bound into predicates; sensitive ones are redacted everywhere).
    pub inputs: &'a BTreeMap<String, Value>,
    /// The run's tenant; without one the candidate is for [`INVOCATION_TENANT`].
    pub tenant: Option<&'a TenantId>,
    /// Binding vars that came from the invocation (`base_url` from `--base-url`), left out of
    /// the candidate because they are not facts about the tenant.
    pub invocation_vars: &'a [&'a str],
}

/// How an assist ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssistOutcome {
    /// The assist's run directory.
    pub evidence_dir: PathBuf,
    /// The run that stopped.
    pub failed_run: String,
    pub step: String,
    pub failure_code: FailureCode,
    /// Why the run stopped, as its report says (redacted).
    pub failure: String,
    /// The screen the model was shown, relative to the assist's run directory.
    pub snapshot_ref: String,
    pub model: String,
    pub scripted: bool,
    /// Always 1: an assist makes exactly one model call.
    pub model_calls: u32,
    /// The tool the model called and its arguments, as sent (redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The model's stated reasoning (redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    pub decision: Decision,
}

/// What became of the proposal.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// The proposal passed every check; the candidate overlay is written.
    Accepted(Box<Candidate>),
    /// The proposal was refused (or there was none); nothing was written but the evidence.
    Refused { code: String, reason: String },
}

/// An accepted proposal: the candidate overlay and where the run continues.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// The node the model named.
    pub node_id: String,
    /// The synthesized descriptor the overlay gives the step.
    pub target: TargetDescriptor,
    /// The step's precondition with the new label, when the stop was that precondition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precondition: Option<Predicate>,
    /// The policy's decision as the agent (`None` for a read, which is never authorized).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision_id: Option<String>,
    /// The candidate tenant binding, complete.
    pub binding: TenantBinding,
    /// Where it was written.
    pub path: PathBuf,
    /// The step index the run continues at.
    pub continue_at: usize,
}

impl AssistOutcome {
    /// The candidate, when the proposal was accepted.
    pub fn candidate(&self) -> Option<&Candidate> {
        match &self.decision {
            Decision::Accepted(candidate) => Some(candidate),
            Decision::Refused { .. } => None,
        }
    }
}

/// A refusal, before it becomes a [`Decision`].
struct Refusal {
    code: &'static str,
    reason: String,
    failure: FailureCode,
}

impl Refusal {
    fn new(code: &'static str, failure: FailureCode, reason: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            failure,
        }
    }
}

impl<D: SurfaceDriver, L: LlmPort> Assistant<'_, D, L> {
    /// Makes the one model call for `request` and judges its answer (see the module docs).
    /// Writes the assist's trace, the screen it showed, the proposal and, when accepted, the
    /// candidate overlay into the assist's run directory.
    pub async fn propose(&self, request: &AssistRequest<'_>) -> Result<AssistOutcome, AssistError> {
        let capability = &request.prepared.capability;
        let step = &capability.steps[request.stuck.step_index];
        let redactor = self.bus.redactor();
        redactor.add_sensitive_keys(capability.sensitive_names().into_iter().map(str::to_owned));
        for input in capability.inputs.iter().filter(|input| input.sensitive) {
            if let Some(value) = request.inputs.get(input.name.as_str()) {
                redactor.register_sensitive_value(&text_of(value));
            }
        }
        let lease = Lease::new(Actor::Agent);
        self.bus.emit(
            Actor::System,
            0,
            RunStart {
                kind: RunKind::Intervention,
                capability: Some(capability.reference()),
                content_hash: capability.content_hash.clone(),
                sealed_hash: None,
                bound_by: None,
                tenant: request.tenant.cloned(),
                inputs: request.inputs.clone(),
                goal: Some(format!(
                    "assist step `{}` of run {} ({})",
                    step.id,
                    request.failed.result.run_id,
                    request.stuck.code.as_str()
                )),
                target_url: None,
                model: Some(self.llm.model().to_owned()),
                scripted_model: Some(self.llm.scripted()),
                resolver_config_hash: None,
            },
        )?;
        let snapshot = self
            .driver
            .observe()
            .await
            .map_err(|error| AssistError::Surface {
                reason: error.to_string(),
            })?;
        let written = self.bus.write_snapshot("assist-screen", &snapshot)?;
        let snapshot_ref = written.path.clone();
        self.bus
            .emit(Actor::System, 0, Observe::of(&snapshot, Some(written)))?;
        let outline = render(
            &snapshot,
            redactor,
            &BTreeSet::new(),
            &RenderConfig::default(),
        );
        let model_request = ModelRequest {
            messages: vec![
                Message::System(SYSTEM_PROMPT.to_owned()),
                Message::User(redactor.redact_text(&brief(capability, step, request.stuck))),
                Message::User(format!("Current screen:\n{}", outline.text)),
            ],
            tools: tools(),
        };
        let mut outcome = AssistOutcome {
            evidence_dir: self.bus.dir().to_path_buf(),
            failed_run: request.failed.result.run_id.clone(),
            step: step.id.to_string(),
            failure_code: request.stuck.code,
            failure: redactor.redact_text(&request.stuck.message),
            snapshot_ref: snapshot_ref.clone(),
            model: self.llm.model().to_owned(),
            scripted: self.llm.scripted(),
            model_calls: 1,
            tool: None,
            arguments: None,
            reasoning: None,
            decision: Decision::Refused {
                code: "no_proposal".to_owned(),
                reason: String::new(),
            },
        };
        let judged = match self.llm.complete(&model_request).await {
            Err(error) => Err(Refusal::new(
                "model_call_failed",
                FailureCode::Internal,
                format!("the model call failed: {error}"),
            )),
            Ok(reply) => {
                self.record_call(&reply)?;
                // The answer says who answered; a scripted endpoint is labelled as such.
                outcome.model = reply.meta.model.clone();
                outcome.scripted = self.llm.scripted() || reply.meta.scripted;
                outcome.reasoning = reply
                    .content
                    .as_ref()
                    .map(|text| redactor.redact_text(text));
                if let Some(call) = reply.tool_calls.first() {
                    outcome.tool = Some(call.name.clone());
                    outcome.arguments = Some(
                        serde_json::from_str::<Value>(&call.arguments)
                            .map(|arguments| redactor.redact_json(&arguments))
                            .unwrap_or_else(|_| Value::from(redactor.redact_text(&call.arguments))),
                    );
                }
                self.bus.emit(
                    Actor::Agent,
                    lease.epoch,
                    Note {
                        note: "assist proposal".to_owned(),
                        data: BTreeMap::from([
                            (
                                "tool".to_owned(),
                                outcome.tool.clone().map_or(Value::Null, Value::from),
                            ),
                            (
                                "arguments".to_owned(),
                                outcome.arguments.clone().unwrap_or(Value::Null),
                            ),
                            ("snapshot_ref".to_owned(), Value::from(snapshot_ref.clone())),
                        ]),
                    },
                )?;
                self.judge(request, &snapshot, &outline.refs, &reply, &lease)
            }
        };
        let (status, failure, reason) = match judged {
            Ok(candidate) => {
                outcome.decision = Decision::Accepted(Box::new(candidate));
                (
                    RunStatus::Success,
                    None,
                    "proposal accepted; the candidate overlay is written for review".to_owned(),
                )
            }
            Err(refusal) => {
                self.bus.emit(
                    Actor::System,
                    0,
                    Note {
                        note: "assist proposal refused".to_owned(),
                        data: BTreeMap::from([
                            ("code".to_owned(), Value::from(refusal.code)),
                            ("reason".to_owned(), Value::from(refusal.reason.clone())),
                        ]),
                    },
                )?;
                outcome.decision = Decision::Refused {
                    code: refusal.code.to_owned(),
                    reason: redactor.redact_text(&refusal.reason),
                };
                (RunStatus::Failed, Some(refusal.failure), refusal.reason)
            }
        };
        // The proposal is part of the run's evidence, so it is written before the run ends.
        self.write_proposal(&outcome)?;
        self.end(status, failure, &reason)?;
        Ok(outcome)
    }
}

/// The run's inputs and the outputs it extracted, as predicates and targets bind them.
fn bindings(inputs: &BTreeMap<String, Value>, failed: &ReplayReport) -> BoundValues {
    let mut bound = BoundValues::new();
    for (name, value) in inputs {
        if let Ok(name) = cua_artifact::Identifier::parse(name) {
            bound = bound.with_input(name, text_of(value));
        }
    }
    for (name, value) in &failed.result.outputs {
        if let Ok(name) = cua_artifact::Identifier::parse(name) {
            bound = bound.with_output(name, text_of(value));
        }
    }
    bound
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
