//! `cua batch submit|status|results` and `cua worker`: one batch replayed by workers on any
//! number of machines through a PostgreSQL queue (`cua-queue`).
//!
//! A worker claims a row, holds it under a lease its heartbeat renews, and runs it exactly as
//! `cua replay --inputs` runs a row (`batch::work_row`), with two additions: every write-ahead
//! intent must also reach the queue's journal, fenced by the claim's epoch, before its mutation
//! may leave; and when the heartbeat finds the claim lost (or cannot renew it before it runs
//! out by this machine's clock), the run's session lease is taken away, so the gate refuses
//! the next dispatch. A row claimed again is decided from its attempts and from the intents
//! the journal holds for them (`batch::interrupted_work`): a mutation in doubt is reconciled,
//! never dispatched again blindly.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cua_artifact::{Actor, CapabilityApproval, ContentHash};
use cua_chromium::ChromiumSurface;
use cua_policy::Lease;
use cua_queue::{BatchStatus, Claim, Finished, JournalClient, NewBatch, NewJob, Queue, QueueError};
use cua_replay::Journaled;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;

use super::batch::{
    NotStarted, RowBook, RowLine, RowRun, Work, Worked, batch_id_for, check_batch_id,
    duplicate_keys, interrupted_work, nonce, read_rows, work_row,
};
use super::{RowFence, Settings, Stop, fresh_run_id, launch, watch_signals};
use crate::cli::{
    BatchQueryArgs, BatchSubmitArgs, BindArgs, CatalogPaths, Format, PolicyFile, PoolKind,
    ReplayArgs, RunsDir, WorkerArgs,
};
use crate::error::{CliError, ErrorCode, runtime};
use crate::output::{Exit, emit};

/// How often an idle worker asks for work.
const POLL: Duration = Duration::from_secs(1);

/// `cua batch submit`.
pub(crate) fn submit(format: Format, args: &BatchSubmitArgs) -> Result<Exit, CliError> {
    let replay = replay_args(
        &args.capability,
        args.bind.clone(),
        &args.policy,
        // The submitter writes no evidence: each worker's own --evidence-dir does.
        RunsDir {
            dir: Some(std::path::PathBuf::new()),
        },
        &args.paths,
    );
    // The submitter need not hold the secrets: the workers read them.
    let settings = Settings::from_args_with(&replay, None, false)?;
    let content_hash = base_hash(&settings).ok_or_else(|| {
        CliError::new(
            ErrorCode::Refused,
            format!(
                "{} is a draft: a batch runs a sealed capability only (`cua seal` it, and review it)",
                settings.prepared.capability.reference()
            ),
        )
    })?;
    let (text, rows) = read_rows(&args.rows)?;
    let last_row = rows.last().map_or(1, |(row, _)| *row);
    let id = match &args.id {
        Some(id) => check_batch_id(id, last_row)?,
        None => check_batch_id(
            &format!("{}-{}", batch_id_for(&args.rows, None), fresh_run_id()),
            last_row,
        )?,
    };
    let nonce = nonce()?;
    let duplicates = duplicate_keys(&settings, &rows);
    let key =
        |row: usize| cua_evidence::idempotency_key(&format!("{id}/{nonce}"), Some(row as u64));
    let mut invalid = 0_usize;
    let jobs: Vec<NewJob> = rows
        .into_iter()
        .map(|(row, parsed)| {
            let reason = match (parsed, duplicates.get(&row)) {
                (Ok(inputs), None) => {
                    return NewJob::Run {
                        row: to_u32(row),
                        inputs: Value::Object(inputs.into_iter().collect()),
                        idempotency_key: key(row),
                    };
                }
                (Ok(_), Some(reason)) => reason.clone(),
                (Err(reason), _) => reason,
            };
            invalid += 1;
            let line = RowLine::invalid(row, reason);
            NewJob::Finished {
                row: to_u32(row),
                idempotency_key: key(row),
                status: line.status.clone(),
                exit_code: line.exit_code,
                line: serde_json::to_value(&line).unwrap_or(Value::Null),
            }
        })
        .collect();
    let approval = settings
        .prepared
        .approval
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|error| CliError::new(ErrorCode::Internal, error.to_string()))?;
    let batch = NewBatch {
        id: id.clone(),
        capability: settings.prepared.capability.reference().to_string(),
        content_hash: content_hash.to_string(),
        tenant: settings.tenant.as_ref().map(ToString::to_string),
        base_url: args
            .bind
            .base_url
            .as_ref()
            .map(|origin| origin.as_str().to_owned()),
        effective_digest: effective_digest(&settings)?,
        approval,
        allow_irreversible: args.bind.allow_irreversible,
        rows_digest: format!("blake3:{}", blake3::hash(text.as_bytes()).to_hex()),
    };
    let (submitted_batch, submitted_jobs) = (&batch, &jobs);
    on_queue(&args.queue.url, |queue| async move {
        queue.submit(submitted_batch, submitted_jobs).await
    })?;
    let submitted = serde_json::json!({
        "batch_id": id,
        "capability": batch.capability,
        "content_hash": batch.content_hash,
        "tenant": batch.tenant,
        "rows": jobs.len(),
        "jobs": jobs.len() - invalid,
        "invalid_rows": invalid,
    });
    emit(format, "batch submit", Some(&submitted), None, || {
        format!(
            "submitted {id}: {} rows of {} ({} to run, {invalid} invalid)\n",
            jobs.len(),
            batch.capability,
            jobs.len() - invalid
        )
    });
    Ok(Exit::Success)
}

