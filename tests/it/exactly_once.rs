//! Exactly-once mutations through the binary: a batch of irreversible transfers whose attempts
//! are interrupted, then `--resume`d. A row is never posted twice: a confirmed mutation is
//! reported, one in doubt is reconciled through `corebank.transfer.find_by_reference` (done:
//! reported with no new dispatch; not done: run again under the same idempotency key), and a
//! reconciliation that cannot answer leaves the row to a person. The fixture's own ledger,
//! counted by client reference, is the judge.
//!
//! An interruption is reproduced here exactly as a `kill -9` leaves it (the crash harness in
//! `crash.rs` does it for real): the attempt's trace cut after a line, no `run_record.json`, and
//! no `done` line for the row in the batch's state file.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::replay::{Scene, verify};

const TRANSFER: &str = "capabilities/corebank.member.transfer_funds@1.0.0.yaml";

/// What a batch does, one row per value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workload {
    /// Irreversible: transfers from 12345's savings to its checking, one per amount.
    Transfers,
    /// Reversible (`elevated`, no reconciliation): checking sub-accounts for member 24680,
    /// one per initial deposit.
    Subaccounts,
}

/// A batch of one workload against one fixture, under a batch id that can change between
/// batches (each batch id is a separate state file, separate rows and separate keys).
pub(crate) struct Batch {
    pub(crate) scene: Scene,
    approval: String,
    rows: String,
    workload: Workload,
    /// Each row's value (amount or deposit), in row order.
    values: Vec<String>,
    pub(crate) batch_id: String,
}

