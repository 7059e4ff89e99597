//! Where a tool call's surface comes from. The binary injects a factory (Debian's Chromium);
//! this crate names no concrete surface.

use std::future::Future;

use cua_policy::Allowlist;
use cua_surface::SurfaceDriver;

/// Opens a fresh surface for one tool call and closes it afterwards. Each call gets its own
/// (a fresh browser profile), so concurrent calls share no session.
pub trait SurfaceFactory: Send + Sync + 'static {
    /// The surface a run drives.
    type Surface: SurfaceDriver + 'static;

    /// Opens a surface that enforces `allowlist` itself (the policy's, narrowed by the
    /// capability).
    fn open(
        &self,
        allowlist: Allowlist,
    ) -> impl Future<Output = Result<Self::Surface, SurfaceUnavailable>> + Send;

    /// Closes a surface after its run.
    fn close(&self, surface: Self::Surface) -> impl Future<Output = ()> + Send;
}

/// Why no surface could be opened: a stable code (`chromium_missing`, `surface_unavailable`)
/// and a message that names the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurfaceUnavailable {
    pub code: String,
    pub message: String,
}
