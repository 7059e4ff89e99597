//! `cua replay <ref> --inputs rows.jsonl --concurrency N [--shard k/n] [--resume]`: many replays
//! of one capability over a pool of browser pages, one JSON line per row on stdout in input
//! order, progress on stderr, evidence per run, and a state file that lets an interrupted batch
//! resume.
//!
//! A row is one line of `rows.jsonl`: a JSON object of inputs. One failing row never stops the
//! others. The state file `<evidence>/<batch id>.batch.jsonl` records each row as it starts and
//! as it finishes (with its output line). `--resume` re-emits finished rows without running them
//! again. An interrupted row is decided from its attempts' write-ahead intents
//! (`cua_replay::interrupted`): with no mutation handed over it runs again; a confirmed one is
//! reported `confirmed`; one in doubt is never dispatched again blindly, but answered by its
//! step's read-only `reconcile` capability (done: `confirmed`, with no new dispatch; not done:
//! the row runs again under the same idempotency key; unknown: `needs_human`, naming the step
//! and its evidence). Every attempt at a row shares one idempotency key.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use cua_artifact::{EffectVerdict, FailureCode, Reconcile, StepId};
use cua_chromium::ChromiumSurface;
use cua_evidence::RunId;
use cua_fs::{Dir, FileMode};
use cua_replay::{
    Attempt, CapabilityLoader, Entropy, InDoubt, Interrupted, InterruptedRow, Journaled,
    Reconciliation, Settled, Shard,
};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use super::state::{BatchState, Earlier, Header, StateLine};
use super::{Dispatches, RowFence, Settings, exit_of, fresh_run_id, launch, replay_once};
use crate::cli::{Format, PoolKind, ReplayArgs};
use crate::error::{CliError, ErrorCode};
use crate::limits;
use crate::output::Exit;

/// A row's inputs, or why the line is not a row.
pub(super) type ParsedRow = Result<BTreeMap<String, Value>, String>;

/// One row's result line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct RowLine {
    pub(super) row: usize,
    /// success, business_outcome, confirmed (an interrupted attempt's mutation, found to have
    /// happened), needs_human, failed or invalid_row.
    pub(super) status: String,
    pub(super) exit_code: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    effect: Option<EffectVerdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    evidence_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<String>,
    /// How an interrupted row was settled: which attempt, which step, what reconciliation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    settled: Option<String>,
}

impl RowLine {
    /// A row that is not one (bad JSON, a repeated key): nothing ran.
    pub(super) fn invalid(row: usize, reason: String) -> Self {
        Self {
            row,
            status: "invalid_row".to_owned(),
            exit_code: 2,
            run_id: None,
            effect: None,
            evidence_dir: None,
            result: None,
            error: Some(reason),
            settled: None,
        }
    }

    /// A row a person must look at before anything runs again.
    pub(super) fn needs_human(
        row: usize,
        run_id: Option<String>,
        evidence_dir: String,
        reason: String,
    ) -> Self {
        Self {
            row,
            status: "needs_human".to_owned(),
            exit_code: 3,
            run_id,
            effect: Some(EffectVerdict::Unverifiable),
            evidence_dir: Some(evidence_dir),
            result: None,
            error: Some(reason),
            settled: None,
        }
    }
}

/// What a worker does with a row.
pub(super) enum Work {
    /// Run it as this attempt (from 1).
    Run {
        row: usize,
        inputs: BTreeMap<String, Value>,
        attempt: u32,
    },
    /// Ask the in-doubt step's reconciliation first, then settle or run again.
    Reconcile {
        row: usize,
        inputs: BTreeMap<String, Value>,
        in_doubt: InDoubt,
        /// Attempts so far, and the one whose intent is in doubt.
        attempts: u32,
        in_doubt_run: String,
    },
}

/// What a worker made of a piece of work.
pub(super) enum Worked {
    /// The row is finished (whatever its status): recorded `done`, printed.
    Line(RowLine),
    /// A signal stopped it before it finished (or its claim on a queue was lost): not recorded
    /// as finished, so it is decided again from its intents.
    Interrupted,
}

