//! One tool call: a plan (validate, issue an approval request) or a run (validate, check the
//! plan approval of an irreversible capability, open a surface, replay, map the report).
//!
//! The result contract:
//!
//! * success: `{status: "success", outputs: {…}, run: {…}}`;
//! * business outcome: `{status: "business_outcome", outcome: {code, description, data},
//!   run}`, a successful result, because an answer such as "no such member" is not a failure;
//! * `failed` and `needs_human`: a tool error (`isError: true`) with `error: {code, message,
//!   step}`, the `intervention_id` when a human is needed, and `run` (the evidence);
//! * a refusal before anything ran (inputs, plan approval, policy, no surface): a tool error
//!   with `status: "refused"` and `error.code`; nothing was opened, dispatched or written.
//!
//! Results leave the process towards a calling agent, usually a model, so they are a sink like
//! any other: a run's result goes through that run's redactor (declared-sensitive names and
//! values, the policy's pattern rules).

use std::collections::BTreeMap;
use std::sync::Arc;

use cua_artifact::{RiskTier, RunStatus};
use cua_evidence::{Redactor, RunId};
use cua_replay::{
    CatalogCapabilities, RecordedEscalations, ReplayError, ReplayReport, RunRequest, RunSetup,
    RunValues, RunWiring, validate_inputs,
};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::{Value, json};

use crate::plan::{PlanBinding, input_digest};
use crate::server::{CapabilityServer, chain};
use crate::surface::SurfaceFactory;
use crate::tools::{APPROVAL_TOKEN, OfferedCapability};

/// What a caller hears of one call, and how it stops it: told of each step as the run does it,
/// and raised to stop the run before its next dispatch (an MCP client's cancellation).
#[derive(Clone, Default)]
pub struct CallHooks {
    /// Told `(steps done, what)` after each step that ended, remedies' steps included.
    pub progress: Option<Arc<dyn Fn(u32, String) + Send + Sync>>,
    pub interrupt: cua_replay::Interrupt,
}

impl std::fmt::Debug for CallHooks {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CallHooks")
            .field("progress", &self.progress.is_some())
            .field("interrupt", &self.interrupt.is_raised())
            .finish()
    }
}

/// The bus observer that counts the steps a run ends (one `effect` event each) and tells
/// `progress`; it sees event names only, never a payload.
fn step_counter(
    progress: Arc<dyn Fn(u32, String) + Send + Sync>,
) -> Arc<dyn Fn(&'static str) + Send + Sync> {
    let done = std::sync::atomic::AtomicU32::new(0);
    Arc::new(move |event: &'static str| {
        if event == "effect" {
            let count = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            progress(count, format!("{count} step(s) done"));
        }
    })
}

/// A call refused before anything ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    code: String,
    message: String,
}

impl Refusal {
    pub(crate) fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }

    /// The tool error: `{status: "refused", error: {code, message}}`.
    pub(crate) fn into_result(self, tool: &str) -> CallToolResult {
        let structured = json!({
            "status": "refused",
            "tool": tool,
            "error": {"code": self.code, "message": self.message},
        });
        error_result(format!("{}: {}", self.code, self.message), structured)
    }
}

