//! `cua console`: serve the operator console; with `--capability`, start the MemberDesk fixture
//! in-process, run the capability supervised in a real browser, and leave the intervention
//! waiting for an operator (who takes control, drives, and hands back; the run then resumes by
//! itself).
//!
//! The binary is where the concrete pieces meet: Chromium becomes the console's
//! [`LiveSurface`], the catalog on disk its [`CatalogView`], and the broker's sink the
//! executor's escalation seam.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cua_artifact::{Actor, Capability, CapabilityRef, PolicyConfig};
use cua_catalog::{Catalog, CatalogConfig, Integrity, ReviewStatus};
use cua_chromium::{ChromiumConfig, ChromiumSurface, LaunchError, Screencast, ScreencastOptions};
use cua_console::{
    Access, BoxFuture, Broker, BrokerConfig, CapabilityRow, CatalogView, ConsoleConfig,
    FrameStream, LiveFrame, LiveSurface, RunAttachment, RunningConsole, SessionConfig, SessionMode,
    WallClock,
};
use cua_evidence::{EvidenceBus, Redactor, RunId, SecretResolver, SystemClock};
use cua_policy::{AuthorizedAction, Lease, PolicyEngine};
use cua_replay::{
    CapabilityList, PreparedCapability, ReplayConfig, Replayer, RunRequest, TokioClock,
};
use cua_snapshot::UiSnapshot;
use cua_surface::{BlockedRequest, DispatchReceipt, SurfaceDriver, SurfaceError};
use serde_json::{Value, json};

use crate::cli::{ConsoleArgs, Format};
use crate::limits;
use crate::output::{self, EnvelopeError, Exit};

/// Runs `cua console` until Ctrl-C.
pub(crate) fn run(format: Format, args: &ConsoleArgs) -> Exit {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return fail(format, Exit::Failed, "runtime", &error.to_string()),
    };
    match runtime.block_on(serve_console(format, args)) {
        Ok(exit) => exit,
        Err((exit, code, message)) => fail(format, exit, code, &message),
    }
}

pub(crate) type Failure = (Exit, &'static str, String);

async fn serve_console(format: Format, args: &ConsoleArgs) -> Result<Exit, Failure> {
    let common = Common::load(&args.policy, &args.catalog, &args.evidence_dir)?;
    let access = access(args.access.operators.as_deref(), "operator")?;
    let broker = Broker::new(
        BrokerConfig {
            evidence_root: args.evidence_dir.clone(),
            hold_for: std::time::Duration::from_secs(args.hold_minutes.max(1) * 60),
        },
        Arc::new(WallClock),
    );
    for problem in broker.load_problems() {
        eprintln!("console: {problem}");
    }
    let mut supervised = None;
    if let Some(reference) = &args.capability {
        supervised = Some(start_supervised(&common, &broker, args, reference).await?);
    } else if args.arm_fault.is_some() || !args.inputs.is_empty() {
        return Err(usage("--input and --arm-fault need --capability"));
    }
    let running = start_server(
        &broker,
        &common,
        args.bind,
        args.access.allow_remote,
        access.0,
    )
    .await?;
    announce(
        format,
        &running,
        &access.1,
        supervised.as_ref().map(|s| &s.announcement),
    );
    let finished = supervised.as_mut().map(|supervised| supervised.run.take());
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = wait_for_run(finished.flatten()) => {
            // The supervised run is over; keep serving its evidence until Ctrl-C.
            let _ = tokio::signal::ctrl_c().await;
        }
    }
    running.shutdown().await;
    if let Some(supervised) = supervised {
        supervised.close().await;
    }
    Ok(Exit::Success)
}

/// What every console command loads: the policy, its engine and redactor, and the catalog.
pub(crate) struct Common {
    pub(crate) policy_config: PolicyConfig,
    pub(crate) policy: PolicyEngine,
    pub(crate) redactor: Redactor,
    pub(crate) catalog: PathBuf,
    pub(crate) evidence: PathBuf,
}

