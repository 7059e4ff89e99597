//! The evidence of a run: an append-only, redacted, actor-tagged, hash-chained trace, the
//! snapshots and screenshots it refers to, the run record projected from it, the redactor every
//! sink writes through, and the secret resolver that feeds the redactor.
//!
//! # A run directory
//!
//! ```text
//! <root>/<run_id>/
//!   trace.jsonl                      one event per line, append-only
//!   snapshots/NNNN-<label>.json      redacted UiSnapshots
//!   screenshots/NNNN-<label>.png     screenshots (painted by the driver before capture)
//!   run_record.json                  the projection of trace.jsonl, written after run_end
//! ```
//!
//! [`EvidenceBus::create`] refuses a run directory that exists and is not empty, and an evidence
//! root or run directory that is a symbolic link or another user's. Every file is written
//! through `cua-fs`, never through a link: the run directory is 0700, its files 0600. Reading a
//! run back ([`verify`], [`read_trace`]) follows no link below the run directory and reads at
//! most [`MAX_TRACE_BYTES`] of trace and [`MAX_EVIDENCE_FILE_BYTES`] of any other file. Each event is
//! written with one `write_all` and flushed before `emit` returns; `run_end` also syncs the file.
//! A run killed midway therefore leaves a trace whose committed lines verify, followed at most by
//! one torn line without its newline.
//!
//! # The hash chain
//!
//! Every line of `trace.jsonl` is one compact JSON object followed by `\n`:
//!
//! ```text
//! {"seq":N,"at":"…Z","run_id":"…","event":"…","actor":"…","lease_epoch":E,"prev_hash":"blake3:…",<payload members in key order>,"line_hash":"blake3:…"}
//! ```
//!
//! * `line_hash` is `blake3:` followed by the lowercase hex BLAKE3 of the line's bytes with its
//!   final `,"line_hash":"…"` member removed, that is, of the line as it was before it was
//!   sealed (ending in `}`). It is always the last member, so a verifier recomputes it from the
//!   raw bytes without re-serializing anything.
//! * `prev_hash` is the previous line's `line_hash`. For line 1 it is the genesis hash,
//!   `blake3:` + hex(BLAKE3(`cua.trace/v1\n` + run id)) ([`genesis_hash`]).
//! * `seq` is 1-based and equals the line number; `run_id` equals the directory's name.
//!
//! Since each `line_hash` covers its `prev_hash`, the last line's hash commits to the whole
//! trace. [`verify`] detects, at the line where it happens: an edited line (its bytes no longer
//! match its `line_hash`, even for the last line), a deleted line (`seq` skips ahead), reordered
//! or duplicated lines (`seq` goes back), a forged line inserted with a correct seal (the next
//! line's `seq` repeats and its `prev_hash` no longer matches), a line from another run, an
//! event after `run_end`, a snapshot or screenshot that was removed or changed (events carry
//! their digests), and a `run_record.json` that is not the projection of the trace.
//!
//! What a keyless chain cannot detect: someone who rewrites every line from the edit to the end
//! with fresh hashes, or who cuts the trace at a line boundary before `run_end`; the latter
//! verifies as an interrupted run ("no run_end"), unless `run_record.json` exists, which only
//! a finished run writes. Anchor the head ([`VerifyReport::head`]) elsewhere for a stronger
//! guarantee.
//!
//! # Redaction
//!
//! Every payload, snapshot and run record is written through the [`Redactor`] (see its module
//! for the rules). The envelope (`seq`, `at`, `run_id`, `event`, `actor`, `lease_epoch`, the
//! hashes) is built by the bus from validated values and is not redacted.
//!
//! Architecture invariant: the bus reads no clock (a [`Clock`] is injected) and draws no
//! randomness (run ids are injected), so the same events with the same clock give
//! byte-identical traces.

mod bus;
mod chain;
mod clock;
mod error;
mod event;
mod intent;
mod ledger;
mod project;
mod redact;
mod secrets;
mod verify;

pub use bus::{
    ArtifactRef, EvidenceBus, INTERVENTIONS_DIR, RESERVED_ROOT_NAMES, RUN_RECORD_FILE, RunId,
    SCREENSHOT_DIR, SNAPSHOT_DIR, TRACE_FILE, check_run_dir,
};
pub use chain::{ENVELOPE_KEYS, GENESIS_DOMAIN, HASH_PREFIX, genesis_hash};
pub use clock::{Clock, FixedClock, SteppingClock, SystemClock, Timestamp};
pub use error::EvidenceError;
pub use event::{
    Authorize, BlockedRequest, Classify, Dispatch, Effect, Escalate, Event, Intent, Lease,
    LeaseTransition, LlmCall, Note, Observe, Recovery, Resolve, RunEnd, RunStart, TraceLine,
    Verify, Wait,
};
pub use intent::{IntentJournal, IntentRecord, IntentState, idempotency_key, intents};
pub use ledger::{
    InstallationKey, LEDGER_FILE, LedgerCheck, LedgerEntry, PublicKey, append as append_to_ledger,
    check as check_ledger, ledger_genesis, root_of,
};
pub use project::{project, unauthorized_dispatches};
pub use redact::{MAX_REDACTABLE_BYTES, MIN_LITERAL_CHARS, Redactor, STRUCTURAL_KEYS};
pub use secrets::{DEFAULT_ENV_PREFIX, SecretResolver, SecretValue, env_var, process_environment};
pub use verify::{
    BreakKind, ChainBreak, EVIDENCE_FILE_LIMIT, MAX_EVIDENCE_FILE_BYTES, MAX_TRACE_BYTES, TornTail,
    VerifyReport, read_trace, verify, verify_with,
};