/// Connects to the queue at `url` and does `work` with it, on the command's runtime.
fn on_queue<T, F, Fut>(url: &str, work: F) -> Result<T, CliError>
where
    F: FnOnce(Queue) -> Fut,
    Fut: std::future::Future<Output = Result<T, QueueError>>,
{
    runtime()?.block_on(async {
        let queue = Queue::connect(url).await.map_err(queue_error)?;
        work(queue).await.map_err(queue_error)
    })
}

/// `cua batch status`.
pub(crate) fn status(format: Format, args: &BatchQueryArgs) -> Result<Exit, CliError> {
    let status = on_queue(&args.queue.url, |queue| async move {
        queue.status(&args.batch).await
    })?;
    emit(format, "batch status", Some(&status), None, || {
        render_status(&status)
    });
    Ok(Exit::Success)
}

/// `cua batch results`: one line per finished row on stdout, as `cua replay --inputs` prints.
pub(crate) fn results(format: Format, args: &BatchQueryArgs) -> Result<Exit, CliError> {
    let lines = on_queue(&args.queue.url, |queue| async move {
        queue.results(&args.batch).await
    })?;
    match format {
        Format::Json => emit(format, "batch results", Some(&lines), None, String::new),
        Format::Text => {
            let mut stdout = std::io::stdout().lock();
            for line in &lines {
                let _ = writeln!(
                    stdout,
                    "{}",
                    serde_json::to_string(line).unwrap_or_default()
                );
            }
        }
    }
    Ok(Exit::Success)
}

/// `cua worker`.
pub(crate) fn worker(_format: Format, args: &WorkerArgs) -> Result<Exit, CliError> {
    let worker_id = match &args.worker_id {
        Some(name) => check_worker_id(name)?,
        None => check_worker_id(&default_worker_id())?,
    };
    if args.concurrency == 0 || args.concurrency > 16 {
        return Err(CliError::usage("--concurrency must be 1 to 16"));
    }
    if !(3..=3600).contains(&args.lease_seconds) {
        return Err(CliError::usage("--lease-seconds must be 3 to 3600"));
    }
    if !(1..=3600).contains(&args.grace_seconds) {
        return Err(CliError::usage("--grace-seconds must be 1 to 3600"));
    }
    let mut args = args.clone();
    args.paths = args.paths.resolved()?;
    args.policy = args.policy.resolved()?;
    args.evidence = args.evidence.resolved()?;
    let runs_dir = args.evidence.dir()?;
    let stop = Stop::default();
    let runtime = runtime()?;
    runtime.spawn(watch_signals(stop.clone()));
    runtime.block_on(run_worker(args, runs_dir, worker_id, stop))
}

