//! Trace → draft capability.

use std::collections::{BTreeMap, BTreeSet};

use cua_artifact::{
    Action, ActionKind, AppIdentity, Capability, CapabilityId, CapabilityPolicy, CapabilitySchema,
    DiscoveredBy, DriverCapability, Entrypoint, Escalation, Identifier, InputSpec, NodeQuery,
    NodeScope, OutputSource, OutputSpec, Predicate, Provenance, RiskTier, SecretName, SemVer, Step,
    Surface, SurfaceKind, TargetDescriptor, ValueExpr, WaitCondition, WaitPolicy,
};
use cua_evidence::{Event, RunStart, TraceLine};
use cua_snapshot::{UiSnapshot, fold, normalize_name};
use cua_target::{
    BoundValues, ResolverConfig, SnapshotIndex, SynthesisConfig, read_by_column, resolve_with,
    synthesize_with,
};
use serde_json::Value;

use crate::error::CompileError;
use crate::run::RecordedRun;
use crate::shape::{Shape, infer_pattern};
use crate::{ACTION_NOTE, PHASE_NOTE};

/// What the compiler needs beyond the trace. Passed explicitly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileConfig {
    /// The capability id; by default `<product>.<domain>.<first output>`.
    pub id: Option<CapabilityId>,
    /// The middle segment of a default id.
    pub domain: String,
    pub vendor: String,
    pub product: String,
    pub version: SemVer,
    /// Where the trace lives, written into `provenance.transcript_ref` as given.
    pub transcript_ref: String,
}

impl CompileConfig {
    /// The defaults for the MemberDesk fixture's vendor and product.
    pub fn new(transcript_ref: impl Into<String>) -> Self {
        Self {
            id: None,
            domain: "discovered".to_owned(),
            vendor: "acme-core".to_owned(),
            product: "MemberDesk".to_owned(),
            version: SemVer::parse("0.1.0").expect("0.1.0 is a version"),
            transcript_ref: transcript_ref.into(),
        }
    }
}

/// A compiled draft and what the compiler has to say about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Compiled {
    /// The draft (no content hash).
    pub capability: Capability,
    /// The draft as YAML, with a header comment: the bytes `cua compile` writes.
    pub yaml: String,
    /// Warnings a reviewer must read (also in `provenance.notes`).
    pub warnings: Vec<String>,
}

/// One action the run took that becomes a step.
struct Recorded<'r> {
    tool: String,
    data: &'r BTreeMap<String, Value>,
    /// The snapshot the action was resolved on.
    before: &'r UiSnapshot,
    before_ref: String,
    /// The next observation after the action.
    after: Option<&'r UiSnapshot>,
    navigated: bool,
    risk: RiskTier,
}