/// A plan call: validates the inputs, checks that the capability's own approval and the
/// policy's gates would let its irreversible steps run, and issues the approval request.
pub(crate) fn plan<F: SurfaceFactory>(
    server: &CapabilityServer<F>,
    offered: &OfferedCapability,
    arguments: JsonObject,
) -> Result<CallToolResult, Refusal> {
    let shared = &server.shared;
    let inputs: BTreeMap<String, Value> = arguments.into_iter().collect();
    let values = checked_inputs(offered, &inputs)?;
    let grant = cua_policy::IrreversibleGrant::for_prepared(&offered.prepared, true);
    shared
        .policy
        .preflight_irreversible(offered.capability(), &grant)
        .map_err(|reason| {
            Refusal::new(
                "not_approved",
                format!("refused: even with a plan approval this could not run: {reason}"),
            )
        })?;
    let binding = plan_binding(server, offered, &values);
    let (token, claims) = shared.plans.issue(binding, shared.clock.now());
    let capability = offered.capability();
    let redactor = result_redactor(server, offered);
    let shown_inputs: serde_json::Map<String, Value> = values
        .inputs()
        .iter()
        .map(|(name, value)| (name.to_string(), Value::from(value.clone())))
        .collect();
    let steps: Vec<Value> = offered
        .steps
        .iter()
        .map(|step| {
            json!({
                "step": step.step,
                "action": step.action,
                "description": step.description,
                "risk": step.tier.as_str(),
                "reason": step.reason,
            })
        })
        .collect();
    let irreversible: Vec<&str> = offered
        .steps
        .iter()
        .filter(|step| step.tier == RiskTier::Irreversible)
        .map(|step| step.step.as_str())
        .collect();
    let outcomes: Vec<Value> = capability
        .outcomes
        .iter()
        .map(|outcome| json!({"code": outcome.code.as_str(), "description": outcome.description}))
        .collect();
    let next = format!(
        "Show this plan to the person you act for. Only if they approve it, call {} with \
         exactly these inputs and approval_token before {}. The token runs once; any other \
         inputs need a new plan.",
        offered.name, claims.expires_at
    );
    let structured = json!({
        "status": "plan",
        "tool": offered.name,
        "capability": offered.reference.to_string(),
        "approval_request": {
            "approval_token": token,
            "plan_id": claims.plan_id,
            "artifact_hash": claims.binding.artifact_hash,
            "overlay_hash": claims.binding.overlay_hash,
            "input_digest": claims.binding.input_digest,
            "tenant": claims.binding.tenant,
            "expires_at": claims.expires_at.to_string(),
            "single_use": true,
        },
        "inputs": redactor.redact_json(&Value::Object(shown_inputs)),
        "steps": steps,
        "irreversible_steps": irreversible,
        "outcomes": outcomes,
        "next": next,
    });
    let summary = format!(
        "Plan for {} (irreversible steps: {}); approval request {} expires at {}. {next}",
        offered.reference,
        irreversible.join(", "),
        claims.plan_id,
        claims.expires_at
    );
    Ok(success_result(summary, structured))
}

/// A run call: inputs, then (irreversible) the plan approval, then a surface, then the replay.
pub(crate) async fn run<F: SurfaceFactory>(
    server: &CapabilityServer<F>,
    offered: &OfferedCapability,
    arguments: JsonObject,
    hooks: &CallHooks,
) -> Result<CallToolResult, Refusal> {
    let shared = &server.shared;
    let mut inputs: BTreeMap<String, Value> = arguments.into_iter().collect();
    let token = if offered.needs_plan() {
        match inputs.remove(APPROVAL_TOKEN) {
            None | Some(Value::Null) => None,
            Some(Value::String(token)) => Some(token),
            Some(_) => {
                return Err(Refusal::new(
                    "plan_approval_invalid",
                    format!("refused: {APPROVAL_TOKEN} must be the string the plan returned"),
                ));
            }
        }
    } else {
        None
    };
    let values = checked_inputs(offered, &inputs)?;
    let plan = if offered.needs_plan() {
        let binding = plan_binding(server, offered, &values);
        let claims = shared
            .plans
            .verify(token.as_deref(), &binding, shared.clock.now())
            .map_err(|refusal| {
                Refusal::new(refusal.code(), refusal.message(&offered.plan_tool_name()))
            })?;
        Some(claims)
    } else {
        None
    };
    let engine = shared
        .policy
        .for_capability(offered.capability())
        .map_err(|error| {
            Refusal::new(
                "policy_denied",
                format!("refused: the capability's allowed domains: {error}"),
            )
        })?;
    let surface = shared
        .factory
        .open(engine.allowlist().clone())
        .await
        .map_err(|unavailable| Refusal::new(unavailable.code, unavailable.message))?;
    if let Some(claims) = &plan
        && let Err(refusal) = shared.plans.spend(claims, shared.clock.now())
    {
        shared.factory.close(surface).await;
        return Err(Refusal::new(
            refusal.code(),
            refusal.message(&offered.plan_tool_name()),
        ));
    }
    let outcome = replay(server, offered, &surface, inputs, plan.is_some(), hooks).await;
    shared.factory.close(surface).await;
    outcome
}