/// How long a worker keeps a batch's settings before reading its files again, so a revoked
/// approval is seen within this long.
const SETTINGS_TTL: Duration = Duration::from_secs(30);

/// How long a worker keeps trying a queue that cannot be reached before it gives up.
const UNREACHABLE_FOR: Duration = Duration::from_secs(60);

/// The worker's slots, each a task of its own claiming and running rows until the queue is
/// drained or a signal stops it.
async fn run_worker(
    args: WorkerArgs,
    runs_dir: std::path::PathBuf,
    worker_id: String,
    stop: Stop,
) -> Result<Exit, CliError> {
    let queue = Queue::connect(&args.queue.url).await.map_err(queue_error)?;
    let journal = queue.journal_client().map_err(queue_error)?;
    let worker = Arc::new(Worker {
        lease: Duration::from_secs(args.lease_seconds),
        grace: Duration::from_secs(args.grace_seconds),
        args,
        runs_dir,
        queue,
        journal,
        stop: stop.clone(),
        batches: Mutex::new(HashMap::new()),
        skipped: Mutex::new(BTreeMap::new()),
    });
    let concurrency = worker.args.concurrency;
    let slots: Vec<_> = (1..=concurrency)
        .map(|slot| {
            let name = if concurrency == 1 {
                worker_id.clone()
            } else {
                format!("{worker_id}.{slot}")
            };
            let worker = Arc::clone(&worker);
            tokio::spawn(async move { worker.slot(&name).await })
        })
        .collect();
    let mut done: BTreeMap<String, usize> = BTreeMap::new();
    let mut failure = None;
    for slot in slots {
        match slot.await {
            Ok(Ok(counts)) => {
                for (status, count) in counts {
                    *done.entry(status).or_insert(0) += count;
                }
            }
            Ok(Err(error)) => failure = failure.or(Some(error)),
            Err(error) => {
                failure = failure.or(Some(CliError::new(
                    ErrorCode::Internal,
                    format!("a worker slot ended abnormally: {error}"),
                )));
            }
        }
    }
    let counts: Vec<String> = done
        .iter()
        .map(|(status, count)| format!("{status} {count}"))
        .collect();
    eprintln!(
        "cua worker {worker_id}: {} rows finished ({})",
        done.values().sum::<usize>(),
        if counts.is_empty() {
            "none".to_owned()
        } else {
            counts.join(", ")
        }
    );
    if let Some(error) = failure {
        return Err(error);
    }
    let skipped = worker
        .skipped
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if !skipped.is_empty() {
        let reasons: Vec<String> = skipped
            .iter()
            .map(|(batch, reason)| format!("batch {batch}: {reason}"))
            .collect();
        return Err(CliError::new(
            ErrorCode::Refused,
            format!(
                "rows were left for another worker; this one refused to run them: {}",
                reasons.join("; ")
            ),
        ));
    }
    Ok(stop.requested().unwrap_or(Exit::Success))
}

/// What every slot of one worker shares.
struct Worker {
    /// Its paths resolved against the project once, at start.
    args: WorkerArgs,
    /// Where its runs' directories go.
    runs_dir: std::path::PathBuf,
    queue: Queue,
    journal: Arc<JournalClient>,
    stop: Stop,
    lease: Duration,
    /// How long after a lease ran out its row may be taken.
    grace: Duration,
    /// Each batch's settings as this worker's files made them, and when.
    batches: Mutex<HashMap<String, (Instant, Arc<Settings>)>>,
    /// Batches this worker refuses to run, and why: their rows stay queued for a worker whose
    /// catalog, tenants, policy and secrets match what was submitted.
    skipped: Mutex<BTreeMap<String, String>>,
}

