//! The capability artifact (`cua.capability/v1`): the typed, immutable, content-addressed
//! contract a reviewer approves and replay executes.
//!
//! Outcomes, recovery and escalation are three distinct top-level keys on purpose: an outcome is
//! a legitimate answer (exit 0), recovery is bounded declared remediation, and failures are not
//! declared at all; they are [`FailureCode`]s, and `escalation.triggers` decides which of them
//! pause for a human.
//!
//! Defaults: a field left out and the same field written with its default value are the same
//! document. The content hash is computed over the typed model (see [`crate::hash`]), so the two
//! spellings hash alike.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use crate::document::CapabilitySchema;
use crate::identifiers::{
    CapabilityId, CapabilityRef, ContentHash, Identifier, InputName, OutputName, SecretName,
    SemVer, StepId,
};
use crate::predicate::Predicate;
use crate::target::TargetDescriptor;
use crate::value::{ValueExpr, ValueType};
use crate::vocabulary::{ActionKind, FailureCode, RiskTier};

/// A capability artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "cua capability artifact (cua.capability/v1)")]
pub struct Capability {
    pub schema: CapabilitySchema,
    pub id: CapabilityId,
    pub version: SemVer,
    pub title: String,
    /// What the capability does, what it needs and what it returns, written for the calling
    /// agent: this becomes the tool description.
    pub description: String,
    pub surface: Surface,
    pub entrypoint: Entrypoint,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<InputSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<OutputSpec>,
    pub steps: Vec<Step>,
    /// The success condition, checked after the last step. Required: a capability that cannot
    /// say what success looks like cannot tell success from a screen that merely loaded.
    pub checkpoint: Predicate,
    /// Legitimate answers that are not the happy path ("no such member").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outcomes: Vec<Outcome>,
    /// Bounded, declared remediation of known transient conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovery: Vec<RecoveryRule>,
    /// Which failures pause for a human and which fail the run.
    #[serde(default)]
    pub escalation: Escalation,
    /// Narrows the global policy for this capability; it can never widen it.
    pub policy: CapabilityPolicy,
    #[serde(default, skip_serializing_if = "Provenance::is_empty")]
    pub provenance: Provenance,
    /// `blake3:<hex>` over the canonical form; empty for a draft.
    #[serde(default, with = "draft_hash")]
    #[schemars(schema_with = "draft_hash::schema")]
    pub content_hash: Option<ContentHash>,
}

impl Capability {
    /// `id@version`.
    pub fn reference(&self) -> CapabilityRef {
        CapabilityRef::new(self.id.clone(), self.version.clone())
    }

    /// Every secret the capability names (`{$secret: …}`) anywhere: steps, checkpoint, remedy
    /// actions and remedy inputs. The capabilities its remedies run name their own.
    pub fn secret_names(&self) -> BTreeSet<SecretName> {
        fn walk(value: &serde_json::Value, found: &mut BTreeSet<SecretName>) {
            match value {
                serde_json::Value::Object(map) => {
                    // A value reference serializes as a one-key mapping; the documents deny
                    // unknown keys, so `$secret` can be nothing else.
                    if let (1, Some(serde_json::Value::String(name))) =
                        (map.len(), map.get("$secret"))
                        && let Ok(name) = SecretName::parse(name)
                    {
                        found.insert(name);
                    }
                    map.values().for_each(|item| walk(item, found));
                }
                serde_json::Value::Array(items) => items.iter().for_each(|item| walk(item, found)),
                _ => {}
            }
        }
        let mut found = BTreeSet::new();
        if let Ok(value) = serde_json::to_value(self) {
            walk(&value, &mut found);
        }
        found
    }

    /// The capabilities its recovery rules run as remedies (`type: run_capability`).
    pub fn remedy_capabilities(&self) -> BTreeSet<CapabilityRef> {
        self.recovery
            .iter()
            .flat_map(|rule| &rule.remedy)
            .filter_map(|remedy| match remedy {
                Remedy::RunCapability(run) => Some(run.capability.clone()),
                Remedy::Action(_) => None,
            })
            .collect()
    }

