//! The batch queue on PostgreSQL, for replaying one batch on many machines.
//!
//! `cua batch submit` records a batch (the sealed capability's hash, its overlay, the approval
//! it was submitted under) and one job per row. Workers on any number of machines claim jobs
//! with `FOR UPDATE SKIP LOCKED`; a claim raises the job's fencing epoch and gives the worker a
//! lease that its heartbeat renews. Everything a worker writes for a row (an attempt, a
//! write-ahead intent, the result) is conditional on the job still being at the worker's
//! epoch, so a worker that stopped heartbeating, and whose row another worker took, can write
//! nothing more for it; an intent (and so its mutation) is also refused once less than a margin
//! of the lease is left by the database's clock.
//!
//! The intent journal ([`JournalClient`]) is synchronous, because the evidence bus that calls it
//! is: it owns a thread with its own connection (so it never waits on the pool its caller may
//! hold), and the caller's wait, at most a few seconds, is moved off the runtime's shared work
//! with `block_in_place` on a multi-threaded runtime.
//!
//! What the fence cannot do: an intent is taken only while a margin (a third) of the lease is
//! left, the heartbeat takes the run's session lease away when the claim is lost, and the gate
//! asks the journal last, just before the dispatch, whether that margin has run out since the
//! journal was asked (by `CLOCK_BOOTTIME`, which counts a paused process and a suspended
//! machine alike). What remains is a worker paused for longer than the margin plus the grace
//! inside the dispatch itself, after that last check and before its input reaches the browser.
//! Only the application, keyed by the row's idempotency key, can close that window, which is
//! why capabilities pass the key to the application and reconcile by it.
//!
//! Architecture invariant: the only crate that names `tokio-postgres`; it knows batches, rows,
//! attempts and intents, never capabilities, browsers or policies.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use cua_evidence::{Intent, IntentJournal, IntentState};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use serde_json::Value;
use tokio_postgres::NoTls;

mod error;
mod migrate;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::QueueError;
pub use migrate::MIGRATIONS;

/// The most connections one process holds in its pool (the intent journal has its own).
const POOL_SIZE: usize = 4;

/// How long the intent journal waits for the database before refusing the intent: well under
/// a third of the shortest lease, so a slow database refuses an intent rather than let it
/// through late.
const JOURNAL_TIMEOUT: Duration = Duration::from_secs(5);

/// How long connecting, or a connection that stopped answering, may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A batch as submitted.
#[derive(Debug, Clone, PartialEq)]
pub struct NewBatch {
    pub id: String,
    pub capability: String,
    pub content_hash: String,
    pub tenant: Option<String>,
    pub base_url: Option<String>,
    pub effective_digest: String,
    pub approval: Option<String>,
    pub allow_irreversible: bool,
    pub rows_digest: String,
}

/// One row of a batch as submitted: a job to run, or a row that is no row, finished at once
/// with its line.
#[derive(Debug, Clone, PartialEq)]
pub enum NewJob {
    Run {
        row: u32,
        inputs: Value,
        idempotency_key: String,
    },
    Finished {
        row: u32,
        idempotency_key: String,
        status: String,
        exit_code: u8,
        line: Value,
    },
}

/// A submitted batch, as a worker reads it: what was submitted, and how many rows it has.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRecord {
    pub batch: NewBatch,
    pub row_count: u32,
}

/// A job a worker holds: the row, and the epoch everything it writes for the row is fenced by.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub batch_id: String,
    pub row: u32,
    pub epoch: u64,
    pub worker: String,
    /// The row's inputs (an object).
    pub inputs: Value,
    pub idempotency_key: String,
}

/// An earlier attempt at a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    pub attempt: u32,
    pub run_id: String,
    pub epoch: u64,
    pub worker: String,
    pub evidence_dir: String,
}

/// An intent the journal holds for a row.
#[derive(Debug, Clone, PartialEq)]
pub struct JournaledIntent {
    pub run_id: String,
    pub seq: u64,
    pub epoch: u64,
    pub worker: String,
    pub intent: Intent,
    /// `announced`, or the trace's verdict once the attempt's worker finished the row.
    pub state: String,
}

