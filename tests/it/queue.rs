//! The batch queue through the binary, on a real PostgreSQL server (`scripts/postgres.sh up`)
//! and the MemberDesk fixture: workers share a batch and post each transfer once; a worker
//! killed after it journaled a transfer's intent leaves the row to be reconciled by another
//! worker, never posted twice; a worker refuses a batch whose approval changed since it was
//! submitted. The fixture's ledger, counted by each row's idempotency key, is the judge.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use cua_queue::testing::TestDatabase;
use serde_json::Value;

use crate::exactly_once::Batch;

const TRANSFER: &str = "corebank.member.transfer_funds@1.0.0";

/// A batch of transfers on a queue of its own.
struct Queued {
    batch: Batch,
    database: TestDatabase,
    id: String,
}

impl Queued {
    /// Transfers of `amounts`, submitted as batch `id`.
    fn submit(amounts: &[&str], id: &str) -> Self {
        let queued = Self {
            batch: Batch::new(amounts, id),
            database: TestDatabase::create(),
            id: id.to_owned(),
        };
        let base_url = queued.batch.scene.base_url();
        let output = queued.run(&[
            "batch",
            "submit",
            TRANSFER,
            "--inputs",
            queued.batch.rows(),
            "--id",
            id,
            "--allow-irreversible",
            "--approval",
            queued.batch.approval(),
            "--base-url",
            &base_url,
        ]);
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!(
                "submitted {id}: {} rows of {TRANSFER} ({} to run, 0 invalid)\n",
                amounts.len(),
                amounts.len()
            ),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        queued
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = self.batch.scene.cua_command();
        command
            .args(args)
            .env("CUA_QUEUE_URL", &self.database.url)
            .env("CUA_EVIDENCE_DIR", self.batch.scene.evidence());
        command
    }