    /// The highest declared step risk; it drives the approval gate.
    pub fn max_risk(&self) -> RiskTier {
        self.steps
            .iter()
            .map(|step| step.risk)
            .max()
            .unwrap_or_default()
    }

    /// The names of inputs and outputs declared sensitive: evidence masks values under them.
    /// Whether a template reference stands for a value evidence must not carry in clear: a
    /// secret, or an input or output declared sensitive.
    pub fn is_sensitive_reference(&self, reference: &crate::TemplateRef) -> bool {
        match reference {
            crate::TemplateRef::Input(name) => self
                .input(name.as_str())
                .is_some_and(|input| input.sensitive),
            crate::TemplateRef::Output(name) => self
                .output(name.as_str())
                .is_some_and(|output| output.sensitive),
            crate::TemplateRef::Secret(_) => true,
        }
    }

    pub fn sensitive_names(&self) -> BTreeSet<&str> {
        let inputs = self
            .inputs
            .iter()
            .filter(|input| input.sensitive)
            .map(|input| input.name.as_str());
        let outputs = self
            .outputs
            .iter()
            .filter(|output| output.sensitive)
            .map(|output| output.name.as_str());
        inputs.chain(outputs).collect()
    }

    /// The step with this id.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|step| step.id.as_str() == id)
    }

    /// The position of the step with this id.
    pub fn step_index(&self, id: &str) -> Option<usize> {
        self.steps.iter().position(|step| step.id.as_str() == id)
    }

    /// The input with this name.
    pub fn input(&self, name: &str) -> Option<&InputSpec> {
        self.inputs.iter().find(|input| input.name.as_str() == name)
    }

    /// The output with this name.
    pub fn output(&self, name: &str) -> Option<&OutputSpec> {
        self.outputs
            .iter()
            .find(|output| output.name.as_str() == name)
    }

    /// The outcome with this code.
    pub fn outcome(&self, code: &str) -> Option<&Outcome> {
        self.outcomes
            .iter()
            .find(|outcome| outcome.code.as_str() == code)
    }

    /// The tool definition an agent sees: name, description, input and output JSON Schemas and
    /// the declared outcomes. Sensitive inputs are marked `writeOnly`.
    pub fn tool_schema(&self) -> serde_json::Value {
        let mut properties = serde_json::Map::new();
        let mut required = Vec::new();
        for input in &self.inputs {
            properties.insert(input.name.to_string(), input.json_schema());
            if input.required && input.default.is_none() {
                required.push(serde_json::Value::from(input.name.as_str()));
            }
        }
        let mut output_properties = serde_json::Map::new();
        for output in &self.outputs {
            let mut schema = output.value_type.json_schema();
            if !output.description.is_empty() {
                schema["description"] = output.description.clone().into();
            }
            output_properties.insert(output.name.to_string(), schema);
        }
        let outcomes: Vec<serde_json::Value> = self
            .outcomes
            .iter()
            .map(|outcome| {
                let description = if outcome.description.is_empty() {
                    outcome.code.as_str()
                } else {
                    outcome.description.as_str()
                };
                serde_json::json!({ "code": outcome.code.as_str(), "description": description })
            })
            .collect();
        let description = if self.description.is_empty() {
            &self.title
        } else {
            &self.description
        };
        serde_json::json!({
            "name": self.id.as_str().replace('.', "_"),
            "description": description,
            "input_schema": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            },
            "output_schema": { "type": "object", "properties": output_properties },
            "outcomes": outcomes,
        })
    }
}

/// What kind of surface the capability drives and what a driver must be able to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Surface {
    #[serde(default)]
    pub kind: SurfaceKind,
    /// What a driver must be able to do, never which library does it: a desktop driver that can
    /// do these could run the artifact unchanged.
    #[serde(default = "default_driver_capabilities")]
    pub driver_capabilities: Vec<DriverCapability>,
    pub app: AppIdentity,
}