/// Runs the batch. Returns the worst exit code over its rows.
pub(super) async fn run(
    format: Format,
    settings: &Settings,
    args: &ReplayArgs,
    rows_path: &Path,
) -> Result<Exit, CliError> {
    let shard = args.shard;
    let (text, rows) = read_rows(rows_path)?;
    if let Some(path) = &args.junit {
        crate::junit::prepare(path)?;
    }
    let rows: Vec<(usize, ParsedRow)> = rows
        .into_iter()
        .filter(|(row, _)| shard.is_none_or(|shard| shard.contains(*row)))
        .collect();
    // The evidence root is held open from here on, so a link planted in its place is refused
    // now and the state file is opened inside it without following a link.
    let evidence = Dir::create_all(&settings.evidence_dir, FileMode::Private).map_err(refused)?;
    let last_row = rows.last().map_or(1, |(row, _)| *row);
    let batch_id = match &args.run_id {
        Some(run_id) => check_batch_id(run_id, last_row)?,
        None => {
            let id = check_batch_id(&batch_id_for(rows_path, shard), last_row)?;
            let name = state_file(&id);
            if args.resume || !evidence.has_file(&name) {
                id
            } else if super::state::unfinished(&evidence, &name) {
                return Err(CliError::usage(format!(
                    "an earlier batch of these rows ({}) was interrupted with rows unfinished: pass --resume to \
                     finish it (a new batch would run its mutations again under new keys), or --run-id for a \
                     deliberately separate batch",
                    evidence.path().join(&name).display()
                )));
            } else {
                check_batch_id(&format!("{id}-{}", fresh_run_id()), last_row)?
            }
        }
    };
    let state_name = state_file(&batch_id);
    if !args.resume && evidence.has_file(&state_name) {
        return Err(CliError::usage(format!(
            "{} exists: pass --resume to continue that batch, or another --run-id",
            evidence.path().join(&state_name).display()
        )));
    }
    let header = Header {
        rows_digest: format!("blake3:{}", blake3::hash(text.as_bytes()).to_hex()),
        content_hash: settings
            .prepared
            .capability
            .content_hash
            .as_ref()
            .map_or_else(|| "draft".to_owned(), ToString::to_string),
        nonce: nonce()?,
    };
    let state = Arc::new(BatchState::open(&evidence, &state_name, header)?);
    let previous = &state.previous;
    let duplicates = duplicate_keys(settings, &rows);

    // Decide per row: already done, invalid, settled from an interrupted attempt's intents, to
    // reconcile, or to run.
    let mut decided: BTreeMap<usize, RowLine> = BTreeMap::new();
    let mut queue: VecDeque<Work> = VecDeque::new();
    for (row, parsed) in rows.iter().cloned() {
        let earlier = previous.get(&row);
        match (earlier, parsed) {
            (Some(Earlier::Done(line)), _) => {
                decided.insert(row, line.clone());
            }
            (None, Ok(_)) if duplicates.contains_key(&row) => {
                let reason = duplicates.get(&row).cloned().unwrap_or_default();
                decided.insert(row, RowLine::invalid(row, reason));
            }
            (_, Err(reason)) => {
                decided.insert(row, RowLine::invalid(row, reason));
            }
            (Some(Earlier::Started(attempts)), Ok(inputs)) => {
                match interrupted_work(settings, row, inputs, attempts, &[]) {
                    Ok(work) => queue.push_back(work),
                    Err(line) => {
                        decided.insert(row, *line);
                    }
                }
            }
            (None, Ok(inputs)) => queue.push_back(Work::Run {
                row,
                inputs,
                attempt: 1,
            }),
        }
    }
    for line in decided.values() {
        if previous
            .get(&line.row)
            .is_none_or(|earlier| !matches!(earlier, Earlier::Done(_)))
        {
            record_done(&state, line);
        }
    }

    let total = rows.len();
    let to_run = queue.len();
    let workers = args.concurrency.clamp(1, 16).min(to_run.max(1));
    let mut progress = crate::progress::Progress::counted("batch", total);
    // Rows decided without running (done earlier, invalid, settled) count in the summary too.
    for line in decided.values() {
        progress.finished(
            &line.status,
            crate::progress::Ended::failed_if(line.exit_code != 0),
            &format!("row {} {}", line.row, line.status),
        );
    }
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
                        CliError::new(ErrorCode::SurfaceUnavailable, error.to_string())
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
    let mut printed: Vec<RowLine> = Vec::new();
    let mut stdout = std::io::stdout().lock();

    let batch_id = batch_id.as_str();
    let work = async {
        let mut tasks = Vec::new();
        for surface in &pool {
            let queue = Arc::clone(&queue);
            let sender = sender.clone();
            let state = Arc::clone(&state);
            tasks.push(async move {
                loop {
                    if settings.stop.interrupt.is_raised() {
                        break;
                    }
                    let next = queue
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .pop_front();
                    let Some(work) = next else {
                        break;
                    };
                    let book = FileBook {
                        state: &state,
                        batch_id,
                    };
                    let run = RowRun {
                        settings,
                        surface,
                        book: &book,
                        batch_id,
                        fence: None,
                    };
                    let line = match work_row(&run, work).await {
                        Worked::Line(line) => line,
                        // A row the signal stopped is not done: `--resume` decides it again
                        // from its attempt's intents.
                        Worked::Interrupted => break,
                    };
                    record_done(&state, &line);
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
                progress.suspend(|| {
                    let _ = writeln!(
                        stdout,
                        "{}",
                        serde_json::to_string(&line).unwrap_or_default()
                    );
                    let _ = stdout.flush();
                });
                printed.push(line);
                position += 1;
            }
            match receiver.recv().await {
                Some(line) => {
                    progress.finished(
                        &line.status,
                        crate::progress::Ended::failed_if(line.exit_code != 0),
                        &format!("row {} {}", line.row, line.status),
                    );
                    finished.insert(line.row, line);
                }
                None => break,
            }
        }
    };
    futures::join!(work, printer);
    let summary = progress.finish();
    for surface in pool {
        surface.close().await;
    }
    drop(state);
    if let Some(path) = &args.junit {
        // A batch stopped by a signal reports the rows it finished; `--resume` writes the rest.
        let suites = [junit_suite(settings, batch_id, &printed)];
        crate::junit::write(path, "cua replay", &suites)?;
        crate::junit::announce(path, &suites);
    }
    if let Some(stopped) = settings.stop.requested() {
        eprintln!(
            "cua: stopped by a signal after {position} of {total} rows; nothing more was dispatched. \
             Resume with the same command and `--resume --run-id {batch_id}`: an interrupted row \
             is decided from its write-ahead intents, never run again blindly"
        );
        return Ok(stopped);
    }
    if format == Format::Json {
        print_envelope(batch_id, &summary, exit);
    }
    Ok(exit)
}

/// The batch's rows as JUnit test cases, in row order: a row that succeeded (an answer, a
/// declared business outcome, a confirmed mutation) passes; one that failed or needs a person
/// fails with its code; an invalid row, which never ran, is an error.
fn junit_suite(settings: &Settings, batch_id: &str, lines: &[RowLine]) -> crate::junit::Suite {
    use crate::junit::{Case, Suite, Verdict};
    let reference = settings.prepared.capability.reference().to_string();
    let cases = lines
        .iter()
        .map(|line| {
            let result = line.result.as_ref();
            let code = result
                .and_then(|result| result["error"]["code"].as_str())
                .unwrap_or(line.status.as_str());
            let message = result
                .and_then(|result| result["error"]["message"].as_str())
                .map(str::to_owned)
                .or_else(|| line.error.clone())
                .unwrap_or_else(|| line.status.clone());
            let verdict = match line.status.as_str() {
                "success" | "business_outcome" | "confirmed" => Verdict::Passed,
                "invalid_row" => Verdict::Error {
                    kind: "invalid_row".to_owned(),
                    message,
                },
                _ => Verdict::Failure {
                    kind: code.to_owned(),
                    message,
                },
            };
            let mut output = String::new();
            if let Some(run_id) = &line.run_id {
                output.push_str(&format!("run {run_id}\n"));
            }
            if let Some(outcome) = result.and_then(|result| result["outcome"]["code"].as_str()) {
                output.push_str(&format!("outcome {outcome}\n"));
            }
            if let Some(evidence) = &line.evidence_dir {
                output.push_str(&format!("evidence {evidence}\n"));
            }
            Case {
                classname: format!("{batch_id}.{reference}"),
                name: format!("row {}", line.row),
                duration_ms: result
                    .and_then(|result| result["duration_ms"].as_u64())
                    .unwrap_or_default(),
                verdict,
                output,
            }
        })
        .collect();
    Suite {
        name: batch_id.to_owned(),
        cases,
        properties: vec![
            ("capability".to_owned(), reference),
            (
                "content_hash".to_owned(),
                settings
                    .prepared
                    .capability
                    .content_hash
                    .as_ref()
                    .map_or_else(|| "draft".to_owned(), ToString::to_string),
            ),
        ],
    }
}

/// With `--format json`, the last line after the rows' lines: one envelope with the batch's
/// summary; not `ok` when a row did not succeed, its error naming how many did not.
fn print_envelope(batch_id: &str, summary: &crate::progress::Summary, exit: Exit) {
    #[derive(Serialize)]
    struct Batch<'a> {
        batch: &'a str,
        #[serde(flatten)]
        summary: &'a crate::progress::Summary,
    }
    let error = (exit != Exit::Success).then(|| {
        let unsuccessful: usize = summary
            .statuses
            .iter()
            .filter(|(status, _)| {
                !matches!(
                    status.as_str(),
                    "success" | "business_outcome" | "confirmed"
                )
            })
            .map(|(_, count)| count)
            .sum();
        crate::error::ErrorCode::RowsUnsuccessful.envelope(format!(
            "{unsuccessful} of {} row(s) did not succeed; each row's line says why",
            summary.done
        ))
    });
    crate::output::emit(
        Format::Json,
        "replay",
        Some(&Batch {
            batch: batch_id,
            summary,
        }),
        error.as_ref(),
        String::new,
    );
}

/// What to do with a row whose earlier attempts (`attempts`, their run ids) were interrupted,
/// decided from their write-ahead intents (and those `journaled` elsewhere): run it again,
/// reconcile its mutation in doubt, or report it (confirmed, or a person's question).
pub(super) fn interrupted_work(
    settings: &Settings,
    row: usize,
    inputs: BTreeMap<String, Value>,
    attempts: &[String],
    journaled: &[Journaled],
) -> Result<Work, Box<RowLine>> {
    let InterruptedRow {
        fate,
        last_intent_run,
    } = cua_replay::interrupted_row(
        &settings.evidence_dir,
        &settings.prepared.capability,
        attempts,
        journaled,
    );
    let count = u32::try_from(attempts.len()).unwrap_or(u32::MAX);
    let evidence = |run_id: &str| settings.evidence_dir.join(run_id).display().to_string();
    let in_doubt_run = last_intent_run
        .clone()
        .unwrap_or_else(|| attempts.last().cloned().unwrap_or_default());
    match fate {
        Interrupted::RunAgain => Ok(Work::Run {
            row,
            inputs,
            attempt: count + 1,
        }),
        Interrupted::Confirmed { step } => Err(Box::new(RowLine {
            row,
            status: "confirmed".to_owned(),
            exit_code: 0,
            evidence_dir: Some(evidence(&in_doubt_run)),
            run_id: Some(in_doubt_run.clone()),
            effect: Some(EffectVerdict::Confirmed),
            result: None,
            error: None,
            settled: Some(format!(
                "attempt {in_doubt_run} was interrupted after its mutation at step `{}` was confirmed; it is not run again (its outputs are in its evidence)",
                step.as_ref().map_or("-", StepId::as_str)
            )),
        })),
        Interrupted::Reconcile(in_doubt) => Ok(Work::Reconcile {
            row,
            inputs,
            in_doubt,
            attempts: count,
            in_doubt_run,
        }),
        Interrupted::NeedsHuman { reason, .. } => Err(Box::new(RowLine::needs_human(
            row,
            Some(in_doubt_run.clone()),
            evidence(&in_doubt_run),
            reason,
        ))),
    }
}

/// Where a batch keeps its rows' attempts: the state file, or a queue's database.
pub(super) trait RowBook: Sync {
    /// The idempotency key of `row`: the same for every attempt at it, and for no other row.
    fn key(&self, row: usize) -> String;

    /// Records that attempt `attempt` at `row` starts as run `run_id`, or says why it could not
    /// be recorded: then nothing runs, since a later decision about the row must know of it.
    fn started<'a>(
        &'a self,
        row: usize,
        attempt: u32,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<(), NotStarted>>;
}

/// Why an attempt was not started (nothing ran).
pub(super) enum NotStarted {
    /// The row fails, for this reason.
    Failed(String),
    /// The row is not this process's to finish (a queue's claim was lost): it is given back.
    GiveBack,
}

/// The single-machine batch's book: its state file.
struct FileBook<'a> {
    state: &'a BatchState,
    batch_id: &'a str,
}

