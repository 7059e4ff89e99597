//! The assertion language: a closed set of predicates over one snapshot and the run's inputs,
//! used for preconditions, postconditions, waits, checkpoints and the detectors of outcomes and
//! recovery rules. Evaluation lives in `cua-target`; this module owns the shape.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::value::ValueExpr;

/// A predicate, discriminated on the wire by the key `assert`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "assert", rename_all = "snake_case", deny_unknown_fields)]
pub enum Predicate {
    /// At least `min_count` nodes match the query.
    NodeExists {
        query: NodeQuery,
        #[serde(default = "one", skip_serializing_if = "is_one")]
        min_count: u32,
    },
    /// No node matches the query.
    NodeAbsent { query: NodeQuery },
    /// A node matching the query holds this value (whitespace-squashed equality).
    NodeHasValue { query: NodeQuery, value: ValueExpr },
    /// The snapshot's text contains this (normalized substring).
    TextPresent { value: ValueExpr },
    /// The snapshot's text does not contain this.
    TextAbsent { value: ValueExpr },
    /// A node the query selects (any node when the query is empty) has a whole name that reads
    /// as the same amount of money as `value`: `$99,999.00` is `99999.00`, whatever the
    /// currency sign and grouping. The name must look like money (a currency sign, or cents), so
    /// a bare number such as a member number never counts; other text matches nothing.
    MoneyPresent {
        value: ValueExpr,
        #[serde(default, skip_serializing_if = "NodeQuery::is_empty")]
        query: NodeQuery,
    },
    /// The current URL matches this regex (unanchored search).
    UrlMatches { pattern: String },
    /// The last navigation's HTTP status is one of these.
    HttpStatusIn { codes: Vec<u16> },
    /// Every predicate holds.
    AllOf { of: Vec<Predicate> },
    /// At least one predicate holds.
    AnyOf { of: Vec<Predicate> },
    /// The predicate does not hold.
    Not { of: Box<Predicate> },
}

impl Predicate {
    /// The wire name of this predicate.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NodeExists { .. } => "node_exists",
            Self::NodeAbsent { .. } => "node_absent",
            Self::NodeHasValue { .. } => "node_has_value",
            Self::TextPresent { .. } => "text_present",
            Self::TextAbsent { .. } => "text_absent",
            Self::MoneyPresent { .. } => "money_present",
            Self::UrlMatches { .. } => "url_matches",
            Self::HttpStatusIn { .. } => "http_status_in",
            Self::AllOf { .. } => "all_of",
            Self::AnyOf { .. } => "any_of",
            Self::Not { .. } => "not",
        }
    }

    /// The predicates directly inside a combinator.
    pub fn children(&self) -> Vec<&Predicate> {
        match self {
            Self::AllOf { of } | Self::AnyOf { of } => of.iter().collect(),
            Self::Not { of } => vec![of.as_ref()],
            _ => Vec::new(),
        }
    }
}

/// Selects nodes of a snapshot. Every given field must match. `name` and `name_contains` compare
/// normalized text (lower-cased, punctuation stripped, whitespace collapsed); `name_matches` is
/// a regex searched in the whitespace-squashed name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The node's whole name (folded). May use `{$input: …}` and `{$output: …}`, bound literally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A part of the node's name (folded). May use `{$input: …}` and `{$output: …}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_contains: Option<String>,
    /// A regex searched in the node's name (whitespace squashed); no references.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_matches: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<NodeScope>,
}

impl NodeQuery {
    /// Whether the query selects every node.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// Where on the screen to look: a frame of a frameset by name (`content`, `nav`), and/or a region
/// inferred from headings (`search_form`, `detail_view`, …).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeScope {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

fn one() -> u32 {
    1
}

fn is_one(value: &u32) -> bool {
    *value == 1
}