/// The kind of surface.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SurfaceKind {
    #[default]
    Web,
    /// A web application of the frameset-and-nested-tables generation.
    LegacyWeb,
    Desktop,
}

/// Something a surface driver can do.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DriverCapability {
    /// Observe the UI as a semantic tree (roles, names, values).
    SemanticTree,
    /// Capture screenshots with sensitive regions blacked out.
    Screenshot,
    /// Observe and act inside frames of a frameset.
    Frames,
    /// Report the HTTP status of navigations.
    HttpStatus,
    /// Deliver raw pointer and key input (operator console only).
    RawInput,
}

/// The application the capability was written against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppIdentity {
    pub vendor: String,
    pub product: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_range: Option<String>,
}

/// Where a run starts. `{base_url}` is bound per tenant or per invocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Entrypoint {
    pub url: String,
}

/// A declared input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    pub name: InputName,
    #[serde(rename = "type", default)]
    pub value_type: ValueType,
    #[serde(default = "yes")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// A regex the whole value must match, checked before the surface is touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// The allowed values of an `enum` input.
    #[serde(rename = "enum", default, skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<String>,
    /// A literal used when the caller gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<ValueExpr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example: Option<ValueExpr>,
    /// Masked in every sink and blacked out in screenshots.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sensitive: bool,
    /// This input carries the run's idempotency key: the engine fills it when the caller gives
    /// none, with a key that is the same for every attempt of one batch row, so a mutation can
    /// pass it to the application (a client reference, a memo) and a `reconcile` capability can
    /// look for it after a crash. At most one input per capability, of type `string`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotency_key: bool,
}

impl InputSpec {
    /// The JSON Schema of this input for an agent's tool call.
    pub fn json_schema(&self) -> serde_json::Value {
        let mut schema = self.value_type.json_schema();
        if !self.description.is_empty() {
            schema["description"] = self.description.clone().into();
        }
        if let Some(pattern) = &self.pattern {
            schema["pattern"] = pattern.clone().into();
        }
        if !self.allowed.is_empty() {
            schema["enum"] = self.allowed.clone().into();
        }
        if let Some(example) = self.example.as_ref().filter(|_| !self.sensitive) {
            schema["examples"] = serde_json::json!([example]);
        }
        if self.sensitive {
            schema["writeOnly"] = true.into();
        }
        schema
    }

    /// The pattern anchored at both ends: the whole value must match it.
    pub fn anchored_pattern(&self) -> Option<String> {
        self.pattern
            .as_ref()
            .map(|pattern| format!("^(?:{pattern})$"))
    }
}

/// A declared output and the step that produces it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    pub name: OutputName,
    #[serde(rename = "type", default)]
    pub value_type: ValueType,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub source: OutputSource,
    #[serde(default, skip_serializing_if = "is_false")]
    pub sensitive: bool,
}

/// The step that extracts an output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputSource {
    pub step: StepId,
}

/// One step: an action, what must hold before it, how to wait after it, what must hold after
/// it, and how much harm it can do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub id: StepId,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precondition: Option<Predicate>,
    #[serde(default)]
    pub wait: WaitPolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postcondition: Option<Predicate>,
    /// The declared risk. Policy takes the highest of this, the action type and the control's
    /// name, and an irreversible step runs only when declared so and approved.
    #[serde(default)]
    pub risk: RiskTier,
    /// An explicit route (`visual`, `cdp`, `http`, `process`): a hard constraint on which
    /// operator and provider may perform the step, and the only way a step reaches a provider
    /// that is never selected implicitly (the visual one). The route planner decides whether
    /// the named route can perform the action; absent, the planner picks the implicit route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Identifier>,
    /// How to find out whether this step's mutation happened when a run stopped between its
    /// write-ahead intent and its verdict (a crash, a kill, a lost connection). Required on
    /// every irreversible step: without it an in-doubt mutation can only go to a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<Reconcile>,
}

