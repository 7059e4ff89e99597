//! The live surface the console drives, as an object-safe port the binary implements over its
//! concrete driver (Chromium): observe, dispatch an authorized action, peek without disturbing
//! the driver's node handles, and a continuous frame stream.

use std::future::Future;
use std::pin::Pin;

use cua_policy::{Authorized, BrowserAction};
use cua_snapshot::UiSnapshot;
use cua_surface::{BlockedRequest, DispatchReceipt, SurfaceError};

/// A boxed future, for the object-safe port.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One frame of the live view as the surface painted it, before redaction.
#[derive(Clone, PartialEq)]
pub struct LiveFrame {
    /// JPEG bytes.
    pub jpeg: Vec<u8>,
    /// The viewport the frame shows, in CSS pixels: snapshot bounds and page coordinates are
    /// in this space.
    pub page_width: f64,
    pub page_height: f64,
}

impl std::fmt::Debug for LiveFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveFrame")
            .field("jpeg", &self.jpeg.len())
            .field("page_width", &self.page_width)
            .field("page_height", &self.page_height)
            .finish()
    }
}

/// A stream of live frames; `None` when it ended.
pub trait FrameStream: Send {
    /// The next frame, waiting for the page to paint one.
    fn next_frame(&mut self) -> BoxFuture<'_, Option<LiveFrame>>;
}

/// The live surface of one session.
pub trait LiveSurface: Send + Sync {
    /// Observes the surface (the driver keeps the handles it acts on later).
    fn observe(&self) -> BoxFuture<'_, Result<UiSnapshot, SurfaceError>>;

    /// Observes without replacing the driver's node handles (for the live view's redaction,
    /// which may run while automation holds a resolved target).
    fn peek(&self) -> BoxFuture<'_, Result<UiSnapshot, SurfaceError>>;

    /// Performs one authorized action.
    fn dispatch(
        &self,
        action: Authorized<BrowserAction>,
    ) -> BoxFuture<'_, Result<DispatchReceipt, SurfaceError>>;

    /// Starts a continuous frame stream (a CDP screencast for Chromium).
    fn frames(&self) -> BoxFuture<'_, Result<Box<dyn FrameStream>, SurfaceError>>;

    /// Requests the surface refused since the last call.
    fn take_blocked_requests(&self) -> Vec<BlockedRequest>;
}
