//! `ChromiumSurface`: launching or attaching, the `SurfaceDriver` implementation, the waits,
//! and shutdown.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use cua_policy::{Authorized, BrowserAction, RawInput, ScrollDirection};
use cua_snapshot::{NodeId, UiSnapshot};
use cua_surface::{
    BlockedRequest, DispatchReceipt, Screenshot, ScreenshotRequest, SurfaceDriver, SurfaceError,
    WaitCondition, WaitOutcome,
};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::actions::{self, OBJECT_GROUP, Target};
use crate::cdp::{RawCdp, lock};
use crate::config::ChromiumConfig;
use crate::endpoint;
use crate::error::LaunchError;
use crate::monitor::{self, Mark, PageState, Shared};
use crate::observe::{self, Observation, Reuse};
use crate::process::BrowserProcess;
use crate::screenshot;
use crate::session::{Liveness, Session};
use crate::tree::NodeHandle;
use crate::watch::{self, Stillness, Watch, Watchers};

/// How often waits for a navigation or a condition observe.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Where a change watcher cannot be read, or a page keeps changing what the tree does not show
/// (a script animating a style), the screen is stable when two equal observations are this far
/// apart (plus the time one takes) with no load under way, so a page that changes every few
/// tens of milliseconds is never caught twice in the same state.
const STABLE_INTERVAL: Duration = Duration::from_millis(40);

/// The screen is stable once every frame's change watcher has seen nothing for this long and no
/// load is under way: longer
/// than [`STABLE_INTERVAL`], so a page changing on a timer that often is not caught between two
/// ticks.
const QUIET: Duration = Duration::from_millis(50);

/// The same judged inside the page: every frame quiet for [`QUIET`] since its last change and
/// since the wait began (or, for a page that updates itself on a timer, twice
/// the widest gap between its own recent changes), at least this many animation frames
/// rendered since its last change, and nothing animating. The page says so the moment it is
/// true, while the driver observes it, so no look is spent on a page still settling.
const STILL: Stillness = Stillness {
    frames: 2,
    quiet: QUIET,
};

/// How long one wait inside the page may last before the driver looks again (a load may have
/// begun, the deadline may be near).
const STILL_CAP: Duration = Duration::from_millis(60);

/// How much longer than [`STILL_CAP`] the page's answer may take before the look goes on
/// without it.
const STILL_PATIENCE: Duration = Duration::from_millis(100);

/// Loads an action started are over once two looks this far apart find nothing loading (a frame
/// whose load starts the next one is still caught; the wait after the action judges the page).
const LOAD_QUIET_POLL: Duration = Duration::from_millis(10);

/// How often the grace after an action looks for a load the action started.
const GRACE_POLL: Duration = Duration::from_millis(5);

/// The watch for a load started by typing or scrolling: input events fire while the action's
/// own CDP call runs, so whatever they start has begun by the time it returns.
const QUIET_ACTION_GRACE: Duration = Duration::from_millis(15);

/// How many observations are remembered for `WaitCondition::Navigation`.
const DOCUMENTS_REMEMBERED: usize = 64;

/// A Chromium page driven over CDP, with the allowlist enforced inside the browser.
///
/// Dropping it stops its tasks and, for a launched browser, terminates and reaps the browser
/// and removes its profile directory. [`ChromiumSurface::close`] does the same gracefully.
pub struct ChromiumSurface {
    config: ChromiumConfig,
    session: Session,
    shared: Shared,
    /// The backend handle of every node of the last observation.
    handles: Mutex<HashMap<NodeId, NodeHandle>>,
    /// `(snapshot digest, documents signature)` of recent observations.
    documents_seen: Mutex<VecDeque<(String, String)>>,
    /// Every document's change watcher, and the last observation kept while nothing changes.
    watchers: Watchers,
    reuse: Reuse,
    endpoint: String,
    tasks: Vec<JoinHandle<()>>,
    process: Option<Arc<BrowserProcess>>,
}

