//! `cua replay --assist`: after a deterministic run stops because a step's target is not found,
//! ambiguous, or its precondition fails, one model call proposes that step's target
//! (`cua-assist`), and an accepted proposal continues the run deterministically from that step
//! with the candidate overlay applied, in a run directory of its own. Three directories tell the
//! story: `<run>` (the deterministic run that stopped), `<run>-assist` (the screen the model saw,
//! its one call, the policy's judgement, `candidate-overlay.yaml`, `assist.json`) and
//! `<run>-continued`. Any other stop makes no model call at all.

use std::sync::Arc;

use cua_agent::{AgentError, ModelConfig, OpenAiAdapter};
use cua_assist::{AssistOutcome, AssistRequest, Assistant, Decision};
use cua_chromium::ChromiumSurface;
use cua_evidence::{EvidenceBus, Redactor, RunId, SystemClock};
use cua_replay::{ReplayReport, RunRequest};
use serde::Serialize;

use super::{Settings, exit_of, render, replay_request};
use crate::cli::Format;
use crate::error::{CliError, ErrorCode};
use crate::output::{EnvelopeError, Exit, emit};

/// What an assisted replay did.
#[derive(Debug, Serialize)]
pub(crate) struct Assisted {
    /// The deterministic run.
    run: ReplayReport,
    /// Why no assist was attempted (no model call was made).
    #[serde(skip_serializing_if = "Option::is_none")]
    not_attempted: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    assist: Option<AssistOutcome>,
    /// The run continued from the stopped step with the candidate overlay.
    #[serde(skip_serializing_if = "Option::is_none")]
    continued: Option<ReplayReport>,
}

/// The model an assist calls, from `CUA_LLM_BASE_URL` and `CUA_LLM_MODEL`; checked before the
/// browser starts.
pub(crate) fn model() -> Result<OpenAiAdapter, CliError> {
    let needs = |error: AgentError| {
        let error = CliError::from(&error);
        CliError::new(
            error.code(),
            format!("--assist needs a model: {}", error.message()),
        )
    };
    let config = ModelConfig::from_env().map_err(needs)?;
    OpenAiAdapter::new(config).map_err(needs)
}

/// Assists `report` when it is assistable, then continues it.
pub(crate) async fn after(
    settings: &Settings,
    surface: &ChromiumSurface,
    run_id: &str,
    report: ReplayReport,
    llm: OpenAiAdapter,
) -> Result<Assisted, CliError> {
    let stuck = match cua_assist::assistable(&settings.prepared.capability, &report) {
        Ok(stuck) => stuck,
        Err(reason) => {
            return Ok(Assisted {
                run: report,
                not_attempted: Some(reason),
                assist: None,
                continued: None,
            });
        }
    };
    let assist_id = RunId::parse(&format!("{run_id}-assist"))
        .map_err(|error| CliError::usage(error.to_string()))?;
    let redactor = Redactor::from_policy(&settings.policy_config.redaction)
        .map_err(|error| CliError::new(ErrorCode::InvalidPolicy, error.to_string()))?;
    let bus = EvidenceBus::create(
        &settings.evidence_dir,
        assist_id,
        Arc::new(SystemClock),
        redactor,
    )
    .map_err(|error| CliError::from(&error))?;
    let assistant = Assistant {
        driver: surface,
        policy: &settings.policy,
        llm: &llm,
        bus: &bus,
    };
    let invocation_vars: &[&str] = if settings.base_url.is_some() {
        &["base_url"]
    } else {
        &[]
    };
    let outcome = assistant
        .propose(&AssistRequest {
            prepared: &settings.prepared,
            failed: &report,
            stuck: &stuck,
            inputs: &settings.inputs,
            tenant: settings.tenant.as_ref(),
            invocation_vars,
        })
        .await
        .map_err(|error| CliError::new(ErrorCode::AssistFailed, error.to_string()))?;
    let continued = match outcome.candidate() {
        None => None,
        Some(candidate) => {
            let (prepared, at) = cua_assist::continuation(
                &settings.prepared,
                candidate,
                &report,
                settings.base_url.as_ref().map(cua_artifact::Origin::as_str),
            )
            .map_err(|error| {
                CliError::new(
                    ErrorCode::AssistFailed,
                    format!("the candidate overlay does not apply: {error}"),
                )
            })?;
            let mut request = RunRequest::new(prepared, settings.keyed_inputs(run_id));
            request.tenant = settings.tenant.clone();
            request.allow_irreversible = settings.allow_irreversible;
            Some(
                replay_request(
                    settings,
                    surface,
                    &format!("{run_id}-continued"),
                    request,
                    Some(at),
                    super::Dispatches::Any,
                    None,
                )
                .await?,
            )
        }
    };
    Ok(Assisted {
        run: report,
        not_attempted: None,
        assist: Some(outcome),
        continued,
    })
}

impl Assisted {
    /// The exit code: the continued run's when there is one, else the deterministic run's.
    fn exit(&self) -> Exit {
        exit_of(self.continued.as_ref().unwrap_or(&self.run))
    }

    /// Prints the three parts (text) or one envelope (JSON) and returns the exit code.
    pub(crate) fn print(&self, format: Format) -> Exit {
        let last = self.continued.as_ref().unwrap_or(&self.run);
        let error = last
            .result
            .error
            .as_ref()
            .map(|error| EnvelopeError::new(error.code.as_str(), error.message.clone()));
        emit(format, "replay", Some(self), error.as_ref(), || self.text());
        self.exit()
    }

    fn text(&self) -> String {
        let mut text = render(&self.run);
        let field = |text: &mut String, name: &str, value: &str| {
            text.push_str(&format!("  {name:<18} {value}\n"));
        };
        if let Some(reason) = &self.not_attempted {
            text.push_str("assisted recovery: not attempted (0 model calls)\n");
            field(&mut text, "why", reason);
            return text;
        }
        let Some(assist) = &self.assist else {
            return text;
        };
        text.push_str(&format!(
            "assisted recovery: step `{}` ({}), {} model call ({}{})\n",
            assist.step,
            assist.failure_code.as_str(),
            assist.model_calls,
            assist.model,
            if assist.scripted { ", scripted" } else { "" },
        ));
        let proposal = match (&assist.tool, &assist.arguments) {
            (Some(tool), Some(arguments)) => format!("{tool} {arguments}"),
            (Some(tool), None) => tool.clone(),
            _ => "nothing".to_owned(),
        };
        field(&mut text, "model proposed", &proposal);
        match &assist.decision {
            Decision::Accepted(candidate) => {
                field(
                    &mut text,
                    "decision",
                    &match &candidate.decision_id {
                        Some(id) => format!("accepted; authorized as the agent ({id})"),
                        None => "accepted; a read, which is never authorized".to_owned(),
                    },
                );
                field(&mut text, "target", &candidate.target.describe());
                field(
                    &mut text,
                    "candidate overlay",
                    &candidate.path.display().to_string(),
                );
            }
            Decision::Refused { code, reason } => {
                field(
                    &mut text,
                    "decision",
                    &format!("refused ({code}): {reason}"),
                );
            }
        }
        field(
            &mut text,
            "evidence",
            &assist.evidence_dir.display().to_string(),
        );
        if let Some(continued) = &self.continued {
            text.push_str(&format!("continued from step `{}`\n", assist.step));
            text.push_str(&render(continued));
        }
        text
    }
}
