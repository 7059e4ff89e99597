//! `SurfaceDriver` over Debian Chromium through the Chrome DevTools Protocol.
//!
//! [`ChromiumSurface::launch`] starts `/usr/lib/chromium/chromium` headless with a fresh
//! profile (or [`ChromiumSurface::attach`] joins a running browser), opens one page, and
//! installs the navigation allowlist inside the browser: `Fetch` interception on the browser
//! target pauses every request of every frame, popup, redirect hop and subresource, and an
//! off-list one is failed before it is fetched.
//!
//! Commands go through chromiumoxide (its `Browser`, `Handler` task and `Page`), with raw JSON
//! parameters and answers. Events go through a second, loosely typed connection
//! ([`cdp`]): the allowlist guard and the page monitor must not depend on every event fitting
//! a generated type.
//!
//! Architecture invariant: the only crate that speaks CDP. It knows nothing of capabilities,
//! targeting or evidence; it acts only on an `AuthorizedAction`, on the backend node its
//! target resolved to in the last observation.

mod actions;
mod cdp;
mod config;
mod dom;
mod endpoint;
mod error;
mod keys;
mod monitor;
mod observe;
mod process;
mod screencast;
mod screenshot;
mod session;
mod surface;
mod tree;

pub use config::{CHROMIUM_ENV, ChromiumConfig, DEFAULT_EXECUTABLE, Viewport};
pub use error::LaunchError;
pub use screencast::{Screencast, ScreencastFrame, ScreencastOptions};
pub use surface::ChromiumSurface;
