//! The console's HTTP server (axum): the page, the JSON API, the live view's WebSocket, and the
//! evidence browser.
//!
//! # Access and cross-site protection
//!
//! * Every `/api` and `/ws` request needs an operator token, in `Authorization: Bearer …` or
//!   `X-Cua-Token` (the WebSocket: in its subprotocol list as `cua-token.<token>`). No cookie
//!   is ever set, so a cross-site page has nothing to ride on.
//! * The `Host` must be one of the console's loopback names with its port (a DNS-rebinding
//!   page cannot talk to it under another name), unless remote access was allowed.
//! * A request whose `Sec-Fetch-Site` is `cross-site` or `same-site` is refused; a
//!   state-changing request, and every WebSocket, must carry an `Origin` that is the
//!   console's own when it carries one at all, and the WebSocket must carry one.
//! * Tokens, names and origins are checked by `cua-access`, as `cua serve` checks them.
//! * Responses are `no-store`, `nosniff`, framed by nobody, and the page runs under a CSP that
//!   allows only its own script. The page builds every text with `textContent`: nothing the
//!   server sends is interpreted as HTML.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path as UrlPath, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use cua_access::{Access, Refusal, ServedNames};
use cua_evidence::Redactor;
use futures::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::broker::{Broker, Gesture, Session};
use crate::error::ConsoleError;
use crate::files::{open_run, read_evidence_file};
use crate::page;
use crate::paint::{paint, sensitive_regions};
use crate::show;

/// The WebSocket subprotocol the page speaks.
pub const WS_PROTOCOL: &str = "cua-console";
/// The prefix of the subprotocol entry that carries the token.
pub const WS_TOKEN_PREFIX: &str = "cua-token.";

/// What the capabilities page lists: the catalog, injected by the binary.
pub trait CatalogView: Send + Sync {
    fn capabilities(&self) -> Vec<CapabilityRow>;
}

/// One capability in the catalog, with its integrity and approval state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapabilityRow {
    pub reference: String,
    pub title: String,
    pub description: String,
    /// `sealed`, `draft`, `tampered`.
    pub integrity: String,
    pub content_hash: Option<String>,
    /// `approved`, `unapproved`, `revoked`, …
    pub approval: String,
    pub max_risk: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
}

/// An empty catalog.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCatalog;

impl CatalogView for NoCatalog {
    fn capabilities(&self) -> Vec<CapabilityRow> {
        Vec::new()
    }
}

/// How the console serves.
pub struct ConsoleConfig {
    pub bind: SocketAddr,
    /// Binding to a non-loopback address is refused without this.
    pub allow_remote: bool,
    pub access: Access,
    pub catalog: Arc<dyn CatalogView>,
    /// Read-only settings shown on the settings page (the policy and the model, never a key).
    pub settings: Value,
    /// Every response built from evidence passes through it (the policy's rules).
    pub redactor: Redactor,
}

/// A console that is serving.
pub struct RunningConsole {
    pub address: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
    ticker: JoinHandle<()>,
}

impl RunningConsole {
    /// The console's base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Stops serving.
    pub async fn shutdown(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        self.ticker.abort();
        let _ = (&mut self.task).await;
    }

    /// Waits until the server stops.
    pub async fn wait(mut self) {
        let _ = (&mut self.task).await;
        self.ticker.abort();
    }
}

struct App {
    broker: Arc<Broker>,
    access: Access,
    catalog: Arc<dyn CatalogView>,
    settings: Value,
    redactor: Redactor,
    /// The `Host` values and origins accepted.
    names: ServedNames,
}

type Shared = Arc<App>;

