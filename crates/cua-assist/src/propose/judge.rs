//! The refusal ladder a proposal must climb: the step's own action, a node of the screen shown with
//! the step's role, a descriptor that resolves back to it, an effective capability that still
//! validates, and the policy's grant as the agent.

use std::collections::BTreeMap;

use cua_agent::{LlmPort, ModelReply};
use cua_artifact::{
    ActionKind, Actor, Capability, FailureCode, MatchMode, NameMatch, NodeScope, Step,
    TargetDescriptor,
};
use cua_evidence::Resolve;
use cua_gate::{Gate, Request as GateRequest};
use cua_policy::{BrowserAction, Lease, ResolvedTarget, SurfaceAction};
use cua_snapshot::UiSnapshot;
use cua_surface::SurfaceDriver;
use cua_target::{BoundValues, ResolverConfig, SnapshotIndex, SynthesisConfig};
use serde_json::Value;

use super::evidence::evidence_refusal;
use super::overlay::{candidate_binding, relabel};
use super::{AssistRequest, Assistant, Candidate, Refusal, bindings};

impl<D: SurfaceDriver, L: LlmPort> Assistant<'_, D, L> {
    /// Steps 1 to 5 of the module docs; on success writes the candidate.
    pub(super) fn judge(
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
            self.policy_judgement(capability, step, request.stuck.action, resolved, lease)?;
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
    pub(super) fn check_effective(
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
    pub(super) fn policy_judgement(
        &self,
        effective: &Capability,
        step: &Step,
        action: ActionKind,
        resolved: ResolvedTarget,
        lease: &Lease,
    ) -> Result<Option<String>, Refusal> {
        let surface_action = match action {
            ActionKind::Click => SurfaceAction::Browser(BrowserAction::Click),
            // The value is bound by the executor at its dispatch; the policy's judgement does
            // not depend on it, and a secret is never resolved for a judgement.
            ActionKind::Type => SurfaceAction::Browser(BrowserAction::Type {
                text: String::new(),
                clear_first: true,
            }),
            ActionKind::Select => SurfaceAction::Browser(BrowserAction::Select {
                value: String::new(),
            }),
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
}

/// The node a tool call names: a ref from the outline shown, or a role and name.
pub(super) fn node_of(
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
