//! Elapsed time and bounded sleeps, injected: the executor reads no clock of its own.
//!
//! Budgets (`max_duration_ms`) and recovery backoff are measured and spent through a
//! [`RunClock`]. Production wires [`TokioClock`]; tests wire a [`ManualClock`], whose sleeps
//! return at once and advance its time, so a run's decisions never depend on how fast the
//! machine is. (Wall-clock timestamps in the trace come from the evidence bus's own injected
//! clock.)

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

/// A boxed sleep, so the trait stays object safe.
pub type Sleep<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// A monotonic source of elapsed time and a way to wait.
pub trait RunClock: Send + Sync {
    /// Time since an arbitrary fixed origin; never goes backwards.
    fn elapsed(&self) -> Duration;

    /// Waits for `duration`.
    fn sleep(&self, duration: Duration) -> Sleep<'_>;
}

/// The real clock: `tokio::time`, so a paused tokio runtime pauses it too.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        Self {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl RunClock for TokioClock {
    fn elapsed(&self) -> Duration {
        self.origin.elapsed()
    }

    fn sleep(&self, duration: Duration) -> Sleep<'_> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A clock that moves only when told to, or when something sleeps on it: a sleep returns at
/// once and advances the time by its duration. Every sleep is recorded.
#[derive(Debug, Default)]
pub struct ManualClock {
    state: Mutex<ManualState>,
}

#[derive(Debug, Default)]
struct ManualState {
    now: Duration,
    sleeps: Vec<Duration>,
}

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut state = self.lock();
        state.now += by;
    }

    /// Every sleep asked of this clock, in order.
    pub fn sleeps(&self) -> Vec<Duration> {
        self.lock().sleeps.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ManualState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl RunClock for ManualClock {
    fn elapsed(&self) -> Duration {
        self.lock().now
    }

    fn sleep(&self, duration: Duration) -> Sleep<'_> {
        let mut state = self.lock();
        state.now += duration;
        state.sleeps.push(duration);
        Box::pin(std::future::ready(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_advances_on_sleep_and_records_it() {
        let clock = ManualClock::new();
        clock.advance(Duration::from_millis(5));
        assert!(
            futures::FutureExt::now_or_never(clock.sleep(Duration::from_millis(250))).is_some()
        );
        assert_eq!(clock.elapsed(), Duration::from_millis(255));
        assert_eq!(clock.sleeps(), vec![Duration::from_millis(250)]);
    }
}