impl Batch {
    pub(crate) fn new(amounts: &[&str], batch_id: &str) -> Self {
        let scene = Scene::new();
        let transfer = cua_artifact::Capability::from_yaml(
            &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(TRANSFER))
                .expect("the catalog capability"),
        )
        .expect("a sealed capability");
        let approval = scene.scratch.path().join("transfer.approval.yaml");
        std::fs::write(
            &approval,
            format!(
                "schema: cua.capability_approval/v1\ncapability: {}\ncontent_hash: {}\nstate: approved\napproved_by: reviewer\n",
                transfer.reference(),
                transfer.content_hash.as_ref().expect("sealed")
            ),
        )
        .expect("an approval file");
        let rows = scene.scratch.path().join("rows.jsonl");
        let mut batch = Self {
            scene,
            approval: approval.display().to_string(),
            rows: rows.display().to_string(),
            workload: Workload::Transfers,
            values: Vec::new(),
            batch_id: String::new(),
        };
        batch.start(Workload::Transfers, batch_id, amounts);
        batch
    }

    /// Points the batch at a new batch id, workload and rows (one per value).
    pub(crate) fn start(&mut self, workload: Workload, batch_id: &str, values: &[&str]) {
        let text: String = values
            .iter()
            .map(|value| match workload {
                Workload::Transfers => format!(
                    "{{\"member_id\": \"12345\", \"from_account\": \"S-12345-01\", \"to_account\": \"C-12345-02\", \"amount\": \"{value}\"}}\n"
                ),
                Workload::Subaccounts => format!(
                    "{{\"member_id\": \"24680\", \"account_type\": \"checking\", \"initial_deposit\": \"{value}\"}}\n"
                ),
            })
            .collect();
        std::fs::write(&self.rows, text).expect("a rows file");
        self.workload = workload;
        self.values = values.iter().map(|value| (*value).to_owned()).collect();
        self.batch_id = batch_id.to_owned();
    }

    pub(crate) fn args(&self, resume: bool) -> Vec<String> {
        let capability = match self.workload {
            Workload::Transfers => "corebank.member.transfer_funds@1.0.0",
            Workload::Subaccounts => "corebank.member.open_subaccount@1.0.0",
        };
        let mut args: Vec<String> = [
            capability,
            "--inputs",
            &self.rows,
            "--run-id",
            &self.batch_id,
        ]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
        if self.workload == Workload::Transfers {
            args.extend(["--allow-irreversible", "--approval", &self.approval].map(str::to_owned));
        }
        if resume {
            args.push("--resume".to_owned());
        }
        args
    }

    /// The approval file the transfers run under.
    pub(crate) fn approval(&self) -> &str {
        &self.approval
    }

    /// The rows file.
    pub(crate) fn rows(&self) -> &str {
        &self.rows
    }

    pub(crate) fn workload(&self) -> Workload {
        self.workload
    }

    /// Starts `cua replay … --resume` on the batch as a child process (stdout and stderr piped).
    pub(crate) fn spawn(&self) -> std::process::Child {
        self.scene
            .replay_command(&self.args(true))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the cua binary starts")
    }

    /// Runs the batch (or resumes it) to the end: exit code, one JSON value per row, stderr.
    fn run(&self, resume: bool, extra: &[&str]) -> (i32, Vec<Value>, String) {
        let mut args = self.args(resume);
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = self.scene.replay(&args, &[]);
        let lines = stdout
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect();
        (code, lines, stderr)
    }

    /// The idempotency key every attempt at `row` passes as its client reference: the batch
    /// id and the random nonce its state file's header holds.
    pub(crate) fn key(&self, row: u64) -> String {
        let state = self
            .scene
            .evidence()
            .join(format!("{}.batch.jsonl", self.batch_id));
        let header: Value = std::fs::read_to_string(&state)
            .ok()
            .and_then(|text| text.lines().next().map(str::to_owned))
            .and_then(|line| serde_json::from_str(&line).ok())
            .unwrap_or(Value::Null);
        let nonce = header["nonce"].as_str().unwrap_or_default();
        cua_evidence::idempotency_key(&format!("{}/{nonce}", self.batch_id), Some(row))
    }

    /// How many times the core system holds `row`'s effect: transfers under its key, or
    /// sub-accounts of 24680 opened with its deposit.
    pub(crate) fn posted(&self, row: u64) -> usize {
        let handle = self.scene.fixture().handle();
        match self.workload {
            Workload::Transfers => handle.transfers_with_client_reference(&self.key(row)).len(),
            Workload::Subaccounts => {
                let deposit = usize::try_from(row - 1)
                    .ok()
                    .and_then(|index| self.values.get(index))
                    .expect("a row of this batch");
                handle
                    .member("24680")
                    .expect("member 24680")
                    .accounts
                    .iter()
                    .filter(|account| account.balance.decimal() == *deposit)
                    .count()
            }
        }
    }

    pub(crate) fn run_dir(&self, run_id: &str) -> PathBuf {
        self.scene.evidence().join(run_id)
    }

    /// Makes row `row` look interrupted: its `done` line is gone from the state file.
    fn forget_done(&self, row: usize) {
        let state = self
            .scene
            .evidence()
            .join(format!("{}.batch.jsonl", self.batch_id));
        let kept: String = std::fs::read_to_string(&state)
            .expect("the state file")
            .lines()
            .filter(|line| {
                !(line.contains("\"state\":\"done\"") && line.contains(&format!("\"row\":{row},")))
            })
            .map(|line| format!("{line}\n"))
            .collect();
        std::fs::write(&state, kept).expect("the state file");
    }
}

