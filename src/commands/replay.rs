//! `cua replay <ref|file>`: run a sealed capability against the live application with zero
//! model calls, print its outputs or outcome, drift, strategy mix, effect verdicts and evidence
//! directory, and exit 0 (success or business outcome), 1 (failed), 2 (usage error, invalid or
//! tampered document), 3 (needs a human) or 69 (surface or target unavailable).
//!
//! This module turns arguments into settings, wires the concrete adapters (the catalog on disk,
//! the policy file, the evidence directory, the process environment's secrets and Debian's
//! Chromium) and calls `cua-replay`. It is the only place that names `cua-chromium`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cua_artifact::{
    ArtifactError, Capability, CapabilityApproval, CapabilityRef, Origin, PolicyConfig, RunStatus,
    TenantBinding, TenantId,
};
use cua_chromium::{ChromiumConfig, ChromiumSurface};
use cua_evidence::{Clock, Redactor, RunId, SecretResolver, SystemClock};
use cua_operators::{HttpServiceClient, ProcessCommandRunner};
use cua_policy::PolicyEngine;
use cua_replay::{
    Attempt, CapabilityLoader, CatalogCapabilities, ContinueAt, Operators, PreparedCapability,
    ReplayConfig, ReplayError, ReplayReport, RunRequest, RunSetup, RunWiring,
};
use serde_json::Value;

use crate::cli::{Format, ReplayArgs};
use crate::commands::policy::LoadedPolicy;
use crate::error::{CliError, ErrorCode, chain, runtime};
use crate::limits;
use crate::output::{EnvelopeError, Exit, emit};

mod assist;
mod batch;
mod escalations;
pub(crate) mod queue;
mod state;

/// The structured-api and native-cli operators a replay dispatches `http` and `command`
/// steps through.
pub(crate) fn operators() -> Result<Operators, String> {
    let http = HttpServiceClient::new()
        .map_err(|error| format!("the HTTP operator cannot start: {error}"))?;
    Ok(Operators {
        http: Some(Arc::new(http)),
        command: Some(Arc::new(ProcessCommandRunner::new())),
    })
}

/// Runs `cua replay`.
pub(crate) fn run(format: Format, args: &ReplayArgs) -> Result<Exit, CliError> {
    let settings = Settings::from_args(args)?;
    let runtime = runtime()?;
    runtime.spawn(watch_signals(settings.stop.clone()));
    match &args.input_rows {
        Some(rows) => runtime.block_on(batch::run(format, &settings, args, rows)),
        None => runtime.block_on(single(format, &settings)),
    }
}

/// A stop asked of the process by a signal: the flag every run checks before its next
/// dispatch, and the exit code the signal means.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stop {
    pub(crate) interrupt: cua_replay::Interrupt,
    exit: Arc<std::sync::OnceLock<Exit>>,
}

impl Stop {
    /// The exit code of the signal that asked to stop, if one did.
    pub(crate) fn requested(&self) -> Option<Exit> {
        self.exit.get().copied()
    }
}

/// SIGINT and SIGTERM stop cleanly: the first raises the interrupt (the action in flight
/// settles, nothing more is dispatched, the run ends `interrupted`); a second one exits at once
/// (the browser's watchdog still takes Chromium down with the process).
async fn watch_signals(stop: Stop) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        let _ = writeln!(
            std::io::stderr(),
            "cua: cannot handle SIGINT/SIGTERM; a signal will stop the run at once (its browser still goes with it)"
        );
        return;
    };
    loop {
        let (exit, name) = tokio::select! {
            _ = interrupt.recv() => (Exit::Interrupted, "SIGINT"),
            _ = terminate.recv() => (Exit::Terminated, "SIGTERM"),
        };
        if stop.exit.set(exit).is_err() {
            std::process::exit(exit as i32);
        }
        stop.interrupt.raise();
        // Raised first: a closed stderr must not keep the run going.
        let _ = writeln!(
            std::io::stderr(),
            "cua: {name}: letting the action in flight settle and dispatching nothing more (send it again to stop at once)"
        );
    }
}

