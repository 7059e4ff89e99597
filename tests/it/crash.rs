//! The crash harness: batches of the irreversible transfer and of the reversible sub-account
//! opening, run by the real `cua` binary, killed with SIGKILL at random moments and,
//! deliberately, right inside the window between a mutation's write-ahead intent and its
//! verdict, then resumed with `--resume` each time.
//! Afterwards the fixture's own ledger and the evidence are the judges:
//!
//! - no row was posted twice (transfers counted by each row's idempotency key, sub-accounts by
//!   each row's unique deposit);
//! - no row was lost: every row ends `success`, `business_outcome`, `confirmed` (by evidence
//!   or reconciliation) or `needs_human` with its reason, and a row reported done was posted
//!   exactly once;
//! - no Chromium process of a killed run outlives it by more than a second, and its profile
//!   directory is gone;
//! - every run directory verifies, intact or as the prefix a kill leaves.
//!
//! `make test` runs 30 kills; `make soak` sets `CUA_CRASH_KILLS=300` and prints the figures.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the crash test reports what it killed and when"
)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::exactly_once::{Batch, Workload};

/// Rows per batch; each batch is resumed until it finishes, then the next one starts.
const ROWS: usize = 3;

/// A small deterministic generator, so a failing schedule can be replayed.
struct Schedule(u64);

impl Schedule {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low)
    }
}

/// What the harness counted.
#[derive(Debug, Default)]
struct Figures {
    kills: usize,
    kills_in_window: usize,
    batches: usize,
    rows: usize,
    subaccount_rows: usize,
    success: usize,
    confirmed_by_evidence: usize,
    reconciled_done: usize,
    reconciled_not_done: usize,
    needs_human: usize,
    double_posts: usize,
    lost_rows: usize,
    orphaned_processes: usize,
    leftover_profiles: usize,
    slowest_teardown: Duration,
    runs_verified: usize,
    /// Transfers counted row by row (by key), to hold against the ledger's total.
    transfers_counted: usize,
}

#[test]
fn killed_and_resumed_batches_never_post_twice_lose_nothing_and_leave_no_browser() {
    let wanted: usize = std::env::var("CUA_CRASH_KILLS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(30);
    let amounts: Vec<String> = (1..=ROWS).map(|cents| format!("0.0{cents}")).collect();
    let amounts: Vec<&str> = amounts.iter().map(String::as_str).collect();
    let mut batch = Batch::new(&amounts, "crash-1");
    let mut schedule = Schedule(0x5eed_c0de);
    let mut figures = Figures::default();
    // At least three batches, whatever the kills: the third opens sub-accounts, and on a slow
    // machine the kills wanted can all land in the first two.
    while figures.kills < wanted || figures.batches < 3 {
        figures.batches += 1;
        // Every third batch opens sub-accounts (reversible, no reconciliation): an in-doubt
        // opening goes to a person. Each deposit is unique, so each row's effect is countable.
        if figures.batches.is_multiple_of(3) {
            let deposits: Vec<String> = (1..=ROWS)
                .map(|row| format!("{}.{row:02}", 25 + figures.batches))
                .collect();
            let deposits: Vec<&str> = deposits.iter().map(String::as_str).collect();
            batch.start(
                Workload::Subaccounts,
                &format!("crash-{}", figures.batches),
                &deposits,
            );
        } else {
            batch.start(
                Workload::Transfers,
                &format!("crash-{}", figures.batches),
                &amounts,
            );
        }
        let lines = run_batch_under_kills(&batch, &mut schedule, &mut figures, wanted);
        judge_batch(&batch, &lines, &mut figures);
    }
    for entry in std::fs::read_dir(batch.scene.evidence()).expect("the evidence root") {
        let dir = entry.expect("an entry").path();
        let reserved = dir
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| cua_evidence::RESERVED_ROOT_NAMES.contains(&name));
        if !dir.is_dir() || reserved {
            continue;
        }
        let empty = std::fs::read_dir(&dir).expect("a run dir").next().is_none();
        if empty {
            // Killed between creating the directory and its trace: nothing was written.
            continue;
        }
        let report =
            cua_evidence::verify(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
        assert!(
            report.is_intact(),
            "{}: {}",
            dir.display(),
            report.summary()
        );
        figures.runs_verified += 1;
    }
    // Every transfer in the ledger belongs to exactly one reported row: none was posted under
    // another reference, unseen by the per-row counts.
    let ledger = batch.scene.fixture().handle().transfers().len();
    assert_eq!(ledger, figures.transfers_counted, "{figures:#?}");
    eprintln!("crash harness: {figures:#?}");
    assert!(figures.kills >= wanted, "{figures:?}");
    assert!(figures.kills_in_window > 0, "{figures:?}");
    assert!(figures.subaccount_rows > 0, "{figures:?}");
    assert_eq!(
        (
            figures.double_posts,
            figures.lost_rows,
            figures.orphaned_processes,
            figures.leftover_profiles
        ),
        (0, 0, 0, 0),
        "{figures:#?}"
    );
}

/// Runs one batch to its end, killing it as the schedule says; returns its final row lines.
fn run_batch_under_kills(
    batch: &Batch,
    schedule: &mut Schedule,
    figures: &mut Figures,
    wanted: usize,
) -> Vec<Value> {
    use std::os::unix::process::ExitStatusExt;
    loop {
        let mut child = batch.spawn();
        let pid = child.id();
        let in_window = schedule.next().is_multiple_of(2);
        if figures.kills < wanted {
            if in_window {
                kill_after_next_intent(batch, &mut child, schedule);
            } else {
                kill_after(
                    &mut child,
                    Duration::from_millis(schedule.between(200, 3500)),
                );
            }
        }
        let output = child.wait_with_output().expect("the batch's output");
        if output.status.signal() == Some(9) {
            figures.kills += 1;
            if in_window {
                figures.kills_in_window += 1;
            }
            let (orphans, profiles, took) = browser_teardown(pid);
            figures.orphaned_processes += orphans;
            figures.leftover_profiles += profiles;
            figures.slowest_teardown = figures.slowest_teardown.max(took);
            continue;
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            matches!(output.status.code(), Some(0 | 3)),
            "{:?}\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(
            browser_teardown(pid).0,
            0,
            "a finished batch leaves no browser"
        );
        return stdout
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect();
    }
}

/// SIGKILLs the child after `delay` unless it finished first.
fn kill_after(child: &mut Child, delay: Duration) {
    let deadline = Instant::now() + delay;
    while Instant::now() < deadline {
        if child.try_wait().expect("the child's status").is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
}

/// SIGKILLs the child as soon as a new write-ahead intent appears in its batch's evidence (plus
/// 0–150 ms, so some kills land before the click leaves and some while its request is in
/// flight), unless it finished first.
fn kill_after_next_intent(batch: &Batch, child: &mut Child, schedule: &mut Schedule) {
    let before = intents_in(batch);
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().expect("the child's status").is_some() {
            return;
        }
        if intents_in(batch) > before {
            std::thread::sleep(Duration::from_millis(schedule.between(0, 150)));
            let _ = child.kill();
            return;
        }
        assert!(Instant::now() < give_up, "no intent within 60 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How many intent lines the batch's run directories hold.
fn intents_in(batch: &Batch) -> usize {
    let Ok(entries) = std::fs::read_dir(batch.scene.evidence()) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with(&format!("{}-row-", batch.batch_id))
        })
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("trace.jsonl")).ok())
        .map(|trace| trace.matches("\"event\":\"intent\"").count())
        .sum()
}

