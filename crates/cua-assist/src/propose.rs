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

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use cua_agent::render::{RenderConfig, render};
use cua_agent::{LlmPort, Message, ModelReply, ModelRequest, ToolSpec};
use cua_artifact::{
    ActionKind, Actor, Capability, FailureCode, MatchMode, NameMatch, NodeScope, Predicate,
    RunKind, RunStatus, Step, StepOverride, TargetDescriptor, TargetOverride, TenantBinding,
    TenantBindingSchema, TenantId,
};
use cua_evidence::{EvidenceBus, LlmCall, Note, Observe, Resolve, RunEnd, RunStart};
use cua_gate::{Gate, Request as GateRequest};
use cua_policy::{Lease, PolicyEngine, ResolvedTarget, SurfaceAction};
use cua_replay::{INVOCATION_TENANT, PreparedCapability, ReplayReport};
use cua_snapshot::UiSnapshot;
use cua_surface::SurfaceDriver;
use cua_target::{BoundValues, ResolverConfig, SnapshotIndex, SynthesisConfig};
use serde::Serialize;
use serde_json::{Value, json};

use crate::eligibility::Stuck;
use crate::error::AssistError;

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

    /// Steps 1 to 5 of the module docs; on success writes the candidate.
    fn judge(
        &self,
        request: &AssistRequest<'_>,
        snapshot: &UiSnapshot,
        refs: &BTreeMap<String, usize>,
        reply: &ModelReply,
        lease: &Lease,
    ) -> Result<Candidate, Refusal> {
        let capability = &request.prepared.capability;
        let step = &capability.steps[request.stuck.step_index];
        let recorded = step.action.target().ok_or_else(|| {
            Refusal::new("no_target", FailureCode::Internal, "the step has no target")
        })?;
        let call = match reply.tool_calls.as_slice() {
            [call] => call,
            [] => {
                return Err(Refusal::new(
                    "no_proposal",
                    FailureCode::TargetNotFound,
                    "the model made no tool call",
                ));
            }
            calls => {
                return Err(Refusal::new(
                    "several_proposals",
                    FailureCode::PolicyDenied,
                    format!(
                        "the model made {} tool calls; an assist takes exactly one",
                        calls.len()
                    ),
                ));
            }
        };
        let arguments: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
        let proposed = match call.name.as_str() {
            "give_up" => {
                return Err(Refusal::new(
                    "gave_up",
                    FailureCode::TargetNotFound,
                    format!(
                        "the model gave up: {}",
                        arguments
                            .get("reason")
                            .and_then(Value::as_str)
                            .unwrap_or("no reason given")
                    ),
                ));
            }
            "navigate" => {
                return Err(Refusal::new(
                    "navigation_refused",
                    FailureCode::PolicyDenied,
                    "an assist never navigates: a model does not choose where the session goes",
                ));
            }
            "click" => ActionKind::Click,
            "type" => ActionKind::Type,
            "select" => ActionKind::Select,
            "extract" => ActionKind::Extract,
            other => {
                return Err(Refusal::new(
                    "not_an_assist_tool",
                    FailureCode::PolicyDenied,
                    format!("`{other}` is not an action an assist may propose"),
                ));
            }
        };
        if proposed != request.stuck.action {
            return Err(Refusal::new(
                "not_the_step_action",
                FailureCode::PolicyDenied,
                format!(
                    "the model proposed {} but step `{}` is a {} step; an assist only retargets the step's own action",
                    proposed.as_str(),
                    step.id,
                    request.stuck.action.as_str()
                ),
            ));
        }
        let node = node_of(&arguments, refs, snapshot)?;
        let found = &snapshot.nodes[node];
        if !found.role.eq_ignore_ascii_case(&recorded.role) {
            return Err(Refusal::new(
                "wrong_role",
                FailureCode::PolicyDenied,
                format!(
                    "the model named a {} but the step's target is a {}",
                    found.role, recorded.role
                ),
            ));
        }
        let index = SnapshotIndex::new(snapshot);
        let bindings = bindings(request.inputs, request.failed);
        let synthesized = cua_target::synthesize_with(
            &index,
            node,
            &SynthesisConfig {
                known_inputs: BTreeMap::new(),
            },
        )
        .map_err(|error| {
            Refusal::new(
                "no_descriptor",
                FailureCode::TargetNotFound,
                error.to_string(),
            )
        })?;
        if !synthesized.round_trips {
            return Err(Refusal::new(
                "no_descriptor",
                FailureCode::TargetNotFound,
                format!(
                    "no semantic descriptor finds exactly {} ({})",
                    found.id,
                    synthesized
                        .warnings
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            ));
        }
        let descriptor = synthesized.descriptor;
        let resolved = ResolvedTarget {
            node_id: found.id.clone(),
            role: found.role.clone(),
            name: found.name.clone(),
        };
        self.bus
            .emit(
                Actor::Agent,
                lease.epoch,
                Resolve {
                    step: Some(step.id.clone()),
                    target: descriptor.describe(),
                    resolved: true,
                    node_id: Some(found.id.clone()),
                    strategy: descriptor.recorded_strategy,
                    strategy_recorded: recorded.recorded_strategy,
                    candidates_considered: 1,
                    ..Resolve::default()
                },
            )
            .map_err(evidence_refusal)?;
        let decision_id =
            self.authorize(capability, step, request.stuck.action, resolved, lease)?;
        let precondition = if request.stuck.precondition {
            step.precondition
                .as_ref()
                .and_then(|predicate| relabel(predicate, recorded, &descriptor))
        } else {
            None
        };
        let binding = candidate_binding(request, step, &descriptor, precondition.clone());
        let base = request
            .prepared
            .overlay
            .as_ref()
            .map_or(capability, |overlay| &overlay.base);
        let effective = binding.apply(base).map_err(|error| {
            Refusal::new(
                "overlay_invalid",
                FailureCode::PolicyDenied,
                format!("the candidate overlay does not apply: {error}"),
            )
        })?;
        self.check_effective(
            &effective,
            request.stuck.step_index,
            snapshot,
            &bindings,
            node,
        )?;
        let path = self.bus.dir().join(crate::CANDIDATE_FILE);
        let candidate = Candidate {
            node_id: found.id.to_string(),
            target: descriptor,
            precondition,
            decision_id,
            binding,
            path,
            continue_at: request.stuck.step_index,
        };
        self.write_candidate(&candidate, request).map_err(|error| {
            Refusal::new("unwritable", FailureCode::Internal, error.to_string())
        })?;
        Ok(candidate)
    }

    /// The effective step (the candidate overlay applied) must resolve to the proposed node,
    /// and its precondition must hold, on the live screen.
    fn check_effective(
        &self,
        effective: &Capability,
        step_index: usize,
        snapshot: &UiSnapshot,
        bindings: &BoundValues,
        node: usize,
    ) -> Result<(), Refusal> {
        let step = &effective.steps[step_index];
        let target = step.action.target().ok_or_else(|| {
            Refusal::new(
                "no_target",
                FailureCode::Internal,
                "the step lost its target",
            )
        })?;
        let index = SnapshotIndex::new(snapshot);
        match cua_target::resolve_with(&index, target, bindings, &ResolverConfig::REPLAY) {
            Ok(resolution) if resolution.node == node => {}
            Ok(resolution) => {
                return Err(Refusal::new(
                    "overlay_misses",
                    FailureCode::TargetAmbiguous,
                    format!(
                        "with the candidate overlay the step's target `{}` resolves to {}, not to the proposed node",
                        target.describe(),
                        resolution.node_id
                    ),
                ));
            }
            Err(error) => {
                return Err(Refusal::new(
                    "overlay_misses",
                    error.failure_code(),
                    format!(
                        "with the candidate overlay the step's target `{}` does not resolve: {error}",
                        target.describe()
                    ),
                ));
            }
        }
        if let Some(precondition) = &step.precondition {
            let holds =
                cua_target::evaluate(precondition, snapshot, bindings).map_err(|error| {
                    Refusal::new(
                        "precondition_unevaluable",
                        FailureCode::Internal,
                        error.to_string(),
                    )
                })?;
            if !holds {
                return Err(Refusal::new(
                    "precondition_still_false",
                    FailureCode::UnexpectedState,
                    format!(
                        "with the candidate overlay the precondition of step `{}` still does not hold on this screen",
                        step.id
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The policy's judgement of the proposal as the agent. A read is never authorized (it
    /// reaches no surface); anything else must be granted, or the assist is refused. The
    /// authorization is dropped, never dispatched: the continuation performs the step.
    fn authorize(
        &self,
        effective: &Capability,
        step: &Step,
        action: ActionKind,
        resolved: ResolvedTarget,
        lease: &Lease,
    ) -> Result<Option<String>, Refusal> {
        let surface_action = match action {
            ActionKind::Click => SurfaceAction::Click,
            // The value is bound by the executor at its dispatch; the policy's judgement does
            // not depend on it, and a secret is never resolved for a judgement.
            ActionKind::Type => SurfaceAction::Type {
                text: String::new(),
                clear_first: true,
            },
            ActionKind::Select => SurfaceAction::Select {
                value: String::new(),
            },
            _ => return Ok(None),
        };
        let engine = self.policy.for_capability(effective).map_err(|error| {
            Refusal::new(
                "policy_unavailable",
                FailureCode::PolicyDenied,
                error.to_string(),
            )
        })?;
        let request = GateRequest {
            step: Some(step.id.clone()),
            target: Some(resolved),
            declared_risk: Some(step.risk),
            ..GateRequest::new(Actor::Agent, lease.epoch, surface_action)
        };
        let lease = || *lease;
        let judged = Gate::new(&engine, Some(self.bus), &lease)
            .judge(request)
            .map_err(evidence_refusal)?;
        match judged {
            // Judged, not performed: the deterministic continuation dispatches the step.
            Ok(decision_id) => Ok(Some(decision_id)),
            Err(denial) => Err(Refusal::new(
                "policy_denied",
                FailureCode::PolicyDenied,
                format!(
                    "the policy refuses the proposal as the agent ({}): {}",
                    denial.code.as_str(),
                    denial.reason
                ),
            )),
        }
    }

    /// The `llm_call` event of the one call.
    fn record_call(&self, reply: &ModelReply) -> Result<(), AssistError> {
        self.bus.emit(
            Actor::Agent,
            1,
            LlmCall {
                model: reply.meta.model.clone(),
                provider: reply.meta.provider.clone(),
                scripted: reply.meta.scripted,
                request_id: reply.meta.request_id.clone(),
                prompt_tokens: reply.usage.prompt_tokens,
                completion_tokens: reply.usage.completion_tokens,
                reasoning: reply.content.clone().unwrap_or_default(),
                tool_calls: reply
                    .tool_calls
                    .iter()
                    .map(|call| call.name.clone())
                    .collect(),
                purpose: Some(PURPOSE.to_owned()),
            },
        )?;
        Ok(())
    }

    /// Writes the candidate overlay (YAML, for review and `cua validate`) and records it in the
    /// hash-chained trace, whole, so the file can be checked against the trace.
    fn write_candidate(
        &self,
        candidate: &Candidate,
        request: &AssistRequest<'_>,
    ) -> Result<(), AssistError> {
        let yaml = cua_artifact::yaml::to_yaml(&candidate.binding).map_err(|error| {
            AssistError::Write {
                path: candidate.path.clone(),
                reason: error.to_string(),
            }
        })?;
        let tenant = candidate.binding.tenant.as_str();
        let header = format!(
            "# Candidate overlay proposed by assisted replay: review it before adopting it.\n\
             #\n\
             # Run {} stopped at step `{}` ({}); one model call ({}) proposed node {} for it;\n\
             # {}. The sealed capability is unchanged.\n\
             # To adopt it, save it as tenants/{tenant}/{}.yaml (merging with an existing binding).\n\n",
            request.failed.result.run_id,
            request.stuck.step,
            request.stuck.code.as_str(),
            self.llm.model(),
            candidate.node_id,
            match &candidate.decision_id {
                Some(id) => format!("the policy granted it as the agent ({id})"),
                None => "a read, which needs no authorization".to_owned(),
            },
            candidate.binding.capability.id(),
        );
        let text = self.bus.redactor().redact_text(&format!("{header}{yaml}"));
        self.bus
            .write_file(crate::CANDIDATE_FILE, text.as_bytes())
            .map_err(|error| AssistError::Write {
                path: candidate.path.clone(),
                reason: error.to_string(),
            })?;
        let binding = serde_json::to_value(&candidate.binding).unwrap_or(Value::Null);
        self.bus.emit(
            Actor::System,
            0,
            Note {
                note: "candidate overlay".to_owned(),
                data: BTreeMap::from([
                    ("file".to_owned(), Value::from(crate::CANDIDATE_FILE)),
                    ("binding".to_owned(), binding),
                    ("node_id".to_owned(), Value::from(candidate.node_id.clone())),
                    (
                        "continue_at".to_owned(),
                        Value::from(candidate.continue_at as u64),
                    ),
                ]),
            },
        )?;
        Ok(())
    }

    /// Writes the proposal's evidence (`assist.json`), redacted.
    fn write_proposal(&self, outcome: &AssistOutcome) -> Result<(), AssistError> {
        let path = self.bus.dir().join(crate::PROPOSAL_FILE);
        let value = serde_json::to_value(outcome).map_err(|error| AssistError::Write {
            path: path.clone(),
            reason: error.to_string(),
        })?;
        let mut text = serde_json::to_string_pretty(&self.bus.redactor().redact_json(&value))
            .map_err(|error| AssistError::Write {
                path: path.clone(),
                reason: error.to_string(),
            })?;
        text.push('\n');
        self.bus
            .write_file(crate::PROPOSAL_FILE, text.as_bytes())
            .map_err(|error| AssistError::Write {
                path,
                reason: error.to_string(),
            })
    }

    /// Ends the assist's trace and writes its run record.
    fn end(
        &self,
        status: RunStatus,
        failure_code: Option<FailureCode>,
        reason: &str,
    ) -> Result<(), AssistError> {
        self.bus.emit(
            Actor::System,
            0,
            RunEnd {
                files: Default::default(),
                status,
                failure_code,
                reason: Some(reason.to_owned()),
                step: None,
                expected: None,
                observed: None,
                outcome: None,
                outcome_data: BTreeMap::new(),
                outputs: BTreeMap::new(),
                effect: None,
                steps_executed: Some(0),
                steps_total: None,
                stop_reason: None,
                steps_attempted: Some(1),
                steps_effective: Some(u32::from(status == RunStatus::Success)),
            },
        )?;
        self.bus.finish()?;
        Ok(())
    }
}

/// What the model is told about its task.
const SYSTEM_PROMPT: &str = "You help a deterministic replay that stopped at one step. The step's target, as the \
capability describes it, is not on the screen as described: the application may have relabelled, renamed or \
moved it. Propose the node on the current screen this step should act on, with exactly one tool call: the step's \
own action (click, type, select or extract) with {\"target\": {\"ref\": \"nN\"}} naming a node of the screen below, \
or give_up when no node is clearly the one. You never navigate and you never choose values: the step's values are \
bound by the executor. The policy judges your proposal; a refused proposal is not performed. An accepted proposal \
becomes a candidate overlay a person reviews; the capability itself is never changed.";

/// The brief: the capability, the step, its target as recorded, and why it stopped.
fn brief(capability: &Capability, step: &Step, stuck: &Stuck) -> String {
    let target = step.action.target().map(target_line).unwrap_or_default();
    format!(
        "{}\nCapability: {} ({})\nStep: {} ({})\nAction: {}\nTarget: {target}\nStopped with: {}: {}",
        cua_agent::scripted::ASSIST_MARKER,
        capability.reference(),
        capability.title,
        step.id,
        step.description,
        stuck.action.as_str(),
        stuck.code.as_str(),
        stuck.message,
    )
}

/// `role cell; anchor adjacent_to "Savings Balance"; scope frame content`.
fn target_line(target: &TargetDescriptor) -> String {
    let mut parts = vec![format!("role {}", target.role)];
    if let Some(name) = &target.name {
        parts.push(format!(
            "name {}",
            serde_json::to_string(&name.value).unwrap_or_default()
        ));
    }
    if let Some(anchor) = &target.anchor {
        parts.push(format!(
            "anchor {} {}",
            anchor.relation.as_str(),
            serde_json::to_string(&anchor.text).unwrap_or_default()
        ));
    }
    if let Some(scope) = &target.scope {
        if let Some(frame) = &scope.frame {
            parts.push(format!("scope frame {frame}"));
        }
        if let Some(region) = &scope.region {
            parts.push(format!("region {region}"));
        }
    }
    parts.join("; ")
}

/// The tools an assist offers: the four retargetable actions and `give_up`.
fn tools() -> Vec<ToolSpec> {
    let target = json!({
        "type": "object",
        "properties": { "ref": { "type": "string", "description": "A node ref from the current screen, e.g. n42." } },
        "required": ["ref"],
        "additionalProperties": false,
    });
    let why = json!({ "type": "string", "description": "One short sentence: why this node is the step's target." });
    let action = |name: &str, description: &str| ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters: json!({
            "type": "object",
            "properties": { "target": target, "why": why },
            "required": ["target"],
            "additionalProperties": false,
        }),
    };
    vec![
        action("click", "Propose the node the step's click acts on."),
        action("type", "Propose the field the step types its value into."),
        action("select", "Propose the list the step selects its value in."),
        action("extract", "Propose the node the step reads its value from."),
        ToolSpec {
            name: "give_up".to_owned(),
            description: "No node on the screen is clearly the step's target.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": { "reason": { "type": "string" } },
                "required": ["reason"],
                "additionalProperties": false,
            }),
        },
    ]
}

/// The node a tool call names: a ref from the outline shown, or a role and name.
fn node_of(
    arguments: &Value,
    refs: &BTreeMap<String, usize>,
    snapshot: &UiSnapshot,
) -> Result<usize, Refusal> {
    let target = arguments.get("target").ok_or_else(|| {
        Refusal::new(
            "no_target",
            FailureCode::TargetNotFound,
            "the proposal names no target",
        )
    })?;
    if let Some(reference) = target.get("ref").and_then(Value::as_str) {
        return refs.get(reference.trim()).copied().ok_or_else(|| {
            Refusal::new(
                "not_on_screen",
                FailureCode::TargetNotFound,
                format!("{reference} is not a node of the screen the model was shown"),
            )
        });
    }
    let role = target.get("role").and_then(Value::as_str).unwrap_or("");
    let mut descriptor = TargetDescriptor::role(role);
    descriptor.name = target
        .get("name")
        .and_then(Value::as_str)
        .map(|name| NameMatch {
            value: name.to_owned(),
            match_mode: MatchMode::Exact,
        });
    descriptor.scope = target
        .get("frame")
        .and_then(Value::as_str)
        .map(|frame| NodeScope {
            frame: Some(frame.to_owned()),
            region: None,
        });
    cua_target::resolve_with(
        &SnapshotIndex::new(snapshot),
        &descriptor,
        &BoundValues::new(),
        &ResolverConfig::DISCOVERY,
    )
    .map(|resolution| resolution.node)
    .map_err(|error| {
        Refusal::new(
            "not_on_screen",
            error.failure_code(),
            format!(
                "the proposed `{}` is not one node of the screen: {error}",
                descriptor.describe()
            ),
        )
    })
}

/// The candidate: the run's binding (less the invocation's vars) with a target override for
/// the step, and the relabelled precondition when there is one.
fn candidate_binding(
    request: &AssistRequest<'_>,
    step: &Step,
    descriptor: &TargetDescriptor,
    precondition: Option<Predicate>,
) -> TenantBinding {
    let capability = &request.prepared.capability;
    let mut binding = match &request.prepared.overlay {
        Some(overlay) => overlay.binding.clone(),
        None => TenantBinding {
            schema: TenantBindingSchema::default(),
            capability: capability.reference(),
            tenant: request
                .tenant
                .cloned()
                .or_else(|| TenantId::parse(INVOCATION_TENANT).ok())
                .unwrap_or_else(|| {
                    TenantId::parse("candidate").expect("`candidate` is a valid tenant id")
                }),
            description: String::new(),
            vars: BTreeMap::new(),
            overrides: BTreeMap::new(),
            recovery_extra: Vec::new(),
            checkpoint: None,
            policy: None,
        },
    };
    binding
        .vars
        .retain(|name, _| !request.invocation_vars.contains(&name.as_str()));
    let note = format!(
        "Candidate from assisted replay of run {}: step `{}` retargeted to {}.",
        request.failed.result.run_id,
        step.id,
        descriptor.describe()
    );
    binding.description = if binding.description.is_empty() {
        note
    } else {
        format!("{} {note}", binding.description)
    };
    let existing = binding.overrides.remove(&step.id).unwrap_or_default();
    binding.overrides.insert(
        step.id.clone(),
        StepOverride {
            target: Some(TargetOverride {
                role: None,
                name: descriptor.name.clone(),
                scope: descriptor.scope.clone(),
                anchor: descriptor.anchor.clone(),
                ordinal: descriptor.ordinal,
                identity: descriptor.identity.clone(),
                hints: Some(descriptor.hints.clone()),
                recorded_strategy: descriptor.recorded_strategy,
            }),
            precondition: precondition.or(existing.precondition),
            ..existing
        },
    );
    binding
}

/// The precondition with the recorded label replaced by the proposed one, wherever a query
/// names it exactly (`name`, `name_contains`, a text value). `None` when nothing changed.
fn relabel(
    predicate: &Predicate,
    recorded: &TargetDescriptor,
    proposed: &TargetDescriptor,
) -> Option<Predicate> {
    let mut renames = Vec::new();
    if let (Some(old), Some(new)) = (&recorded.anchor, &proposed.anchor)
        && old.text != new.text
    {
        renames.push((old.text.clone(), new.text.clone()));
    }
    if let (Some(old), Some(new)) = (&recorded.name, &proposed.name)
        && old.value != new.value
    {
        renames.push((old.value.clone(), new.value.clone()));
    }
    let mut value = serde_json::to_value(predicate).ok()?;
    let mut changed = false;
    rename_labels(&mut value, &renames, &mut changed);
    if !changed {
        return None;
    }
    serde_json::from_value(value).ok()
}

fn rename_labels(value: &mut Value, renames: &[(String, String)], changed: &mut bool) {
    match value {
        Value::Object(object) => {
            for (key, child) in object.iter_mut() {
                if matches!(key.as_str(), "name" | "name_contains" | "value" | "text")
                    && let Value::String(text) = child
                    && let Some((_, new)) = renames.iter().find(|(old, _)| old == text)
                {
                    *text = new.clone();
                    *changed = true;
                } else {
                    rename_labels(child, renames, changed);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rename_labels(item, renames, changed);
            }
        }
        _ => {}
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

fn evidence_refusal(error: cua_evidence::EvidenceError) -> Refusal {
    Refusal::new("evidence", FailureCode::Internal, error.to_string())
}