impl Step {
    /// Whether the step may change the application's state: declared above `safe`, or an
    /// operator call that is not a read (an HTTP method that is not safe, a command not
    /// declared `read_only`), whatever its declared tier. Such a step is announced by a
    /// write-ahead intent before it is dispatched.
    pub fn mutates(&self) -> bool {
        self.risk > RiskTier::Safe
            || match &self.action {
                Action::Http(call) => !call.method.is_safe(),
                Action::Command(call) => !call.read_only,
                _ => false,
            }
    }
}

/// A step's reconciliation: a read-only capability, run through the same chokepoint as any
/// replay, whose ending answers whether the step's mutation happened. `success` means *done*;
/// one of the `not_done` business outcomes means *not done*; anything else (a failure, another
/// outcome, a refusal) means *unknown*, and the row goes to a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reconcile {
    /// The read-only capability to run, pinned by version. Every one of its steps must be
    /// `safe`; replay refuses it otherwise.
    pub capability: CapabilityRef,
    /// Its inputs, from this capability's inputs (`{$input: name}`) or literals. Outputs are
    /// not available to a reconciliation (the run that made them may be gone) and secrets are
    /// never passed on.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<Identifier, ValueExpr>,
    /// The reconciling capability's business outcomes that mean the mutation did not happen.
    pub not_done: Vec<Identifier>,
}

/// The names a step's `via` may give a route, aliases included. `cua-route` parses every one
/// (a test there holds the two lists together).
pub const ROUTE_NAMES: &[&str] = &[
    "api",
    "http",
    "structured",
    "browser",
    "cdp",
    "process",
    "subprocess",
    "cli",
    "command",
    "native",
    "desktop",
    "accessibility",
    "driver",
    "visual",
    "pixel",
    "pixels",
    "coordinates",
];

/// The closed set of step actions, discriminated on the wire by `type`. The target lives on the
/// action, not the step. New kinds of step (an `http` call, a `command`) are new variants here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    Click {
        target: TargetDescriptor,
        /// Answer OK to the JavaScript `confirm()` this click raises when its message is exactly
        /// this text (whitespace squashed). Any other dialog is still declined, and a click that
        /// raises no such confirm fails. Accepting a confirm is at least `elevated`, and the
        /// message is classified by the risk lexicon as a button's name would be.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        accept_confirm: Option<String>,
    },
    Type {
        target: TargetDescriptor,
        value: ValueExpr,
        #[serde(default = "yes")]
        clear_first: bool,
    },
    Select {
        target: TargetDescriptor,
        value: ValueExpr,
    },
    PressKey {
        key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<TargetDescriptor>,
    },
    Navigate {
        url: String,
    },
    Reload {},
    Scroll {
        direction: ScrollDirection,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<TargetDescriptor>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        amount: Option<u32>,
    },
    WaitFor {
        until: Predicate,
        #[serde(default = "default_timeout_ms")]
        timeout_ms: u32,
    },
    Extract {
        target: TargetDescriptor,
        into: OutputName,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        transform: Option<Transform>,
    },
    Assert {
        that: Predicate,
    },
    /// A raw pointer or key gesture from an operator's console. It exists so such input is
    /// policed like everything else; no artifact may contain one.
    RawInput {
        kind: RawInputKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        x: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        y: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame: Option<String>,
    },
    /// A request to a declared HTTP service (the structured-api operator). The URL must start
    /// with `{base_url}`; the allowlist applies to it exactly as to a navigation.
    Http(HttpCall),
    /// A declared executable run from an argv, never through a shell (the native-cli operator).
    /// The executable is a name the policy's `commands.allowed` maps to a path.
    Command(CommandCall),
    /// A screenshot of the page's viewport (the visual-observation operator), only on an
    /// explicit `via: visual` route. It issues a single-use observation ref that one later
    /// `click_at` may claim within 30 seconds, in the same session and on the same page.
    Screenshot {},
    /// A click at pixel coordinates of the image a `screenshot` step took (the
    /// visual-coordinate operator), only on an explicit `via: visual` route: for a control with
    /// no semantic handle (a canvas, an image map). The point is checked against the
    /// screenshot's bounds, and the observation ref claimed, before anything is dispatched.
    ClickAt {
        /// The `screenshot` step whose observation this click claims.
        observation: StepId,
        /// Pixels from the screenshot's left edge.
        x: u32,
        /// Pixels from the screenshot's top edge.
        y: u32,
    },
}

