//! The crate's one error type.

use crate::diagnostic::Problem;
use crate::identifiers::{CapabilityRef, ContentHash};
use crate::source_map::{DocPath, SourceLocation};

/// Everything that can go wrong loading, checking, sealing or binding a document.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// A validated name (id, version, hash, identifier) did not parse.
    #[error("invalid {what} `{value}`: {reason}")]
    InvalidName {
        what: &'static str,
        value: String,
        reason: String,
    },

    /// The YAML could not be read into the document type.
    #[error("{0}")]
    Yaml(#[from] YamlError),

    /// The document parsed but breaks one or more rules.
    #[error("{} problem(s): {}", .0.len(), summarize(.0))]
    Invalid(Vec<Problem>),

    /// The declared content hash is not the hash of the content.
    #[error("content hash mismatch for {reference}: declared {declared}, computed {computed}")]
    Tampered {
        reference: Box<CapabilityRef>,
        declared: ContentHash,
        computed: ContentHash,
    },

    /// A tenant binding was applied to a capability it does not name.
    #[error("tenant binding is for {binding}, not {base}")]
    BindingMismatch {
        binding: Box<CapabilityRef>,
        base: Box<CapabilityRef>,
    },

    /// A tenant binding was applied to a base capability that carries no hash.
    #[error("base capability {reference} is a draft; only a sealed capability can be bound")]
    BaseNotSealed { reference: Box<CapabilityRef> },

    /// A document could not be turned into its wire form.
    #[error("could not serialize the document: {reason}")]
    Serialize { reason: String },
}

impl ArtifactError {
    pub(crate) fn invalid_name(what: &'static str, value: &str, reason: &str) -> Self {
        Self::InvalidName {
            what,
            value: value.to_owned(),
            reason: reason.to_owned(),
        }
    }

    pub(crate) fn serialize(error: impl std::fmt::Display) -> Self {
        Self::Serialize {
            reason: error.to_string(),
        }
    }
}

/// What kind of YAML problem stopped the parse. Tests and callers match on this, never on text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YamlErrorKind {
    /// The input is above [`crate::yaml::MAX_DOCUMENT_BYTES`].
    TooLarge,
    /// Alias expansion, nesting or event budgets were exceeded (an alias bomb, for one).
    Limit,
    /// Not well-formed YAML, or more than one document.
    Syntax,
    /// A mapping repeats a key.
    DuplicateKey,
    /// A key the document type does not define.
    UnknownKey,
    /// A required key is missing.
    MissingKey,
    /// A value of the wrong type or outside its closed set (including YAML 1.1 booleans such
    /// as `yes` where a boolean is expected).
    InvalidValue,
}

/// A YAML problem with where it happened.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}{}", location_suffix(.location))]
pub struct YamlError {
    pub kind: YamlErrorKind,
    pub message: String,
    pub location: Option<SourceLocation>,
    /// The document path of the offending node, when it can be told.
    pub path: Option<DocPath>,
}

impl YamlError {
    /// For an unknown key, the known key its spelling is nearest to: `title` for `titel`.
    pub fn suggestion(&self) -> Option<String> {
        if self.kind != YamlErrorKind::UnknownKey {
            return None;
        }
        // serde's words: "unknown field `titel`, expected one of `a`, `b`" (or "expected `a`
        // or `b`", "expected `a`"); the known keys are the back-quoted names after "expected".
        let (given, expected) = self.message.split_once(", expected ")?;
        let given = given.rsplit('`').nth(1)?;
        let known: Vec<&str> = expected
            .split(|c: char| c == ',' || c.is_whitespace())
            .map(|word| word.trim_matches('`'))
            .filter(|word| !word.is_empty() && !matches!(*word, "one" | "of" | "or"))
            .collect();
        crate::suggest::closest(given, known).map(str::to_owned)
    }
}

fn location_suffix(location: &Option<SourceLocation>) -> String {
    match location {
        Some(location) => format!(" at line {}, column {}", location.line, location.column),
        None => String::new(),
    }
}

fn summarize(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|problem| {
            format!(
                "[{}] {}: {}",
                problem.code.as_str(),
                problem.path,
                problem.message
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