/// Compiles a recorded run into a draft capability.
pub fn compile(run: &RecordedRun, config: &CompileConfig) -> Result<Compiled, CompileError> {
    let Some(first) = run.lines.first() else {
        return Err(CompileError::Trace {
            reason: "the trace is empty".to_owned(),
        });
    };
    let Event::RunStart(start) = &first.event else {
        return Err(CompileError::Trace {
            reason: "the trace does not start with run_start".to_owned(),
        });
    };
    if let Some(stop) = stop_reason(&run.lines)
        && stop != "goal_met"
    {
        return Err(CompileError::GoalNotMet { stop_reason: stop });
    }
    let target_url = start
        .target_url
        .clone()
        .ok_or_else(|| CompileError::Trace {
            reason: "run_start names no target_url".to_owned(),
        })?;
    let (origin, entry_path) = split_origin(&target_url);
    let goal = start.goal.clone().unwrap_or_default();
    let recorded = recorded_actions(run)?;
    if recorded.is_empty() {
        return Err(CompileError::Trace {
            reason: "the run dispatched or read nothing to compile".to_owned(),
        });
    }

    let mut compiler = Compiler {
        goal: goal.clone(),
        origin,
        inputs: Vec::new(),
        outputs: Vec::new(),
        steps: Vec::new(),
        checkpoint: Vec::new(),
        warnings: Vec::new(),
        notes: Vec::new(),
        step_ids: BTreeSet::new(),
        kinds: BTreeSet::from([ActionKind::Navigate]),
        frames: false,
    };
    let mut previous_snapshot: Option<String> = None;
    for action in &recorded {
        let new_screen = previous_snapshot.as_deref() != Some(action.before_ref.as_str());
        compiler.step(action, new_screen)?;
        previous_snapshot = Some(action.before_ref.clone());
    }

    let id = match &config.id {
        Some(id) => id.clone(),
        None => {
            let last = compiler
                .outputs
                .first()
                .map(|output| output.name.to_string())
                .or_else(|| compiler.steps.last().map(|step| step.id.to_string()))
                .unwrap_or_else(|| "capability".to_owned());
            CapabilityId::parse(&format!(
                "{}.{}.{}",
                snake(&config.product),
                snake(&config.domain),
                last
            ))
            .map_err(|error| CompileError::Trace {
                reason: error.to_string(),
            })?
        }
    };
    let checkpoint = compiler.checkpoint();
    let parameterized_goal = compiler.parameterize(&goal);
    let title = first_sentence(&parameterized_goal);
    let description = format!(
        "Draft compiled from discovery run {run_id} for the goal: {parameterized_goal} Inputs: {inputs}. \
         Outputs: {outputs}. It declares no outcomes and no recovery yet; see provenance.notes.",
        run_id = first.run_id,
        inputs = list(compiler.inputs.iter().map(|input| input.name.to_string())),
        outputs = list(compiler.outputs.iter().map(|output| format!(
            "{} ({})",
            output.name,
            output.value_type.as_str()
        ))),
    );
    let model = model_label(start, &run.lines);
    let notes = compiler.review_notes(&first.run_id, &model);
    let mut driver_capabilities = vec![DriverCapability::SemanticTree];
    if compiler.frames {
        driver_capabilities.push(DriverCapability::Frames);
    }
    driver_capabilities.push(DriverCapability::HttpStatus);
    let steps_count = u32::try_from(compiler.steps.len()).unwrap_or(u32::MAX);
    let capability = Capability {
        schema: CapabilitySchema::default(),
        id,
        version: config.version.clone(),
        title,
        description,
        surface: Surface {
            kind: if compiler.frames {
                SurfaceKind::LegacyWeb
            } else {
                SurfaceKind::Web
            },
            driver_capabilities,
            app: AppIdentity {
                vendor: config.vendor.clone(),
                product: config.product.clone(),
                version_range: None,
            },
        },
        entrypoint: Entrypoint {
            url: format!("{{base_url}}{entry_path}"),
        },
        inputs: compiler.inputs,
        outputs: compiler.outputs,
        steps: compiler.steps,
        checkpoint,
        outcomes: Vec::new(),
        recovery: Vec::new(),
        escalation: Escalation::default(),
        policy: CapabilityPolicy {
            allowed_domains: vec!["{base_url}".to_owned()],
            allowed_actions: compiler.kinds.into_iter().collect(),
            max_steps: (steps_count + 5).clamp(10, 40),
            max_duration_ms: 60_000,
        },
        provenance: Provenance {
            discovered_by: Some(DiscoveredBy {
                model,
                run_id: first.run_id.clone(),
                at: first.at.to_string(),
            }),
            transcript_ref: Some(config.transcript_ref.clone()),
            notes,
            review_notes: None,
        },
        content_hash: None,
    };
    let problems = capability.validate();
    if !problems.is_empty() {
        return Err(CompileError::Invalid {
            problems: problems
                .iter()
                .map(|problem| format!("{}: {}", problem.path, problem.message))
                .collect(),
        });
    }
    let body = capability.to_yaml().map_err(|error| CompileError::Yaml {
        reason: error.to_string(),
    })?;
    let yaml = format!(
        "# DRAFT compiled by `cua compile` from discovery run {run} ({model}).\n\
         # It has no outcomes and no recovery: provenance.notes says what a reviewer must add before\n\
         # it is sealed and approved. Recompiling the same trace gives these exact bytes.\n{body}",
        run = first.run_id,
        model = capability
            .provenance
            .discovered_by
            .as_ref()
            .map_or("", |by| by.model.as_str()),
    );
    Ok(Compiled {
        capability,
        yaml,
        warnings: compiler.warnings,
    })
}

struct Compiler {
    goal: String,
    origin: String,
    inputs: Vec<InputSpec>,
    outputs: Vec<OutputSpec>,
    steps: Vec<Step>,
    /// Parts of the checkpoint, in step order, without duplicates.
    checkpoint: Vec<Predicate>,
    warnings: Vec<String>,
    /// Reviewer notes specific to this run.
    notes: Vec<String>,
    step_ids: BTreeSet<String>,
    kinds: BTreeSet<ActionKind>,
    frames: bool,
}

/// Whether a recorded action of `kind` (an `agent_action` note's `tool`) compiles into a step,
/// or why not. Exhaustive, so a new kind is decided here before it compiles.
pub fn compiles(kind: ActionKind) -> Result<(), &'static str> {
    match kind {
        ActionKind::Click
        | ActionKind::Type
        | ActionKind::Select
        | ActionKind::PressKey
        | ActionKind::Navigate
        | ActionKind::Extract => Ok(()),
        ActionKind::Reload | ActionKind::Scroll | ActionKind::WaitFor | ActionKind::Assert => {
            Err("the compiler derives waits and checks itself; a reviewer declares remedies")
        }
        ActionKind::RawInput => Err("a raw gesture has no semantic target to compile"),
        ActionKind::Http | ActionKind::Command => {
            Err("an operator step names a declared service or program; a reviewer writes it")
        }
        ActionKind::Screenshot | ActionKind::ClickAt => {
            Err("the visual route is explicit and reviewed, never compiled from a trace")
        }
    }
}