/// `type: http`. Templates in `url` and `headers` may hold `{$input: name}`,
/// `{$output: name}` and (headers only) `{$secret: name}`; a value substituted into the URL is
/// percent-encoded, so it can never add a path segment, a query or another origin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpCall {
    pub method: HttpMethod,
    pub url: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// A JSON object built from bound values; sent with `content-type: application/json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<BTreeMap<String, ValueExpr>>,
    /// The statuses that mean the call did what it should; anything else fails the step.
    #[serde(default = "default_expect_status")]
    pub expect_status: Vec<u16>,
    /// Outputs read from the JSON response by JSON pointer (RFC 6901), typed by their spec.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extract: BTreeMap<OutputName, String>,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u32,
}

/// An HTTP method.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    Get,
    Head,
    Post,
    Put,
    Patch,
    Delete,
}

impl HttpMethod {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
        }
    }

    /// Safe methods (RFC 9110) change nothing on the server: the call is a read.
    pub fn is_safe(self) -> bool {
        matches!(self, Self::Get | Self::Head)
    }
}

/// `type: command`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandCall {
    /// A name from the policy's `commands.allowed`, never a path.
    pub executable: String,
    /// The argv after the program, each one bound value; no shell ever sees them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<ValueExpr>,
    /// The exit codes that mean success.
    #[serde(default = "default_expect_exit")]
    pub expect_exit: Vec<i32>,
    /// Outputs read from stdout parsed as JSON, by JSON pointer.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extract: BTreeMap<OutputName, String>,
    /// The child is killed when it runs longer.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u32,
    /// Whether the command only reads (its effect verdict is then `not_applicable`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub read_only: bool,
}

impl Action {
    /// The kind of this action.
    pub fn kind(&self) -> ActionKind {
        match self {
            Self::Click { .. } => ActionKind::Click,
            Self::Type { .. } => ActionKind::Type,
            Self::Select { .. } => ActionKind::Select,
            Self::PressKey { .. } => ActionKind::PressKey,
            Self::Navigate { .. } => ActionKind::Navigate,
            Self::Reload {} => ActionKind::Reload,
            Self::Scroll { .. } => ActionKind::Scroll,
            Self::WaitFor { .. } => ActionKind::WaitFor,
            Self::Extract { .. } => ActionKind::Extract,
            Self::Assert { .. } => ActionKind::Assert,
            Self::RawInput { .. } => ActionKind::RawInput,
            Self::Http(_) => ActionKind::Http,
            Self::Command(_) => ActionKind::Command,
            Self::Screenshot {} => ActionKind::Screenshot,
            Self::ClickAt { .. } => ActionKind::ClickAt,
        }
    }

    /// The outputs this action writes, with the step's way of reading each.
    pub fn writes_outputs(&self) -> Vec<&OutputName> {
        match self {
            Self::Extract { into, .. } => vec![into],
            Self::Http(call) => call.extract.keys().collect(),
            Self::Command(call) => call.extract.keys().collect(),
            _ => Vec::new(),
        }
    }

    /// The `confirm()` message a click accepts, if it declares one.
    pub fn accepts_confirm(&self) -> Option<&str> {
        match self {
            Self::Click { accept_confirm, .. } => accept_confirm.as_deref(),
            _ => None,
        }
    }

