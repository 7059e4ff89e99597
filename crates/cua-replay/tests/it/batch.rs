//! The batch rules a row's fate hangs on, without a browser: which rows a shard runs, the run
//! id of each attempt, what earlier attempts' traces on disk decide for an interrupted row, and
//! what a reconciliation's answer allows. Traces are written by a real evidence bus.

use std::path::Path;
use std::sync::Arc;

use cua_artifact::{ActionKind, Actor, Capability, RiskTier, StepId};
use cua_evidence::{Dispatch, EvidenceBus, FixedClock, Intent, Redactor, RunId, Timestamp};
use cua_replay::{
    InDoubt, Interrupted, Journaled, Reconciliation, Settled, Shard, after_reconciliation,
    announced_mutations, attempt_run_id, batch_id, interrupted_row,
};

fn transfer() -> Capability {
    Capability::from_yaml(include_str!(
        "../../../../capabilities/corebank.member.transfer_funds@1.0.0.yaml"
    ))
    .unwrap()
}

/// Writes the trace of attempt `run_id`: an intent at `post_transfer`, then a dispatch that
/// either left (`sent`) or was refused at the lease check.
fn attempt(root: &Path, run_id: &str, sent: bool) {
    let bus = EvidenceBus::create(
        root,
        RunId::parse(run_id).unwrap(),
        Arc::new(FixedClock(Timestamp::UNIX_EPOCH)),
        Redactor::default(),
    )
    .unwrap();
    let step = StepId::parse("post_transfer").unwrap();
    let intent = Intent::of_run(
        run_id,
        Some(step.clone()),
        "dec-000009",
        ActionKind::Click,
        RiskTier::Irreversible,
    );
    bus.emit(Actor::Automation, 1, intent).unwrap();
    let dispatch = if sent {
        Dispatch {
            ok: true,
            refused: false,
            reason: None,
            expected_epoch: None,
            ..Dispatch::refused(Some(step), "dec-000009", ActionKind::Click, None, "", None)
        }
    } else {
        Dispatch::refused(
            Some(step),
            "dec-000009",
            ActionKind::Click,
            None,
            "stale lease epoch",
            Some(3),
        )
    };
    bus.emit(Actor::Automation, 1, dispatch).unwrap();
}

fn fate(root: &Path, attempts: &[&str]) -> String {
    fate_journaled(root, attempts, &[])
}

/// [`fate`], with intents a queue's journal holds besides the traces.
fn fate_journaled(root: &Path, attempts: &[&str], journaled: &[Journaled]) -> String {
    let attempts: Vec<String> = attempts.iter().map(|id| (*id).to_owned()).collect();
    let decided = interrupted_row(root, &transfer(), &attempts, journaled);
    let last = decided.last_intent_run.unwrap_or_else(|| "-".to_owned());
    match decided.fate {
        Interrupted::RunAgain => format!("run again (last intent in {last})"),
        Interrupted::Confirmed { .. } => format!("confirmed (in {last})"),
        Interrupted::Reconcile(in_doubt) => format!("reconcile {} (in {last})", in_doubt.step),
        Interrupted::NeedsHuman { reason, .. } => format!("needs human (in {last}): {reason}"),
    }
}

#[test]
fn a_shard_takes_every_nth_row_and_names_its_own_batch() {
    let shard: Shard = "2/3".parse().unwrap();
    let rows: Vec<usize> = (1..=9).filter(|row| shard.contains(*row)).collect();
    assert_eq!(rows, [2, 5, 8]);
    assert_eq!(shard.to_string(), "2/3");
    for bad in ["0/3", "4/3", "1/0", "3", "a/b", "-1/3", "+1/3", "1/3/5", ""] {
        assert!(bad.parse::<Shard>().is_err(), "{bad}");
    }
    assert_eq!(
        batch_id("rows 2026.11", Some(shard)),
        "batch-rows-2026-11-shard-2-of-3"
    );
    assert_eq!(batch_id("rows", None), "batch-rows");
    assert_eq!(attempt_run_id("batch-rows", 4, 1), "batch-rows-row-4");
    assert_eq!(
        attempt_run_id("batch-rows", 4, 2),
        "batch-rows-row-4-attempt-2"
    );
}

#[test]
fn an_interrupted_row_is_decided_from_every_attempts_trace_on_disk() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    // Killed between its `started` line and its run directory: it dispatched nothing.
    assert_eq!(
        fate(root, &["never-written"]),
        "run again (last intent in -)"
    );
    // Refused at the dispatch: the intent settled as never sent.
    attempt(root, "refused", false);
    assert_eq!(
        fate(root, &["refused"]),
        "run again (last intent in refused)"
    );
    // Handed to the surface with no verdict: in doubt, and the step says how to find out,
    // whichever attempt it was.
    attempt(root, "left", true);
    assert_eq!(
        fate(root, &["refused", "left", "never-written"]),
        "reconcile post_transfer (in left)"
    );
    // A trace that exists and cannot be read may hold an intent: a person's question.
    std::fs::create_dir(root.join("unreadable")).unwrap();
    std::fs::write(
        root.join("unreadable").join("trace.jsonl"),
        b"{ not a trace\n",
    )
    .unwrap();
    let decided = fate(root, &["refused", "unreadable"]);
    assert!(
        decided
            .starts_with("needs human (in unreadable): attempt unreadable's trace cannot be read"),
        "{decided}"
    );
}