/// Runs the replay on `surface` into a fresh run directory and maps its report.
async fn replay<F: SurfaceFactory>(
    server: &CapabilityServer<F>,
    offered: &OfferedCapability,
    surface: &F::Surface,
    inputs: BTreeMap<String, Value>,
    allow_irreversible: bool,
    hooks: &CallHooks,
) -> Result<CallToolResult, Refusal> {
    let shared = &server.shared;
    let config = &shared.config;
    let internal = |code: &str, error: &dyn std::error::Error| Refusal::new(code, chain(error));
    let run_id =
        RunId::parse(&server.next_run_id()).map_err(|error| internal("internal", &error))?;
    let wiring = RunWiring::open(RunSetup {
        wall_clock: Arc::clone(&shared.clock),
        observer: hooks
            .progress
            .clone()
            .map(|progress| step_counter(progress)),
        ..RunSetup::new(
            &config.evidence_dir,
            run_id,
            &config.policy,
            config.environment.iter().cloned().collect(),
        )
    })
    .map_err(|error| match error {
        cua_evidence::EvidenceError::InvalidRedactionRule { .. } => internal("internal", &error),
        _ => internal("evidence_unwritable", &error),
    })?;
    let bus = wiring.bus();
    let escalations = RecordedEscalations::new();
    // Remedies come from the same catalog, bound like the run (the server's tenant when it has
    // a binding for the remedy, the same origin), with their approvals.
    let loader = CatalogCapabilities::new(
        shared.catalog.clone(),
        config.tenant.clone(),
        config.base_url.clone(),
    );
    // This call's own stop flag: a cancelled call stops its run, and no other.
    let replay_config = cua_replay::ReplayConfig {
        interrupt: hooks.interrupt.clone(),
        ..config.replay.clone()
    };
    let replayer = wiring.replayer(
        surface,
        &shared.policy,
        &loader,
        &escalations,
        replay_config,
    );
    let mut request = RunRequest::new(offered.prepared.clone(), inputs);
    request.tenant = config.tenant.clone();
    request.allow_irreversible = allow_irreversible;
    match replayer.run(request).await {
        Ok(report) => Ok(report_result(offered, &report, bus.redactor())),
        Err(error) => {
            let code = match error {
                ReplayError::Evidence(_) => "evidence_unwritable",
                _ => "refused",
            };
            Err(Refusal::new(
                code,
                format!("{}; evidence: {}", chain(&error), bus.dir().display()),
            ))
        }
    }
}