    /// The control this action acts on, if it has one.
    pub fn target(&self) -> Option<&TargetDescriptor> {
        match self {
            Self::Click { target, .. }
            | Self::Type { target, .. }
            | Self::Select { target, .. }
            | Self::Extract { target, .. } => Some(target),
            Self::PressKey { target, .. } | Self::Scroll { target, .. } => target.as_ref(),
            Self::Navigate { .. }
            | Self::Reload {}
            | Self::WaitFor { .. }
            | Self::Assert { .. }
            | Self::RawInput { .. }
            | Self::Http(_)
            | Self::Command(_)
            | Self::Screenshot {}
            | Self::ClickAt { .. } => None,
        }
    }

    /// The control this action acts on, mutably.
    pub fn target_mut(&mut self) -> Option<&mut TargetDescriptor> {
        match self {
            Self::Click { target, .. }
            | Self::Type { target, .. }
            | Self::Select { target, .. }
            | Self::Extract { target, .. } => Some(target),
            Self::PressKey { target, .. } | Self::Scroll { target, .. } => target.as_mut(),
            Self::Navigate { .. }
            | Self::Reload {}
            | Self::WaitFor { .. }
            | Self::Assert { .. }
            | Self::RawInput { .. }
            | Self::Http(_)
            | Self::Command(_)
            | Self::Screenshot {}
            | Self::ClickAt { .. } => None,
        }
    }
}

/// Which way to scroll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScrollDirection {
    Up,
    Down,
    IntoView,
}

/// How an extracted text becomes an output value: `money` turns `$4,210.55` into `4210.55`,
/// `date` turns `09/11/2026` into `2026-09-11`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Transform {
    Money,
    Date,
}

/// The kinds of raw operator input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawInputKind {
    MouseClick,
    MouseMove,
    Key,
    Text,
}

/// How to wait after a step's action. A timeout is a result (`timeout`), not a sleep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitPolicy {
    #[serde(rename = "for", default)]
    pub condition: WaitCondition,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u32,
    /// Required when `for: predicate`, refused otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Predicate>,
}

impl Default for WaitPolicy {
    fn default() -> Self {
        Self {
            condition: WaitCondition::default(),
            timeout_ms: default_timeout_ms(),
            until: None,
        }
    }
}

/// What a wait waits for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WaitCondition {
    /// Two consecutive identical observations.
    #[default]
    SnapshotStable,
    /// The URL or the document changed.
    Navigation,
    /// `until` holds.
    Predicate,
}

/// A legitimate answer that is not the happy path. Replay exits 0 with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    pub code: Identifier,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub detect: Predicate,
    /// Whether the run ends when this outcome is detected.
    #[serde(default = "yes")]
    pub terminal: bool,
    /// What the caller gets back with the outcome.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub returns: BTreeMap<Identifier, ValueExpr>,
}

/// Bounded remediation of a known condition. Every rule is bounded: unbounded recovery is how
/// one transient 502 becomes a thousand retries against a struggling core system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecoveryRule {
    pub id: Identifier,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub detect: Predicate,
    pub remedy: Vec<Remedy>,
    /// 1 to 10.
    #[serde(default = "default_max_attempts")]
    #[schemars(range(min = 1, max = 10))]
    pub max_attempts: u8,
    #[serde(default)]
    pub backoff: Backoff,
    #[serde(default)]
    pub scope: RecoveryScope,
    /// The steps a `named_steps` rule applies to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepId>,
}

/// One remedy: an action dispatched through the policy chokepoint like any other, or another
/// capability run on the current screen (re-authentication, for one).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Remedy {
    RunCapability(RunCapability),
    Action(Action),
}