impl RowBook for FileBook<'_> {
    fn key(&self, row: usize) -> String {
        self.state.key(self.batch_id, row)
    }

    fn started<'a>(
        &'a self,
        row: usize,
        _attempt: u32,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<(), NotStarted>> {
        let written = self
            .state
            .write(&StateLine::Started {
                row,
                run_id: run_id.to_owned(),
            })
            .map_err(|error| {
                NotStarted::Failed(format!(
                    "the batch's state file {} could not be written: {error}",
                    self.state.path().display()
                ))
            });
        Box::pin(std::future::ready(written))
    }
}

/// What one row's work runs with.
pub(super) struct RowRun<'a> {
    pub(super) settings: &'a Settings,
    pub(super) surface: &'a ChromiumSurface,
    pub(super) book: &'a dyn RowBook,
    pub(super) batch_id: &'a str,
    /// A queue claim's lease and intent journal; none for the single-machine batch.
    pub(super) fence: Option<&'a RowFence>,
}

/// Runs one piece of work.
pub(super) async fn work_row(run: &RowRun<'_>, work: Work) -> Worked {
    let RowRun {
        settings,
        surface,
        book,
        batch_id,
        fence,
    } = *run;
    let (row, inputs, attempt) = match work {
        Work::Run {
            row,
            inputs,
            attempt,
        } => (row, inputs, attempt),
        Work::Reconcile {
            row,
            inputs,
            in_doubt,
            attempts,
            in_doubt_run,
        } => {
            let in_doubt_dir = settings
                .evidence_dir
                .join(&in_doubt_run)
                .display()
                .to_string();
            let inputs = cua_replay::with_idempotency_key(
                &settings.prepared.capability,
                inputs,
                &book.key(row),
            );
            let (answer, reconcile_run) = reconcile_row(
                settings,
                surface,
                batch_id,
                row,
                &in_doubt.reconcile,
                &inputs,
            )
            .await;
            if settings.stop.requested().is_some() && matches!(answer, Reconciliation::Unknown(_)) {
                // The signal, not the application, cut the question short: ask again later.
                return Worked::Interrupted;
            }
            let asked = format!(
                "the mutation at step `{}` of attempt {in_doubt_run} was in doubt; {} (run {reconcile_run}) answered {}",
                in_doubt.step,
                in_doubt.reconcile.capability,
                answer.as_str()
            );
            match cua_replay::after_reconciliation(&answer, &in_doubt, &asked) {
                Settled::Confirmed(note) => {
                    return Worked::Line(RowLine {
                        row,
                        status: "confirmed".to_owned(),
                        exit_code: 0,
                        run_id: Some(in_doubt_run),
                        effect: Some(EffectVerdict::Confirmed),
                        evidence_dir: Some(in_doubt_dir),
                        result: None,
                        error: None,
                        settled: Some(note),
                    });
                }
                Settled::RunAgain => (row, inputs, attempts + 1),
                Settled::NeedsHuman(reason) => {
                    return Worked::Line(RowLine::needs_human(
                        row,
                        Some(in_doubt_run),
                        in_doubt_dir,
                        reason,
                    ));
                }
            }
        }
    };
    let run_id = cua_replay::attempt_run_id(batch_id, row, attempt);
    let run_dir = settings.evidence_dir.join(&run_id);
    // No attempt without its record: a later decision about the row must know to look at it.
    if let Err(not_started) = book.started(row, attempt, &run_id).await {
        let error = match not_started {
            NotStarted::Failed(error) => error,
            NotStarted::GiveBack => return Worked::Interrupted,
        };
        return Worked::Line(RowLine {
            row,
            status: "failed".to_owned(),
            exit_code: Exit::Failed as u8,
            run_id: None,
            effect: None,
            evidence_dir: None,
            result: None,
            error: Some(format!("nothing was run: {error}")),
            settled: None,
        });
    }
    let attempt = Attempt {
        row: Some(row as u64),
        attempt,
        idempotency_key: book.key(row),
    };
    match replay_once(settings, surface, &run_id, inputs, Some(attempt), fence).await {
        Ok(report)
            if report
                .result
                .error
                .as_ref()
                .is_some_and(|error| error.code == FailureCode::Interrupted) =>
        {
            Worked::Interrupted
        }
        Ok(report) => Worked::Line(RowLine {
            row,
            status: report.result.status.as_str().to_owned(),
            exit_code: exit_of(&report) as u8,
            run_id: Some(run_id),
            effect: Some(report.effect),
            evidence_dir: Some(report.evidence_dir.display().to_string()),
            result: serde_json::to_value(&report.result).ok(),
            error: None,
            settled: None,
        }),
        // The run broke off (its evidence could not be written, say): if it had announced a
        // mutation, "failed" would read as "nothing happened".
        Err(failure) => match cua_replay::announced_mutations(&run_dir) {
            Some(mutations) => Worked::Line(RowLine::needs_human(
                row,
                Some(run_id),
                run_dir.display().to_string(),
                format!(
                    "{}; the run had announced the mutation(s) {mutations}, so check the application before running the row again",
                    failure.message()
                ),
            )),
            None => Worked::Line(RowLine {
                row,
                status: "failed".to_owned(),
                exit_code: failure.exit() as u8,
                evidence_dir: Some(run_dir.display().to_string()),
                run_id: Some(run_id),
                effect: None,
                result: None,
                error: Some(failure.message().to_owned()),
                settled: None,
            }),
        },
    }
}

