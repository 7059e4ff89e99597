//! One tool call turned into an action: the target resolved on the current observation (a ref
//! synthesized into a descriptor first), the value bound, the gate passed as `agent`, and the
//! answer the model reads.

use std::collections::BTreeMap;

use cua_artifact::{Actor, Identifier};
use cua_evidence::{Resolve, SecretResolver};
use cua_gate::{Gate, Passed, Request};
use cua_policy::{BrowserAction, ResolvedTarget, SurfaceAction};
use cua_surface::SurfaceDriver;
use cua_target::{
    BoundValues, ResolverConfig, SnapshotIndex, SynthesisConfig, cell_text, resolve_with,
    synthesize_with,
};
use serde_json::{Value, json};

use crate::error::AgentError;
use crate::llm::{LlmPort, ToolCall};
use crate::tools::{AgentAction, TargetSpec, TypedValue, parse};

use super::{ACTION_NOTE, Discovery, DiscoveryReport, Passage, Refusal, Session, StopReason};

impl<D: SurfaceDriver, L: LlmPort> Discovery<'_, D, L> {
    /// One tool call: parse, act, record. Returns the text answered to the model and, when the
    /// run ends here, why.
    pub(super) async fn step(
        &self,
        session: &mut Session,
        report: &mut DiscoveryReport,
        call: &ToolCall,
        step: u32,
        latency_ms: u64,
        refusals_in_a_row: &mut u32,
    ) -> Result<(String, Option<StopReason>), AgentError> {
        let mut data = serde_json::Map::new();
        data.insert("step".into(), json!(step));
        data.insert("tool".into(), json!(call.name));
        data.insert("model_latency_ms".into(), json!(latency_ms));
        if let Some(reference) = &session.snapshot_ref {
            data.insert("snapshot_ref".into(), json!(reference));
        }
        let (action, why) = match parse(&call.name, &call.arguments) {
            Ok(parsed) => parsed,
            Err(reason) => {
                data.insert("outcome".into(), json!("invalid"));
                data.insert("reason".into(), json!(reason));
                self.note(ACTION_NOTE, Value::Object(data))?;
                return Ok((format!("invalid tool call: {reason}"), None));
            }
        };
        if !why.is_empty() {
            data.insert("why".into(), json!(why));
        }
        let mut stop = None;
        let result = match action {
            AgentAction::Observe { expand } => {
                if let Some(table) = expand
                    .as_deref()
                    .and_then(|reference| session.outline.as_ref()?.node(reference))
                {
                    session.expanded.insert(table);
                }
                self.observe(session, "observe").await?;
                data.insert("outcome".into(), json!("observed"));
                "observed; the current screen follows".to_owned()
            }
            AgentAction::Finish { summary, gave_up } => {
                data.insert("outcome".into(), json!("finished"));
                data.insert("gave_up".into(), json!(gave_up));
                report.summary = Some(self.bus.redactor().redact_text(&summary));
                stop = Some(if gave_up {
                    StopReason::GaveUp
                } else {
                    StopReason::GoalMet
                });
                "finished".to_owned()
            }
            AgentAction::Extract { target, into } => match self.resolve(session, &target, None)? {
                Ok((node, descriptor)) => {
                    let text = cell_text(&session.snapshot, node);
                    data.insert("outcome".into(), json!("extracted"));
                    data.insert(
                        "node_id".into(),
                        json!(session.snapshot.nodes[node].id.as_str()),
                    );
                    data.insert("target".into(), descriptor);
                    data.insert("into".into(), json!(into.as_str()));
                    data.insert("extracted".into(), json!(text));
                    report.steps_effective += 1;
                    report
                        .outputs
                        .insert(into.to_string(), self.bus.redactor().redact_text(&text));
                    *refusals_in_a_row = 0;
                    format!("extracted {into} = {text:?}")
                }
                Err(reason) => {
                    data.insert("outcome".into(), json!("failed"));
                    data.insert("reason".into(), json!(reason));
                    format!("could not extract: {reason}")
                }
            },
            surface_action => {
                let (spec, action, typed) = match surface_action_parts(surface_action) {
                    Ok(prepared) => prepared,
                    Err(reason) => {
                        data.insert("outcome".into(), json!("invalid"));
                        data.insert("reason".into(), json!(reason));
                        self.note(ACTION_NOTE, Value::Object(data))?;
                        return Ok((format!("invalid tool call: {reason}"), None));
                    }
                };
                if let Some(typed) = &typed {
                    data.insert("value".into(), typed.evidence());
                }
                match &action {
                    SurfaceAction::Browser(BrowserAction::Select { value }) => {
                        data.insert("option".into(), json!(value));
                    }
                    SurfaceAction::Browser(BrowserAction::PressKey { key }) => {
                        data.insert("key".into(), json!(key));
                    }
                    SurfaceAction::Browser(BrowserAction::Navigate { url }) => {
                        data.insert("url".into(), json!(url));
                    }
                    _ => {}
                }
                let action = match (action, typed) {
                    (
                        SurfaceAction::Browser(BrowserAction::Type { clear_first, .. }),
                        Some(typed),
                    ) => match bind(self.secrets, &typed, &session.sensitive) {
                        Ok(text) => {
                            SurfaceAction::Browser(BrowserAction::Type { text, clear_first })
                        }
                        Err(reason) => {
                            data.insert("outcome".into(), json!("invalid"));
                            data.insert("reason".into(), json!(reason));
                            self.note(ACTION_NOTE, Value::Object(data))?;
                            return Ok((format!("invalid tool call: {reason}"), None));
                        }
                    },
                    (action, _) => action,
                };
                match self.chokepoint(session, spec, action, None).await? {
                    Passage::Dispatched {
                        decision_id,
                        node_id,
                        descriptor,
                        navigated,
                    } => {
                        data.insert("outcome".into(), json!("dispatched"));
                        data.insert("decision_id".into(), json!(decision_id));
                        if let Some(node_id) = node_id {
                            data.insert("node_id".into(), json!(node_id));
                        }
                        if let Some(descriptor) = descriptor {
                            data.insert("target".into(), descriptor);
                        }
                        data.insert("navigated".into(), json!(navigated));
                        self.note(ACTION_NOTE, Value::Object(data))?;
                        self.settle(session, &call.name).await?;
                        report.steps_effective += 1;
                        *refusals_in_a_row = 0;
                        return Ok((
                            if navigated {
                                "done; the page navigated"
                            } else {
                                "done"
                            }
                            .to_owned(),
                            None,
                        ));
                    }
                    Passage::Refused {
                        decision_id,
                        code,
                        reason,
                        node_id,
                        descriptor,
                    } => {
                        data.insert("outcome".into(), json!("refused"));
                        data.insert("decision_id".into(), json!(decision_id));
                        data.insert("reason".into(), json!(reason));
                        if let Some(node_id) = node_id {
                            data.insert("node_id".into(), json!(node_id));
                        }
                        if let Some(descriptor) = descriptor {
                            data.insert("target".into(), descriptor);
                        }
                        report.refusals.push(Refusal {
                            step,
                            tool: call.name.clone(),
                            decision_id,
                            code: code.clone(),
                            reason: reason.clone(),
                        });
                        *refusals_in_a_row += 1;
                        format!("REFUSED by policy ({code}): {reason}. Nothing was done.")
                    }
                    Passage::Failed { reason } => {
                        data.insert("outcome".into(), json!("failed"));
                        data.insert("reason".into(), json!(reason));
                        format!("failed: {reason}. Nothing was done.")
                    }
                }
            }
        };
        self.note(ACTION_NOTE, Value::Object(data))?;
        Ok((result, stop))
    }

    /// Resolves the target, then passes the gate as the agent: nothing reaches the surface that
    /// the policy engine did not grant. Discovery's lease is its own run's; the gate reads it
    /// again at the dispatch as for every actor, so a discovery session an operator could take
    /// over needs only a shared lease here.
    pub(super) async fn chokepoint(
        &self,
        session: &mut Session,
        target: Option<TargetSpec>,
        action: SurfaceAction,
        declared_risk: Option<cua_artifact::RiskTier>,
    ) -> Result<Passage, AgentError> {
        let (resolved, node_id, descriptor) = match &target {
            None => (None, None, None),
            Some(spec) => match self.resolve(session, spec, None)? {
                Ok((node, descriptor)) => {
                    let found = &session.snapshot.nodes[node];
                    (
                        Some(ResolvedTarget {
                            node_id: found.id.clone(),
                            role: found.role.clone(),
                            name: found.name.clone(),
                        }),
                        Some(found.id.to_string()),
                        Some(descriptor),
                    )
                }
                Err(reason) => return Ok(Passage::Failed { reason }),
            },
        };
        let request = Request {
            target: resolved,
            declared_risk,
            ..Request::new(Actor::Agent, session.lease.epoch, action)
        };
        let lease = || session.lease;
        let gate = Gate::new(self.policy, Some(self.bus), &lease);
        let passed = gate
            .pass(
                request,
                |authorized| self.driver.dispatch(authorized),
                || self.driver.take_blocked_requests(),
            )
            .await?;
        let Passed { ticket, outcome } = match passed {
            Ok(passed) => passed,
            Err(refusal) => {
                let (decision_id, code, reason) = match refusal {
                    cua_gate::Refusal::Denied { denial, .. } => {
                        (denial.decision_id, denial.code.as_str(), denial.reason)
                    }
                    cua_gate::Refusal::Withheld {
                        decision_id, why, ..
                    } => (decision_id, "policy_denied", why.reason().to_owned()),
                    cua_gate::Refusal::Stale {
                        decision_id, lease, ..
                    } => (
                        decision_id,
                        "lease_lost",
                        format!(
                            "the session moved to epoch {} before the action was dispatched",
                            lease.epoch
                        ),
                    ),
                };
                return Ok(Passage::Refused {
                    decision_id,
                    code: code.to_owned(),
                    reason,
                    node_id,
                    descriptor,
                });
            }
        };
        let decision_id = ticket.decision_id;
        let dispatched = outcome;
        let navigated = dispatched.as_ref().is_ok_and(|receipt| receipt.navigated);
        let message = dispatched
            .as_ref()
            .map_or_else(ToString::to_string, |receipt| receipt.message.clone());
        match dispatched {
            Ok(receipt) if receipt.ok => Ok(Passage::Dispatched {
                decision_id,
                node_id,
                descriptor,
                navigated,
            }),
            Ok(_) => Ok(Passage::Failed {
                reason: format!("the surface did not perform the action: {message}"),
            }),
            Err(cua_surface::SurfaceError::Unavailable { reason }) => {
                Err(AgentError::Surface { reason })
            }
            Err(error) => Ok(Passage::Failed {
                reason: error.to_string(),
            }),
        }
    }

    /// Resolves a target on the current observation and records the `resolve` event. A ref is
    /// first turned into a synthesized descriptor (verified by resolving back). The inner
    /// result's error is the text answered to the model.
    pub(super) fn resolve(
        &self,
        session: &Session,
        spec: &TargetSpec,
        step: Option<Identifier>,
    ) -> Result<Result<(usize, Value), String>, AgentError> {
        let index = SnapshotIndex::new(&session.snapshot);
        let descriptor = match spec {
            TargetSpec::Described(descriptor) => (**descriptor).clone(),
            TargetSpec::Ref(reference) => {
                let Some(node) = session
                    .outline
                    .as_ref()
                    .and_then(|outline| outline.node(reference))
                else {
                    return Ok(Err(format!(
                        "{reference} is not a ref on the current screen"
                    )));
                };
                match synthesize_with(&index, node, &SynthesisConfig::default()) {
                    Ok(synthesized) => synthesized.descriptor,
                    Err(error) => return Ok(Err(error.to_string())),
                }
            }
        };
        let described = descriptor.describe();
        let bindings = BoundValues::new();
        match resolve_with(&index, &descriptor, &bindings, &ResolverConfig::DISCOVERY) {
            Ok(resolution) => {
                self.bus.emit(
                    Actor::Agent,
                    session.lease.epoch,
                    Resolve {
                        step,
                        target: described,
                        resolved: true,
                        node_id: Some(resolution.node_id.clone()),
                        strategy: Some(resolution.strategy),
                        strategy_recorded: resolution.recorded_strategy,
                        candidates_considered: resolution.candidates_considered,
                        identity_verified: resolution.identity_verified.then_some(true),
                        ..Resolve::default()
                    },
                )?;
                let mut recorded = descriptor;
                recorded.recorded_strategy = Some(resolution.strategy);
                let value =
                    serde_json::to_value(&recorded).map_err(|error| AgentError::Surface {
                        reason: format!("a descriptor did not serialize: {error}"),
                    })?;
                Ok(Ok((resolution.node, value)))
            }
            Err(error) => {
                self.bus.emit(
                    Actor::Agent,
                    session.lease.epoch,
                    Resolve {
                        step,
                        target: described,
                        resolved: false,
                        failure_code: Some(error.failure_code()),
                        reason: Some(error.to_string()),
                        ..Resolve::default()
                    },
                )?;
                Ok(Err(error.to_string()))
            }
        }
    }
}

