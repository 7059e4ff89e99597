//! The one CDP connection to the browser, loosely typed: JSON in, JSON out.
//!
//! Every message stays a `serde_json::Value` and only the fields needed are read, so a
//! Chromium newer than any generated protocol revision (a new enum variant, a new field) never
//! makes a message fail to parse: a dropped `Fetch.requestPaused` would leave a request
//! hanging, a dropped `Network.responseReceived` would silently lose a status. Commands to the
//! page, the allowlist guard and the page monitor all share it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_tungstenite::tokio::TokioAdapter;
use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::protocol::WebSocketConfig;
use async_tungstenite::{WebSocketReceiver, WebSocketSender};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// One event as Chromium sent it.
#[derive(Debug, Clone)]
pub(crate) struct RawEvent {
    pub(crate) method: String,
    pub(crate) session_id: Option<String>,
    pub(crate) params: Value,
}

/// Why a call on the raw connection failed.
#[derive(Debug, Clone)]
pub(crate) enum RawCallError {
    /// The connection is closed; the reason says why.
    Closed(String),
    /// No answer within the bound.
    Timeout(Duration),
    /// Chromium answered with a protocol error.
    Protocol(String),
}

impl std::fmt::Display for RawCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Closed(reason) => write!(f, "CDP connection closed: {reason}"),
            Self::Timeout(after) => write!(f, "no CDP answer within {after:?}"),
            Self::Protocol(message) => write!(f, "CDP error: {message}"),
        }
    }
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, RawCallError>>>>>;

/// The raw connection. Dropping it closes the socket and stops its reader task.
pub(crate) struct RawCdp {
    sink: tokio::sync::Mutex<WebSocketSender<TokioAdapter<TcpStream>>>,
    pending: Pending,
    next_id: AtomicU64,
    closed: watch::Receiver<Option<String>>,
    reader: JoinHandle<()>,
}

impl RawCdp {
    /// Connects to a DevTools WebSocket URL. Events arrive on the returned receiver in the
    /// order Chromium sent them.
    pub(crate) async fn connect(
        ws_url: &str,
        timeout: Duration,
    ) -> Result<(Self, mpsc::UnboundedReceiver<RawEvent>), String> {
        let config = WebSocketConfig::default()
            .max_message_size(None)
            .max_frame_size(None);
        let connect = async_tungstenite::tokio::connect_async_with_config(ws_url, Some(config));
        let (stream, _response) = tokio::time::timeout(timeout, connect)
            .await
            .map_err(|_| format!("no WebSocket handshake within {timeout:?}"))?
            .map_err(|error| error.to_string())?;
        // As on the bridge's side: a command is a header and a payload, never held for an ack.
        let _ = stream.get_ref().get_ref().set_nodelay(true);
        let (sink, source) = stream.split();
        let pending: Pending = Arc::default();
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (closed_tx, closed) = watch::channel(None);
        let reader = tokio::spawn(read_loop(
            source,
            Arc::clone(&pending),
            events_tx,
            closed_tx,
        ));
        let connection = Self {
            sink: tokio::sync::Mutex::new(sink),
            pending,
            next_id: AtomicU64::new(1),
            closed,
            reader,
        };
        Ok((connection, events_rx))
    }

    /// Sends one command (to the browser when `session_id` is `None`) and waits for its answer.
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Value,
        session_id: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, RawCallError> {
        if let Some(reason) = self.closed.borrow().clone() {
            return Err(RawCallError::Closed(reason));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session_id) = session_id {
            message["sessionId"] = Value::String(session_id.to_string());
        }
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        // Removed however the call ends, a caller that gave up on it (dropped it) included.
        let _forget = Forget {
            pending: &self.pending,
            id,
        };
        let send = async {
            let mut sink = self.sink.lock().await;
            sink.send(Message::text(message.to_string())).await
        };
        let outcome = tokio::time::timeout(timeout, async {
            send.await
                .map_err(|error| RawCallError::Closed(error.to_string()))?;
            rx.await
                .map_err(|_| RawCallError::Closed("the reader stopped".to_string()))?
        })
        .await;
        outcome.unwrap_or(Err(RawCallError::Timeout(timeout)))
    }

    /// Resolves when the connection closes, with the reason.
    pub(crate) fn closed(&self) -> watch::Receiver<Option<String>> {
        self.closed.clone()
    }
}

/// Forgets a call's answer slot when the call ends.
struct Forget<'a> {
    pending: &'a Pending,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(self.pending).remove(&self.id);
    }
}

impl Drop for RawCdp {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

async fn read_loop(
    mut source: WebSocketReceiver<TokioAdapter<TcpStream>>,
    pending: Pending,
    events: mpsc::UnboundedSender<RawEvent>,
    closed: watch::Sender<Option<String>>,
) {
    let reason = loop {
        let Some(message) = source.next().await else {
            break "the WebSocket ended".to_string();
        };
        let text = match message {
            Ok(Message::Text(text)) => text,
            Ok(Message::Close(_)) => break "Chromium closed the WebSocket".to_string(),
            Ok(_) => continue,
            Err(error) => break format!("WebSocket error: {error}"),
        };
        let Ok(mut value) = serde_json::from_str::<Value>(text.as_str()) else {
            continue;
        };
        if let Some(id) = value.get("id").and_then(Value::as_u64) {
            let Some(tx) = lock(&pending).remove(&id) else {
                continue;
            };
            let result = match value.get_mut("error") {
                Some(error) => Err(RawCallError::Protocol(
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown")
                        .to_string(),
                )),
                None => Ok(value
                    .get_mut("result")
                    .map(Value::take)
                    .unwrap_or(Value::Null)),
            };
            let _ = tx.send(result);
        } else if let Some(method) = value.get("method").and_then(Value::as_str) {
            let event = RawEvent {
                method: method.to_string(),
                session_id: value
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                params: value
                    .get_mut("params")
                    .map(Value::take)
                    .unwrap_or(Value::Null),
            };
            if events.send(event).is_err() {
                // Nobody listens any more; keep answering calls.
            }
        }
    };
    let _ = closed.send(Some(reason.clone()));
    for (_, tx) in lock(&pending).drain() {
        let _ = tx.send(Err(RawCallError::Closed(reason.clone())));
    }
}

/// Locks a mutex, recovering the data if a holder panicked (the data are plain maps).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
