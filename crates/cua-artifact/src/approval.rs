//! Approval (`cua.capability_approval/v1`) and evaluation (`cua.capability_evaluation/v1`): the
//! review state of a capability and the evidence it was judged on. Both live outside the
//! artifact, keyed by `id@version` and pinned to a content hash, because they change when the
//! artifact does not.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostic::{DiagnosticCode, Problem};
use crate::document::{ApprovalSchema, EvaluationSchema};
use crate::identifiers::{CapabilityRef, ContentHash, TenantId};
use crate::source_map::DocPath;
use crate::vocabulary::ResolutionStrategy;

/// A reviewer's decision about one exact capability content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "cua capability approval (cua.capability_approval/v1)")]
pub struct CapabilityApproval {
    pub schema: ApprovalSchema,
    pub capability: CapabilityRef,
    /// The pin: the approval covers this content and nothing else.
    pub content_hash: ContentHash,
    pub state: ApprovalState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    /// RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_at: Option<String>,
    #[serde(default)]
    pub scope: ApprovalScope,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
}

/// Where the review stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    Draft,
    Approved,
    Rejected,
    Revoked,
}

/// What an approval covers beyond the pinned content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalScope {
    /// Whether the capability may run with no operator watching.
    #[serde(default)]
    pub unattended_replay: bool,
    /// Tenants whose substitution-only bindings of this capability the approval carries to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<TenantId>,
}

impl CapabilityApproval {
    /// Load-time checks beyond types: `approved_at` is an RFC 3339 instant. Empty means valid.
    pub fn validate(&self) -> Vec<Problem> {
        self.approved_at
            .as_deref()
            .and_then(|at| crate::timestamp_problem(DocPath::root().key("approved_at"), at))
            .into_iter()
            .collect()
    }

    /// Whether this approval covers `content_hash` for replay: approved, and pinned to exactly
    /// that hash.
    pub fn covers(&self, content_hash: &ContentHash) -> bool {
        self.state == ApprovalState::Approved && self.content_hash == *content_hash
    }

    /// Whether it covers unattended replay of `content_hash`.
    pub fn permits_unattended_replay(&self, content_hash: &ContentHash) -> bool {
        self.covers(content_hash) && self.scope.unattended_replay
    }

    /// Recommends (never grants) approval from an evaluation, with the reason. A person approves.
    pub fn recommend(evaluation: &CapabilityEvaluation) -> (bool, String) {
        if evaluation.runs == 0 {
            return (false, "no runs were evaluated".to_owned());
        }
        if evaluation.wrong_actions > 0 {
            return (
                false,
                format!("{} wrong action(s)", evaluation.wrong_actions),
            );
        }
        if evaluation.runs < CapabilityEvaluation::MIN_RUNS {
            return (
                false,
                format!(
                    "{} run(s); at least {} needed",
                    evaluation.runs,
                    CapabilityEvaluation::MIN_RUNS
                ),
            );
        }
        let stability = evaluation.stability_score();
        if stability < CapabilityEvaluation::MIN_STABILITY {
            return (
                false,
                format!("stability {:.0}% is below 95%", stability * 100.0),
            );
        }
        match evaluation.unauthorized_dispatches {
            None => return (false, "unauthorized dispatches were not counted".to_owned()),
            Some(0) => {}
            Some(count) => return (false, format!("{count} unauthorized dispatch(es)")),
        }
        if evaluation.determinism_holds.is_none() {
            return (
                false,
                "no input was run twice, so determinism was not shown".to_owned(),
            );
        }
        if evaluation.determinism_holds == Some(false) {
            return (
                false,
                "the same inputs produced different decision traces".to_owned(),
            );
        }
        (
            true,
            format!(
                "{} runs, {:.0}% stable, zero wrong actions, mean drift {:.2}",
                evaluation.runs,
                stability * 100.0,
                evaluation.mean_drift
            ),
        )
    }
}

/// Aggregate results of an eval suite over one capability content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "cua capability evaluation (cua.capability_evaluation/v1)")]
pub struct CapabilityEvaluation {
    pub schema: EvaluationSchema,
    pub capability: CapabilityRef,
    /// The hash of the sealed source, not of a tenant-bound copy.
    pub content_hash: ContentHash,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<TenantId>,
    pub runs: u32,
    pub successes: u32,
    pub business_outcomes: u32,
    pub needs_human: u32,
    pub failures: u32,
    /// Runs that acted on the wrong control or wrote the wrong value. Any is disqualifying.
    pub wrong_actions: u32,
    /// Dispatches with no granted authorization before them in their run's trace. Any is
    /// disqualifying; `None` when whoever produced the evaluation did not count them, which an
    /// approval from evaluation refuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unauthorized_dispatches: Option<u32>,
    pub ambiguity_refusals: u32,
    /// `None` when no input was run twice.
    #[serde(default)]
    pub determinism_holds: Option<bool>,
    pub mean_drift: f64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub strategy_mix: BTreeMap<ResolutionStrategy, u32>,
    pub fallback_rate: f64,
}

impl CapabilityEvaluation {
    /// Fewest runs a recommendation considers.
    pub const MIN_RUNS: u32 = 5;
    /// Lowest stability a recommendation accepts.
    pub const MIN_STABILITY: f64 = 0.95;

    /// Successes and business outcomes over runs.
    pub fn stability_score(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            f64::from(self.successes + self.business_outcomes) / f64::from(self.runs)
        }
    }

    /// Enough runs, no wrong action, no unauthorized dispatch (counted, not assumed), stable,
    /// and shown deterministic: an evaluation that ran no input twice proves nothing about it.
    pub fn is_trustworthy(&self) -> bool {
        self.runs >= Self::MIN_RUNS
            && self.wrong_actions == 0
            && self.unauthorized_dispatches == Some(0)
            && self.stability_score() >= Self::MIN_STABILITY
            && self.determinism_holds == Some(true)
    }

    /// Load-time checks beyond types; empty means valid.
    pub fn validate(&self) -> Vec<Problem> {
        let total = u64::from(self.successes)
            + u64::from(self.business_outcomes)
            + u64::from(self.needs_human)
            + u64::from(self.failures);
        let mut problems = Vec::new();
        if total != u64::from(self.runs) {
            problems.push(Problem::new(
                DiagnosticCode::CountsInconsistent,
                DocPath::root().key("runs"),
                format!("runs is {} but successes, business outcomes, needs-human and failures add up to {total}", self.runs),
                "every run ends in exactly one of the four statuses",
            ));
        }
        for (field, value) in [
            ("mean_drift", self.mean_drift),
            ("fallback_rate", self.fallback_rate),
        ] {
            if !(0.0..=1.0).contains(&value) {
                problems.push(Problem::new(
                    DiagnosticCode::InvalidValue,
                    DocPath::root().key(field),
                    format!("{field} is {value}, outside 0 to 1"),
                    "it is a fraction of resolutions",
                ));
            }
        }
        problems
    }
}
