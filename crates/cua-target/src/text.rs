//! Text comparison by match mode, shared by names, anchors, labels and identity keys, and the
//! datum heuristic synthesis uses to tell a label from a value.

use cua_artifact::MatchMode;
use cua_snapshot::{fold, normalize_name, squash_whitespace};
use regex::Regex;

use crate::error::TargetError;
use crate::index::SnapshotIndex;

/// A compiled comparison against one expected text.
///
/// - `exact`: equal after [`normalize_name`] (whitespace collapsed, trailing `:`/`*` dropped).
/// - `normalized`: equal after [`fold`] (lower case, alphanumerics only).
/// - `contains`: case-insensitive substring of the whitespace-squashed text.
/// - `regex`: unanchored search in the whitespace-squashed text.
///
/// An expected text that normalizes to nothing matches nothing: an empty name must never match
/// every unnamed node by accident. The one deliberate form is a target's `name: {value: "",
/// match: exact}`, compiled by [`TextMatcher::unnamed`]: the node has no accessible name.
#[derive(Debug, Clone)]
pub(crate) enum TextMatcher {
    /// The normalized expected text, and its folded form for a cheap first comparison.
    Exact(String, String),
    /// The name is empty once normalized: an unnamed control.
    Unnamed,
    Normalized(String),
    Contains(String),
    Regex(Regex),
}

impl TextMatcher {
    /// Compiles a matcher; a regex that does not compile is an error naming the pattern.
    pub(crate) fn new(mode: MatchMode, expected: &str) -> Result<Self, TargetError> {
        Ok(match mode {
            MatchMode::Exact => Self::Exact(normalize_name(expected), fold(expected)),
            MatchMode::Normalized => Self::Normalized(fold(expected)),
            MatchMode::Contains => Self::Contains(squash_whitespace(expected).to_lowercase()),
            MatchMode::Regex => Self::Regex(compile_regex(expected)?),
        })
    }

    /// A target name: like [`TextMatcher::new`], except that an exact empty name selects the
    /// nodes that have no name.
    pub(crate) fn for_target_name(mode: MatchMode, expected: &str) -> Result<Self, TargetError> {
        if mode == MatchMode::Exact && normalize_name(expected).is_empty() {
            return Ok(Self::Unnamed);
        }
        Self::new(mode, expected)
    }

    /// Whether `text` matches.
    pub(crate) fn matches(&self, text: &str) -> bool {
        match self {
            Self::Unnamed => normalize_name(text).is_empty(),
            Self::Exact(expected, _) => !expected.is_empty() && normalize_name(text) == *expected,
            Self::Normalized(expected) => !expected.is_empty() && fold(text) == *expected,
            Self::Contains(expected) => {
                !expected.is_empty()
                    && squash_whitespace(text)
                        .to_lowercase()
                        .contains(expected.as_str())
            }
            Self::Regex(regex) => regex.is_match(&squash_whitespace(text)),
        }
    }

    /// Whether the name of the node at `index` matches. Exact and normalized comparisons
    /// first compare folded characters without allocating (equal normalized names fold
    /// equal), so scanning every node of a large snapshot for an anchor stays cheap.
    pub(crate) fn matches_node(&self, index: &SnapshotIndex<'_>, node: usize) -> bool {
        let Some(found) = index.node(node) else {
            return false;
        };
        match self {
            Self::Exact(expected, folded) => {
                !expected.is_empty()
                    && fold_equals(&found.name, folded)
                    && index.normalized_name(node) == expected
            }
            Self::Normalized(expected) => {
                !expected.is_empty() && fold_equals(&found.name, expected)
            }
            Self::Unnamed => index.normalized_name(node).is_empty(),
            Self::Contains(_) | Self::Regex(_) => self.matches(&found.name),
        }
    }
}

/// Whether `fold(text) == folded`, without building the folded text.
pub(crate) fn fold_equals(text: &str, folded: &str) -> bool {
    if text.is_ascii() && folded.is_ascii() {
        // The common case, byte by byte: ASCII letters and digits are the only alphanumerics.
        return text
            .bytes()
            .filter(u8::is_ascii_alphanumeric)
            .map(|byte| byte.to_ascii_lowercase())
            .eq(folded.bytes());
    }
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .eq(folded.chars())
}

/// Compiles a pattern for an unanchored search.
pub(crate) fn compile_regex(pattern: &str) -> Result<Regex, TargetError> {
    Regex::new(pattern).map_err(|error| TargetError::InvalidPattern {
        pattern: pattern.to_owned(),
        message: error.to_string(),
    })
}

/// Whether a text reads as a data value rather than a label: money (`$4,210.55`), a date
/// (`09/11/2026`), a number (`12345`), an account or reference id (`S-12345-01`, `TF-000001`).
///
/// The rule is deliberately simple and deterministic: the text has a digit, and digits make up
/// at least half of its letters and digits. "Member Number", "As Of" and "Page 2" are labels;
/// "SA-12345-SAV" is a datum.
pub fn looks_like_datum(text: &str) -> bool {
    let mut digits = 0usize;
    let mut alphanumerics = 0usize;
    for character in text.chars() {
        if character.is_alphanumeric() {
            alphanumerics += 1;
            if character.is_numeric() {
                digits += 1;
            }
        }
    }
    digits > 0 && digits * 2 >= alphanumerics
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_values_are_told_from_labels() {
        for datum in [
            "$4,210.55",
            "09/11/2026",
            "12345",
            "S-12345-01",
            "TF-000001",
            "SA-12345-SAV",
            "$0.00",
        ] {
            assert!(looks_like_datum(datum), "{datum}");
        }
        for label in [
            "Member Number",
            "As Of",
            "Page 2",
            "Savings Bal.",
            "",
            "—",
            "Ada Lovelace",
        ] {
            assert!(!looks_like_datum(label), "{label}");
        }
    }

    #[test]
    fn match_modes_compare_as_documented() {
        let check = |mode, expected: &str, text: &str| {
            TextMatcher::new(mode, expected).unwrap().matches(text)
        };
        assert!(check(
            MatchMode::Exact,
            "Member Number",
            "Member\u{a0}Number:*"
        ));
        assert!(!check(MatchMode::Exact, "Member Number", "member number"));
        assert!(check(
            MatchMode::Normalized,
            "Member Number",
            "MEMBER-NUMBER"
        ));
        assert!(!check(MatchMode::Normalized, "Member #", "Member Number"));
        assert!(check(MatchMode::Contains, "savings", "Savings  Balance"));
        assert!(check(MatchMode::Regex, r"^S-\d+-01$", "S-12345-01"));
        assert!(!check(MatchMode::Exact, "", ""));
        assert!(!check(MatchMode::Normalized, "::", "anything"));
        assert!(!check(MatchMode::Contains, " ", "anything"));
        for (text, folded) in [
            ("Member  #1", "member1"),
            ("Straße", "straße"),
            ("ÉTAT", "état"),
            ("", ""),
        ] {
            assert!(fold_equals(text, folded), "{text}");
            assert_eq!(fold(text), folded);
        }
        assert!(!fold_equals("Member", "membe"));
        // A letter outside ASCII is a letter: "Café" never folds to "caf".
        assert!(!fold_equals("Café", "caf"));
        assert!(!fold_equals("Caf", "café"));
    }
}