/// Everything a replay needs, read and checked before the browser starts.
pub(crate) struct Settings {
    pub(crate) prepared: PreparedCapability,
    pub(crate) inputs: BTreeMap<String, Value>,
    pub(crate) tenant: Option<TenantId>,
    pub(crate) allow_irreversible: bool,
    pub(crate) policy_config: PolicyConfig,
    pub(crate) policy: PolicyEngine,
    pub(crate) evidence_dir: PathBuf,
    pub(crate) run_id: Option<String>,
    pub(crate) loader: CatalogCapabilities,
    /// `--assist`: one model proposal after a run that stopped on a step's target.
    pub(crate) assist: bool,
    /// `--base-url`, kept so an assist's candidate overlay can leave it out.
    pub(crate) base_url: Option<Origin>,
    /// Raised by SIGINT or SIGTERM.
    pub(crate) stop: Stop,
    /// Signs each run's line in the evidence root's ledger (`CUA_EVIDENCE_KEY`).
    pub(crate) signing_key: Option<Arc<cua_evidence::InstallationKey>>,
    /// Where each run's spans go (`OTEL_EXPORTER_OTLP_*`); none, the default, exports nothing.
    pub(crate) otlp: Option<cua_otel::OtlpConfig>,
}

impl Settings {
    fn from_args(args: &ReplayArgs) -> Result<Self, CliError> {
        Self::from_args_with(args, None, true)
    }

    /// [`Settings::from_args`], judged by `approval` when given instead of the one `--approval`
    /// or the catalog names, and checking the secrets the run needs only when `secrets` (a
    /// batch's submitter need not hold the workers' secrets).
    pub(crate) fn from_args_with(
        args: &ReplayArgs,
        approval: Option<CapabilityApproval>,
        secrets: bool,
    ) -> Result<Self, CliError> {
        let inputs = parse_inputs(&args.inputs)?;
        // A run id names a directory under the evidence root (a batch's names its state file
        // and its rows' directories): checked before anything is read or written.
        if let Some(run_id) = &args.run_id {
            RunId::parse(run_id).map_err(|error| CliError::usage(error.to_string()))?;
        }
        let base = super::load_capability(
            &args.capability,
            &cua_catalog::Catalog::new(args.paths.config(args.bind.tenant.as_deref())?),
        )?;
        let tenant = args
            .bind
            .tenant
            .as_deref()
            .map(|tenant| {
                TenantId::parse(tenant)
                    .map_err(|error| CliError::new(ErrorCode::InvalidTenant, error.to_string()))
            })
            .transpose()?;
        let binding = match &tenant {
            Some(tenant) => Some(load_binding(
                &cua_catalog::Catalog::new(args.paths.config(args.bind.tenant.as_deref())?),
                tenant,
                &base,
            )?),
            None => None,
        };
        let approval = match (approval, &args.bind.approval) {
            (Some(approval), _) => Some(approval),
            (None, Some(path)) => Some(load_approval(path)?),
            (None, None) => recorded_approval(&args.paths, tenant.as_ref(), &base.reference())?,
        };
        let LoadedPolicy {
            config: policy_config,
            engine: policy,
            ..
        } = LoadedPolicy::read(&args.policy.file()?)?;
        let prepared = PreparedCapability::bind(
            base,
            binding,
            args.bind.base_url.as_ref().map(Origin::as_str),
            approval,
        )
        .map_err(|error| CliError::usage(format!("cannot bind the capability: {error}")))?;
        // Only tenant placeholders (`{base_url}`) are unbound here; `{$input: …}` references
        // are bound from the run's inputs when the entrypoint is navigated.
        if let Some(placeholder) =
            cua_artifact::tenant_placeholder(&prepared.capability.entrypoint.url)
        {
            return Err(CliError::usage(format!(
                "the entrypoint {} needs {{{placeholder}}}, and nothing sets it",
                prepared.capability.entrypoint.url
            ))
            .with_help(
                "pass --base-url ORIGIN (the application's scheme, host and port), or a --tenant whose binding sets it",
            ));
        }
        // Where `run_capability` remedies come from: the catalog on disk, bound like the run
        // itself (same tenant when it has a binding for the remedy, same `--base-url`), with
        // approvals.
        let loader = CatalogCapabilities::new(
            cua_catalog::Catalog::new(args.paths.config(args.bind.tenant.as_deref())?),
            tenant.clone(),
            args.bind.base_url.clone(),
        );
        if secrets {
            check_secrets(
                &prepared.capability,
                &loader,
                &policy_config.secrets.env_prefix,
            )?;
        }
        Ok(Self {
            prepared,
            inputs,
            tenant,
            allow_irreversible: args.bind.allow_irreversible,
            policy_config,
            policy,
            evidence_dir: args.evidence.dir()?,
            run_id: args.run_id.clone(),
            loader,
            assist: args.assist,
            base_url: args.bind.base_url.clone(),
            stop: Stop::default(),
            // Read before the browser starts: a run told to sign that cannot does not start.
            signing_key: super::evidence::signing_key()
                .map_err(|message| CliError::new(ErrorCode::BadKey, message))?,
            // Read before the browser starts too: a collector setting cua cannot use is told
            // now, not after the run.
            otlp: super::telemetry::otlp()?,
        })
    }

