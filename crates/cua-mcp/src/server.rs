//! The tool server: the MCP handler over the catalog. `tools/list` reads the catalog afresh, so
//! an approval recorded or revoked while the server runs takes effect at the next call.
//! `tools/call` looks the tool up the same way, refuses what is not offered, validates the
//! inputs before anything is opened, and hands plan and run calls to [`crate::call`].

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cua_artifact::{PolicyConfig, TenantId};
use cua_catalog::{Catalog, CatalogConfig};
use cua_evidence::{Clock, Redactor};
use cua_policy::PolicyEngine;
use cua_replay::ReplayConfig;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::call::{self, CallHooks, Refusal};
use crate::error::McpError;
use crate::plan::{DEFAULT_PLAN_TTL, PlanBook, PlanKey};
use crate::surface::SurfaceFactory;
use crate::tools::{ToolKind, ToolSet, ToolSetSource};

/// What the server serves and how.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// Where capabilities, approvals and tenant bindings are read from.
    pub catalog: CatalogConfig,
    pub policy: PolicyConfig,
    /// The tenant whose bindings apply (and whose approvals count).
    pub tenant: Option<TenantId>,
    /// Binds `{base_url}` through a substitution-only binding.
    pub base_url: Option<cua_artifact::Origin>,
    /// Where each call's run directory is written.
    pub evidence_dir: PathBuf,
    /// The environment `{$secret: …}` values are resolved from (the policy's prefix applies).
    pub environment: Vec<(String, String)>,
    /// How long a plan approval is valid.
    pub plan_ttl: Duration,
    /// How often a session's tool list is compared with the catalog (for
    /// `notifications/tools/list_changed`).
    pub list_poll: Duration,
    pub replay: ReplayConfig,
}

/// The MCP server. Cheap to clone: every clone (one per HTTP session) shares the catalog, the
/// plan book and the surface factory.
pub struct CapabilityServer<F> {
    pub(crate) shared: Arc<Shared<F>>,
}

/// What every clone shares.
pub(crate) struct Shared<F> {
    pub(crate) config: McpConfig,
    pub(crate) catalog: Catalog,
    pub(crate) policy: PolicyEngine,
    pub(crate) factory: F,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) plans: PlanBook,
    runs: AtomicU64,
    /// The digest of the tool list, kept by one poller for every session (started with the
    /// first session; it stops once the server is gone).
    tool_list: std::sync::OnceLock<tokio::sync::watch::Sender<String>>,
}

impl McpConfig {
    /// A configuration with the defaults: the repository's catalog layout, no tenant, no
    /// `base_url`, evidence under `evidence/runs`, the process environment's secrets, plan
    /// approvals valid for five minutes.
    pub fn new(policy: PolicyConfig) -> Self {
        Self {
            catalog: CatalogConfig::default(),
            policy,
            tenant: None,
            base_url: None,
            evidence_dir: PathBuf::from("evidence/runs"),
            environment: Vec::new(),
            plan_ttl: DEFAULT_PLAN_TTL,
            list_poll: Duration::from_secs(1),
            replay: ReplayConfig::default(),
        }
    }
}

impl<F> Clone for CapabilityServer<F> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<F: SurfaceFactory> CapabilityServer<F> {
    /// A server over `config`, opening surfaces with `factory`, reading time from `clock` (plan
    /// expiry, evidence) and authenticating plan approvals with `key`.
    pub fn new(
        config: McpConfig,
        factory: F,
        clock: Arc<dyn Clock>,
        key: PlanKey,
    ) -> Result<Self, McpError> {
        let policy = PolicyEngine::from_config(&config.policy).map_err(McpError::Policy)?;
        Redactor::from_policy(&config.policy.redaction).map_err(McpError::Redaction)?;
        let plans = PlanBook::new(key, config.plan_ttl);
        Ok(Self {
            shared: Arc::new(Shared {
                catalog: Catalog::new(config.catalog.clone()),
                config,
                policy,
                factory,
                clock,
                plans,
                runs: AtomicU64::new(0),
                tool_list: std::sync::OnceLock::new(),
            }),
        })
    }

    /// What the catalog offers right now, and what it withholds.
    pub fn tool_set(&self) -> Result<ToolSet, McpError> {
        let shared = &self.shared;
        ToolSet::build(ToolSetSource {
            catalog: &shared.catalog,
            policy: &shared.policy,
            tenant: shared.config.tenant.as_ref(),
            base_url: shared
                .config
                .base_url
                .as_ref()
                .map(cua_artifact::Origin::as_str),
        })
    }

    /// The tools as `tools/list` returns them.
    pub fn tools(&self) -> Result<Vec<Tool>, McpError> {
        Ok(self.tool_set()?.tools(self.shared.config.plan_ttl))
    }