/// A finished row: its result line and what its attempts' traces say of their intents.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    pub status: String,
    pub exit_code: u8,
    /// The failure code, when the row failed or needs a human.
    pub error_code: Option<String>,
    pub line: Value,
    /// `(run id, seq, state)` of every journaled intent a trace settled.
    pub intents: Vec<(String, u64, IntentState)>,
}

/// A batch's progress.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BatchStatus {
    pub batch_id: String,
    pub capability: String,
    pub rows: u32,
    pub queued: u32,
    pub running: u32,
    pub done: u32,
    /// Finished rows by status (`success`, `needs_human`, …).
    pub by_status: std::collections::BTreeMap<String, u32>,
    /// Finished rows per minute, from the first claim to the last finish.
    pub rows_per_minute: Option<f64>,
    /// Rows whose mutation is in doubt: a journaled intent no trace settled, on a row that is
    /// not finished, or a finished row that needs a human.
    pub in_doubt: Vec<u32>,
    /// Finished rows that did not succeed: row, status and failure code.
    pub failures: Vec<RowFailure>,
    /// Rows finished per worker.
    pub workers: std::collections::BTreeMap<String, u32>,
}

/// A row that did not succeed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RowFailure {
    pub row: u32,
    pub status: String,
    pub code: Option<String>,
}

/// The queue: a pool of connections to one PostgreSQL database.
#[derive(Clone)]
pub struct Queue {
    pool: Pool,
    config: tokio_postgres::Config,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The configuration holds the password: never printed.
        formatter.debug_struct("Queue").finish_non_exhaustive()
    }
}