    /// The allowlist the browser enforces: the policy's, narrowed by the capability.
    pub(crate) fn browser_allowlist(&self) -> Result<cua_policy::Allowlist, CliError> {
        self.policy
            .for_capability(&self.prepared.capability)
            .map(|engine| engine.allowlist().clone())
            .map_err(|error| CliError::usage(format!("the capability's allowed domains: {error}")))
    }

    /// The `--input`s of a single run, its idempotency key filled in from the run id when the
    /// capability takes one and the caller gave none (an assisted continuation reuses them, so
    /// it passes the same key).
    pub(crate) fn keyed_inputs(&self, run_id: &str) -> BTreeMap<String, Value> {
        cua_replay::with_idempotency_key(
            &self.prepared.capability,
            self.inputs.clone(),
            &cua_evidence::idempotency_key(run_id, None),
        )
    }

    /// A request for one run with `inputs`.
    pub(crate) fn request(&self, inputs: BTreeMap<String, Value>) -> RunRequest {
        let mut request = RunRequest::new(self.prepared.clone(), inputs);
        request.tenant = self.tenant.clone();
        request.allow_irreversible = self.allow_irreversible;
        request
    }
}

/// One run: launch the browser, replay, print, close.
async fn single(format: Format, settings: &Settings) -> Result<Exit, CliError> {
    // An assist's model is checked before the browser starts; a plain replay never builds one.
    let model = settings.assist.then(assist::model).transpose()?;
    let run_id = match &settings.run_id {
        Some(run_id) => run_id.clone(),
        None => fresh_run_id(),
    };
    // The evidence root and the run's directory are checked before the browser starts: a link
    // planted at either, or a run directory someone else made, is refused at once.
    let checked = RunId::parse(&run_id).map_err(|error| CliError::usage(error.to_string()))?;
    cua_evidence::check_run_dir(&settings.evidence_dir, &checked)
        .map_err(|error| CliError::from(&error))?;
    // Inputs that do not fit are the caller's mistake, told before a browser starts or a run
    // is recorded (a batch row's are judged in its run: one bad row must not stop the rest).
    let inputs = settings.keyed_inputs(&run_id);
    cua_replay::validate_inputs(&settings.prepared.capability, &inputs).map_err(|problems| {
        crate::error::invalid_inputs(&settings.prepared.capability, &problems)
    })?;
    let surface = launch(settings.browser_allowlist()?).await?;
    let outcome = replay_once(settings, &surface, &run_id, inputs, None, None).await;
    if let Some(model) = model {
        let assisted = match outcome {
            Ok(report) => assist::after(settings, &surface, &run_id, report, model).await,
            Err(failure) => Err(failure),
        };
        surface.close().await;
        return assisted.map(|assisted| assisted.print(format));
    }
    surface.close().await;
    let report = outcome?;
    print_report(format, &report);
    // A run that must go to a person says so, signal or not: a caller that retried on 130
    // could repeat its mutation.
    if let Some(exit) = settings.stop.requested()
        && report.result.status != RunStatus::NeedsHuman
    {
        eprintln!(
            "cua: stopped by a signal; the run's evidence is in {} (a run is never resumed: check \
             any mutation it names, then replay again)",
            report.evidence_dir.display()
        );
        return Ok(exit);
    }
    Ok(exit_of(&report))
}

/// A queue claim's hold on its row, for the run that serves it: the session lease the worker's
/// heartbeat takes away when the claim is lost, and the journal every intent must also reach.
pub(crate) struct RowFence {
    pub(crate) lease: Arc<std::sync::Mutex<cua_policy::Lease>>,
    pub(crate) journal: Arc<dyn cua_evidence::IntentJournal>,
}

/// Replays once on `surface` into `<evidence>/<run_id>`, as `attempt` of a batch row when it
/// is one, under a queue claim's `fence` when a worker runs it.
pub(crate) async fn replay_once(
    settings: &Settings,
    surface: &ChromiumSurface,
    run_id: &str,
    inputs: BTreeMap<String, Value>,
    attempt: Option<Attempt>,
    fence: Option<&RowFence>,
) -> Result<ReplayReport, CliError> {
    let mut request = settings.request(inputs);
    request.attempt = attempt;
    replay_request(
        settings,
        surface,
        run_id,
        request,
        None,
        Dispatches::Any,
        fence,
    )
    .await
}