/// What happened to one claim.
enum Held {
    /// The row finished with this line.
    Line(Box<RowLine>),
    /// The row is not this worker's to finish (a signal, a queue that could not be read, a
    /// lost claim): it is given back, and decided again from its attempts and intents.
    GiveBack,
    /// This worker refuses the row's batch: the row is given back and the batch skipped.
    Skip(String),
    /// The worker cannot go on (its browser does not start): the row is given back.
    Fatal(CliError),
}

impl Worker {
    fn skipped(&self) -> Vec<String> {
        self.skipped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// One slot: claim, run, finish, until nothing is left (with --drain) or a signal.
    async fn slot(&self, name: &str) -> Result<BTreeMap<String, usize>, CliError> {
        let mut counts = BTreeMap::new();
        let mut browser: Option<(String, ChromiumSurface)> = None;
        let mut unreachable_since: Option<Instant> = None;
        let outcome = loop {
            if self.stop.interrupt.is_raised() {
                break Ok(());
            }
            let claimed_at = Instant::now();
            let skipped = self.skipped();
            let claim = match self
                .queue
                .claim(
                    name,
                    self.args.batch.as_deref(),
                    &skipped,
                    self.lease,
                    self.grace,
                )
                .await
            {
                Ok(Some(claim)) => claim,
                Ok(None) => {
                    if self.args.drain {
                        match self
                            .queue
                            .open_rows(self.args.batch.as_deref(), &skipped)
                            .await
                        {
                            Ok(0) => break Ok(()),
                            Ok(_) => {}
                            Err(error) => break Err(queue_error(error)),
                        }
                    }
                    tokio::time::sleep(POLL).await;
                    continue;
                }
                // A queue failing over or restarting: keep trying for a while.
                Err(error) if error.is_unavailable() => {
                    let since = *unreachable_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= UNREACHABLE_FOR {
                        break Err(queue_error(error));
                    }
                    eprintln!("cua worker {name}: {error}; trying again");
                    tokio::time::sleep(POLL * 2).await;
                    continue;
                }
                Err(error) => break Err(queue_error(error)),
            };
            unreachable_since = None;
            // The lease runs from the claim: the heartbeat covers reading the batch and
            // starting its browser as well as the run.
            let session = Arc::new(Mutex::new(Lease::new(Actor::Automation)));
            let work = async {
                let settings = match self.settings(&claim.batch_id).await {
                    Ok(Ok(settings)) => settings,
                    Ok(Err(reason)) => return Held::Skip(reason),
                    // The queue could not say what the batch is: not the batch's fault.
                    Err(error) => {
                        eprintln!(
                            "cua worker {name}: batch {} row {}: {error}; the row is given back",
                            claim.batch_id, claim.row
                        );
                        return Held::GiveBack;
                    }
                };
                if browser
                    .as_ref()
                    .is_none_or(|(batch, _)| *batch != claim.batch_id)
                {
                    if let Some((_, surface)) = browser.take() {
                        surface.close().await;
                    }
                    let allowlist = match settings.browser_allowlist() {
                        Ok(allowlist) => allowlist,
                        Err(error) => return Held::Skip(error.message().to_owned()),
                    };
                    match launch(allowlist).await {
                        Ok(surface) => browser = Some((claim.batch_id.clone(), surface)),
                        Err(error) => return Held::Fatal(error),
                    }
                }
                let Some((_, surface)) = &browser else {
                    return Held::GiveBack;
                };
                self.work(&claim, &settings, surface, &session).await
            };
            match self.hold(&claim, claimed_at, &session, work).await {
                Held::Line(line) => {
                    eprintln!(
                        "cua worker {name}: batch {} row {}: {} (epoch {})",
                        claim.batch_id, claim.row, line.status, claim.epoch
                    );
                    self.finish(&claim, &line).await;
                    *counts.entry(line.status.clone()).or_insert(0) += 1;
                }
                Held::GiveBack => {
                    let _ = self.queue.release(&claim).await;
                    // Not straight back to the same row.
                    tokio::time::sleep(POLL).await;
                }
                Held::Skip(reason) => {
                    eprintln!(
                        "cua worker {name}: refusing batch {}: {reason}; its rows stay queued",
                        claim.batch_id
                    );
                    let _ = self.queue.release(&claim).await;
                    self.skipped
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(claim.batch_id.clone(), reason);
                }
                Held::Fatal(error) => {
                    let _ = self.queue.release(&claim).await;
                    break Err(error);
                }
            }
        };
        if let Some((_, surface)) = browser {
            surface.close().await;
        }
        outcome.map(|()| counts)
    }

    /// The settings of `batch` as this worker's catalog, tenants and policy make them (read
    /// again after [`SETTINGS_TTL`]), or why this worker refuses its rows. The outer error is
    /// a queue that could not be read: nothing is decided then.
    async fn settings(&self, batch_id: &str) -> Result<Result<Arc<Settings>, String>, QueueError> {
        if let Some((read_at, settings)) = self
            .batches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(batch_id)
            && read_at.elapsed() < SETTINGS_TTL
        {
            return Ok(Ok(Arc::clone(settings)));
        }
        let Some(cua_queue::BatchRecord { batch, .. }) = self.queue.batch(batch_id).await? else {
            return Ok(Err(format!("batch {batch_id} is not in the queue")));
        };
        let settings = match self.settings_for(&batch) {
            Ok(settings) => Arc::new(settings),
            Err(reason) => return Ok(Err(reason)),
        };
        self.batches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(batch_id.to_owned(), (Instant::now(), Arc::clone(&settings)));
        Ok(Ok(settings))
    }

    /// Builds a batch's settings and holds them against what was submitted: the capability's
    /// content hash, the capability as bound (overlay and base URL applied), and the approval,
    /// which this worker's own catalog must record as it was submitted: the database is not
    /// an approval authority.
    fn settings_for(&self, batch: &NewBatch) -> Result<Settings, String> {
        let approval: Option<CapabilityApproval> = batch
            .approval
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|error| format!("the batch's approval cannot be read: {error}"))?;
        let base_url = batch
            .base_url
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|error| format!("the batch's base URL: {error}"))?;
        let replay = replay_args(
            &batch.capability,
            BindArgs {
                tenant: batch.tenant.clone(),
                base_url,
                allow_irreversible: batch.allow_irreversible,
                approval: None,
            },
            &self.args.policy,
            self.args.evidence.clone(),
            &self.args.paths,
        );
        let tenant = replay
            .bind
            .tenant
            .as_deref()
            .map(cua_artifact::TenantId::parse)
            .transpose()
            .map_err(|error| error.to_string())?;
        let reference = cua_artifact::CapabilityRef::parse(&batch.capability)
            .map_err(|error| error.to_string())?;
        let recorded = super::recorded_approval(&self.args.paths, tenant.as_ref(), &reference)
            .map_err(|error| error.message().to_owned())?;
        if let Some(submitted) = &approval
            && recorded.as_ref() != Some(submitted)
        {
            return Err(match &recorded {
                None => format!(
                    "the batch was submitted under an approval of {} that this worker's catalog \
                     does not record: approve it in the catalog the workers read",
                    batch.capability
                ),
                Some(now) => format!(
                    "the approval of {} changed since the batch was submitted (now {})",
                    batch.capability,
                    format!("{:?}", now.state).to_lowercase()
                ),
            });
        }
        let mut settings = Settings::from_args_with(&replay, approval, true)
            .map_err(|error| error.message().to_owned())?;
        settings.stop = self.stop.clone();
        let hash = base_hash(&settings).map_or_else(|| "a draft".to_owned(), ToString::to_string);
        if hash != batch.content_hash {
            return Err(format!(
                "the capability {} is {hash} in this worker's catalog, but the batch was submitted \
                 at {}",
                batch.capability, batch.content_hash
            ));
        }
        let digest = effective_digest(&settings).map_err(|error| error.message().to_owned())?;
        if digest != batch.effective_digest {
            return Err(format!(
                "the capability {} binds differently here (tenant {}, base URL {}) than when the \
                 batch was submitted: its overlay changed",
                batch.capability,
                batch.tenant.as_deref().unwrap_or("none"),
                batch.base_url.as_deref().unwrap_or("none")
            ));
        }
        Ok(settings)
    }

    /// Runs `work` for a claimed row under its lease: the heartbeat renews it meanwhile, and
    /// takes the session's lease away when the claim is lost, so nothing more is dispatched
    /// for it. A row whose claim was lost is given back whatever the run made of it: the
    /// row is someone else's to decide now, from its intents.
    async fn hold(
        &self,
        claim: &Claim,
        claimed_at: Instant,
        session: &Mutex<Lease>,
        work: impl std::future::Future<Output = Held>,
    ) -> Held {
        tokio::pin!(work);
        let heartbeat = self.heartbeat(claim, claimed_at, session);
        tokio::pin!(heartbeat);
        tokio::select! {
            held = &mut work => held,
            () = &mut heartbeat => {
                // The session's lease is gone: the run's next dispatch is refused, and it ends.
                match work.await {
                    Held::Fatal(error) => Held::Fatal(error),
                    _ => Held::GiveBack,
                }
            }
        }
    }

    /// Renews the claim's lease every third of its length. Returns, with the session's lease
    /// taken away, once the queue says the claim is lost, or once the lease has run out by
    /// this machine's clock without a renewal.
    async fn heartbeat(&self, claim: &Claim, claimed_at: Instant, session: &Mutex<Lease>) {
        let period = self.lease / 3;
        // The lease runs from when the database granted it, which is after `claimed_at`: this
        // deadline is never later than the database's.
        let mut deadline = claimed_at + self.lease;
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            tokio::time::sleep_until((now + period).min(deadline)).await;
            let sent = Instant::now();
            if sent >= deadline {
                break;
            }
            match tokio::time::timeout(deadline - sent, self.queue.renew(claim, self.lease)).await {
                Ok(Ok(true)) => deadline = sent + self.lease,
                Ok(Ok(false)) => break,
                // The queue did not answer: try again until the lease runs out.
                Ok(Err(_)) | Err(_) => {}
            }
        }
        session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .transfer(Actor::System);
        eprintln!(
            "cua worker {}: batch {} row {}: the claim at epoch {} is lost; nothing more is dispatched for it",
            claim.worker, claim.batch_id, claim.row, claim.epoch
        );
    }

    /// Decides the row from its earlier attempts and journaled intents, then runs it.
    async fn work(
        &self,
        claim: &Claim,
        settings: &Settings,
        surface: &ChromiumSurface,
        session: &Arc<Mutex<Lease>>,
    ) -> Held {
        let (attempts, journaled) = match (
            self.queue.attempts(claim).await,
            self.queue.journaled(claim).await,
        ) {
            (Ok(attempts), Ok(journaled)) => (attempts, journaled),
            (Err(error @ QueueError::Corrupt { .. }), _)
            | (_, Err(error @ QueueError::Corrupt { .. })) => {
                // What another worker wrote cannot be read: whether it announced a mutation
                // is unknown, and trying again would not change that.
                return Held::Line(Box::new(RowLine::needs_human(
                    claim.row as usize,
                    None,
                    self.runs_dir.display().to_string(),
                    format!("{error}; check the application before running the row again"),
                )));
            }
            (Err(error), _) | (_, Err(error)) => {
                eprintln!(
                    "cua worker {}: batch {} row {}: {error}; the row is given back",
                    claim.worker, claim.batch_id, claim.row
                );
                return Held::GiveBack;
            }
        };
        let row = claim.row as usize;
        let inputs: BTreeMap<String, Value> = match &claim.inputs {
            Value::Object(object) => object.clone().into_iter().collect(),
            _ => {
                return Held::Line(Box::new(RowLine::invalid(
                    row,
                    "the queue holds no inputs for this row".to_owned(),
                )));
            }
        };
        let work = if attempts.is_empty() {
            Work::Run {
                row,
                inputs,
                attempt: 1,
            }
        } else {
            let run_ids: Vec<String> = attempts
                .iter()
                .map(|attempt| attempt.run_id.clone())
                .collect();
            let journaled: Vec<Journaled> = journaled
                .into_iter()
                .map(|journaled| Journaled {
                    run_id: journaled.run_id,
                    seq: journaled.seq,
                    intent: journaled.intent,
                })
                .collect();
            match interrupted_work(settings, row, inputs, &run_ids, &journaled) {
                Ok(work) => work,
                Err(line) => return Held::Line(line),
            }
        };
        let book = QueueBook {
            queue: &self.queue,
            claim,
            settings,
        };
        let fence = RowFence {
            lease: Arc::clone(session),
            // An intent is taken only while a third of the lease is left for its dispatch.
            journal: self.journal.for_claim(claim, self.lease / 3),
        };
        let run = RowRun {
            settings,
            surface,
            book: &book,
            batch_id: &claim.batch_id,
            fence: Some(&fence),
        };
        match work_row(&run, work).await {
            Worked::Line(line) => Held::Line(Box::new(line)),
            Worked::Interrupted => Held::GiveBack,
        }
    }

    /// Records the row's line, with what its attempts' traces say of its journaled intents. A
    /// refusal (another worker holds the row now) is reported, not fatal: that worker decides
    /// the row again from its intents.
    async fn finish(&self, claim: &Claim, line: &RowLine) {
        let intents = match self.queue.journaled(claim).await {
            Ok(journaled) => settled_intents(&self.runs_dir, &journaled),
            Err(_) => Vec::new(),
        };
        let error_code = line
            .result
            .as_ref()
            .and_then(|result| result.pointer("/error/code"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let finished = Finished {
            status: line.status.clone(),
            exit_code: line.exit_code,
            error_code,
            line: serde_json::to_value(line).unwrap_or(Value::Null),
            intents,
        };
        if let Err(error) = self.queue.finish(claim, &finished).await {
            eprintln!("cua worker {}: {error}", claim.worker);
        }
    }
}

/// The queue's book of a claimed row: its key as submitted, its attempts in the database.
struct QueueBook<'a> {
    queue: &'a Queue,
    claim: &'a Claim,
    settings: &'a Settings,
}

