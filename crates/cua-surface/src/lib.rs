//! The driver port every surface implements: observe a [`UiSnapshot`], dispatch an
//! `Authorized<BrowserAction>`, wait for a condition, take a screenshot; and the two operator
//! ports beside it, [`ServiceClient`] (structured-api) and [`CommandRunner`] (native-cli), which
//! take `Authorized<HttpRequest>` and `Authorized<CommandInvocation>`.
//!
//! Architecture invariant: [`SurfaceDriver::dispatch`] takes the browser's witness by value and
//! nothing else, so nothing reaches a surface without the policy engine's decision, and no
//! request or command reaches the browser. Drivers know nothing of capabilities, evidence or
//! targeting.

use std::future::Future;
use std::time::Duration;

use cua_policy::{Authorized, BrowserAction, CommandInvocation, HttpRequest};
use cua_snapshot::{Bounds, UiSnapshot};
use serde::Serialize;

/// What a driver reports after acting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DispatchReceipt {
    /// The driver performed the action without an error. Not proof of its effect: a receipt
    /// never confirms a mutation.
    pub ok: bool,
    /// The action caused a top-level or frame navigation.
    pub navigated: bool,
    /// Worst HTTP status of documents loaded because of the action, if any loaded.
    pub http_status: Option<u16>,
    pub duration_ms: u64,
    /// A short note for evidence (never a typed value).
    pub message: String,
}

/// What a wait is waiting for.
#[derive(Debug, Clone)]
pub enum WaitCondition {
    /// Two consecutive observations are identical.
    SnapshotStable,
    /// The page navigated away from `before` (URL or document changed).
    Navigation { before: Box<UiSnapshot> },
}

/// How a wait ended. A timeout is a result, not an error.
#[derive(Debug, Clone)]
pub enum WaitOutcome {
    /// The condition held; the snapshot that satisfied it.
    Met(Box<UiSnapshot>),
    /// The condition did not hold within the bound; the last snapshot seen.
    TimedOut(Box<UiSnapshot>),
}

/// What to capture.
#[derive(Debug, Clone, Default)]
pub struct ScreenshotRequest {
    /// Regions painted over before the capture (sensitive values), in page CSS pixels.
    pub redact_regions: Vec<Bounds>,
}

/// A captured image with metadata read from its actual bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Screenshot {
    pub bytes: Vec<u8>,
    pub mime_type: String,
    pub width: u32,
    pub height: u32,
    /// The image's size in CSS pixels (the device pixel ratio divided out): the space input
    /// coordinates land in. It differs from `width` × `height` when a device pixel is not a CSS
    /// pixel.
    pub viewport_width: u32,
    pub viewport_height: u32,
    /// Number of regions painted over before capture.
    pub redacted_regions: usize,
}

impl std::fmt::Debug for Screenshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Screenshot")
            .field("bytes", &self.bytes.len())
            .field("mime_type", &self.mime_type)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("viewport_width", &self.viewport_width)
            .field("viewport_height", &self.viewport_height)
            .field("redacted_regions", &self.redacted_regions)
            .finish()
    }
}

/// A request the surface refused to fetch because its URL is off the allowlist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockedRequest {
    pub url: String,
    pub reason: String,
    /// The kind of resource (Document, Script, XHR…), as the surface names it.
    pub resource_type: String,
}

/// Why a driver call failed.
#[derive(Debug, thiserror::Error)]
pub enum SurfaceError {
    /// The surface is gone or unreachable (browser crashed, killed, never started).
    #[error("surface unavailable: {reason}")]
    Unavailable { reason: String },
    /// The resolved node no longer exists on the live surface.
    #[error("node `{node_id}` is not on the live surface any more")]
    NodeGone { node_id: String },
    /// The action could not be performed.
    #[error("action failed: {reason}")]
    ActionFailed { reason: String },
    /// A navigation was blocked by the in-surface allowlist.
    #[error("navigation to {url} was blocked: {reason}")]
    NavigationBlocked { url: String, reason: String },
    /// The surface did not answer within its bound.
    #[error("{what} did not finish within {after:?}")]
    Timeout { what: String, after: Duration },
}

