//! Running a suite: the setup capabilities once, then every case `repeats` times, round-robin
//! (all cases, then all cases again), each replay in a run directory of its own, on one surface
//! the caller injects.
//!
//! The surface is a [`SurfaceDriver`] the binary launches (Debian's Chromium): this crate never
//! names a browser, a model or an HTTP client. Each run gets a fresh evidence bus, redactor,
//! secret resolver and lease, exactly as `cua replay` wires one, so an evaluated run is an
//! ordinary replay with ordinary evidence.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cua_artifact::{Capability, PolicyConfig, RunStatus};
use cua_evidence::RunId;
use cua_policy::PolicyEngine;
use cua_replay::{
    CapabilityLoader, PreparedCapability, RecordedEscalations, ReplayConfig, ReplayReport,
    RunRequest, RunSetup, RunWiring,
};
use cua_surface::SurfaceDriver;
use serde_json::Value;

use crate::error::EvalError;
use crate::suite::EvalSuite;

/// Everything a suite run is wired with. The binary builds it; tests can wire any surface.
pub struct Evaluator<'a, D: SurfaceDriver> {
    pub driver: &'a D,
    /// The global policy; every run narrows it to its capability.
    pub policy: &'a PolicyEngine,
    /// The policy document, for its redaction rules and its secret prefix.
    pub policy_config: &'a PolicyConfig,
    /// Where `run_capability` remedies come from.
    pub capabilities: &'a dyn CapabilityLoader,
    /// The environment secrets are resolved from (`<prefix><NAME>` variables).
    pub environment: BTreeMap<String, String>,
    /// The directory the suite's run directories are created in; it must not hold runs of the
    /// same ids already.
    pub runs_dir: PathBuf,
    pub config: ReplayConfig,
    /// Resets the application and arms exactly the given faults, before every run of a case
    /// that lists `faults`. The binary wires the fixture's control; a suite against an
    /// application that has none cannot list faults.
    pub prepare: &'a (dyn Fn(&[String]) -> Result<(), String> + Send + Sync),
}

/// A [`Evaluator::prepare`] for applications without faults: refuses every case that asks.
pub fn no_faults(faults: &[String]) -> Result<(), String> {
    Err(format!(
        "the application has no fault control, so faults {faults:?} cannot be armed"
    ))
}

/// A suite ready to run: the document, the capability as the catalog holds it (its sealed hash
/// is what the evaluation is pinned to), the capability as it runs (tenant binding and base URL
/// applied), and the setup capabilities, prepared the same way.
#[derive(Debug, Clone)]
pub struct SuitePlan {
    pub suite: EvalSuite,
    pub base: Capability,
    pub prepared: PreparedCapability,
    pub setup: Vec<PreparedCapability>,
    /// What the suite ran against, for the reports (`fixture first-valley`).
    pub target: String,
}

/// One measured replay.
#[derive(Debug, Clone, PartialEq)]
pub struct RunObservation {
    /// The index of the case in the suite.
    pub case: usize,
    /// 1-based.
    pub repeat: u32,
    pub run_id: String,
    pub report: ReplayReport,
    /// [`ReplayReport::decision_trace`], kept for the determinism check.
    pub decision_trace: String,
    /// Dispatches in the run's trace with no granted authorization before them.
    pub unauthorized_dispatches: u32,
}

/// One setup replay.
#[derive(Debug, Clone, PartialEq)]
pub struct SetupObservation {
    pub run_id: String,
    pub capability: String,
    pub status: RunStatus,
    pub evidence_ref: String,
}

/// Everything a suite run produced, in the order it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteRuns {
    pub setup: Vec<SetupObservation>,
    pub runs: Vec<RunObservation>,
}