/// Starts serving. A non-loopback bind without `allow_remote` is refused.
pub async fn serve(
    broker: Arc<Broker>,
    config: ConsoleConfig,
) -> Result<RunningConsole, ConsoleError> {
    cua_access::check_bind(config.bind, config.allow_remote, "the console")?;
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .map_err(|source| ConsoleError::Bind {
            address: config.bind.to_string(),
            source,
        })?;
    let address = listener.local_addr().map_err(|source| ConsoleError::Bind {
        address: config.bind.to_string(),
        source,
    })?;
    let app = Arc::new(App {
        broker: Arc::clone(&broker),
        access: config.access,
        catalog: config.catalog,
        settings: config.settings,
        redactor: config.redactor,
        names: ServedNames::new(address, config.allow_remote),
    });
    let api = Router::new()
        .route("/api/state", get(state))
        .route("/api/interventions", get(interventions))
        .route("/api/interventions/{id}", get(intervention))
        .route("/api/interventions/{id}/claim", post(claim))
        .route("/api/interventions/{id}/give-up", post(give_up))
        .route("/api/sessions/{id}/snapshot", get(snapshot))
        .route("/api/sessions/{id}/gesture", post(gesture))
        .route("/api/sessions/{id}/confirm", post(confirm))
        .route("/api/sessions/{id}/cancel", post(cancel))
        .route("/api/sessions/{id}/release", post(release))
        .route("/api/sessions/{id}/finish", post(finish))
        .route("/api/runs", get(runs))
        .route("/api/runs/{run}", get(run))
        .route("/api/runs/{run}/files/{*path}", get(run_file))
        .route("/api/runs/{run}/show", get(run_show))
        .route("/api/runs/{run}/show.html", get(run_show_page))
        .route("/api/capabilities", get(capabilities))
        .route("/api/settings", get(settings))
        .route("/ws/sessions/{id}", get(live))
        .layer(middleware::from_fn_with_state(Arc::clone(&app), guard));
    let router = Router::new()
        .route(
            "/",
            get(|| async { page_response("text/html; charset=utf-8", page::INDEX_HTML) }),
        )
        .route(
            "/app.js",
            get(|| async { page_response("text/javascript; charset=utf-8", page::APP_JS) }),
        )
        .route(
            "/app.css",
            get(|| async { page_response("text/css; charset=utf-8", page::APP_CSS) }),
        )
        .route(
            "/show.js",
            get(|| async { page_response("text/javascript; charset=utf-8", show::SHOW_JS) }),
        )
        .route(
            "/show.css",
            get(|| async { page_response("text/css; charset=utf-8", show::SHOW_CSS) }),
        )
        .merge(api)
        .fallback(|| async { problem(StatusCode::NOT_FOUND, "not_found", "no such page") })
        .layer(middleware::from_fn_with_state(
            Arc::clone(&app),
            host_and_headers,
        ))
        .with_state(Arc::clone(&app));
    let (shutdown, stop) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stop.await;
            })
            .await;
        if let Err(error) = served {
            tracing::error!(%error, "the console server stopped");
        }
    });
    let ticker = tokio::spawn(async move {
        let mut interval = tokio::time::interval(Duration::from_secs(1));
        loop {
            interval.tick().await;
            broker.sweep();
        }
    });
    Ok(RunningConsole {
        address,
        shutdown: Some(shutdown),
        task,
        ticker,
    })
}

/// The operator an authenticated request acts as.
#[derive(Debug, Clone)]
struct Operator(String);

/// Every response: the `Host` check, then the security headers.
async fn host_and_headers(State(app): State<Shared>, request: Request, next: Next) -> Response {
    if let Err(refusal) = app.names.check_host(request.headers()) {
        return refused(refusal);
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    );
    response
}

/// `/api` and `/ws`: cross-site checks, then the token.
async fn guard(State(app): State<Shared>, mut request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = match app.names.check_host(headers) {
        Ok(host) => host,
        Err(refusal) => return refused(refusal),
    };
    if let Some(site) = headers
        .get("sec-fetch-site")
        .and_then(|site| site.to_str().ok())
        && matches!(site, "cross-site" | "same-site")
    {
        return problem(
            StatusCode::FORBIDDEN,
            "cross_site",
            "cross-site requests are refused",
        );
    }
    let websocket = request.uri().path().starts_with("/ws/");
    let changes_state = request.method() != Method::GET && request.method() != Method::HEAD;
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|origin| origin.to_str().ok());
    match origin {
        Some(origin) if changes_state || websocket => {
            if let Err(refusal) = app.names.check_origin(origin, host) {
                return refused(refusal);
            }
        }
        None if websocket => {
            return problem(
                StatusCode::FORBIDDEN,
                Refusal::BadOrigin.code(),
                "a WebSocket must say its origin",
            );
        }
        _ => {}
    }
    let presented = cua_access::bearer_token(headers)
        .or_else(|| {
            headers
                .get("x-cua-token")
                .and_then(|value| value.to_str().ok())
        })
        .map(str::to_owned)
        .or_else(|| websocket.then(|| ws_token(headers)).flatten());
    let operator = match app.access.authenticate(presented.as_deref()) {
        Ok(operator) => operator.to_owned(),
        Err(refusal) => return refused(refusal),
    };
    request.extensions_mut().insert(Operator(operator));
    next.run(request).await
}