#[test]
fn a_run_that_broke_off_after_announcing_a_mutation_is_never_merely_failed() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    attempt(root, "left", true);
    attempt(root, "refused", false);
    assert_eq!(
        announced_mutations(&root.join("left")).as_deref(),
        Some("`post_transfer` (in doubt)")
    );
    assert_eq!(announced_mutations(&root.join("refused")), None);
    assert_eq!(announced_mutations(&root.join("never-written")), None);
    std::fs::create_dir(root.join("unreadable")).unwrap();
    std::fs::write(root.join("unreadable").join("trace.jsonl"), b"garbage\n").unwrap();
    let unknown = announced_mutations(&root.join("unreadable")).unwrap();
    assert!(unknown.starts_with("unknown ones"), "{unknown}");
}

#[test]
fn a_reconciliation_allows_a_rerun_only_when_nothing_of_the_row_happened() {
    let capability = transfer();
    let post = capability
        .steps
        .iter()
        .find(|step| step.id.as_str() == "post_transfer")
        .unwrap();
    let in_doubt = InDoubt {
        step: post.id.clone(),
        reconcile: post.reconcile.clone().unwrap(),
        other_confirmed: false,
        last: true,
    };
    let asked = "asked";
    let with = |last: bool, other_confirmed: bool| InDoubt {
        last,
        other_confirmed,
        ..in_doubt.clone()
    };
    let cases = [
        (Reconciliation::Done, with(true, false), "confirmed"),
        (
            Reconciliation::Done,
            with(false, false),
            "needs human: later mutating steps",
        ),
        (Reconciliation::NotDone, with(true, false), "run again"),
        (
            Reconciliation::NotDone,
            with(true, true),
            "needs human: another mutation",
        ),
        (
            Reconciliation::Unknown("the page timed out".to_owned()),
            with(true, false),
            "needs human: (the page timed out)",
        ),
    ];
    for (answer, in_doubt, expect) in cases {
        let settled = match after_reconciliation(&answer, &in_doubt, asked) {
            Settled::Confirmed(note) => format!("confirmed: {note}"),
            Settled::RunAgain => "run again".to_owned(),
            Settled::NeedsHuman(reason) => format!("needs human: {reason}"),
        };
        let (head, detail) = expect.split_once(": ").unwrap_or((expect, ""));
        assert!(
            settled.starts_with(head) && settled.contains(detail),
            "{answer:?} last={} other_confirmed={}: {settled}",
            in_doubt.last,
            in_doubt.other_confirmed
        );
    }
}

/// A run wired with a redactor another sink holds (the console's server) scrubs, in that sink,
/// every secret the run resolves: the redactor is shared, not copied.
#[test]
fn a_shared_redactor_learns_the_secrets_the_run_resolves() {
    let root = tempfile::tempdir().unwrap();
    let policy = crate::support::policy_config();
    let shared = Redactor::from_policy(&policy.redaction).unwrap();
    let variable = cua_evidence::env_var(&policy.secrets.env_prefix, "corebank.operator_password");
    let secret = "a-long-operator-password-9321";
    let wiring = cua_replay::RunWiring::open(cua_replay::RunSetup {
        redactor: Some(shared.clone()),
        ..cua_replay::RunSetup::new(
            root.path(),
            RunId::parse("run-shared").unwrap(),
            &policy,
            std::collections::BTreeMap::from([(variable, secret.to_owned())]),
        )
    })
    .unwrap();
    let engine = cua_policy::PolicyEngine::from_config(&policy).unwrap();
    let surface = crate::fake::FakeSurface::default();
    let escalations = cua_replay::RecordedEscalations::new();
    let replayer = wiring.replayer(
        &surface,
        &engine,
        &cua_replay::NoCapabilities,
        &escalations,
        cua_replay::ReplayConfig::default(),
    );
    assert!(!shared.redact_text(secret).contains("<redacted"));
    let name = cua_artifact::SecretName::parse("corebank.operator_password").unwrap();
    assert_eq!(replayer.secrets.resolve(&name).unwrap().expose(), secret);
    assert!(
        !shared
            .redact_text(&format!("typed {secret}"))
            .contains(secret)
    );
}

/// A queue's journal holds every intent a worker announced, whatever became of the worker's
/// trace: one the trace does not show (the trace is lost, or its machine's disk is not the
/// shared one) is in doubt, and a trace's own verdict on one it does show stands.
#[test]
fn a_journaled_intent_no_trace_settles_is_in_doubt() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let journaled = |run_id: &str, seq: u64| Journaled {
        run_id: run_id.to_owned(),
        seq,
        intent: Intent::of_run(
            run_id,
            Some(StepId::parse("post_transfer").unwrap()),
            "dec-000009",
            ActionKind::Click,
            RiskTier::Irreversible,
        ),
    };
    // No run directory at all, but the journal holds its intent: reconcile, never rerun.
    assert_eq!(
        fate_journaled(root, &["lost"], &[journaled("lost", 1)]),
        "reconcile post_transfer (in lost)"
    );
    // Refused at the dispatch per the trace, and the journal holds that same line: the trace
    // settles it.
    attempt(root, "refused", false);
    assert_eq!(
        fate_journaled(root, &["refused"], &[journaled("refused", 1)]),
        "run again (last intent in refused)"
    );
    // A journaled line the trace lacks (a later intent whose line never reached this disk).
    assert_eq!(
        fate_journaled(
            root,
            &["refused"],
            &[journaled("refused", 1), journaled("refused", 9)]
        ),
        "reconcile post_transfer (in refused)"
    );
    // Another attempt's journaled intent does not belong to this one.
    assert_eq!(
        fate_journaled(root, &["refused"], &[journaled("elsewhere", 1)]),
        "run again (last intent in refused)"
    );
}