impl RowBook for QueueBook<'_> {
    fn key(&self, _row: usize) -> String {
        self.claim.idempotency_key.clone()
    }

    fn started<'a>(
        &'a self,
        _row: usize,
        attempt: u32,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<(), NotStarted>> {
        Box::pin(async move {
            let evidence_dir = self.settings.evidence_dir.join(run_id);
            // Fenced or unreachable, nothing ran: the row is decided again by whoever holds it.
            self.queue
                .start_attempt(
                    self.claim,
                    attempt,
                    run_id,
                    &evidence_dir.display().to_string(),
                )
                .await
                .map_err(|error| {
                    eprintln!(
                        "cua worker {}: batch {} row {}: {error}; the row is given back",
                        self.claim.worker, self.claim.batch_id, self.claim.row
                    );
                    NotStarted::GiveBack
                })
        })
    }
}

/// For each journaled intent whose attempt's trace is readable, the state the trace gives it.
fn settled_intents(
    evidence_root: &std::path::Path,
    journaled: &[cua_queue::JournaledIntent],
) -> Vec<(String, u64, cua_evidence::IntentState)> {
    let mut traces: HashMap<&str, Vec<cua_evidence::IntentRecord>> = HashMap::new();
    let mut settled = Vec::new();
    for entry in journaled {
        let records = traces.entry(entry.run_id.as_str()).or_insert_with(|| {
            cua_evidence::read_trace(&evidence_root.join(&entry.run_id))
                .map(|trace| cua_evidence::intents(&trace))
                .unwrap_or_default()
        });
        if let Some(record) = records.iter().find(|record| record.seq == entry.seq) {
            settled.push((entry.run_id.clone(), entry.seq, record.state));
        }
    }
    settled
}