impl<D: SurfaceDriver> Evaluator<'_, D> {
    /// Runs the setup capabilities (a setup that does not succeed stops the suite: nothing
    /// measured after it would start from a known state), then every case `repeats` times.
    /// `on_run` sees each measured run as it finishes (progress on stderr, in the binary).
    pub async fn run(
        &self,
        plan: &SuitePlan,
        mut on_run: impl FnMut(&RunObservation),
    ) -> Result<SuiteRuns, EvalError> {
        let suite = &plan.suite;
        let mut setup = Vec::new();
        for (position, prepared) in plan.setup.iter().enumerate() {
            let run_id = format!("{}-setup-{:02}", suite.name, position + 1);
            let inputs = suite
                .setup
                .get(position)
                .map(|run| {
                    run.inputs
                        .iter()
                        .map(|(name, value)| (name.clone(), value.to_json()))
                        .collect()
                })
                .unwrap_or_default();
            let report = self.replay(prepared, &run_id, inputs).await?;
            let status = report.result.status;
            if !matches!(status, RunStatus::Success | RunStatus::BusinessOutcome) {
                return Err(EvalError::SetupFailed {
                    capability: prepared.capability.reference().to_string(),
                    run_dir: report.evidence_dir.clone(),
                    summary: report.result.summary(),
                });
            }
            setup.push(SetupObservation {
                run_id,
                capability: prepared.capability.reference().to_string(),
                status,
                evidence_ref: report.evidence_dir.display().to_string(),
            });
        }
        let mut runs = Vec::new();
        for repeat in 1..=suite.repeats {
            for (case_index, case) in suite.cases.iter().enumerate() {
                let run_id = format!("{}-{:02}-{:02}", suite.name, case_index + 1, repeat);
                // In a suite that arms faults, a case that lists none runs on a reset, unarmed
                // application rather than on what the case before it armed.
                let faults = match &case.faults {
                    Some(faults) => Some(faults.as_slice()),
                    None if suite.cases.iter().any(|other| other.faults.is_some()) => Some(&[][..]),
                    None => None,
                };
                if let Some(faults) = faults {
                    (self.prepare)(faults).map_err(|reason| EvalError::Prepare {
                        run_id: run_id.clone(),
                        reason,
                    })?;
                }
                let report = self
                    .replay(&plan.prepared, &run_id, case.json_inputs())
                    .await?;
                let unauthorized_dispatches = count_unauthorized(&report.evidence_dir)?;
                let observation = RunObservation {
                    case: case_index,
                    repeat,
                    run_id,
                    decision_trace: report.decision_trace(),
                    report,
                    unauthorized_dispatches,
                };
                on_run(&observation);
                runs.push(observation);
            }
        }
        Ok(SuiteRuns { setup, runs })
    }

    /// One replay into `<runs_dir>/<run_id>`, wired like `cua replay` wires one.
    async fn replay(
        &self,
        prepared: &PreparedCapability,
        run_id: &str,
        inputs: BTreeMap<String, Value>,
    ) -> Result<ReplayReport, EvalError> {
        let id = RunId::parse(run_id).map_err(|error| EvalError::Evidence {
            run_id: run_id.to_owned(),
            reason: error.to_string(),
        })?;
        let wiring = RunWiring::open(RunSetup::new(
            &self.runs_dir,
            id,
            self.policy_config,
            self.environment.clone(),
        ))
        .map_err(|error| EvalError::Evidence {
            run_id: run_id.to_owned(),
            reason: error.to_string(),
        })?;
        let escalations = RecordedEscalations::new();
        let replayer = wiring.replayer(
            self.driver,
            self.policy,
            self.capabilities,
            &escalations,
            self.config.clone(),
        );
        replayer
            .run(RunRequest::new(prepared.clone(), inputs))
            .await
            .map_err(|error| EvalError::Replay {
                run_id: run_id.to_owned(),
                source: Box::new(error),
            })
    }
}

/// Dispatches in a finished run's trace that no granted `authorize` of the same decision id,
/// actor and epoch precedes.
fn count_unauthorized(run_dir: &Path) -> Result<u32, EvalError> {
    let lines = cua_evidence::read_trace(run_dir).map_err(|error| EvalError::Evidence {
        run_id: run_dir.display().to_string(),
        reason: error.to_string(),
    })?;
    Ok(u32::try_from(cua_evidence::unauthorized_dispatches(&lines).len()).unwrap_or(u32::MAX))
}
