//! `cua mcp`: every approved capability as an MCP tool on stdin/stdout. stdout is the protocol,
//! so everything this command says goes to stderr.
//!
//! This module also holds what `cua serve` shares with it: the arguments turned into a
//! [`McpConfig`], and Debian's Chromium injected as the surface factory (the only place the
//! tool server meets `cua-chromium`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cua_artifact::TenantId;
use cua_chromium::ChromiumSurface;
use cua_evidence::SystemClock;
use cua_mcp::{CapabilityServer, McpConfig, PlanKey, SurfaceFactory, SurfaceUnavailable};
use cua_policy::Allowlist;

use crate::cli::McpArgs;
use crate::error::{CliError, ErrorCode, chain, runtime};
use crate::output::Exit;

/// Runs `cua mcp` until the client closes stdin.
pub(crate) fn run(args: &McpArgs) -> Result<Exit, CliError> {
    let server = server("cua mcp", args)?;
    let runtime = runtime()?;
    eprintln!("cua mcp: serving on stdio");
    runtime
        .block_on(cua_mcp::serve_stdio(server))
        .map_err(|error| CliError::chained(ErrorCode::Internal, &error))?;
    Ok(Exit::Success)
}

/// Reads the policy, builds the server and reports on stderr (as `command`) which capabilities
/// it offers and which it withholds. A bad policy or catalog is a usage error (exit 2).
pub(crate) fn server(
    command: &str,
    args: &McpArgs,
) -> Result<CapabilityServer<ChromiumSurfaces>, CliError> {
    let policy = crate::commands::policy::LoadedPolicy::read(&args.policy.file()?)?.config;
    let tenant = args
        .tenant
        .as_deref()
        .map(TenantId::parse)
        .transpose()
        .map_err(|error| CliError::new(ErrorCode::InvalidTenant, error.to_string()))?;
    let prefix = policy.secrets.env_prefix.clone();
    let screenshots = policy.evidence.screenshots;
    let mut config = McpConfig::new(policy);
    config.replay.screenshots = screenshots;
    config.catalog = args.paths.config(args.tenant.as_deref())?;
    let catalog_dir = config.catalog.capabilities.clone();
    config.tenant = tenant;
    config.base_url.clone_from(&args.base_url);
    config.evidence_dir.clone_from(&args.evidence.dir()?);
    config.plan_ttl = Duration::from_secs(args.plan_ttl);
    config.replay.operators = crate::commands::replay::operators()
        .map_err(|message| CliError::new(ErrorCode::SurfaceUnavailable, message))?;
    config.environment = cua_evidence::process_environment()
        .into_iter()
        .filter(|(key, _)| key.starts_with(&prefix))
        .collect();
    let key =
        PlanKey::generate().map_err(|error| CliError::chained(ErrorCode::Internal, &error))?;
    let server = CapabilityServer::new(config, ChromiumSurfaces, Arc::new(SystemClock), key)
        .map_err(|error| CliError::chained(ErrorCode::Usage, &error))?;
    let set = server.tool_set().map_err(|error| {
        CliError::new(
            ErrorCode::ReadFailed,
            format!("{}: {}", catalog_dir.display(), chain(&error)),
        )
    })?;
    for offered in &set.offered {
        let plan = if offered.needs_plan() {
            format!(" (+ {})", offered.plan_tool_name())
        } else {
            String::new()
        };
        eprintln!(
            "{command}: tool {}{plan} = {} [{}]",
            offered.name,
            offered.reference,
            offered.risk.as_str()
        );
    }
    for withheld in &set.withheld {
        eprintln!(
            "{command}: withheld {}: {}",
            withheld.capability, withheld.reason
        );
    }
    if set.offered.is_empty() {
        eprintln!(
            "{command}: no capability in {} is approved; approve one with `cua catalog approve`",
            display(&catalog_dir)
        );
    }
    Ok(server)
}

/// Debian's Chromium, launched fresh (its own profile) for each tool call.
pub(crate) struct ChromiumSurfaces;

impl SurfaceFactory for ChromiumSurfaces {
    type Surface = ChromiumSurface;

    async fn open(&self, allowlist: Allowlist) -> Result<ChromiumSurface, SurfaceUnavailable> {
        crate::commands::replay::launch(allowlist)
            .await
            .map_err(|error| SurfaceUnavailable {
                code: error.code().as_str().to_owned(),
                message: error.message().to_owned(),
            })
    }

    async fn close(&self, surface: ChromiumSurface) {
        surface.close().await;
    }
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
