//! Where a replay's time and CPU go. A driver wrapper times every surface call (observe,
//! dispatch, settle, screenshot); a clock wrapper marks the moment of every trace line; the
//! time between two lines that no surface call covers is the engine's, named after the line it
//! led to (`resolve`, `authorize`, `classify`; every other line is evidence being written).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cua_evidence::{Clock, SystemClock, Timestamp, TraceLine};
use cua_policy::{Authorized, BrowserAction};
use cua_snapshot::UiSnapshot;
use cua_surface::{
    BlockedRequest, DispatchReceipt, Screenshot, ScreenshotRequest, SurfaceDriver, SurfaceError,
    WaitCondition, WaitOutcome,
};

use crate::procfs;

/// A moment, with the CPU used so far by this process and by the browser.
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    at: Instant,
    own_ns: u64,
    browser_ns: u64,
}

/// Takes marks; reads CPU only when asked to, since reading it costs time of its own.
pub(crate) struct Meter {
    browsers: Vec<u32>,
    cpu: bool,
}

impl Meter {
    /// `browsers`: the browser processes (their descendants are found once, now).
    pub(crate) fn new(browsers: &[u32], cpu: bool) -> Self {
        Self {
            browsers: if cpu {
                procfs::family(browsers)
            } else {
                Vec::new()
            },
            cpu,
        }
    }

    pub(crate) fn mark(&self) -> Mark {
        let (own_ns, browser_ns) = if self.cpu {
            (
                procfs::cpu_ns(&[std::process::id()]),
                procfs::cpu_ns(&self.browsers),
            )
        } else {
            (0, 0)
        };
        Mark {
            at: Instant::now(),
            own_ns,
            browser_ns,
        }
    }
}

/// The system clock, marking every moment the evidence bus asks for (once per trace line).
pub(crate) struct MarkingClock {
    meter: Arc<Meter>,
    pub(crate) marks: Mutex<Vec<Mark>>,
}

impl MarkingClock {
    pub(crate) fn new(meter: Arc<Meter>) -> Self {
        Self {
            meter,
            marks: Mutex::new(Vec::new()),
        }
    }
}

impl Clock for MarkingClock {
    fn now(&self) -> Timestamp {
        self.marks.lock().unwrap().push(self.meter.mark());
        SystemClock.now()
    }
}

struct Span {
    phase: &'static str,
    start: Mark,
    end: Mark,
}

/// A surface whose every call is timed.
pub(crate) struct Profiled<'a, D> {
    inner: &'a D,
    meter: Arc<Meter>,
    spans: Mutex<Vec<Span>>,
}

impl<'a, D: SurfaceDriver> Profiled<'a, D> {
    pub(crate) fn new(inner: &'a D, meter: Arc<Meter>) -> Self {
        Self {
            inner,
            meter,
            spans: Mutex::new(Vec::new()),
        }
    }

    async fn timed<T>(&self, phase: &'static str, call: impl Future<Output = T>) -> T {
        let start = self.meter.mark();
        let outcome = call.await;
        let end = self.meter.mark();
        self.spans.lock().unwrap().push(Span { phase, start, end });
        outcome
    }
}

impl<D: SurfaceDriver> SurfaceDriver for Profiled<'_, D> {
    async fn observe(&self) -> Result<UiSnapshot, SurfaceError> {
        self.timed("observe", self.inner.observe()).await
    }

    async fn dispatch(
        &self,
        action: Authorized<BrowserAction>,
    ) -> Result<DispatchReceipt, SurfaceError> {
        self.timed("dispatch", self.inner.dispatch(action)).await
    }

    async fn wait(
        &self,
        condition: WaitCondition,
        timeout: Duration,
    ) -> Result<WaitOutcome, SurfaceError> {
        self.timed("settle", self.inner.wait(condition, timeout))
            .await
    }

    async fn wait_until<P>(
        &self,
        predicate: P,
        timeout: Duration,
    ) -> Result<WaitOutcome, SurfaceError>
    where
        P: Fn(&UiSnapshot) -> bool + Send + Sync,
    {
        self.timed("settle", self.inner.wait_until(predicate, timeout))
            .await
    }

    async fn screenshot(&self, request: ScreenshotRequest) -> Result<Screenshot, SurfaceError> {
        self.timed("screenshot", self.inner.screenshot(request))
            .await
    }

    fn take_blocked_requests(&self) -> Vec<BlockedRequest> {
        self.inner.take_blocked_requests()
    }
}

/// The phases, in the order a step meets them.
pub(crate) const PHASES: [&str; 9] = [
    "observe",
    "resolve",
    "classify",
    "authorize",
    "dispatch",
    "settle",
    "screenshot",
    "evidence",
    "outside the trace",
];

