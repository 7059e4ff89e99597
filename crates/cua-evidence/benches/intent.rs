//! The cost of a write-ahead intent: an `intent` line is synced to disk (`fdatasync`) before
//! its mutation is dispatched, where every other event is only flushed. This prints the median
//! time to emit each kind of line on the build's own disk, side by side, and the time one
//! intent adds to a mutating run. Figures are printed, never asserted.
//!
//! Run with `cargo bench -p cua-evidence --bench intent` (or `make bench`).
#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use cua_artifact::{ActionKind, Actor, Identifier, RiskTier};
use cua_evidence::{EvidenceBus, Intent, Note, Redactor, RunId, SystemClock};

const EVENTS: usize = 200;

fn main() {
    // Under the target directory, so the disk is the one a run's evidence lives on (a tmpfs
    // would make every sync free).
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a scratch directory");
    let note = median(&root, "note", |bus, index| {
        bus.emit(
            Actor::Automation,
            1,
            Note {
                note: format!("note {index}"),
                data: Default::default(),
            },
        )
    });
    let intent = median(&root, "intent", |bus, index| {
        bus.emit(
            Actor::Automation,
            1,
            Intent {
                step: Some(Identifier::parse("post_transfer").expect("an id")),
                decision_id: format!("dec-{index}"),
                action_type: ActionKind::Click,
                risk: RiskTier::Irreversible,
                row: Some(index as u64),
                attempt: 1,
                idempotency_key: cua_evidence::idempotency_key("bench", Some(index as u64)),
                remedy: None,
            },
        )
    });
    println!("evidence line, median of {EVENTS} (same bus, same disk)");
    println!("  flushed event (note)      {:>9.3} ms", ms(note));
    println!("  synced intent             {:>9.3} ms", ms(intent));
    println!(
        "  ratio intent / note       {:>9.1}x",
        intent.as_secs_f64() / note.as_secs_f64().max(1e-9)
    );
    println!(
        "  added per mutating dispatch: {:.3} ms (one intent); reads and safe steps write none",
        ms(intent.saturating_sub(note))
    );
}

fn median(
    root: &tempfile::TempDir,
    label: &str,
    emit: impl Fn(&EvidenceBus, usize) -> Result<u64, cua_evidence::EvidenceError>,
) -> Duration {
    let bus = EvidenceBus::create(
        root.path(),
        RunId::parse(&format!("bench-{label}")).expect("a run id"),
        Arc::new(SystemClock),
        Redactor::new(Vec::<(&str, &str)>::new()).expect("no rules"),
    )
    .expect("a run directory");
    let mut times: Vec<Duration> = (0..EVENTS)
        .map(|index| {
            let started = Instant::now();
            emit(&bus, index).expect("the event is written");
            started.elapsed()
        })
        .collect();
    times.sort_unstable();
    times[times.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}