/// The token in a WebSocket's subprotocol list (`cua-token.<token>`).
fn ws_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .find_map(|entry| entry.strip_prefix(WS_TOKEN_PREFIX))
        .map(str::to_owned)
}

async fn state(State(app): State<Shared>, operator: axum::Extension<Operator>) -> Response {
    let sessions = app.broker.sessions();
    let pending = app
        .broker
        .interventions()
        .iter()
        .filter(|card| card.intervention.state.claimable() && card.live)
        .count();
    json_response(
        &app.redactor,
        &json!({
            "operator": operator.0 .0,
            "sessions": sessions,
            "pending": pending,
            "load_problems": app.broker.load_problems(),
        }),
    )
}

async fn interventions(State(app): State<Shared>) -> Response {
    json_response(&app.redactor, &app.broker.interventions())
}

async fn intervention(State(app): State<Shared>, UrlPath(id): UrlPath<String>) -> Response {
    match app.broker.intervention(&id) {
        Ok(card) => json_response(&app.redactor, &card),
        Err(error) => error_response(&error),
    }
}

#[derive(Debug, Deserialize)]
struct ClaimQuery {
    epoch: Option<u64>,
}

async fn claim(
    State(app): State<Shared>,
    operator: axum::Extension<Operator>,
    UrlPath(id): UrlPath<String>,
    Query(query): Query<ClaimQuery>,
) -> Response {
    match app.broker.claim(&id, &operator.0.0, query.epoch).await {
        Ok(answer) => json_response(&app.redactor, &answer),
        Err(error) => error_response(&error),
    }
}

async fn give_up(State(app): State<Shared>, UrlPath(id): UrlPath<String>) -> Response {
    match app.broker.give_up(&id) {
        Ok(()) => json_response(&app.redactor, &json!({ "given_up": id })),
        Err(error) => error_response(&error),
    }
}

async fn snapshot(State(app): State<Shared>, UrlPath(id): UrlPath<String>) -> Response {
    let session = match app.broker.session(&id) {
        Ok(session) => session,
        Err(error) => return error_response(&error),
    };
    match session.surface().peek().await {
        Ok(snapshot) => {
            let redacted = session.redactor().redact_snapshot(&snapshot);
            json_response(&app.redactor, &redacted)
        }
        Err(error) => error_response(&ConsoleError::Surface(error)),
    }
}

async fn gesture(
    State(app): State<Shared>,
    operator: axum::Extension<Operator>,
    UrlPath(id): UrlPath<String>,
    body: axum::body::Bytes,
) -> Response {
    let gesture: Gesture = match serde_json::from_slice(&body) {
        Ok(gesture) => gesture,
        Err(error) => {
            return error_response(&ConsoleError::BadRequest {
                reason: format!("not a gesture: {error}"),
            });
        }
    };
    match app.broker.gesture(&id, &operator.0.0, gesture).await {
        Ok(answer) => json_response(&app.redactor, &answer),
        Err(error) => error_response(&error),
    }
}

async fn confirm(
    State(app): State<Shared>,
    operator: axum::Extension<Operator>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    match app.broker.confirm(&id, &operator.0.0).await {
        Ok(answer) => json_response(&app.redactor, &answer),
        Err(error) => error_response(&error),
    }
}

async fn cancel(State(app): State<Shared>, UrlPath(id): UrlPath<String>) -> Response {
    match app.broker.cancel_confirmation(&id) {
        Ok(cancelled) => json_response(&app.redactor, &json!({ "cancelled": cancelled })),
        Err(error) => error_response(&error),
    }
}

async fn release(
    State(app): State<Shared>,
    operator: axum::Extension<Operator>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    match app.broker.release(&id, &operator.0.0).await {
        Ok(answer) => json_response(&app.redactor, &answer),
        Err(error) => error_response(&error),
    }
}