/// Splits a surface-touching action into its target, the action to authorize, and the value to
/// bind at dispatch.
pub(super) fn surface_action_parts(
    action: AgentAction,
) -> Result<(Option<TargetSpec>, SurfaceAction, Option<TypedValue>), String> {
    Ok(match action {
        AgentAction::Click { target } => (
            Some(target),
            SurfaceAction::Browser(BrowserAction::Click),
            None,
        ),
        AgentAction::Type { target, text } => (
            Some(target),
            SurfaceAction::Browser(BrowserAction::Type {
                text: String::new(),
                clear_first: true,
            }),
            Some(text),
        ),
        AgentAction::Select { target, option } => (
            Some(target),
            SurfaceAction::Browser(BrowserAction::Select { value: option }),
            None,
        ),
        AgentAction::PressKey { key, target } => (
            target,
            SurfaceAction::Browser(BrowserAction::PressKey { key }),
            None,
        ),
        AgentAction::Navigate { url } => (
            None,
            SurfaceAction::Browser(BrowserAction::Navigate { url }),
            None,
        ),
        other => return Err(format!("`{}` does not act on the surface", other.tool())),
    })
}

/// The text a typed value stands for, bound at the last moment: a secret from the resolver
/// (which registers it with the redactor first), a sensitive input from the run.
pub(super) fn bind(
    secrets: &SecretResolver,
    value: &TypedValue,
    sensitive: &BTreeMap<Identifier, String>,
) -> Result<String, String> {
    match value {
        TypedValue::Literal(text) => Ok(text.clone()),
        TypedValue::Secret(name) => secrets
            .resolve(name)
            .map(|secret| secret.expose().to_owned())
            .map_err(|error| error.to_string()),
        TypedValue::Input(name) => sensitive
            .get(name)
            .cloned()
            .ok_or_else(|| format!("`{{$input: {name}}}` is not an input of this run")),
    }
}