/// Cuts a run's trace right after the confirm's first line whose event is `event`, as a kill
/// there leaves it: a prefix of the chain, no run record, and no line in the evidence root's
/// ledger (the run's line must be the ledger's last, as a kill leaves it).
fn cut_after(run_dir: &Path, event: &str) {
    let trace = run_dir.join("trace.jsonl");
    let text = std::fs::read_to_string(&trace).expect("a trace");
    let mut kept = String::new();
    let mut found = false;
    for line in text.lines() {
        kept.push_str(line);
        kept.push('\n');
        let value: Value = serde_json::from_str(line).expect("a trace line");
        if value["event"] == event && value["step"] == "post_transfer" {
            found = true;
            break;
        }
    }
    assert!(
        found,
        "{} has no {event} for post_transfer",
        trace.display()
    );
    std::fs::write(&trace, kept).expect("the trace");
    std::fs::remove_file(run_dir.join("run_record.json")).expect("a finished run's record");
    let ledger = run_dir
        .parent()
        .expect("an evidence root")
        .join(cua_evidence::LEDGER_FILE);
    let text = std::fs::read_to_string(&ledger).expect("the ledger");
    let mut lines: Vec<&str> = text.lines().collect();
    let last: Value = serde_json::from_str(lines.pop().expect("a ledger line")).expect("JSON");
    let run_id = run_dir.file_name().and_then(|name| name.to_str());
    assert_eq!(last["run_id"].as_str(), run_id, "the run finished last");
    let kept: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&ledger, kept).expect("the ledger");
}

/// An attempt interrupted after its confirm was observed: the transfer happened, so the row is
/// reported `confirmed` and never run again.
#[test]
fn an_interrupted_row_whose_transfer_was_confirmed_is_reported_not_repeated() {
    let batch = Batch::new(&["10.00", "20.00"], "confirmed-batch");
    let (code, lines, stderr) = batch.run(false, &[]);
    assert_eq!(code, 0, "{lines:?}\n{stderr}");
    assert_eq!((batch.posted(1), batch.posted(2)), (1, 1));
    cut_after(&batch.run_dir("confirmed-batch-row-2"), "effect");
    batch.forget_done(2);

    let (code, lines, stderr) = batch.run(true, &[]);
    assert_eq!(code, 0, "{lines:?}\n{stderr}");
    assert_eq!(lines[0]["status"], "success");
    assert_eq!(lines[1]["status"], "confirmed", "{}", lines[1]);
    assert!(
        lines[1]["settled"]
            .as_str()
            .is_some_and(|settled| settled.contains("`post_transfer` was confirmed")),
        "{}",
        lines[1]
    );
    assert_eq!((batch.posted(1), batch.posted(2)), (1, 1));
    assert_eq!(batch.scene.fixture().handle().transfers().len(), 2);
}

/// An attempt killed between its confirm's intent and anything after it: the transfer is in
/// doubt. It happened, so the reconciliation finds it by its client reference and the row is
/// `confirmed` with no new dispatch.
#[test]
fn an_in_doubt_transfer_that_happened_is_reconciled_as_done() {
    let batch = Batch::new(&["10.00", "20.00"], "done-batch");
    let (code, lines, stderr) = batch.run(false, &[]);
    assert_eq!(code, 0, "{lines:?}\n{stderr}");
    let attempt = batch.run_dir("done-batch-row-2");
    cut_after(&attempt, "intent");
    batch.forget_done(2);

    let (code, lines, stderr) = batch.run(true, &[]);
    assert_eq!(code, 0, "{lines:?}\n{stderr}");
    assert_eq!(lines[1]["status"], "confirmed", "{}", lines[1]);
    let settled = lines[1]["settled"].as_str().expect("how it was settled");
    assert!(
        settled.contains("`post_transfer`") && settled.contains("answered done"),
        "{settled}"
    );
    assert_eq!((batch.posted(1), batch.posted(2)), (1, 1));
    // The reconciliation is a run of its own, read-only, with evidence that verifies; the
    // interrupted attempt verifies as the prefix a kill leaves.
    let reconciliations: Vec<PathBuf> = std::fs::read_dir(batch.scene.evidence())
        .expect("the evidence root")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| {
            path.file_name().is_some_and(|name| {
                name.to_string_lossy()
                    .starts_with("done-batch-row-2-reconcile-")
            })
        })
        .collect();
    assert_eq!(reconciliations.len(), 1, "{reconciliations:?}");
    let trace = cua_evidence::read_trace(&reconciliations[0]).expect("its trace");
    assert!(cua_evidence::intents(&trace).is_empty());
    assert_eq!(verify(&reconciliations[0]).0, 0);
    let (code, stdout, _) = verify(&attempt);
    assert_eq!(code, 0, "{stdout}");
}

