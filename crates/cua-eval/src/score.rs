//! Scoring: each run judged against its case's truth, then the suite's metrics.
//!
//! - A **wrong action** is a run that answered, and answered wrong: a success whose pinned
//!   output differs from the truth (or is missing), a success where the truth is a business
//!   outcome, or a business outcome where the truth is a success or another outcome. Refusing
//!   to answer (`needs_human`, `failed`) is never a wrong action: it is what the executor does
//!   instead of guessing.
//! - **Determinism** holds when every case that ran more than once produced byte-identical
//!   decision traces on every repeat; it is unknown (`None`) when no case ran twice.
//! - **Drift** of a run is its drifted resolutions over its resolutions; the suite's mean drift
//!   is the mean over runs, and the fallback rate is drifted over all resolutions.
//! - **Replay time** is the executor's own duration of each run; p50 and p95 are nearest-rank.

use std::collections::BTreeMap;

use cua_artifact::{FailureCode, ResolutionStrategy, RunStatus};
use serde::Serialize;
use serde_json::Value;

use crate::runner::RunObservation;
use crate::suite::{EvalSuite, Sensitive, Truth};

/// How one run's answer compares with the truth.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "answer", content = "why")]
pub enum Answer {
    /// The run returned exactly what the truth says.
    Correct,
    /// The run answered, and the answer is wrong.
    WrongAction(String),
    /// The run refused to answer (needs a human, or failed closed).
    Unanswered(String),
}

impl Answer {
    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Correct => "correct",
            Self::WrongAction(_) => "wrong_action",
            Self::Unanswered(_) => "unanswered",
        }
    }

    /// Why, for wrong and unanswered runs.
    pub fn why(&self) -> &str {
        match self {
            Self::Correct => "",
            Self::WrongAction(why) | Self::Unanswered(why) => why,
        }
    }
}

/// The suite's headline numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    pub runs: u32,
    pub successes: u32,
    pub business_outcomes: u32,
    pub needs_human: u32,
    pub failures: u32,
    pub correct: u32,
    pub wrong_actions: u32,
    pub unauthorized_dispatches: u32,
    /// Runs that stopped because two candidates survived (`target_ambiguous`).
    pub ambiguity_refusals: u32,
    /// `None` when no case ran twice.
    pub determinism_holds: Option<bool>,
    /// The labels of the cases whose repeats disagreed.
    pub nondeterministic_cases: Vec<String>,
    /// Successes and business outcomes over runs.
    pub stability: f64,
    pub mean_drift: f64,
    pub fallback_rate: f64,
    /// Resolutions per rung of the ladder, over every run.
    pub strategy_mix: BTreeMap<ResolutionStrategy, u32>,
    pub replay_ms: Latency,
}

/// Replay time over the runs, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    pub min: u64,
    pub p50: u64,
    pub p95: u64,
    pub max: u64,
    pub mean: u64,
}

/// One run as the reports show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    /// The case's label.
    pub case: String,
    pub repeat: u32,
    pub run_id: String,
    pub status: RunStatus,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<FailureCode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_step: Option<String>,
    #[serde(flatten)]
    pub answer: Answer,
    pub drift_score: f64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub strategy_mix: BTreeMap<ResolutionStrategy, u32>,
    pub duration_ms: u64,
    pub dispatches: u32,
    pub unauthorized_dispatches: u32,
    pub evidence_ref: String,
}

/// One case over its repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseSummary {
    pub label: String,
    pub inputs: BTreeMap<String, Value>,
    /// The truth in one line.
    pub expect: String,
    pub runs: u32,
    pub correct: u32,
    pub wrong_actions: u32,
    pub unanswered: u32,
    /// `None` when the case ran once.
    pub deterministic: Option<bool>,
}

/// How one step's target was found over every run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepDrift {
    pub step: String,
    pub resolutions: u32,
    pub drifted: u32,
    pub strategies: BTreeMap<ResolutionStrategy, u32>,
}

impl StepDrift {
    /// Drifted over resolutions; 0 when the step never resolved.
    pub fn rate(&self) -> f64 {
        ratio(self.drifted, self.resolutions)
    }
}

