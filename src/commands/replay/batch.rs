//! `cua replay <ref> --inputs rows.jsonl --concurrency N [--shard k/n] [--resume]`: many replays
//! of one capability over a pool of browser pages, one JSON line per row on stdout in input
//! order, progress on stderr, evidence per run, and a state file that lets an interrupted batch
//! resume.
//!
//! A row is one line of `rows.jsonl`: a JSON object of inputs. One failing row never stops the
//! others. The state file `<evidence>/<batch id>.batch.jsonl` records each row as it starts and
//! as it finishes (with its output line). `--resume` re-emits finished rows without running them
//! again, and re-runs an interrupted row only when its earlier attempt dispatched no mutation: a
//! row whose attempt had dispatched a step above `safe` risk is reported as
//! `needs_inspection` with that attempt's evidence, because its effect may already have
//! happened and a mutation is never retried automatically.

use std::collections::{BTreeMap, VecDeque};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use cua_artifact::{EffectVerdict, RiskTier};
use cua_chromium::ChromiumSurface;
use cua_evidence::Event;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{Failure, Settings, exit_of, fresh_run_id, launch, replay_once};
use crate::cli::{Format, PoolKind, ReplayArgs};
use crate::output::Exit;

/// A row's inputs, or why the line is not a row.
type ParsedRow = Result<BTreeMap<String, Value>, String>;

/// One row's result line.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RowLine {
    row: usize,
    /// success, business_outcome, needs_human, failed, invalid_row or needs_inspection.
    status: String,
    exit_code: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    effect: Option<EffectVerdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    evidence_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// A line of the state file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
enum StateLine {
    Started { row: usize, run_id: String },
    Done { row: usize, line: RowLine },
}