/// In doubt, and it never happened (the core system lost it): the reconciliation answers "not
/// done", and the row runs again as attempt 2 under the same key: exactly one transfer.
#[test]
fn an_in_doubt_transfer_that_never_happened_runs_again_under_the_same_key() {
    let batch = Batch::new(&["10.00"], "redo-batch");
    let (code, lines, stderr) = batch.run(false, &[]);
    assert_eq!(code, 0, "{lines:?}\n{stderr}");
    cut_after(&batch.run_dir("redo-batch-row-1"), "intent");
    batch.forget_done(1);
    // The confirm never reached the core system: its ledger is back to before the batch.
    batch.scene.fixture().handle().reset();
    assert_eq!(batch.posted(1), 0);

    let (code, lines, stderr) = batch.run(true, &[]);
    assert_eq!(code, 0, "{lines:?}\n{stderr}");
    assert_eq!(lines[0]["status"], "success", "{}", lines[0]);
    assert_eq!(lines[0]["run_id"], "redo-batch-row-1-attempt-2");
    assert_eq!(batch.posted(1), 1);
    let trace = cua_evidence::read_trace(&batch.run_dir("redo-batch-row-1-attempt-2"))
        .expect("the second attempt's trace");
    let intents = cua_evidence::intents(&trace);
    assert_eq!(intents.len(), 1);
    assert_eq!(intents[0].intent.attempt, 2);
    assert_eq!(intents[0].intent.row, Some(1));
    assert_eq!(intents[0].intent.idempotency_key, batch.key(1));
}

/// In doubt, and the reconciliation cannot answer (its capability is not in the catalog the
/// batch runs from): the row goes to a person, naming the step and the attempt's evidence, and
/// nothing is dispatched.
#[test]
fn an_in_doubt_transfer_nobody_can_reconcile_needs_a_human() {
    let batch = Batch::new(&["10.00"], "unknown-batch");
    let (code, lines, stderr) = batch.run(false, &[]);
    assert_eq!(code, 0, "{lines:?}\n{stderr}");
    cut_after(&batch.run_dir("unknown-batch-row-1"), "intent");
    batch.forget_done(1);
    let catalog = batch.scene.scratch.path().join("catalog");
    std::fs::create_dir_all(&catalog).expect("a catalog");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities");
    for name in [
        "corebank.member.transfer_funds@1.0.0.yaml",
        "corebank.auth.sign_on@1.0.0.yaml",
    ] {
        std::fs::copy(root.join(name), catalog.join(name)).expect("a catalog copy");
    }
    let catalog = catalog.display().to_string();

    let (code, lines, stderr) = batch.run(true, &["--catalog", &catalog]);
    assert_eq!(code, 3, "{lines:?}\n{stderr}");
    assert_eq!(lines[0]["status"], "needs_human", "{}", lines[0]);
    let reason = lines[0]["error"].as_str().expect("a reason");
    assert!(
        reason.contains("`post_transfer`")
            && reason.contains("answered unknown")
            && reason.contains("corebank.transfer.find_by_reference"),
        "{reason}"
    );
    assert!(
        lines[0]["evidence_dir"]
            .as_str()
            .is_some_and(|dir| dir.ends_with("unknown-batch-row-1")),
        "{}",
        lines[0]
    );
    assert_eq!(batch.posted(1), 1);
    // Resuming again reports the same row the same way and still posts nothing.
    let (code, _, _) = batch.run(true, &["--catalog", &catalog]);
    assert_eq!(code, 3);
    assert_eq!(batch.posted(1), 1);
}