/// Judges one run against the truth of its case.
pub fn judge(truth: &Truth, observation: &RunObservation, sensitive: &Sensitive) -> Answer {
    let result = &observation.report.result;
    match (result.status, truth) {
        (RunStatus::Success, Truth::Outputs(expected)) => {
            let mut differences = Vec::new();
            for (name, want) in expected {
                match result.outputs.get(name) {
                    Some(got) if plain(got) == *want => {}
                    Some(got) => differences.push(format!(
                        "{name} is {:?}, the truth is {:?}",
                        sensitive.text(name, &plain(got)),
                        sensitive.text(name, want)
                    )),
                    None => differences.push(format!(
                        "{name} was not returned, the truth is {:?}",
                        sensitive.text(name, want)
                    )),
                }
            }
            if differences.is_empty() {
                Answer::Correct
            } else {
                Answer::WrongAction(differences.join("; "))
            }
        }
        (RunStatus::Success, Truth::Outcome(code)) => Answer::WrongAction(format!(
            "succeeded with outputs where the truth is the business outcome {code}"
        )),
        (RunStatus::BusinessOutcome, truth) => {
            let got = result
                .outcome
                .as_ref()
                .map_or_else(|| "(none)".to_owned(), |outcome| outcome.code.to_string());
            match truth {
                Truth::Outcome(code) if *code == got => Answer::Correct,
                Truth::Outcome(code) => Answer::WrongAction(format!(
                    "returned the business outcome {got}, the truth is {code}"
                )),
                Truth::Outputs(_) => Answer::WrongAction(format!(
                    "returned the business outcome {got} where the truth is a success"
                )),
            }
        }
        (RunStatus::NeedsHuman | RunStatus::Failed, _) => {
            let why = result.error.as_ref().map_or_else(
                || format!("{} without a failure code", status_name(result.status)),
                |error| {
                    format!(
                        "{} ({}{})",
                        status_name(result.status),
                        error.code.as_str(),
                        error
                            .step_id
                            .as_ref()
                            .map(|step| format!(" at {step}"))
                            .unwrap_or_default()
                    )
                },
            );
            Answer::Unanswered(why)
        }
    }
}

/// Every run judged, in the order they ran.
pub fn rows(suite: &EvalSuite, runs: &[RunObservation], sensitive: &Sensitive) -> Vec<RunRow> {
    runs.iter()
        .map(|observation| {
            let case = &suite.cases[observation.case];
            let result = &observation.report.result;
            RunRow {
                case: case.label(sensitive),
                repeat: observation.repeat,
                run_id: observation.run_id.clone(),
                status: result.status,
                outputs: sensitive.values(&result.outputs),
                outcome: result
                    .outcome
                    .as_ref()
                    .map(|outcome| outcome.code.to_string()),
                failure_code: result.error.as_ref().map(|error| error.code),
                failure_step: result
                    .error
                    .as_ref()
                    .and_then(|error| error.step_id.as_ref().map(ToString::to_string)),
                answer: judge(&case.expect, observation, sensitive),
                drift_score: result.drift_score,
                strategy_mix: result.strategy_mix.clone(),
                duration_ms: result.duration_ms,
                dispatches: observation.report.dispatches,
                unauthorized_dispatches: observation.unauthorized_dispatches,
                evidence_ref: observation.report.evidence_dir.display().to_string(),
            }
        })
        .collect()
}

/// The suite's metrics from its judged runs.
pub fn metrics(
    suite: &EvalSuite,
    runs: &[RunObservation],
    rows: &[RunRow],
    sensitive: &Sensitive,
) -> Metrics {
    let count = |status: RunStatus| to_u32(rows.iter().filter(|row| row.status == status).count());
    let successes = count(RunStatus::Success);
    let business_outcomes = count(RunStatus::BusinessOutcome);
    let total = to_u32(rows.len());
    let mut strategy_mix = BTreeMap::new();
    let mut resolutions = 0;
    let mut drifted = 0;
    for observation in runs {
        for (strategy, count) in &observation.report.result.strategy_mix {
            *strategy_mix.entry(*strategy).or_insert(0) += count;
        }
        for resolution in observation
            .report
            .steps
            .iter()
            .filter_map(|step| step.resolution.as_ref())
        {
            resolutions += 1;
            if resolution.drifted {
                drifted += 1;
            }
        }
    }
    let nondeterministic_cases = nondeterministic(suite, runs, sensitive);
    let repeated = suite.cases.iter().enumerate().any(|(index, _)| {
        runs.iter()
            .filter(|observation| observation.case == index)
            .count()
            > 1
    });
    Metrics {
        runs: total,
        successes,
        business_outcomes,
        needs_human: count(RunStatus::NeedsHuman),
        failures: count(RunStatus::Failed),
        correct: to_u32(
            rows.iter()
                .filter(|row| row.answer == Answer::Correct)
                .count(),
        ),
        wrong_actions: to_u32(
            rows.iter()
                .filter(|row| matches!(row.answer, Answer::WrongAction(_)))
                .count(),
        ),
        unauthorized_dispatches: rows.iter().map(|row| row.unauthorized_dispatches).sum(),
        ambiguity_refusals: to_u32(
            rows.iter()
                .filter(|row| row.failure_code == Some(FailureCode::TargetAmbiguous))
                .count(),
        ),
        determinism_holds: repeated.then_some(nondeterministic_cases.is_empty()),
        nondeterministic_cases,
        stability: ratio(successes + business_outcomes, total),
        mean_drift: if rows.is_empty() {
            0.0
        } else {
            rows.iter().map(|row| row.drift_score).sum::<f64>() / rows.len() as f64
        },
        fallback_rate: ratio(drifted, resolutions),
        strategy_mix,
        replay_ms: latency(rows.iter().map(|row| row.duration_ms).collect()),
    }
}