async fn finish(State(app): State<Shared>, UrlPath(id): UrlPath<String>) -> Response {
    match app.broker.finish_recording(&id) {
        Ok(summary) => json_response(
            &app.redactor,
            &json!({
                "run_id": summary.run_id,
                "steps": summary.steps,
                "outputs": summary.outputs,
                "compile": format!("cua compile {}", summary.trace.display()),
            }),
        ),
        Err(error) => error_response(&error),
    }
}

/// One run as the runs page lists it.
#[derive(Debug, Serialize)]
struct RunRow {
    run_id: String,
    kind: Option<String>,
    capability: Option<String>,
    status: Option<String>,
    started_at: Option<String>,
    events: usize,
    interventions: usize,
}

async fn runs(State(app): State<Shared>) -> Response {
    let root = app.broker.evidence_root().to_path_buf();
    let rows = tokio::task::spawn_blocking(move || list_runs(&root))
        .await
        .unwrap_or_default();
    json_response(&app.redactor, &rows)
}

async fn run(State(app): State<Shared>, UrlPath(run_id): UrlPath<String>) -> Response {
    if cua_evidence::RunId::parse(&run_id).is_err() {
        return error_response(&ConsoleError::BadRequest {
            reason: "not a run id".to_owned(),
        });
    }
    let root = app.broker.evidence_root().to_path_buf();
    let detail = tokio::task::spawn_blocking(move || run_detail(&root, &run_id)).await;
    match detail {
        Ok(Ok(detail)) => json_response(&app.redactor, &detail),
        Ok(Err(error)) => error_response(&error),
        Err(_) => problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "reading the run failed",
        ),
    }
}

/// The run as the viewer shows it: the document `show.js` renders.
async fn run_show(State(app): State<Shared>, UrlPath(run_id): UrlPath<String>) -> Response {
    match shown(&app, run_id).await {
        Ok(document) => json_response(&app.redactor, &document),
        Err(response) => response,
    }
}

/// The run as one self-contained page, as `cua show` writes it, to keep or send.
async fn run_show_page(State(app): State<Shared>, UrlPath(run_id): UrlPath<String>) -> Response {
    let page = match shown(&app, run_id).await {
        Ok(document) => show::page_of(&app.redactor.redact_json(&document)),
        Err(response) => return response,
    };
    let mut response = Response::new(Body::from(page));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response.headers_mut().insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment"),
    );
    response
}

/// The viewer's document of a run of this console's evidence root, or the error's response.
async fn shown(app: &Shared, run_id: String) -> Result<Value, Response> {
    let root = app.broker.evidence_root().to_path_buf();
    let redactor = app.redactor.clone();
    let shown = tokio::task::spawn_blocking(move || {
        let run = open_run(&root, &run_id)?;
        show::document(run.path(), &|bytes| redactor.contains_secret(bytes))
    })
    .await;
    match shown {
        Ok(Ok(document)) => Ok(document),
        Ok(Err(error)) => Err(error_response(&error)),
        Err(_) => Err(problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "reading the run failed",
        )),
    }
}

async fn run_file(
    State(app): State<Shared>,
    UrlPath((run_id, path)): UrlPath<(String, String)>,
) -> Response {
    let root = app.broker.evidence_root().to_path_buf();
    let read = tokio::task::spawn_blocking(move || read_evidence_file(&root, &run_id, &path)).await;
    let (bytes, kind) = match read {
        Ok(Ok(file)) => (file.bytes, file.content_type),
        Ok(Err(error)) => return error_response(&error),
        Err(_) => {
            return problem(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "reading the file failed",
            );
        }
    };
    let body = if kind.starts_with("image/") || kind == "application/octet-stream" {
        if app.redactor.contains_secret(&bytes) {
            return problem(
                StatusCode::FORBIDDEN,
                "withheld",
                "the file carries a registered secret",
            );
        }
        bytes
    } else {
        // Evidence is redacted when written; text passes the policy's rules once more.
        app.redactor
            .redact_text(&String::from_utf8_lossy(&bytes))
            .into_bytes()
    };
    let mut response = Response::new(Body::from(body));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    if kind == "application/octet-stream" {
        response.headers_mut().insert(
            header::CONTENT_DISPOSITION,
            HeaderValue::from_static("attachment"),
        );
    }
    response
}

