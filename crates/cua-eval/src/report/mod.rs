//! The suite report: one value every output is rendered from. The JSON report is its
//! serialization; the Markdown and HTML pages are views of it; the evaluation document
//! (`cua.capability_evaluation/v1`) is the part `cua catalog approve --from-eval` reads.

mod html;
mod markdown;
mod svg;

use std::path::{Path, PathBuf};

use cua_artifact::{CapabilityEvaluation, CapabilityRef, ContentHash, EvaluationSchema, TenantId};
use cua_fs::{Dir, FileMode};
use serde::Serialize;

use crate::error::EvalError;
use crate::runner::{SetupObservation, SuitePlan, SuiteRuns};
use crate::score::{self, CaseSummary, Metrics, RunRow, StepDrift};
use crate::suite::Sensitive;

pub use html::escape as escape_html;

/// The report's schema literal.
pub const REPORT_SCHEMA: &str = "cua.eval_report/v1";

/// What a reviewer should conclude, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A wrong action or an unauthorized dispatch: never run this unattended.
    Unsound,
    /// The same inputs produced different decisions.
    NonDeterministic,
    /// Too few runs, or too many that did not answer, to vouch for it.
    Untrustworthy,
    /// No case ran twice, so determinism was not shown.
    Unverified,
    /// Enough runs, every answer right, nothing unauthorized, the same decisions every time.
    Sound,
}

impl Verdict {
    /// The verdict in capitals, as the reports headline it.
    pub fn headline(self) -> &'static str {
        match self {
            Self::Unsound => "UNSOUND",
            Self::NonDeterministic => "NON-DETERMINISTIC",
            Self::Untrustworthy => "UNTRUSTWORTHY",
            Self::Unverified => "UNVERIFIED",
            Self::Sound => "SOUND",
        }
    }

    /// One sentence saying why.
    pub fn explanation(self, metrics: &Metrics) -> String {
        match self {
            Self::Unsound => format!(
                "{} wrong action(s) and {} unauthorized dispatch(es); a single one disqualifies the capability from unattended use",
                metrics.wrong_actions, metrics.unauthorized_dispatches
            ),
            Self::NonDeterministic => format!(
                "the same inputs produced different decision traces ({})",
                metrics.nondeterministic_cases.join(", ")
            ),
            Self::Untrustworthy => format!(
                "no wrong action, but {} run(s) at {:.0}% stability; at least 5 runs and 95% are needed",
                metrics.runs,
                metrics.stability * 100.0
            ),
            Self::Unverified => {
                "no wrong action, but no input ran twice, so determinism was not shown".to_owned()
            }
            Self::Sound => format!(
                "no wrong action, no unauthorized dispatch, {:.0}% stable, identical decisions on every repeat",
                metrics.stability * 100.0
            ),
        }
    }
}

/// Everything one suite run produced, scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteReport {
    pub schema: &'static str,
    pub suite: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub capability: CapabilityRef,
    /// The sealed hash of the capability as the catalog holds it: what the evaluation pins.
    pub content_hash: ContentHash,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<TenantId>,
    /// What the suite ran against (`fixture first-valley`).
    pub target: String,
    pub repeats: u32,
    pub verdict: Verdict,
    /// No wrong action and no unauthorized dispatch: what `cua eval`'s exit code says.
    pub sound_for_exit: bool,
    pub metrics: Metrics,
    pub cases: Vec<CaseSummary>,
    /// Resolutions per step, in the capability's order.
    pub steps: Vec<StepDrift>,
    pub runs: Vec<RunRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<SetupRow>,
}

/// A setup replay, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetupRow {
    pub run_id: String,
    pub capability: String,
    pub status: String,
    pub evidence_ref: String,
}

/// The files one suite's reports were written to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WrittenReports {
    pub markdown: PathBuf,
    pub json: PathBuf,
    pub html: PathBuf,
    pub evaluation: PathBuf,
}

impl SuiteReport {
    /// Scores a suite's runs.
    pub fn build(plan: &SuitePlan, runs: &SuiteRuns) -> Self {
        let suite = &plan.suite;
        let sensitive = Sensitive::of(&plan.base);
        let rows = score::rows(suite, &runs.runs, &sensitive);
        let metrics = score::metrics(suite, &runs.runs, &rows, &sensitive);
        let cases = score::cases(suite, &runs.runs, &rows, &sensitive);
        let order: Vec<String> = plan
            .prepared
            .capability
            .steps
            .iter()
            .map(|step| step.id.to_string())
            .collect();
        let steps = score::steps(&order, &runs.runs);
        let verdict = if metrics.wrong_actions > 0 || metrics.unauthorized_dispatches > 0 {
            Verdict::Unsound
        } else if metrics.determinism_holds == Some(false) {
            Verdict::NonDeterministic
        } else if metrics.runs < CapabilityEvaluation::MIN_RUNS
            || metrics.stability < CapabilityEvaluation::MIN_STABILITY
        {
            Verdict::Untrustworthy
        } else if metrics.determinism_holds.is_none() {
            Verdict::Unverified
        } else {
            Verdict::Sound
        };
        let content_hash = plan
            .base
            .content_hash
            .clone()
            .unwrap_or_else(|| plan.base.compute_hash());
        Self {
            schema: REPORT_SCHEMA,
            suite: suite.name.to_string(),
            description: suite.description.clone(),
            capability: suite.capability.clone(),
            content_hash,
            tenant: suite.tenant.clone(),
            target: plan.target.clone(),
            repeats: suite.repeats,
            verdict,
            sound_for_exit: metrics.wrong_actions == 0 && metrics.unauthorized_dispatches == 0,
            metrics,
            cases,
            steps,
            runs: rows,
            setup: runs.setup.iter().map(setup_row).collect(),
        }
    }