/// Records a finished row. A failure here is reported, not fatal: the row's line is still
/// printed, and a resume that finds no `done` decides the row from its intents.
fn record_done(state: &BatchState, line: &RowLine) {
    if let Err(error) = state.write(&StateLine::Done {
        row: line.row,
        line: line.clone(),
    }) {
        let _ = writeln!(
            std::io::stderr(),
            "cua: row {} finished but {} could not record it: {error}",
            line.row,
            state.path().display()
        );
    }
}

/// 128 random bits, hex: the batch's nonce.
pub(super) fn nonce() -> Result<String, CliError> {
    let mut bytes = [0_u8; 32];
    cua_replay::SystemEntropy
        .fill(&mut bytes)
        .map_err(|error| {
            CliError::new(
                ErrorCode::Internal,
                format!("no randomness for the batch's nonce: {error}"),
            )
        })?;
    Ok(bytes[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// Rows that give the capability's idempotency-key input a value an earlier row already gave:
/// one key names one mutation, so a second row with it could be taken for the first.
pub(super) fn duplicate_keys(
    settings: &Settings,
    rows: &[(usize, ParsedRow)],
) -> BTreeMap<usize, String> {
    let mut first: BTreeMap<String, usize> = BTreeMap::new();
    let mut duplicates = BTreeMap::new();
    for (row, parsed) in rows {
        let Ok(inputs) = parsed else { continue };
        let Some(key) = cua_replay::idempotency_value(&settings.prepared.capability, inputs) else {
            continue;
        };
        match first.get(&key) {
            Some(earlier) => {
                duplicates.insert(
                    *row,
                    format!("its idempotency key repeats row {earlier}'s; give each row its own, or none"),
                );
            }
            None => {
                first.insert(key, *row);
            }
        }
    }
    duplicates
}

/// Runs the in-doubt step's reconciliation on `surface`: the named capability, loaded like a
/// remedy (its tenant binding and approval), refused unless no step declares a mutation, run
/// read-only (anything assessed above `safe` is refused at its dispatch), with inputs bound
/// from the row. Returns its answer and its run id.
async fn reconcile_row(
    settings: &Settings,
    surface: &ChromiumSurface,
    batch_id: &str,
    row: usize,
    reconcile: &Reconcile,
    inputs: &BTreeMap<String, Value>,
) -> (Reconciliation, String) {
    let run_id = format!("{batch_id}-row-{row}-reconcile-{}", fresh_run_id());
    let prepared = match settings.loader.load(&reconcile.capability) {
        Ok(prepared) => prepared,
        Err(reason) => return (Reconciliation::Unknown(reason), run_id),
    };
    if let Err(reason) = cua_replay::check_read_only(&prepared.capability) {
        return (Reconciliation::Unknown(reason), run_id);
    }
    let bound = match cua_replay::reconcile_inputs(reconcile, inputs) {
        Ok(bound) => bound,
        Err(reason) => return (Reconciliation::Unknown(reason), run_id),
    };
    let mut request = cua_replay::RunRequest::new(prepared, bound);
    request.tenant = settings.tenant.clone();
    match super::replay_request(
        settings,
        surface,
        &run_id,
        request,
        None,
        Dispatches::ReadsOnly,
        None,
    )
    .await
    {
        Ok(report) => (cua_replay::judge(reconcile, &report), run_id),
        Err(failure) => (
            Reconciliation::Unknown(failure.message().to_owned()),
            run_id,
        ),
    }
}

/// A rows file's text and its rows, numbered from 1 by line (blank lines are no rows).
pub(super) fn read_rows(path: &Path) -> Result<(String, Vec<(usize, ParsedRow)>), CliError> {
    let text = cua_fs::read_to_string_bounded(path, limits::ROWS)
        .map_err(|error| CliError::unread(path, &error))?;
    let rows = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| (index + 1, parse_row(line)))
        .collect();
    Ok((text, rows))
}

fn parse_row(line: &str) -> Result<BTreeMap<String, Value>, String> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(object)) => Ok(object.into_iter().collect()),
        Ok(_) => Err("a row must be a JSON object of inputs".to_owned()),
        Err(error) => Err(format!("not JSON: {error}")),
    }
}

