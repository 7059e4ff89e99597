//! `cua catalog search "<intent>"`: find the capability that does what an agent or a person
//! describes.
//!
//! An inverted index over six fields of every capability (id segments, title, description,
//! input names, output names, outcome codes), ranked by BM25 (k1 = 1.2, b = 0.75) computed per
//! field and summed with per-field weights, times a coordination factor (the share of query
//! words that matched). Query words not in the vocabulary are corrected by symmetric deletion
//! and Damerau–Levenshtein distance, only when one vocabulary term is strictly nearest. Filters
//! (risk, surface, approval) remove documents before the top k are taken, so a better match
//! that is filtered out never takes a place. Every hit explains its score term by term.
//!
//! Building and querying are pure: no I/O, no clock, no randomness, and no hash-map iteration
//! order reaches a result (ties break on the reference).

mod index;
mod text;
mod typo;

use cua_artifact::{Capability, CapabilityRef, RiskTier, SurfaceKind};
use serde::{Serialize, Serializer};

pub use index::SearchIndex;

/// BM25 term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25 length normalization.
pub const B: f64 = 0.75;
/// What a corrected word's contribution is multiplied by, by edit distance.
pub const TYPO_DISCOUNT: [f64; 3] = [1.0, 0.8, 0.6];
/// How many query words count; the rest are ignored (and reported).
pub const MAX_QUERY_WORDS: usize = 32;

/// What the index knows of one capability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchDocument {
    pub reference: CapabilityRef,
    pub title: String,
    pub description: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub outcomes: Vec<String>,
    pub max_risk: RiskTier,
    pub surface: SurfaceKind,
    /// Whether its current content is approved (a filter, never a ranking signal).
    pub approved: bool,
}

/// A searchable field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Id,
    Title,
    Description,
    Input,
    Output,
    Outcome,
}

/// Hard constraints: a document that fails one is never ranked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchFilters {
    /// Only capabilities whose riskiest step is at most this.
    pub max_risk: Option<RiskTier>,
    /// Only capabilities for this kind of surface.
    pub surface: Option<SurfaceKind>,
    /// Only capabilities whose current content is approved.
    pub approved_only: bool,
}

/// A search: the intent in words, the filters and how many hits to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    pub text: String,
    pub filters: SearchFilters,
    pub top_k: usize,
}

/// The hits and how the query was read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResults {
    /// The query words after normalization, and what each resolved to.
    pub words: Vec<QueryWord>,
    /// Query words beyond [`MAX_QUERY_WORDS`], ignored.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_words: Vec<String>,
    /// Documents that matched at least one word, before filters.
    pub matched: usize,
    /// Of those, how many the filters removed before ranking.
    pub filtered_out: usize,
    /// The best `top_k` of the rest, best first.
    pub hits: Vec<SearchHit>,
}

/// One query word and how it met the vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueryWord {
    pub word: String,
    #[serde(flatten)]
    pub resolution: Resolution,
}

/// How a query word met the vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "resolution", rename_all = "snake_case")]
pub enum Resolution {
    /// The word is a vocabulary term.
    Exact,
    /// The word is not, and one term is strictly nearest: the word is read as it.
    Corrected { term: String, distance: usize },
    /// Several terms are equally near, so none is taken.
    Ambiguous {
        distance: usize,
        candidates: Vec<String>,
    },
    /// Nothing in the vocabulary is near enough.
    Unknown,
}

/// One ranked capability and why it ranks where it does.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    pub reference: CapabilityRef,
    pub title: String,
    pub max_risk: RiskTier,
    pub surface: SurfaceKind,
    pub approved: bool,
    #[serde(serialize_with = "rounded")]
    pub score: f64,
    pub explanation: Explanation,
}

/// A hit's score, taken apart: `score = lexical × coord`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The sum of every field match's contribution (added per term, so it may differ from
    /// adding the rounded contributions in the last digit).
    #[serde(serialize_with = "rounded")]
    pub lexical: f64,
    /// Each query term's BM25 contribution from each field it was found in.
    pub matches: Vec<FieldMatch>,
    /// The named signals: `coord` (the share of query words matched) multiplies the lexical
    /// score; `typo`, present when a corrected word matched, reports the smallest discount
    /// already applied inside the lexical score.
    pub signals: Vec<Signal>,
}

/// One term found in one field of the document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldMatch {
    /// The word as the query gave it.
    pub word: String,
    /// The vocabulary term it matched; differs from `word` when corrected.
    pub term: String,
    /// The correction's edit distance; 0 for an exact word.
    pub distance: usize,
    pub field: Field,
    pub term_frequency: u32,
    #[serde(serialize_with = "rounded")]
    pub idf: f64,
    pub field_weight: f64,
    pub typo_discount: f64,
    /// `field_weight × typo_discount × idf × tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))`.
    #[serde(serialize_with = "rounded")]
    pub contribution: f64,
}

/// A named factor in the score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Signal {
    pub name: &'static str,
    #[serde(serialize_with = "rounded")]
    pub value: f64,
    pub detail: String,
}

impl SearchDocument {
    /// The searchable parts of a capability.
    pub fn from_capability(capability: &Capability, approved: bool) -> Self {
        Self {
            reference: capability.reference(),
            title: capability.title.clone(),
            description: capability.description.clone(),
            inputs: capability
                .inputs
                .iter()
                .map(|input| input.name.to_string())
                .collect(),
            outputs: capability
                .outputs
                .iter()
                .map(|output| output.name.to_string())
                .collect(),
            outcomes: capability
                .outcomes
                .iter()
                .map(|outcome| outcome.code.to_string())
                .collect(),
            max_risk: capability.max_risk(),
            surface: capability.surface.kind,
            approved,
        }
    }
}

impl Field {
    /// Every field, in index order.
    pub const ALL: [Field; 6] = [
        Self::Id,
        Self::Title,
        Self::Description,
        Self::Input,
        Self::Output,
        Self::Outcome,
    ];

    /// How much a match in this field counts. Ids and titles name what a capability does;
    /// descriptions mention much that it does not.
    pub fn weight(self) -> f64 {
        match self {
            Self::Id => 3.0,
            Self::Title => 2.0,
            Self::Description => 1.0,
            Self::Input | Self::Output | Self::Outcome => 1.5,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Id => "id",
            Self::Title => "title",
            Self::Description => "description",
            Self::Input => "input",
            Self::Output => "output",
            Self::Outcome => "outcome",
        }
    }

    fn position(self) -> usize {
        self as usize
    }
}

impl SearchFilters {
    /// Whether a document passes every filter.
    pub fn allow(&self, max_risk: RiskTier, surface: SurfaceKind, approved: bool) -> bool {
        self.max_risk.is_none_or(|limit| max_risk <= limit)
            && self.surface.is_none_or(|kind| surface == kind)
            && (!self.approved_only || approved)
    }
}

impl SearchQuery {
    /// The default number of hits.
    pub const DEFAULT_TOP_K: usize = 10;

    /// A query with no filters and the default top k.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            filters: SearchFilters::default(),
            top_k: Self::DEFAULT_TOP_K,
        }
    }
}

/// Scores are written to six decimals, so that the last bits of a logarithm never show.
fn rounded<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64((value * 1e6).round() / 1e6)
}