impl ChromiumSurface {
    /// Launches Chromium with a fresh profile and opens one page on `about:blank`.
    ///
    /// A missing executable fails at once with [`LaunchError::ChromiumMissing`].
    pub async fn launch(config: ChromiumConfig) -> Result<Self, LaunchError> {
        let (process, ws_url) = BrowserProcess::launch(&config).await?;
        let process = Arc::new(process);
        // On any setup error the process is dropped here, which terminates and reaps it.
        Self::connect(ws_url, config, Some(process)).await
    }

    /// Attaches to a running browser at a `ws://…/devtools/browser/…` or `http://host:port`
    /// endpoint and opens a new page in it. The allowlist guard is installed for the whole
    /// browser for as long as this surface lives; the browser itself is left running.
    pub async fn attach(endpoint: &str, config: ChromiumConfig) -> Result<Self, LaunchError> {
        let ws_url = endpoint::resolve(endpoint, config.cdp_timeout).await?;
        Self::connect(ws_url, config, None).await
    }

    /// The browser's process id, when this surface launched it.
    pub fn browser_pid(&self) -> Option<u32> {
        self.process.as_ref().map(|process| process.pid())
    }

    /// The launched browser's profile directory (removed when the surface goes).
    pub fn profile_dir(&self) -> Option<&Path> {
        self.process.as_ref().map(|process| process.profile_dir())
    }

