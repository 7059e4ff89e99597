//! The command path to the page: every CDP call bounded by a timeout and raced against the
//! browser's death, so a crashed or killed browser surfaces as `Unavailable`, never a hang.

use std::sync::Arc;
use std::time::Duration;

use cua_surface::SurfaceError;
use serde_json::Value;
use tokio::sync::watch;

use crate::cdp::{RawCallError, RawCdp};

/// Whether the browser is still there. Set once, by whichever watcher notices first (the
/// connection closing, the process exiting, the page crashing or being closed).
#[derive(Debug, Clone)]
pub(crate) struct Liveness {
    state: Arc<watch::Sender<Option<String>>>,
}

impl Liveness {
    pub(crate) fn new() -> Self {
        Self {
            state: Arc::new(watch::channel(None).0),
        }
    }

    /// Records the first reason the browser became unavailable.
    pub(crate) fn mark_dead(&self, reason: impl Into<String>) {
        let reason = reason.into();
        self.state.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(reason);
            true
        });
    }

    /// The reason, if the browser is gone.
    pub(crate) fn dead(&self) -> Option<String> {
        self.state.borrow().clone()
    }

    /// Resolves with the reason once the browser is gone.
    pub(crate) async fn wait_dead(&self) -> String {
        let mut receiver = self.state.subscribe();
        loop {
            if let Some(reason) = receiver.borrow_and_update().clone() {
                return reason;
            }
            if receiver.changed().await.is_err() {
                return "the driver is shutting down".to_string();
            }
        }
    }
}

/// Why a page call failed: Chromium refused it (the message decides what it means to the
/// caller), or the surface itself failed.
#[derive(Debug)]
pub(crate) enum CallError {
    Protocol(String),
    Surface(SurfaceError),
}

impl CallError {
    /// Maps a protocol error to `ActionFailed` with context, leaving surface errors alone.
    pub(crate) fn into_surface(self, context: &str) -> SurfaceError {
        match self {
            Self::Protocol(message) => SurfaceError::ActionFailed {
                reason: format!("{context}: {message}"),
            },
            Self::Surface(error) => error,
        }
    }

    /// Whether Chromium said the node is gone (detached, or from a previous document).
    pub(crate) fn is_node_gone(&self) -> bool {
        matches!(self, Self::Protocol(message) if
            message.contains("No node with given id")
            || message.contains("Could not find node")
            || message.contains("detached")
            || message.contains("No node found"))
    }
}

/// The page's CDP session on the one connection to the browser, with the bound every call
/// runs under.
pub(crate) struct Session {
    /// The one connection to the browser (the page monitor and the allowlist guard listen on it).
    pub(crate) connection: Arc<RawCdp>,
    /// The page's target id.
    pub(crate) target_id: String,
    /// The flattened session attached to the page.
    pub(crate) session_id: String,
    pub(crate) timeout: Duration,
    pub(crate) liveness: Liveness,
}

impl Session {
    /// One call on the page, bounded by the timeout and raced against the browser's death.
    pub(crate) async fn call(&self, method: &str, params: Value) -> Result<Value, CallError> {
        self.check_alive()?;
        let call = self
            .connection
            .call(method, params, Some(&self.session_id), self.timeout);
        let outcome = tokio::select! {
            outcome = call => outcome,
            reason = self.liveness.wait_dead() => return Err(unavailable(reason)),
        };
        match outcome {
            Ok(value) => Ok(value),
            // The page went away (closed, or its renderer gone) and this answer overtook the
            // event that says so.
            Err(RawCallError::Protocol(message)) if message.contains("Session with given id") => {
                Err(self
                    .gone(format!("the page's session ended: {message}"))
                    .await)
            }
            Err(RawCallError::Protocol(message)) => Err(CallError::Protocol(message)),
            Err(RawCallError::Timeout(_)) => Err(self.timed_out(method)),
            Err(RawCallError::Closed(reason)) => Err(self
                .gone(format!("the browser connection closed: {reason}"))
                .await),
        }
    }

    /// The page or the browser is gone: the first reason a watcher gives (the process exiting,
    /// the page crashing; they are given a moment to say it), else `fallback`. Every later call
    /// fails at once.
    async fn gone(&self, fallback: String) -> CallError {
        let reason = tokio::time::timeout(Duration::from_millis(300), self.liveness.wait_dead())
            .await
            .unwrap_or(fallback);
        self.liveness.mark_dead(reason);
        unavailable(self.liveness.dead().unwrap_or_default())
    }

    pub(crate) fn check_alive(&self) -> Result<(), CallError> {
        match self.liveness.dead() {
            Some(reason) => Err(unavailable(reason)),
            None => Ok(()),
        }
    }

    fn timed_out(&self, method: &str) -> CallError {
        match self.liveness.dead() {
            Some(reason) => unavailable(reason),
            None => CallError::Surface(SurfaceError::Timeout {
                what: format!("CDP call {method}"),
                after: self.timeout,
            }),
        }
    }
}

fn unavailable(reason: String) -> CallError {
    CallError::Surface(SurfaceError::Unavailable { reason })
}