/// The batch id, checked: a run id, with room for the longest run id its rows derive from it
/// (`<id>-row-<n>-reconcile-<fresh id>`), since each names a directory in the evidence root.
pub(super) fn check_batch_id(batch_id: &str, last_row: usize) -> Result<String, CliError> {
    RunId::parse(batch_id).map_err(|error| CliError::usage(error.to_string()))?;
    let longest = format!("{batch_id}-row-{last_row}-reconcile-{}", fresh_run_id());
    if RunId::parse(&longest).is_err() {
        return Err(CliError::usage(format!(
            "invalid run id `{batch_id}`: too long for a batch, whose rows' run ids (such as \
             `{longest}`) must be at most 128 characters; pass a shorter --run-id"
        )));
    }
    Ok(batch_id.to_owned())
}

/// The state file of a batch, in the evidence root.
fn state_file(batch_id: &str) -> String {
    format!("{batch_id}.batch.jsonl")
}

/// A file of the batch that was refused for what is at its path (a link, a device, another
/// user's file) is the user's to fix (exit 2); one that could not be written failed.
pub(super) fn refused(error: cua_fs::FsError) -> CliError {
    CliError::unwritten(&error, ErrorCode::EvidenceUnwritable)
}

/// A batch id from the rows file's name (and the shard), so `--resume` finds its state.
pub(super) fn batch_id_for(rows_path: &Path, shard: Option<Shard>) -> String {
    let stem = rows_path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    cua_replay::batch_id(&stem, shard)
}

/// The worse of two exit codes for a batch: 69 > 1 > 2 > 3 > 0.
fn worse(current: Exit, line: &RowLine) -> Exit {
    let rank = |exit: Exit| match exit {
        Exit::Success => 0,
        Exit::NeedsHuman => 1,
        Exit::Usage => 2,
        Exit::Failed => 3,
        Exit::Unavailable => 4,
        Exit::Interrupted | Exit::Terminated => 5,
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
