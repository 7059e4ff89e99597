//! The batch queue through the binary, on a real PostgreSQL server (`scripts/postgres.sh up`)
//! and the MemberDesk fixture: workers share a batch and post each transfer once; a worker
//! killed after it journaled a transfer's intent leaves the row to be reconciled by another
//! worker, never posted twice; a worker refuses a batch whose approval changed since it was
//! submitted. The fixture's ledger, counted by each row's idempotency key, is the judge.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use cua_queue::testing::TestDatabase;
use serde_json::Value;

use crate::exactly_once::{Batch, Workload};

const TRANSFER: &str = "corebank.member.transfer_funds@1.0.0";

/// A batch of transfers on a queue of its own.
struct Queued {
    batch: Batch,
    database: TestDatabase,
    id: String,
}

impl Queued {
    /// Transfers of `amounts`, submitted as batch `id`. Submitter and workers read a copy of
    /// the catalog that records the transfer's approval, as a deployment's shared catalog does.
    fn submit(amounts: &[&str], id: &str) -> Self {
        let queued = Self {
            batch: Batch::new(amounts, id),
            database: TestDatabase::create(),
            id: id.to_owned(),
        };
        let catalog = queued.catalog();
        std::fs::create_dir(&catalog).expect("a catalog copy");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities");
        for entry in std::fs::read_dir(&source).expect("the catalog") {
            let entry = entry.expect("an entry");
            std::fs::copy(entry.path(), catalog.join(entry.file_name())).expect("a copy");
        }
        std::fs::copy(
            queued.batch.approval(),
            catalog.join(format!("{TRANSFER}.approval.yaml")),
        )
        .expect("the approval in the catalog");
        queued.submit_rows(TRANSFER, id, amounts.len());
        queued
    }

    /// The catalog every command of this queue reads.
    fn catalog(&self) -> std::path::PathBuf {
        self.batch.scene.scratch.path().join("catalog")
    }

    /// Submits the batch's rows file as batch `id` of `capability`: under the transfer's
    /// approval when it is the transfer.
    fn submit_rows(&self, capability: &str, id: &str, rows: usize) {
        let base_url = self.batch.scene.base_url();
        let mut args = vec![
            "batch",
            "submit",
            capability,
            "--inputs",
            self.batch.rows(),
            "--id",
            id,
            "--base-url",
            &base_url,
        ];
        if capability == TRANSFER {
            args.extend(["--allow-irreversible", "--approval", self.batch.approval()]);
        }
        let output = self.run(&args);
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!("submitted {id}: {rows} rows of {capability} ({rows} to run, 0 invalid)\n"),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = self.batch.scene.cua_command();
        command
            .args(args)
            .env("CUA_QUEUE_URL", &self.database.url)
            .env("CUA_EVIDENCE_DIR", self.batch.scene.evidence())
            .env("CUA_CATALOG", self.catalog());
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
        let mut args = vec!["--batch", self.id.as_str()];
        args.extend_from_slice(extra);
        self.any_worker(name, &args)
    }

