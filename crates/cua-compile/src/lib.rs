//! The capability compiler: a discovery (or recording) trace becomes a **draft** capability that
//! replay can run without the model.
//!
//! [`compile`] reads the trace's `agent_action` notes (what was proposed, on which snapshot, and
//! what became of it), keeps the actions that were dispatched or read, and writes one step per
//! action:
//!
//! - the target is synthesized from the node actually acted on (`cua_target::synthesize`) and
//!   verified by resolving it back against the recorded snapshot; a target inside a repeated
//!   structure carries an identity check on its row, and a value in a multi-column grid is named
//!   by its column header;
//! - a typed value that appears in the goal becomes a typed input (pattern inferred from its
//!   shape, the value as the example); a credential placeholder stays `{$secret: name}`;
//! - an extracted value becomes a typed output (money and dates by shape, with their transform);
//! - the discovery origin becomes `{base_url}`;
//! - the wait follows what the step caused (a navigation, or a settle), every mutating step gets
//!   a postcondition from what changed on screen, and the checkpoint asserts the extracted
//!   values' shapes, not that "a page loaded".
//!
//! It invents no outcomes and no recovery: `provenance.notes` tells the reviewer what to add and
//! why, followed by the compiler's warnings (positional targets, descriptors that did not
//! round-trip). The same trace always compiles to the same bytes: nothing here reads a clock,
//! and the provenance time is the trace's own.
//!
//! Two more readings of a capability live here: [`codegen`] writes it as a runnable Playwright
//! Test file (role-within-scope locators, never a CSS hint, refusing what it cannot express),
//! and [`probe`] resolves its targets against the snapshots a run recorded, reporting drift
//! before a replay fails on it.

pub mod codegen;
mod compile;
mod error;
pub mod probe;
mod run;
mod shape;

pub use compile::{CompileConfig, Compiled, compile, compiles};
pub use error::CompileError;
pub use run::{RecordedRun, load_run};
pub use shape::{DATE_PATTERN, MONEY_PATTERN, Shape, infer_pattern};

/// The note discovery (and recording) writes for each proposed action; see `cua-agent`.
pub const ACTION_NOTE: &str = "agent_action";
/// The note that marks a phase; steps before `phase: goal` (a sign-in) are not compiled.
pub const PHASE_NOTE: &str = "phase";