async fn capabilities(State(app): State<Shared>) -> Response {
    let catalog = Arc::clone(&app.catalog);
    let rows = tokio::task::spawn_blocking(move || catalog.capabilities())
        .await
        .unwrap_or_default();
    json_response(&app.redactor, &rows)
}

async fn settings(State(app): State<Shared>) -> Response {
    json_response(&app.redactor, &app.settings)
}

/// The live view: redacted frames out, gestures in.
async fn live(
    State(app): State<Shared>,
    operator: axum::Extension<Operator>,
    UrlPath(id): UrlPath<String>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let session = match app.broker.session(&id) {
        Ok(session) => session,
        Err(error) => return error_response(&error),
    };
    let operator = operator.0.0;
    upgrade
        .protocols([WS_PROTOCOL])
        .on_upgrade(move |socket| live_socket(app, session, operator, socket))
}

/// A message the live view sends: a gesture, answered in order.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum LiveRequest {
    Gesture { gesture: Gesture },
}

async fn live_socket(app: Shared, session: Arc<Session>, operator: String, socket: WebSocket) {
    let (mut sink, mut source) = socket.split();
    let (outgoing, mut queue) = mpsc::channel::<Message>(4);
    let writer = tokio::spawn(async move {
        while let Some(message) = queue.recv().await {
            if sink.send(message).await.is_err() {
                return;
            }
        }
    });
    let pump = tokio::spawn(pump_frames(Arc::clone(&session), outgoing.clone()));
    while let Some(Ok(message)) = source.next().await {
        let text = match message {
            Message::Text(text) => text,
            Message::Close(_) => break,
            _ => continue,
        };
        let reply = match serde_json::from_str::<LiveRequest>(text.as_str()) {
            Ok(LiveRequest::Gesture { gesture }) => {
                match app.broker.gesture(&session.id, &operator, gesture).await {
                    Ok(answer) => json!({ "type": "answer", "answer": answer }),
                    Err(error) => json!({
                        "type": "error",
                        "status": error.status(),
                        "code": error.code(),
                        "message": app.redactor.redact_text(&error.to_string()),
                    }),
                }
            }
            Err(error) => {
                json!({ "type": "error", "status": 400, "code": "bad_request", "message": format!("not a live-view message: {error}") })
            }
        };
        let reply = app.redactor.redact_json(&reply);
        if outgoing
            .send(Message::Text(reply.to_string().into()))
            .await
            .is_err()
        {
            break;
        }
    }
    pump.abort();
    drop(outgoing);
    let _ = writer.await;
}

/// Streams the session's frames: each one is painted over every region the redactor would
/// mask on the snapshots taken just before and just after it, and only then sent.
async fn pump_frames(session: Arc<Session>, outgoing: mpsc::Sender<Message>) {
    let mut stream = match session.surface().frames().await {
        Ok(stream) => stream,
        Err(error) => {
            let message = json!({ "type": "error", "status": 502, "code": "no_frames", "message": session.redactor().redact_text(&error.to_string()) });
            let _ = outgoing
                .send(Message::Text(message.to_string().into()))
                .await;
            return;
        }
    };
    let mut previous = match session.surface().peek().await {
        Ok(snapshot) => sensitive_regions(&snapshot, session.redactor()),
        Err(_) => Vec::new(),
    };
    while let Some(frame) = stream.next_frame().await {
        // A snapshot taken after the frame was painted holds everything the frame shows
        // (unless it was removed since, and then the previous snapshot held it).
        let Ok(after) = session.surface().peek().await else {
            continue;
        };
        let current = sensitive_regions(&after, session.redactor());
        let mut regions = previous.clone();
        regions.extend(current.iter().copied());
        previous = current;
        let Some(jpeg) = paint(&frame, &regions) else {
            continue;
        };
        let message = json!({
            "type": "frame",
            "jpeg": base64::engine::general_purpose::STANDARD.encode(&jpeg),
            "page_width": frame.page_width,
            "page_height": frame.page_height,
            "painted_regions": regions.len(),
        });
        if outgoing
            .send(Message::Text(message.to_string().into()))
            .await
            .is_err()
        {
            return;
        }
    }
}

