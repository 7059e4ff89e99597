//! The deterministic executor: a sealed capability runs against a live surface with zero model
//! calls, the same decisions every time, refusing rather than guessing, and leaving evidence a
//! reviewer can trust.
//!
//! # A run
//!
//! [`Replayer::run`] takes a [`RunRequest`] and returns a [`ReplayReport`]. Before the first
//! action, in this order: the lease (held by automation at the epoch the run was granted;
//! otherwise `lease_lost` and nothing reaches the surface), the content hash (a tampered
//! artifact is refused naming the declared and computed hashes), unbound entrypoint
//! placeholders, the step budget, the inputs (validated, never trimmed or coerced;
//! `input_validation_failed` with zero dispatches) and the irreversible approval gate. Then the
//! entrypoint is opened through the same chokepoint as every action.
//! [`Replayer::continue_run`] does the same checks and then carries on from a given step on the
//! screen as it is (no entrypoint, earlier outputs carried over): assisted replay continues a
//! stopped run this way, in a trace of its own.
//!
//! Per step:
//!
//! 1. **observe** the surface (the snapshot is written, redacted, and an `observe` emitted);
//! 2. **classify** it: a declared terminal outcome first, then a recovery rule (bounded, see
//!    below), then the step's precondition; a screen nothing declared explains fails closed
//!    with `unexpected_state`, and one two explanations fit (two outcomes, or an outcome and
//!    the precondition or checkpoint) with `ambiguous_screen`;
//! 3. **bind** the action's values at the last moment (secrets are resolved only here and
//!    registered with the redactor as they are issued);
//! 4. **resolve** the target on that snapshot (`cua-target`); an identity check that fails on
//!    the chosen row is refused as `target_ambiguous` (a lookalike is on screen);
//! 5. **authorize** it (`cua-policy`: lease, allowlist, risk tier, approval) and check the
//!    lease again right at the **dispatch**;
//! 6. **wait** as the step declares (`snapshot_stable`, `navigation`, `predicate`), bounded; a
//!    timeout is a result, not a sleep;
//! 7. check where a navigation **landed** against the allowlist, and evaluate the
//!    **postcondition** on a fresh snapshot; when it fails, a declared outcome may still
//!    explain the screen, otherwise the run fails (`precondition_failed`);
//! 8. give the step its **effect verdict**.
//!
//! `assert` and `wait_for` are evaluated locally and `extract` reads the resolved node from the
//! snapshot (with the `money` and `date` transforms): none is authorized or dispatched. After
//! the last step the checkpoint is classified like a step: an outcome ends the run as a
//! business outcome, the checkpoint holding is success, anything else `checkpoint_failed`.
//!
//! # Effect verdicts
//!
//! Per step: `not_applicable` for reads; `confirmed` only when the declared postcondition holds
//! on a fresh snapshot; `suspected_noop` when the action was refused before dispatch or the
//! screen after it is byte-for-byte the screen before it; otherwise `unverifiable` (a dispatch
//! receipt, which is never promoted). The run's verdict is the weakest over its mutations
//! (steps whose risk tier is above `safe`): see [`run_verdict`].
//!
//! # A mutation is never retried
//!
//! The executor's step cursor only moves forward, and a step's action is dispatched at most
//! once: recovery runs only in the classification *before* a step's action, so the step being
//! recovered has not dispatched, and no earlier step is ever revisited. Remedies are their own
//! actions through the same chokepoint. The one remedy that could repeat an earlier request is
//! `reload`; it is refused (`recovery_exhausted`, escalated by the triggers) while the page may
//! show the result of a dispatched mutation: a step whose assessed risk is above `safe` sets a
//! mark, and only a later safe action that navigated (so the page is now the result of a safe
//! request) clears it. A `run_capability` remedy (re-sign-on) never repeats the parent's steps.
//!
//! # Recovery and escalation
//!
//! A recovery rule is bounded by its `max_attempts` and the run by the policy's
//! `max_recovery_attempts_total`; backoff is slept on the injected [`RunClock`], never past the
//! duration budget. A refused or failed remedy ends the run with its own code. A
//! `run_capability` remedy runs one level deep on the current screen, with its own hash check,
//! approval gate and step budget, under the same lease and evidence bus, its sensitive names
//! added for the duration. A failure whose code is in `escalation.triggers` (with policy
//! `pause_and_request_human`) becomes `needs_human` through the [`EscalationSink`]. A sink that
//! supervises (the console's broker) keeps the run open instead: the run waits for the
//! operator's hand-back, re-anchors on the live screen ([`reanchor`]) and finishes under the
//! new lease epoch in the same trace (see the `resume` module).
//!
//! Architecture invariant: this crate depends on no model client, no HTTP client and no
//! concrete surface (`cua-chromium`): a test reads `cargo metadata` and fails if it does. Time,
//! secrets, capabilities, approvals, escalation and the lease are injected.

mod batch;
mod clock;
mod error;
mod executor;
mod operate;
mod ports;
mod reconcile;
mod recovery;
mod report;
mod resume;
mod route;
mod step;
mod stop;
mod transform;
mod values;
mod visual;
mod wiring;

pub use batch::{
    InterruptedRow, Journaled, Settled, Shard, after_reconciliation, announced_mutations,
    attempt_run_id, batch_id, interrupted_row,
};
pub use clock::{ManualClock, RunClock, Sleep, TokioClock};
/// The prepared document a run takes, from the crate that owns documents.
pub use cua_artifact::{INVOCATION_TENANT, PreparedCapability, TenantOverlay};
pub use error::ReplayError;
pub use executor::{Attempt, ContinueAt, Operators, ReplayConfig, Replayer, RunRequest};
pub use ports::{
    CapabilityList, CapabilityLoader, CatalogCapabilities, Entropy, EscalationRequest,
    EscalationSink, Interrupt, NoCapabilities, RecordedEscalations, SystemEntropy,
};
pub use reconcile::{
    InDoubt, Interrupted, Reconciliation, check_read_only, interrupted, judge, reconcile_inputs,
};
pub use report::{ReplayReport, StepReport, StepResolution, run_verdict};
pub use resume::{Handback, HandbackFuture, Reanchor, reanchor};
pub use transform::apply as apply_transform;
pub use values::{
    InputProblem, RunValues, idempotency_value, validate_inputs, with_idempotency_key,
};
pub use wiring::{RunSetup, RunWiring};