/// Runs the batch. Returns the worst exit code over its rows.
pub(super) async fn run(
    _format: Format,
    settings: &Settings,
    args: &ReplayArgs,
    rows_path: &Path,
) -> Result<Exit, Failure> {
    let shard = parse_shard(args.shard.as_deref())?;
    let text = std::fs::read_to_string(rows_path)
        .map_err(|error| Failure::usage(format!("cannot read {}: {error}", rows_path.display())))?;
    let rows: Vec<(usize, ParsedRow)> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| (index + 1, parse_row(line)))
        .filter(|(row, _)| shard.is_none_or(|(k, n)| (row - 1) % n == k - 1))
        .collect();
    let batch_id = match &args.run_id {
        Some(run_id) => run_id.clone(),
        None if args.resume => batch_id_for(rows_path, shard),
        None => {
            let id = batch_id_for(rows_path, shard);
            if settings
                .evidence_dir
                .join(format!("{id}.batch.jsonl"))
                .exists()
            {
                format!("{id}-{}", fresh_run_id())
            } else {
                id
            }
        }
    };
    std::fs::create_dir_all(&settings.evidence_dir)
        .map_err(|error| Failure::new(Exit::Failed, "evidence_unwritable", error.to_string()))?;
    let state_path = settings
        .evidence_dir
        .join(format!("{batch_id}.batch.jsonl"));
    let previous = if args.resume {
        read_state(&state_path)?
    } else {
        if state_path.exists() {
            return Err(Failure::usage(format!(
                "{} exists: pass --resume to continue that batch, or another --run-id",
                state_path.display()
            )));
        }
        BTreeMap::new()
    };
    let state = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&state_path)
            .map_err(|error| {
                Failure::new(
                    Exit::Failed,
                    "evidence_unwritable",
                    format!("cannot open {}: {error}", state_path.display()),
                )
            })?,
    ));

    // Decide per row: already done, needs inspection, invalid, or to run (with which run id).
    let mut decided: BTreeMap<usize, RowLine> = BTreeMap::new();
    let mut queue: VecDeque<(usize, String, BTreeMap<String, Value>)> = VecDeque::new();
    for (row, parsed) in rows.iter().cloned() {
        let earlier = previous.get(&row);
        match (earlier, parsed) {
            (Some(Earlier::Done(line)), _) => {
                decided.insert(row, line.clone());
            }
            (_, Err(reason)) => {
                decided.insert(
                    row,
                    RowLine {
                        row,
                        status: "invalid_row".to_owned(),
                        exit_code: 2,
                        run_id: None,
                        effect: None,
                        evidence_dir: None,
                        result: None,
                        error: Some(reason),
                    },
                );
            }
            (Some(Earlier::Started(attempts)), Ok(inputs)) => {
                let mutated = attempts.iter().find_map(|run_id| {
                    dispatched_mutation(&settings.evidence_dir.join(run_id))
                        .map(|reason| (run_id.clone(), reason))
                });
                match mutated {
                    Some((run_id, reason)) => {
                        decided.insert(
                            row,
                            RowLine {
                                row,
                                status: "needs_inspection".to_owned(),
                                exit_code: 3,
                                evidence_dir: Some(
                                    settings.evidence_dir.join(&run_id).display().to_string(),
                                ),
                                run_id: Some(run_id),
                                effect: Some(EffectVerdict::Unverifiable),
                                result: None,
                                error: Some(reason),
                            },
                        );
                    }
                    None => {
                        let run_id = format!("{batch_id}-row-{row}-attempt-{}", attempts.len() + 1);
                        queue.push_back((row, run_id, inputs));
                    }
                }
            }
            (None, Ok(inputs)) => queue.push_back((row, format!("{batch_id}-row-{row}"), inputs)),
        }
    }
    for line in decided.values() {
        if line.status == "invalid_row" {
            write_state(
                &state,
                &StateLine::Done {
                    row: line.row,
                    line: line.clone(),
                },
            );
        }
    }

    let total = rows.len();
    let to_run = queue.len();
    let workers = args.concurrency.clamp(1, 16).min(to_run.max(1));
    let mut progress = Progress::new(total, total - to_run);
    let (sender, mut receiver) = mpsc::unbounded_channel::<RowLine>();
    let queue = Arc::new(Mutex::new(queue));
    let mut exit = Exit::Success;

    // The pool: one browser and a page per worker, or a browser per worker.
    let pool = if to_run == 0 {
        Vec::new()
    } else {
        let allowlist = settings.browser_allowlist()?;
        let first = launch(allowlist.clone()).await?;
        let mut pool = vec![first];
        for _ in 1..workers {
            let surface = match args.pool {
                PoolKind::Pages => {
                    let endpoint = pool[0].devtools_endpoint().to_owned();
                    ChromiumSurface::attach(
                        &endpoint,
                        cua_chromium::ChromiumConfig::from_env(allowlist.clone()),
                    )
                    .await
                    .map_err(|error| {
                        Failure::new(Exit::Unavailable, "surface_unavailable", error.to_string())
                    })?
                }
                PoolKind::Browsers => launch(allowlist.clone()).await?,
            };
            pool.push(surface);
        }
        pool
    };

    let row_order: Vec<usize> = rows.iter().map(|(row, _)| *row).collect();
    let mut position = 0;
    let mut finished: BTreeMap<usize, RowLine> = BTreeMap::new();
    let mut stdout = std::io::stdout().lock();

    let work = async {
        let mut tasks = Vec::new();
        for surface in &pool {
            let queue = Arc::clone(&queue);
            let sender = sender.clone();
            let state = Arc::clone(&state);
            tasks.push(async move {
                loop {
                    let next = queue
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .pop_front();
                    let Some((row, run_id, inputs)) = next else {
                        break;
                    };
                    write_state(
                        &state,
                        &StateLine::Started {
                            row,
                            run_id: run_id.clone(),
                        },
                    );
                    let line = match replay_once(settings, surface, &run_id, inputs).await {
                        Ok(report) => RowLine {
                            row,
                            status: report.result.status.as_str().to_owned(),
                            exit_code: exit_of(&report) as u8,
                            run_id: Some(run_id),
                            effect: Some(report.effect),
                            evidence_dir: Some(report.evidence_dir.display().to_string()),
                            result: serde_json::to_value(&report.result).ok(),
                            error: None,
                        },
                        Err(failure) => RowLine {
                            row,
                            status: "failed".to_owned(),
                            exit_code: failure.exit as u8,
                            evidence_dir: Some(
                                settings.evidence_dir.join(&run_id).display().to_string(),
                            ),
                            run_id: Some(run_id),
                            effect: None,
                            result: None,
                            error: Some(failure.message),
                        },
                    };
                    write_state(
                        &state,
                        &StateLine::Done {
                            row,
                            line: line.clone(),
                        },
                    );
                    if sender.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        futures::future::join_all(tasks).await;
    };
    let printer = async {
        // Rows decided without running print as soon as their turn comes.
        loop {
            while let Some(row) = row_order.get(position).copied() {
                let line = decided.remove(&row).or_else(|| finished.remove(&row));
                let Some(line) = line else { break };
                exit = worse(exit, &line);
                let _ = writeln!(
                    stdout,
                    "{}",
                    serde_json::to_string(&line).unwrap_or_default()
                );
                let _ = stdout.flush();
                position += 1;
            }
            match receiver.recv().await {
                Some(line) => {
                    progress.finished(&line);
                    finished.insert(line.row, line);
                }
                None => break,
            }
        }
    };
    futures::join!(work, printer);
    progress.done();
    for surface in pool {
        surface.close().await;
    }
    Ok(exit)
}

/// What an earlier run of the batch left for a row.
enum Earlier {
    Done(RowLine),
    /// Started but never finished, with every attempt's run id.
    Started(Vec<String>),
}

fn read_state(path: &Path) -> Result<BTreeMap<usize, Earlier>, Failure> {
    let mut rows = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(rows);
    };
    for line in text.lines() {
        // A torn last line (the batch was killed mid-write) is ignored: its row re-decides.
        let Ok(state) = serde_json::from_str::<StateLine>(line) else {
            continue;
        };
        match state {
            StateLine::Started { row, run_id } => match rows.entry(row) {
                std::collections::btree_map::Entry::Vacant(entry) => {
                    entry.insert(Earlier::Started(vec![run_id]));
                }
                std::collections::btree_map::Entry::Occupied(mut entry) => {
                    if let Earlier::Started(attempts) = entry.get_mut() {
                        attempts.push(run_id);
                    }
                }
            },
            StateLine::Done { row, line } => {
                rows.insert(row, Earlier::Done(line));
            }
        }
    }
    Ok(rows)
}

fn write_state(state: &Mutex<std::fs::File>, line: &StateLine) {
    let mut file = state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Ok(mut text) = serde_json::to_string(line) {
        text.push('\n');
        let _ = file.write_all(text.as_bytes());
        let _ = file.sync_data();
    }
}

/// Why an interrupted attempt must not be re-run: it dispatched an action the policy assessed
/// above `safe` (its effect may already have happened). `None` when it dispatched no mutation.
fn dispatched_mutation(run_dir: &Path) -> Option<String> {
    let trace = cua_evidence::read_trace(run_dir).ok()?;
    let mut risky: BTreeMap<String, RiskTier> = BTreeMap::new();
    let mut confirmed: Vec<String> = Vec::new();
    let mut mutations: Vec<(String, String)> = Vec::new();
    for line in &trace {
        match &line.event {
            Event::Authorize(authorize) if authorize.granted && authorize.risk > RiskTier::Safe => {
                risky.insert(authorize.decision_id.clone(), authorize.risk);
            }
            Event::Dispatch(dispatch)
                if !dispatch.refused && risky.contains_key(&dispatch.decision_id) =>
            {
                let step = dispatch
                    .step
                    .as_ref()
                    .map_or_else(|| "-".to_owned(), ToString::to_string);
                mutations.push((dispatch.decision_id.clone(), step));
            }
            Event::Effect(effect) if effect.verdict == EffectVerdict::Confirmed => {
                if let Some(decision) = &effect.decision_id {
                    confirmed.push(decision.clone());
                }
            }
            _ => {}
        }
    }
    let (decision, step) = mutations.last()?;
    Some(if confirmed.contains(decision) {
        format!(
            "an earlier attempt's mutation at step `{step}` was confirmed; running the row again would repeat it"
        )
    } else {
        format!(
            "an earlier attempt was interrupted after dispatching the mutation at step `{step}`, whose effect is unverifiable; inspect its evidence before acting"
        )
    })
}

fn parse_row(line: &str) -> Result<BTreeMap<String, Value>, String> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(object)) => Ok(object.into_iter().collect()),
        Ok(_) => Err("a row must be a JSON object of inputs".to_owned()),
        Err(error) => Err(format!("not JSON: {error}")),
    }
}