impl<'de> Deserialize<'de> for Remedy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The discriminator `type` may sit anywhere in the mapping, so read it whole first.
        let value = serde_json::Value::deserialize(deserializer)?;
        if value.get("type").and_then(serde_json::Value::as_str) == Some("run_capability") {
            serde_json::from_value(value)
                .map(Remedy::RunCapability)
                .map_err(de::Error::custom)
        } else {
            serde_json::from_value(value)
                .map(Remedy::Action)
                .map_err(de::Error::custom)
        }
    }
}

/// `type: run_capability`: run a pinned capability as a remedy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCapability {
    #[serde(rename = "type")]
    pub kind: RunCapabilityTag,
    pub capability: CapabilityRef,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<Identifier, ValueExpr>,
}

/// The single value `run_capability`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunCapabilityTag {
    #[default]
    RunCapability,
}

/// How retries are spaced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Backoff {
    None,
    #[default]
    Linear,
    Exponential,
}

/// Which steps a recovery rule watches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryScope {
    #[default]
    AnyStep,
    NamedSteps,
}

/// Which failures pause for a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Escalation {
    /// Named `triggers`, not `on`, so that no YAML 1.1 reader turns the key into `true`.
    #[serde(default = "default_triggers")]
    pub triggers: Vec<FailureCode>,
    #[serde(default)]
    pub policy: EscalationPolicy,
}

impl Default for Escalation {
    fn default() -> Self {
        Self {
            triggers: default_triggers(),
            policy: EscalationPolicy::default(),
        }
    }
}

/// What a trigger does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EscalationPolicy {
    /// Keep the session, open an intervention, let an operator take over and hand back.
    #[default]
    PauseAndRequestHuman,
    /// Stop the run as failed.
    FailClosed,
}

/// The capability's narrowing of the global policy. Lists mean exactly what they say: an empty
/// `allowed_actions` allows nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilityPolicy {
    /// Hosts (`host:port`) or URL prefixes navigation may reach; may hold `{base_url}`.
    pub allowed_domains: Vec<String>,
    pub allowed_actions: Vec<ActionKind>,
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
    #[serde(default = "default_max_duration_ms")]
    pub max_duration_ms: u64,
}

/// Where the capability came from. It never changes after sealing, so it lives inside.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovered_by: Option<DiscoveredBy>,
    /// The discovery `trace.jsonl`, by path; never the transcript inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_ref: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
    /// What a reviewer checked and concluded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_notes: Option<String>,
}

impl Provenance {
    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The discovery run a draft was compiled from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscoveredBy {
    pub model: String,
    pub run_id: String,
    /// RFC 3339.
    pub at: String,
}

pub(crate) fn yes() -> bool {
    true
}

pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}

fn default_timeout_ms() -> u32 {
    5_000
}

fn default_expect_status() -> Vec<u16> {
    vec![200]
}

fn default_expect_exit() -> Vec<i32> {
    vec![0]
}

fn default_max_attempts() -> u8 {
    2
}

fn default_max_steps() -> u32 {
    40
}

fn default_max_duration_ms() -> u64 {
    120_000
}

fn default_triggers() -> Vec<FailureCode> {
    FailureCode::DEFAULT_ESCALATION_TRIGGERS.to_vec()
}

fn default_driver_capabilities() -> Vec<DriverCapability> {
    vec![DriverCapability::SemanticTree]
}

/// `content_hash`: the empty string (or no key) is a draft; anything else must be a valid hash.
pub(crate) mod draft_hash {
    use schemars::{Schema, SchemaGenerator, json_schema};
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::identifiers::ContentHash;

    pub(crate) fn serialize<S: Serializer>(
        hash: &Option<ContentHash>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(hash.as_ref().map_or("", ContentHash::as_str))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<ContentHash>, D::Error> {
        let text = Option::<std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        match text {
            None => Ok(None),
            Some(text) if text.is_empty() => Ok(None),
            Some(text) => ContentHash::parse(&text)
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }

    pub(crate) fn schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^(blake3:[0-9a-f]{64})?$",
            "description": "blake3 over the canonical form (key-sorted compact JSON minus this field); empty for a draft",
        })
    }
}