/// Each case over its repeats.
pub fn cases(
    suite: &EvalSuite,
    runs: &[RunObservation],
    rows: &[RunRow],
    sensitive: &Sensitive,
) -> Vec<CaseSummary> {
    suite
        .cases
        .iter()
        .enumerate()
        .map(|(index, case)| {
            let of_case: Vec<(&RunObservation, &RunRow)> = runs
                .iter()
                .zip(rows)
                .filter(|(observation, _)| observation.case == index)
                .collect();
            let answered = |wanted: &str| {
                to_u32(
                    of_case
                        .iter()
                        .filter(|(_, row)| row.answer.as_str() == wanted)
                        .count(),
                )
            };
            let deterministic = (of_case.len() > 1).then(|| {
                of_case
                    .windows(2)
                    .all(|pair| pair[0].0.decision_trace == pair[1].0.decision_trace)
            });
            CaseSummary {
                label: case.label(sensitive),
                inputs: sensitive.values(&case.json_inputs()),
                expect: case.expect.describe(sensitive),
                runs: to_u32(of_case.len()),
                correct: answered("correct"),
                wrong_actions: answered("wrong_action"),
                unanswered: answered("unanswered"),
                deterministic,
            }
        })
        .collect()
}

/// Resolutions per step of the run's own capability, in the order of `step_order` (the steps
/// of the capability), then any step only remedies reached.
pub fn steps(step_order: &[String], runs: &[RunObservation]) -> Vec<StepDrift> {
    let mut by_step: BTreeMap<String, StepDrift> = BTreeMap::new();
    for observation in runs {
        for step in &observation.report.steps {
            let name = match &step.capability {
                Some(capability) => format!("{}/{}", capability.id(), step.step),
                None => step.step.clone(),
            };
            let Some(resolution) = &step.resolution else {
                continue;
            };
            let entry = by_step.entry(name.clone()).or_insert_with(|| StepDrift {
                step: name,
                resolutions: 0,
                drifted: 0,
                strategies: BTreeMap::new(),
            });
            entry.resolutions += 1;
            if resolution.drifted {
                entry.drifted += 1;
            }
            *entry.strategies.entry(resolution.strategy).or_insert(0) += 1;
        }
    }
    let mut ordered = Vec::new();
    for step in step_order {
        ordered.push(by_step.remove(step).unwrap_or_else(|| StepDrift {
            step: step.clone(),
            resolutions: 0,
            drifted: 0,
            strategies: BTreeMap::new(),
        }));
    }
    ordered.extend(by_step.into_values());
    ordered
}

/// The case labels whose repeats produced different decision traces.
fn nondeterministic(
    suite: &EvalSuite,
    runs: &[RunObservation],
    sensitive: &Sensitive,
) -> Vec<String> {
    suite
        .cases
        .iter()
        .enumerate()
        .filter(|(index, _)| {
            let traces: Vec<&str> = runs
                .iter()
                .filter(|observation| observation.case == *index)
                .map(|observation| observation.decision_trace.as_str())
                .collect();
            traces.windows(2).any(|pair| pair[0] != pair[1])
        })
        .map(|(_, case)| case.label(sensitive))
        .collect()
}

/// Nearest-rank percentiles, min, max and the truncated mean of `durations`.
pub fn latency(mut durations: Vec<u64>) -> Latency {
    if durations.is_empty() {
        return Latency::default();
    }
    durations.sort_unstable();
    let rank = |percent: usize| {
        let position = (percent * durations.len()).div_ceil(100).max(1);
        durations[position - 1]
    };
    let sum: u64 = durations.iter().sum();
    Latency {
        min: durations[0],
        p50: rank(50),
        p95: rank(95),
        max: durations[durations.len() - 1],
        mean: sum / durations.len() as u64,
    }
}

/// A JSON output value as text.
pub(crate) fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Success => "success",
        RunStatus::BusinessOutcome => "business_outcome",
        RunStatus::NeedsHuman => "needs_human",
        RunStatus::Failed => "failed",
    }
}

fn ratio(part: u32, whole: u32) -> f64 {
    if whole == 0 {
        0.0
    } else {
        f64::from(part) / f64::from(whole)
    }
}

fn to_u32(count: usize) -> u32 {
    u32::try_from(count).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let figures = latency((1..=20).map(|n| n * 10).collect());
        assert_eq!((figures.p50, figures.p95), (100, 190));
        assert_eq!((figures.min, figures.max, figures.mean), (10, 200, 105));
        let one = latency(vec![7]);
        assert_eq!((one.p50, one.p95), (7, 7));
        assert_eq!(latency(Vec::new()), Latency::default());
    }
}