    /// The DevTools WebSocket endpoint, to attach another client to the same browser.
    pub fn devtools_endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Closes gracefully: a launched browser is asked to quit (and killed if it does not
    /// within 3 s), then reaped; on an attached browser only this surface's page is closed.
    pub async fn close(self) {
        let bound = Duration::from_secs(2);
        if let Some(process) = &self.process {
            let _ = self
                .session
                .connection
                .call("Browser.close", json!({}), None, bound)
                .await;
            process.wait_or_kill(Duration::from_secs(3)).await;
        } else {
            let target = self.session.target_id.clone();
            let _ = self
                .session
                .connection
                .call(
                    "Target.closeTarget",
                    json!({ "targetId": target }),
                    None,
                    bound,
                )
                .await;
        }
        drop(self);
    }

    async fn connect(
        ws_url: String,
        config: ChromiumConfig,
        process: Option<Arc<BrowserProcess>>,
    ) -> Result<Self, LaunchError> {
        let timeout = config.cdp_timeout;
        let unreachable = |reason: String| LaunchError::Unreachable {
            endpoint: ws_url.clone(),
            reason,
        };
        let setup = |what: &str, reason: String| LaunchError::Setup {
            reason: format!("{what}: {reason}"),
        };
        let liveness = Liveness::new();
        let shared = Shared {
            state: Arc::new(Mutex::new(PageState::default())),
            blocked: Arc::new(Mutex::new(Vec::new())),
            liveness: liveness.clone(),
        };
        let mut tasks = Vec::new();

        // The guard first: nothing is fetched before the allowlist is in place.
        let (connection, events) = RawCdp::connect(&ws_url, timeout)
            .await
            .map_err(unreachable)?;
        let connection = Arc::new(connection);
        tasks.push(tokio::spawn(monitor::run(
            events,
            Arc::clone(&connection),
            config.allowlist.clone(),
            shared.clone(),
            timeout,
        )));
        let patterns = json!({ "patterns": [{ "urlPattern": "*", "requestStage": "Request" }] });
        let installed = connection
            .call("Fetch.enable", patterns, None, timeout)
            .await;
        if let Err(error) = installed {
            abort_all(&tasks);
            return Err(setup("installing the allowlist guard", error.to_string()));
        }

        if let Some(process) = &process {
            tasks.push(tokio::spawn(watch_process(
                Arc::downgrade(process),
                liveness.clone(),
            )));
        }
        // A launched browser opened its one page on about:blank: that page is driven. An
        // attached browser gets a page of its own.
        let page = match &process {
            Some(_) => initial_page(&connection, timeout).await,
            None => new_page(&connection, timeout).await,
        };
        let target_id = match page {
            Ok(target_id) => target_id,
            Err(reason) => {
                abort_all(&tasks);
                return Err(setup("opening a page", reason));
            }
        };
        lock(&shared.state).main_frame = Some(target_id.clone());
        let attach = json!({ "targetId": target_id, "flatten": true });
        let session_id = match connection
            .call("Target.attachToTarget", attach, None, timeout)
            .await
        {
            Ok(answer) => answer["sessionId"].as_str().unwrap_or_default().to_string(),
            Err(error) => {
                abort_all(&tasks);
                return Err(setup("attaching to the page", error.to_string()));
            }
        };
        let viewport = json!({
            "width": config.viewport.width,
            "height": config.viewport.height,
            "deviceScaleFactor": 1,
            "mobile": false,
        });
        let page_setup = [
            ("Page.enable", json!({})),
            ("Network.enable", json!({})),
            ("Inspector.enable", json!({})),
            ("Emulation.setDeviceMetricsOverride", viewport),
        ];
        for (method, params) in page_setup {
            if let Err(error) = connection
                .call(method, params, Some(&session_id), timeout)
                .await
            {
                abort_all(&tasks);
                return Err(setup(method, error.to_string()));
            }
        }
        // Popups are noticed (and this page brought back to the front) through target events;
        // focus is emulated so that the page behaves as the focused window whatever happens.
        let discover = json!({ "discover": true });
        let _ = connection
            .call("Target.setDiscoverTargets", discover, None, timeout)
            .await;
        let focus = json!({ "enabled": true });
        let _ = connection
            .call(
                "Emulation.setFocusEmulationEnabled",
                focus,
                Some(&session_id),
                timeout,
            )
            .await;
        let surface = Self {
            session: Session {
                connection,
                target_id,
                session_id,
                timeout,
                liveness,
            },
            shared,
            handles: Mutex::new(HashMap::new()),
            documents_seen: Mutex::new(VecDeque::new()),
            watchers: Watchers::default(),
            reuse: Reuse::default(),
            endpoint: ws_url,
            tasks,
            process,
            config,
        };
        // Every document from now on starts with its change watcher, so its quiet time counts
        // from its own last change rather than from the first look at it.
        if let Err(error) = watch::install_on_new_documents(&surface.session).await {
            return Err(setup(
                "installing the change watcher",
                error.into_surface("installing").to_string(),
            ));
        }
        Ok(surface)
    }

    /// The command path to the page (for the screencast module).
    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// One observation, reused while nothing changed (see `observe::observe`); the node
    /// handles the driver acts on are left as they were.
    pub(crate) async fn observation(&self) -> Result<Observation, SurfaceError> {
        observe::observe(
            &self.session,
            &self.shared.state,
            &self.watchers,
            &self.reuse,
            false,
        )
        .await
    }

    /// Observes with nothing reused: every frame's tree and the DOM fetched again. What
    /// [`SurfaceDriver::observe`] returns must always equal this; tests and the benchmark
    /// compare the two. The node handles the driver acts on are left as they were.
    pub async fn observe_afresh(&self) -> Result<UiSnapshot, SurfaceError> {
        observe::observe(
            &self.session,
            &self.shared.state,
            &self.watchers,
            &self.reuse,
            true,
        )
        .await
        .map(|observation| observation.snapshot)
    }

    /// How many observations this surface fetched, and how many it reused because no frame's
    /// change watcher saw anything change.
    pub fn observation_counts(&self) -> (u64, u64) {
        self.reuse.counts()
    }

    /// Observes, keeping the node handles (see [`Recorded`] for what comes with the snapshot).
    async fn observe_recorded(&self) -> Result<Recorded, SurfaceError> {
        let Observation {
            snapshot,
            handles,
            documents,
            watch,
            steady,
        } = self.observation().await?;
        let settled = watch.iter().flatten().all(|frame| frame.settled);
        let quiet = if !steady {
            Some(Duration::ZERO)
        } else if settled {
            watch::quiet(&watch)
        } else {
            // An animation or transition moves the page with no event to count: only two
            // equal observations say it is still.
            None
        };
        *lock(&self.handles) = handles;
        let mut seen = lock(&self.documents_seen);
        if seen.len() == DOCUMENTS_REMEMBERED {
            seen.pop_front();
        }
        seen.push_back((snapshot.digest(), documents.clone()));
        Ok(Recorded {
            snapshot,
            documents,
            quiet,
            watch,
            steady,
        })
    }

    /// Every frame's watch once it is [`STILL`] for a wait that began at `started` (or `cap`
    /// passed), with the documents it was read in; `None` when the page did not
    /// answer in time (a timer the page throttles, a document frozen while it is left).
    async fn read_still(&self, started: Instant, cap: Duration) -> Option<(String, Watch)> {
        let read = async {
            let frames = observe::frames(&self.session).await.ok()?;
            let watch = self
                .watchers
                .read_still(&self.session, &frames, STILL, started.elapsed(), cap)
                .await;
            Some((observe::documents_signature(&frames), watch))
        };
        tokio::time::timeout(cap + STILL_PATIENCE, read)
            .await
            .ok()
            .flatten()
    }

    fn handle(&self, id: &NodeId) -> Result<NodeHandle, SurfaceError> {
        lock(&self.handles)
            .get(id)
            .cloned()
            .ok_or_else(|| SurfaceError::NodeGone {
                node_id: id.to_string(),
            })
    }

    /// Brings this page back in front after a popup took the foreground.
    async fn reclaim_foreground(&self) -> Result<(), SurfaceError> {
        let lost = std::mem::take(&mut lock(&self.shared.state).foreground_lost);
        if lost {
            self.session
                .call("Page.bringToFront", json!({}))
                .await
                .map_err(|error| error.into_surface("bringing the page to the front"))?;
        }
        Ok(())
    }

    async fn perform(
        &self,
        action: &Authorized<BrowserAction>,
        mark: Mark,
    ) -> Result<String, SurfaceError> {
        self.reclaim_foreground().await?;
        let resolved = action
            .target()
            .map(|target| (target.node_id.clone(), self.handle(&target.node_id)));
        let target_handle = match &resolved {
            Some((id, Ok(handle))) => Some((id, handle)),
            Some((_, Err(error))) if action.action().needs_target() => {
                return Err(clone_error(error));
            }
            _ => None,
        };
        let target = target_handle.map(|(id, handle)| Target { id, handle });
        if let Some(target) = &target {
            target.check_live(&self.session).await?;
        }
        let needs = |what: &str| SurfaceError::ActionFailed {
            reason: format!("{what} needs a resolved target"),
        };
        let session = &self.session;
        let viewport = self.config.viewport;
        // The name the policy judged: a control revealed by focus must still carry it.
        let judged = action.target().map(|resolved| resolved.name.as_str());
        match action.action() {
            BrowserAction::Click => {
                actions::click(
                    session,
                    target.as_ref().ok_or_else(|| needs("click"))?,
                    viewport,
                    judged,
                )
                .await
            }
            BrowserAction::ClickAcceptingConfirm { confirm } => {
                let target = target.as_ref().ok_or_else(|| needs("click"))?;
                lock(&self.shared.state).expect_confirm(confirm);
                actions::click(session, target, viewport, judged).await
            }
            BrowserAction::Type { text, clear_first } => {
                let target = target.as_ref().ok_or_else(|| needs("type"))?;
                actions::type_text(session, target, text, *clear_first).await
            }
            BrowserAction::Select { value } => {
                actions::select(
                    session,
                    target.as_ref().ok_or_else(|| needs("select"))?,
                    value,
                )
                .await
            }
            BrowserAction::PressKey { key } => {
                actions::press_key(session, target.as_ref(), key).await
            }
            BrowserAction::Navigate { url } => self.navigate(url, mark).await,
            BrowserAction::Reload => {
                session
                    .call("Page.reload", json!({}))
                    .await
                    .map_err(|error| error.into_surface("reloading"))?;
                Ok("reloaded".to_string())
            }
            BrowserAction::Scroll { direction, amount } => {
                let down = match direction {
                    ScrollDirection::Up => Some(false),
                    ScrollDirection::Down => Some(true),
                    ScrollDirection::IntoView => None,
                };
                actions::scroll(session, target.as_ref(), down, *amount, viewport).await
            }
            BrowserAction::RawInput(RawInput::MouseClick { x, y }) => {
                actions::mouse_click(session, *x, *y).await?;
                Ok(format!("clicked at ({x:.0}, {y:.0})"))
            }
            BrowserAction::PointClick { x, y } => {
                actions::mouse_click(session, *x, *y).await?;
                Ok(format!("clicked at ({x:.1}, {y:.1}) in the viewport"))
            }
            BrowserAction::RawInput(RawInput::Text { text }) => {
                actions::insert_text(session, text).await?;
                Ok(format!("typed {} characters", text.chars().count()))
            }
            BrowserAction::RawInput(RawInput::Key { key }) => {
                actions::press_key(session, None, key).await
            }
        }
    }

    /// Top-level navigation. The allowlist is checked before the page is touched; a redirect
    /// off the list is stopped by the guard, and the page stays where it was.
    async fn navigate(&self, url: &str, mark: Mark) -> Result<String, SurfaceError> {
        if let Err(blocked) = self.config.allowlist.check(url) {
            lock(&self.shared.blocked).push(BlockedRequest {
                url: blocked.url.clone(),
                reason: blocked.reason.clone(),
                resource_type: "Document".to_string(),
            });
            return Err(SurfaceError::NavigationBlocked {
                url: blocked.url,
                reason: blocked.reason,
            });
        }
        let answer = self
            .session
            .call("Page.navigate", json!({ "url": url }))
            .await
            .map_err(|error| error.into_surface("navigating"))?;
        // A redirect the guard blocked aborts the navigation, so Page.navigate reports an
        // error; a navigation that committed was not redirected, whatever the page it loaded
        // then tried (a meta refresh, a script) and the guard blocked in turn.
        let failed = answer["errorText"]
            .as_str()
            .is_some_and(|text| !text.is_empty());
        let blocked = failed
            .then(|| {
                lock(&self.shared.state)
                    .blocked_document_since(mark)
                    .map(|blocked| format!("redirected to {blocked}"))
            })
            .flatten();
        if let Some(reason) = blocked {
            return Err(SurfaceError::NavigationBlocked {
                url: url.to_string(),
                reason,
            });
        }
        match answer["errorText"].as_str().filter(|text| !text.is_empty()) {
            None => Ok("navigated".to_string()),
            Some(error) if error.contains("ERR_ABORTED") => Ok(format!(
                "the navigation ended without a new document ({error})"
            )),
            Some(error) => Err(SurfaceError::Unavailable {
                reason: format!("{url} is unreachable: {error}"),
            }),
        }
    }

    /// Waits for loads the action started, bounded by the navigation timeout.
    async fn settle(&self, mark: Mark, grace: Duration) -> (bool, Option<u16>) {
        // The grace ends early once a frame is loading (or a document committed): from then
        // on the loads themselves are watched until they are quiet. A navigation only requested
        // is not enough, its load may not have begun.
        let grace_ends = Instant::now() + grace;
        loop {
            let loading = {
                let state = lock(&self.shared.state);
                state.is_loading() || state.navigated_since(mark)
            };
            let now = Instant::now();
            if loading || now >= grace_ends {
                break;
            }
            tokio::time::sleep(GRACE_POLL.min(grace_ends - now)).await;
        }
        let deadline = Instant::now() + self.config.navigation_timeout;
        let started = lock(&self.shared.state).active_since(mark);
        if started || lock(&self.shared.state).is_loading() {
            let mut quiet_polls = 0;
            while quiet_polls < 2
                && Instant::now() < deadline
                && self.session.liveness.dead().is_none()
            {
                tokio::time::sleep(LOAD_QUIET_POLL).await;
                if lock(&self.shared.state).is_loading() {
                    quiet_polls = 0;
                } else {
                    quiet_polls += 1;
                }
            }
        }
        let state = lock(&self.shared.state);
        (state.navigated_since(mark), state.worst_since(mark))
    }

    /// Observes until `done` says the condition is met (`None`) or the deadline passes; `done`
    /// names how long to wait before the next look. With `idle`, nothing is observed while a
    /// load is under way, since the condition needs a page that is not loading.
    async fn poll<F>(
        &self,
        timeout: Duration,
        idle: bool,
        still: Option<Instant>,
        mut done: F,
    ) -> Result<WaitOutcome, SurfaceError>
    where
        F: FnMut(&UiSnapshot, &str, &Calm) -> Option<Duration> + Send,
    {
        let deadline = Instant::now() + timeout;
        let mut last: Option<UiSnapshot> = None;
        loop {
            let loading = idle && lock(&self.shared.state).is_loading();
            let mut pause = POLL_INTERVAL;
            if !loading {
                // The page is watched settling while it is observed: the observation stands
                // if nothing changed from its start until the page said it was still.
                let (waited, observed) = match still {
                    Some(started) => {
                        let cap = STILL_CAP.min(deadline.saturating_duration_since(Instant::now()));
                        futures::join!(self.read_still(started, cap), self.observe_recorded())
                    }
                    None => (None, self.observe_recorded().await),
                };
                match observed {
                    Ok(recorded) => {
                        let loading = lock(&self.shared.state).is_loading();
                        let calm = Calm::judge(&recorded, waited.as_ref(), loading);
                        let snapshot = recorded.snapshot;
                        match done(&snapshot, &recorded.documents, &calm) {
                            None => return Ok(WaitOutcome::Met(Box::new(snapshot))),
                            Some(next) => pause = next,
                        }
                        last = Some(snapshot);
                    }
                    // A page between two documents may refuse an observation; the next poll
                    // sees the new one. Anything else (the browser gone, a CDP timeout) ends
                    // the wait.
                    Err(SurfaceError::ActionFailed { .. }) if Instant::now() < deadline => {}
                    Err(error) => return Err(error),
                }
            } else if let Some(reason) = self.session.liveness.dead() {
                return Err(SurfaceError::Unavailable { reason });
            }
            if Instant::now() + pause > deadline {
                if let Some(snapshot) = last {
                    return Ok(WaitOutcome::TimedOut(Box::new(snapshot)));
                }
                // Never saw the page at all: one last observation decides.
                let snapshot = self.observe_recorded().await?.snapshot;
                return Ok(WaitOutcome::TimedOut(Box::new(snapshot)));
            }
            tokio::time::sleep(pause).await;
        }
    }
}

/// One observation with what the waits judge it by.
struct Recorded {
    snapshot: UiSnapshot,
    documents: String,
    /// How long every frame has been quiet (see `observe_recorded`).
    quiet: Option<Duration>,
    /// The watchers as the observation left them.
    watch: Watch,
    /// Nothing changed while it was taken.
    steady: bool,
}

/// What a wait knows about the page beside its snapshot.
struct Calm {
    /// A load is under way.
    loading: bool,
    /// How long every frame has been quiet, `None` when unknown (see `observe_recorded`).
    quiet: Option<Duration>,
    /// The longest quiet a frame's own rhythm asks for (see `FrameWatch::needed_ms`).
    needed: Duration,
    /// Every frame was [`STILL`], and nothing changed from the observation's start until
    /// then.
    still: bool,
}

impl Calm {
    /// What a wait knows from one observation and, when the page was asked, what the page
    /// said once it was still (`waited`: the documents it was read in and every frame's watch).
    fn judge(recorded: &Recorded, waited: Option<&(String, Watch)>, loading: bool) -> Self {
        let (still, changed_after) = match waited {
            Some((documents, watch)) => {
                let same =
                    *documents == recorded.documents && watch::unchanged(watch, &recorded.watch);
                let settled = recorded.watch.iter().flatten().all(|frame| frame.settled);
                (
                    same && recorded.steady
                        && settled
                        && watch::still(watch, &recorded.watch, STILL),
                    // Every frame answered and one changed after the observation.
                    !same && watch.iter().all(Option::is_some),
                )
            }
            None => (false, false),
        };
        Self {
            loading,
            // The page said something changed after the observation: it is not quiet, whatever
            // the observation's own reads said.
            quiet: if changed_after {
                Some(Duration::ZERO)
            } else {
                recorded.quiet
            },
            needed: watch::needed(&recorded.watch),
            still,
        }
    }
}

impl SurfaceDriver for ChromiumSurface {
    async fn observe(&self) -> Result<UiSnapshot, SurfaceError> {
        self.observe_recorded()
            .await
            .map(|recorded| recorded.snapshot)
    }

