//! The rules of a batch that decide whether a row's mutation may happen again: which rows a
//! shard runs, the run id each attempt at a row gets, what an interrupted row's earlier
//! attempts left in doubt, and what a reconciliation's answer allows. Whoever runs the rows (the
//! `cua replay --inputs` pool today, a distributed worker tomorrow) applies these, so the rule
//! "a mutation is never run again blindly" lives in one place with its own tests.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use cua_artifact::{Capability, StepId};
use cua_evidence::{Intent, IntentRecord, IntentState};

use crate::reconcile::{InDoubt, Interrupted, Reconciliation, interrupted};

/// `k/n` with `1 ≤ k ≤ n`: a process that runs the rows whose 1-based number is `k` modulo `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: usize,
    count: usize,
}

impl Shard {
    /// Whether the 1-based `row` is this shard's.
    pub fn contains(self, row: usize) -> bool {
        row >= 1 && (row - 1) % self.count == self.index - 1
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || format!("`{text}`: expected k/n with 1 ≤ k ≤ n");
        let (index, count) = text.split_once('/').ok_or_else(invalid)?;
        let digits = |part: &str| -> Result<usize, String> {
            if part.is_empty() || !part.bytes().all(|byte| byte.is_ascii_digit()) {
                return Err(invalid());
            }
            part.parse().map_err(|_| invalid())
        };
        let (index, count) = (digits(index)?, digits(count)?);
        if index == 0 || count == 0 || index > count {
            return Err(invalid());
        }
        Ok(Self { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.index, self.count)
    }
}

/// A batch id from the rows file's stem (and the shard), so a resume finds the same state:
/// `batch-<stem>` or `batch-<stem>-shard-<k>-of-<n>`, anything but letters, digits, `-` and
/// `_` replaced by `-`.
pub fn batch_id(rows_stem: &str, shard: Option<Shard>) -> String {
    let stem: String = rows_stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    match shard {
        Some(Shard { index, count }) => format!("batch-{stem}-shard-{index}-of-{count}"),
        None => format!("batch-{stem}"),
    }
}

/// The run id of attempt `attempt` (from 1) at `row`: `<batch>-row-<n>`, then
/// `<batch>-row-<n>-attempt-<k>`.
pub fn attempt_run_id(batch_id: &str, row: usize, attempt: u32) -> String {
    if attempt <= 1 {
        format!("{batch_id}-row-{row}")
    } else {
        format!("{batch_id}-row-{row}-attempt-{attempt}")
    }
}

/// What an interrupted row's earlier attempts decide, and the run id of the last attempt that
/// announced a mutation.
#[derive(Debug, Clone, PartialEq)]
pub struct InterruptedRow {
    pub fate: Interrupted,
    pub last_intent_run: Option<String>,
}

/// An intent a shared journal (the batch queue's database) holds for one attempt at a row:
/// line `seq` of run `run_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct Journaled {
    pub run_id: String,
    pub seq: u64,
    pub intent: Intent,
}

/// Reads every earlier attempt's trace under `evidence_root` and decides the row from their
/// intents and the ones `journaled` holds for them. An attempt whose run directory is missing
/// was killed before it wrote anything, so it dispatched nothing unless the journal holds an
/// intent of it; one whose trace exists but cannot be read could hold an intent, which is a
/// person's question, never "run again". A journaled intent the trace does not show (a trace
/// lost with its machine) is in doubt.
pub fn interrupted_row(
    evidence_root: &Path,
    capability: &Capability,
    attempts: &[String],
    journaled: &[Journaled],
) -> InterruptedRow {
    let mut intents: Vec<IntentRecord> = Vec::new();
    let mut last_intent_run = None;
    for run_id in attempts {
        let run_dir = evidence_root.join(run_id);
        let of_run: Vec<&Journaled> = journaled
            .iter()
            .filter(|journaled| journaled.run_id == *run_id)
            .collect();
        let trace = match cua_evidence::read_trace(&run_dir) {
            Ok(trace) => trace,
            Err(_) if !run_dir.exists() => {
                if !of_run.is_empty() {
                    last_intent_run = Some(run_id.clone());
                }
                intents.extend(of_run.into_iter().map(in_doubt));
                continue;
            }
            Err(error) => {
                return InterruptedRow {
                    fate: Interrupted::NeedsHuman {
                        step: None,
                        reason: format!(
                            "attempt {run_id}'s trace cannot be read ({error}), so whether it \
                             announced a mutation is unknown; check the application and its \
                             evidence before running the row again"
                        ),
                    },
                    last_intent_run: Some(run_id.clone()),
                };
            }
        };
        let mut found = cua_evidence::intents(&trace);
        let unseen: Vec<IntentRecord> = of_run
            .into_iter()
            .filter(|journaled| found.iter().all(|record| record.seq != journaled.seq))
            .map(in_doubt)
            .collect();
        found.extend(unseen);
        if !found.is_empty() {
            last_intent_run = Some(run_id.clone());
        }
        intents.extend(found);
    }
    InterruptedRow {
        fate: interrupted(capability, &intents),
        last_intent_run,
    }
}

/// A journaled intent with nothing in a trace to settle it.
fn in_doubt(journaled: &Journaled) -> IntentRecord {
    IntentRecord {
        seq: journaled.seq,
        intent: journaled.intent.clone(),
        state: IntentState::InDoubt,
    }
}

/// What a reconciliation's answer allows for the row whose mutation was in doubt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// It happened and nothing after it was left undone: the row is confirmed, not run again.
    Confirmed(String),
    /// It did not happen and nothing else of the row did: the row may run again.
    RunAgain,
    /// Only a person can finish the row, for this reason.
    NeedsHuman(String),
}

/// Applies a reconciliation's `answer` to the mutation `in_doubt`; `asked` says what was asked
/// and is the start of every reason.
pub fn after_reconciliation(answer: &Reconciliation, in_doubt: &InDoubt, asked: &str) -> Settled {
    match answer {
        Reconciliation::Done if in_doubt.last => {
            Settled::Confirmed(format!("{asked}: it happened, so it is not run again"))
        }
        Reconciliation::Done => Settled::NeedsHuman(format!(
            "{asked}: it happened, but the capability's later mutating steps never ran, and \
             running the row again would repeat it"
        )),
        Reconciliation::NotDone if !in_doubt.other_confirmed => Settled::RunAgain,
        Reconciliation::NotDone => Settled::NeedsHuman(format!(
            "{asked}, but another mutation of this row was confirmed, so running it again would \
             repeat that one"
        )),
        Reconciliation::Unknown(reason) => Settled::NeedsHuman(format!(
            "{asked} ({reason}); check the application before running the row again"
        )),
    }
}

/// The steps whose mutations a run's trace announced and that may have left the process, if
/// any: `` `post_transfer` (in doubt) ``. A run that broke off with one of these is never
/// reported as merely failed, nor is one whose trace exists and cannot be read.
pub fn announced_mutations(run_dir: &Path) -> Option<String> {
    let trace = match cua_evidence::read_trace(run_dir) {
        Ok(trace) => trace,
        Err(_) if !run_dir.exists() => return None,
        Err(error) => return Some(format!("unknown ones (its trace cannot be read: {error})")),
    };
    let described: Vec<String> = cua_evidence::intents(&trace)
        .iter()
        .filter(|record| record.state != IntentState::NotDispatched)
        .map(|record| {
            format!(
                "`{}` ({})",
                record.intent.step.as_ref().map_or("-", StepId::as_str),
                record.state.as_str().replace('_', " ")
            )
        })
        .collect();
    (!described.is_empty()).then(|| described.join(", "))
}
