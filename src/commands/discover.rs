//! `cua discover --goal "…" --target URL`: drive the live UI to the goal with a model (or the
//! built-in scripted model with `--scripted`) through the chokepoint as actor `agent`, record the
//! trace, then compile, validate and write the draft.
//!
//! The wiring (the model, the policy, one discovery run on a surface) is shared with `cua demo`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cua_agent::scripted::ScriptedServer;
use cua_agent::{
    Discovery, DiscoveryConfig, DiscoveryReport, DiscoveryRequest, ModelConfig, OpenAiAdapter,
    StopReason,
};
use cua_artifact::{Capability, SecretName};
use cua_chromium::ChromiumSurface;
use cua_evidence::{EvidenceBus, RunId, SecretResolver, SystemClock};
use serde::Serialize;

use crate::cli::{DiscoverArgs, Format};
use crate::commands::compile::{DraftSummary, compile_run, render};
use crate::commands::policy::LoadedPolicy;
use crate::commands::replay::launch;
use crate::error::{CliError, ErrorCode, runtime};
use crate::output::{self, Exit};
use crate::progress::{Ended, Progress};
use crate::project::{self, DefaultPath};

#[derive(Serialize)]
struct Discovered {
    run_dir: String,
    report: DiscoveryReport,
    draft: Option<DraftSummary>,
}

/// The model discovery asks: the built-in scripted model (a loopback server this process
/// runs) or the endpoint the environment configures.
pub(crate) struct Model {
    pub(crate) llm: OpenAiAdapter,
    server: Option<ScriptedServer>,
}

/// One discovery run on a surface: where its evidence goes and what it may use.
pub(crate) struct DiscoveryRun<'a> {
    pub(crate) evidence_root: &'a Path,
    pub(crate) run_id: &'a str,
    pub(crate) request: &'a DiscoveryRequest,
    pub(crate) config: DiscoveryConfig,
    /// Secret values that win over the environment (the fixture's own operator, in the demo).
    pub(crate) secret_overrides: Vec<(SecretName, String)>,
    /// Told the name of every event the run writes (a progress display), when anything is.
    pub(crate) on_event: Option<Arc<dyn Fn(&'static str) + Send + Sync>>,
}

pub(crate) fn run(format: Format, args: &DiscoverArgs) -> Result<Exit, CliError> {
    runtime()?.block_on(discover_and_compile(format, args))
}

impl Model {
    /// Starts the scripted model server, or reads the configured model from the environment
    /// (`CUA_LLM_BASE_URL`, `CUA_LLM_MODEL`, …), which is a usage error when it is missing.
    pub(crate) async fn start(scripted: bool) -> Result<Self, CliError> {
        let server = if scripted {
            Some(
                ScriptedServer::start()
                    .await
                    .map_err(|error| CliError::from(&error))?,
            )
        } else {
            None
        };
        let config = match &server {
            Some(server) => server.model_config(),
            None => ModelConfig::from_env().map_err(|error| CliError::from(&error))?,
        };
        let llm = OpenAiAdapter::new(config).map_err(|error| CliError::from(&error))?;
        Ok(Self { llm, server })
    }

    /// How many requests the scripted model server has answered; `None` for a live model.
    #[cfg_attr(
        not(feature = "fixture"),
        expect(dead_code, reason = "the demo counts them")
    )]
    pub(crate) fn scripted_requests(&self) -> Option<usize> {
        self.server.as_ref().map(|server| server.requests().len())
    }

    /// Stops the scripted model server, if one runs.
    pub(crate) async fn shutdown(self) {
        if let Some(server) = self.server {
            server.shutdown().await;
        }
    }
}

/// Runs discovery on `surface` into `<evidence_root>/<run_id>` and returns its report and run
/// directory. The loop acts as `agent` through the same chokepoint as replay.
pub(crate) async fn discover_on(
    surface: &ChromiumSurface,
    policy: &LoadedPolicy,
    llm: &OpenAiAdapter,
    run: DiscoveryRun<'_>,
) -> Result<(DiscoveryReport, PathBuf), CliError> {
    let bus = RunId::parse(run.run_id)
        .and_then(|run_id| {
            EvidenceBus::create(
                run.evidence_root,
                run_id,
                Arc::new(SystemClock),
                policy.redactor.clone(),
            )
        })
        .map_err(|error| CliError::from(&error))?;
    let bus = match run.on_event {
        Some(observer) => bus.with_observer(observer),
        None => bus,
    };
    let secrets = run.secret_overrides.into_iter().fold(
        SecretResolver::from_process_env(policy.redactor.clone()),
        |secrets, (name, value)| secrets.with_override(name, value),
    );
    let discovery = Discovery {
        driver: surface,
        policy: &policy.engine,
        bus: &bus,
        llm,
        secrets: &secrets,
        config: run.config,
    };
    let report = discovery
        .run(run.request)
        .await
        .map_err(|error| CliError::from(&error))?;
    Ok((report, bus.dir().to_path_buf()))
}