impl Compiler {
    fn step(&mut self, action: &Recorded<'_>, new_screen: bool) -> Result<(), CompileError> {
        let data = action.data;
        let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_owned);
        let why = text("why").unwrap_or_default();
        let kind = match ActionKind::parse(&action.tool).map(|kind| (kind, compiles(kind))) {
            Some((kind, Ok(()))) => kind,
            Some((_, Err(why))) => {
                return Err(CompileError::Trace {
                    reason: format!("an action note has tool `{}`: {why}", action.tool),
                });
            }
            None => {
                return Err(CompileError::Trace {
                    reason: format!("an action note has tool `{}`", action.tool),
                });
            }
        };
        self.kinds.insert(kind);
        let target = match (kind, text("node_id")) {
            (ActionKind::Navigate, _) | (ActionKind::PressKey, None) => None,
            (_, None) => {
                return Err(CompileError::Trace {
                    reason: format!("a {} action names no node", action.tool),
                });
            }
            (_, Some(node_id)) => Some(self.target(action, &node_id)?),
        };
        if let Some(target) = &target
            && target
                .descriptor
                .scope
                .as_ref()
                .is_some_and(|scope| scope.frame.is_some())
        {
            self.frames = true;
        }
        let label = target
            .as_ref()
            .map(|target| target.label.clone())
            .unwrap_or_default();
        let (id, action_value, description) = match kind {
            ActionKind::Type => {
                let value = self.typed_value(data.get("value"), &label);
                let id = self.step_id(&format!("enter_{}", snake(&label)));
                let description = format!(
                    "Type {} into the {} field.",
                    render_value(&value),
                    quoted(&label)
                );
                let descriptor = target
                    .as_ref()
                    .map(|target| target.descriptor.clone())
                    .unwrap_or_else(|| TargetDescriptor::role("textbox"));
                (
                    id,
                    Action::Type {
                        target: descriptor,
                        value,
                        clear_first: true,
                    },
                    description,
                )
            }
            ActionKind::Select => {
                let option = text("option").unwrap_or_default();
                let id = self.step_id(&format!("choose_{}", snake(&label)));
                let descriptor = target
                    .as_ref()
                    .map(|target| target.descriptor.clone())
                    .unwrap_or_else(|| TargetDescriptor::role("combobox"));
                let value = self.typed_value(Some(&Value::from(option.clone())), &label);
                (
                    id,
                    Action::Select {
                        target: descriptor,
                        value,
                    },
                    format!("Choose {option:?} in {}.", quoted(&label)),
                )
            }
            ActionKind::Click => {
                let id = self.step_id(&format!("click_{}", snake(&label)));
                let descriptor = target
                    .as_ref()
                    .map(|target| target.descriptor.clone())
                    .unwrap_or_else(|| TargetDescriptor::role("button"));
                (
                    id,
                    Action::Click {
                        target: descriptor,
                        accept_confirm: None,
                    },
                    format!("Click {}.", quoted(&label)),
                )
            }
            ActionKind::PressKey => {
                let key = text("key").unwrap_or_else(|| "Enter".to_owned());
                let id = self.step_id(&format!("press_{}", snake(&key)));
                (
                    id,
                    Action::PressKey {
                        key: key.clone(),
                        target: target.as_ref().map(|target| target.descriptor.clone()),
                    },
                    format!("Press {key}."),
                )
            }
            ActionKind::Navigate => {
                let url = text("url").unwrap_or_default();
                let url = match url.strip_prefix(&self.origin) {
                    Some(path) if !self.origin.is_empty() => format!("{{base_url}}{path}"),
                    _ => url,
                };
                let id = self.step_id("open_page");
                (
                    id,
                    Action::Navigate { url: url.clone() },
                    format!("Open {url}."),
                )
            }
            ActionKind::Extract => {
                let into = text("into").unwrap_or_else(|| "value".to_owned());
                let into = Identifier::parse(&into).map_err(|error| CompileError::Trace {
                    reason: error.to_string(),
                })?;
                let extracted = text("extracted").unwrap_or_default();
                let shape = Shape::of(&extracted);
                let target = target.as_ref().ok_or_else(|| CompileError::Trace {
                    reason: "an extract names no node".to_owned(),
                })?;
                let id = self.step_id(&format!("read_{into}"));
                let description = match &target.column {
                    Some(column) => format!("Read the {} column of its row.", quoted(column)),
                    None if !target.label.is_empty() => {
                        format!("Read the value beside {}.", quoted(&target.label))
                    }
                    None => "Read the value.".to_owned(),
                };
                if self.outputs.iter().all(|output| output.name != into) {
                    self.outputs.push(OutputSpec {
                        name: into.clone(),
                        value_type: shape.value_type(),
                        description: match &target.column {
                            Some(column) => format!(
                                "The {} column of the row read in discovery, {} shaped.",
                                quoted(column),
                                shape_name(shape)
                            ),
                            None => format!(
                                "The value beside {}, {} shaped in discovery.",
                                quoted(&target.label),
                                shape_name(shape)
                            ),
                        },
                        source: OutputSource { step: id.clone() },
                        sensitive: false,
                    });
                }
                self.checkpoint_for(target, shape);
                (
                    id,
                    Action::Extract {
                        target: target.descriptor.clone(),
                        into,
                        transform: shape.transform(),
                    },
                    description,
                )
            }
            _ => unreachable!("the kinds above are the only ones compiled"),
        };
        let precondition = match (&target, kind) {
            (Some(target), ActionKind::Extract) => Some(target.presence.clone()),
            (Some(target), _) if new_screen => Some(target.presence.clone()),
            _ => None,
        };
        let mutating = !matches!(kind, ActionKind::Extract);
        let postcondition = if mutating {
            self.postcondition(action, &action_value, target.as_ref(), &id)
        } else {
            None
        };
        let wait = if !mutating {
            WaitPolicy::default()
        } else if action.navigated {
            WaitPolicy {
                condition: WaitCondition::Navigation,
                timeout_ms: 8_000,
                until: None,
            }
        } else {
            WaitPolicy {
                condition: WaitCondition::SnapshotStable,
                timeout_ms: 3_000,
                until: None,
            }
        };
        let description = if why.is_empty() {
            description
        } else {
            format!("{description} Discovery's reason: {why}")
        };
        self.steps.push(Step {
            id,
            description,
            action: action_value,
            precondition,
            wait,
            postcondition,
            risk: action.risk,
            via: None,
            reconcile: None,
        });
        Ok(())
    }

    /// The target of an action: synthesized from the node acted on, verified by resolving it
    /// back on the recorded snapshot with the run's input examples bound.
    fn target(&mut self, action: &Recorded<'_>, node_id: &str) -> Result<Target, CompileError> {
        let snapshot = action.before;
        let node = snapshot
            .nodes
            .iter()
            .position(|node| node.id.as_str() == node_id)
            .ok_or_else(|| CompileError::Trace {
                reason: format!("node {node_id} is not in {}", action.before_ref),
            })?;
        if action.tool == "extract" {
            self.row_key_input(snapshot, node);
        }
        let index = SnapshotIndex::new(snapshot);
        let known: BTreeMap<Identifier, String> = self
            .inputs
            .iter()
            .filter_map(|input| Some((input.name.clone(), input.example.as_ref()?.literal_text()?)))
            .collect();
        let synthesized = synthesize_with(
            &index,
            node,
            &SynthesisConfig {
                known_inputs: known.clone(),
            },
        )
        .map_err(|error| CompileError::Trace {
            reason: error.to_string(),
        })?;
        let mut descriptor = synthesized.descriptor;
        let bindings = known
            .iter()
            .fold(BoundValues::new(), |bindings, (name, value)| {
                bindings.with_input(name.clone(), value.clone())
            });
        // A region is named after a heading, and headings are what tenants rebrand first: keep
        // it only when the target needs it to stay unique (a position within a grid does).
        if descriptor.ordinal.is_none()
            && let Some(scope) = descriptor
                .scope
                .as_ref()
                .filter(|scope| scope.region.is_some())
        {
            let mut wider = descriptor.clone();
            wider.scope = scope.frame.clone().map(|frame| NodeScope {
                frame: Some(frame),
                region: None,
            });
            if let Ok(resolution) = resolve_with(&index, &wider, &bindings, &ResolverConfig::REPLAY)
                && resolution.node == node
            {
                wider.recorded_strategy = Some(resolution.strategy);
                descriptor = wider;
            }
        }
        let round_trips = synthesized.round_trips
            && resolve_with(&index, &descriptor, &bindings, &ResolverConfig::REPLAY)
                .is_ok_and(|resolution| resolution.node == node);
        let described = descriptor.describe();
        if !round_trips {
            self.warnings.push(format!(
                "the target `{described}` (node {node_id}) does not resolve back to the node acted on; a reviewer must describe it by hand"
            ));
        }
        let column = column_header(snapshot, node);
        if descriptor.ordinal.is_some() {
            let column_note = column.as_ref().map_or_else(String::new, |column| {
                format!(" in column {}", quoted(column))
            });
            self.warnings.push(format!(
                "the target `{described}` is chosen by position{column_note}; its identity check keeps it on the right row, but confirm the position holds for every record"
            ));
        }
        for warning in &synthesized.warnings {
            if let cua_target::SynthesisWarning::NoIdentity { reason } = warning {
                self.warnings.push(format!(
                    "the target `{described}` has no identity check: {reason}"
                ));
            }
        }
        let found = &snapshot.nodes[node];
        let scope = found.scope.frame.clone().map(|frame| NodeScope {
            frame: Some(frame),
            region: None,
        });
        let label = descriptor
            .name
            .as_ref()
            .map(|name| name.value.clone())
            .or_else(|| descriptor.anchor.as_ref().map(|anchor| anchor.text.clone()))
            .or_else(|| column.clone())
            .unwrap_or_else(|| found.role.clone());
        let presence = match (&descriptor.name, &descriptor.anchor, &column) {
            (Some(name), _, _) => node_exists(NodeQuery {
                role: Some(descriptor.role.clone()),
                name: Some(name.value.clone()),
                scope: scope.clone(),
                ..NodeQuery::default()
            }),
            (None, Some(anchor), _) => node_exists(NodeQuery {
                name: Some(anchor.text.clone()),
                scope: scope.clone(),
                ..NodeQuery::default()
            }),
            (None, None, Some(column)) => node_exists(NodeQuery {
                role: Some("cell".to_owned()),
                name: Some(column.clone()),
                scope: scope.clone(),
                ..NodeQuery::default()
            }),
            (None, None, None) => node_exists(NodeQuery {
                role: Some(descriptor.role.clone()),
                scope: scope.clone(),
                ..NodeQuery::default()
            }),
        };
        // The hint is an unverified cache: kept, but never what the target depends on.
        if descriptor.hints.css.as_deref().is_some_and(str::is_empty) {
            descriptor.hints.css = None;
        }
        Ok(Target {
            descriptor,
            label,
            column,
            scope,
            presence,
        })
    }

    /// A value read from a grid row is keyed by that row: when a cell of the row holds a value
    /// the goal names (an account number), that value becomes an input named after its column,
    /// so the identity check compares the row's key with the input rather than a literal.
    fn row_key_input(&mut self, snapshot: &UiSnapshot, node: usize) {
        let Some(row) = snapshot.nearest_ancestor_with_role(node, "row") else {
            return;
        };
        let cells: Vec<usize> = snapshot.nodes[row]
            .children
            .iter()
            .map(|&child| child as usize)
            .filter(|&child| snapshot.nodes[child].role == "cell")
            .collect();
        for cell in cells {
            let text = normalize_name(&cua_target::cell_text(snapshot, cell));
            let known = self.inputs.iter().any(|input| {
                input
                    .example
                    .as_ref()
                    .and_then(ValueExpr::literal_text)
                    .as_deref()
                    == Some(text.as_str())
            });
            if text.is_empty() || known || !contains_token(&self.goal, &text) {
                continue;
            }
            let Some(column) = column_header(snapshot, cell) else {
                continue;
            };
            let mut name = snake(&column);
            if Identifier::parse(&name).is_err() {
                name = "row_key".to_owned();
            }
            while self.inputs.iter().any(|input| input.name.as_str() == name) {
                name.push_str("_2");
            }
            let Ok(name) = Identifier::parse(&name) else {
                return;
            };
            let pattern = infer_pattern(&text);
            self.notes.push(format!(
                "Input `{name}` selects the row of the {} grid column that discovery read; it was seen once in the goal ({text:?}), and its pattern `{}` was inferred from it.",
                quoted(&column),
                pattern.as_deref().unwrap_or("none")
            ));
            self.inputs.push(InputSpec {
                name,
                value_type: cua_artifact::ValueType::String,
                required: true,
                description: format!(
                    "The {} of the row to read, as the grid shows it.",
                    quoted(&column)
                ),
                pattern,
                allowed: Vec::new(),
                default: None,
                example: Some(ValueExpr::String(text)),
                sensitive: false,
                idempotency_key: false,
            });
            return;
        }
    }

    /// A typed value: a placeholder stays one; a literal seen in the goal becomes an input.
    fn typed_value(&mut self, value: Option<&Value>, label: &str) -> ValueExpr {
        match value {
            Some(Value::Object(map)) => {
                if let Some(name) = map.get("$secret").and_then(Value::as_str)
                    && let Ok(name) = SecretName::parse(name)
                {
                    return ValueExpr::Secret(name);
                }
                if let Some(name) = map.get("$input").and_then(Value::as_str)
                    && let Ok(name) = Identifier::parse(name)
                {
                    if self.inputs.iter().all(|input| input.name != name) {
                        self.inputs.push(InputSpec {
                            name: name.clone(),
                            value_type: cua_artifact::ValueType::String,
                            required: true,
                            description: format!("Typed into {} by placeholder during discovery; sensitive, never shown to the model.", quoted(label)),
                            pattern: None,
                            allowed: Vec::new(),
                            default: None,
                            example: None,
                            sensitive: true,
                            idempotency_key: false,
                        });
                        self.notes.push(format!("Input `{name}` is sensitive and was never seen, so it has no pattern; add one."));
                    }
                    return ValueExpr::Input(name);
                }
                ValueExpr::String(Value::Object(map.clone()).to_string())
            }
            Some(Value::String(literal)) => {
                if let Some(existing) = self.inputs.iter().find(|input| {
                    input
                        .example
                        .as_ref()
                        .and_then(ValueExpr::literal_text)
                        .as_deref()
                        == Some(literal.as_str())
                }) {
                    return ValueExpr::Input(existing.name.clone());
                }
                if !literal.is_empty() && contains_token(&self.goal, literal) {
                    let mut name = snake(label);
                    if name.is_empty() || Identifier::parse(&name).is_err() {
                        name = format!("input_{}", self.inputs.len() + 1);
                    }
                    while self.inputs.iter().any(|input| input.name.as_str() == name) {
                        name.push_str("_2");
                    }
                    let name = Identifier::parse(&name).unwrap_or_else(|_| {
                        Identifier::parse("input").expect("`input` is an identifier")
                    });
                    let pattern = infer_pattern(literal);
                    self.notes.push(match &pattern {
                        Some(pattern) => format!("Input `{name}`: the pattern `{pattern}` was inferred from one example ({literal:?}); widen or narrow it to the real format."),
                        None => format!("Input `{name}` has no pattern (one free-text example); add one if the format is known."),
                    });
                    self.inputs.push(InputSpec {
                        name: name.clone(),
                        value_type: cua_artifact::ValueType::String,
                        required: true,
                        description: format!(
                            "Typed into {}; seen once in discovery's goal.",
                            quoted(label)
                        ),
                        pattern,
                        allowed: Vec::new(),
                        default: None,
                        example: Some(ValueExpr::String(literal.clone())),
                        sensitive: false,
                        idempotency_key: false,
                    });
                    return ValueExpr::Input(name);
                }
                self.notes.push(format!(
                    "A step types the literal {literal:?} into {}; it was not in the goal, so it stays a literal. Make it an input if it varies.",
                    quoted(label)
                ));
                ValueExpr::String(literal.clone())
            }
            _ => ValueExpr::String(String::new()),
        }
    }

    /// What a mutating step's effect looks like, from what changed on screen.
    fn postcondition(
        &mut self,
        action: &Recorded<'_>,
        compiled: &Action,
        target: Option<&Target>,
        id: &Identifier,
    ) -> Option<Predicate> {
        let query = |target: &Target| NodeQuery {
            role: Some(target.descriptor.role.clone()),
            name: target
                .descriptor
                .name
                .as_ref()
                .map(|name| name.value.clone()),
            scope: target.scope.clone(),
            ..NodeQuery::default()
        };
        let predicate = match compiled {
            Action::Type {
                value: ValueExpr::Secret(_),
                ..
            } => {
                // A secret may not appear in a predicate: assert the field is no longer empty.
                target.map(|target| Predicate::Not {
                    of: Box::new(Predicate::NodeHasValue {
                        query: query(target),
                        value: ValueExpr::String(String::new()),
                    }),
                })
            }
            Action::Type { value, .. } | Action::Select { value, .. } => {
                target.map(|target| Predicate::NodeHasValue {
                    query: query(target),
                    value: value.clone(),
                })
            }
            Action::Navigate { url } => {
                let path = url.strip_prefix("{base_url}").unwrap_or(url);
                // Where the recording landed, when the app redirected elsewhere (a sign-in page
                // that will come back): the path it showed, whatever query it carried.
                let landed = action
                    .after
                    .and_then(|after| url_path(&after.url))
                    .filter(|landed| path.split(['?', '#']).next() != Some(*landed));
                let requested = Predicate::UrlMatches {
                    pattern: format!("{}$", regex_escape(path)),
                };
                // Either place will do: a replay that starts signed in is not redirected.
                Some(match landed {
                    Some(landed) => Predicate::AnyOf {
                        of: vec![
                            requested,
                            Predicate::UrlMatches {
                                pattern: format!(
                                    "^[a-z][a-z0-9+.-]*://[^/?#]*{}([?#]|$)",
                                    regex_escape(landed)
                                ),
                            },
                        ],
                    },
                    None => requested,
                })
            }
            Action::Click { .. } | Action::PressKey { .. } => self.changed(action, target),
            _ => None,
        };
        if predicate.is_none() {
            self.warnings.push(format!("step `{id}` changed nothing the compiler could observe; a reviewer must state its postcondition"));
        }
        predicate
    }

    /// The clicked control gone, or else a heading (or any named node) that appeared.
    fn changed(&self, action: &Recorded<'_>, target: Option<&Target>) -> Option<Predicate> {
        let after = action.after?;
        if let Some(target) = target
            && let Some(name) = &target.descriptor.name
        {
            let still_there = after.nodes.iter().any(|node| {
                node.role == target.descriptor.role
                    && fold(&node.name) == fold(&name.value)
                    && target.scope.as_ref().is_none_or(|scope| {
                        scope.frame.is_none() || node.scope.frame == scope.frame
                    })
            });
            if !still_there {
                return Some(Predicate::NodeAbsent {
                    query: NodeQuery {
                        role: Some(target.descriptor.role.clone()),
                        name: Some(name.value.clone()),
                        scope: target.scope.clone(),
                        ..NodeQuery::default()
                    },
                });
            }
        }
        let before: BTreeSet<(String, String)> = action
            .before
            .nodes
            .iter()
            .map(|node| (node.role.clone(), fold(&node.name)))
            .collect();
        let appeared = |role: Option<&str>| {
            after.nodes.iter().find(|node| {
                role.is_none_or(|role| node.role == role)
                    && !node.name.is_empty()
                    && !cua_target::looks_like_datum(&node.name)
                    && !matches!(node.role.as_str(), "document" | "text" | "row" | "table")
                    && !before.contains(&(node.role.clone(), fold(&node.name)))
            })
        };
        let node = appeared(Some("heading")).or_else(|| appeared(None))?;
        Some(node_exists(NodeQuery {
            role: Some(node.role.clone()),
            name: Some(normalize_name(&node.name)),
            scope: node.scope.frame.clone().map(|frame| NodeScope {
                frame: Some(frame),
                region: None,
            }),
            ..NodeQuery::default()
        }))
    }

    /// The checkpoint parts for one extracted value: its label (or column header) present, and
    /// a value of its shape present.
    fn checkpoint_for(&mut self, target: &Target, shape: Shape) {
        let mut parts = vec![target.presence.clone()];
        if let Some(pattern) = shape.screen_pattern() {
            parts.push(node_exists(NodeQuery {
                role: Some(target.descriptor.role.clone()),
                name_matches: Some(pattern.to_owned()),
                scope: target.scope.clone(),
                ..NodeQuery::default()
            }));
        }
        for part in parts {
            if !self.checkpoint.contains(&part) {
                self.checkpoint.push(part);
            }
        }
    }

    fn checkpoint(&mut self) -> Predicate {
        if !self.checkpoint.is_empty() {
            return Predicate::AllOf {
                of: self.checkpoint.clone(),
            };
        }
        self.notes.push("The run extracted nothing, so the checkpoint is the last step's postcondition; make it assert the goal's own evidence (a confirmation number, a changed value).".to_owned());
        self.steps
            .iter()
            .rev()
            .find_map(|step| step.postcondition.clone())
            .unwrap_or(Predicate::HttpStatusIn { codes: vec![200] })
    }

    /// The goal with every input's example replaced by `{name}`.
    fn parameterize(&self, goal: &str) -> String {
        self.inputs.iter().fold(goal.to_owned(), |goal, input| {
            match input.example.as_ref().and_then(ValueExpr::literal_text) {
                Some(example) => goal.replace(&example, &format!("{{{}}}", input.name)),
                None => goal,
            }
        })
    }

    fn step_id(&mut self, wanted: &str) -> Identifier {
        let mut base: String = snake(wanted).chars().take(56).collect();
        if base.is_empty() || !base.starts_with(|c: char| c.is_ascii_lowercase()) {
            base = format!("step_{base}");
        }
        let mut id = base.clone();
        let mut counter = 2;
        while self.step_ids.contains(&id) {
            id = format!("{base}_{counter}");
            counter += 1;
        }
        self.step_ids.insert(id.clone());
        Identifier::parse(&id)
            .unwrap_or_else(|_| Identifier::parse("step").expect("`step` is an identifier"))
    }

    fn review_notes(&self, run_id: &str, model: &str) -> String {
        let mut notes = format!(
            "DRAFT compiled from discovery run {run_id} ({model}). Before it is sealed and approved, a reviewer must:\n\
             1. Outcomes: add each legitimate non-success answer the application gives (no such record, not authorized, \
             nothing on file) with a detector for what it shows. This run only saw its own path; the compiler invents none.\n\
             2. Recovery: add bounded rules only for transient conditions known to occur (a gateway error answered by a \
             reload, an expired session answered by a pinned sign-on), each with max_attempts.\n\
             3. Inputs: check every pattern; each was inferred from the one value discovery used.\n\
             4. Checkpoint: confirm it asserts the goal's own evidence and fails on a screen that merely loaded.\n\
             5. Postconditions: each describes the change this run observed; make sure an outcome screen does not \
             also satisfy a step it should stop.\n\
             These are gaps, not omissions: detectors for screens a run never observed would make the error handling fiction."
        );
        if !self.notes.is_empty() {
            notes.push_str("\nNOTES FROM THIS RUN:");
            for note in &self.notes {
                notes.push_str("\n- ");
                notes.push_str(note);
            }
        }
        if !self.warnings.is_empty() {
            notes.push_str("\nCOMPILER WARNINGS FROM THIS RUN:");
            for warning in &self.warnings {
                notes.push_str("\n- ");
                notes.push_str(warning);
            }
        }
        notes
    }
}

