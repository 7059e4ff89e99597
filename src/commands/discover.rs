//! `cua discover --goal "…" --target URL`: drive the live UI to the goal with a model (or the
//! built-in scripted model with `--scripted`) through the chokepoint as actor `agent`, record the
//! trace, then compile, validate and write the draft.

use std::path::Path;
use std::sync::Arc;

use cua_agent::scripted::ScriptedServer;
use cua_agent::{
    Discovery, DiscoveryConfig, DiscoveryReport, DiscoveryRequest, ModelConfig, OpenAiAdapter,
    StopReason,
};
use cua_artifact::{Capability, PolicyConfig, SecretName};
use cua_chromium::{ChromiumConfig, ChromiumSurface};
use cua_evidence::{EvidenceBus, Redactor, RunId, SecretResolver, SystemClock};
use cua_policy::PolicyEngine;
use serde::Serialize;

use crate::cli::{DiscoverArgs, Format};
use crate::commands::compile::{DraftSummary, compile_run, render};
use crate::output::{self, EnvelopeError, Exit};

#[derive(Serialize)]
struct Discovered {
    run_dir: String,
    report: DiscoveryReport,
    draft: Option<DraftSummary>,
}

pub(crate) fn run(format: Format, args: &DiscoverArgs) -> Exit {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            return fail(
                format,
                Exit::Failed,
                "runtime_unavailable",
                &error.to_string(),
            );
        }
    };
    runtime.block_on(discover(format, args))
}

async fn discover(format: Format, args: &DiscoverArgs) -> Exit {
    let scripted = if args.scripted {
        match ScriptedServer::start().await {
            Ok(server) => Some(server),
            Err(error) => return fail(format, Exit::Failed, "scripted_model", &error.to_string()),
        }
    } else {
        None
    };
    let model = match &scripted {
        Some(server) => server.model_config(),
        None => match ModelConfig::from_env() {
            Ok(config) => config,
            Err(error) => {
                return fail(
                    format,
                    Exit::Usage,
                    "model_not_configured",
                    &error.to_string(),
                );
            }
        },
    };
    let llm = match OpenAiAdapter::new(model) {
        Ok(llm) => llm,
        Err(error) => return fail(format, Exit::Usage, "model_config", &error.to_string()),
    };
    let policy_config = match std::fs::read_to_string(&args.policy)
        .map_err(|error| error.to_string())
        .and_then(|text| PolicyConfig::from_yaml(&text).map_err(|error| error.to_string()))
    {
        Ok(config) => config,
        Err(error) => {
            return fail(
                format,
                Exit::Usage,
                "invalid_policy",
                &format!("{}: {error}", args.policy.display()),
            );
        }
    };
    let (policy, redactor) = match (
        PolicyEngine::from_config(&policy_config),
        Redactor::from_policy(&policy_config.redaction),
    ) {
        (Ok(policy), Ok(redactor)) => (policy, redactor),
        (Err(error), _) => return fail(format, Exit::Usage, "invalid_policy", &error.to_string()),
        (_, Err(error)) => return fail(format, Exit::Usage, "invalid_policy", &error.to_string()),
    };
    let sign_in = match &args.sign_in_with {
        None => None,
        Some(path) => match std::fs::read_to_string(path)
            .map_err(|error| error.to_string())
            .and_then(|text| Capability::from_yaml(&text).map_err(|error| error.to_string()))
        {
            Ok(capability) => Some(capability),
            Err(error) => {
                return fail(
                    format,
                    Exit::Usage,
                    "invalid_capability",
                    &format!("{}: {error}", path.display()),
                );
            }
        },
    };
    let mut secret_names = Vec::new();
    for name in &args.secrets {
        match SecretName::parse(name) {
            Ok(name) => secret_names.push(name),
            Err(error) => {
                return fail(
                    format,
                    Exit::Usage,
                    "invalid_secret_name",
                    &error.to_string(),
                );
            }
        }
    }
    let surface =
        match ChromiumSurface::launch(ChromiumConfig::from_env(policy.allowlist().clone())).await {
            Ok(surface) => surface,
            Err(error) => {
                return fail(
                    format,
                    Exit::Unavailable,
                    "surface_unavailable",
                    &error.to_string(),
                );
            }
        };
    let run_id = format!(
        "disc-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis())
    );
    let bus = match RunId::parse(&run_id).and_then(|run_id| {
        EvidenceBus::create(
            &args.evidence,
            run_id,
            Arc::new(SystemClock),
            redactor.clone(),
        )
    }) {
        Ok(bus) => bus,
        Err(error) => {
            surface.close().await;
            return fail(format, Exit::Failed, "evidence", &error.to_string());
        }
    };
    let secrets = SecretResolver::from_process_env(redactor);
    let config = DiscoveryConfig {
        max_steps: args.max_steps,
        ..DiscoveryConfig::default()
    };
    let discovery = Discovery {
        driver: &surface,
        policy: &policy,
        bus: &bus,
        llm: &llm,
        secrets: &secrets,
        config,
    };
    let mut request = DiscoveryRequest::new(args.goal.clone(), args.target.clone());
    request.secret_names = secret_names;
    request.sign_in = sign_in;
    eprintln!(
        "discovering with {} ({}); evidence in {}",
        llm.config().model,
        if llm.config().scripted {
            "scripted model"
        } else {
            "live model"
        },
        bus.dir().display()
    );
    let outcome = discovery.run(&request).await;
    surface.close().await;
    if let Some(server) = scripted {
        server.shutdown().await;
    }
    let report = match outcome {
        Ok(report) => report,
        Err(error) => return fail(format, Exit::Failed, "discovery_failed", &error.to_string()),
    };
    let run_dir = bus.dir().to_path_buf();
    let draft = if report.stop_reason == StopReason::GoalMet {
        let transcript = run_dir.join(cua_evidence::TRACE_FILE).display().to_string();
        match compile_run(&run_dir, &transcript, &args.out) {
            Ok(summary) => Some(summary),
            Err((exit, code, message)) => return fail(format, exit, code, &message),
        }
    } else {
        None
    };
    let discovered = Discovered {
        run_dir: run_dir.display().to_string(),
        report,
        draft,
    };
    let exit = if discovered.draft.is_some() {
        Exit::Success
    } else {
        Exit::Failed
    };
    output::emit(format, "discover", Some(&discovered), None, || {
        text(&discovered, &run_dir)
    });
    exit
}

fn text(discovered: &Discovered, run_dir: &Path) -> String {
    let report = &discovered.report;
    let mut text = format!(
        "discovery {}: {} after {} tool call(s), {} effective, {} model call(s), {} tokens, {} ms{}\n  trace: {}\n",
        report.run_id,
        report.stop_reason.as_str(),
        report.steps_attempted,
        report.steps_effective,
        report.model_calls,
        report.tokens,
        report.elapsed_ms,
        if report.scripted {
            " (scripted model)"
        } else {
            ""
        },
        run_dir.join(cua_evidence::TRACE_FILE).display(),
    );
    for refusal in &report.refusals {
        text.push_str(&format!(
            "  refused: {} ({}): {}\n",
            refusal.tool, refusal.code, refusal.reason
        ));
    }
    match &discovered.draft {
        Some(draft) => text.push_str(&render(draft)),
        None => text.push_str("The goal was not reached; nothing was compiled.\n"),
    }
    text
}

fn fail(format: Format, exit: Exit, code: &str, message: &str) -> Exit {
    let error = EnvelopeError {
        code: code.to_owned(),
        message: message.to_owned(),
    };
    output::emit::<()>(format, "discover", None, Some(&error), String::new);
    eprintln!("error: {message}");
    exit
}
