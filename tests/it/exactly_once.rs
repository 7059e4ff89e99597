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

/// A batch of transfers from 12345's savings to its checking, one row per amount.
pub(crate) struct TransferBatch {
    pub(crate) scene: Scene,
    approval: String,
    rows: String,
    pub(crate) batch_id: String,
}

impl TransferBatch {
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
        let rows = scene.scratch.path().join("transfers.jsonl");
        let text: String = amounts
            .iter()
            .map(|amount| {
                format!(
                    "{{\"member_id\": \"12345\", \"from_account\": \"S-12345-01\", \"to_account\": \"C-12345-02\", \"amount\": \"{amount}\"}}\n"
                )
            })
            .collect();
        std::fs::write(&rows, text).expect("a rows file");
        Self {
            scene,
            approval: approval.display().to_string(),
            rows: rows.display().to_string(),
            batch_id: batch_id.to_owned(),
        }
    }

    pub(crate) fn args(&self, resume: bool) -> Vec<String> {
        let mut args: Vec<String> = [
            "corebank.member.transfer_funds@1.0.0",
            "--inputs",
            &self.rows,
            "--allow-irreversible",
            "--approval",
            &self.approval,
            "--run-id",
            &self.batch_id,
        ]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
        if resume {
            args.push("--resume".to_owned());
        }
        args
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

    /// The idempotency key every attempt at `row` passes as its client reference.
    pub(crate) fn key(&self, row: u64) -> String {
        cua_evidence::idempotency_key(&self.batch_id, Some(row))
    }

    /// How many transfers the core system holds under `row`'s key.
    pub(crate) fn posted(&self, row: u64) -> usize {
        self.scene
            .fixture()
            .handle()
            .transfers_with_client_reference(&self.key(row))
            .len()
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
/// there leaves it (a prefix of the chain, no run record).
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
}

/// An attempt interrupted after its confirm was observed: the transfer happened, so the row is
/// reported `confirmed` and never run again.
#[test]
fn an_interrupted_row_whose_transfer_was_confirmed_is_reported_not_repeated() {
    let batch = TransferBatch::new(&["10.00", "20.00"], "confirmed-batch");
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
    let batch = TransferBatch::new(&["10.00", "20.00"], "done-batch");
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
    let batch = TransferBatch::new(&["10.00"], "redo-batch");
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
    let batch = TransferBatch::new(&["10.00"], "unknown-batch");
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
