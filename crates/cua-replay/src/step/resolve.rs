//! Resolving a step's target on a snapshot, recorded as `resolve`; a failed identity check is
//! reported as ambiguous, never as not found.

use cua_artifact::{Actor, FailureCode, ResolutionDebug, ResolutionStrategy, TargetDescriptor};
use cua_evidence::Resolve;
use cua_snapshot::UiSnapshot;
use cua_surface::SurfaceDriver;
use cua_target::{Resolution, TargetError};

use crate::executor::{Execution, Replayer, RunState};
use crate::report::StepResolution;
use crate::stop::{Position, Stop};

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// Resolves a target on a snapshot and emits `resolve`. The outer error is evidence; the
    /// inner one is the refusal (`target_not_found`, `target_ambiguous`).
    ///
    /// An identity check that fails is reported as `target_ambiguous`, not as not-found: the
    /// screen holds a lookalike of the intended row, so the descriptor no longer singles out
    /// the right control, and acting on either would be a guess.
    pub(crate) fn resolve(
        &self,
        frame: &Execution<'_>,
        tally: &RunState,
        position: &Position,
        descriptor: &TargetDescriptor,
        snapshot: &UiSnapshot,
    ) -> Result<Result<(Resolution, StepResolution), Stop>, cua_evidence::EvidenceError> {
        let described = descriptor.describe();
        match cua_target::resolve(snapshot, descriptor, &frame.values) {
            Ok(resolution) => {
                self.bus.emit(
                    Actor::Automation,
                    tally.epoch,
                    Resolve {
                        step: Some(position.id.clone()),
                        target: described,
                        resolved: true,
                        node_id: Some(resolution.node_id.clone()),
                        strategy: Some(resolution.strategy),
                        strategy_recorded: resolution.recorded_strategy,
                        candidates_considered: resolution.candidates_considered,
                        identity_verified: descriptor
                            .identity
                            .is_some()
                            .then_some(resolution.identity_verified),
                        failure_code: None,
                        reason: None,
                        strategies_tried: Vec::new(),
                        candidates: Vec::new(),
                        ambiguity_score: Some(rounded(resolution.ambiguity)),
                    },
                )?;
                let resolved = StepResolution {
                    node_id: resolution.node_id.to_string(),
                    strategy: resolution.strategy,
                    recorded: resolution.recorded_strategy,
                    drifted: resolution.drifted,
                    identity_verified: resolution.identity_verified,
                };
                Ok(Ok((resolution, resolved)))
            }
            Err(error) => {
                let debug = resolution_debug(&described, &error);
                let code = match &error {
                    TargetError::IdentityMismatch { .. } => FailureCode::TargetAmbiguous,
                    other => other.failure_code(),
                };
                self.bus.emit(
                    Actor::Automation,
                    tally.epoch,
                    Resolve {
                        step: Some(position.id.clone()),
                        target: described.clone(),
                        resolved: false,
                        node_id: None,
                        strategy: None,
                        strategy_recorded: descriptor.recorded_strategy,
                        candidates_considered: debug.candidates_considered,
                        identity_verified: matches!(
                            error,
                            TargetError::IdentityMismatch { .. }
                                | TargetError::IdentityNotUnique { .. }
                        )
                        .then_some(false),
                        failure_code: Some(code),
                        reason: Some(error.to_string()),
                        strategies_tried: debug.strategies_tried.clone(),
                        candidates: debug.candidate_summaries.clone(),
                        ambiguity_score: Some(debug.ambiguity_score),
                    },
                )?;
                let stop = Stop::new(
                    code,
                    format!("step `{}` cannot act on {described}: {error}", position.id),
                )
                .expected(described)
                .resolution(debug);
                Ok(Err(stop))
            }
        }
    }
}

pub(super) fn resolution_debug(described: &str, error: &TargetError) -> ResolutionDebug {
    let mut debug = ResolutionDebug {
        target_description: described.to_owned(),
        strategies_tried: Vec::new(),
        candidates_considered: 0,
        candidate_summaries: Vec::new(),
        ambiguity_score: 0.0,
    };
    match error {
        TargetError::NotFound { tried, .. } => {
            debug.strategies_tried = tried.iter().map(|attempt| attempt.strategy).collect();
        }
        TargetError::Ambiguous {
            strategy,
            count,
            candidates,
            ..
        } => {
            debug.strategies_tried = ResolutionStrategy::LADDER
                .into_iter()
                .filter(|rung| rung.rank() <= strategy.rank())
                .collect();
            debug.candidates_considered = *count;
            debug.candidate_summaries = candidates.iter().map(ToString::to_string).collect();
            debug.ambiguity_score = if *count == 0 {
                0.0
            } else {
                rounded(f64::from(*count - 1) / f64::from(*count))
            };
        }
        TargetError::IdentityNotUnique { count, rows, .. } => {
            debug.candidates_considered = *count;
            debug.candidate_summaries = rows.iter().map(ToString::to_string).collect();
            debug.ambiguity_score = rounded(f64::from(count - 1) / f64::from(*count));
        }
        TargetError::IdentityMismatch {
            node, key, found, ..
        } => {
            debug.candidates_considered = 1;
            debug.candidate_summaries = vec![format!(
                "{node}: {key} holds {}",
                found.as_deref().unwrap_or("nothing")
            )];
        }
        _ => {}
    }
    debug
}

pub(super) fn rounded(score: f64) -> f64 {
    (score * 1000.0).round() / 1000.0
}
