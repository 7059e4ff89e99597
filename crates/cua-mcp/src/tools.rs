//! The tool list: which catalog capabilities are offered, under which names, with which input
//! and output schemas, annotations and descriptions, and why the others are withheld.
//!
//! A capability is offered when it is sealed, its approval covers its recomputed hash (for the
//! server's tenant, through the catalog's carry-over rules), and it binds with the server's
//! `base_url` and tenant overlay. Its tool name is its id with `.` → `_`; when several versions
//! are approved, the highest keeps that name and the others add `_v<version>`.
//!
//! Annotations come from the risk the policy assesses for each step (the declared tier, the
//! action type, and the target's name against the lexicon): `readOnlyHint` when every step is
//! safe, `destructiveHint` when any step is irreversible, `idempotentHint` for reads (they have
//! no effect to repeat), `openWorldHint: false` (a capability reaches only its allowlisted
//! application). An irreversible capability is offered as two tools: `<name>__plan`, which
//! changes nothing and returns an approval request, and `<name>`, which runs only with that
//! approval's token (see [`crate::plan`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use cua_artifact::{Capability, CapabilityRef, RiskTier, TenantId, ValueType};
use cua_catalog::{ApprovalAnswer, Catalog, Integrity};
use cua_policy::{PolicyEngine, ResolvedTarget};
use cua_replay::PreparedCapability;
use cua_snapshot::NodeId;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::error::McpError;
use crate::plan::overlay_hash;

/// The argument of a run tool that carries the plan approval.
pub const APPROVAL_TOKEN: &str = "approval_token";

/// The suffix of an irreversible capability's plan tool.
pub const PLAN_SUFFIX: &str = "__plan";

/// Which of a capability's tools a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Runs the capability.
    Run,
    /// Plans an irreversible capability's run and issues its approval request.
    Plan,
}

/// The risk the policy assesses for one step before anything runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRisk {
    pub step: String,
    pub action: &'static str,
    pub description: String,
    pub tier: RiskTier,
    /// e.g. `irreversible (lexicon:"transfer funds", declared:irreversible)`.
    pub reason: String,
}

/// A capability offered as a tool.
#[derive(Debug, Clone)]
pub struct OfferedCapability {
    /// The run tool's name.
    pub name: String,
    pub reference: CapabilityRef,
    /// The sealed capability in the catalog.
    pub base: Capability,
    /// The capability bound for this server (tenant overlay and `base_url`), with its approval.
    pub prepared: PreparedCapability,
    /// The highest assessed step risk.
    pub risk: RiskTier,
    pub steps: Vec<StepRisk>,
    pub approval: ApprovalAnswer,
    /// The hash of the overlay the capability runs through, if any.
    pub overlay_hash: Option<String>,
}

/// A capability in the catalog that is not offered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    /// `id@version`, or the file name when it is not one.
    pub capability: String,
    /// The tool name it would have had, when it has an id.
    pub name: Option<String>,
    pub reason: String,
}

/// What the catalog offers right now.
#[derive(Debug, Clone, Default)]
pub struct ToolSet {
    /// Ordered by run tool name.
    pub offered: Vec<OfferedCapability>,
    pub withheld: Vec<Withheld>,
}

/// Where the tool set is read from and what it is bound with.
#[derive(Debug, Clone, Copy)]
pub struct ToolSetSource<'a> {
    pub catalog: &'a Catalog,
    pub policy: &'a PolicyEngine,
    pub tenant: Option<&'a TenantId>,
    pub base_url: Option<&'a str>,
}