impl Queue {
    /// Connects to the database `url` names (`postgres://user@host:port/db`, or key=value
    /// pairs) and brings its schema up to date.
    pub async fn connect(url: &str) -> Result<Self, QueueError> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|source| QueueError::Url {
            reason: format!("{source}"),
        })?;
        // A database that does not answer is an error within seconds, not a hang: a worker
        // whose queue is gone must stop dispatching before its lease runs out.
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(CONNECT_TIMEOUT);
        }
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|source| QueueError::Url {
                reason: source.to_string(),
            })?;
        let queue = Self { pool, config };
        queue.migrate().await?;
        Ok(queue)
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, QueueError> {
        self.pool.get().await.map_err(QueueError::from_pool)
    }

    /// Applies every migration the database has not had, one transaction each, under an
    /// advisory lock so two processes starting at once do not both apply one.
    pub async fn migrate(&self) -> Result<(), QueueError> {
        let mut client = self.client().await?;
        migrate::run(&mut client).await
    }

    /// Records a batch and its jobs in one transaction. A batch id already there is refused:
    /// a batch is submitted once.
    pub async fn submit(&self, batch: &NewBatch, jobs: &[NewJob]) -> Result<(), QueueError> {
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let row_count = to_i32_len(jobs.len());
        let inserted = transaction
            .execute(
                "INSERT INTO cua_batches (id, capability, content_hash, tenant, base_url, \
                 effective_digest, approval, allow_irreversible, rows_digest, row_count) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING",
                &[
                    &batch.id,
                    &batch.capability,
                    &batch.content_hash,
                    &batch.tenant,
                    &batch.base_url,
                    &batch.effective_digest,
                    &batch.approval,
                    &batch.allow_irreversible,
                    &batch.rows_digest,
                    &row_count,
                ],
            )
            .await?;
        if inserted == 0 {
            return Err(QueueError::BatchExists {
                batch: batch.id.clone(),
            });
        }
        let run = transaction
            .prepare(
                "INSERT INTO cua_jobs (batch_id, row_number, inputs, idempotency_key, state) \
                 VALUES ($1, $2, $3, $4, 'queued')",
            )
            .await?;
        let finished = transaction
            .prepare(
                "INSERT INTO cua_jobs (batch_id, row_number, idempotency_key, state, status, \
                 exit_code, line, finished_at) \
                 VALUES ($1, $2, $3, 'done', $4, $5, $6, clock_timestamp())",
            )
            .await?;
        for job in jobs {
            match job {
                NewJob::Run {
                    row,
                    inputs,
                    idempotency_key,
                } => {
                    transaction
                        .execute(&run, &[&batch.id, &to_i32(*row), inputs, idempotency_key])
                        .await?;
                }
                NewJob::Finished {
                    row,
                    idempotency_key,
                    status,
                    exit_code,
                    line,
                } => {
                    transaction
                        .execute(
                            &finished,
                            &[
                                &batch.id,
                                &to_i32(*row),
                                idempotency_key,
                                status,
                                &i32::from(*exit_code),
                                line,
                            ],
                        )
                        .await?;
                }
            }
        }
        transaction.commit().await?;
        Ok(())
    }

    /// The batch `id`, if it was submitted.
    pub async fn batch(&self, id: &str) -> Result<Option<BatchRecord>, QueueError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT id, capability, content_hash, tenant, base_url, effective_digest, \
                 approval, allow_irreversible, rows_digest, row_count FROM cua_batches \
                 WHERE id = $1",
                &[&id],
            )
            .await?;
        Ok(row.map(|row| BatchRecord {
            batch: NewBatch {
                id: row.get(0),
                capability: row.get(1),
                content_hash: row.get(2),
                tenant: row.get(3),
                base_url: row.get(4),
                effective_digest: row.get(5),
                approval: row.get(6),
                allow_irreversible: row.get(7),
                rows_digest: row.get(8),
            },
            row_count: to_u32(row.get::<_, i32>(9)),
        }))
    }

    /// Claims the next job (of `batch`, or of any batch, never of one in `skip`): a queued one,
    /// or a running one whose
    /// lease ran out more than `grace` ago. The claim raises the job's epoch and leases it to
    /// `worker` for `lease`. `None` when there is nothing to claim.
    pub async fn claim(
        &self,
        worker: &str,
        batch: Option<&str>,
        skip: &[String],
        lease: Duration,
        grace: Duration,
    ) -> Result<Option<Claim>, QueueError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "WITH next AS ( \
                   SELECT batch_id, row_number FROM cua_jobs \
                   WHERE ($2::text IS NULL OR batch_id = $2) AND batch_id <> ALL($5) \
                     AND (state = 'queued' OR (state = 'running' \
                          AND lease_expires_at < clock_timestamp() - make_interval(secs => $4))) \
                   ORDER BY batch_id, row_number \
                   LIMIT 1 \
                   FOR UPDATE SKIP LOCKED) \
                 UPDATE cua_jobs AS job SET state = 'running', epoch = job.epoch + 1, \
                   worker = $1, claimed_at = clock_timestamp(), \
                   lease_expires_at = clock_timestamp() + make_interval(secs => $3) \
                 FROM next \
                 WHERE job.batch_id = next.batch_id AND job.row_number = next.row_number \
                 RETURNING job.batch_id, job.row_number, job.epoch, job.inputs, \
                   job.idempotency_key",
                &[
                    &worker,
                    &batch,
                    &lease.as_secs_f64(),
                    &grace.as_secs_f64(),
                    &skip,
                ],
            )
            .await?;
        Ok(row.map(|row| Claim {
            batch_id: row.get(0),
            row: to_u32(row.get::<_, i32>(1)),
            epoch: to_u64(row.get::<_, i64>(2)),
            worker: worker.to_owned(),
            inputs: row.get::<_, Option<Value>>(3).unwrap_or(Value::Null),
            idempotency_key: row.get(4),
        }))
    }

    /// How many rows (of `batch`, or of every batch but those in `skip`) are not finished:
    /// queued, or running under some worker's lease. A draining worker waits while any is running elsewhere, since it
    /// may have to take the row over.
    pub async fn open_rows(&self, batch: Option<&str>, skip: &[String]) -> Result<u32, QueueError> {
        let client = self.client().await?;
        let open: i64 = client
            .query_one(
                "SELECT count(*) FROM cua_jobs WHERE state <> 'done' \
                 AND ($1::text IS NULL OR batch_id = $1) AND batch_id <> ALL($2)",
                &[&batch, &skip],
            )
            .await?
            .get(0);
        Ok(to_u32_count(open))
    }

    /// Renews the claim's lease for another `lease`. `false` when the worker no longer holds
    /// the job: its lease ran out, or another worker claimed it.
    pub async fn renew(&self, claim: &Claim, lease: Duration) -> Result<bool, QueueError> {
        let client = self.client().await?;
        let renewed = client
            .execute(
                "UPDATE cua_jobs SET lease_expires_at = clock_timestamp() + make_interval(secs => $4) \
                 WHERE batch_id = $1 AND row_number = $2 AND epoch = $3 AND state = 'running' \
                   AND lease_expires_at > clock_timestamp()",
                &[
                    &claim.batch_id,
                    &to_i32(claim.row),
                    &to_i64(claim.epoch),
                    &lease.as_secs_f64(),
                ],
            )
            .await?;
        Ok(renewed == 1)
    }

    /// Every earlier attempt at the claim's row, in order.
    pub async fn attempts(&self, claim: &Claim) -> Result<Vec<AttemptRecord>, QueueError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT attempt, run_id, epoch, worker, evidence_dir FROM cua_attempts \
                 WHERE batch_id = $1 AND row_number = $2 ORDER BY attempt",
                &[&claim.batch_id, &to_i32(claim.row)],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|row| AttemptRecord {
                attempt: to_u32(row.get::<_, i32>(0)),
                run_id: row.get(1),
                epoch: to_u64(row.get::<_, i64>(2)),
                worker: row.get(3),
                evidence_dir: row.get(4),
            })
            .collect())
    }

    /// Every intent the journal holds for the claim's row, in order.
    pub async fn journaled(&self, claim: &Claim) -> Result<Vec<JournaledIntent>, QueueError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT run_id, seq, epoch, worker, intent, state FROM cua_intents \
                 WHERE batch_id = $1 AND row_number = $2 ORDER BY recorded_at, run_id, seq",
                &[&claim.batch_id, &to_i32(claim.row)],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let intent: Value = row.get(4);
                let run_id: String = row.get(0);
                let seq = to_u64(row.get::<_, i64>(1));
                Ok(JournaledIntent {
                    intent: serde_json::from_value(intent).map_err(|source| {
                        QueueError::Corrupt {
                            what: format!("the journaled intent {run_id}#{seq}"),
                            reason: source.to_string(),
                        }
                    })?,
                    run_id,
                    seq,
                    epoch: to_u64(row.get::<_, i64>(2)),
                    worker: row.get(3),
                    state: row.get(5),
                })
            })
            .collect()
    }

    /// Records that attempt `attempt` at the claim's row starts as run `run_id`, with its
    /// evidence in `evidence_dir`. Refused unless the worker still holds the row.
    pub async fn start_attempt(
        &self,
        claim: &Claim,
        attempt: u32,
        run_id: &str,
        evidence_dir: &str,
    ) -> Result<(), QueueError> {
        let client = self.client().await?;
        let inserted = client
            .execute(
                "INSERT INTO cua_attempts (batch_id, row_number, attempt, run_id, epoch, worker, \
                   evidence_dir) \
                 SELECT $1, $2, $4, $5, $3, $6, $7 WHERE EXISTS ( \
                   SELECT 1 FROM cua_jobs WHERE batch_id = $1 AND row_number = $2 \
                     AND epoch = $3 AND state = 'running' \
                     AND lease_expires_at > clock_timestamp())",
                &[
                    &claim.batch_id,
                    &to_i32(claim.row),
                    &to_i64(claim.epoch),
                    &to_i32(attempt),
                    &run_id,
                    &claim.worker,
                    &evidence_dir,
                ],
            )
            .await?;
        drop(client);
        if inserted == 1 {
            Ok(())
        } else {
            Err(self.fenced(claim, "start an attempt").await)
        }
    }

    /// Finishes the claim's row: its result, and the states its attempts' traces gave their
    /// journaled intents, in one transaction. Refused when another worker has claimed the row
    /// since (a late write from a worker that lost it).
    pub async fn finish(&self, claim: &Claim, finished: &Finished) -> Result<(), QueueError> {
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let updated = transaction
            .execute(
                "UPDATE cua_jobs SET state = 'done', status = $4, exit_code = $5, \
                   error_code = $6, line = $7, finished_at = clock_timestamp(), \
                   lease_expires_at = NULL \
                 WHERE batch_id = $1 AND row_number = $2 AND epoch = $3 AND state = 'running'",
                &[
                    &claim.batch_id,
                    &to_i32(claim.row),
                    &to_i64(claim.epoch),
                    &finished.status,
                    &i32::from(finished.exit_code),
                    &finished.error_code,
                    &finished.line,
                ],
            )
            .await?;
        if updated != 1 {
            drop(transaction);
            drop(client);
            return Err(self.fenced(claim, "finish the row").await);
        }
        for (run_id, seq, state) in &finished.intents {
            transaction
                .execute(
                    "UPDATE cua_intents SET state = $3 WHERE run_id = $1 AND seq = $2",
                    &[run_id, &to_i64(*seq), &state.as_str()],
                )
                .await?;
        }
        transaction.commit().await?;
        Ok(())
    }

    /// Gives the claim's row back unfinished (a signal stopped the worker): the next claim
    /// decides it from its attempts and intents.
    pub async fn release(&self, claim: &Claim) -> Result<(), QueueError> {
        let client = self.client().await?;
        client
            .execute(
                "UPDATE cua_jobs SET state = 'queued', worker = NULL, lease_expires_at = NULL \
                 WHERE batch_id = $1 AND row_number = $2 AND epoch = $3 AND state = 'running'",
                &[&claim.batch_id, &to_i32(claim.row), &to_i64(claim.epoch)],
            )
            .await?;
        Ok(())
    }

    /// Why a fenced write was refused: who holds the row now.
    async fn fenced(&self, claim: &Claim, what: &str) -> QueueError {
        let now = match self.client().await {
            Ok(client) => client
                .query_opt(
                    "SELECT epoch, state, worker, lease_expires_at < clock_timestamp() \
                     FROM cua_jobs WHERE batch_id = $1 AND row_number = $2",
                    &[&claim.batch_id, &to_i32(claim.row)],
                )
                .await
                .ok()
                .flatten()
                .map(|row| {
                    let epoch: i64 = row.get(0);
                    let state: String = row.get(1);
                    let worker: Option<String> = row.get(2);
                    let expired: Option<bool> = row.get(3);
                    if to_u64(epoch) != claim.epoch {
                        format!(
                            "the row is at epoch {epoch} ({state}, {})",
                            worker.as_deref().unwrap_or("no worker")
                        )
                    } else if expired == Some(true) {
                        "the lease ran out".to_owned()
                    } else {
                        format!("the row is {state}")
                    }
                }),
            Err(_) => None,
        };
        QueueError::Fenced {
            what: what.to_owned(),
            batch: claim.batch_id.clone(),
            row: claim.row,
            epoch: claim.epoch,
            now: now.unwrap_or_else(|| "who holds the row now could not be read".to_owned()),
        }
    }

    /// The batch's progress.
    pub async fn status(&self, batch_id: &str) -> Result<BatchStatus, QueueError> {
        let batch = self
            .batch(batch_id)
            .await?
            .ok_or_else(|| QueueError::NoBatch {
                batch: batch_id.to_owned(),
            })?;
        let client = self.client().await?;
        let mut status = BatchStatus {
            batch_id: batch.batch.id.clone(),
            capability: batch.batch.capability.clone(),
            rows: batch.row_count,
            queued: 0,
            running: 0,
            done: 0,
            by_status: std::collections::BTreeMap::new(),
            rows_per_minute: None,
            in_doubt: Vec::new(),
            failures: Vec::new(),
            workers: std::collections::BTreeMap::new(),
        };
        for row in client
            .query(
                "SELECT state, coalesce(status, ''), count(*) FROM cua_jobs WHERE batch_id = $1 \
                 GROUP BY 1, 2",
                &[&batch_id],
            )
            .await?
        {
            let state: String = row.get(0);
            let count = to_u32_count(row.get::<_, i64>(2));
            match state.as_str() {
                "queued" => status.queued += count,
                "running" => status.running += count,
                _ => {
                    status.done += count;
                    *status.by_status.entry(row.get(1)).or_insert(0) += count;
                }
            }
        }
        let throughput = client
            .query_one(
                "SELECT count(*), extract(epoch FROM max(finished_at) - min(claimed_at))::float8 \
                 FROM cua_jobs WHERE batch_id = $1 AND state = 'done' AND claimed_at IS NOT NULL",
                &[&batch_id],
            )
            .await?;
        let finished: i64 = throughput.get(0);
        let seconds: Option<f64> = throughput.get(1);
        status.rows_per_minute = seconds
            .filter(|seconds| *seconds > 0.0)
            .map(|seconds| round2(count_f64(finished) * 60.0 / seconds));
        status.in_doubt = client
            .query(
                "SELECT DISTINCT job.row_number FROM cua_jobs AS job \
                 LEFT JOIN cua_intents AS intent \
                   ON intent.batch_id = job.batch_id AND intent.row_number = job.row_number \
                 WHERE job.batch_id = $1 AND ( \
                   (job.state <> 'done' AND intent.state IN ('announced', 'in_doubt')) \
                   OR job.status = 'needs_human') \
                 ORDER BY 1",
                &[&batch_id],
            )
            .await?
            .iter()
            .map(|row| to_u32(row.get::<_, i32>(0)))
            .collect();
        status.failures = client
            .query(
                "SELECT row_number, status, error_code FROM cua_jobs WHERE batch_id = $1 \
                 AND state = 'done' AND status NOT IN ('success', 'business_outcome', 'confirmed') \
                 ORDER BY row_number",
                &[&batch_id],
            )
            .await?
            .iter()
            .map(|row| RowFailure {
                row: to_u32(row.get::<_, i32>(0)),
                status: row.get(1),
                code: row.get(2),
            })
            .collect();
        for row in client
            .query(
                "SELECT worker, count(*) FROM cua_jobs WHERE batch_id = $1 AND state = 'done' \
                 AND worker IS NOT NULL GROUP BY 1",
                &[&batch_id],
            )
            .await?
        {
            status
                .workers
                .insert(row.get(0), to_u32_count(row.get::<_, i64>(1)));
        }
        Ok(status)
    }

    /// The finished rows' result lines, in row order, with the worker, epoch and evidence
    /// directory each came from.
    pub async fn results(&self, batch_id: &str) -> Result<Vec<Value>, QueueError> {
        if self.batch(batch_id).await?.is_none() {
            return Err(QueueError::NoBatch {
                batch: batch_id.to_owned(),
            });
        }
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT line, worker, epoch FROM cua_jobs WHERE batch_id = $1 AND state = 'done' \
                 ORDER BY row_number",
                &[&batch_id],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|row| {
                let mut line: Value = row.get(0);
                let worker: Option<String> = row.get(1);
                if let (Some(object), Some(worker)) = (line.as_object_mut(), worker) {
                    object.insert("worker".to_owned(), Value::String(worker));
                    object.insert(
                        "epoch".to_owned(),
                        Value::from(to_u64(row.get::<_, i64>(2))),
                    );
                }
                line
            })
            .collect())
    }

    /// The journal thread for this queue's database: one connection, shared by every row a
    /// process runs.
    pub fn journal_client(&self) -> Result<Arc<JournalClient>, QueueError> {
        JournalClient::start(self.config.clone()).map(Arc::new)
    }
}