/// A compiled target and what the step around it needs.
struct Target {
    descriptor: TargetDescriptor,
    /// A human name for the control: its name, its anchor's text, or its column header.
    label: String,
    /// The column header of a grid cell.
    column: Option<String>,
    scope: Option<NodeScope>,
    /// A predicate that holds when the control (or its label) is on screen.
    presence: Predicate,
}

/// The actions that become steps, in trace order, with their snapshots.
fn recorded_actions(run: &RecordedRun) -> Result<Vec<Recorded<'_>>, CompileError> {
    let has_phase = run.lines.iter().any(|line| is_note(line, PHASE_NOTE));
    let mut in_goal = !has_phase;
    let mut actions = Vec::new();
    for (position, line) in run.lines.iter().enumerate() {
        let Event::Note(note) = &line.event else {
            continue;
        };
        if note.note == PHASE_NOTE {
            in_goal = note.data.get("phase").and_then(Value::as_str) == Some("goal");
            continue;
        }
        if note.note != ACTION_NOTE || !in_goal {
            continue;
        }
        let outcome = note
            .data
            .get("outcome")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !matches!(outcome, "dispatched" | "extracted") {
            continue;
        }
        let before_ref = note
            .data
            .get("snapshot_ref")
            .and_then(Value::as_str)
            .ok_or_else(|| CompileError::Trace {
                reason: format!("action note at line {} names no snapshot", line.seq),
            })?
            .to_owned();
        let before = run
            .snapshots
            .get(&before_ref)
            .ok_or_else(|| CompileError::Snapshot {
                path: before_ref.clone(),
                reason: "the trace names it but the run has no such snapshot".to_owned(),
            })?;
        let after = run.lines[position + 1..]
            .iter()
            .find_map(|later| match &later.event {
                Event::Observe(observe) => observe
                    .snapshot_ref
                    .as_ref()
                    .and_then(|reference| run.snapshots.get(reference)),
                _ => None,
            });
        let decision = note.data.get("decision_id").and_then(Value::as_str);
        let navigated = note.data.get("navigated").and_then(Value::as_bool).unwrap_or_else(|| {
            run.lines.iter().any(|line| matches!(&line.event, Event::Dispatch(dispatch) if Some(dispatch.decision_id.as_str()) == decision && dispatch.navigated))
        });
        let risk = run
            .lines
            .iter()
            .find_map(|line| match &line.event {
                Event::Authorize(authorize)
                    if authorize.granted && Some(authorize.decision_id.as_str()) == decision =>
                {
                    Some(authorize.risk)
                }
                _ => None,
            })
            .unwrap_or_default();
        actions.push(Recorded {
            tool: note
                .data
                .get("tool")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            data: &note.data,
            before,
            before_ref,
            after,
            navigated,
            risk,
        });
    }
    Ok(actions)
}