/// Every run directory under the root, newest first.
fn list_runs(root: &Path) -> Vec<RunRow> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut rows: Vec<(std::time::SystemTime, RunRow)> = entries
        .flatten()
        .filter_map(|entry| {
            let run_id = entry.file_name().to_str()?.to_owned();
            // Only real run directories of ours with a real trace: nothing planted is listed.
            let run = open_run(root, &run_id).ok()?;
            if !run.has_file(cua_evidence::TRACE_FILE) {
                return None;
            }
            let modified = entry.metadata().and_then(|meta| meta.modified()).ok()?;
            let lines = cua_evidence::read_trace(&entry.path()).unwrap_or_default();
            let start = lines.first();
            let (kind, capability) = match start.map(|line| &line.event) {
                Some(cua_evidence::Event::RunStart(start)) => (
                    serde_json::to_value(start.kind)
                        .ok()
                        .and_then(|kind| kind.as_str().map(str::to_owned)),
                    start.capability.as_ref().map(ToString::to_string),
                ),
                _ => (None, None),
            };
            let status = lines.iter().rev().find_map(|line| match &line.event {
                cua_evidence::Event::RunEnd(end) => Some(end.status.as_str().to_owned()),
                _ => None,
            });
            let interventions = std::fs::read_dir(
                root.join(crate::intervention::INTERVENTIONS_DIR)
                    .join(&run_id),
            )
            .map(|dir| dir.count())
            .unwrap_or(0);
            Some((
                modified,
                RunRow {
                    run_id,
                    kind,
                    capability,
                    status: status.or_else(|| Some("running".to_owned())),
                    started_at: start.map(|line| line.at.to_string()),
                    events: lines.len(),
                    interventions,
                },
            ))
        })
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.run_id.cmp(&b.1.run_id)));
    rows.into_iter().map(|(_, row)| row).collect()
}

/// A run's files, its trace (one summary per event) and its record, if written.
fn run_detail(root: &Path, run_id: &str) -> Result<Value, ConsoleError> {
    let run = open_run(root, run_id)?;
    if !run.has_file(cua_evidence::TRACE_FILE) {
        return Err(ConsoleError::NotFound {
            what: "run",
            id: run_id.to_owned(),
        });
    }
    let dir = run.path().to_path_buf();
    let mut files = Vec::new();
    collect_files(&dir, &dir, &mut files);
    files.sort();
    let lines = cua_evidence::read_trace(&dir).map_err(ConsoleError::Evidence)?;
    let trace = show::trace_values(&lines);
    let record = run
        .read(
            cua_evidence::RUN_RECORD_FILE,
            cua_evidence::EVIDENCE_FILE_LIMIT,
        )
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
    let verified = cua_evidence::verify(&dir)
        .map(|report| report.is_intact())
        .unwrap_or(false);
    let interventions: Vec<Value> = crate::intervention::load_all(root)
        .0
        .into_iter()
        .filter(|intervention| intervention.run_id == run_id)
        .filter_map(|intervention| serde_json::to_value(intervention).ok())
        .collect();
    Ok(json!({
        "run_id": run_id,
        "files": files,
        "trace": trace,
        "record": record,
        "verified": verified,
        "interventions": interventions,
    }))
}

fn collect_files(root: &Path, dir: &Path, files: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            collect_files(root, &path, files);
        } else if kind.is_file()
            && let Ok(relative) = path.strip_prefix(root)
            && let Some(relative) = relative.to_str()
            && !relative.split('/').any(|part| part.starts_with('.'))
        {
            files.push(relative.to_owned());
        }
    }
}

fn page_response(kind: &'static str, body: &'static str) -> Response {
    let mut response = Response::new(Body::from(body));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    response
}

/// A JSON body passed through the console's redactor.
fn json_response<T: Serialize>(redactor: &Redactor, value: &T) -> Response {
    match serde_json::to_value(value) {
        Ok(value) => {
            let mut response = axum::Json(redactor.redact_json(&value)).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(_) => problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the answer did not serialize",
        ),
    }
}

fn error_response(error: &ConsoleError) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    problem(status, error.code(), &error.to_string())
}

fn refused(refusal: Refusal) -> Response {
    let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::FORBIDDEN);
    problem(status, refusal.code(), &refusal.to_string())
}

fn problem(status: StatusCode, code: &str, message: &str) -> Response {
    let body: BTreeMap<&str, Value> =
        BTreeMap::from([("error", json!({ "code": code, "message": message }))]);
    (status, axum::Json(body)).into_response()
}
