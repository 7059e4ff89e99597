//! What a replay returns: the caller's `RunResult`, plus what the executor knows per step (the
//! observation, the resolution, whether it dispatched, the effect verdict) and the run's effect
//! verdict, and the decision trace that determinism is judged on.

use std::path::PathBuf;

use cua_artifact::{
    ActionKind, Actor, CapabilityRef, EffectVerdict, ObservationClass, ResolutionStrategy,
    RiskTier, RunResult,
};
use serde::Serialize;

/// The outcome of one replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// What the caller of a capability gets: status, outputs or outcome or error, counters.
    pub result: RunResult,
    /// The run's effect verdict (see [`run_verdict`]).
    pub effect: EffectVerdict,
    /// Every step the executor reached, in order, including the steps of `run_capability`
    /// remedies (marked with their capability).
    pub steps: Vec<StepReport>,
    /// Actions handed to the surface (entrypoint, steps, remedies).
    pub dispatches: u32,
    /// The run's evidence directory.
    pub evidence_dir: PathBuf,
}

impl ReplayReport {
    /// The decision trace: one line per step (step, action, actor, observation, strategy, node
    /// id, dispatched, verdict), then one line for the result (status, failure code, outcome,
    /// outputs, effect). No times, ids or paths: two runs of the same artifact with the same
    /// inputs against the same application state give byte-identical decision traces.
    pub fn decision_trace(&self) -> String {
        let mut text = String::new();
        for step in &self.steps {
            let line = serde_json::json!({
                "capability": step.capability.as_ref().map(ToString::to_string),
                "step": step.step,
                "action": step.action,
                "actor": step.actor,
                "observation": step.observation,
                "strategy": step.resolution.as_ref().map(|resolution| resolution.strategy),
                "node_id": step.resolution.as_ref().map(|resolution| resolution.node_id.clone()),
                "dispatched": step.dispatched,
                "verdict": step.verdict,
            });
            text.push_str(&line.to_string());
            text.push('\n');
        }
        let result = serde_json::json!({
            "status": self.result.status,
            "failure_code": self.result.error.as_ref().map(|error| error.code),
            "outcome": self.result.outcome.as_ref().map(|outcome| outcome.code.to_string()),
            "outputs": self.result.outputs,
            "effect": self.effect,
        });
        text.push_str(&result.to_string());
        text.push('\n');
        text
    }

    /// The report as it may leave the process (printed, returned to a caller, kept in a batch's
    /// state): every value under a declared-sensitive name masked by shape, and every registered
    /// secret or sensitive literal masked in free text, by the run's redactor, which learned
    /// them while the run bound its inputs and read its outputs. The policy's pattern rules are
    /// for the evidence; they do not guess at the outputs a caller asked for.
    pub fn redacted(mut self, redactor: &cua_evidence::Redactor) -> Self {
        let map = |values: &mut std::collections::BTreeMap<String, serde_json::Value>| {
            let object = serde_json::Value::Object(std::mem::take(values).into_iter().collect());
            if let serde_json::Value::Object(masked) = redactor.redact_declared_json(&object) {
                *values = masked.into_iter().collect();
            }
        };
        map(&mut self.result.outputs);
        if let Some(outcome) = &mut self.result.outcome {
            map(&mut outcome.data);
        }
        if let Some(error) = &mut self.result.error {
            error.message = redactor.redact_declared_text(&error.message);
            for text in [&mut error.expected, &mut error.observed]
                .into_iter()
                .flatten()
            {
                *text = redactor.redact_declared_text(text);
            }
        }
        for step in &mut self.steps {
            step.verdict_reason = redactor.redact_declared_text(&step.verdict_reason);
        }
        self
    }
}

/// One step as the executor saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepReport {
    /// The remedy capability this step belongs to; `None` for the run's own steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability: Option<CapabilityRef>,
    pub step: String,
    pub index: u32,
    pub action: ActionKind,
    pub actor: Actor,
    /// What the screen was classified as before the action.
    pub observation: ObservationClass,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<StepResolution>,
    /// Whether the action was handed to the surface. Reads, waits and assertions never are.
    pub dispatched: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision_id: Option<String>,
    pub verdict: EffectVerdict,
    /// Why the verdict is what it is (`postcondition observed`, `dispatch receipt only`, …).
    pub verdict_reason: String,
    /// The risk tier the policy assessed (or the declared one, when the step never reached
    /// policy). Steps above `safe` are the run's mutations; only they decide its verdict.
    pub risk: RiskTier,
    /// The operator and provider the planner routed the step to, and its recovery trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<cua_artifact::RouteTrace>,
}

/// How a step's target was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepResolution {
    pub node_id: String,
    pub strategy: ResolutionStrategy,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<ResolutionStrategy>,
    pub drifted: bool,
    pub identity_verified: bool,
}

/// The run's verdict from its steps' verdicts: `unverifiable` if any step's effect is
/// unverifiable (something may have happened that nothing proves), else `suspected_noop` if any
/// step's action was refused before dispatch or left the screen unchanged, else `confirmed` if
/// any step's effect was observed, else `not_applicable` (a run of reads).
pub fn run_verdict<'a>(verdicts: impl IntoIterator<Item = &'a EffectVerdict>) -> EffectVerdict {
    let rank = |verdict: EffectVerdict| match verdict {
        EffectVerdict::NotApplicable => 0,
        EffectVerdict::Confirmed => 1,
        EffectVerdict::SuspectedNoop => 2,
        EffectVerdict::Pending => 3,
        EffectVerdict::Unverifiable => 4,
    };
    verdicts
        .into_iter()
        .copied()
        .max_by_key(|verdict| rank(*verdict))
        .unwrap_or(EffectVerdict::NotApplicable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weakest_evidence_governs_the_run() {
        use EffectVerdict::*;
        assert_eq!(run_verdict(&[]), NotApplicable);
        assert_eq!(run_verdict(&[NotApplicable, Confirmed]), Confirmed);
        assert_eq!(run_verdict(&[Confirmed, SuspectedNoop]), SuspectedNoop);
        assert_eq!(
            run_verdict(&[Confirmed, Unverifiable, SuspectedNoop]),
            Unverifiable
        );
    }
}
