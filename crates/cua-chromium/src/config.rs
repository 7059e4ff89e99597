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
    /// Run without a window (`--headless=new`). Launch only.
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
    /// A configuration with the documented defaults: Debian's Chromium, headless, 1280×800,
    /// 10 s per CDP call, 20 s to start, 15 s for loads an action starts.
    pub fn new(allowlist: Allowlist) -> Self {
        Self {
            executable: PathBuf::from(DEFAULT_EXECUTABLE),
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
        Self::from_lookup(allowlist, |name| std::env::var_os(name))
    }

    fn from_lookup(
        allowlist: Allowlist,
        lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Self {
        let mut config = Self::new(allowlist);
        if let Some(path) = lookup(CHROMIUM_ENV).filter(|path| !path.is_empty()) {
            config.executable = PathBuf::from(path);
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_overrides_only_a_non_empty_executable() {
        let allowlist = || Allowlist::new(&[], &[]).unwrap();
        let set = ChromiumConfig::from_lookup(allowlist(), |name| {
            (name == CHROMIUM_ENV).then(|| "/opt/chromium/chrome".into())
        });
        assert_eq!(set.executable, PathBuf::from("/opt/chromium/chrome"));
        let empty = ChromiumConfig::from_lookup(allowlist(), |_| Some("".into()));
        assert_eq!(empty.executable, PathBuf::from(DEFAULT_EXECUTABLE));
        let unset = ChromiumConfig::from_lookup(allowlist(), |_| None);
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
}