    async fn dispatch(
        &self,
        action: Authorized<BrowserAction>,
    ) -> Result<DispatchReceipt, SurfaceError> {
        let started = Instant::now();
        // An action may change anything: the next observation is fetched afresh.
        self.reuse.forget();
        let mark = {
            let mut state = lock(&self.shared.state);
            // Nothing armed by an earlier action may answer for this one.
            state.disarm_confirm();
            state.mark()
        };
        let performed = self.perform(&action, mark).await;
        if performed.is_err() {
            // A click that failed never gets to say yes later.
            lock(&self.shared.state).disarm_confirm();
        }
        let _ = self
            .session
            .call(
                "Runtime.releaseObjectGroup",
                json!({ "objectGroup": OBJECT_GROUP }),
            )
            .await;
        let mut message = performed?;
        let grace = match action.action() {
            BrowserAction::Type { .. } | BrowserAction::Scroll { .. } => {
                QUIET_ACTION_GRACE.min(self.config.navigation_grace)
            }
            _ => self.config.navigation_grace,
        };
        let (navigated, http_status) = self.settle(mark, grace).await;
        let (dialogs, unanswered) = {
            let mut state = lock(&self.shared.state);
            (state.dialogs_since(mark), state.disarm_confirm())
        };
        if let BrowserAction::ClickAcceptingConfirm { confirm } = action.action()
            && unanswered
        {
            let seen = if dialogs.is_empty() {
                "none".to_owned()
            } else {
                dialogs.join(", ")
            };
            return Err(SurfaceError::ActionFailed {
                reason: format!(
                    "the click raised no confirm() reading {confirm:?} (dialogs answered: {seen}); \
                     nothing was answered OK"
                ),
            });
        }
        if !dialogs.is_empty() {
            message.push_str(&format!("; dialogs answered: {}", dialogs.join(", ")));
        }
        Ok(DispatchReceipt {
            ok: true,
            navigated,
            http_status,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            message,
        })
    }