/// One journaling request to the journal thread.
struct JournalRequest {
    claim: Claim,
    /// How much of the lease must be left for the intent to be taken.
    margin: Duration,
    run_id: String,
    seq: u64,
    intent: Value,
    reply: mpsc::SyncSender<Result<(), String>>,
}

/// The intent journal's thread: its own runtime and connection, fed through a channel.
pub struct JournalClient {
    sender: mpsc::Sender<JournalRequest>,
}

impl JournalClient {
    fn start(config: tokio_postgres::Config) -> Result<Self, QueueError> {
        let (sender, receiver) = mpsc::channel::<JournalRequest>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| QueueError::Unavailable {
                reason: format!("the intent journal's runtime: {source}"),
            })?;
        std::thread::Builder::new()
            .name("cua-intent-journal".to_owned())
            .spawn(move || runtime.block_on(journal_thread(config, receiver)))
            .map_err(|source| QueueError::Unavailable {
                reason: format!("the intent journal's thread: {source}"),
            })?;
        Ok(Self { sender })
    }

    /// The journal of one claim: the intents of the row's attempt, fenced by its epoch, and
    /// taken only while at least `margin` of its lease is left by the database's clock, so a
    /// mutation announced now has that long to leave before anyone else may take the row.
    pub fn for_claim(self: &Arc<Self>, claim: &Claim, margin: Duration) -> Arc<dyn IntentJournal> {
        self.for_claim_by(claim, margin, Arc::new(boot_time))
    }

    /// [`JournalClient::for_claim`], reading elapsed time from `clock` (a monotonic reading).
    pub fn for_claim_by(
        self: &Arc<Self>,
        claim: &Claim,
        margin: Duration,
        clock: JournalClock,
    ) -> Arc<dyn IntentJournal> {
        Arc::new(ClaimJournal {
            client: Arc::clone(self),
            claim: claim.clone(),
            margin,
            clock,
            deadline: std::sync::Mutex::new(None),
        })
    }
}

