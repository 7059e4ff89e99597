//! `cua serve`: every approved capability as an MCP tool over streamable HTTP at `/mcp`, on
//! loopback unless `--allow-non-loopback` says otherwise. Stops on Ctrl-C (or SIGTERM).

use cua_mcp::HttpConfig;

use crate::cli::ServeArgs;
use crate::commands::chain;
use crate::commands::mcp::{runtime, server};
use crate::output::Exit;

/// Runs `cua serve` until interrupted.
pub(crate) fn run(args: &ServeArgs) -> Exit {
    let server = match server("cua serve", &args.server) {
        Ok(server) => server,
        Err(exit) => return exit,
    };
    let Some(runtime) = runtime() else {
        return Exit::Failed;
    };
    let config = HttpConfig {
        bind: args.bind,
        allow_non_loopback: args.allow_non_loopback,
    };
    runtime.block_on(async move {
        let running = match cua_mcp::serve_http(server, config).await {
            Ok(running) => running,
            Err(error) => {
                eprintln!("error: {}", chain(&error));
                return match error {
                    cua_mcp::McpError::NotLoopback { .. } => Exit::Usage,
                    _ => Exit::Failed,
                };
            }
        };
        if !running.address().ip().is_loopback() {
            eprintln!(
                "cua serve: WARNING: listening beyond this machine with no authentication; \
                 anyone who reaches {} can call every tool",
                running.address()
            );
        }
        eprintln!("cua serve: listening on {}", running.url());
        stopped().await;
        eprintln!("cua serve: stopping");
        match running.shutdown().await {
            Ok(()) => Exit::Success,
            Err(error) => {
                eprintln!("error: {}", chain(&error));
                Exit::Failed
            }
        }
    })
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
