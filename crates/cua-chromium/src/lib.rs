//! `SurfaceDriver` over Debian Chromium through the Chrome DevTools Protocol.
//!
//! [`ChromiumSurface::launch`] starts Debian's Chromium headless shell (or, where it is not
//! installed, `/usr/lib/chromium/chromium` headless) with a fresh
//! profile (or [`ChromiumSurface::attach`] joins a running browser), opens one page, and
//! installs the navigation allowlist inside the browser: `Fetch` interception on the browser
//! target pauses every request of every frame, popup, redirect hop, subresource and WebSocket
//! handshake, and an off-list one is failed before it is fetched.
//!
//! Commands and events share one loosely typed connection (`cdp.rs`): raw JSON both ways, so
//! no event or answer from a newer Chromium fails to parse, and the allowlist guard and the
//! page monitor see every message. A launched browser's own first page is the one driven.
//!
//! Behaviour worth knowing:
//! - The guard checks every paused request with `Allowlist::check`, so only allowlisted http(s)
//!   URLs are fetched; `file:`, `ftp:` and any other scheme that reaches `Fetch` is refused.
//!   `about:blank`, `data:`, `blob:` and Chromium's own error pages are built inside the
//!   browser without a network fetch, so they never reach the guard and need no exception; a
//!   top-level `navigate` to anything but an allowlisted http(s) URL is refused before the page
//!   is touched. A blocked document load is aborted (the frame stays on its page); a blocked
//!   subresource fails as blocked by client.
//! - JavaScript dialogs are answered at once: alerts and leave-page prompts accepted, confirm
//!   and prompt declined. The receipt of the action that raised them says so.
//! - The page is a desktop one: the viewport is emulated at the configured size with no touch
//!   and no mobile metrics, as a person at a desk sees the application.
//! - Popups are not driven: the surface stays on its own page and takes the foreground back
//!   before the next action.
//! - A launched browser is this process's alone: it opens no debugging port and speaks CDP
//!   over a pipe only this process holds, offered to its own clients through a loopback
//!   WebSocket whose path is a 256-bit secret (`pipe.rs`). Its profile starts with autofill,
//!   autocomplete and password saving off, so nothing typed is kept on disk.
//! - A launched browser never outlives the process that launched it. Dropping or closing the
//!   surface kills Chromium's process group and removes its profile; when that process ends
//!   without running any Rust code (any signal, SIGKILL included, an abort, a crash), a
//!   watchdog child started with the browser does the same within a second. Profiles left by
//!   a power cut are swept at the next launch. Profiles are private (mode 0700) and named
//!   `cua-chromium-<owner pid>-<owner start time>-…` in the temp dir. Linux only: it relies
//!   on `/proc` and `/bin/sh`.
//!
//! Architecture invariant: the only crate that speaks CDP. It knows nothing of capabilities,
//! targeting or evidence; it acts only on an `Authorized<BrowserAction>`, on the backend node its
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
mod pipe;
mod process;
mod profile;
mod screencast;
mod screenshot;
mod session;
mod surface;
mod tree;
mod watch;
mod watchdog;

pub use config::{CHROMIUM_ENV, ChromiumConfig, DEFAULT_EXECUTABLE, HEADLESS_SHELL, Viewport};
pub use error::LaunchError;
pub use screencast::{Screencast, ScreencastFrame, ScreencastOptions};
pub use surface::ChromiumSurface;