/// Reads a capability file (a sign-in capability, for instance).
pub(crate) fn read_capability(path: &Path) -> Result<Capability, CliError> {
    cua_fs::read_to_string_bounded(path, crate::limits::DOCUMENT)
        .map_err(|error| error.to_string())
        .and_then(|text| Capability::from_yaml(&text).map_err(|error| error.to_string()))
        .map_err(|error| {
            CliError::new(
                ErrorCode::InvalidDocument,
                format!("{}: {error}", path.display()),
            )
        })
}

async fn discover_and_compile(format: Format, args: &DiscoverArgs) -> Result<Exit, CliError> {
    // Every document and name first: a mistake is refused before a model or a browser starts.
    let policy = LoadedPolicy::read(&args.policy.file()?)?;
    let evidence_root = project::or_default(args.evidence.as_deref(), DefaultPath::Discovery)?;
    let drafts = project::or_default(args.out.as_deref(), DefaultPath::Catalog)?;
    let sign_in = args
        .sign_in_with
        .as_deref()
        .map(read_capability)
        .transpose()?;
    let secret_names = args
        .secrets
        .iter()
        .map(|name| {
            SecretName::parse(name)
                .map_err(|error| CliError::new(ErrorCode::InvalidSecretName, error.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let otlp = super::telemetry::otlp()?;
    let model = Model::start(args.scripted).await?;
    let surface = launch(policy.engine.allowlist().clone()).await?;
    let run_id = format!(
        "disc-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis())
    );
    let mut request = DiscoveryRequest::new(args.goal.clone(), args.target.clone());
    request.secret_names = secret_names;
    request.sign_in = sign_in;
    eprintln!(
        "discovering with {} ({}); evidence in {}",
        model.llm.config().model,
        if model.llm.config().scripted {
            "scripted model"
        } else {
            "live model"
        },
        evidence_root.join(&run_id).display()
    );
    let mut progress = Progress::open_ended("discover");
    let steps = progress.stepper();
    let outcome = discover_on(
        &surface,
        &policy,
        &model.llm,
        DiscoveryRun {
            evidence_root: &evidence_root,
            run_id: &run_id,
            request: &request,
            config: DiscoveryConfig {
                max_steps: args.max_steps,
                ..DiscoveryConfig::default()
            },
            secret_overrides: Vec::new(),
            on_event: Some(Arc::new(move |event| match event {
                "dispatch" => steps.step("acted"),
                "llm_call" => steps.say("the model answered"),
                "observe" => steps.say("asking the model"),
                _ => {}
            })),
        },
    )
    .await;
    match &outcome {
        Ok((report, _)) => {
            let reason = report.stop_reason.as_str();
            let ended = Ended::failed_if(report.stop_reason != StopReason::GoalMet);
            progress.finished(reason, ended, reason);
        }
        Err(error) => progress.finished(error.code().as_str(), Ended::Failed, error.message()),
    }
    progress.finish();
    surface.close().await;
    model.shutdown().await;
    if let (Some(otlp), Ok((_, run_dir))) = (&otlp, &outcome) {
        // The trace is as its bus redacted it; a discovery reads no declared sensitive output.
        super::telemetry::export_run(otlp, run_dir, &|text| text.to_owned()).await;
    }
    let (report, run_dir) = outcome?;
    let draft = if report.stop_reason == StopReason::GoalMet {
        let transcript = run_dir.join(cua_evidence::TRACE_FILE).display().to_string();
        Some(compile_run(&run_dir, &transcript, &drafts)?)
    } else {
        None
    };
    let discovered = Discovered {
        run_dir: run_dir.display().to_string(),
        report,
        draft,
    };
    let unmet = discovered.draft.is_none().then(|| {
        CliError::new(
            ErrorCode::GoalNotMet,
            format!(
                "discovery stopped ({}) before reaching the goal; nothing was compiled",
                discovered.report.stop_reason.as_str()
            ),
        )
    });
    Ok(output::report(
        format,
        "discover",
        Some(&discovered),
        unmet.as_ref(),
        || text(&discovered, &run_dir),
    ))
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