impl Common {
    pub(crate) fn load(policy: &Path, catalog: &Path, evidence: &Path) -> Result<Self, Failure> {
        let text = cua_fs::read_to_string_bounded(policy, limits::DOCUMENT)
            .map_err(|error| usage(&error.to_string()))?;
        let policy_config = PolicyConfig::from_yaml(&text)
            .map_err(|error| usage(&format!("{}: {error}", policy.display())))?;
        let engine = PolicyEngine::from_config(&policy_config)
            .map_err(|error| usage(&format!("{}: {error}", policy.display())))?
            // A declared command path is relative to the policy file that declares it.
            .with_command_base(policy.parent().unwrap_or(Path::new(".")));
        let redactor = Redactor::from_policy(&policy_config.redaction)
            .map_err(|error| usage(&format!("{}: {error}", policy.display())))?;
        // The evidence root may not be a link: runs and interventions would go where it points.
        cua_fs::Dir::create_all(evidence, cua_fs::FileMode::Private)
            .map_err(|error| usage(&error.to_string()))?;
        Ok(Self {
            policy_config,
            policy: engine,
            redactor,
            catalog: catalog.to_path_buf(),
            evidence: evidence.to_path_buf(),
        })
    }

    /// The read-only settings page: the policy's rules, and the model (never its key).
    pub(crate) fn settings(&self) -> Value {
        let policy = serde_json::to_value(&self.policy_config).unwrap_or(Value::Null);
        let model = json!({
            "base_url": std::env::var("CUA_LLM_BASE_URL").ok(),
            "model": std::env::var("CUA_LLM_MODEL").ok(),
            "api_key": if std::env::var_os("CUA_LLM_API_KEY").is_some() { "set (not shown)" } else { "not set" },
        });
        json!({ "policy": policy, "model": model })
    }
}

/// The operators of `cua console` and `cua serve`: named tokens from an operators file
/// (`name: token` per line), or one generated token for `operator`, returned to be printed
/// once. A file that cannot be read or is malformed is a usage error.
pub(crate) fn access(
    operators: Option<&Path>,
    operator: &str,
) -> Result<(Access, Option<String>), Failure> {
    match operators {
        None => Access::generated(operator)
            .map(|(access, token)| (access, Some(token)))
            .map_err(|error| (Exit::Failed, "no_token", error.to_string())),
        Some(path) => {
            let text = cua_fs::read_to_string_bounded(path, limits::OPERATORS)
                .map_err(|error| usage(&error.to_string()))?;
            Access::from_operators_file(&text)
                .map(|access| (access, None))
                .map_err(|error| usage(&format!("{}: {error}", path.display())))
        }
    }
}

pub(crate) async fn start_server(
    broker: &Arc<Broker>,
    common: &Common,
    bind: SocketAddr,
    allow_remote: bool,
    access: Access,
) -> Result<RunningConsole, Failure> {
    cua_access::check_bind(bind, allow_remote, "the console")
        .map_err(|error| usage(&error.to_string()))?;
    if !bind.ip().is_loopback() {
        eprintln!(
            "warning: the console listens on {bind}, beyond this machine. Anyone who can reach it and holds a token can drive the live session; put it behind TLS."
        );
    }
    cua_console::serve(
        Arc::clone(broker),
        ConsoleConfig {
            bind,
            allow_remote,
            access,
            catalog: Arc::new(DiskCatalog {
                root: common.catalog.clone(),
            }),
            settings: common.settings(),
            redactor: common.redactor.clone(),
        },
    )
    .await
    .map_err(|error| (Exit::Failed, "bind", format!("{error}: {}", chain(&error))))
}

/// What `cua console` prints when it is ready: the URL (with the token in its fragment), and
/// for a supervised run the session, run and fixture.
fn announce(
    format: Format,
    running: &RunningConsole,
    token: &Option<String>,
    supervised: Option<&Value>,
) {
    let url = match token {
        Some(token) => format!("{}/#token={token}", running.url()),
        None => format!("{}/", running.url()),
    };
    let data = json!({
        "url": running.url(),
        "open": url,
        "token": token,
        "supervised": supervised,
    });
    output::emit(format, "console", Some(&data), None, || {
        let mut text = format!("cua console listening on {}\n", running.url());
        match token {
            Some(token) => text.push_str(&format!("open {url}\ntoken: {token}\n")),
            None => text.push_str("tokens: the operators file\n"),
        }
        if let Some(supervised) = supervised {
            text.push_str(&format!("supervised: {supervised}\n"));
        }
        text
    });
}

