//! The two transports: stdio (the process's stdin and stdout are the protocol, so nothing else
//! may write to stdout) and streamable HTTP at `/mcp`, mounted in axum, on loopback unless the
//! caller explicitly allows another address.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::ServiceExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::McpError;
use crate::server::CapabilityServer;
use crate::surface::SurfaceFactory;

/// The path the HTTP transport serves MCP on.
pub const MCP_PATH: &str = "/mcp";

/// Where and how the HTTP transport listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpConfig {
    /// Port 0 picks a free port; [`RunningHttp::address`] says which.
    pub bind: SocketAddr,
    /// Listen on an address other than loopback. The server has no authentication of its own.
    pub allow_non_loopback: bool,
}

/// A listening HTTP transport.
#[derive(Debug)]
pub struct RunningHttp {
    address: SocketAddr,
    shutdown: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
}

/// Serves MCP on stdin and stdout until the client closes them.
pub async fn serve_stdio<F: SurfaceFactory>(server: CapabilityServer<F>) -> Result<(), McpError> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|error| McpError::Transport {
            reason: error.to_string(),
        })?;
    running
        .waiting()
        .await
        .map_err(|error| McpError::Transport {
            reason: error.to_string(),
        })?;
    Ok(())
}

/// Binds the HTTP transport and serves it in the background. Refuses a non-loopback address
/// unless `allow_non_loopback`; the `Host` header is checked against the loopback names (and
/// the bound address when it is not loopback) against DNS rebinding.
pub async fn serve_http<F: SurfaceFactory>(
    server: CapabilityServer<F>,
    config: HttpConfig,
) -> Result<RunningHttp, McpError> {
    if !config.bind.ip().is_loopback() && !config.allow_non_loopback {
        return Err(McpError::NotLoopback {
            address: config.bind,
        });
    }
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .map_err(|source| McpError::Bind {
            address: config.bind,
            source,
        })?;
    let address = listener.local_addr().map_err(|source| McpError::Bind {
        address: config.bind,
        source,
    })?;
    let shutdown = CancellationToken::new();
    let mut allowed_hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    if !address.ip().is_loopback() {
        allowed_hosts.push(address.ip().to_string());
    }
    let transport = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_cancellation_token(shutdown.child_token());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        transport,
    );
    let router = axum::Router::new().nest_service(MCP_PATH, service);
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
    });
    Ok(RunningHttp {
        address,
        shutdown,
        task,
    })
}

impl RunningHttp {
    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://<address>/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.address)
    }

    /// Waits until the server stops (it stops only on [`RunningHttp::shutdown`] or an error).
    pub async fn wait(self) -> Result<(), McpError> {
        match self.task.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(McpError::Transport {
                reason: error.to_string(),
            }),
            Err(error) => Err(McpError::Transport {
                reason: error.to_string(),
            }),
        }
    }

    /// Stops accepting, ends the sessions, and waits for the server to finish.
    pub async fn shutdown(self) -> Result<(), McpError> {
        self.shutdown.cancel();
        self.wait().await
    }
}
