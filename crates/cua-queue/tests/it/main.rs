//! The queue against a real PostgreSQL server (`scripts/postgres.sh up`): claims that never
//! overlap, leases that run out, epochs that fence a stale worker's every write, the intent
//! journal's fence, and the migrations.

#![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

use std::collections::BTreeSet;
use std::time::Duration;

use cua_artifact::{ActionKind, RiskTier, StepId};
use cua_evidence::{Intent, IntentState};
use cua_queue::testing::TestDatabase;
use cua_queue::{Claim, Finished, NewBatch, NewJob, Queue, QueueError};
use serde_json::json;

fn batch(id: &str) -> NewBatch {
    NewBatch {
        id: id.to_owned(),
        capability: "corebank.member.transfer_funds@1.0.0".to_owned(),
        content_hash: "blake3:00".to_owned(),
        tenant: None,
        base_url: Some("http://127.0.0.1:1".to_owned()),
        effective_digest: "blake3:01".to_owned(),
        approval: None,
        allow_irreversible: true,
        rows_digest: "blake3:02".to_owned(),
    }
}

fn jobs(count: u32) -> Vec<NewJob> {
    (1..=count)
        .map(|row| NewJob::Run {
            row,
            inputs: json!({"amount": format!("{row}.00")}),
            idempotency_key: format!("key-{row}"),
        })
        .collect()
}

fn intent(step: &str) -> Intent {
    Intent::of_run(
        "run",
        Some(StepId::parse(step).unwrap()),
        "dec-000001",
        ActionKind::Click,
        RiskTier::Irreversible,
    )
}

fn finished(status: &str) -> Finished {
    Finished {
        status: status.to_owned(),
        exit_code: 0,
        error_code: None,
        line: json!({"row": 1, "status": status}),
        intents: Vec::new(),
    }
}

