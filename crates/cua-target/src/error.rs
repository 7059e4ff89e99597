//! `TargetError`, the crate's one error type, and the summaries it carries for evidence and
//! escalation reasons.

use std::fmt;

use cua_artifact::{FailureCode, Identifier, ResolutionStrategy, SecretName};
use cua_snapshot::{NodeId, NodeScope};
use serde::Serialize;

/// Why a target could not be resolved, an identity not verified, or a predicate not evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// No rung produced a candidate.
    #[error("no node matches {target}; tried {}", render_attempts(tried))]
    NotFound {
        /// The descriptor, described in one line.
        target: String,
        /// Every rung, in ladder order, and what it found.
        tried: Vec<RungAttempt>,
    },
    /// The deciding rung produced several candidates and no in-range ordinal chose one.
    #[error(
        "{count} candidates for {target} on {}{}; refusing to guess: {}",
        strategy.as_str(),
        render_ordinal(*ordinal),
        render_candidates(candidates, *count)
    )]
    Ambiguous {
        target: String,
        /// The rung that decided.
        strategy: ResolutionStrategy,
        count: u32,
        /// The descriptor's ordinal, when it had one (and it was out of range).
        ordinal: Option<u32>,
        /// The first five candidates, in document order.
        candidates: Vec<CandidateSummary>,
    },
    /// The chosen node's row does not belong to the expected key: replay refuses rather than
    /// acting on a lookalike.
    #[error(
        "identity check failed on {node}: expected {expected:?} in {key}, found {}",
        found.as_ref().map_or_else(|| "nothing".to_owned(), |found| format!("{found:?}"))
    )]
    IdentityMismatch {
        node: NodeId,
        /// Where the key was read, e.g. `the "Member" cell of its row`.
        key: String,
        expected: String,
        found: Option<String>,
    },
    /// More than one record of the chosen node's structure (rows of its table, items of its
    /// list) holds the identity key, so the key does not say which record the run is about:
    /// replay refuses rather than letting position decide.
    #[error(
        "identity check on {target} is not unique: {count} {records} hold {expected:?} in {key}: {}",
        render_candidates(rows, *count)
    )]
    IdentityNotUnique {
        target: String,
        /// Where the key was read, e.g. `the "Member" cell of its row`.
        key: String,
        expected: String,
        count: u32,
        /// What the records are, plural: `rows`, `list items`, `articles`, `definitions`.
        records: &'static str,
        /// The first five records holding the key, in document order.
        rows: Vec<CandidateSummary>,
    },
    /// The descriptor was recorded by the vision rung, which deterministic replay refuses.
    #[error(
        "{target} was recorded by vision, which replay refuses; record it again with a semantic descriptor"
    )]
    VisionRefused { target: String },
    /// A value reads an input the run was not given.
    #[error("input `{name}` is not bound")]
    UnboundInput { name: Identifier },
    /// A value reads an output no earlier step produced.
    #[error("output `{name}` has not been produced")]
    UnboundOutput { name: Identifier },
    /// A value reads a secret where its text would be compared with the screen.
    #[error("secret `{name}` cannot be used in {context}; secrets are bound only at dispatch")]
    SecretRefused {
        name: SecretName,
        context: &'static str,
    },
    /// A target's name is empty once its values are bound: it would match any unnamed control.
    #[error(
        "the name {template:?} is empty once its values are bound; a run's value never stands for \
         an unnamed control"
    )]
    EmptyBoundName { template: String },
    /// A regex in a descriptor or predicate does not compile.
    #[error("invalid regex {pattern:?}: {message}")]
    InvalidPattern { pattern: String, message: String },
    /// A node index outside the snapshot.
    #[error("node index {index} is outside the snapshot ({len} nodes)")]
    NodeOutOfRange { index: usize, len: usize },
}

