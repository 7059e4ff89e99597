//! Trace → draft capability.

mod conditions;
mod notes;
mod target;
mod trace;
mod values;

use std::collections::{BTreeMap, BTreeSet};

use cua_artifact::{
    Action, ActionKind, AppIdentity, Capability, CapabilityId, CapabilityPolicy, CapabilitySchema,
    DiscoveredBy, DriverCapability, Entrypoint, Escalation, Identifier, InputSpec, NodeScope,
    OutputSource, OutputSpec, Predicate, Provenance, RiskTier, SemVer, Step, Surface, SurfaceKind,
    TargetDescriptor, WaitCondition, WaitPolicy,
};
use cua_evidence::Event;
use cua_snapshot::UiSnapshot;
use serde_json::Value;

use crate::error::CompileError;
use crate::run::RecordedRun;
use crate::shape::Shape;
use notes::{first_sentence, list, quoted, render_value, shape_name, snake};
use trace::{model_label, recorded_actions, split_origin, stop_reason};

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