    async fn wait(
        &self,
        condition: WaitCondition,
        timeout: Duration,
    ) -> Result<WaitOutcome, SurfaceError> {
        match condition {
            WaitCondition::SnapshotStable => {
                // Quiet counts from the wait's start at the latest, as a page quiet before it
                // (a debounced update still to come) was not watched settling.
                let started = Instant::now();
                let mut previous: Option<(Instant, UiSnapshot)> = None;
                self.poll(timeout, true, Some(started), move |snapshot, _, calm| {
                    if calm.loading {
                        previous = None;
                        return Some(POLL_INTERVAL);
                    }
                    if calm.still {
                        return None;
                    }
                    let quiet = calm.quiet.map(|quiet| quiet.min(started.elapsed()));
                    // A page that updates itself on a timer must be quiet, or seen alike,
                    // for longer than its own gaps.
                    let wanted = QUIET.max(calm.needed);
                    let seen_alike = previous.as_ref().is_some_and(|(at, before)| {
                        at.elapsed() >= STABLE_INTERVAL.max(calm.needed) && before == snapshot
                    });
                    if seen_alike || quiet.is_some_and(|quiet| quiet >= wanted) {
                        return None;
                    }
                    // A different screen starts the interval again (a page flipping back and
                    // forth is not stable); an equal one seen too soon keeps the earlier start.
                    if previous
                        .as_ref()
                        .is_none_or(|(_, before)| before != snapshot)
                    {
                        previous = Some((Instant::now(), snapshot.clone()));
                    }
                    Some(match quiet {
                        Some(quiet) => wanted.saturating_sub(quiet).max(GRACE_POLL),
                        None => STABLE_INTERVAL,
                    })
                })
                .await
            }
            WaitCondition::Navigation { before } => {
                let digest = before.digest();
                let before_documents = lock(&self.documents_seen)
                    .iter()
                    .rev()
                    .find(|(seen, _)| *seen == digest)
                    .map(|(_, documents)| documents.clone());
                self.poll(timeout, true, None, move |snapshot, documents, calm| {
                    let loading = calm.loading;
                    let changed = snapshot.url != before.url
                        || match &before_documents {
                            Some(before_documents) => before_documents != documents,
                            None => snapshot != before.as_ref(),
                        };
                    (!changed || loading).then_some(POLL_INTERVAL)
                })
                .await
            }
        }
    }

