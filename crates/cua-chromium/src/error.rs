//! `LaunchError`: why a browser could not be started or attached to.
//!
//! Once a surface exists, its failures are `cua_surface::SurfaceError`s; this enum covers only
//! getting one.

use std::path::PathBuf;
use std::time::Duration;

/// Why [`crate::ChromiumSurface::launch`] or [`crate::ChromiumSurface::attach`] failed. The
/// CLI maps every variant to exit code 69 (surface unavailable).
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// No executable Chromium at the configured path.
    #[error(
        "chromium is not installed at {} ({reason}); install it with `apt-get install -y chromium`",
        path.display()
    )]
    ChromiumMissing { path: PathBuf, reason: String },
    /// The fresh profile directory could not be created.
    #[error("cannot create the chromium profile directory {}", path.display())]
    UserDataDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The process could not be spawned.
    #[error("cannot start chromium at {}", path.display())]
    Spawn {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Chromium exited before it announced its DevTools endpoint.
    #[error("chromium exited during start-up ({status}); last output: {stderr_tail}")]
    Exited { status: String, stderr_tail: String },
    /// Chromium did not announce its DevTools endpoint in time.
    #[error(
        "chromium did not announce its DevTools endpoint within {after:?}; last output: {stderr_tail}"
    )]
    Timeout {
        after: Duration,
        stderr_tail: String,
    },
    /// The CDP endpoint could not be reached or did not speak CDP.
    #[error("cannot reach the CDP endpoint {endpoint}: {reason}")]
    Unreachable { endpoint: String, reason: String },
    /// The browser answered, but setting up the page, the allowlist guard or the monitor failed.
    #[error("setting up the browser failed: {reason}")]
    Setup { reason: String },
}
