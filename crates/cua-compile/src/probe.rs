//! Probe: every step's target resolved against the snapshots a run recorded, without touching a
//! live system, so drift is found before a replay fails on it.
//!
//! [`load_snapshots`] reads a run directory's `snapshots/NNNN-<label>.json` in order, and from
//! its trace the inputs of `run_start` and, for every step the run resolved, the snapshot it was
//! resolved on (the last `observe` before the step's `resolve`). [`probe`] resolves each step's
//! target against exactly that snapshot, or, for a run without that record, the snapshot
//! labelled `<step id>-before`. A step the run never reached is `not_reached`: it is never
//! tried against some other screen, where a target can look unique on a page it was never
//! meant for. Each step is reported `unique`, `drifted` (resolved, on a weaker rung than
//! recorded), `ambiguous`, `missing` or `not_reached`, with the rung used and recorded and the
//! candidates.
//!
//! Resolution is replay's own (`cua_target::resolve_with`, replay configuration), so a probe
//! answers exactly what replay would have answered on that screen. Values an identity check
//! needs come from the run's inputs, or else the artifact's examples; an extract step's value
//! is read from its resolved node, for later steps that use it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use cua_artifact::{Capability, Identifier, ResolutionStrategy, Step, ValueExpr};
use cua_evidence::{Event, SNAPSHOT_DIR, TRACE_FILE, read_trace};
use cua_snapshot::UiSnapshot;
use cua_target::{
    BoundValues, Resolution, ResolverConfig, SnapshotIndex, TargetError, resolve_with,
};
use serde::Serialize;

use crate::error::CompileError;

/// The snapshots of a run, in the order they were recorded, and the run's inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedSnapshots {
    pub snapshots: Vec<RecordedSnapshot>,
    /// The inputs of the run's `run_start`, as text; empty without a trace.
    pub inputs: BTreeMap<String, String>,
    /// For every step the run resolved: the snapshot file it was resolved on (the last one
    /// observed before its last `resolve`). Empty without a trace.
    pub resolved_on: BTreeMap<String, String>,
}

/// One recorded snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedSnapshot {
    /// The file name, `0003-read_balance-before.json`.
    pub file: String,
    /// The label the run gave it, `read_balance-before`.
    pub label: String,
    pub snapshot: UiSnapshot,
}

/// What a probe found, step by step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeReport {
    /// `id@version` of the probed capability.
    pub capability: String,
    /// Its content hash (of the effective capability, when a tenant binding was applied).
    pub content_hash: Option<String>,
    /// How many snapshots the run holds.
    pub snapshots: usize,
    /// Where the values for identity checks came from.
    pub inputs_from: InputSource,
    pub steps: Vec<StepProbe>,
    pub summary: ProbeSummary,
}

/// Where a probe's input values came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputSource {
    /// The run's `run_start` event.
    RunTrace,
    /// The capability's examples (the run has no trace, or its trace names no inputs).
    Examples,
}

/// One step's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepProbe {
    pub step: String,
    /// The target, described; `None` for a step without one.
    pub target: Option<String>,
    pub status: ProbeStatus,
    /// The snapshot file the answer comes from.
    pub snapshot: Option<String>,
    pub strategy_used: Option<ResolutionStrategy>,
    pub strategy_recorded: Option<ResolutionStrategy>,
    /// The resolved node (unique, drifted) or every surviving candidate (ambiguous).
    pub candidates: Vec<String>,
    /// Why the target is ambiguous or missing.
    pub reason: Option<String>,
}

/// How a step's target resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeStatus {
    /// One node, on the recorded rung or a stronger one.
    Unique,
    /// One node, but on a weaker rung than recorded: it still works, and it is drifting.
    Drifted,
    /// Several candidates: replay would refuse with `target_ambiguous`.
    Ambiguous,
    /// Nothing (or a failed identity check): replay would stop with `target_not_found`.
    Missing,
    /// The run never resolved this step, so there is no screen to check it against.
    NotReached,
    /// The step acts on no target (navigate, reload, a wait, an assertion).
    NoTarget,
}

impl ProbeStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unique => "unique",
            Self::Drifted => "drifted",
            Self::Ambiguous => "ambiguous",
            Self::Missing => "missing",
            Self::NotReached => "not_reached",
            Self::NoTarget => "no_target",
        }
    }
}