impl ToolSet {
    /// Reads the catalog and decides, for each artifact, whether it is offered.
    pub fn build(source: ToolSetSource<'_>) -> Result<Self, McpError> {
        let entries = source.catalog.list().map_err(McpError::Catalog)?;
        let mut set = ToolSet::default();
        let mut offered: Vec<OfferedCapability> = Vec::new();
        for entry in entries {
            let display = entry.display_name();
            let withhold = |set: &mut ToolSet, name: Option<String>, reason: String| {
                set.withheld.push(Withheld {
                    capability: display.clone(),
                    name,
                    reason,
                });
            };
            let (Some(reference), Some(base)) = (entry.reference.clone(), entry.capability.clone())
            else {
                let reason = match &entry.integrity {
                    Integrity::Invalid { reason } => format!("invalid: {reason}"),
                    _ => "the file name is not `<id>@<version>.yaml`".to_owned(),
                };
                withhold(&mut set, None, reason);
                continue;
            };
            let name = base_name(&reference);
            match &entry.integrity {
                Integrity::Sealed { .. } => {}
                Integrity::Draft { .. } => {
                    withhold(
                        &mut set,
                        Some(name),
                        "an unsealed draft; only sealed, approved capabilities are tools"
                            .to_owned(),
                    );
                    continue;
                }
                Integrity::Tampered { declared, computed } => {
                    withhold(
                        &mut set,
                        Some(name),
                        format!("TAMPERED: declared {declared}, computed {computed}"),
                    );
                    continue;
                }
                Integrity::Invalid { reason } => {
                    withhold(&mut set, Some(name), format!("invalid: {reason}"));
                    continue;
                }
            }
            let approval = match source.catalog.approval_for(&reference, source.tenant) {
                Ok(approval) => approval,
                Err(error) => {
                    withhold(
                        &mut set,
                        Some(name),
                        format!("approval unreadable: {error}"),
                    );
                    continue;
                }
            };
            if !approval.approved {
                withhold(
                    &mut set,
                    Some(name),
                    format!("not approved: {}", approval.reason),
                );
                continue;
            }
            let binding = match source.tenant {
                Some(tenant) => match source.catalog.binding(tenant, &reference) {
                    Ok(binding) => binding,
                    Err(error) => {
                        withhold(&mut set, Some(name), format!("tenant binding: {error}"));
                        continue;
                    }
                },
                None => None,
            };
            // The tenant's own approval when it has one, as the answer above judged.
            let record = match source.catalog.approval_record(&reference, source.tenant) {
                Ok(record) => record,
                Err(error) => {
                    withhold(
                        &mut set,
                        Some(name),
                        format!("approval unreadable: {error}"),
                    );
                    continue;
                }
            };
            let prepared =
                match PreparedCapability::bind(base.clone(), binding, source.base_url, record) {
                    Ok(prepared) => prepared,
                    Err(error) => {
                        withhold(&mut set, Some(name), format!("does not bind: {error}"));
                        continue;
                    }
                };
            if let Some(placeholder) = placeholder(&prepared.capability.entrypoint.url) {
                withhold(
                    &mut set,
                    Some(name),
                    format!(
                        "its entrypoint {} needs {{{placeholder}}}: start the server with \
                         --base-url or a tenant whose binding sets it",
                        prepared.capability.entrypoint.url
                    ),
                );
                continue;
            }
            let steps = assess_steps(source.policy, &prepared.capability);
            let risk = steps.iter().map(|step| step.tier).max().unwrap_or_default();
            let overlay_hash = prepared
                .overlay
                .as_ref()
                .map(|overlay| overlay_hash(&overlay.binding));
            offered.push(OfferedCapability {
                name,
                reference,
                base,
                prepared,
                risk,
                steps,
                approval,
                overlay_hash,
            });
        }
        name_versions(&mut offered);
        refuse_collisions(&mut offered, &mut set.withheld);
        offered.sort_by(|left, right| left.name.cmp(&right.name));
        set.offered = offered;
        Ok(set)
    }

    /// Every tool, run and plan, ordered by name.
    pub fn tools(&self, plan_ttl: Duration) -> Vec<Tool> {
        let mut tools: Vec<Tool> = self
            .offered
            .iter()
            .flat_map(|offered| {
                let plan = offered.needs_plan().then(|| offered.plan_tool(plan_ttl));
                std::iter::once(offered.run_tool(plan_ttl)).chain(plan)
            })
            .collect();
        tools.sort_by(|left, right| left.name.cmp(&right.name));
        tools
    }

