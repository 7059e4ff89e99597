//! `CompileError`, the crate's one error type.

use cua_evidence::EvidenceError;

use crate::codegen::Refusal;

/// Why a trace could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The run directory or its trace could not be read.
    #[error("the run could not be read")]
    Evidence(#[from] EvidenceError),
    /// A snapshot the trace names could not be read or parsed.
    #[error("snapshot {path} could not be read: {reason}")]
    Snapshot { path: String, reason: String },
    /// The trace is not one the compiler understands.
    #[error("the trace cannot be compiled: {reason}")]
    Trace { reason: String },
    /// The run did not reach its goal; a draft of a failed run would capture the failure.
    #[error(
        "the run stopped with {stop_reason}, not goal_met; only a run that reached its goal compiles"
    )]
    GoalNotMet { stop_reason: String },
    /// The draft does not pass the capability rules (a compiler defect, reported whole).
    #[error("the compiled draft is invalid: {}", problems.join("; "))]
    Invalid { problems: Vec<String> },
    /// The draft could not be written as YAML.
    #[error("the draft could not be written as YAML: {reason}")]
    Yaml { reason: String },
    /// Parts of the capability have no Playwright equivalent; every one is listed.
    #[error(
        "{capability} cannot be generated as a Playwright test: {}",
        refusals.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    Unexpressible {
        capability: String,
        refusals: Vec<Refusal>,
    },
    /// A directory to probe holds no recorded snapshots.
    #[error("{dir} is not a run directory with snapshots: {reason}")]
    NoSnapshots { dir: String, reason: String },
}