/// A capability running supervised on the in-process fixture.
struct Supervised {
    announcement: Value,
    run: Option<tokio::task::JoinHandle<()>>,
    surface: Arc<ChromiumSurface>,
    fixture: memberdesk::RunningFixture,
}

impl Supervised {
    async fn close(self) {
        if let Some(run) = self.run {
            run.abort();
        }
        if let Ok(surface) = Arc::try_unwrap(self.surface) {
            surface.close().await;
        }
        let _ = self.fixture.shutdown().await;
    }
}

async fn wait_for_run(run: Option<tokio::task::JoinHandle<()>>) {
    match run {
        Some(run) => {
            let _ = run.await;
        }
        None => std::future::pending::<()>().await,
    }
}

async fn start_supervised(
    common: &Common,
    broker: &Arc<Broker>,
    args: &ConsoleArgs,
    reference: &str,
) -> Result<Supervised, Failure> {
    let fixture = memberdesk::serve(memberdesk::FixtureConfig::loopback(args.variant))
        .await
        .map_err(|error| (Exit::Unavailable, "fixture", error.to_string()))?;
    let base_url = fixture.base_url();
    if let Some(fault) = &args.arm_fault {
        let fault: memberdesk::Fault = fault
            .parse()
            .map_err(|error: memberdesk::FixtureError| usage(&error.to_string()))?;
        fixture.handle().arm(
            fault,
            memberdesk::FaultCount::Times(args.fault_count.max(1)),
        );
    }
    let capability = load_capability(&common.catalog, reference)?;
    let prepared = PreparedCapability::bind(capability, None, Some(&base_url), None)
        .map_err(|error| usage(&format!("cannot bind the capability: {error}")))?;
    let remedies = remedies(&common.catalog, &base_url);
    let inputs = parse_inputs(&args.inputs)?;
    let engine = common
        .policy
        .for_capability(&prepared.capability)
        .map_err(|error| usage(&error.to_string()))?;
    let surface = Arc::new(launch(engine.allowlist().clone()).await?);
    let run_id = args
        .run_id
        .clone()
        .unwrap_or_else(|| fresh_run_id("supervised"));
    let run_id = RunId::parse(&run_id).map_err(|error| usage(&error.to_string()))?;
    let bus = Arc::new(
        EvidenceBus::create(
            &common.evidence,
            run_id.clone(),
            Arc::new(SystemClock),
            common.redactor.clone(),
        )
        .map_err(|error| {
            let (exit, code) = crate::commands::evidence_failure(&error);
            (exit, code, error.to_string())
        })?,
    );
    let lease = Arc::new(Mutex::new(Lease::new(Actor::Automation)));
    let session_id = "live-1".to_owned();
    broker
        .open_session(SessionConfig {
            id: session_id.clone(),
            mode: SessionMode::Supervised,
            surface: Arc::new(ChromiumLive(Arc::clone(&surface))),
            engine: engine.clone(),
            redactor: bus.redactor().clone(),
            lease: Arc::clone(&lease),
            label: prepared.capability.reference().to_string(),
        })
        .map_err(|error| (Exit::Failed, "session", error.to_string()))?;
    broker
        .attach_run(
            &session_id,
            RunAttachment {
                bus: Arc::clone(&bus),
                capability: Some(prepared.capability.reference()),
                goal: Some(prepared.capability.title.clone()),
            },
        )
        .map_err(|error| (Exit::Failed, "session", error.to_string()))?;
    let announcement = json!({
        "session": session_id,
        "run_id": run_id.as_str(),
        "evidence": bus.dir().display().to_string(),
        "fixture": base_url,
        "capability": prepared.capability.reference().to_string(),
    });
    // The fixture's contract credentials, for its sign-on remedy, unless the environment
    // names others. They go to the resolver only, never to the process environment.
    let prefix = common.policy_config.secrets.env_prefix.clone();
    let mut environment: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?)))
        .collect();
    environment
        .entry(format!("{prefix}COREBANK_OPERATOR_ID"))
        .or_insert_with(|| memberdesk::OPERATOR_ID.to_owned());
    environment
        .entry(format!("{prefix}COREBANK_OPERATOR_PASSWORD"))
        .or_insert_with(|| memberdesk::OPERATOR_PASSWORD.to_owned());
    let secrets = SecretResolver::new(prefix, environment, bus.redactor().clone());
    let sink = broker.sink(&session_id);
    let policy = common.policy.clone();
    let driver = Arc::clone(&surface);
    let mut request = RunRequest::new(prepared, inputs);
    request.allow_irreversible = false;
    let operators = super::replay::operators()
        .map_err(|message| (Exit::Unavailable, "surface_unavailable", message))?;
    let run = tokio::spawn(async move {
        let clock = TokioClock::new();
        let replayer = Replayer {
            driver: &*driver,
            policy: &policy,
            bus: &bus,
            clock: &clock,
            secrets: &secrets,
            capabilities: &remedies,
            escalations: &sink,
            lease,
            config: ReplayConfig {
                operators,
                ..ReplayConfig::default()
            },
        };
        match replayer.run(request).await {
            Ok(report) => eprintln!(
                "console: run {} ended {} (outputs {})",
                report.result.run_id,
                json!(report.result.status),
                json!(report.result.outputs)
            ),
            Err(error) => eprintln!("console: the run was refused: {error}"),
        }
    });
    Ok(Supervised {
        announcement,
        run: Some(run),
        surface,
        fixture,
    })
}

