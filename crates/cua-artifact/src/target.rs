//! `TargetDescriptor`: how a step names the control it acts on, semantically. Role, accessible
//! name, scope, an anchor, and an ordinal as the last resort. CSS lives only under `hints`, an
//! unverified cache the resolver may try but must confirm against the semantic description.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::predicate::NodeScope;
use crate::value::ValueExpr;
use crate::vocabulary::ResolutionStrategy;

/// The semantic description of one control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetDescriptor {
    /// The normalized role: textbox, button, link, cell, row, combobox, checkbox, …
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<NameMatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<NodeScope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<Anchor>,
    /// Zero-based position among the candidates that survive every other field, in document
    /// order. The only sanctioned tie-breaker, and only together with an `identity` check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentityCheck>,
    #[serde(default, skip_serializing_if = "Hints::is_empty")]
    pub hints: Hints,
    /// The ladder rung that resolved this target when it was recorded: the drift baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_strategy: Option<ResolutionStrategy>,
}

impl TargetDescriptor {
    /// A target by role alone.
    pub fn role(role: &str) -> Self {
        Self {
            role: role.to_owned(),
            name: None,
            scope: None,
            anchor: None,
            ordinal: None,
            identity: None,
            hints: Hints::default(),
            recorded_strategy: None,
        }
    }

    /// One line for evidence and errors, e.g.
    /// `button named exact "Search" in frame content`.
    pub fn describe(&self) -> String {
        let mut text = self.role.clone();
        if let Some(name) = &self.name {
            text.push_str(&format!(
                " named {} \"{}\"",
                name.match_mode.as_str(),
                name.value
            ));
        }
        if let Some(anchor) = &self.anchor {
            text.push_str(&format!(
                " {} \"{}\"",
                anchor.relation.as_str(),
                anchor.text
            ));
        }
        if let Some(ordinal) = self.ordinal {
            text.push_str(&format!(" #{ordinal}"));
        }
        if let Some(scope) = &self.scope {
            if let Some(frame) = &scope.frame {
                text.push_str(&format!(" in frame {frame}"));
            }
            if let Some(region) = &scope.region {
                text.push_str(&format!(" in region {region}"));
            }
        }
        if let Some(identity) = &self.identity {
            match identity.column.as_deref() {
                Some(column) => {
                    text.push_str(&format!(" where row[{column}] = {}", identity.equals));
                }
                // The key of its row, list item, article or definition.
                None => text.push_str(&format!(" where its key = {}", identity.equals)),
            }
        }
        text
    }
}

/// An accessible name and how to compare it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameMatch {
    pub value: String,
    #[serde(rename = "match", default)]
    pub match_mode: MatchMode,
}

/// How text is compared. `exact` collapses whitespace and strips a trailing `:`/`*`;
/// `normalized` also lower-cases and drops punctuation; `contains` is a case-insensitive
/// substring; `regex` is a search with the `regex` crate's syntax.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    #[default]
    Exact,
    Normalized,
    Contains,
    Regex,
}

impl MatchMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Normalized => "normalized",
            Self::Contains => "contains",
            Self::Regex => "regex",
        }
    }
}

/// A structural anchor: find the node whose name matches `text`, then look for the target
/// relative to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    pub relation: AnchorRelation,
    pub text: String,
    #[serde(
        rename = "match",
        default = "normalized",
        skip_serializing_if = "is_normalized"
    )]
    pub match_mode: MatchMode,
}

/// How the target relates to its anchor.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum AnchorRelation {
    /// In the same table row as the anchor.
    RowOf,
    /// The first following sibling of the anchor (the value cell beside its label).
    AdjacentTo,
    /// Inside the section (table, or a heading's region) the anchor belongs to.
    WithinSection,
    /// The control the page says the anchor labels: a `<label for>` naming it, a `<label>`
    /// around it, or its `aria-labelledby`. Only the page's own label relations count.
    LabelledBy,
    /// The control whose visual label is the anchor: the nearest label cell or text before it
    /// in its table row, or outside rows the sibling just before it. For legacy pages that put
    /// a label beside a control without associating the two.
    BesideLabel,
}

impl AnchorRelation {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RowOf => "row_of",
            Self::AdjacentTo => "adjacent_to",
            Self::WithinSection => "within_section",
            Self::LabelledBy => "labelled_by",
            Self::BesideLabel => "beside_label",
        }
    }
}

/// A check replay runs on the resolved node's row right before acting: the row's key cell must
/// equal `equals`. It stops the silent wrong-row write when a positional target lands on a row
/// that looks right but belongs to someone else.
///
/// The key cell is the cell of the resolved node's row under the column headed `column`; without
/// `column`, it is the row's first cell (its row header). Example: the target is the second
/// `Balance` cell of a grid, and `identity: {column: Member, equals: {$input: member_id}}` makes
/// replay refuse unless the `Member` cell of that same row is the member being served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdentityCheck {
    /// The header of the column holding the key cell; omitted means the row's first cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// What the key cell must hold. Never a secret.
    pub equals: ValueExpr,
    #[serde(
        rename = "match",
        default = "normalized",
        skip_serializing_if = "is_normalized"
    )]
    pub match_mode: MatchMode,
}

/// Cached, unverified shortcuts to a control. Only CSS, and only here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hints {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub css: Option<String>,
}

impl Hints {
    /// Whether there is no hint at all.
    pub fn is_empty(&self) -> bool {
        self.css.is_none()
    }
}

fn normalized() -> MatchMode {
    MatchMode::Normalized
}

fn is_normalized(mode: &MatchMode) -> bool {
    *mode == MatchMode::Normalized
}