    async fn wait_until<P>(
        &self,
        predicate: P,
        timeout: Duration,
    ) -> Result<WaitOutcome, SurfaceError>
    where
        P: Fn(&UiSnapshot) -> bool + Send + Sync,
    {
        self.poll(timeout, false, None, |snapshot, _, _| {
            (!predicate(snapshot)).then_some(POLL_INTERVAL)
        })
        .await
    }

    async fn screenshot(&self, request: ScreenshotRequest) -> Result<Screenshot, SurfaceError> {
        self.reclaim_foreground().await?;
        screenshot::capture(&self.session, &request).await
    }

    fn take_blocked_requests(&self) -> Vec<BlockedRequest> {
        std::mem::take(&mut *lock(&self.shared.blocked))
    }
}

impl Drop for ChromiumSurface {
    fn drop(&mut self) {
        abort_all(&self.tasks);
    }
}

impl std::fmt::Debug for ChromiumSurface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChromiumSurface")
            .field("endpoint", &self.endpoint)
            .field("browser_pid", &self.browser_pid())
            .finish_non_exhaustive()
    }
}

fn abort_all(tasks: &[JoinHandle<()>]) {
    for task in tasks {
        task.abort();
    }
}

/// `SurfaceError` is not `Clone`; rebuild the variants a handle lookup produces.
fn clone_error(error: &SurfaceError) -> SurfaceError {
    match error {
        SurfaceError::NodeGone { node_id } => SurfaceError::NodeGone {
            node_id: node_id.clone(),
        },
        other => SurfaceError::ActionFailed {
            reason: other.to_string(),
        },
    }
}