/// Every capability in the catalog, bound to the fixture, for `run_capability` remedies.
fn remedies(catalog: &Path, base_url: &str) -> CapabilityList {
    let mut entries = Vec::new();
    if let Ok(listing) = catalog_at(catalog).list() {
        for entry in listing {
            if let Some(capability) = entry.capability
                && matches!(entry.integrity, Integrity::Sealed { .. })
                && let Ok(prepared) =
                    PreparedCapability::bind(capability, None, Some(base_url), entry.approval)
            {
                entries.push(prepared);
            }
        }
    }
    CapabilityList::new(entries)
}

/// The catalog whose artifacts are in `capabilities` (evaluations and tenants where the
/// repository keeps them).
fn catalog_at(capabilities: &Path) -> Catalog {
    Catalog::new(CatalogConfig {
        capabilities: capabilities.to_path_buf(),
        evaluations: PathBuf::from("evidence/evals"),
        tenants: PathBuf::from("tenants"),
    })
}

/// A capability by reference (`id@version`, or `id` for the newest) from the catalog.
fn load_capability(catalog: &Path, reference: &str) -> Result<Capability, Failure> {
    let catalog = catalog_at(catalog);
    let resolved: CapabilityRef = catalog
        .resolve(reference)
        .map_err(|error| usage(&error.to_string()))?;
    catalog
        .load(&resolved)
        .map_err(|error| usage(&error.to_string()))
}

fn parse_inputs(pairs: &[String]) -> Result<BTreeMap<String, Value>, Failure> {
    let mut inputs = BTreeMap::new();
    for pair in pairs {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(usage(&format!("--input {pair:?} is not NAME=VALUE")));
        };
        if inputs.insert(name.to_owned(), Value::from(value)).is_some() {
            return Err(usage(&format!("--input {name} is given twice")));
        }
    }
    Ok(inputs)
}

/// Launches Debian's Chromium under `allowlist`.
pub(crate) async fn launch(allowlist: cua_policy::Allowlist) -> Result<ChromiumSurface, Failure> {
    ChromiumSurface::launch(ChromiumConfig::from_env(allowlist))
        .await
        .map_err(|error| {
            let code = match error {
                LaunchError::ChromiumMissing { .. } => "chromium_missing",
                _ => "surface_unavailable",
            };
            (Exit::Unavailable, code, error.to_string())
        })
}

/// `<prefix>-<UTC stamp>-<pid>`.
pub(crate) fn fresh_run_id(prefix: &str) -> String {
    use cua_evidence::Clock;
    let stamp: String = SystemClock
        .now()
        .to_string()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    format!("{prefix}-{stamp}-{}", std::process::id())
}

pub(crate) fn usage(message: &str) -> Failure {
    (Exit::Usage, "usage", message.to_owned())
}