    /// Runs `cua ARGS` to its end; fails the test unless it exits 0.
    fn run(&self, args: &[&str]) -> Output {
        let output = self.command(args).output().expect("the cua binary runs");
        assert_eq!(
            output.status.code(),
            Some(0),
            "cua {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// Starts `cua worker --batch <id> --drain --worker-id NAME EXTRA…`.
    fn worker(&self, name: &str, extra: &[&str]) -> Child {
        let mut args = vec![
            "worker",
            "--batch",
            &self.id,
            "--drain",
            "--worker-id",
            name,
        ];
        args.extend_from_slice(extra);
        self.command(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the cua binary starts")
    }

    fn results(&self) -> Vec<Value> {
        let output = self.run(&["batch", "results", &self.id]);
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    }

    fn status(&self) -> Value {
        let output = self.run(&["--format", "json", "batch", "status", &self.id]);
        let envelope: Value = serde_json::from_slice(&output.stdout).expect("a JSON envelope");
        envelope["data"].clone()
    }

    /// How many transfers the core system holds under the key of the row whose evidence is
    /// `run_dir` (the key its trace's intents carry).
    fn posted(&self, run_dir: &Path) -> usize {
        let trace = cua_evidence::read_trace(run_dir).expect("a readable trace");
        let key = cua_evidence::intents(&trace)
            .first()
            .map(|record| record.intent.idempotency_key.clone())
            .expect("the transfer's intent");
        self.batch
            .scene
            .fixture()
            .handle()
            .transfers_with_client_reference(&key)
            .len()
    }
}

fn finish(child: Child, name: &str) -> String {
    let output = child.wait_with_output().expect("the worker ends");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "worker {name}: {stderr}");
    stderr
}

fn verify(run_dir: &str) {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(["evidence", "verify", run_dir])
        .output()
        .expect("the cua binary runs");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{run_dir}: {}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn two_workers_share_a_batch_and_post_each_transfer_once() {
    let queued = Queued::submit(&["1.00", "2.00", "3.00", "4.00", "5.00", "6.00"], "qshare");
    let first = queued.worker("w1", &[]);
    let second = queued.worker("w2", &[]);
    let stderr = [finish(first, "w1"), finish(second, "w2")];
    let results = queued.results();
    assert_eq!(results.len(), 6, "{stderr:?}");
    for (index, line) in results.iter().enumerate() {
        assert_eq!(line["row"], index + 1, "{line}");
        assert_eq!(line["status"], "success", "{line}");
        assert_eq!(line["epoch"], 1, "{line}");
        assert!(
            matches!(line["worker"].as_str(), Some("w1" | "w2")),
            "{line}"
        );
        let run_dir = line["evidence_dir"]
            .as_str()
            .expect("an evidence directory");
        verify(run_dir);
        assert_eq!(queued.posted(Path::new(run_dir)), 1, "{line}");
    }
    let status = queued.status();
    assert_eq!(status["done"], 6, "{status}");
    assert_eq!(status["by_status"]["success"], 6, "{status}");
    assert_eq!(status["in_doubt"], Value::Array(Vec::new()), "{status}");
    assert!(
        status["rows_per_minute"]
            .as_f64()
            .is_some_and(|rate| rate > 0.0),
        "{status}"
    );
    let by_worker: u64 = status["workers"]
        .as_object()
        .expect("rows per worker")
        .values()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(by_worker, 6, "{status}");
}

/// A worker is killed (SIGKILL) right after the queue journaled its transfer's intent: the
/// transfer may or may not have reached the core system. Once its lease runs out, another
/// worker takes the row, finds the intent in the journal, and asks the read-only
/// reconciliation instead of dispatching again: one transfer either way.
#[test]
fn a_worker_killed_after_journaling_a_transfer_leaves_it_reconciled_not_repeated() {
    let queued = Queued::submit(&["7.00"], "qkill");
    let mut doomed = queued.worker("doomed", &["--lease-seconds", "3", "--grace-seconds", "1"]);
    let started = Instant::now();
    loop {
        let status = queued.status();
        if status["in_doubt"] == serde_json::json!([1]) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the worker never journaled the transfer: {status}"
        );
        if let Ok(Some(exit)) = doomed.try_wait() {
            panic!("the worker ended ({exit}) before it could be killed: {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    doomed.kill().expect("SIGKILL");
    doomed.wait().expect("the worker is gone");

    let heir = queued.worker("heir", &["--grace-seconds", "1"]);
    let stderr = finish(heir, "heir");
    let results = queued.results();
    assert_eq!(results.len(), 1, "{stderr}");
    let line = &results[0];
    assert_eq!(line["worker"], "heir", "{line}");
    assert_eq!(line["epoch"], 2, "{line}");
    // Reconciled as done (the transfer had landed), or as not done and run again under the
    // same key: never posted twice, and never reported as a plain failure.
    assert!(
        matches!(line["status"].as_str(), Some("confirmed" | "success")),
        "{line}"
    );
    let doomed_run = queued.batch.scene.evidence().join("qkill-row-1");
    assert_eq!(queued.posted(&doomed_run), 1, "{line}");
    if line["status"] == "confirmed" {
        let settled = line["settled"].as_str().unwrap_or_default();
        assert!(
            settled.contains("corebank.transfer.find_by_reference"),
            "{line}"
        );
    }
    let status = queued.status();
    assert_eq!(status["in_doubt"], Value::Array(Vec::new()), "{status}");
}

/// A worker whose catalog revoked the approval a batch was submitted under runs none of its
/// rows: each is refused, naming why, and nothing is posted.
#[test]
fn a_worker_refuses_a_batch_whose_approval_was_revoked() {
    let queued = Queued::submit(&["8.00", "9.00"], "qrevoked");
    let catalog = queued.batch.scene.scratch.path().join("catalog");
    std::fs::create_dir(&catalog).expect("a catalog copy");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities");
    for entry in std::fs::read_dir(&source).expect("the catalog") {
        let entry = entry.expect("an entry");
        std::fs::copy(entry.path(), catalog.join(entry.file_name())).expect("a copy");
    }
    let approval = std::fs::read_to_string(queued.batch.approval()).expect("the approval");
    std::fs::write(
        catalog.join(format!("{TRANSFER}.approval.yaml")),
        approval.replace("state: approved", "state: revoked"),
    )
    .expect("a revocation");
    let catalog = catalog.display().to_string();
    let worker = queued.worker("w", &["--catalog", &catalog]);
    finish(worker, "w");
    let results = queued.results();
    assert_eq!(results.len(), 2);
    for line in &results {
        assert_eq!(line["status"], "refused", "{line}");
        let error = line["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("the approval of corebank.member.transfer_funds@1.0.0 changed since the batch was submitted"),
            "{line}"
        );
    }
    assert!(
        queued.batch.scene.fixture().handle().transfers().is_empty(),
        "nothing was posted"
    );
}
