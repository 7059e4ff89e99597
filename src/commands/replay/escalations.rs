//! Where a CLI or batch run's escalation goes. No console supervises such a run, so it ends as
//! `needs_human` when it escalates; the intervention is still kept, in the run's directory,
//! where `cua console` (started on the same evidence root) lists it: not claimable (the browser
//! is gone), but a person sees the run, its reason and its evidence.

use std::path::PathBuf;

use cua_console::{Intervention, InterventionState};
use cua_evidence::{Clock, Redactor, SystemClock};
use cua_replay::{EscalationRequest, EscalationSink, RecordedEscalations};

/// Persists every escalation as a given-up intervention under the evidence root.
pub(super) struct PersistedEscalations {
    evidence_root: PathBuf,
    redactor: Redactor,
    recorded: RecordedEscalations,
}

impl PersistedEscalations {
    pub(super) fn new(evidence_root: PathBuf, redactor: Redactor) -> Self {
        Self {
            evidence_root,
            redactor,
            recorded: RecordedEscalations::new(),
        }
    }
}

impl EscalationSink for PersistedEscalations {
    fn escalate(&self, request: &EscalationRequest) -> String {
        let id = self.recorded.escalate(request);
        let now = SystemClock.now().to_string();
        let intervention = Intervention {
            id: id.clone(),
            run_id: request.run_id.clone(),
            session_id: String::new(),
            capability: Some(request.capability.to_string()),
            goal: None,
            stopped_at: request.step.as_ref().map(ToString::to_string),
            step_index: request.step_index,
            failure_code: request.failure_code.as_str().to_owned(),
            reason: self.redactor.redact_text(&request.reason),
            snapshot_ref: request.snapshot_ref.clone(),
            screenshot_ref: request.screenshot_ref.clone(),
            state: InterventionState::GivenUp,
            operator: None,
            opened_at: now.clone(),
            updated_at: now,
            hold_expires_at: None,
            epoch: 0,
            history: vec![
                "0:given_up:no console supervised this run; it ended as needs_human".to_owned(),
            ],
            human_actions: 0,
            human_delta: None,
            values_changed: Vec::new(),
        };
        if let Err(error) = intervention.persist(&self.evidence_root) {
            eprintln!(
                "warning: the intervention {id} could not be kept for `cua console`: {error}"
            );
        }
        id
    }
}