/// A monotonic clock for the journal's hold: any origin, read as time since it.
pub type JournalClock = Arc<dyn Fn() -> Duration + Send + Sync>;

/// Time since boot, suspended time included (`CLOCK_BOOTTIME`): a lease runs out on the
/// database's clock while this machine sleeps, so the hold must count that time too.
pub fn boot_time() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

async fn journal_thread(config: tokio_postgres::Config, receiver: mpsc::Receiver<JournalRequest>) {
    let mut client: Option<tokio_postgres::Client> = None;
    // The receiver blocks this thread between requests: nothing else runs on its runtime but
    // the connection, which has nothing to do then.
    while let Ok(request) = receiver.recv() {
        let mut answer = journal_one(&config, &mut client, &request).await;
        if let Err(JournalFailure::Connection(_)) = &answer {
            // A connection the server dropped while idle: once more on a fresh one. The insert
            // is idempotent, so one that did commit before the answer was lost is found.
            client = None;
            answer = journal_one(&config, &mut client, &request).await;
        }
        if answer.is_err() {
            client = None;
        }
        let _ = request
            .reply
            .send(answer.map_err(JournalFailure::into_reason));
    }
}

/// Why the journal did not take an intent.
enum JournalFailure {
    /// The database could not be reached or the connection broke: worth one more try.
    Connection(String),
    /// The database answered no.
    Refused(String),
}