/// The arguments `cua replay` would take for a batch's capability, with this process's files.
fn replay_args(
    capability: &str,
    bind: BindArgs,
    policy: &PolicyFile,
    evidence: RunsDir,
    paths: &CatalogPaths,
) -> ReplayArgs {
    ReplayArgs {
        capability: capability.to_owned(),
        inputs: Vec::new(),
        input_rows: None,
        bind,
        policy: policy.clone(),
        evidence,
        paths: paths.clone(),
        run_id: None,
        concurrency: 1,
        shard: None,
        resume: false,
        junit: None,
        pool: PoolKind::Pages,
        assist: false,
    }
}

/// The content hash of the capability as sealed (before any overlay).
fn base_hash(settings: &Settings) -> Option<&ContentHash> {
    settings
        .prepared
        .overlay
        .as_ref()
        .map_or(&settings.prepared.capability, |overlay| &overlay.base)
        .content_hash
        .as_ref()
}

/// blake3 of the capability as a run executes it: overlay and base URL applied.
fn effective_digest(settings: &Settings) -> Result<String, CliError> {
    let bytes = serde_json::to_vec(&settings.prepared.capability)
        .map_err(|error| CliError::new(ErrorCode::Internal, error.to_string()))?;
    Ok(format!("blake3:{}", blake3::hash(&bytes).to_hex()))
}

