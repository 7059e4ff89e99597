//! Write-ahead intents read back: for every mutation a trace announced, whether it was
//! confirmed, never handed over, or is in doubt; and the idempotency key that names one
//! attempt's mutations across every attempt at the same row.
//!
//! An `intent` line is durable before its action reaches any surface, so a trace with no intent
//! for a step proves that step's mutation never left the process. The converse is what makes a
//! crash dangerous: an intent with nothing after it may have happened or not, and only a
//! read-only reconciliation or a person can say which.

use cua_artifact::EffectVerdict;

use crate::event::{Event, Intent, TraceLine};

/// A second, shared record of write-ahead intents beside the trace: the batch queue's database,
/// where any worker finds what another announced. The gate writes each intent to the trace
/// first, then here, and dispatches only when both took it: a journal that refuses (the worker
/// no longer holds the row) stops the mutation before it leaves the process.
pub trait IntentJournal: Send + Sync {
    /// Records `intent`, line `seq` of run `run_id`, or says why it may not be recorded.
    fn record(&self, run_id: &str, seq: u64, intent: &Intent) -> Result<(), String>;

    /// Whether the intents it took may still leave the process. A journal whose hold on the
    /// work lasts a bounded time (a lease) says no once that time may have run out, however
    /// the process spent it (paused, suspended, slow); the gate asks last, just before the
    /// dispatch. A journal with no such bound always holds.
    fn holds(&self) -> Result<(), String> {
        Ok(())
    }
}

/// What became of one announced mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntentState {
    /// Its effect was observed (`effect` with verdict `confirmed`): it happened.
    Confirmed,
    /// The dispatch was refused before the action left the process (a stale lease): it did
    /// not happen.
    NotDispatched,
    /// Anything else: handed over (or perhaps handed over) with no confirmation. It may have
    /// happened; it is never dispatched again blindly.
    InDoubt,
}

impl IntentState {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Confirmed => "confirmed",
            Self::NotDispatched => "not_dispatched",
            Self::InDoubt => "in_doubt",
        }
    }
}

/// One `intent` line and what followed it.
#[derive(Debug, Clone, PartialEq)]
pub struct IntentRecord {
    /// The intent line's `seq`.
    pub seq: u64,
    pub intent: Intent,
    pub state: IntentState,
}

/// Every intent in a trace (complete or a killed run's prefix), in order, with its state. The
/// `dispatch` and `effect` that settle an intent are the first ones after it with the same
/// decision id and step; another intent for the same pair (a trace assembled from two runs)
/// ends the search.
pub fn intents(trace: &[TraceLine]) -> Vec<IntentRecord> {
    let mut records = Vec::new();
    for (index, line) in trace.iter().enumerate() {
        let Event::Intent(intent) = &line.event else {
            continue;
        };
        let mut state = IntentState::InDoubt;
        for later in &trace[index + 1..] {
            match &later.event {
                Event::Dispatch(dispatch)
                    if dispatch.decision_id == intent.decision_id
                        && dispatch.step == intent.step
                        && dispatch.refused =>
                {
                    state = IntentState::NotDispatched;
                    break;
                }
                Event::Effect(effect)
                    if effect.decision_id.as_deref() == Some(intent.decision_id.as_str())
                        && intent.step.as_ref() == Some(&effect.step) =>
                {
                    if effect.verdict == EffectVerdict::Confirmed {
                        state = IntentState::Confirmed;
                    }
                    break;
                }
                // The same decision announced again belongs to another frame: stop looking.
                Event::Intent(other)
                    if other.decision_id == intent.decision_id && other.step == intent.step =>
                {
                    break;
                }
                _ => {}
            }
        }
        records.push(IntentRecord {
            seq: line.seq,
            intent: intent.clone(),
            state,
        });
    }
    records
}

/// The idempotency key of a run's mutations: the same for every attempt at one row of one
/// batch (`scope` is the batch id, `row` its row), and unique per run otherwise (`scope` is the
/// run id). Letters, digits and dashes, 24 characters, so an application's reference or memo
/// field takes it as it is.
pub fn idempotency_key(scope: &str, row: Option<u64>) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"cua.idempotency_key/v1\0");
    hasher.update(scope.as_bytes());
    hasher.update(b"\0");
    if let Some(row) = row {
        hasher.update(&row.to_le_bytes());
    }
    let hex = hasher.finalize().to_hex();
    format!("cua-{}", &hex.as_str()[..20])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_stable_per_row_and_differs_between_rows_and_scopes() {
        let key = idempotency_key("batch-transfers", Some(1));
        assert_eq!(key, idempotency_key("batch-transfers", Some(1)));
        assert_ne!(key, idempotency_key("batch-transfers", Some(2)));
        assert_ne!(key, idempotency_key("batch-other", Some(1)));
        assert_ne!(key, idempotency_key("batch-transfers", None));
        assert_eq!(key.len(), 24);
        assert!(
            key.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
    }
}