impl JournalFailure {
    fn into_reason(self) -> String {
        match self {
            Self::Connection(reason) | Self::Refused(reason) => reason,
        }
    }
}

async fn journal_one(
    config: &tokio_postgres::Config,
    client: &mut Option<tokio_postgres::Client>,
    request: &JournalRequest,
) -> Result<(), JournalFailure> {
    if client
        .as_ref()
        .is_none_or(tokio_postgres::Client::is_closed)
    {
        let (connected, connection) = config.connect(NoTls).await.map_err(|error| {
            JournalFailure::Connection(format!("cannot reach the queue: {error}"))
        })?;
        tokio::spawn(connection);
        *client = Some(connected);
    }
    let Some(connected) = client.as_ref() else {
        return Err(JournalFailure::Connection(
            "cannot reach the queue".to_owned(),
        ));
    };
    let claim = &request.claim;
    let failed = |error: tokio_postgres::Error| {
        if error.as_db_error().is_none() {
            JournalFailure::Connection(format!("the queue did not take the intent: {error}"))
        } else {
            JournalFailure::Refused(format!("the queue refused the intent: {error}"))
        }
    };
    let inserted = connected
        .execute(
            "INSERT INTO cua_intents (run_id, seq, batch_id, row_number, epoch, worker, intent) \
             SELECT $4, $5, $1, $2, $3, $6, $7 WHERE EXISTS ( \
               SELECT 1 FROM cua_jobs WHERE batch_id = $1 AND row_number = $2 \
                 AND epoch = $3 AND state = 'running' \
                 AND lease_expires_at > clock_timestamp() + make_interval(secs => $8)) \
             ON CONFLICT (run_id, seq) DO NOTHING",
            &[
                &claim.batch_id,
                &to_i32(claim.row),
                &to_i64(claim.epoch),
                &request.run_id,
                &to_i64(request.seq),
                &claim.worker,
                &request.intent,
                &request.margin.as_secs_f64(),
            ],
        )
        .await
        .map_err(failed)?;
    if inserted == 1 {
        return Ok(());
    }
    // Taken already (an earlier try committed before its answer was lost), under this epoch?
    let taken = connected
        .query_opt(
            "SELECT 1 FROM cua_intents WHERE run_id = $1 AND seq = $2 AND epoch = $3",
            &[&request.run_id, &to_i64(request.seq), &to_i64(claim.epoch)],
        )
        .await
        .map_err(failed)?;
    if taken.is_some() {
        return Ok(());
    }
    Err(JournalFailure::Refused(format!(
        "row {} of batch {} is no longer this worker's at epoch {}, or too little of its lease \
         is left to dispatch in (its lease ran out or another worker claimed it)",
        claim.row, claim.batch_id, claim.epoch
    )))
}