/// SIGTERM as soon as row 1's confirm was announced, SIGINT as soon as row 1 started: the
/// action in flight settles, nothing more is dispatched, the process exits 143 or 130 saying
/// how to resume, no browser is left, and the resumed batch finishes every row exactly once.
/// After SIGTERM row 1 still finishes (only reads follow its confirm); after SIGINT it stops
/// before its next click, `interrupted`, and runs again on resume (it had mutated nothing).
#[test]
fn a_signal_stops_a_batch_cleanly_and_resume_finishes_it_exactly_once() {
    for (signal, code, wait_for) in [
        ("TERM", 143, "\"event\":\"intent\""),
        ("INT", 130, "\"event\":\"run_start\""),
    ] {
        let batch_id = format!("signal-{}", signal.to_lowercase());
        let batch = Batch::new(&["0.21", "0.22", "0.23"], &batch_id);
        let child = batch.spawn();
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let row_1 = batch.run_dir(&format!("{batch_id}-row-1"));
        while !std::fs::read_to_string(row_1.join("trace.jsonl"))
            .is_ok_and(|trace| trace.contains(wait_for))
        {
            assert!(
                std::time::Instant::now() < give_up,
                "no {wait_for} within 60 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).expect("a pid"))
            .expect("a live child's pid");
        let sent = if signal == "TERM" {
            rustix::process::Signal::TERM
        } else {
            rustix::process::Signal::INT
        };
        rustix::process::kill_process(pid, sent).expect("the signal is sent");
        let pid = child.id();
        let output = child.wait_with_output().expect("the batch ends");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{stderr}");
        assert!(
            stderr.contains(&format!("--resume --run-id {batch_id}")),
            "{stderr}"
        );
        // Nothing after row 1 was dispatched: rows 2 and 3 never started.
        assert_eq!((batch.posted(2), batch.posted(3)), (0, 0));
        assert!(!batch.run_dir(&format!("{batch_id}-row-2")).exists());
        let trace = cua_evidence::read_trace(&row_1).expect("row 1's trace");
        let end = trace
            .iter()
            .find_map(|line| match &line.event {
                cua_evidence::Event::RunEnd(end) => Some(end.clone()),
                _ => None,
            })
            .expect("row 1 ended");
        if signal == "TERM" {
            assert_eq!(batch.posted(1), 1);
            assert_eq!(end.status, cua_artifact::RunStatus::Success);
        } else {
            assert_eq!(batch.posted(1), 0);
            assert_eq!(
                end.failure_code,
                Some(cua_artifact::FailureCode::Interrupted)
            );
            assert!(cua_evidence::intents(&trace).is_empty());
        }
        let leftovers = std::fs::read_dir(std::env::temp_dir())
            .expect("the temp dir")
            .filter_map(Result::ok)
            .filter(|entry| {
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(&format!("cua-chromium-{pid}-"))
            })
            .count();
        assert_eq!(leftovers, 0, "the browser's profile is gone");

        let (code, lines, stderr) = batch.run(true, &[]);
        assert_eq!(code, 0, "{lines:?}\n{stderr}");
        let statuses: Vec<&str> = lines
            .iter()
            .map(|line| line["status"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(statuses, ["success", "success", "success"], "{lines:?}");
        assert_eq!(
            (batch.posted(1), batch.posted(2), batch.posted(3)),
            (1, 1, 1)
        );
        if signal == "INT" {
            assert_eq!(lines[0]["run_id"], format!("{batch_id}-row-1-attempt-2"));
        }
    }
}

/// The state file binds `--resume` to the batch it describes and to one process at a time: a
/// second `cua` on a running batch is refused, a changed rows file is refused, a fresh run of
/// an interrupted batch's rows is refused, and two rows giving one idempotency key are refused.
#[test]
fn resume_is_refused_for_another_batch_a_running_batch_or_a_repeated_key() {
    let batch = Batch::new(&["0.31", "0.32"], "guard-batch");
    // A second cua while the first holds the batch.
    let first = batch.spawn();
    let state = batch.scene.evidence().join("guard-batch.batch.jsonl");
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_to_string(&state).is_ok_and(|text| text.contains("\"started\"")) {
        assert!(
            std::time::Instant::now() < give_up,
            "the batch never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let (code, lines, stderr) = batch.run(true, &[]);
    assert_eq!(code, 2, "{lines:?}\n{stderr}");
    assert!(
        stderr.contains("another cua is running this batch"),
        "{stderr}"
    );
    let output = first.wait_with_output().expect("the first batch ends");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!((batch.posted(1), batch.posted(2)), (1, 1));

    // The rows file changed since the batch started: row numbers would name other rows.
    let rows = batch.scene.scratch.path().join("rows.jsonl");
    let text = std::fs::read_to_string(&rows).expect("the rows");
    std::fs::write(&rows, format!("{{\"member_id\": \"12345\", \"from_account\": \"S-12345-01\", \"to_account\": \"C-12345-02\", \"amount\": \"0.39\"}}\n{text}")).expect("rows");
    let (code, _, stderr) = batch.run(true, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("belongs to another batch"), "{stderr}");
    std::fs::write(&rows, text).expect("rows");
    assert_eq!(batch.scene.fixture().handle().transfers().len(), 2);

    // Without --run-id, the rows file names the batch: after an interruption a fresh run is
    // refused (it would post everything again under new keys).
    let rows_arg = rows.display().to_string();
    let approval = batch.scene.scratch.path().join("transfer.approval.yaml");
    let approval = approval.display().to_string();
    let plain = [
        "corebank.member.transfer_funds@1.0.0",
        "--inputs",
        rows_arg.as_str(),
        "--allow-irreversible",
        "--approval",
        approval.as_str(),
    ];
    let (code, _, stderr) = batch.scene.replay(&plain, &[]);
    assert_eq!(code, 0, "{stderr}");
    let derived = batch.scene.evidence().join("batch-rows.batch.jsonl");
    let kept: String = std::fs::read_to_string(&derived)
        .expect("the derived state file")
        .lines()
        .filter(|line| !(line.contains("\"state\":\"done\"") && line.contains("\"row\":2,")))
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(&derived, kept).expect("the state file");
    let (code, _, stderr) = batch.scene.replay(&plain, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("was interrupted with rows unfinished"),
        "{stderr}"
    );
    assert_eq!(batch.scene.fixture().handle().transfers().len(), 4);

    // Two rows giving the same client reference: the second is refused, the first runs.
    let dup = batch.scene.scratch.path().join("dup.jsonl");
    let row = |amount: &str| {
        format!(
            "{{\"member_id\": \"12345\", \"from_account\": \"S-12345-01\", \"to_account\": \"C-12345-02\", \"amount\": \"{amount}\", \"client_reference\": \"ref-1\"}}\n"
        )
    };
    std::fs::write(&dup, format!("{}{}", row("0.41"), row("0.42"))).expect("rows");
    let dup = dup.display().to_string();
    let (code, stdout, stderr) = batch.scene.replay(
        &[
            "corebank.member.transfer_funds@1.0.0",
            "--inputs",
            dup.as_str(),
            "--allow-irreversible",
            "--approval",
            approval.as_str(),
        ],
        &[],
    );
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect();
    assert_eq!(lines[0]["status"], "success", "{}", lines[0]);
    assert_eq!(lines[1]["status"], "invalid_row", "{}", lines[1]);
    assert!(
        lines[1]["error"]
            .as_str()
            .is_some_and(|error| error.contains("repeats row 1"))
    );
    assert_eq!(
        batch
            .scene
            .fixture()
            .handle()
            .transfers_with_client_reference("ref-1")
            .len(),
        1
    );
}