#[derive(Default, Clone, Copy)]
struct Totals {
    wall: Duration,
    own_ns: u64,
    browser_ns: u64,
    calls: usize,
}

impl Totals {
    fn add(&mut self, start: Mark, end: Mark) {
        self.wall += end.at.saturating_duration_since(start.at);
        self.own_ns += end.own_ns.saturating_sub(start.own_ns);
        self.browser_ns += end.browser_ns.saturating_sub(start.browser_ns);
        self.calls += 1;
    }

    fn sub(&mut self, other: &Totals) {
        self.wall = self.wall.saturating_sub(other.wall);
        self.own_ns = self.own_ns.saturating_sub(other.own_ns);
        self.browser_ns = self.browser_ns.saturating_sub(other.browser_ns);
    }
}

/// Totals per phase over a number of replays.
#[derive(Default)]
pub(crate) struct Profile {
    phases: BTreeMap<&'static str, Totals>,
    replays: usize,
}

impl Profile {
    /// Adds one replay: the marks around it, the marks of its trace lines (in order), its
    /// trace, and the surface calls it made.
    pub(crate) fn add<D>(
        &mut self,
        (started, ended): (Mark, Mark),
        marks: &[Mark],
        lines: &[TraceLine],
        surface: &Profiled<'_, D>,
    ) {
        assert_eq!(marks.len(), lines.len(), "one clock reading per trace line");
        self.replays += 1;
        let spans = std::mem::take(&mut *surface.spans.lock().unwrap());
        let mut bounds = vec![started];
        bounds.extend_from_slice(marks);
        bounds.push(ended);
        for (index, window) in bounds.windows(2).enumerate() {
            let (from, to) = (window[0], window[1]);
            let mut covered = Totals::default();
            for span in spans
                .iter()
                .filter(|span| span.start.at >= from.at && span.end.at <= to.at)
            {
                self.phases
                    .entry(span.phase)
                    .or_default()
                    .add(span.start, span.end);
                covered.add(span.start, span.end);
            }
            let phase = match lines.get(index).map(|line| line.event.name()) {
                None => "outside the trace",
                Some(_) if index == 0 => "outside the trace",
                Some("resolve") => "resolve",
                Some("authorize" | "intent") => "authorize",
                Some("classify") => "classify",
                Some(_) => "evidence",
            };
            let mut rest = Totals::default();
            rest.add(from, to);
            rest.sub(&covered);
            let entry = self.phases.entry(phase).or_default();
            entry.wall += rest.wall;
            entry.own_ns += rest.own_ns;
            entry.browser_ns += rest.browser_ns;
            if phase != "outside the trace" {
                entry.calls += 1;
            }
        }
    }

    /// CPU milliseconds per replay: this process, and Chromium.
    pub(crate) fn cpu_per_replay(&self) -> (f64, f64) {
        let replays = self.replays.max(1) as f64;
        let (own, browser) = self.phases.values().fold((0, 0), |(own, browser), totals| {
            (own + totals.own_ns, browser + totals.browser_ns)
        });
        (own as f64 / 1e6 / replays, browser as f64 / 1e6 / replays)
    }

    /// Prints wall time per replay from `self` and CPU per replay from `cpu` (a second pass,
    /// since reading CPU from `/proc` slows the run it measures).
    pub(crate) fn print(&self, cpu: &Profile) {
        let per = |value: f64, replays: usize| value / replays.max(1) as f64;
        let total_wall: f64 = self.phases.values().map(|t| t.wall.as_secs_f64()).sum();
        println!(
            "  {:<18} {:>9} {:>7} {:>7} {:>10} {:>14}",
            "phase", "wall ms", "share", "calls", "cua CPU ms", "Chromium CPU ms"
        );
        let (mut own, mut browser) = (0.0, 0.0);
        for phase in PHASES {
            let wall = self.phases.get(phase).copied().unwrap_or_default();
            let used = cpu.phases.get(phase).copied().unwrap_or_default();
            let own_ms = per(used.own_ns as f64 / 1e6, cpu.replays);
            let browser_ms = per(used.browser_ns as f64 / 1e6, cpu.replays);
            own += own_ms;
            browser += browser_ms;
            println!(
                "  {phase:<18} {:>9.1} {:>6.1}% {:>7.1} {own_ms:>10.1} {browser_ms:>14.1}",
                per(wall.wall.as_secs_f64() * 1000.0, self.replays),
                wall.wall.as_secs_f64() / total_wall.max(f64::MIN_POSITIVE) * 100.0,
                per(wall.calls as f64, self.replays),
            );
        }
        println!(
            "  {:<18} {:>9.1} {:>7} {:>7} {own:>10.1} {browser:>14.1}",
            "total",
            per(total_wall * 1000.0, self.replays),
            "",
            ""
        );
    }
}