    /// The `cua.capability_evaluation/v1` document: pinned to the sealed hash of the
    /// capability as the catalog holds it, which is where `cua catalog approve --from-eval`
    /// looks for it.
    pub fn evaluation(&self) -> CapabilityEvaluation {
        let metrics = &self.metrics;
        CapabilityEvaluation {
            schema: EvaluationSchema::V1,
            capability: self.capability.clone(),
            content_hash: self.content_hash.clone(),
            suite: Some(self.suite.clone()),
            tenant: self.tenant.clone(),
            runs: metrics.runs,
            successes: metrics.successes,
            business_outcomes: metrics.business_outcomes,
            needs_human: metrics.needs_human,
            failures: metrics.failures,
            wrong_actions: metrics.wrong_actions,
            unauthorized_dispatches: Some(metrics.unauthorized_dispatches),
            ambiguity_refusals: metrics.ambiguity_refusals,
            determinism_holds: metrics.determinism_holds,
            mean_drift: metrics.mean_drift,
            strategy_mix: metrics.strategy_mix.clone(),
            fallback_rate: metrics.fallback_rate,
        }
    }

    /// The JSON report, pretty-printed, ending in a newline.
    pub fn json(&self) -> Result<String, EvalError> {
        pretty(self, "JSON report")
    }

    /// The evaluation document as JSON, ending in a newline.
    pub fn evaluation_json(&self) -> Result<String, EvalError> {
        pretty(&self.evaluation(), "evaluation")
    }

    /// The Markdown report.
    pub fn markdown(&self) -> String {
        markdown::render(self)
    }

    /// The static HTML page with its charts (inline SVG, no script).
    pub fn html(&self) -> Result<String, EvalError> {
        html::render(self)
    }

    /// Writes `<suite>.md`, `<suite>.json`, `<suite>.html` and `<suite>.evaluation.json` into
    /// `directory` (created if missing), each whole or not at all and never through a link: a
    /// `directory` that is a link, or a report name that is one, is refused.
    pub fn write(&self, directory: &Path) -> Result<WrittenReports, EvalError> {
        let reports = Dir::create_all(directory, FileMode::Readable)?;
        let written = WrittenReports {
            markdown: directory.join(format!("{}.md", self.suite)),
            json: directory.join(format!("{}.json", self.suite)),
            html: directory.join(format!("{}.html", self.suite)),
            evaluation: directory.join(format!("{}.evaluation.json", self.suite)),
        };
        for (path, text) in [
            (&written.markdown, self.markdown()),
            (&written.json, self.json()?),
            (&written.html, self.html()?),
            (&written.evaluation, self.evaluation_json()?),
        ] {
            let name = path
                .file_name()
                .and_then(|name| name.to_str())
                .expect("a report is named after its suite, which is a plain file name");
            reports.write_atomic(name, text.as_bytes(), FileMode::Readable)?;
        }
        Ok(written)
    }
}

/// What a run returned, in one line: its outcome, its failure code and step, or its outputs
/// as `name{equals}value` (each report spaces the sign its own way).
fn returned(row: &RunRow, equals: &str) -> String {
    match (&row.outcome, &row.failure_code) {
        (Some(outcome), _) => format!("outcome {outcome}"),
        (None, Some(code)) => format!(
            "{}{}",
            code.as_str(),
            row.failure_step
                .as_ref()
                .map(|step| format!(" at {step}"))
                .unwrap_or_default()
        ),
        (None, None) => row
            .outputs
            .iter()
            .map(|(name, value)| format!("{name}{equals}{}", score::plain(value)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn setup_row(observation: &SetupObservation) -> SetupRow {
    SetupRow {
        run_id: observation.run_id.clone(),
        capability: observation.capability.clone(),
        status: score::status_name(observation.status).to_owned(),
        evidence_ref: observation.evidence_ref.clone(),
    }
}

fn pretty<T: Serialize>(value: &T, what: &'static str) -> Result<String, EvalError> {
    serde_json::to_string_pretty(value)
        .map(|mut text| {
            text.push('\n');
            text
        })
        .map_err(|error| EvalError::Serialize {
            what,
            reason: error.to_string(),
        })
}
