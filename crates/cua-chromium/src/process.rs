//! The Chromium child process: flags, start-up, liveness, and a shutdown that always reaps.
//!
//! Chromium runs in its own process group, so one group kill stops all of it: its zygotes,
//! renderers, GPU and utility processes stay in the group; only the crashpad handlers start
//! their own session, and they exit as soon as the browser is gone. Who kills it depends on
//! how the owner ends: `Drop` and `close` do it themselves; for everything that runs no Rust
//! code (a signal, an abort, a crash) the watchdog started before Chromium does it
//! (`watchdog.rs`). Each launch first sweeps the profile directories left by owners that are
//! gone (`profile.rs`).

use std::collections::VecDeque;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};
use tokio::task::JoinHandle;

use crate::cdp::lock;
use crate::config::{ChromiumConfig, DEFAULT_EXECUTABLE, HEADLESS_SHELL};
use crate::error::LaunchError;
use crate::pipe::{Bridge, pipes};
use crate::profile::{ProfileDir, sweep_stale};
use crate::watchdog::Watchdog;

/// How many of Chromium's last stderr lines are kept for error messages.
const STDERR_TAIL_LINES: usize = 40;

/// The flags every launch uses. As root on this machine Chromium needs `--no-sandbox`; the
/// background-networking group keeps it from dialling Google on a closed network; site
/// isolation is off so that every frame lives in the page's renderer and its accessibility
/// tree is reachable from the page session.
const BASE_FLAGS: &[&str] = &[
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-site-isolation-trials",
    "--disable-features=IsolateOrigins,site-per-process,Translate,MediaRouter,\
OptimizationHints,HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,BackForwardCache,\
AutofillServerCommunication,InterestFeedContentSuggestions,DialMediaRouteProvider",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-breakpad",
    "--disable-client-side-phishing-detection",
    "--disable-domain-reliability",
    "--disable-hang-monitor",
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-ipc-flooding-protection",
    "--disable-smooth-scrolling",
    "--disable-search-engine-choice-screen",
    "--deny-permission-prompts",
    "--metrics-recording-only",
    "--password-store=basic",
    "--force-color-profile=srgb",
    "--font-render-hinting=none",
    "--mute-audio",
    "--disable-crash-reporter",
    // CDP on fds 3 and 4 and no TCP port: see `pipe.rs`.
    "--remote-debugging-pipe",
];

/// A launched Chromium. Dropping it terminates the whole process group, reaps the browser
/// process and removes the profile directory, then releases the watchdog.
pub(crate) struct BrowserProcess {
    child: Arc<Mutex<Child>>,
    pid: u32,
    profile: ProfileDir,
    watchdog: Watchdog,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    drain: JoinHandle<()>,
    bridge: Bridge,
}