    /// Starts `cua worker --drain --worker-id NAME EXTRA…`, of any batch.
    fn any_worker(&self, name: &str, extra: &[&str]) -> Child {
        let mut args = vec!["worker", "--drain", "--worker-id", name];
        args.extend_from_slice(extra);
        self.command(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the cua binary starts")
    }

    fn results(&self) -> Vec<Value> {
        self.results_of(&self.id)
    }

    fn results_of(&self, id: &str) -> Vec<Value> {
        let output = self.run(&["batch", "results", id]);
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    }

    fn status(&self) -> Value {
        self.status_of(&self.id)
    }

    fn status_of(&self, id: &str) -> Value {
        let output = self.run(&["--format", "json", "batch", "status", id]);
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

/// A worker refuses to run a batch whose approval its catalog no longer records as submitted
/// (revoked, or never recorded): the rows stay queued for a worker whose catalog agrees,
/// nothing is posted, and the worker says why and exits 2.
#[test]
fn a_worker_refuses_a_batch_whose_approval_its_catalog_does_not_hold() {
    let queued = Queued::submit(&["8.00", "9.00"], "qrevoked");
    let recorded = queued.catalog().join(format!("{TRANSFER}.approval.yaml"));
    let approval = std::fs::read_to_string(&recorded).expect("the approval");
    std::fs::write(
        &recorded,
        approval.replace("state: approved", "state: revoked"),
    )
    .expect("a revocation");
    let output = queued
        .worker("w", &[])
        .wait_with_output()
        .expect("the worker ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "refusing batch qrevoked: the approval of corebank.member.transfer_funds@1.0.0 \
             changed since the batch was submitted (now revoked); its rows stay queued"
        ),
        "{stderr}"
    );
    // An approval the catalog never recorded (one given on the submitter's command line only)
    // is no approval to a worker either.
    std::fs::remove_file(&recorded).expect("the approval is gone");
    let output = queued
        .worker("w2", &[])
        .wait_with_output()
        .expect("the worker ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("does not record: approve it in the catalog the workers read"),
        "{stderr}"
    );
    let status = queued.status();
    assert_eq!(
        (status["queued"].as_u64(), status["done"].as_u64()),
        (Some(2), Some(0)),
        "{status}"
    );
    assert!(
        queued.batch.scene.fixture().handle().transfers().is_empty(),
        "nothing was posted"
    );
}

/// A tiny deterministic generator, so a failing schedule of kills can be replayed from its
/// seed.
struct Schedule(u64);

impl Schedule {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// Worker processes share two batches (irreversible transfers with a reconciliation, and
/// reversible sub-account openings without one) and are killed with SIGKILL at random while
/// they run; one is also frozen (SIGSTOP) past its lease and thawed after another worker took
/// its row. Afterwards every row is settled, none is lost, and none is posted twice (what the
/// thawed worker could still write for the row it lost is refused by the epoch; the queue's own
/// tests pin each refusal).
#[test]
#[expect(
    clippy::print_stderr,
    reason = "the chaos prints its seed and counts, to replay a failing schedule"
)]
fn workers_killed_at_random_leave_every_row_settled_and_none_posted_twice() {
    let seed = std::env::var("CUA_QUEUE_CHAOS_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(20_261_202);
    let mut schedule = Schedule(seed);
    let amounts = [
        "11.00", "12.00", "13.00", "14.00", "15.00", "16.00", "17.00", "18.00",
    ];
    let mut queued = Queued::submit(&amounts, "qchaos-t");
    let deposits = ["101.00", "102.00", "103.00", "104.00", "105.00", "106.00"];
    queued
        .batch
        .start(Workload::Subaccounts, "qchaos-s", &deposits);
    queued.submit_rows(
        "corebank.member.open_subaccount@1.0.0",
        "qchaos-s",
        deposits.len(),
    );
    let flags = ["--lease-seconds", "3", "--grace-seconds", "1"];
    let mut live: Vec<(String, Child)> = (1..=3)
        .map(|n| {
            let name = format!("w{n}");
            let child = queued.any_worker(&name, &flags);
            (name, child)
        })
        .collect();
    let mut finished: Vec<(String, Output)> = Vec::new();
    let mut kills = 0;
    let mut frozen: Option<(String, Child)> = None;
    let started = Instant::now();
    let mut spawned = 3;
    while kills < 4 || frozen.is_some() {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the chaos did not end (seed {seed})"
        );
        std::thread::sleep(Duration::from_millis(1500 + schedule.next(1500)));
        // Whoever ended on their own (the queue drained) is collected.
        let mut index = 0;
        while index < live.len() {
            if live[index]
                .1
                .try_wait()
                .expect("a worker's status")
                .is_some()
            {
                let (name, child) = live.remove(index);
                finished.push((name, child.wait_with_output().expect("output")));
            } else {
                index += 1;
            }
        }
        if let Some((name, child)) = frozen.take() {
            // Thawed after its lease ran out and another worker could take its row.
            signal(&child, "CONT");
            live.push((name, child));
            continue;
        }
        if live.is_empty() {
            break;
        }
        let victim = usize::try_from(schedule.next(live.len() as u64)).expect("an index");
        if kills == 1 {
            // Frozen past its lease (3 s) and the grace (1 s).
            let (name, child) = live.remove(victim);
            signal(&child, "STOP");
            std::thread::sleep(Duration::from_secs(6));
            frozen = Some((name, child));
        } else {
            let (_, mut child) = live.remove(victim);
            child.kill().expect("SIGKILL");
            child.wait().expect("the killed worker is gone");
        }
        kills += 1;
        spawned += 1;
        let name = format!("w{spawned}");
        let child = queued.any_worker(&name, &flags);
        live.push((name, child));
    }
    for (name, child) in live {
        let output = child.wait_with_output().expect("a worker ends");
        finished.push((name, output));
    }
    let stderr: Vec<String> = finished
        .iter()
        .map(|(name, output)| format!("{name}: {}", String::from_utf8_lossy(&output.stderr)))
        .collect();
    for (name, output) in &finished {
        assert_eq!(
            output.status.code(),
            Some(0),
            "worker {name} (seed {seed}): {stderr:?}"
        );
    }

    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    for (id, rows) in [("qchaos-t", amounts.len()), ("qchaos-s", deposits.len())] {
        let status = queued.status_of(id);
        assert_eq!(
            (
                status["done"].as_u64(),
                status["queued"].as_u64(),
                status["running"].as_u64()
            ),
            (Some(rows as u64), Some(0), Some(0)),
            "every row of {id} settled (seed {seed}): {status}"
        );
        let results = queued.results_of(id);
        assert_eq!(results.len(), rows, "no row of {id} lost (seed {seed})");
        for line in &results {
            let status = line["status"].as_str().unwrap_or_default().to_owned();
            assert!(
                matches!(status.as_str(), "success" | "confirmed" | "needs_human"),
                "seed {seed}: {line}"
            );
            let row = line["row"].as_u64().expect("a row number");
            let posted = if id == "qchaos-t" {
                queued.posted(Path::new(line["evidence_dir"].as_str().expect("evidence")))
            } else {
                queued.batch.posted(row)
            };
            // Posted once when the row says it happened; at most once when a person must
            // look (a sub-account opening has no reconciliation to ask).
            match status.as_str() {
                "needs_human" => assert!(posted <= 1, "posted twice (seed {seed}): {line}"),
                _ => assert_eq!(posted, 1, "seed {seed}: {line}"),
            }
            *statuses.entry(format!("{id} {status}")).or_insert(0) += 1;
        }
    }
    let refused = stderr
        .iter()
        .filter(|text| text.contains("is lost; nothing more is dispatched"))
        .count();
    eprintln!(
        "queue chaos (seed {seed}): {kills} kills and freezes, {} workers, rows {statuses:?}, \
         {refused} worker(s) told their claim was lost",
        spawned
    );
}

/// Sends SIGSTOP or SIGCONT to `child`.
fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([format!("-{name}"), child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{name}");
}
