//! The two transports: stdio (the process's stdin and stdout are the protocol, so nothing else
//! may write to stdout) and streamable HTTP at `/mcp`, mounted in axum, on loopback unless the
//! caller explicitly allows another address.
//!
//! # Who may call over HTTP
//!
//! Any local user can connect to a loopback port, and any web page can make a browser send
//! requests to one, so before the MCP session sees a request it must pass, in this order:
//!
//! * the `Host` check: exactly one of the server's loopback names with the port it listens on
//!   (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`), byte for byte, against DNS
//!   rebinding; any `Host` when remote access was allowed. Refused with 421.
//! * the `Origin` check, when the request has one (a browser's does; other clients send none):
//!   `http://` and one of those names. Refused with 403.
//! * the token: `Authorization: Bearer <token>`, one of the operators' tokens, compared in
//!   constant time. Refused with 401 and `WWW-Authenticate: Bearer`.
//!
//! A refusal is a JSON-RPC error (`id: null`) whose `data.reason` is the `cua-access` code
//! (`bad_host`, `bad_origin`, `missing_token`, `wrong_token`). The `Authorization` header is
//! removed once checked, so nothing past the check (the tool handlers, and through them the
//! evidence) can see the token.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use cua_access::{Access, Refusal, ServedNames};
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

/// The JSON-RPC error code of a request refused before the MCP session saw it.
pub const REFUSED_CODE: i64 = -32001;

/// Where the HTTP transport listens and whom it answers.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Port 0 picks a free port; [`RunningHttp::address`] says which.
    pub bind: SocketAddr,
    /// Listen on an address other than loopback (`--allow-remote`), and then answer under any
    /// `Host`. Every request still needs a token.
    pub allow_remote: bool,
    /// The operators whose bearer tokens are accepted.
    pub access: Access,
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
/// unless `allow_remote`; every request passes the `Host`, `Origin` and token checks (see the
/// module documentation) before it reaches the MCP session.
pub async fn serve_http<F: SurfaceFactory>(
    server: CapabilityServer<F>,
    config: HttpConfig,
) -> Result<RunningHttp, McpError> {
    cua_access::check_bind(config.bind, config.allow_remote, "the MCP tool server")?;
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
    let names = ServedNames::new(address, config.allow_remote);
    // rmcp's own Host check gets the same names; ours runs first and is the stricter.
    let transport = match names.loopback() {
        Some(loopback) => {
            StreamableHttpServerConfig::default().with_allowed_hosts(loopback.to_vec())
        }
        None => StreamableHttpServerConfig::default().disable_allowed_hosts(),
    }
    .with_cancellation_token(shutdown.child_token());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        transport,
    );
    let gate = Arc::new(Gate {
        access: config.access,
        names,
    });
    let router = axum::Router::new()
        .nest_service(MCP_PATH, service)
        .layer(middleware::from_fn_with_state(gate, guard));
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

/// What every HTTP request is checked against.
struct Gate {
    access: Access,
    names: ServedNames,
}

/// The `Host`, then the `Origin` (when there is one), then the token; the token is then
/// removed from the request.
async fn guard(State(gate): State<Arc<Gate>>, mut request: Request, next: Next) -> Response {
    if let Err(refusal) = check(&gate, request.headers()) {
        return refused(refusal);
    }
    request.headers_mut().remove(header::AUTHORIZATION);
    next.run(request).await
}

fn check(gate: &Gate, headers: &axum::http::HeaderMap) -> Result<(), Refusal> {
    let host = gate.names.check_host(headers)?;
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().map_err(|_| Refusal::BadOrigin)?;
        gate.names.check_origin(origin, host)?;
    }
    gate.access
        .authenticate(cua_access::bearer_token(headers))
        .map(|_operator| ())
}

/// A refusal as a JSON-RPC error with no id (no request was read), with the HTTP status and,
/// for a token, the `WWW-Authenticate` challenge.
fn refused(refusal: Refusal) -> Response {
    let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::FORBIDDEN);
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": REFUSED_CODE,
            "message": refusal.to_string(),
            "data": { "status": refusal.status(), "reason": refusal.code() },
        },
    });
    let mut response = (status, axum::Json(body)).into_response();
    let challenge = match refusal {
        Refusal::MissingToken => Some("Bearer realm=\"cua serve\""),
        Refusal::WrongToken => Some("Bearer realm=\"cua serve\", error=\"invalid_token\""),
        Refusal::BadHost | Refusal::BadOrigin => None,
    };
    if let Some(challenge) = challenge {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        );
    }
    response
}
