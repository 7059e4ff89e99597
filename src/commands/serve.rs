//! `cua serve`: every approved capability as an MCP tool over streamable HTTP at `/mcp`, on
//! loopback unless `--allow-remote` says otherwise. Every request needs an operator's bearer
//! token: one generated and printed at start, as `cua console` does, or the tokens of an
//! `--operators` file. Stops on Ctrl-C (or SIGTERM).

use cua_mcp::{HttpConfig, RunningHttp};
use serde_json::json;

use crate::cli::{Format, ServeArgs};
use crate::commands::console::access;
use crate::commands::mcp::server;
use crate::error::{CliError, ErrorCode, chain, runtime};
use crate::output::{self, Exit};

/// The server named in the refusal of a non-loopback address.
const SERVER: &str = "the MCP tool server";

/// Runs `cua serve` until interrupted.
pub(crate) fn run(format: Format, args: &ServeArgs) -> Result<Exit, CliError> {
    cua_access::check_bind(args.bind, args.access.allow_remote, SERVER)
        .map_err(|error| CliError::usage(error.to_string()))?;
    let (access, token) = access(args.access.operators.as_deref(), "operator")?;
    let server = server("cua serve", &args.server)?;
    let runtime = runtime()?;
    let config = HttpConfig {
        bind: args.bind,
        allow_remote: args.access.allow_remote,
        access,
    };
    runtime.block_on(async move {
        let running = cua_mcp::serve_http(server, config).await.map_err(|error| {
            let code = match error {
                cua_mcp::McpError::Access(_) => ErrorCode::Usage,
                _ => ErrorCode::BindFailed,
            };
            CliError::chained(code, &error)
        })?;
        if !running.address().ip().is_loopback() {
            eprintln!(
                "warning: cua serve listens on {}, beyond this machine. Anyone who can reach it \
                 and holds a token can call every tool; put it behind TLS.",
                running.address()
            );
        }
        announce(format, &running, token.as_deref());
        stopped().await;
        eprintln!("cua serve: stopping");
        // The envelope is already out: a failed shutdown is said on stderr, not in a second one.
        if let Err(error) = running.shutdown().await {
            tracing::error!("cua serve did not shut down cleanly: {}", chain(&error));
            return Ok(Exit::Failed);
        }
        Ok(Exit::Success)
    })
}

/// What `cua serve` prints on stdout when it is ready: the URL, and the generated token (never
/// the tokens of an operators file).
fn announce(format: Format, running: &RunningHttp, token: Option<&str>) {
    let data = json!({ "url": running.url(), "token": token });
    output::emit(format, "serve", Some(&data), None, || {
        let mut text = format!("cua serve listening on {}\n", running.url());
        match token {
            Some(token) => text.push_str(&format!("token: {token}\n")),
            None => text.push_str("tokens: the operators file\n"),
        }
        text
    });
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stopped() {
    let mut terminate =
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(terminate) => terminate,
            Err(error) => {
                eprintln!("cua serve: no SIGTERM handler ({error}); stop with Ctrl-C");
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