impl BrowserProcess {
    /// Starts Chromium and returns it with the bridge's WebSocket URL (secret path included).
    pub(crate) async fn launch(config: &ChromiumConfig) -> Result<(Self, String), LaunchError> {
        check_executable(&config.executable)?;
        if !config.headless && config.executable == std::path::Path::new(HEADLESS_SHELL) {
            return Err(LaunchError::Setup {
                reason: format!(
                    "a headed browser was asked for, but {HEADLESS_SHELL} has no window: name \
                     {DEFAULT_EXECUTABLE} as the executable (CUA_CHROMIUM)"
                ),
            });
        }
        // The sweep reads the temp dir and /proc and may wait on a removal: keep it off the
        // async workers. A failed sweep only leaves stale directories for the next launch.
        let _ = tokio::task::spawn_blocking(sweep_stale).await;
        let profile = ProfileDir::create()?;
        // The watchdog starts before Chromium, so no moment exists in which the owner could
        // end and leave a browser nobody will kill.
        let watchdog = match Watchdog::spawn(&profile.path) {
            Ok(watchdog) => watchdog,
            Err(error) => {
                profile.remove();
                return Err(error);
            }
        };
        let (child_ends, parent_ends) = match pipes() {
            Ok(ends) => ends,
            Err(source) => {
                profile.remove();
                return Err(LaunchError::Setup {
                    reason: format!("creating the DevTools pipes: {source}"),
                });
            }
        };
        let bridge = match Bridge::start(parent_ends).await {
            Ok(bridge) => bridge,
            Err(source) => {
                profile.remove();
                return Err(LaunchError::Setup {
                    reason: format!("serving the DevTools pipe: {source}"),
                });
            }
        };
        let mut command = Command::new(&config.executable);
        if let Err(source) = child_ends.install(&mut command) {
            profile.remove();
            return Err(LaunchError::Setup {
                reason: format!("passing the DevTools pipes: {source}"),
            });
        }
        command
            .args(BASE_FLAGS)
            .arg(format!("--user-data-dir={}", profile.path.display()))
            .arg(format!(
                "--window-size={},{}",
                config.viewport.width, config.viewport.height
            ));
        if config.headless {
            command.arg("--headless=new");
        }
        command
            .args(&config.extra_args)
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // On a spawn error the watchdog is dropped on return, which releases it with nothing
        // left to do but the profile removal already done here.
        let mut child = command.spawn().map_err(|source| {
            profile.remove();
            match source.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                    LaunchError::ChromiumMissing {
                        path: config.executable.clone(),
                        reason: source.to_string(),
                    }
                }
                _ => LaunchError::Spawn {
                    path: config.executable.clone(),
                    source,
                },
            }
        })?;
        // The command holds Chromium's ends: closed here, Chromium's exit ends the pipe.
        drop(command);
        let pid = child.id().unwrap_or_default();
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let Some(stderr) = child.stderr.take() else {
            return Err(LaunchError::Setup {
                reason: "chromium's stderr was not piped".into(),
            });
        };
        let lines = BufReader::new(stderr).lines();
        let mut process = Self {
            child: Arc::new(Mutex::new(child)),
            pid,
            profile,
            watchdog,
            stderr_tail: Arc::clone(&stderr_tail),
            drain: tokio::spawn(drain(lines, stderr_tail)),
            bridge,
        };
        // On an error the process is dropped, which terminates the browser.
        process.watchdog.arm(pid).await?;
        // Chromium reads the pipe once it is up: its first answer says it is ready.
        let ready = tokio::time::timeout(
            config.launch_timeout,
            process
                .bridge
                .call("Browser.getVersion", serde_json::json!({})),
        )
        .await;
        match ready {
            Ok(Ok(_)) => {
                let ws_url = process.bridge.endpoint().to_owned();
                Ok((process, ws_url))
            }
            Ok(Err(error)) => {
                // The stderr drain may still hold Chromium's last words.
                tokio::time::sleep(Duration::from_millis(50)).await;
                process.terminate();
                let status = lock(&process.child)
                    .try_wait()
                    .ok()
                    .flatten()
                    .map_or_else(|| "no exit status".to_string(), |status| status.to_string());
                Err(LaunchError::Exited {
                    status: format!("{status} ({error})"),
                    stderr_tail: process.stderr_tail(),
                })
            }
            Err(_) => {
                process.terminate();
                Err(LaunchError::Timeout {
                    after: config.launch_timeout,
                    stderr_tail: process.stderr_tail(),
                })
            }
        }
    }

    /// The browser process id.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The profile directory passed as `--user-data-dir`.
    pub(crate) fn profile_dir(&self) -> &Path {
        &self.profile.path
    }

    /// The exit status, if the browser process has exited (reaping it).
    pub(crate) fn exited(&self) -> Option<String> {
        lock(&self.child)
            .try_wait()
            .ok()
            .flatten()
            .map(|status| status.to_string())
    }

    /// Chromium's last stderr lines, joined.
    pub(crate) fn stderr_tail(&self) -> String {
        lock(&self.stderr_tail)
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// Waits (asynchronously) up to `bound` for the browser to exit by itself, then kills
    /// what is left. Used after a graceful `Browser.close`.
    pub(crate) async fn wait_or_kill(&self, bound: Duration) {
        let deadline = Instant::now() + bound;
        while Instant::now() < deadline {
            if self.exited().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.terminate();
    }

    /// Terminates the process group and reaps the browser. Synchronous and bounded: SIGTERM,
    /// up to 2 s for a clean exit (Chromium then reaps its own children), SIGKILL to the
    /// whole group, then up to 2 s more for the reap.
    pub(crate) fn terminate(&self) {
        if self.exited().is_some() {
            self.kill_group();
            return;
        }
        if let Some(pid) = self.rustix_pid() {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        if !self.poll_exit(Duration::from_secs(2)) {
            self.kill_group();
            let _ = lock(&self.child).start_kill();
            self.poll_exit(Duration::from_secs(2));
        } else {
            self.kill_group();
        }
    }

    fn kill_group(&self) {
        if let Some(pid) = self.rustix_pid() {
            // The group may already be empty; that is the expected case after a clean exit.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }

    fn poll_exit(&self, bound: Duration) -> bool {
        let deadline = Instant::now() + bound;
        loop {
            if self.exited().is_some() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn rustix_pid(&self) -> Option<rustix::process::Pid> {
        rustix::process::Pid::from_raw(i32::try_from(self.pid).ok()?)
    }
}

impl Drop for BrowserProcess {
    fn drop(&mut self) {
        self.drain.abort();
        self.terminate();
        self.profile.remove();
        // Released last, so that the watchdog finds nothing left to kill or remove; it only
        // has work here if a helper process outlived the group kill.
        self.watchdog.release();
    }
}

fn check_executable(path: &Path) -> Result<(), LaunchError> {
    let missing = |reason: &str| LaunchError::ChromiumMissing {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let metadata = std::fs::metadata(path).map_err(|error| missing(&error.to_string()))?;
    if !metadata.is_file() {
        return Err(missing("not a file"));
    }
    if metadata.permissions().mode() & 0o111 == 0 {
        return Err(missing("not executable"));
    }
    Ok(())
}

async fn drain(
    mut lines: tokio::io::Lines<BufReader<ChildStderr>>,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    while let Ok(Some(line)) = lines.next_line().await {
        push_tail(&tail, line);
    }
}

fn push_tail(tail: &Mutex<VecDeque<String>>, line: String) {
    let mut tail = lock(tail);
    if tail.len() == STDERR_TAIL_LINES {
        tail.pop_front();
    }
    tail.push_back(line);
}
