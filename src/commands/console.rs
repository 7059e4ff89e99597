//! `cua console`: serve the operator console; with `--capability`, start the MemberDesk fixture
//! in-process, run the capability supervised in a real browser, and leave the intervention
//! waiting for an operator (who takes control, drives, and hands back; the run then resumes by
//! itself).
//!
//! The binary is where the concrete pieces meet: Chromium becomes the console's
//! [`LiveSurface`], the catalog on disk its [`CatalogView`], and the broker's sink the
//! executor's escalation seam.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cua_artifact::PolicyConfig;
use cua_catalog::{Catalog, CatalogConfig, Integrity, ReviewStatus};
use cua_chromium::{ChromiumSurface, Screencast, ScreencastOptions};
use cua_console::{
    Access, BoxFuture, Broker, BrokerConfig, CapabilityRow, CatalogView, ConsoleConfig,
    FrameStream, LiveFrame, LiveSurface, RunningConsole, WallClock,
};
use cua_evidence::{Redactor, SystemClock};
use cua_policy::{Authorized, BrowserAction, PolicyEngine};
use cua_snapshot::UiSnapshot;
use cua_surface::{BlockedRequest, DispatchReceipt, SurfaceDriver, SurfaceError};
use serde_json::{Value, json};

use crate::cli::{ConsoleArgs, Format};
use crate::commands::policy::LoadedPolicy;
use crate::error::{CliError, ErrorCode, chain, runtime};
use crate::limits;
use crate::output::{self, Exit};

/// Runs `cua console` until Ctrl-C.
pub(crate) fn run(format: Format, args: &ConsoleArgs) -> Result<Exit, CliError> {
    runtime()?.block_on(serve_console(format, args))
}

async fn serve_console(format: Format, args: &ConsoleArgs) -> Result<Exit, CliError> {
    let common = Common::load(
        &args.policy.file()?,
        args.paths.config(None)?,
        &args.evidence.dir()?,
    )?;
    let access = access(args.access.operators.as_deref(), "operator")?;
    let broker = Broker::new(
        BrokerConfig {
            evidence_root: args.evidence.dir()?,
            hold_for: std::time::Duration::from_secs(args.hold_minutes.max(1) * 60),
        },
        Arc::new(WallClock),
    );
    for problem in broker.load_problems() {
        eprintln!("console: {problem}");
    }
    #[cfg(feature = "fixture")]
    let mut supervised = super::supervised::start(&common, &broker, &args.supervised).await?;
    #[cfg(not(feature = "fixture"))]
    let mut supervised: Option<Unsupervised> = None;
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
        supervised
            .as_ref()
            .map(|supervised| &supervised.announcement),
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
    pub(crate) catalog: CatalogConfig,
    pub(crate) evidence: PathBuf,
}

impl Common {
    pub(crate) fn load(
        policy: &Path,
        catalog: CatalogConfig,
        evidence: &Path,
    ) -> Result<Self, CliError> {
        let LoadedPolicy {
            config: policy_config,
            engine,
            redactor,
        } = LoadedPolicy::read(policy)?;
        // The evidence root may not be a link: runs and interventions would go where it points.
        cua_fs::Dir::create_all(evidence, cua_fs::FileMode::Private)
            .map_err(|error| CliError::unwritten(&error, ErrorCode::EvidenceUnwritable))?;
        Ok(Self {
            policy_config,
            policy: engine,
            redactor,
            catalog,
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
) -> Result<(Access, Option<String>), CliError> {
    match operators {
        None => Access::generated(operator)
            .map(|(access, token)| (access, Some(token)))
            .map_err(|error| CliError::new(ErrorCode::NoToken, error.to_string())),
        Some(path) => {
            let text = cua_fs::read_to_string_bounded(path, limits::OPERATORS)
                .map_err(|error| CliError::unread(path, &error))?;
            Access::from_operators_file(&text)
                .map(|access| (access, None))
                .map_err(|error| {
                    CliError::new(
                        ErrorCode::InvalidDocument,
                        format!("{}: {error}", path.display()),
                    )
                })
        }
    }
}

pub(crate) async fn start_server(
    broker: &Arc<Broker>,
    common: &Common,
    bind: SocketAddr,
    allow_remote: bool,
    access: Access,
) -> Result<RunningConsole, CliError> {
    cua_access::check_bind(bind, allow_remote, "the console")
        .map_err(|error| CliError::usage(error.to_string()))?;
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
            catalog: Arc::new(DiskCatalog(common.catalog.clone())),
            settings: common.settings(),
            redactor: common.redactor.clone(),
        },
    )
    .await
    .map_err(|error| CliError::new(ErrorCode::BindFailed, chain(&error)))
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

/// A build without the fixture supervises no run: nothing of this type exists.
#[cfg(not(feature = "fixture"))]
struct Unsupervised {
    announcement: Value,
    run: Option<tokio::task::JoinHandle<()>>,
    never: std::convert::Infallible,
}

#[cfg(not(feature = "fixture"))]
impl Unsupervised {
    #[expect(
        clippy::unused_async,
        reason = "the same call as a supervised run's close"
    )]
    async fn close(self) {
        match self.never {}
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
        action: Authorized<BrowserAction>,
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
struct DiskCatalog(CatalogConfig);

impl CatalogView for DiskCatalog {
    fn capabilities(&self) -> Vec<CapabilityRow> {
        let Ok(entries) = Catalog::new(self.0.clone()).list() else {
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