/// `k/n` with `1 ≤ k ≤ n`: this process runs rows whose 1-based number is `k` modulo `n`.
fn parse_shard(text: Option<&str>) -> Result<Option<(usize, usize)>, Failure> {
    let Some(text) = text else { return Ok(None) };
    let invalid = || Failure::usage(format!("--shard `{text}`: expected k/n with 1 ≤ k ≤ n"));
    let (k, n) = text.split_once('/').ok_or_else(invalid)?;
    let (k, n): (usize, usize) = (
        k.parse().map_err(|_| invalid())?,
        n.parse().map_err(|_| invalid())?,
    );
    if k == 0 || n == 0 || k > n {
        return Err(invalid());
    }
    Ok(Some((k, n)))
}

/// A batch id from the rows file's name (and the shard), so `--resume` finds its state.
fn batch_id_for(rows_path: &Path, shard: Option<(usize, usize)>) -> String {
    let stem: String = rows_path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    match shard {
        Some((k, n)) => format!("batch-{stem}-shard-{k}-of-{n}"),
        None => format!("batch-{stem}"),
    }
}

/// The worse of two exit codes for a batch: 69 > 1 > 2 > 3 > 0.
fn worse(current: Exit, line: &RowLine) -> Exit {
    let rank = |exit: Exit| match exit {
        Exit::Success => 0,
        Exit::NeedsHuman => 1,
        Exit::Usage => 2,
        Exit::Failed => 3,
        Exit::Unavailable => 4,
    };
    let row = match line.exit_code {
        0 => Exit::Success,
        2 => Exit::Usage,
        3 => Exit::NeedsHuman,
        69 => Exit::Unavailable,
        _ => Exit::Failed,
    };
    if rank(row) > rank(current) {
        row
    } else {
        current
    }
}

