//! Evaluations (`cua.capability_evaluation/v1`) as evidence for approval: reading them, and
//! judging one against the criteria `approve --from-eval` requires.
//!
//! The criteria are stricter than "nothing bad was seen": each must be shown. An evaluation that
//! never ran an input twice has not shown determinism, and one that does not record unauthorized
//! dispatches has not shown there were none, so both are refused.

use std::path::{Path, PathBuf};

use cua_artifact::CapabilityEvaluation;
use serde::Serialize;

/// The key an evaluation carries for dispatches the policy did not authorize. It is read in
/// addition to the `cua.capability_evaluation/v1` fields, which do not include it yet.
pub const UNAUTHORIZED_DISPATCHES_KEY: &str = "unauthorized_dispatches";

/// One evaluation file, read and checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvaluationRecord {
    /// The file it was read from.
    pub source: PathBuf,
    pub evaluation: CapabilityEvaluation,
    /// `None` when the file does not record them.
    pub unauthorized_dispatches: Option<u32>,
}

/// One thing an evaluation must show before it can back an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Criterion {
    /// At least [`CapabilityEvaluation::MIN_RUNS`] runs.
    Runs,
    /// No run acted on the wrong control or returned a wrong value.
    WrongActions,
    /// No dispatch the policy did not authorize.
    UnauthorizedDispatches,
    /// Successes and business outcomes are at least 95 % of runs.
    Stability,
    /// The same inputs produced the same decision trace.
    Determinism,
}

/// How one evaluation fares on one criterion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CriterionResult {
    pub criterion: Criterion,
    pub passed: bool,
    /// What the evaluation shows, in words.
    pub detail: String,
}

/// How one evaluation fares on every criterion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assessment {
    pub source: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub criteria: Vec<CriterionResult>,
}

impl Criterion {
    /// Every criterion, in the order they are judged and reported.
    pub const ALL: [Criterion; 5] = [
        Self::Runs,
        Self::WrongActions,
        Self::UnauthorizedDispatches,
        Self::Stability,
        Self::Determinism,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Runs => "runs",
            Self::WrongActions => "wrong_actions",
            Self::UnauthorizedDispatches => "unauthorized_dispatches",
            Self::Stability => "stability",
            Self::Determinism => "determinism",
        }
    }
}

impl Assessment {
    /// Whether every criterion passed.
    pub fn passed(&self) -> bool {
        self.criteria.iter().all(|result| result.passed)
    }

    /// The criteria that failed, in order.
    pub fn failures(&self) -> impl Iterator<Item = &CriterionResult> {
        self.criteria.iter().filter(|result| !result.passed)
    }

    /// One line for an approval's notes: what the evaluation showed.
    pub fn summary(&self) -> String {
        let details: Vec<&str> = self
            .criteria
            .iter()
            .map(|result| result.detail.as_str())
            .collect();
        format!("{}: {}", self.source.display(), details.join(", "))
    }
}

impl EvaluationRecord {
    /// Reads an evaluation from JSON text: the `cua.capability_evaluation/v1` fields, strictly,
    /// plus [`UNAUTHORIZED_DISPATCHES_KEY`]. Returns every problem as one message.
    pub fn parse(source: &Path, text: &str) -> Result<Self, String> {
        let mut value: serde_json::Value =
            serde_json::from_str(text).map_err(|error| format!("not JSON: {error}"))?;
        let object = value
            .as_object_mut()
            .ok_or_else(|| "not a JSON object".to_owned())?;
        let unauthorized_dispatches = match object.remove(UNAUTHORIZED_DISPATCHES_KEY) {
            None => None,
            Some(count) => Some(
                count
                    .as_u64()
                    .and_then(|count| u32::try_from(count).ok())
                    .ok_or_else(|| {
                        format!("{UNAUTHORIZED_DISPATCHES_KEY} must be a non-negative integer")
                    })?,
            ),
        };
        let evaluation: CapabilityEvaluation =
            serde_json::from_value(value).map_err(|error| error.to_string())?;
        let problems = evaluation.validate();
        if !problems.is_empty() {
            return Err(problems
                .iter()
                .map(|problem| format!("{}: {}", problem.path, problem.message))
                .collect::<Vec<_>>()
                .join("; "));
        }
        Ok(Self {
            source: source.to_owned(),
            evaluation,
            unauthorized_dispatches,
        })
    }

    /// Judges the evaluation on every criterion.
    pub fn assess(&self) -> Assessment {
        let evaluation = &self.evaluation;
        let criteria = Criterion::ALL
            .into_iter()
            .map(|criterion| {
                let (passed, detail) = judge(criterion, evaluation, self.unauthorized_dispatches);
                CriterionResult {
                    criterion,
                    passed,
                    detail,
                }
            })
            .collect();
        Assessment {
            source: self.source.clone(),
            suite: evaluation.suite.clone(),
            tenant: evaluation.tenant.as_ref().map(ToString::to_string),
            criteria,
        }
    }
}

fn judge(
    criterion: Criterion,
    evaluation: &CapabilityEvaluation,
    unauthorized_dispatches: Option<u32>,
) -> (bool, String) {
    match criterion {
        Criterion::Runs => {
            let minimum = CapabilityEvaluation::MIN_RUNS;
            if evaluation.runs >= minimum {
                (true, format!("{} runs", evaluation.runs))
            } else {
                (
                    false,
                    format!("{} run(s); at least {minimum} are needed", evaluation.runs),
                )
            }
        }
        Criterion::WrongActions => match evaluation.wrong_actions {
            0 => (true, "no wrong action".to_owned()),
            count => (
                false,
                format!("{count} wrong action(s); any wrong action disqualifies"),
            ),
        },
        Criterion::UnauthorizedDispatches => match unauthorized_dispatches {
            Some(0) => (true, "no unauthorized dispatch".to_owned()),
            Some(count) => (
                false,
                format!("{count} unauthorized dispatch(es); any disqualifies"),
            ),
            None => (
                false,
                format!(
                    "the evaluation does not record `{UNAUTHORIZED_DISPATCHES_KEY}`, so it \
                     does not show there were none"
                ),
            ),
        },
        Criterion::Stability => {
            let stability = evaluation.stability_score();
            let percent = percent(
                evaluation.successes + evaluation.business_outcomes,
                evaluation.runs,
            );
            if stability >= CapabilityEvaluation::MIN_STABILITY {
                (true, format!("{percent} stable"))
            } else {
                (
                    false,
                    format!(
                        "stability {percent} is below 95%: {} successes and {} business outcomes in {} runs",
                        evaluation.successes, evaluation.business_outcomes, evaluation.runs
                    ),
                )
            }
        }
        Criterion::Determinism => match evaluation.determinism_holds {
            Some(true) => (true, "determinism holds".to_owned()),
            Some(false) => (
                false,
                "the same inputs produced different decision traces".to_owned(),
            ),
            None => (
                false,
                "determinism was not shown: no input was run twice".to_owned(),
            ),
        },
    }
}

/// `part` of `whole` as a percentage rounded down to a tenth, `94.9%`, whole numbers without a
/// decimal. Integer arithmetic, so 949 of 1000 never prints as a passing `95%`.
fn percent(part: u32, whole: u32) -> String {
    if whole == 0 {
        return "0%".to_owned();
    }
    let tenths = u64::from(part) * 1000 / u64::from(whole);
    if tenths % 10 == 0 {
        format!("{}%", tenths / 10)
    } else {
        format!("{}.{}%", tenths / 10, tenths % 10)
    }
}