fn is_note(line: &TraceLine, name: &str) -> bool {
    matches!(&line.event, Event::Note(note) if note.note == name)
}

/// The discovery's stop reason, from `run_end`.
fn stop_reason(lines: &[TraceLine]) -> Option<String> {
    lines.iter().rev().find_map(|line| match &line.event {
        Event::RunEnd(end) => end.stop_reason.clone(),
        _ => None,
    })
}

/// `http://host:port/path` → (`http://host:port`, `/path`).
fn split_origin(url: &str) -> (String, String) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (String::new(), url.to_owned());
    };
    match rest.find(['/', '?', '#']) {
        Some(cut) => (
            format!("{scheme}://{}", &rest[..cut]),
            rest[cut..].to_owned(),
        ),
        None => (format!("{scheme}://{rest}"), "/".to_owned()),
    }
}

/// The model that drove the run, marked `(scripted)` when it was the scripted model.
fn model_label(start: &RunStart, lines: &[TraceLine]) -> String {
    let scripted = start.scripted_model == Some(true)
        || lines
            .iter()
            .any(|line| matches!(&line.event, Event::LlmCall(call) if call.scripted));
    let model = start.model.clone().unwrap_or_else(|| "unknown".to_owned());
    match (scripted, model.as_str()) {
        (true, "scripted") => "scripted".to_owned(),
        (true, _) => format!("{model} (scripted)"),
        (false, _) => model,
    }
}