    /// The offered capability a tool name calls, and which of its tools it is.
    pub fn find(&self, name: &str) -> Option<(ToolKind, &OfferedCapability)> {
        self.offered.iter().find_map(|offered| {
            if offered.name == name {
                Some((ToolKind::Run, offered))
            } else if offered.needs_plan() && offered.plan_tool_name() == name {
                Some((ToolKind::Plan, offered))
            } else {
                None
            }
        })
    }

    /// The withheld capability a tool name would have called.
    pub fn withheld_as(&self, name: &str) -> Option<&Withheld> {
        let name = name.strip_suffix(PLAN_SUFFIX).unwrap_or(name);
        self.withheld
            .iter()
            .find(|withheld| withheld.name.as_deref() == Some(name))
    }
}

impl OfferedCapability {
    /// Whether a run needs a plan approval: some step is irreversible.
    pub fn needs_plan(&self) -> bool {
        self.risk == RiskTier::Irreversible
    }

    /// The companion plan tool's name.
    pub fn plan_tool_name(&self) -> String {
        format!("{}{PLAN_SUFFIX}", self.name)
    }

    /// The effective capability a run executes.
    pub fn capability(&self) -> &Capability {
        &self.prepared.capability
    }

    /// The sealed hash of the catalog artifact.
    pub fn artifact_hash(&self) -> String {
        self.base
            .content_hash
            .as_ref()
            .map_or_else(|| self.base.compute_hash().to_string(), ToString::to_string)
    }

    /// Whether every step is safe: nothing is created, changed or posted.
    pub fn read_only(&self) -> bool {
        self.risk == RiskTier::Safe
    }

    /// The run tool.
    pub fn run_tool(&self, plan_ttl: Duration) -> Tool {
        let capability = self.capability();
        let mut input = object(&capability.tool_schema()["input_schema"]);
        if self.needs_plan() {
            if let Some(Value::Object(properties)) = input.get_mut("properties") {
                properties.insert(
                    APPROVAL_TOKEN.to_owned(),
                    json!({
                        "type": "string",
                        "description": format!(
                            "The approval_token {} returned for exactly these inputs. Valid for \
                             {} and for one run.",
                            self.plan_tool_name(),
                            human_duration(plan_ttl)
                        ),
                    }),
                );
            }
            if let Some(Value::Array(required)) = input.get_mut("required") {
                required.push(Value::from(APPROVAL_TOKEN));
            }
        }
        let annotations = ToolAnnotations::with_title(capability.title.clone())
            .read_only(self.read_only())
            .destructive(self.needs_plan())
            .idempotent(self.read_only())
            .open_world(false);
        Tool::new(self.name.clone(), self.run_description(plan_ttl), input)
            .with_title(capability.title.clone())
            .with_raw_output_schema(Arc::new(object(&self.run_output_schema())))
            .with_annotations(annotations)
    }