/// After a kill: waits for every Chromium process the killed `cua` (pid `owner`) started to be
/// gone and its profile directory removed. Returns the processes and profiles still there
/// after two seconds (the design bound is one; the slack is for a CI machine running browser
/// tests in parallel, and `slowest_teardown` reports the real figure), and how long it took.
fn browser_teardown(owner: u32) -> (usize, usize, Duration) {
    let started = Instant::now();
    loop {
        let (processes, profiles) = leftovers(owner);
        let took = started.elapsed();
        if processes.is_empty() && profiles.is_empty() {
            return (0, 0, took);
        }
        if took > Duration::from_secs(2) {
            eprintln!("left behind by {owner}: {processes:?} {profiles:?}");
            return (processes.len(), profiles.len(), took);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Chromium processes, and profile directories, that name `owner` as the `cua` that launched
/// them (`--user-data-dir=…/cua-chromium-<owner>-…`).
fn leftovers(owner: u32) -> (BTreeSet<u32>, BTreeSet<String>) {
    let marker = format!("cua-chromium-{owner}-");
    let mut processes = BTreeSet::new();
    for entry in std::fs::read_dir("/proc")
        .expect("procfs")
        .filter_map(Result::ok)
    {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(&marker) {
            processes.insert(pid);
        }
    }
    let mut profiles = BTreeSet::new();
    if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&marker) {
                profiles.insert(name);
            }
        }
    }
    (processes, profiles)
}

/// Checks one finished batch's rows against the fixture's ledger.
fn judge_batch(batch: &Batch, lines: &[Value], figures: &mut Figures) {
    assert_eq!(lines.len(), ROWS, "{lines:?}");
    for line in lines {
        let row = line["row"].as_u64().expect("a row number");
        let posted = batch.posted(row);
        figures.rows += 1;
        if batch.workload() == Workload::Subaccounts {
            figures.subaccount_rows += 1;
        } else {
            figures.transfers_counted += posted;
        }
        if posted > 1 {
            figures.double_posts += 1;
            eprintln!(
                "row {row} of {} posted {posted} times: {line}",
                batch.batch_id
            );
        }
        let status = line["status"].as_str().unwrap_or_default();
        let settled = line["settled"].as_str().unwrap_or_default();
        match status {
            "success" if posted == 1 => figures.success += 1,
            "confirmed" if posted == 1 => {
                if settled.contains("answered done") {
                    figures.reconciled_done += 1;
                } else {
                    figures.confirmed_by_evidence += 1;
                }
            }
            "needs_human" if line["error"].as_str().is_some_and(|why| !why.is_empty()) => {
                figures.needs_human += 1;
            }
            _ => {
                figures.lost_rows += 1;
                eprintln!(
                    "row {row} of {} ended badly (posted {posted}): {line}",
                    batch.batch_id
                );
            }
        }
        if line["run_id"]
            .as_str()
            .is_some_and(|run_id| run_id.contains("-attempt-"))
            && reconciled_not_done(batch, row)
        {
            figures.reconciled_not_done += 1;
        }
    }
}

/// Whether a reconciliation of `row` answered "not done" (so the row ran again).
fn reconciled_not_done(batch: &Batch, row: u64) -> bool {
    let prefix = format!("{}-row-{row}-reconcile-", batch.batch_id);
    let Ok(entries) = std::fs::read_dir(batch.scene.evidence()) else {
        return false;
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .any(|entry| outcome_of(&entry.path()) == Some("transfer_not_found".to_owned()))
}

fn outcome_of(run_dir: &Path) -> Option<String> {
    cua_evidence::read_trace(run_dir)
        .ok()?
        .iter()
        .find_map(|line| match &line.event {
            cua_evidence::Event::RunEnd(end) => end.outcome.as_ref().map(ToString::to_string),
            _ => None,
        })
}
