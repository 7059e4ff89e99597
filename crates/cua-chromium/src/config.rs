//! `ChromiumConfig`: how to start (or attach to) the browser, explicitly, with no hidden
//! defaults beyond the ones documented here.

use std::path::PathBuf;
use std::time::Duration;

use cua_policy::Allowlist;

/// The environment variable [`ChromiumConfig::from_env`] reads for the executable path.
pub const CHROMIUM_ENV: &str = "CUA_CHROMIUM";

/// Debian's Chromium binary, launched directly rather than through the `/usr/bin` wrapper
/// script so that the process we spawn is the browser we kill.
pub const DEFAULT_EXECUTABLE: &str = "/usr/lib/chromium/chromium";

/// Debian's Chromium headless shell (`chromium-headless-shell`): the same engine and protocol
/// without the browser's windowing and UI, so a headless page starts in half the time and
/// renders on less CPU. The headless default when it is installed.
pub const HEADLESS_SHELL: &str = "/usr/lib/chromium/chromium-headless-shell";

/// The viewport size in CSS pixels (device scale factor 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewport {
    pub width: u32,
    pub height: u32,
}

impl Default for Viewport {
    fn default() -> Self {
        Self {
            width: 1280,
            height: 800,
        }
    }
}

/// Everything the driver needs to start or attach to a browser.
#[derive(Debug, Clone)]
pub struct ChromiumConfig {
    /// The Chromium executable (launch only).
    pub executable: PathBuf,
    /// Run without a window (`--headless=new`). Launch only. The headless shell has no window
    /// at all: a headed run names [`DEFAULT_EXECUTABLE`].
    pub headless: bool,
    pub viewport: Viewport,
    /// Where any request may go. Enforced inside the browser for every frame, popup, redirect
    /// and subresource, and checked again before a `navigate` action.
    pub allowlist: Allowlist,
    /// The bound on every single CDP call.
    pub cdp_timeout: Duration,
    /// The bound on Chromium announcing its DevTools endpoint.
    pub launch_timeout: Duration,
    /// The bound on the loads an action starts (after it, the receipt is returned anyway).
    pub navigation_timeout: Duration,
    /// How long an action is watched for a navigation it may start asynchronously (typing and
    /// scrolling are watched for at most 15 ms).
    pub navigation_grace: Duration,
    /// Extra command-line flags appended after the driver's own (launch only).
    pub extra_args: Vec<String>,
}

impl ChromiumConfig {
    /// A configuration with the documented defaults: Debian's Chromium headless shell when it is
    /// installed (else Debian's Chromium), headless, 1280×800, 10 s per CDP call, 20 s to start,
    /// 15 s for loads an action starts.
    pub fn new(allowlist: Allowlist) -> Self {
        Self::with_default(allowlist, default_executable(|path| path.is_file()))
    }

    fn with_default(allowlist: Allowlist, executable: &str) -> Self {
        Self {
            executable: PathBuf::from(executable),
            headless: true,
            viewport: Viewport::default(),
            allowlist,
            cdp_timeout: Duration::from_secs(10),
            launch_timeout: Duration::from_secs(20),
            navigation_timeout: Duration::from_secs(15),
            navigation_grace: Duration::from_millis(60),
            extra_args: Vec::new(),
        }
    }

    /// [`ChromiumConfig::new`], with the executable taken from `CUA_CHROMIUM` when it is set
    /// and not empty. The only place the driver reads the environment.
    pub fn from_env(allowlist: Allowlist) -> Self {
        let default = default_executable(|path| path.is_file());
        Self::from_lookup(allowlist, default, |name| std::env::var_os(name))
    }

    fn from_lookup(
        allowlist: Allowlist,
        default: &str,
        lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Self {
        let mut config = Self::with_default(allowlist, default);
        if let Some(path) = lookup(CHROMIUM_ENV).filter(|path| !path.is_empty()) {
            config.executable = PathBuf::from(path);
        }
        config
    }
}

/// The headless shell when `installed` says it is there, else Chromium.
fn default_executable(installed: impl Fn(&std::path::Path) -> bool) -> &'static str {
    if installed(std::path::Path::new(HEADLESS_SHELL)) {
        HEADLESS_SHELL
    } else {
        DEFAULT_EXECUTABLE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_overrides_only_a_non_empty_executable() {
        let allowlist = || Allowlist::new(&[], &[]).unwrap();
        let set = ChromiumConfig::from_lookup(allowlist(), HEADLESS_SHELL, |name| {
            (name == CHROMIUM_ENV).then(|| "/opt/chromium/chrome".into())
        });
        assert_eq!(set.executable, PathBuf::from("/opt/chromium/chrome"));
        let empty = ChromiumConfig::from_lookup(allowlist(), HEADLESS_SHELL, |_| Some("".into()));
        assert_eq!(empty.executable, PathBuf::from(HEADLESS_SHELL));
        let unset = ChromiumConfig::from_lookup(allowlist(), DEFAULT_EXECUTABLE, |_| None);
        assert_eq!(unset.executable, PathBuf::from(DEFAULT_EXECUTABLE));
        assert!(unset.headless);
        assert_eq!(
            unset.viewport,
            Viewport {
                width: 1280,
                height: 800
            }
        );
    }

    #[test]
    fn the_headless_shell_is_the_default_only_where_it_is_installed() {
        assert_eq!(default_executable(|_| true), HEADLESS_SHELL);
        assert_eq!(default_executable(|_| false), DEFAULT_EXECUTABLE);
        let asked = std::cell::RefCell::new(Vec::new());
        default_executable(|path| {
            asked.borrow_mut().push(path.to_path_buf());
            false
        });
        assert_eq!(asked.into_inner(), [PathBuf::from(HEADLESS_SHELL)]);
    }
}