const LONG: Duration = Duration::from_secs(60);
const NO_GRACE: Duration = Duration::ZERO;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_claims_never_take_one_row_twice() {
    let database = TestDatabase::create();
    let queue = Queue::connect(&database.url).await.unwrap();
    queue.submit(&batch("b1"), &jobs(40)).await.unwrap();
    let claimers = (0..8).map(|worker| {
        let queue = queue.clone();
        tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some(claim) = queue
                .claim(&format!("w{worker}"), Some("b1"), &[], LONG, NO_GRACE)
                .await
                .unwrap()
            {
                assert_eq!(claim.epoch, 1, "a fresh row's first claim");
                mine.push(claim.row);
            }
            mine
        })
    });
    let mut seen = Vec::new();
    for claimer in claimers {
        seen.extend(claimer.await.unwrap());
    }
    seen.sort_unstable();
    assert_eq!(seen, (1..=40).collect::<Vec<u32>>(), "every row once");
    let status = queue.status("b1").await.unwrap();
    assert_eq!((status.queued, status.running, status.done), (0, 40, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_worker_can_write_nothing_for_a_row_another_worker_took() {
    let database = TestDatabase::create();
    let queue = Queue::connect(&database.url).await.unwrap();
    queue.submit(&batch("b2"), &jobs(1)).await.unwrap();
    let short = Duration::from_secs(1);
    let stale = queue
        .claim("a", None, &[], short, NO_GRACE)
        .await
        .unwrap()
        .unwrap();
    queue
        .start_attempt(&stale, 1, "b2-row-1", "/evidence/b2-row-1")
        .await
        .unwrap();
    let journal = queue.journal_client().unwrap();
    journal
        .for_claim(&stale, Duration::ZERO)
        .record("b2-row-1", 7, &intent("post_transfer"))
        .unwrap();
    // Taken twice (an answer lost on the way back, and the intent sent again): still one.
    journal
        .for_claim(&stale, Duration::ZERO)
        .record("b2-row-1", 7, &intent("post_transfer"))
        .unwrap();
    // Less of the lease left than the margin a dispatch needs: refused while still held.
    let short_of_margin = journal
        .for_claim(&stale, Duration::from_secs(5))
        .record("b2-row-1", 8, &intent("post_transfer"))
        .unwrap_err();
    assert!(
        short_of_margin.contains("too little of its lease"),
        "{short_of_margin}"
    );
    // Nobody takes a row whose lease still runs.
    assert_eq!(
        queue.claim("b", None, &[], LONG, NO_GRACE).await.unwrap(),
        None
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;
    // Once it ran out, the holder can neither renew it nor journal another intent, even
    // before anyone took the row.
    assert!(!queue.renew(&stale, LONG).await.unwrap());
    let refused = journal
        .for_claim(&stale, Duration::ZERO)
        .record("b2-row-1", 9, &intent("post_transfer"))
        .unwrap_err();
    assert!(
        refused.contains("no longer this worker's at epoch 1"),
        "{refused}"
    );

    let fresh = queue
        .claim("b", None, &[], LONG, NO_GRACE)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((fresh.row, fresh.epoch), (1, 2));
    // The new holder sees what the stale one announced.
    let attempts = queue.attempts(&fresh).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!((attempts[0].worker.as_str(), attempts[0].epoch), ("a", 1));
    let journaled = queue.journaled(&fresh).await.unwrap();
    assert_eq!(journaled.len(), 1);
    assert_eq!(
        (journaled[0].seq, journaled[0].state.as_str()),
        (7, "announced")
    );
    assert_eq!(journaled[0].intent, intent("post_transfer"));

    // The stale worker's late writes are refused, each naming who holds the row.
    let error = queue
        .start_attempt(&stale, 2, "b2-row-1-attempt-2", "/evidence/x")
        .await
        .unwrap_err();
    assert!(
        matches!(&error, QueueError::Fenced { now, .. } if now.contains("epoch 2")),
        "{error}"
    );
    let error = queue
        .finish(&stale, &finished("success"))
        .await
        .unwrap_err();
    assert!(matches!(error, QueueError::Fenced { .. }), "{error}");
    queue.release(&stale).await.unwrap();
    let status = queue.status("b2").await.unwrap();
    assert_eq!(
        (status.running, status.done),
        (1, 0),
        "the release was fenced too"
    );
    assert_eq!(status.in_doubt, [1], "an announced intent on an open row");

    let mut done = finished("confirmed");
    done.intents = vec![("b2-row-1".to_owned(), 7, IntentState::Confirmed)];
    queue.finish(&fresh, &done).await.unwrap();
    let status = queue.status("b2").await.unwrap();
    assert_eq!((status.running, status.done), (0, 1));
    assert!(status.in_doubt.is_empty());
    assert_eq!(status.workers.get("b"), Some(&1));
    let journaled = queue.journaled(&fresh).await.unwrap();
    assert_eq!(journaled[0].state, "confirmed");
    let results = queue.results("b2").await.unwrap();
    assert_eq!(
        results,
        [json!({"row": 1, "status": "confirmed", "worker": "b", "epoch": 2})]
    );
}

/// The journal holds a taken intent for the margin it was taken with, counted from the moment
/// it was asked, by its own clock: a worker paused between the journal and the dispatch for
/// longer than that may dispatch nothing, whatever its session lease still says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_intent_may_leave_only_within_its_margin() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    let database = TestDatabase::create();
    let queue = Queue::connect(&database.url).await.unwrap();
    queue.submit(&batch("b5"), &jobs(1)).await.unwrap();
    let claim = queue
        .claim("a", None, &[], LONG, NO_GRACE)
        .await
        .unwrap()
        .unwrap();
    queue
        .start_attempt(&claim, 1, "b5-row-1", "/evidence/b5-row-1")
        .await
        .unwrap();
    let millis = Arc::new(AtomicU64::new(1_000));
    let clock = {
        let millis = Arc::clone(&millis);
        Arc::new(move || Duration::from_millis(millis.load(Ordering::SeqCst)))
    };
    let journal =
        queue
            .journal_client()
            .unwrap()
            .for_claim_by(&claim, Duration::from_secs(20), clock);
    let unasked = journal.holds().unwrap_err();
    assert!(unasked.contains("no intent"), "{unasked}");

    journal
        .record("b5-row-1", 3, &intent("post_transfer"))
        .unwrap();
    millis.store(20_999, Ordering::SeqCst);
    assert_eq!(journal.holds(), Ok(()), "a millisecond of the margin left");
    millis.store(21_000, Ordering::SeqCst);
    let lapsed = journal.holds().unwrap_err();
    assert_eq!(
        lapsed,
        "20.0 s passed since the queue was asked to take the intent, more than the 20.0 s of \
         the lease it was taken to leave within: row 1 of batch b5 may be another worker's by now"
    );
    // The next intent is held from when it is asked.
    journal
        .record("b5-row-1", 5, &intent("post_transfer"))
        .unwrap();
    assert_eq!(journal.holds(), Ok(()));
    // And lapses as the first did, a margin after it was asked.
    millis.store(40_999, Ordering::SeqCst);
    assert_eq!(journal.holds(), Ok(()));
    millis.store(41_000, Ordering::SeqCst);
    assert!(journal.holds().is_err());
}

/// `CLOCK_BOOTTIME` moves forward.
#[test]
fn boot_time_moves_forward() {
    let before = cua_queue::boot_time();
    std::thread::sleep(Duration::from_millis(5));
    let after = cua_queue::boot_time();
    assert!(
        after >= before + Duration::from_millis(5),
        "{before:?} {after:?}"
    );
    assert!(before > Duration::ZERO);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_runs_out_only_after_its_grace() {
    let database = TestDatabase::create();
    let queue = Queue::connect(&database.url).await.unwrap();
    queue.submit(&batch("b3"), &jobs(1)).await.unwrap();
    let first = queue
        .claim("a", None, &[], Duration::from_secs(1), NO_GRACE)
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    // Expired, but within another worker's grace: not taken.
    let grace = Duration::from_secs(30);
    assert_eq!(
        queue.claim("b", None, &[], LONG, grace).await.unwrap(),
        None
    );
    let taken: Claim = queue
        .claim("b", None, &[], LONG, NO_GRACE)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken.epoch, first.epoch + 1);
    // A renewal keeps a live lease.
    assert!(queue.renew(&taken, LONG).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_submitted_once_and_rows_that_are_no_rows_finish_at_once() {
    let database = TestDatabase::create();
    let queue = Queue::connect(&database.url).await.unwrap();
    let mut rows = jobs(2);
    rows.push(NewJob::Finished {
        row: 3,
        idempotency_key: "key-3".to_owned(),
        status: "invalid_row".to_owned(),
        exit_code: 2,
        line: json!({"row": 3, "status": "invalid_row", "error": "not JSON"}),
    });
    queue.submit(&batch("b4"), &rows).await.unwrap();
    let again = queue.submit(&batch("b4"), &rows).await.unwrap_err();
    assert!(matches!(again, QueueError::BatchExists { .. }), "{again}");
    let status = queue.status("b4").await.unwrap();
    assert_eq!((status.rows, status.queued, status.done), (3, 2, 1));
    assert_eq!(status.failures.len(), 1);
    assert_eq!(status.failures[0].status, "invalid_row");
    assert_eq!(
        queue.batch("b4").await.unwrap().unwrap().row_count,
        3,
        "every row is a job"
    );
    let missing = queue.status("nope").await.unwrap_err();
    assert!(matches!(missing, QueueError::NoBatch { .. }), "{missing}");
    let mut claimed = BTreeSet::new();
    for _ in 0..2 {
        let claim = queue.claim("a", None, &[], LONG, NO_GRACE).await.unwrap();
        claimed.insert(claim.expect("a queued row").row);
    }
    assert_eq!(claimed, [1, 2].into(), "the finished row is never claimed");
    assert_eq!(
        queue.claim("a", None, &[], LONG, NO_GRACE).await.unwrap(),
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_apply_once_and_a_newer_schema_is_refused() {
    let database = TestDatabase::create();
    let first = Queue::connect(&database.url).await.unwrap();
    // A second process starting at once, and a restart, apply nothing again.
    let (second, third) =
        tokio::join!(Queue::connect(&database.url), Queue::connect(&database.url));
    second.unwrap();
    third.unwrap();
    first.submit(&batch("b5"), &jobs(1)).await.unwrap();
    // A database a newer cua migrated is not touched by this one.
    let (client, connection) = tokio_postgres_connect(&database.url).await;
    tokio::spawn(connection);
    client
        .batch_execute("INSERT INTO cua_schema_migrations (version) VALUES (99)")
        .await
        .unwrap();
    let refused = Queue::connect(&database.url).await.unwrap_err();
    assert!(
        matches!(refused, QueueError::NewerSchema { found: 99, .. }),
        "{refused}"
    );
    let unreachable = Queue::connect("postgres://cua@127.0.0.1:1/postgres")
        .await
        .unwrap_err();
    assert!(unreachable.is_unavailable(), "{unreachable}");
    let bad = Queue::connect("mysql://nothing").await.unwrap_err();
    assert!(matches!(bad, QueueError::Url { .. }), "{bad}");
}

async fn tokio_postgres_connect(
    url: &str,
) -> (
    tokio_postgres::Client,
    tokio_postgres::Connection<tokio_postgres::Socket, tokio_postgres::tls::NoTlsStream>,
) {
    tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap()
}