/// Maps a finished run to the tool result (see the module documentation).
fn report_result(
    offered: &OfferedCapability,
    report: &ReplayReport,
    redactor: &Redactor,
) -> CallToolResult {
    let result = &report.result;
    let run = json!({
        "run_id": result.run_id,
        "capability": offered.reference.to_string(),
        "content_hash": offered.artifact_hash(),
        "evidence": report.evidence_dir.display().to_string(),
        "effect": report.effect.as_str(),
        "duration_ms": result.duration_ms,
    });
    let reference = &offered.reference;
    match result.status {
        RunStatus::Success => {
            let structured = redactor.redact_json(&json!({
                "status": "success",
                "outputs": result.outputs,
                "run": run,
            }));
            let outputs: Vec<String> = structured["outputs"]
                .as_object()
                .map(|outputs| {
                    outputs
                        .iter()
                        .map(|(name, value)| format!("{name}={}", plain(value)))
                        .collect()
                })
                .unwrap_or_default();
            success_result(
                format!("{reference}: success; {}", outputs.join(", ")),
                structured,
            )
        }
        RunStatus::BusinessOutcome => {
            let (code, data) = result.outcome.as_ref().map_or_else(
                || (String::new(), BTreeMap::new()),
                |outcome| (outcome.code.to_string(), outcome.data.clone()),
            );
            let description = offered
                .capability()
                .outcome(&code)
                .map(|outcome| outcome.description.clone())
                .unwrap_or_default();
            let structured = redactor.redact_json(&json!({
                "status": "business_outcome",
                "outcome": {"code": code, "description": description, "data": data},
                "run": run,
            }));
            success_result(
                format!(
                    "{reference}: business outcome {code} (not an error): {}",
                    description.split_whitespace().collect::<Vec<_>>().join(" ")
                ),
                structured,
            )
        }
        RunStatus::Failed | RunStatus::NeedsHuman => {
            let (code, message, step) = result.error.as_ref().map_or_else(
                || ("internal".to_owned(), String::new(), None),
                |error| {
                    (
                        error.code.as_str().to_owned(),
                        error.message.clone(),
                        error.step_id.as_ref().map(ToString::to_string),
                    )
                },
            );
            let intervention = result
                .intervention
                .as_ref()
                .map(|intervention| intervention.intervention_id.clone());
            let structured = redactor.redact_json(&json!({
                "status": result.status.as_str(),
                "error": {"code": code, "message": message, "step": step},
                "intervention_id": intervention,
                "run": run,
            }));
            let mut text = format!(
                "{reference}: {} with {code}{}: {}",
                result.status.as_str(),
                step.as_ref()
                    .map(|step| format!(" at step {step}"))
                    .unwrap_or_default(),
                structured["error"]["message"].as_str().unwrap_or_default()
            );
            if let Some(intervention) = &intervention {
                text.push_str(&format!("; intervention {intervention}"));
            }
            text.push_str(&format!(
                "; evidence {}",
                structured["run"]["evidence"].as_str().unwrap_or_default()
            ));
            error_result(text, structured)
        }
    }
}

/// Validates the inputs as the replay will, before anything is opened.
fn checked_inputs(
    offered: &OfferedCapability,
    inputs: &BTreeMap<String, Value>,
) -> Result<RunValues, Refusal> {
    validate_inputs(offered.capability(), inputs).map_err(|problems| {
        let problems: Vec<String> = problems
            .iter()
            .map(|problem| format!("{}: {}", problem.input, problem.message))
            .collect();
        Refusal::new(
            "input_validation_failed",
            format!("refused before anything ran: {}", problems.join("; ")),
        )
    })
}

/// What a plan approval for these inputs is bound to, recomputed from the catalog.
fn plan_binding<F: SurfaceFactory>(
    server: &CapabilityServer<F>,
    offered: &OfferedCapability,
    values: &RunValues,
) -> PlanBinding {
    PlanBinding {
        tool: offered.name.clone(),
        capability: offered.reference.to_string(),
        artifact_hash: offered.artifact_hash(),
        overlay_hash: offered.overlay_hash.clone(),
        input_digest: input_digest(values.inputs()),
        tenant: server
            .shared
            .config
            .tenant
            .as_ref()
            .map(ToString::to_string),
    }
}

/// A redactor for results that did not come from a run: the policy's rules and the
/// capability's sensitive names.
fn result_redactor<F: SurfaceFactory>(
    server: &CapabilityServer<F>,
    offered: &OfferedCapability,
) -> Redactor {
    let redactor = Redactor::from_policy(&server.shared.config.policy.redaction)
        .expect("the redaction rules were checked when the server started");
    redactor.add_sensitive_keys(
        offered
            .capability()
            .sensitive_names()
            .into_iter()
            .map(str::to_owned),
    );
    redactor
}

fn success_result(summary: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::structured(structured);
    result.content.insert(0, ContentBlock::text(summary));
    result
}

fn error_result(summary: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::structured_error(structured);
    result.content.insert(0, ContentBlock::text(summary));
    result
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
