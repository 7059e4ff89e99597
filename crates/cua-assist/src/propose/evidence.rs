//! The assist's evidence: the model call, the candidate overlay and the proposal, written beside
//! the run, and the run's end.

use std::collections::BTreeMap;

use cua_agent::{LlmPort, ModelReply};
use cua_artifact::{Actor, FailureCode, RunStatus};
use cua_evidence::{Note, RunEnd};
use cua_surface::SurfaceDriver;
use serde_json::Value;

use crate::error::AssistError;

use super::{AssistOutcome, AssistRequest, Assistant, Candidate, PURPOSE, Refusal};

impl<D: SurfaceDriver, L: LlmPort> Assistant<'_, D, L> {
    /// The `llm_call` event of the one call.
    pub(super) fn record_call(&self, reply: &ModelReply) -> Result<(), AssistError> {
        self.bus
            .emit(Actor::Agent, 1, reply.llm_call(PURPOSE, false))?;
        Ok(())
    }

    /// Writes the candidate overlay (YAML, for review and `cua validate`) and records it in the
    /// hash-chained trace, whole, so the file can be checked against the trace.
    pub(super) fn write_candidate(
        &self,
        candidate: &Candidate,
        request: &AssistRequest<'_>,
    ) -> Result<(), AssistError> {
        let yaml = cua_artifact::yaml::to_yaml(&candidate.binding).map_err(|error| {
            AssistError::Write {
                path: candidate.path.clone(),
                reason: error.to_string(),
            }
        })?;
        let tenant = candidate.binding.tenant.as_str();
        let header = format!(
            "# Candidate overlay proposed by assisted replay: review it before adopting it.\n\
             #\n\
             # Run {} stopped at step `{}` ({}); one model call ({}) proposed node {} for it;\n\
             # {}. The sealed capability is unchanged.\n\
             # To adopt it, save it as tenants/{tenant}/{}.yaml (merging with an existing binding).\n\n",
            request.failed.result.run_id,
            request.stuck.step,
            request.stuck.code.as_str(),
            self.llm.model(),
            candidate.node_id,
            match &candidate.decision_id {
                Some(id) => format!("the policy granted it as the agent ({id})"),
                None => "a read, which needs no authorization".to_owned(),
            },
            candidate.binding.capability.id(),
        );
        // Where it is adopted (`tenants/<tenant>/`) lies as deep below the project as a run
        // directory in the project's `evidence/`, so the same modeline serves both; with an
        // evidence directory elsewhere the path leads from where it was written.
        let modeline = cua_fs::schema_modeline(
            &candidate.path,
            &cua_artifact::DocumentKind::TenantBinding.schema_path(),
        )
        .unwrap_or_default();
        let text = self
            .bus
            .redactor()
            .redact_text(&format!("{modeline}{header}{yaml}"));
        self.bus
            .write_file(crate::CANDIDATE_FILE, text.as_bytes())
            .map_err(|error| AssistError::Write {
                path: candidate.path.clone(),
                reason: error.to_string(),
            })?;
        let binding = serde_json::to_value(&candidate.binding).unwrap_or(Value::Null);
        self.bus.emit(
            Actor::System,
            0,
            Note {
                note: "candidate overlay".to_owned(),
                data: BTreeMap::from([
                    ("file".to_owned(), Value::from(crate::CANDIDATE_FILE)),
                    ("binding".to_owned(), binding),
                    ("node_id".to_owned(), Value::from(candidate.node_id.clone())),
                    (
                        "continue_at".to_owned(),
                        Value::from(candidate.continue_at as u64),
                    ),
                ]),
            },
        )?;
        Ok(())
    }

    /// Writes the proposal's evidence (`assist.json`), redacted.
    pub(super) fn write_proposal(&self, outcome: &AssistOutcome) -> Result<(), AssistError> {
        let path = self.bus.dir().join(crate::PROPOSAL_FILE);
        let value = serde_json::to_value(outcome).map_err(|error| AssistError::Write {
            path: path.clone(),
            reason: error.to_string(),
        })?;
        let mut text = serde_json::to_string_pretty(&self.bus.redactor().redact_json(&value))
            .map_err(|error| AssistError::Write {
                path: path.clone(),
                reason: error.to_string(),
            })?;
        text.push('\n');
        self.bus
            .write_file(crate::PROPOSAL_FILE, text.as_bytes())
            .map_err(|error| AssistError::Write {
                path,
                reason: error.to_string(),
            })
    }

    /// Ends the assist's trace and writes its run record.
    pub(super) fn end(
        &self,
        status: RunStatus,
        failure_code: Option<FailureCode>,
        reason: &str,
    ) -> Result<(), AssistError> {
        self.bus.emit(
            Actor::System,
            0,
            RunEnd {
                failure_code,
                reason: Some(reason.to_owned()),
                steps_executed: Some(0),
                steps_attempted: Some(1),
                steps_effective: Some(u32::from(status == RunStatus::Success)),
                ..RunEnd::with_status(status)
            },
        )?;
        self.bus.finish()?;
        Ok(())
    }
}

pub(super) fn evidence_refusal(error: cua_evidence::EvidenceError) -> Refusal {
    Refusal::new("evidence", FailureCode::Internal, error.to_string())
}