    /// The plan tool of an irreversible capability.
    pub fn plan_tool(&self, plan_ttl: Duration) -> Tool {
        let capability = self.capability();
        let input = object(&capability.tool_schema()["input_schema"]);
        let title = format!("Plan: {}", capability.title);
        let annotations = ToolAnnotations::with_title(title.clone())
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false);
        Tool::new(
            self.plan_tool_name(),
            self.plan_description(plan_ttl),
            input,
        )
        .with_title(title)
        .with_raw_output_schema(Arc::new(object(&plan_output_schema())))
        .with_annotations(annotations)
    }

    /// The run tool's description, written for the calling agent.
    fn run_description(&self, plan_ttl: Duration) -> String {
        let capability = self.capability();
        let mut text = String::new();
        text.push_str(capability.title.trim_end_matches('.'));
        text.push_str(".\n\n");
        if !capability.description.is_empty() {
            text.push_str(capability.description.trim());
            text.push_str("\n\n");
        }
        if capability.outputs.is_empty() {
            text.push_str("On success the result has status \"success\" and no outputs.\n");
        } else {
            text.push_str("On success the result has status \"success\" and `outputs`:\n");
            for output in &capability.outputs {
                text.push_str(&format!(
                    "- {} ({}){}\n",
                    output.name,
                    type_phrase(output.value_type),
                    sentence(&output.description)
                ));
            }
        }
        if !capability.outcomes.is_empty() {
            text.push_str(
                "\nBusiness outcomes are answers, not errors: the result has status \
                 \"business_outcome\" and `outcome.code`, one of:\n",
            );
            for outcome in &capability.outcomes {
                text.push_str(&format!(
                    "- {}{}\n",
                    outcome.code,
                    sentence(&outcome.description)
                ));
            }
        }
        text.push_str(
            "\nA failure is a tool error (isError) carrying `error.code` (e.g. \
             input_validation_failed, target_not_found, checkpoint_failed), the run id and the \
             evidence directory; `needs_human` also carries the intervention id an operator \
             resolves. Do not retry a failure blindly.\n\n",
        );
        text.push_str(&self.risk_paragraph(plan_ttl));
        text.push_str(&format!(
            "\n\nCapability {}; {}. Replayed deterministically in a browser with no model call; \
             every call leaves evidence.",
            self.reference, self.approval.reason
        ));
        text
    }

    /// The plan tool's description.
    fn plan_description(&self, plan_ttl: Duration) -> String {
        format!(
            "Plan {} (IRREVERSIBLE) without running it. Changes nothing. Validates the inputs \
             and returns the plan (the steps, which of them cannot be undone, the possible \
             outcomes) with an approval request: an approval_token bound to this capability's \
             content hash, its tenant overlay, a digest of these exact inputs, and an expiry \
             {} from now. Show the plan to the person you act for; only if they approve, call \
             {} with the same inputs and the approval_token. A token runs once.",
            self.reference,
            human_duration(plan_ttl),
            self.name
        )
    }

    fn risk_paragraph(&self, plan_ttl: Duration) -> String {
        let risky = |tier: RiskTier| -> Vec<&str> {
            self.steps
                .iter()
                .filter(|step| step.tier == tier)
                .map(|step| step.step.as_str())
                .collect()
        };
        match self.risk {
            RiskTier::Safe => "Risk: safe. It only reads; it changes nothing.".to_owned(),
            RiskTier::Elevated => format!(
                "Risk: elevated. It changes records (step {}); calling it twice does it twice.",
                risky(RiskTier::Elevated).join(", ")
            ),
            RiskTier::Irreversible => format!(
                "Risk: IRREVERSIBLE (step {}): it cannot be undone, and calling it twice does it \
                 twice. Plan first: call {} with the same inputs, show the plan to the person \
                 you act for, and pass its approval_token here within {}. Without a matching, \
                 unexpired, unused token the call is refused and nothing runs.",
                risky(RiskTier::Irreversible).join(", "),
                self.plan_tool_name(),
                human_duration(plan_ttl)
            ),
        }
    }

    /// The schema of a run's structured content: success with its outputs, or a business
    /// outcome with its code and data, and the run's reference.
    fn run_output_schema(&self) -> Value {
        let capability = self.capability();
        let mut statuses = vec![json!("success")];
        let mut properties = serde_json::Map::new();
        let mut output_properties = serde_json::Map::new();
        if let Value::Object(declared) = &capability.tool_schema()["output_schema"]["properties"] {
            output_properties.clone_from(declared);
        }
        let output_names: Vec<Value> = capability
            .outputs
            .iter()
            .map(|output| Value::from(output.name.as_str()))
            .collect();
        properties.insert(
            "outputs".to_owned(),
            json!({
                "type": "object",
                "description": "The capability's outputs (status success).",
                "properties": output_properties,
                "required": output_names,
                "additionalProperties": false,
            }),
        );
        if !capability.outcomes.is_empty() {
            statuses.push(json!("business_outcome"));
            let codes: Vec<Value> = capability
                .outcomes
                .iter()
                .map(|outcome| Value::from(outcome.code.as_str()))
                .collect();
            properties.insert(
                "outcome".to_owned(),
                json!({
                    "type": "object",
                    "description": "The business outcome (status business_outcome).",
                    "properties": {
                        "code": {"type": "string", "enum": codes},
                        "description": {"type": "string"},
                        "data": {"type": "object"},
                    },
                    "required": ["code", "data"],
                    "additionalProperties": false,
                }),
            );
        }
        properties.insert(
            "status".to_owned(),
            json!({"type": "string", "enum": statuses}),
        );
        properties.insert("run".to_owned(), run_reference_schema());
        json!({
            "type": "object",
            "properties": properties,
            "required": ["status", "run"],
            "additionalProperties": false,
        })
    }
}