/// The journal of one claim.
struct ClaimJournal {
    client: Arc<JournalClient>,
    claim: Claim,
    margin: Duration,
    clock: JournalClock,
    /// When the margin of the last intent taken runs out, by `clock`.
    deadline: std::sync::Mutex<Option<Duration>>,
}

impl IntentJournal for ClaimJournal {
    fn record(&self, run_id: &str, seq: u64, intent: &Intent) -> Result<(), String> {
        // Read before the request leaves: the database checks that the margin is left at some
        // moment after this one, so the lease lasts at least until this reading plus the margin.
        let asked = (self.clock)();
        self.record_now(run_id, seq, intent)?;
        *self
            .deadline
            .lock()
            .map_err(|_| "the intent journal's hold is poisoned".to_owned())? =
            Some(asked + self.margin);
        Ok(())
    }

    fn holds(&self) -> Result<(), String> {
        let deadline = *self
            .deadline
            .lock()
            .map_err(|_| "the intent journal's hold is poisoned".to_owned())?;
        let Some(deadline) = deadline else {
            return Err("the queue has taken no intent for this dispatch".to_owned());
        };
        let now = (self.clock)();
        if now < deadline {
            return Ok(());
        }
        Err(format!(
            "{:.1} s passed since the queue was asked to take the intent, more than the {:.1} s \
             of the lease it was taken to leave within: row {} of batch {} may be another \
             worker's by now",
            (now + self.margin - deadline).as_secs_f64(),
            self.margin.as_secs_f64(),
            self.claim.row,
            self.claim.batch_id
        ))
    }
}