impl SurfaceError {
    /// An authorized action handed to a port that does not perform it (`port`: "browser",
    /// "HTTP operator", "command operator"): refused before anything is sent.
    pub fn wrong_port(kind: &str, port: &str) -> Self {
        Self::ActionFailed {
            reason: format!("the {port} does not perform `{kind}`"),
        }
    }
}

/// The port. Static dispatch (`impl Future`) inside the engine; adapters box where needed.
pub trait SurfaceDriver: Send + Sync {
    /// Observes the surface: every frame's semantic tree, stitched in document order.
    fn observe(&self) -> impl Future<Output = Result<UiSnapshot, SurfaceError>> + Send;

    /// Performs one authorized action on the node it was resolved to.
    fn dispatch(
        &self,
        action: Authorized<BrowserAction>,
    ) -> impl Future<Output = Result<DispatchReceipt, SurfaceError>> + Send;

    /// Waits for a built-in condition, bounded by `timeout`.
    fn wait(
        &self,
        condition: WaitCondition,
        timeout: Duration,
    ) -> impl Future<Output = Result<WaitOutcome, SurfaceError>> + Send;

    /// Polls observations until `predicate` holds, bounded by `timeout`.
    fn wait_until<P>(
        &self,
        predicate: P,
        timeout: Duration,
    ) -> impl Future<Output = Result<WaitOutcome, SurfaceError>> + Send
    where
        P: Fn(&UiSnapshot) -> bool + Send + Sync;

    /// Captures the viewport, painting over the requested regions first.
    fn screenshot(
        &self,
        request: ScreenshotRequest,
    ) -> impl Future<Output = Result<Screenshot, SurfaceError>> + Send;

    /// Requests blocked by the allowlist since the last call, oldest first.
    fn take_blocked_requests(&self) -> Vec<BlockedRequest>;
}

/// A boxed future of an operator port, so the ports stay object-safe (the executor holds them
/// as `Arc<dyn …>` and a run without them is a run that refuses their steps).
pub type OperatorFuture<'a, T> =
    std::pin::Pin<Box<dyn Future<Output = Result<T, SurfaceError>> + Send + 'a>>;

/// What a service answered.
#[derive(Clone, PartialEq, Eq)]
pub struct ServiceResponse {
    pub status: u16,
    /// The response's `content-type`, if it sent one.
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    pub duration_ms: u64,
}

impl std::fmt::Debug for ServiceResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceResponse")
            .field("status", &self.status)
            .field("content_type", &self.content_type)
            .field("body", &self.body.len())
            .field("duration_ms", &self.duration_ms)
            .finish()
    }
}

/// The structured-api port: sends one authorized [`cua_policy::SurfaceAction::Http`] request,
/// to the URL the policy checked, and never follows a redirect (a redirect could leave the
/// allowlist).
pub trait ServiceClient: Send + Sync {
    fn send(&self, action: Authorized<HttpRequest>) -> OperatorFuture<'_, ServiceResponse>;
}

/// How a command ended.
#[derive(Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// `None` when a signal ended it (a timeout kills the child).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub duration_ms: u64,
}

impl std::fmt::Debug for CommandOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandOutput")
            .field("exit_code", &self.exit_code)
            .field("timed_out", &self.timed_out)
            .field("stdout", &self.stdout.len())
            .field("stderr", &self.stderr.len())
            .field("duration_ms", &self.duration_ms)
            .finish()
    }
}

/// The native-cli port: runs one authorized [`cua_policy::SurfaceAction::Command`], starting
/// exactly [`Authorized::program`] with the bound argv, never through a shell, and kills
/// the child when its timeout passes.
pub trait CommandRunner: Send + Sync {
    fn run(&self, action: Authorized<CommandInvocation>) -> OperatorFuture<'_, CommandOutput>;
}