/// The counts of a report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ProbeSummary {
    pub unique: usize,
    pub drifted: usize,
    pub ambiguous: usize,
    pub missing: usize,
    pub not_reached: usize,
    pub no_target: usize,
}

impl ProbeReport {
    /// Whether every target resolves to one node on its recorded rung (or a stronger one).
    pub fn is_clean(&self) -> bool {
        self.summary.drifted == 0
            && self.summary.ambiguous == 0
            && self.summary.missing == 0
            && self.summary.not_reached == 0
    }

    /// The report as a table, one row per step, and a summary line.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let hash = self.content_hash.as_deref().unwrap_or("an unsealed draft");
        let inputs = match self.inputs_from {
            InputSource::RunTrace => "inputs from the run's trace",
            InputSource::Examples => "inputs from the capability's examples",
        };
        let _ = writeln!(
            out,
            "{} at {hash}, against {} snapshot{} ({inputs})",
            self.capability,
            self.snapshots,
            plural(self.snapshots)
        );
        let header = [
            "step",
            "status",
            "rung used",
            "rung recorded",
            "snapshot",
            "detail",
        ];
        let rows: Vec<[String; 6]> = self
            .steps
            .iter()
            .map(|step| {
                let rung = |strategy: Option<ResolutionStrategy>| {
                    strategy.map_or_else(|| "-".to_owned(), |strategy| strategy.as_str().to_owned())
                };
                let snapshot = step.snapshot.clone().unwrap_or_else(|| "-".to_owned());
                let detail = match (&step.reason, step.status) {
                    (Some(reason), _) => reason.clone(),
                    (None, ProbeStatus::NoTarget) => String::new(),
                    (None, _) => step.candidates.join(", "),
                };
                [
                    step.step.clone(),
                    step.status.as_str().to_owned(),
                    rung(step.strategy_used),
                    rung(step.strategy_recorded),
                    snapshot,
                    detail,
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut line = |cells: &[&str]| {
            let mut text = String::new();
            for (position, (cell, width)) in cells.iter().zip(widths).enumerate() {
                if position + 1 == cells.len() {
                    text.push_str(cell);
                } else {
                    let _ = write!(text, "{cell:<width$}  ");
                }
            }
            let _ = writeln!(out, "{}", text.trim_end());
        };
        line(&header);
        for row in &rows {
            line(&row.each_ref().map(String::as_str));
        }
        let summary = self.summary;
        let _ = writeln!(
            out,
            "{} step{}: {} unique, {} drifted, {} ambiguous, {} missing, {} not reached, {} without a target",
            self.steps.len(),
            plural(self.steps.len()),
            summary.unique,
            summary.drifted,
            summary.ambiguous,
            summary.missing,
            summary.not_reached,
            summary.no_target
        );
        out
    }
}

/// Reads `snapshots/*.json` of a run directory, in recorded order, and the inputs of its
/// `run_start` when it has a trace.
pub fn load_snapshots(run_dir: &Path) -> Result<RecordedSnapshots, CompileError> {
    // Below the run directory nothing is read through a link, nor without a bound.
    let directory = cua_fs::Dir::open(run_dir)
        .and_then(|run| run.open_dir(SNAPSHOT_DIR))
        .map_err(|error| CompileError::NoSnapshots {
            dir: run_dir.display().to_string(),
            reason: error.to_string(),
        })?;
    let files: Vec<String> = directory
        .entry_names()
        .map_err(|error| CompileError::NoSnapshots {
            dir: run_dir.display().to_string(),
            reason: error.to_string(),
        })?
        .into_iter()
        .filter(|name| name.ends_with(".json") && !name.starts_with('.'))
        .collect();
    if files.is_empty() {
        return Err(CompileError::NoSnapshots {
            dir: run_dir.display().to_string(),
            reason: format!("{SNAPSHOT_DIR}/ holds no snapshot"),
        });
    }
    let mut snapshots = Vec::with_capacity(files.len());
    for file in files {
        let reference = format!("{SNAPSHOT_DIR}/{file}");
        let bytes = directory
            .read(&file, cua_evidence::EVIDENCE_FILE_LIMIT)
            .map_err(|error| CompileError::Snapshot {
                path: reference.clone(),
                reason: error.to_string(),
            })?;
        let snapshot: UiSnapshot =
            serde_json::from_slice(&bytes).map_err(|error| CompileError::Snapshot {
                path: reference.clone(),
                reason: error.to_string(),
            })?;
        let stem = file.trim_end_matches(".json");
        let label = stem
            .split_once('-')
            .filter(|(number, _)| number.chars().all(|c| c.is_ascii_digit()))
            .map_or(stem, |(_, label)| label)
            .to_owned();
        snapshots.push(RecordedSnapshot {
            file,
            label,
            snapshot,
        });
    }
    let mut inputs = BTreeMap::new();
    let mut resolved_on = BTreeMap::new();
    if run_dir.join(TRACE_FILE).is_file() {
        let mut observed: Option<String> = None;
        for line in read_trace(run_dir)? {
            match line.event {
                Event::RunStart(start) if inputs.is_empty() => {
                    for (name, value) in start.inputs {
                        let text = match value {
                            serde_json::Value::String(text) => text,
                            other => other.to_string(),
                        };
                        inputs.insert(name, text);
                    }
                }
                Event::Observe(observe) => {
                    observed = observe.snapshot_ref.map(|reference| {
                        reference
                            .strip_prefix(&format!("{SNAPSHOT_DIR}/"))
                            .unwrap_or(&reference)
                            .to_owned()
                    });
                }
                Event::Resolve(resolve) => {
                    if let (Some(step), Some(file)) = (resolve.step, &observed) {
                        resolved_on.insert(step.to_string(), file.clone());
                    }
                }
                _ => {}
            }
        }
    }
    Ok(RecordedSnapshots {
        snapshots,
        inputs,
        resolved_on,
    })
}

/// Resolves every step's target against the run's snapshots, as replay would.
pub fn probe(capability: &Capability, run: &RecordedSnapshots) -> ProbeReport {
    let indexes: Vec<SnapshotIndex<'_>> = run
        .snapshots
        .iter()
        .map(|recorded| SnapshotIndex::new(&recorded.snapshot))
        .collect();
    let (mut bindings, inputs_from) = bindings(capability, &run.inputs);
    let mut steps = Vec::with_capacity(capability.steps.len());
    let mut summary = ProbeSummary::default();
    for step in &capability.steps {
        let probed = probe_step(step, run, &indexes, &mut bindings);
        match probed.status {
            ProbeStatus::Unique => summary.unique += 1,
            ProbeStatus::Drifted => summary.drifted += 1,
            ProbeStatus::Ambiguous => summary.ambiguous += 1,
            ProbeStatus::Missing => summary.missing += 1,
            ProbeStatus::NotReached => summary.not_reached += 1,
            ProbeStatus::NoTarget => summary.no_target += 1,
        }
        steps.push(probed);
    }
    ProbeReport {
        capability: capability.reference().to_string(),
        content_hash: capability
            .content_hash
            .as_ref()
            .map(|hash| hash.as_str().to_owned()),
        snapshots: run.snapshots.len(),
        inputs_from,
        steps,
        summary,
    }
}

fn probe_step(
    step: &Step,
    run: &RecordedSnapshots,
    indexes: &[SnapshotIndex<'_>],
    bindings: &mut BoundValues,
) -> StepProbe {
    let Some(target) = step.action.target() else {
        return StepProbe {
            step: step.id.to_string(),
            target: None,
            status: ProbeStatus::NoTarget,
            snapshot: None,
            strategy_used: None,
            strategy_recorded: None,
            candidates: Vec::new(),
            reason: None,
        };
    };
    let wanted = file_label(&format!("{}-before", step.id));
    let position = match run.resolved_on.get(step.id.as_str()) {
        Some(file) => run
            .snapshots
            .iter()
            .position(|recorded| &recorded.file == file),
        None if run.resolved_on.is_empty() => run
            .snapshots
            .iter()
            .rposition(|recorded| recorded.label == wanted),
        None => None,
    };
    let answer = position.map(|position| {
        resolve_with(
            &indexes[position],
            target,
            &*bindings,
            &ResolverConfig::REPLAY,
        )
    });
    let mut probed = StepProbe {
        step: step.id.to_string(),
        target: Some(target.describe()),
        status: ProbeStatus::Missing,
        snapshot: position.map(|position| run.snapshots[position].file.clone()),
        strategy_used: None,
        strategy_recorded: target.recorded_strategy,
        candidates: Vec::new(),
        reason: None,
    };
    match answer {
        Some(Ok(resolution)) => {
            if let (Some(position), Some(into)) = (position, extracted_output(step)) {
                record_output(
                    &run.snapshots[position].snapshot,
                    &resolution,
                    into,
                    bindings,
                );
            }
            probed.status = if resolution.drifted {
                ProbeStatus::Drifted
            } else {
                ProbeStatus::Unique
            };
            probed.strategy_used = Some(resolution.strategy);
            probed.candidates = vec![resolution.node_id.to_string()];
        }
        Some(Err(TargetError::Ambiguous {
            strategy,
            count,
            candidates,
            ..
        })) => {
            probed.status = ProbeStatus::Ambiguous;
            probed.strategy_used = Some(strategy);
            probed.candidates = candidates.iter().map(ToString::to_string).collect();
            probed.reason = Some(format!(
                "{count} candidates on {}: {}",
                strategy.as_str(),
                probed.candidates.join("; ")
            ));
        }
        Some(Err(error)) => probed.reason = Some(error.to_string()),
        None => {
            probed.status = ProbeStatus::NotReached;
            probed.reason = Some(
                "the run never resolved this step (it stopped earlier, or it is not a run of \
                 this capability), so there is no screen to check it against"
                    .to_owned(),
            );
        }
    }
    probed
}

/// The inputs a probe binds: the run's, else each input's example (or default).
fn bindings(
    capability: &Capability,
    run_inputs: &BTreeMap<String, String>,
) -> (BoundValues, InputSource) {
    let mut bound = BoundValues::new();
    let from_run = !run_inputs.is_empty();
    for input in &capability.inputs {
        let value = if from_run {
            run_inputs.get(input.name.as_str()).cloned()
        } else {
            input
                .example
                .as_ref()
                .or(input.default.as_ref())
                .and_then(ValueExpr::literal_text)
        };
        if let (Some(value), Ok(name)) = (value, Identifier::parse(input.name.as_str())) {
            bound = bound.with_input(name, value);
        }
    }
    let source = if from_run {
        InputSource::RunTrace
    } else {
        InputSource::Examples
    };
    (bound, source)
}

/// The output an extract step writes.
fn extracted_output(step: &Step) -> Option<&str> {
    match &step.action {
        cua_artifact::Action::Extract { into, .. } => Some(into.as_str()),
        _ => None,
    }
}

/// Binds what an extract step would read (the node's value, else its name), for later steps.
fn record_output(
    snapshot: &UiSnapshot,
    resolution: &Resolution,
    into: &str,
    bindings: &mut BoundValues,
) {
    let Some(node) = snapshot.nodes.get(resolution.node) else {
        return;
    };
    let text = node
        .value
        .as_deref()
        .filter(|value| !value.trim().is_empty())
        .unwrap_or(&node.name);
    if let Ok(name) = Identifier::parse(into) {
        bindings.set_output(name, cua_snapshot::squash_whitespace(text));
    }
}

/// The label as the evidence bus writes it into a file name: lower-case letters, digits and
/// `-`, every other run of characters one `_`.
fn file_label(label: &str) -> String {
    let mut safe = String::new();
    for c in label.chars() {
        if c.is_ascii_alphanumeric() || c == '-' {
            safe.push(c.to_ascii_lowercase());
        } else if !safe.is_empty() && !safe.ends_with('_') {
            safe.push('_');
        }
    }
    safe.trim_end_matches('_').to_owned()
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::file_label;

    #[test]
    fn labels_read_as_the_bus_writes_them() {
        for (label, expected) in [
            ("read_balance-before", "read_balance-before"),
            ("Read Balance-before", "read_balance-before"),
            ("checkpoint", "checkpoint"),
            ("a..b", "a_b"),
        ] {
            assert_eq!(file_label(label), expected, "{label}");
        }
    }
}