/// Runs `request` on `surface` into `<evidence>/<run_id>`: from the entrypoint, or, with `at`,
/// continued on the current screen from a step (assisted replay).
pub(crate) async fn replay_request(
    settings: &Settings,
    surface: &ChromiumSurface,
    run_id: &str,
    request: RunRequest,
    at: Option<ContinueAt>,
    dispatches: Dispatches,
    fence: Option<&RowFence>,
) -> Result<ReplayReport, CliError> {
    let run_id = RunId::parse(run_id).map_err(|error| CliError::usage(error.to_string()))?;
    let wiring = RunWiring::open(RunSetup {
        signing_key: settings.signing_key.clone(),
        lease: fence.map(|fence| Arc::clone(&fence.lease)),
        intent_journal: fence.map(|fence| Arc::clone(&fence.journal)),
        ..RunSetup::new(
            &settings.evidence_dir,
            run_id.clone(),
            &settings.policy_config,
            cua_evidence::process_environment(),
        )
    })
    .map_err(|error| CliError::from(&error))?;
    let bus = wiring.bus();
    let escalations = escalations::PersistedEscalations::new(
        settings.evidence_dir.clone(),
        bus.redactor().clone(),
    );
    let config = ReplayConfig {
        operators: operators()
            .map_err(|message| CliError::new(ErrorCode::SurfaceUnavailable, message))?,
        interrupt: settings.stop.interrupt.clone(),
        read_only: dispatches == Dispatches::ReadsOnly,
        screenshots: settings.policy_config.evidence.screenshots,
        ..ReplayConfig::default()
    };
    let replayer = wiring.replayer(
        surface,
        &settings.policy,
        &settings.loader,
        &escalations,
        config,
    );
    let outcome = match at {
        None => replayer.run(request).await,
        Some(at) => replayer.continue_run(request, at).await,
    };
    // Every caller prints, returns or keeps the report: none gets a sensitive value in clear.
    let outcome = outcome.map(|report| report.redacted(bus.redactor()));
    if let Some(otlp) = &settings.otlp {
        // A refused run (tampered, a draft, unbound) ended its trace too: it is exported as well.
        let run_dir = match &outcome {
            Ok(report) => report.evidence_dir.clone(),
            Err(_) => settings.evidence_dir.join(run_id.as_str()),
        };
        if run_dir.join(cua_evidence::TRACE_FILE).is_file() {
            let redactor = bus.redactor();
            super::telemetry::export_run(otlp, &run_dir, &|text| redactor.redact_text(text)).await;
        }
    }
    outcome.map_err(|error| match error {
        ReplayError::Tampered { .. }
        | ReplayError::Draft { .. }
        | ReplayError::UnboundPlaceholder { .. }
        | ReplayError::Policy { .. } => CliError::new(ErrorCode::Refused, error.to_string()),
        ReplayError::Evidence(_) => CliError::new(ErrorCode::EvidenceUnwritable, chain(&error)),
    })
}

/// What a run may dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dispatches {
    /// Whatever the capability and the policy allow.
    Any,
    /// Nothing that needs a write-ahead intent: a reconciliation only reads.
    ReadsOnly,
}

/// Launches Debian's Chromium under `allowlist`; a missing or broken browser is exit 69.
pub(crate) async fn launch(allowlist: cua_policy::Allowlist) -> Result<ChromiumSurface, CliError> {
    Ok(ChromiumSurface::launch(ChromiumConfig::from_env(allowlist)).await?)
}

/// Prints a report: the envelope in JSON, a summary in text.
fn print_report(format: Format, report: &ReplayReport) {
    let error = match report.result.status {
        RunStatus::Failed | RunStatus::NeedsHuman => report
            .result
            .error
            .as_ref()
            .map(|error| EnvelopeError::new(error.code.as_str(), error.message.clone())),
        RunStatus::Success | RunStatus::BusinessOutcome => None,
    };
    emit(format, "replay", Some(report), error.as_ref(), || {
        render(report)
    });
}

/// The exit code of a finished run: 0 success or business outcome, 1 failed, 3 needs a
/// human, 69 when the surface became unavailable. The library reports a status; the exit code
/// is the command line's.
pub(crate) fn exit_of(report: &ReplayReport) -> Exit {
    exit_for(
        report.result.status,
        report.result.error.as_ref().map(|error| error.code),
    )
}