/// The schema of the `run` object every run result carries.
fn run_reference_schema() -> Value {
    json!({
        "type": "object",
        "description": "Which run this was and where its evidence is.",
        "properties": {
            "run_id": {"type": "string"},
            "capability": {"type": "string"},
            "content_hash": {"type": "string"},
            "evidence": {"type": "string"},
            "effect": {"type": "string"},
            "duration_ms": {"type": "integer"},
        },
        "required": ["run_id", "capability", "content_hash", "evidence"],
        "additionalProperties": false,
    })
}

/// The schema of a plan tool's structured content.
fn plan_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["plan"]},
            "tool": {"type": "string", "description": "The run tool to call with the token."},
            "capability": {"type": "string"},
            "approval_request": {
                "type": "object",
                "properties": {
                    "approval_token": {"type": "string"},
                    "plan_id": {"type": "string"},
                    "artifact_hash": {"type": "string"},
                    "overlay_hash": {"type": ["string", "null"]},
                    "input_digest": {"type": "string"},
                    "tenant": {"type": ["string", "null"]},
                    "expires_at": {"type": "string"},
                    "single_use": {"type": "boolean"},
                },
                "required": [
                    "approval_token", "plan_id", "artifact_hash", "overlay_hash",
                    "input_digest", "expires_at", "single_use"
                ],
                "additionalProperties": false,
            },
            "inputs": {"type": "object"},
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "step": {"type": "string"},
                        "action": {"type": "string"},
                        "description": {"type": "string"},
                        "risk": {"type": "string"},
                        "reason": {"type": "string"},
                    },
                    "required": ["step", "action", "risk"],
                    "additionalProperties": false,
                },
            },
            "irreversible_steps": {"type": "array", "items": {"type": "string"}},
            "outcomes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "code": {"type": "string"},
                        "description": {"type": "string"},
                    },
                    "required": ["code"],
                    "additionalProperties": false,
                },
            },
            "next": {"type": "string"},
        },
        "required": [
            "status", "tool", "capability", "approval_request", "inputs", "steps",
            "irreversible_steps", "outcomes", "next"
        ],
        "additionalProperties": false,
    })
}

/// The policy's risk for each step, assessed before anything runs: the declared tier, the
/// action type, and the target's name (when the descriptor names one) against the lexicon.
pub fn assess_steps(policy: &PolicyEngine, capability: &Capability) -> Vec<StepRisk> {
    capability
        .steps
        .iter()
        .map(|step| {
            let target = step.action.target().map(|descriptor| ResolvedTarget {
                node_id: NodeId::new("(before resolution)"),
                role: descriptor.role.clone(),
                name: descriptor
                    .name
                    .as_ref()
                    .map(|name| name.value.clone())
                    .unwrap_or_default(),
            });
            let assessment = policy.assess(step.action.kind(), target.as_ref(), Some(step.risk));
            StepRisk {
                step: step.id.to_string(),
                action: step.action.kind().as_str(),
                description: step.description.clone(),
                tier: assessment.tier,
                reason: assessment.reason,
            }
        })
        .collect()
}

