//! Progress on stderr for long work: a batch's rows, an eval's runs, a discovery's steps.
//!
//! On a terminal, an indicatif bar (done of total, rate, time left, failures so far), or a
//! spinner with the elapsed time when the total is unknown; it is suspended while a result
//! line goes to stdout, so the two never share a line. When stderr is not a terminal (CI, a
//! log file) there is no bar: one plain line per item or step instead. Either way the work
//! ends with a one-line summary. Colour only when `NO_COLOR`
//! is unset.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Whether an item that ended counts among the failures so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    Fine,
    Failed,
}

impl Ended {
    /// `Failed` when `failed` holds.
    pub(crate) fn failed_if(failed: bool) -> Self {
        if failed { Self::Failed } else { Self::Fine }
    }
}

/// A unit of work's progress; see the module documentation.
pub(crate) struct Progress {
    bar: ProgressBar,
    /// What is counted, for the summary: `batch`, `eval replay_stability`.
    what: String,
    started: Instant,
    total: Option<usize>,
    done: usize,
    failed: usize,
    /// How many items ended with each status, by status.
    counts: BTreeMap<String, usize>,
    /// Whether stderr is a terminal (a bar is drawn) or not (a line per item).
    terminal: bool,
}

impl Progress {
    /// Progress over `total` items.
    pub(crate) fn counted(what: impl Into<String>, total: usize) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let bar = if terminal {
            ProgressBar::with_draw_target(
                Some(u64::try_from(total).unwrap_or(u64::MAX)),
                ProgressDrawTarget::stderr(),
            )
        } else {
            ProgressBar::hidden()
        };
        let style = if colour() {
            "{prefix} [{bar:30.green/white}] {pos}/{len} {per_sec} eta {eta} {msg}"
        } else {
            "{prefix} [{bar:30}] {pos}/{len} {per_sec} eta {eta} {msg}"
        };
        if let Ok(style) = ProgressStyle::with_template(style) {
            bar.set_style(style.progress_chars("#>-"));
        }
        let what = what.into();
        bar.set_prefix(what.clone());
        Self {
            bar,
            what,
            started: Instant::now(),
            total: Some(total),
            done: 0,
            failed: 0,
            counts: BTreeMap::new(),
            terminal,
        }
    }

    /// Progress of work whose length is not known ahead (a discovery): a spinner with the
    /// elapsed time and the last thing done.
    pub(crate) fn open_ended(what: impl Into<String>) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let bar = if terminal {
            ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
        } else {
            ProgressBar::hidden()
        };
        let style = if colour() {
            "{spinner:.green} {prefix} {elapsed} {pos} step(s) {msg}"
        } else {
            "{spinner} {prefix} {elapsed} {pos} step(s) {msg}"
        };
        if let Ok(style) = ProgressStyle::with_template(style) {
            bar.set_style(style);
        }
        let what = what.into();
        bar.set_prefix(what.clone());
        bar.enable_steady_tick(Duration::from_millis(200));
        Self {
            bar,
            what,
            started: Instant::now(),
            total: None,
            done: 0,
            failed: 0,
            counts: BTreeMap::new(),
            terminal,
        }
    }

    /// One item ended with `status`, counted as `ended`; `line` describes it for the log when
    /// stderr is not a terminal.
    pub(crate) fn finished(&mut self, status: &str, ended: Ended, line: &str) {
        self.done += 1;
        if ended == Ended::Failed {
            self.failed += 1;
        }
        *self.counts.entry(status.to_owned()).or_insert(0) += 1;
        if self.terminal {
            // A spinner's position counts the steps its observer saw, not the items.
            if self.total.is_some() {
                self.bar.inc(1);
            }
            if self.failed > 0 {
                self.bar.set_message(format!("{} failed", self.failed));
            }
        } else if let Some(total) = self.total {
            // An open-ended piece of work printed its steps; its summary says how it ended.
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "{} {}/{total} {line}", self.what, self.done);
        }
    }

    /// A handle that counts this spinner's steps from elsewhere (a run's event observer).
    pub(crate) fn stepper(&self) -> Stepper {
        Stepper {
            bar: self.bar.clone(),
            what: self.what.clone(),
            terminal: self.terminal,
        }
    }

    /// Runs `print` (which writes a result to stdout) with the bar cleared, then redraws it.
    pub(crate) fn suspend<R>(&self, print: impl FnOnce() -> R) -> R {
        self.bar.suspend(print)
    }

    /// Clears the bar and prints the one-line summary on stderr:
    /// `batch: 30 of 30 in 17.2 s (104.7 a minute): success 28, failed 2`.
    pub(crate) fn finish(self) -> Summary {
        self.bar.finish_and_clear();
        let elapsed = self.started.elapsed().as_secs_f64();
        let rate = if elapsed > 0.0 {
            // Counts are small; the float is only for the rate's one decimal.
            #[expect(
                clippy::cast_precision_loss,
                reason = "a count of items, far below 2^52"
            )]
            let done = self.done as f64;
            done * 60.0 / elapsed
        } else {
            0.0
        };
        let of = match self.total {
            Some(total) => format!("{} of {total}", self.done),
            None => format!("{} step(s)", self.bar.position()),
        };
        let counts: Vec<String> = self
            .counts
            .iter()
            .map(|(status, count)| format!("{status} {count}"))
            .collect();
        let counts = if counts.is_empty() {
            "nothing ran".to_owned()
        } else {
            counts.join(", ")
        };
        let summary = format!(
            "{}: {of} in {elapsed:.1} s ({rate:.1} a minute): {counts}",
            self.what
        );
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "{summary}");
        Summary {
            summary,
            done: self.done,
            total: self.total,
            failed: self.failed,
            statuses: self.counts,
            elapsed_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// Counts an open-ended piece of work's steps: the spinner's position and message on a
/// terminal, a plain line per step otherwise (`discover step 3: acted`).
pub(crate) struct Stepper {
    bar: ProgressBar,
    what: String,
    terminal: bool,
}

impl Stepper {
    /// One more step, done as `message` says.
    pub(crate) fn step(&self, message: &str) {
        self.bar.inc(1);
        if self.terminal {
            self.bar.set_message(message.to_owned());
        } else {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(
                stderr,
                "{} step {}: {message}",
                self.what,
                self.bar.position()
            );
        }
    }

    /// What is happening now, between steps (a terminal's spinner only).
    pub(crate) fn say(&self, message: &str) {
        if self.terminal {
            self.bar.set_message(message.to_owned());
        }
    }
}

/// What long work did, as its last envelope (`--format json`) carries it.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Summary {
    /// The line printed on stderr.
    pub(crate) summary: String,
    pub(crate) done: usize,
    pub(crate) total: Option<usize>,
    pub(crate) failed: usize,
    /// How many items ended with each status.
    pub(crate) statuses: BTreeMap<String, usize>,
    pub(crate) elapsed_ms: u64,
}

/// Whether stderr may be coloured: never when `NO_COLOR` is set (to anything but empty).
fn colour() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}