fn exit_for(status: RunStatus, failure: Option<cua_artifact::FailureCode>) -> Exit {
    match (status, failure) {
        (RunStatus::Success | RunStatus::BusinessOutcome, _) => Exit::Success,
        (RunStatus::NeedsHuman, _) => Exit::NeedsHuman,
        (RunStatus::Failed, Some(cua_artifact::FailureCode::SurfaceUnavailable)) => {
            Exit::Unavailable
        }
        (RunStatus::Failed, _) => Exit::Failed,
    }
}

/// The text form: the summary line, then outputs or outcome, the run's and each step's effect
/// verdict, drift, strategies and where the evidence is.
pub(crate) fn render(report: &ReplayReport) -> String {
    let result = &report.result;
    let mut text = format!("{}\n", result.summary());
    let field = |text: &mut String, name: &str, value: &str| {
        text.push_str(&format!("{name:<18} {value}\n"));
    };
    if !result.outputs.is_empty() {
        text.push_str("outputs\n");
        for (name, value) in &result.outputs {
            field(&mut text, &format!("  {name}"), &plain(value));
        }
    }
    if let Some(outcome) = &result.outcome {
        field(&mut text, "outcome", outcome.code.as_str());
        for (name, value) in &outcome.data {
            field(&mut text, &format!("  {name}"), &plain(value));
        }
    }
    if let Some(error) = &result.error {
        field(
            &mut text,
            "error",
            &format!("{}: {}", error.code.as_str(), error.message),
        );
        if let Some(step) = &error.step_id {
            field(&mut text, "  at step", step.as_str());
        }
    }
    if let Some(intervention) = &result.intervention {
        field(&mut text, "intervention", &intervention.intervention_id);
    }
    field(&mut text, "effect", report.effect.as_str());
    text.push_str("steps\n");
    let names: Vec<String> = report
        .steps
        .iter()
        .map(|step| match &step.capability {
            Some(capability) => format!("{}/{}", capability.id(), step.step),
            None => step.step.clone(),
        })
        .collect();
    let width = names.iter().map(String::len).max().unwrap_or(0);
    for (name, step) in names.iter().zip(&report.steps) {
        text.push_str(&format!(
            "  {name:<width$}  {:<9} {}\n",
            step.action.as_str(),
            step.verdict.as_str()
        ));
    }
    field(&mut text, "drift", &format!("{:.2}", result.drift_score));
    let mix: Vec<String> = result
        .strategy_mix
        .iter()
        .map(|(strategy, count)| format!("{} {count}", strategy.as_str()))
        .collect();
    field(
        &mut text,
        "strategies",
        &if mix.is_empty() {
            "none".to_owned()
        } else {
            mix.join(", ")
        },
    );
    field(&mut text, "dispatches", &report.dispatches.to_string());
    field(
        &mut text,
        "recovery attempts",
        &result.recovery_attempts.to_string(),
    );
    field(
        &mut text,
        "evidence",
        &report.evidence_dir.display().to_string(),
    );
    text
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `NAME=VALUE` pairs; the value is taken exactly as given (never trimmed). A pair without `=`,
/// an empty name, or a name given twice is a usage error.
fn parse_inputs(pairs: &[String]) -> Result<BTreeMap<String, Value>, CliError> {
    let mut inputs = BTreeMap::new();
    for pair in pairs {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(CliError::usage(format!(
                "malformed --input `{pair}`: expected NAME=VALUE"
            )));
        };
        if name.is_empty() || name.trim() != name {
            return Err(CliError::usage(format!(
                "malformed --input `{pair}`: the name before `=` must be an input name"
            )));
        }
        if inputs
            .insert(name.to_owned(), Value::from(value.to_owned()))
            .is_some()
        {
            return Err(CliError::usage(format!(
                "--input `{name}` is given more than once"
            )));
        }
    }
    Ok(inputs)
}

/// The tenant's binding of `base`, as the catalog reads it (a binding for another tenant, or
/// something other than a file where it belongs, refused); a tenant without one is a usage
/// error.
fn load_binding(
    catalog: &cua_catalog::Catalog,
    tenant: &TenantId,
    base: &Capability,
) -> Result<TenantBinding, CliError> {
    match catalog.binding(tenant, &base.reference()) {
        Ok(Some(binding)) => Ok(binding),
        Ok(None) => Err(crate::error::no_binding(catalog, tenant, &base.id)),
        Err(error) => Err(CliError::from(&error)),
    }
}