    /// One `tools/call`. A refusal or a failed run is a tool result with `isError: true`; only
    /// a name that is no tool at all (nor a withheld capability) is a protocol error.
    pub async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        self.call_with(name, arguments, &CallHooks::default()).await
    }

    /// [`CapabilityServer::call`], telling `hooks` of each step and stopping when its interrupt
    /// is raised.
    pub async fn call_with(
        &self,
        name: &str,
        arguments: JsonObject,
        hooks: &CallHooks,
    ) -> Result<CallToolResult, ErrorData> {
        let set = self
            .tool_set()
            .map_err(|error| ErrorData::internal_error(chain(&error), None))?;
        let Some((kind, offered)) = set.find(name) else {
            if let Some(withheld) = set.withheld_as(name) {
                return Ok(Refusal::new(
                    "not_offered",
                    format!(
                        "refused: {} is in the catalog but not offered as a tool: {}",
                        withheld.capability, withheld.reason
                    ),
                )
                .into_result(name));
            }
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name}"),
                None,
            ));
        };
        let result = match kind {
            ToolKind::Plan => call::plan(self, offered, arguments),
            ToolKind::Run => call::run(self, offered, arguments, hooks).await,
        };
        Ok(result.unwrap_or_else(|refusal| refusal.into_result(name)))
    }

    /// What `tools/list` would answer, as one digest to compare: a refusal to read the catalog
    /// is a state of its own, so a catalog that becomes readable again is a change too.
    fn tool_list_digest(&self) -> String {
        let listed = match self.tools() {
            Ok(tools) => serde_json::to_string(&tools).unwrap_or_default(),
            Err(error) => format!("unreadable: {}", chain(&error)),
        };
        blake3::hash(listed.as_bytes()).to_hex().to_string()
    }

    /// A receiver of the tool list's digest, which changes when the list does. The first call
    /// starts the one poller: the catalog is files other processes write, so there is nothing
    /// to subscribe to, and every session shares one read of it per tick rather than one each.
    fn tool_list_changes(&self) -> tokio::sync::watch::Receiver<String> {
        self.shared
            .tool_list
            .get_or_init(|| {
                let (sender, _) = tokio::sync::watch::channel(self.tool_list_digest());
                let shared = Arc::downgrade(&self.shared);
                let poll = self.shared.config.list_poll;
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(poll).await;
                        let Some(shared) = shared.upgrade() else {
                            break;
                        };
                        let server = CapabilityServer { shared };
                        let digest = server.tool_list_digest();
                        if let Some(sender) = server.shared.tool_list.get() {
                            sender.send_if_modified(|listed| {
                                let changed = *listed != digest;
                                *listed = digest;
                                changed
                            });
                        }
                    }
                });
                sender
            })
            .subscribe()
    }

    /// Tells the peer `notifications/tools/list_changed` each time the tool list changes, for
    /// as long as its session lasts.
    async fn announce_tool_list_changes(self, peer: Peer<RoleServer>) {
        let mut changes = self.tool_list_changes();
        let poll = self.shared.config.list_poll;
        while !peer.is_transport_closed() {
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() || peer.notify_tool_list_changed().await.is_err() {
                        break;
                    }
                }
                // A closed session is noticed even while nothing changes.
                () = tokio::time::sleep(poll) => {}
            }
        }
    }

    /// The next run id: `mcp-<UTC instant>-<process>-<n>`.
    pub(crate) fn next_run_id(&self) -> String {
        let sequence = self.shared.runs.fetch_add(1, Ordering::SeqCst) + 1;
        let stamp: String = self
            .shared
            .clock
            .now()
            .to_string()
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        format!("mcp-{stamp}-{}-{sequence}", std::process::id())
    }
}

impl<F: SurfaceFactory> ServerHandler for CapabilityServer<F> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("cua", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Each tool is a reviewed, approved capability replayed deterministically against \
                 a legacy application: typed inputs, typed outputs, no model call. A business \
                 outcome (e.g. member_not_found) is a successful result with status \
                 business_outcome, not an error. Failures and needs_human are tool errors with a \
                 failure code and an evidence reference. Irreversible tools run only with an \
                 approval_token from their `__plan` companion, for exactly the planned inputs.",
        )
    }

    /// Each session is told `notifications/tools/list_changed` when an approval recorded or
    /// revoked (or a capability sealed, tampered, removed) changes what it would list.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let server = self.clone();
        tokio::spawn(async move { server.announce_tool_list_changes(context.peer).await });
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.tools()
            .map(ListToolsResult::with_all_items)
            .map_err(|error| ErrorData::internal_error(chain(&error), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let mut hooks = CallHooks::default();
        // Progress, when the client asked for it with a token: one notification per step, in
        // order (a channel keeps them so while the run goes on).
        let mut forwarder = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<(u32, String)>();
            let peer = context.peer.clone();
            forwarder = Some(tokio::spawn(async move {
                while let Some((done, message)) = receiver.recv().await {
                    let mut param = ProgressNotificationParam::new(token.clone(), f64::from(done));
                    param.message = Some(message);
                    if peer.notify_progress(param).await.is_err() {
                        break;
                    }
                }
            }));
            hooks.progress = Some(Arc::new(move |done, message| {
                let _ = sender.send((done, message));
            }));
        }
        // A cancelled request stops its run before the next dispatch; the action in flight
        // settles and the run's evidence says it was interrupted.
        let interrupt = hooks.interrupt.clone();
        let cancelled = context.ct.clone();
        let watcher = tokio::spawn(async move {
            cancelled.cancelled().await;
            interrupt.raise();
        });
        let result = self.call_with(&request.name, arguments, &hooks).await;
        watcher.abort();
        drop(hooks);
        if let Some(forwarder) = forwarder {
            // Every step's notification is sent before the result (bounded: a peer that stops
            // reading must not hold the result back).
            let _ = tokio::time::timeout(Duration::from_secs(5), forwarder).await;
        }
        result.map(Into::into)
    }
}

/// An error and its sources, one line.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