/// The progress bar on stderr: redrawn in place on a terminal, one line per row otherwise.
struct Progress {
    total: usize,
    done: usize,
    counts: BTreeMap<String, usize>,
    terminal: bool,
}

impl Progress {
    fn new(total: usize, already: usize) -> Self {
        let progress = Self {
            total,
            done: already,
            counts: BTreeMap::new(),
            terminal: std::io::stderr().is_terminal(),
        };
        progress.draw(None);
        progress
    }

    fn finished(&mut self, line: &RowLine) {
        self.done += 1;
        *self.counts.entry(line.status.clone()).or_insert(0) += 1;
        self.draw(Some(line));
    }

    fn draw(&self, line: Option<&RowLine>) {
        let width = 30;
        let filled = (self.done * width).checked_div(self.total).unwrap_or(width);
        let counts: Vec<String> = self
            .counts
            .iter()
            .map(|(status, count)| format!("{status} {count}"))
            .collect();
        let bar = format!(
            "[{}{}] {}/{} {}",
            "#".repeat(filled),
            "-".repeat(width - filled),
            self.done,
            self.total,
            counts.join(", ")
        );
        let mut stderr = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(stderr, "\r{bar}\x1b[K");
        } else if let Some(line) = line {
            let _ = writeln!(stderr, "row {} {} {bar}", line.row, line.status);
        }
        let _ = stderr.flush();
    }

    fn done(&self) {
        if self.terminal {
            let _ = writeln!(std::io::stderr());
        }
    }
}