impl TargetError {
    /// The run failure this error ends a step with.
    ///
    /// A failed identity check is `target_not_found`: the node the descriptor points at is not
    /// the one the run is about, and the right one was not identified. Errors that validation
    /// should have prevented (secrets in predicates, bad regexes, unbound values) are
    /// `internal`.
    pub fn failure_code(&self) -> FailureCode {
        match self {
            Self::NotFound { .. } | Self::IdentityMismatch { .. } | Self::VisionRefused { .. } => {
                FailureCode::TargetNotFound
            }
            Self::Ambiguous { .. } | Self::IdentityNotUnique { .. } => FailureCode::TargetAmbiguous,
            Self::EmptyBoundName { .. } => FailureCode::InputValidationFailed,
            Self::UnboundInput { .. }
            | Self::UnboundOutput { .. }
            | Self::SecretRefused { .. }
            | Self::InvalidPattern { .. }
            | Self::NodeOutOfRange { .. } => FailureCode::Internal,
        }
    }
}

/// One candidate of an ambiguous resolution, as evidence shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CandidateSummary {
    pub id: NodeId,
    pub role: String,
    pub name: String,
    pub scope: NodeScope,
}

impl fmt::Display for CandidateSummary {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} {} {:?}", self.id, self.role, self.name)?;
        if let Some(frame) = &self.scope.frame {
            write!(formatter, " in frame {frame}")?;
        }
        if let Some(region) = &self.scope.region {
            write!(formatter, " in region {region}")?;
        }
        Ok(())
    }
}

/// What one rung of the ladder did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RungAttempt {
    pub strategy: ResolutionStrategy,
    pub outcome: RungOutcome,
}

impl fmt::Display for RungAttempt {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.strategy.as_str(), self.outcome)
    }
}

/// Why a rung produced no candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RungOutcome {
    /// The rung ran and nothing matched.
    NoCandidates,
    /// The descriptor lacks what the rung needs (no name, no anchor, no hint, …).
    NotApplicable { reason: &'static str },
    /// No node matches the anchor text, so there is nothing to be relative to.
    NoAnchor,
    /// Nodes match the name, but none stands where the anchor says.
    OutsideAnchor { named: u32 },
    /// No node carries the CSS hint: a dead hint.
    HintDead,
    /// Nodes carry the CSS hint but none satisfies role, scope and name: a lying hint.
    HintRejected { carriers: u32 },
    /// The ordinal points past the end of the role-and-scope pool.
    OrdinalOutOfRange { ordinal: u32, pool: u32 },
    /// The rung has no generator (vision, in discovery).
    NoGenerator,
}

impl fmt::Display for RungOutcome {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoCandidates => formatter.write_str("no candidate"),
            Self::NotApplicable { reason } => write!(formatter, "not applicable ({reason})"),
            Self::NoAnchor => formatter.write_str("no node matches the anchor text"),
            Self::OutsideAnchor { named } => write!(
                formatter,
                "{named} node(s) match the name, none where the anchor says"
            ),
            Self::HintDead => formatter.write_str("no node carries the hint"),
            Self::HintRejected { carriers } => write!(
                formatter,
                "{carriers} node(s) carry the hint but none has the described role, scope and name"
            ),
            Self::OrdinalOutOfRange { ordinal, pool } => {
                write!(
                    formatter,
                    "ordinal {ordinal} is out of range for {pool} node(s)"
                )
            }
            Self::NoGenerator => formatter.write_str("no generator"),
        }
    }
}

fn render_attempts(attempts: &[RungAttempt]) -> String {
    attempts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn render_ordinal(ordinal: Option<u32>) -> String {
    ordinal.map_or_else(String::new, |ordinal| {
        format!(" (ordinal {ordinal} is out of range)")
    })
}

fn render_candidates(candidates: &[CandidateSummary], count: u32) -> String {
    let mut text = candidates
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    let shown = u32::try_from(candidates.len()).unwrap_or(u32::MAX);
    if count > shown {
        text.push_str(&format!("; and {} more", count - shown));
    }
    text
}
