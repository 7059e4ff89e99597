//! The command path to the page: every CDP call bounded by a timeout and raced against the
//! browser's death, so a crashed or killed browser surfaces as `Unavailable`, never a hang.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use chromiumoxide::error::CdpError;
use chromiumoxide::types::{Command, Method, MethodId};
use cua_surface::SurfaceError;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;

use crate::cdp::{RawCallError, RawCdp};

/// A chromiumoxide command carrying raw JSON both ways, so that a field or enum variant newer
/// than chromiumoxide's protocol revision never breaks a call.
#[derive(Debug, Clone)]
pub(crate) struct RawCommand {
    method: &'static str,
    params: Value,
}

impl Serialize for RawCommand {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.params.serialize(serializer)
    }
}

impl Method for RawCommand {
    fn identifier(&self) -> MethodId {
        Cow::Borrowed(self.method)
    }
}

impl Command for RawCommand {
    type Response = Value;
}

/// Whether the browser is still there. Set once, by whichever watcher notices first (the
/// chromiumoxide handler ending, the monitor socket closing, the process exiting, the page
/// crashing).
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

/// The page and the monitor session, with the bound every call runs under.
pub(crate) struct Session {
    pub(crate) page: chromiumoxide::Page,
    pub(crate) monitor: Arc<RawCdp>,
    pub(crate) monitor_session: String,
    pub(crate) timeout: Duration,
    pub(crate) liveness: Liveness,
}

impl Session {
    /// One call on the page through chromiumoxide.
    pub(crate) async fn call(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<Value, CallError> {
        self.check_alive()?;
        let call = self.page.execute(RawCommand { method, params });
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(self.timeout, call) => outcome,
            reason = self.liveness.wait_dead() => return Err(unavailable(reason)),
        };
        match outcome {
            Ok(Ok(response)) => Ok(response.result),
            Ok(Err(CdpError::Chrome(error))) => Err(CallError::Protocol(error.message)),
            Ok(Err(CdpError::Timeout)) | Err(_) => Err(self.timed_out(method)),
            Ok(Err(other)) => {
                let reason = self
                    .dead_after_a_moment()
                    .await
                    .unwrap_or_else(|| other.to_string());
                Err(unavailable(reason))
            }
        }
    }

    /// One call on the monitor's page session (navigation commands and dialog answers, which
    /// chromiumoxide's own navigation tracking would otherwise queue).
    pub(crate) async fn monitor_call(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Value, CallError> {
        self.check_alive()?;
        let call = self
            .monitor
            .call(method, params, Some(&self.monitor_session), self.timeout);
        let outcome = tokio::select! {
            outcome = call => outcome,
            reason = self.liveness.wait_dead() => return Err(unavailable(reason)),
        };
        match outcome {
            Ok(value) => Ok(value),
            Err(RawCallError::Protocol(message)) => Err(CallError::Protocol(message)),
            Err(RawCallError::Timeout(_)) => Err(self.timed_out(method)),
            Err(RawCallError::Closed(reason)) => {
                self.liveness
                    .mark_dead(format!("the monitor connection closed: {reason}"));
                Err(unavailable(self.liveness.dead().unwrap_or(reason)))
            }
        }
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

    /// A failed channel usually means the browser just died; give the watchers a moment to
    /// say why.
    async fn dead_after_a_moment(&self) -> Option<String> {
        tokio::time::timeout(Duration::from_millis(300), self.liveness.wait_dead())
            .await
            .ok()
    }
}

fn unavailable(reason: String) -> CallError {
    CallError::Surface(SurfaceError::Unavailable { reason })
}
