//! `make bench`: batch throughput through the PostgreSQL queue with 1, 2 and 4 `cua worker`
//! processes, side by side with the single-process batch (`cua replay --inputs`) at the same
//! concurrency, against one database and one MemberDesk; and the database's own cost per job
//! (claim, attempt, journaled intent, finish) without a browser. Printed, never asserted.
#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]
#![allow(clippy::unwrap_used, reason = "a benchmark fails loudly")]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cua_artifact::{ActionKind, RiskTier, StepId};
use cua_queue::testing::TestDatabase;
use cua_queue::{Finished, NewBatch, NewJob, Queue};

const ROWS: usize = 24;
const SAVINGS: &str = "corebank.member.savings_balance@1.0.0";

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fixture = runtime
        .block_on(memberdesk::serve(memberdesk::FixtureConfig::loopback(
            memberdesk::Variant::FirstValley,
        )))
        .unwrap();
    let base_url = fixture.base_url();
    let scratch = tempfile::tempdir().unwrap();
    let rows = scratch.path().join("rows.jsonl");
    std::fs::write(&rows, "{\"member_id\": \"12345\"}\n".repeat(ROWS)).unwrap();
    let database = TestDatabase::create();

    println!("batch throughput: {ROWS} savings lookups, rows a minute (one fixture, one database)");
    for processes in [1_usize, 2, 4] {
        let evidence = scratch.path().join(format!("evidence-{processes}"));
        let id = format!("bench-{processes}");
        let submitted = cua(&evidence, &database.url)
            .args(["batch", "submit", SAVINGS, "--inputs"])
            .arg(&rows)
            .args(["--id", &id, "--base-url", &base_url])
            .status()
            .unwrap();
        assert!(submitted.success(), "the batch is submitted");
        let started = Instant::now();
        let workers: Vec<_> = (0..processes)
            .map(|n| {
                cua(&evidence, &database.url)
                    .args(["worker", "--drain", "--batch", &id, "--worker-id"])
                    .arg(format!("bench-{processes}-{n}"))
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut worker in workers {
            assert!(worker.wait().unwrap().success(), "a worker ends well");
        }
        let queued = started.elapsed();

        let single_evidence = scratch.path().join(format!("single-{processes}"));
        let started = Instant::now();
        let single = cua(&single_evidence, &database.url)
            .args(["replay", SAVINGS, "--inputs"])
            .arg(&rows)
            .args(["--base-url", &base_url, "--concurrency"])
            .arg(processes.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(single.success(), "the single-process batch succeeds");
        let alone = started.elapsed();
        println!(
            "  {processes} worker process(es) {:>6.1}   single process, concurrency {processes} {:>6.1}   ratio {:.2}",
            per_minute(queued),
            per_minute(alone),
            queued.as_secs_f64() / alone.as_secs_f64()
        );
    }

    let (jobs, overhead) = runtime.block_on(database_cost(&database.url));
    println!(
        "queue overhead per job (claim, attempt, journaled intent, finish; no browser): {:.2} ms over {jobs} jobs",
        overhead.as_secs_f64() * 1000.0 / jobs as f64
    );
    runtime.block_on(fixture.shutdown()).unwrap();
}

fn cua(evidence: &std::path::Path, queue: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cua"));
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CUA_QUEUE_URL", queue)
        .env("CUA_EVIDENCE_DIR", evidence)
        .env("CUA_SECRET_COREBANK_OPERATOR_ID", memberdesk::OPERATOR_ID)
        .env(
            "CUA_SECRET_COREBANK_OPERATOR_PASSWORD",
            memberdesk::OPERATOR_PASSWORD,
        )
        .stdout(Stdio::null());
    command
}

fn per_minute(elapsed: Duration) -> f64 {
    ROWS as f64 * 60.0 / elapsed.as_secs_f64()
}

/// What the queue alone costs per job, on one connection pool: the writes a worker makes for a
/// row with one mutation.
async fn database_cost(url: &str) -> (usize, Duration) {
    const JOBS: usize = 200;
    let queue = Queue::connect(url).await.unwrap();
    let batch = NewBatch {
        id: "bench-overhead".to_owned(),
        capability: SAVINGS.to_owned(),
        content_hash: "blake3:00".to_owned(),
        tenant: None,
        base_url: None,
        effective_digest: "blake3:01".to_owned(),
        approval: None,
        allow_irreversible: false,
        rows_digest: "blake3:02".to_owned(),
    };
    let jobs: Vec<NewJob> = (1..=JOBS as u32)
        .map(|row| NewJob::Run {
            row,
            inputs: serde_json::json!({"member_id": "12345"}),
            idempotency_key: format!("key-{row}"),
        })
        .collect();
    queue.submit(&batch, &jobs).await.unwrap();
    let journal = queue.journal_client().unwrap();
    let lease = Duration::from_secs(30);
    let started = Instant::now();
    while let Some(claim) = queue
        .claim("bench", Some("bench-overhead"), &[], lease, Duration::ZERO)
        .await
        .unwrap()
    {
        let run_id = format!("bench-overhead-row-{}", claim.row);
        queue
            .start_attempt(&claim, 1, &run_id, "/evidence")
            .await
            .unwrap();
        let intent = cua_evidence::Intent::of_run(
            &run_id,
            Some(StepId::parse("post").unwrap()),
            "dec-000001",
            ActionKind::Click,
            RiskTier::Elevated,
        );
        let for_claim = journal.for_claim(&claim, Duration::ZERO);
        tokio::task::spawn_blocking(move || for_claim.record(&run_id, 2, &intent))
            .await
            .unwrap()
            .unwrap();
        queue
            .finish(
                &claim,
                &Finished {
                    status: "success".to_owned(),
                    exit_code: 0,
                    error_code: None,
                    line: serde_json::json!({"row": claim.row}),
                    intents: Vec::new(),
                },
            )
            .await
            .unwrap();
    }
    (JOBS, started.elapsed())
}