pub(crate) fn fail(format: Format, exit: Exit, code: &str, message: &str) -> Exit {
    let error = EnvelopeError {
        code: code.to_owned(),
        message: message.to_owned(),
    };
    output::emit::<Value>(format, "console", None, Some(&error), String::new);
    eprintln!("error: {message}");
    exit
}

fn chain(error: &dyn std::error::Error) -> String {
    let mut parts = Vec::new();
    let mut source = error.source();
    while let Some(cause) = source {
        parts.push(cause.to_string());
        source = cause.source();
    }
    parts.join(": ")
}

/// Chromium as the console's live surface.
pub(crate) struct ChromiumLive(pub(crate) Arc<ChromiumSurface>);

struct ChromiumFrames(Screencast);

impl FrameStream for ChromiumFrames {
    fn next_frame(&mut self) -> BoxFuture<'_, Option<LiveFrame>> {
        Box::pin(async move {
            let frame = self.0.next_frame().await?;
            Some(LiveFrame {
                jpeg: frame.jpeg,
                page_width: frame.device_width,
                page_height: frame.device_height,
            })
        })
    }
}

impl LiveSurface for ChromiumLive {
    fn observe(&self) -> BoxFuture<'_, Result<UiSnapshot, SurfaceError>> {
        Box::pin(self.0.observe())
    }

    fn peek(&self) -> BoxFuture<'_, Result<UiSnapshot, SurfaceError>> {
        Box::pin(self.0.peek())
    }

    fn dispatch(
        &self,
        action: AuthorizedAction,
    ) -> BoxFuture<'_, Result<DispatchReceipt, SurfaceError>> {
        Box::pin(self.0.dispatch(action))
    }

    fn frames(&self) -> BoxFuture<'_, Result<Box<dyn FrameStream>, SurfaceError>> {
        Box::pin(async move {
            let screencast = self.0.screencast(ScreencastOptions::default()).await?;
            Ok(Box::new(ChromiumFrames(screencast)) as Box<dyn FrameStream>)
        })
    }

    fn take_blocked_requests(&self) -> Vec<BlockedRequest> {
        self.0.take_blocked_requests()
    }
}

/// The catalog on disk as the capabilities page lists it.
struct DiskCatalog {
    root: PathBuf,
}

impl CatalogView for DiskCatalog {
    fn capabilities(&self) -> Vec<CapabilityRow> {
        let Ok(entries) = catalog_at(&self.root).list() else {
            return Vec::new();
        };
        entries
            .into_iter()
            .map(|entry| {
                let (integrity, content_hash) = match &entry.integrity {
                    Integrity::Sealed { content_hash } => {
                        ("sealed", Some(content_hash.to_string()))
                    }
                    Integrity::Draft { computed } => ("draft", Some(computed.to_string())),
                    Integrity::Tampered { computed, .. } => {
                        ("tampered", Some(computed.to_string()))
                    }
                    Integrity::Invalid { .. } => ("invalid", None),
                };
                let approval = match &entry.review {
                    ReviewStatus::Unreviewed => "unreviewed".to_owned(),
                    ReviewStatus::Current { decision } => {
                        json!(decision).as_str().unwrap_or("decided").to_owned()
                    }
                    ReviewStatus::Stale { .. } => "stale".to_owned(),
                    ReviewStatus::Invalid { .. } => "invalid approval".to_owned(),
                };
                let capability = entry.capability.as_ref();
                CapabilityRow {
                    reference: entry
                        .reference
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_else(|| entry.path.display().to_string()),
                    title: capability.map(|c| c.title.clone()).unwrap_or_default(),
                    description: capability
                        .map(|c| c.description.clone())
                        .unwrap_or_default(),
                    integrity: integrity.to_owned(),
                    content_hash,
                    approval,
                    max_risk: capability
                        .map(|c| c.max_risk().as_str().to_owned())
                        .unwrap_or_default(),
                    inputs: capability
                        .map(|c| {
                            c.inputs
                                .iter()
                                .map(|input| input.name.to_string())
                                .collect()
                        })
                        .unwrap_or_default(),
                    outputs: capability
                        .map(|c| {
                            c.outputs
                                .iter()
                                .map(|output| output.name.to_string())
                                .collect()
                        })
                        .unwrap_or_default(),
                }
            })
            .collect()
    }
}