/// Marks the surface dead as soon as the launched browser process exits.
async fn watch_process(process: Weak<BrowserProcess>, liveness: Liveness) {
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let Some(process) = process.upgrade() else {
            return;
        };
        if let Some(status) = process.exited() {
            liveness.mark_dead(format!("chromium exited ({status})"));
            return;
        }
    }
}

/// The page a launched browser opened at start-up (on `about:blank`), which is the one driven;
/// any other page is closed, so the browser holds only this surface's. A new page when it
/// opened none.
async fn initial_page(connection: &RawCdp, timeout: Duration) -> Result<String, String> {
    let targets = connection
        .call("Target.getTargets", json!({}), None, timeout)
        .await
        .map_err(|error| error.to_string())?;
    let mut pages = targets["targetInfos"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|target| target["type"] == "page")
        .filter_map(|target| target["targetId"].as_str());
    let Some(kept) = pages.next() else {
        return new_page(connection, timeout).await;
    };
    for other in pages {
        let close = json!({ "targetId": other });
        let _ = connection
            .call("Target.closeTarget", close, None, timeout)
            .await;
    }
    Ok(kept.to_owned())
}

/// Opens a new page on `about:blank`.
async fn new_page(connection: &RawCdp, timeout: Duration) -> Result<String, String> {
    let created = connection
        .call(
            "Target.createTarget",
            json!({ "url": "about:blank" }),
            None,
            timeout,
        )
        .await
        .map_err(|error| error.to_string())?;
    created["targetId"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "no target id in the answer".to_owned())
}