fn queue_error(error: QueueError) -> CliError {
    let code = match &error {
        QueueError::Unavailable { .. } => ErrorCode::QueueUnavailable,
        QueueError::Url { .. } => ErrorCode::Usage,
        QueueError::BatchExists { .. } => ErrorCode::BatchExists,
        QueueError::NoBatch { .. } => ErrorCode::NoBatch,
        QueueError::Database { .. }
        | QueueError::Fenced { .. }
        | QueueError::Corrupt { .. }
        | QueueError::NewerSchema { .. } => ErrorCode::QueueRefused,
    };
    CliError::new(code, error.to_string())
}

/// `<host>-<pid>`: unique among the workers of one queue as long as host names are.
fn default_worker_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|host| host.trim().to_owned())
        .unwrap_or_default();
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let host = if host.is_empty() {
        "worker".to_owned()
    } else {
        host
    };
    format!("{host}-{}", std::process::id())
}

fn check_worker_id(name: &str) -> Result<String, CliError> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(name.to_owned())
    } else {
        Err(CliError::usage(format!(
            "invalid worker id `{name}`: 1 to 64 ASCII letters, digits, `-`, `_` or `.`"
        )))
    }
}

fn render_status(status: &BatchStatus) -> String {
    let mut text = format!(
        "batch {} ({})\nrows {}: {} done, {} running, {} queued\n",
        status.batch_id, status.capability, status.rows, status.done, status.running, status.queued
    );
    if !status.by_status.is_empty() {
        let counts: Vec<String> = status
            .by_status
            .iter()
            .map(|(name, count)| format!("{name} {count}"))
            .collect();
        text.push_str(&format!("finished: {}\n", counts.join(", ")));
    }
    if let Some(rate) = status.rows_per_minute {
        text.push_str(&format!("throughput: {rate} rows a minute\n"));
    }
    if !status.in_doubt.is_empty() {
        let rows: Vec<String> = status.in_doubt.iter().map(ToString::to_string).collect();
        text.push_str(&format!("in doubt: rows {}\n", rows.join(", ")));
    }
    for failure in &status.failures {
        text.push_str(&format!(
            "row {}: {}{}\n",
            failure.row,
            failure.status,
            failure
                .code
                .as_deref()
                .map(|code| format!(" ({code})"))
                .unwrap_or_default()
        ));
    }
    if !status.workers.is_empty() {
        let workers: Vec<String> = status
            .workers
            .iter()
            .map(|(name, count)| format!("{name} {count}"))
            .collect();
        text.push_str(&format!("workers: {}\n", workers.join(", ")));
    }
    text
}

fn to_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}