/// Refuses, before any browser starts, a run whose capability (or a capability its remedies
/// run) names a secret the environment does not hold: found halfway through a flow, after a
/// sign-on or a mutation, it could only fail the run. A remedy that does not load is left to
/// fail when it is needed, as it would.
fn check_secrets(
    capability: &Capability,
    loader: &CatalogCapabilities,
    env_prefix: &str,
) -> Result<(), CliError> {
    let secrets = SecretResolver::from_process_env_with_prefix(env_prefix, Redactor::default());
    let mut pending = vec![capability.clone()];
    let mut seen = std::collections::BTreeSet::from([capability.reference()]);
    while let Some(capability) = pending.pop() {
        for name in capability.secret_names() {
            secrets.check(&name).map_err(|error| {
                CliError::new(
                    ErrorCode::MissingSecret,
                    format!("{} needs a secret: {error}", capability.reference()),
                )
                .with_help(format!(
                    "secrets come only from the environment of the process that runs cua, never \
                     from a file or a flag: export it there (a CI secret, a vault agent); the \
                     policy's `secrets.env_prefix` ({env_prefix}) sets the prefix"
                ))
            })?;
        }
        for remedy in capability.remedy_capabilities() {
            if seen.insert(remedy.clone())
                && let Ok(prepared) = loader.load(&remedy)
            {
                pending.push(prepared.capability);
            }
        }
    }
    Ok(())
}

/// The approval a run of `reference` is judged by when none is named, as the catalog judges it
/// ([`cua_catalog::Catalog::approval_record`]): the tenant's own when its binding is there, else
/// the base's, else none. A capability run from a file outside the catalog has none recorded.
pub(crate) fn recorded_approval(
    paths: &crate::cli::CatalogPaths,
    tenant: Option<&TenantId>,
    reference: &CapabilityRef,
) -> Result<Option<CapabilityApproval>, CliError> {
    match cua_catalog::Catalog::new(paths.config(tenant.map(TenantId::as_str))?)
        .approval_record(reference, tenant)
    {
        Ok(record) => Ok(record),
        Err(cua_catalog::CatalogError::NotFound { .. }) => Ok(None),
        Err(error) => Err(CliError::from(&error)),
    }
}

fn load_approval(path: &Path) -> Result<CapabilityApproval, CliError> {
    let text = read(path)?;
    cua_artifact::yaml::from_yaml::<CapabilityApproval>(&text)
        .map_err(|error| crate::error::invalid_document(path, &ArtifactError::from(error)))
}

fn read(path: &Path) -> Result<String, CliError> {
    cua_fs::read_to_string_bounded(path, limits::DOCUMENT)
        .map_err(|error| CliError::unread(path, &error))
}

/// A run id from the wall clock and the process id: `replay-20261130T034102123456Z-4242`.
pub(crate) fn fresh_run_id() -> String {
    let stamp: String = SystemClock
        .now()
        .to_string()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    format!("replay-{stamp}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_status_maps_to_its_exit_code() {
        use cua_artifact::FailureCode;
        assert_eq!(exit_for(RunStatus::Success, None), Exit::Success);
        assert_eq!(exit_for(RunStatus::BusinessOutcome, None), Exit::Success);
        assert_eq!(
            exit_for(RunStatus::NeedsHuman, Some(FailureCode::TargetNotFound)),
            Exit::NeedsHuman
        );
        assert_eq!(
            exit_for(RunStatus::Failed, Some(FailureCode::SurfaceUnavailable)),
            Exit::Unavailable
        );
        assert_eq!(
            exit_for(RunStatus::Failed, Some(FailureCode::PolicyDenied)),
            Exit::Failed
        );
        assert_eq!(exit_for(RunStatus::Failed, None), Exit::Failed);
    }

    #[test]
    fn inputs_parse_exactly_and_refuse_duplicates_and_malformed_pairs() {
        let parsed = parse_inputs(&["member_id= 12345".to_owned(), "note=a=b".to_owned()])
            .expect("well-formed pairs parse");
        assert_eq!(parsed["member_id"], " 12345");
        assert_eq!(parsed["note"], "a=b");
        for bad in [
            vec!["member_id".to_owned()],
            vec!["=12345".to_owned()],
            vec![" member_id=1".to_owned()],
            vec!["member_id=1".to_owned(), "member_id=2".to_owned()],
        ] {
            let failure = parse_inputs(&bad).expect_err("a malformed or duplicated pair");
            assert_eq!(failure.exit(), Exit::Usage, "{bad:?}");
        }
    }
}