/// `Member Number` → `member_number`.
fn snake(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').chars().take(64).collect()
}

/// Whether `token` occurs in `text` as a whole word.
fn contains_token(text: &str, token: &str) -> bool {
    text.match_indices(token).any(|(start, _)| {
        let before = text[..start].chars().next_back();
        let after = text[start + token.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

fn first_sentence(text: &str) -> String {
    let sentence = text
        .split_inclusive(". ")
        .next()
        .unwrap_or(text)
        .trim()
        .trim_end_matches('.');
    sentence.chars().take(120).collect()
}

fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn quoted(text: &str) -> String {
    format!("\"{text}\"")
}

fn render_value(value: &ValueExpr) -> String {
    value.to_string()
}

fn shape_name(shape: Shape) -> &'static str {
    match shape {
        Shape::Money => "money",
        Shape::Date => "date",
        Shape::Digits => "number",
        Shape::Code => "code",
        Shape::Text => "text",
    }
}

fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn node_exists(query: NodeQuery) -> Predicate {
    Predicate::NodeExists {
        query,
        min_count: 1,
    }
}

/// The header of the column a grid cell sits in: the same position in its table's first row,
/// checked by reading that column back.
fn column_header(snapshot: &UiSnapshot, node: usize) -> Option<String> {
    let cell = if snapshot.nodes[node].role == "cell" {
        node
    } else {
        snapshot.nearest_ancestor_with_role(node, "cell")?
    };
    let row = snapshot.nearest_ancestor_with_role(cell, "row")?;
    let table = snapshot.nearest_ancestor_with_role(row, "table")?;
    let header_row = snapshot
        .descendants(table)
        .find(|&inside| snapshot.nodes[inside].role == "row")?;
    if header_row == row {
        return None;
    }
    let cells = |row: usize| -> Vec<usize> {
        snapshot.nodes[row]
            .children
            .iter()
            .map(|&child| child as usize)
            .filter(|&child| snapshot.nodes[child].role == "cell")
            .collect()
    };
    let position = cells(row).iter().position(|&candidate| candidate == cell)?;
    let header_cells = cells(header_row);
    let data_columns = cells(row).len();
    if data_columns < 3 || header_cells.len() != data_columns {
        return None;
    }
    let header = normalize_name(&cua_target::cell_text(
        snapshot,
        *header_cells.get(position)?,
    ));
    if header.is_empty() || cua_target::looks_like_datum(&header) {
        return None;
    }
    (read_by_column(snapshot, cell, &header) == Some(cell)).then_some(header)
}

/// The path of an absolute URL (`http://host:port/login?x` is `/login`), or `None`.
fn url_path(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let path = &rest[rest.find('/')?..];
    Some(path.split(['?', '#']).next().unwrap_or(path))
}