impl ClaimJournal {
    fn record_now(&self, run_id: &str, seq: u64, intent: &Intent) -> Result<(), String> {
        let intent = serde_json::to_value(intent).map_err(|error| error.to_string())?;
        let (reply, answer) = mpsc::sync_channel(1);
        self.client
            .sender
            .send(JournalRequest {
                claim: self.claim.clone(),
                margin: self.margin,
                run_id: run_id.to_owned(),
                seq,
                intent,
                reply,
            })
            .map_err(|_| "the intent journal's thread has stopped".to_owned())?;
        let wait = || {
            answer.recv_timeout(JOURNAL_TIMEOUT).unwrap_or_else(|_| {
                Err(format!(
                    "the queue did not take the intent within {} s",
                    JOURNAL_TIMEOUT.as_secs()
                ))
            })
        };
        // The gate calls this from async code: on a multi-threaded runtime, the wait moves
        // this worker thread's other tasks (other rows' heartbeats) elsewhere first.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        }
    }
}

// PostgreSQL integers are signed; rows, attempts and epochs are small and never negative, and a
// value out of range saturates rather than wrapping into another row's number.
fn to_i32(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

fn to_i32_len(value: usize) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn to_u32(value: i32) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn to_u32_count(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

#[expect(
    clippy::cast_precision_loss,
    reason = "a row count far below 2^52 is exact as f64"
)]
fn count_f64(value: i64) -> f64 {
    value as f64
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}