/// A capability id as a tool name: `corebank.member.savings_balance` →
/// `corebank_member_savings_balance`.
pub fn base_name(reference: &CapabilityRef) -> String {
    reference.id().as_str().replace('.', "_")
}

/// Gives every version but the highest of an id a `_v<version>` suffix.
fn name_versions(offered: &mut [OfferedCapability]) {
    let mut highest: BTreeMap<String, CapabilityRef> = BTreeMap::new();
    for capability in offered.iter() {
        let entry = highest
            .entry(capability.name.clone())
            .or_insert_with(|| capability.reference.clone());
        if capability.reference > *entry {
            *entry = capability.reference.clone();
        }
    }
    for capability in offered.iter_mut() {
        if highest.get(&capability.name) != Some(&capability.reference) {
            let version: String = capability
                .reference
                .version()
                .to_string()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            capability.name = format!("{}_v{version}", capability.name);
        }
    }
}

/// Two capabilities whose tool names collide, or a run tool that declares an input named
/// like the approval token, are withheld rather than offered ambiguously.
fn refuse_collisions(offered: &mut Vec<OfferedCapability>, withheld: &mut Vec<Withheld>) {
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for capability in offered.iter() {
        *names.entry(capability.name.clone()).or_default() += 1;
        if capability.needs_plan() {
            *names.entry(capability.plan_tool_name()).or_default() += 1;
        }
    }
    offered.retain(|capability| {
        let mut own = vec![capability.name.clone()];
        if capability.needs_plan() {
            own.push(capability.plan_tool_name());
        }
        let reason = if own
            .iter()
            .any(|name| names.get(name).copied().unwrap_or(0) > 1)
        {
            Some(format!(
                "its tool name {} collides with another capability's",
                capability.name
            ))
        } else if capability.needs_plan() && capability.capability().input(APPROVAL_TOKEN).is_some()
        {
            Some(format!(
                "it declares an input named {APPROVAL_TOKEN}, which its run tool reserves"
            ))
        } else {
            None
        };
        match reason {
            Some(reason) => {
                withheld.push(Withheld {
                    capability: capability.reference.to_string(),
                    name: Some(capability.name.clone()),
                    reason,
                });
                false
            }
            None => true,
        }
    });
}

fn object(value: &Value) -> JsonObject {
    match value {
        Value::Object(object) => object.clone(),
        _ => JsonObject::new(),
    }
}

fn type_phrase(value_type: ValueType) -> &'static str {
    match value_type {
        ValueType::String => "string",
        ValueType::Enum => "string, one of the listed values",
        ValueType::Integer => "integer",
        ValueType::Number => "number",
        ValueType::Boolean => "boolean",
        ValueType::Money => "money: a decimal string without currency sign",
        ValueType::Date => "date: YYYY-MM-DD",
    }
}

/// `: Text.` for a non-empty description, nothing otherwise.
fn sentence(description: &str) -> String {
    let description = description.split_whitespace().collect::<Vec<_>>().join(" ");
    if description.is_empty() {
        String::new()
    } else {
        format!(": {description}")
    }
}

fn human_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds >= 60 && seconds.is_multiple_of(60) {
        let minutes = seconds / 60;
        format!("{minutes} minute{}", if minutes == 1 { "" } else { "s" })
    } else {
        format!("{seconds} second{}", if seconds == 1 { "" } else { "s" })
    }
}

/// The first `{name}` left in a text.
fn placeholder(text: &str) -> Option<String> {
    let start = text.find('{')?;
    let rest = &text[start + 1..];
    rest.find('}').map(|end| rest[..end].to_owned())
}
