//! Predicate evaluation over one snapshot and the run's bound values, and explanations that say
//! which part of a predicate failed.
//!
//! Semantics:
//! - `node_exists`: at least `min_count` nodes match the query; `node_absent`: none does.
//! - A query matches a node when every given field does: `role` (after `normalize_role`),
//!   `name` (folded equality), `name_contains` (folded substring), `name_matches` (regex search
//!   in the whitespace-squashed name), `scope` (each given frame/region equal).
//! - `node_has_value`: some matching node's value equals the bound value, whitespace squashed.
//!   A node without a value holds none.
//! - `text_present` / `text_absent`: the bound value, whitespace squashed and lower-cased, is /
//!   is not a substring of the snapshot's text content (every name, in document order)
//!   treated the same way. Punctuation counts: "$4,210.55" is not "$42,105.5".
//! - `url_matches`: regex search in the URL; `http_status_in`: the snapshot's status is listed
//!   (an unknown status is in no list).
//! - `all_of` (empty holds), `any_of` (empty fails), `not`.
//!
//! Before evaluating, every value is bound and every regex compiled, so a secret, an unbound
//! input or a bad pattern is an error wherever it sits, not only when evaluation reaches it.

use std::collections::BTreeMap;

use cua_artifact::{NodeQuery, Predicate, ValueExpr};
use cua_snapshot::{UiSnapshot, fold, normalize_role, shows_money, squash_whitespace};
use regex::Regex;

use crate::bindings::{Bindings, bind_name, bind_text, render_bound};
use crate::error::TargetError;
use crate::index::SnapshotIndex;
use crate::text::compile_regex;

/// Whether a predicate holds, and a sentence saying why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    pub holds: bool,
    /// When the predicate fails, the part that failed, e.g.
    /// `expected textbox named "Member Number" exists, which does not hold: found none`.
    pub text: String,
}

impl std::fmt::Display for Explanation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.text)
    }
}

/// Whether `predicate` holds on `snapshot`.
pub fn evaluate<B: Bindings + ?Sized>(
    predicate: &Predicate,
    snapshot: &UiSnapshot,
    bindings: &B,
) -> Result<bool, TargetError> {
    evaluate_indexed(predicate, &SnapshotIndex::new(snapshot), bindings)
}

/// [`evaluate`] over a prebuilt index.
pub fn evaluate_indexed<B: Bindings + ?Sized>(
    predicate: &Predicate,
    index: &SnapshotIndex<'_>,
    bindings: &B,
) -> Result<bool, TargetError> {
    let evaluator = Evaluator::prepare(predicate, index, bindings)?;
    evaluator.holds(predicate)
}

/// Whether `predicate` holds on `snapshot`, with the failing part spelled out for evidence and
/// escalation reasons.
pub fn explain<B: Bindings + ?Sized>(
    predicate: &Predicate,
    snapshot: &UiSnapshot,
    bindings: &B,
) -> Result<Explanation, TargetError> {
    explain_indexed(predicate, &SnapshotIndex::new(snapshot), bindings)
}

/// [`explain`] over a prebuilt index.
pub fn explain_indexed<B: Bindings + ?Sized>(
    predicate: &Predicate,
    index: &SnapshotIndex<'_>,
    bindings: &B,
) -> Result<Explanation, TargetError> {
    let evaluator = Evaluator::prepare(predicate, index, bindings)?;
    evaluator.explain(predicate)
}

/// One evaluation: the index, the bindings, and the regexes compiled for this call.
struct Evaluator<'e, 's, B: ?Sized> {
    index: &'e SnapshotIndex<'s>,
    bindings: &'e B,
    regexes: BTreeMap<String, Regex>,
}

impl<'e, 's, B: Bindings + ?Sized> Evaluator<'e, 's, B> {
    /// Binds every value and compiles every pattern of the predicate up front.
    fn prepare(
        predicate: &Predicate,
        index: &'e SnapshotIndex<'s>,
        bindings: &'e B,
    ) -> Result<Self, TargetError> {
        let mut evaluator = Self {
            index,
            bindings,
            regexes: BTreeMap::new(),
        };
        evaluator.check(predicate)?;
        Ok(evaluator)
    }

    fn check(&mut self, predicate: &Predicate) -> Result<(), TargetError> {
        match predicate {
            Predicate::NodeExists { query, .. } | Predicate::NodeAbsent { query } => {
                self.check_query(query)
            }
            Predicate::NodeHasValue { query, value } => {
                self.check_query(query)?;
                self.bind(value).map(drop)
            }
            Predicate::TextPresent { value } | Predicate::TextAbsent { value } => {
                self.bind(value).map(drop)
            }
            Predicate::MoneyPresent { value, query } => {
                self.check_query(query)?;
                self.bind(value).map(drop)
            }
            Predicate::UrlMatches { pattern } => self.compile(pattern),
            Predicate::HttpStatusIn { .. } => Ok(()),
            Predicate::AllOf { of } | Predicate::AnyOf { of } => {
                of.iter().try_for_each(|child| self.check(child))
            }
            Predicate::Not { of } => self.check(of),
        }
    }

    fn check_query(&mut self, query: &NodeQuery) -> Result<(), TargetError> {
        match &query.name_matches {
            Some(pattern) => self.compile(pattern),
            None => Ok(()),
        }
    }

    fn compile(&mut self, pattern: &str) -> Result<(), TargetError> {
        if !self.regexes.contains_key(pattern) {
            let regex = compile_regex(pattern)?;
            self.regexes.insert(pattern.to_owned(), regex);
        }
        Ok(())
    }

    fn regex(&self, pattern: &str) -> Result<&Regex, TargetError> {
        // Every pattern was compiled by `prepare`; a miss would mean the two walks disagree.
        self.regexes
            .get(pattern)
            .ok_or_else(|| TargetError::InvalidPattern {
                pattern: pattern.to_owned(),
                message: "the pattern was not prepared".to_owned(),
            })
    }

    fn bind(&self, value: &ValueExpr) -> Result<String, TargetError> {
        bind_text(value, self.bindings, "a predicate")
    }

    fn holds(&self, predicate: &Predicate) -> Result<bool, TargetError> {
        Ok(match predicate {
            Predicate::NodeExists { query, min_count } => {
                self.matching(query)?.len() >= *min_count as usize
            }
            Predicate::NodeAbsent { query } => self.matching(query)?.is_empty(),
            Predicate::NodeHasValue { query, value } => {
                let expected = squash_whitespace(&self.bind(value)?);
                self.matching(query)?
                    .into_iter()
                    .any(|node| self.value_of(node).is_some_and(|found| found == expected))
            }
            Predicate::TextPresent { value } => self.text_contains(value)?,
            Predicate::TextAbsent { value } => !self.text_contains(value)?,
            Predicate::MoneyPresent { value, query } => !self.money_nodes(value, query)?.is_empty(),
            Predicate::UrlMatches { pattern } => {
                self.regex(pattern)?.is_match(&self.index.snapshot().url)
            }
            Predicate::HttpStatusIn { codes } => self
                .index
                .snapshot()
                .http_status
                .is_some_and(|status| codes.contains(&status)),
            Predicate::AllOf { of } => {
                for child in of {
                    if !self.holds(child)? {
                        return Ok(false);
                    }
                }
                true
            }
            Predicate::AnyOf { of } => {
                for child in of {
                    if self.holds(child)? {
                        return Ok(true);
                    }
                }
                false
            }
            Predicate::Not { of } => !self.holds(of)?,
        })
    }

    fn explain(&self, predicate: &Predicate) -> Result<Explanation, TargetError> {
        let holds = self.holds(predicate)?;
        let description = self.describe(predicate)?;
        if holds {
            return Ok(Explanation {
                holds,
                text: format!("{description}, which holds"),
            });
        }
        let text = match predicate {
            Predicate::AllOf { of } => {
                let mut failing = None;
                for child in of {
                    if !self.holds(child)? {
                        failing = Some(child);
                        break;
                    }
                }
                match failing {
                    Some(child) => self.explain(child)?.text,
                    None => format!("expected {description}, which does not hold"),
                }
            }
            Predicate::AnyOf { .. } => format!("expected {description}, none of which holds"),
            Predicate::Not { of } => {
                format!(
                    "expected {description}, which does not hold: {}",
                    self.holding_detail(of)?
                )
            }
            leaf => format!(
                "expected {description}, which does not hold: {}",
                self.detail(leaf)?
            ),
        };
        Ok(Explanation { holds, text })
    }

    /// What a failed leaf actually found.
    fn detail(&self, predicate: &Predicate) -> Result<String, TargetError> {
        Ok(match predicate {
            Predicate::NodeExists { query, .. } => match self.matching(query)?.len() {
                0 => "found none".to_owned(),
                found => format!("found {found}"),
            },
            Predicate::NodeAbsent { query } => {
                let found = self.matching(query)?;
                self.found_detail(&found)
            }
            Predicate::NodeHasValue { query, .. } => {
                let found = self.matching(query)?;
                if found.is_empty() {
                    "no such node".to_owned()
                } else {
                    let values: Vec<String> = found
                        .iter()
                        .take(3)
                        .map(|&node| {
                            self.value_of(node)
                                .map_or_else(|| "no value".to_owned(), |value| format!("{value:?}"))
                        })
                        .collect();
                    let more = if found.len() > 3 {
                        format!(" and {} more", found.len() - 3)
                    } else {
                        String::new()
                    };
                    format!("found {}{more}", values.join(", "))
                }
            }
            Predicate::TextPresent { .. } => "not in the page text".to_owned(),
            Predicate::TextAbsent { .. } => "it is in the page text".to_owned(),
            Predicate::MoneyPresent { .. } => "no node reads as that amount".to_owned(),
            Predicate::UrlMatches { .. } => format!("the URL is {}", self.index.snapshot().url),
            Predicate::HttpStatusIn { .. } => match self.index.snapshot().http_status {
                Some(status) => format!("it is {status}"),
                None => "it is unknown".to_owned(),
            },
            Predicate::AllOf { .. } | Predicate::AnyOf { .. } | Predicate::Not { .. } => {
                String::new()
            }
        })
    }

    /// What makes a predicate that holds hold, for explaining a failed `not`.
    fn holding_detail(&self, predicate: &Predicate) -> Result<String, TargetError> {
        Ok(match predicate {
            Predicate::NodeExists { query, .. } => {
                let found = self.matching(query)?;
                self.found_detail(&found)
            }
            Predicate::NodeAbsent { .. } => "found none".to_owned(),
            Predicate::TextPresent { .. } => "it is in the page text".to_owned(),
            Predicate::TextAbsent { .. } => "it is not in the page text".to_owned(),
            Predicate::MoneyPresent { value, query } => {
                let found = self.money_nodes(value, query)?;
                self.found_detail(&found)
            }
            Predicate::UrlMatches { .. } => format!("the URL is {}", self.index.snapshot().url),
            Predicate::HttpStatusIn { .. } => match self.index.snapshot().http_status {
                Some(status) => format!("it is {status}"),
                None => "it is unknown".to_owned(),
            },
            other => format!("{} holds", self.describe(other)?),
        })
    }

    /// The expectation a predicate states, in words.
    fn describe(&self, predicate: &Predicate) -> Result<String, TargetError> {
        Ok(match predicate {
            Predicate::NodeExists { query, min_count } if *min_count == 1 => {
                format!("{} exists", describe_query(query))
            }
            Predicate::NodeExists { query, min_count } => {
                format!(
                    "{} exists at least {min_count} times",
                    describe_query(query)
                )
            }
            Predicate::NodeAbsent { query } => format!("no {} exists", describe_query(query)),
            Predicate::NodeHasValue { query, value } => {
                format!(
                    "{} has value {}",
                    describe_query(query),
                    render_bound(value, &self.bind(value)?)
                )
            }
            Predicate::TextPresent { value } => format!(
                "text {} is present",
                render_bound(value, &self.bind(value)?)
            ),
            Predicate::TextAbsent { value } => {
                format!("text {} is absent", render_bound(value, &self.bind(value)?))
            }
            Predicate::MoneyPresent { value, query } => {
                let amount = render_bound(value, &self.bind(value)?);
                if query.is_empty() {
                    format!("a node reads as the amount {amount}")
                } else {
                    format!("a {} reads as the amount {amount}", describe_query(query))
                }
            }
            Predicate::UrlMatches { pattern } => format!("the URL matches regex {pattern:?}"),
            Predicate::HttpStatusIn { codes } => {
                let codes: Vec<String> = codes.iter().map(ToString::to_string).collect();
                format!("the HTTP status is one of {}", codes.join(", "))
            }
            Predicate::AllOf { of } => format!("all of [{}]", self.describe_all(of)?),
            Predicate::AnyOf { of } => format!("any of [{}]", self.describe_all(of)?),
            Predicate::Not { of } => format!("not ({})", self.describe(of)?),
        })
    }

    fn describe_all(&self, predicates: &[Predicate]) -> Result<String, TargetError> {
        let parts = predicates
            .iter()
            .map(|child| self.describe(child))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(parts.join("; "))
    }

    /// The nodes a query selects, in document order.
    fn matching(&self, query: &NodeQuery) -> Result<Vec<usize>, TargetError> {
        // A run's value with no letters or digits folds to nothing, and nothing is part of every
        // name: refused, as an empty bound name is, never a query that selects anything.
        let bind = |template: &str| -> Result<String, TargetError> {
            let folded = fold(&bind_name(template, self.bindings, false)?);
            if folded.is_empty() && template.contains("{$") {
                return Err(TargetError::EmptyBoundName {
                    template: template.to_owned(),
                });
            }
            Ok(folded)
        };
        let name = query.name.as_deref().map(bind).transpose()?;
        let contains = query.name_contains.as_deref().map(bind).transpose()?;
        let pattern = query
            .name_matches
            .as_deref()
            .map(|pattern| self.regex(pattern))
            .transpose()?;
        let selects = |node: usize| {
            let Some(found) = self.index.node(node) else {
                return false;
            };
            name.as_ref()
                .is_none_or(|name| self.index.folded_name(node) == name)
                && contains
                    .as_ref()
                    .is_none_or(|part| self.index.folded_name(node).contains(part.as_str()))
                && pattern.is_none_or(|regex| regex.is_match(&squash_whitespace(&found.name)))
                && query.scope.as_ref().is_none_or(|scope| {
                    scope
                        .frame
                        .as_ref()
                        .is_none_or(|frame| found.scope.frame.as_ref() == Some(frame))
                        && scope
                            .region
                            .as_ref()
                            .is_none_or(|region| found.scope.region.as_ref() == Some(region))
                })
        };
        Ok(match &query.role {
            Some(role) => self
                .index
                .nodes_with_role(&normalize_role(role))
                .iter()
                .map(|&node| node as usize)
                .filter(|&node| selects(node))
                .collect(),
            None => (0..self.index.len())
                .filter(|&node| selects(node))
                .collect(),
        })
    }

    fn value_of(&self, node: usize) -> Option<String> {
        self.index
            .node(node)?
            .value
            .as_deref()
            .map(squash_whitespace)
    }

    /// "found N, the first <id>": what a predicate over nodes saw.
    fn found_detail(&self, found: &[usize]) -> String {
        let first = found
            .first()
            .and_then(|&node| self.index.node(node))
            .map(|node| node.id.to_string());
        format!(
            "found {}, the first {}",
            found.len(),
            first.unwrap_or_default()
        )
    }

    /// The nodes the query selects whose whole name reads as the bound amount.
    fn money_nodes(&self, value: &ValueExpr, query: &NodeQuery) -> Result<Vec<usize>, TargetError> {
        let expected = self.bind(value)?;
        Ok(self
            .matching(query)?
            .into_iter()
            .filter(|&node| {
                self.index
                    .node(node)
                    .is_some_and(|found| shows_money(&squash_whitespace(&found.name), &expected))
            })
            .collect())
    }

    fn text_contains(&self, value: &ValueExpr) -> Result<bool, TargetError> {
        let needle = squash_whitespace(&self.bind(value)?).to_lowercase();
        Ok(self.index.searchable_text().contains(&needle))
    }
}

/// A query in words: `textbox named "Member Number" in frame content`.
fn describe_query(query: &NodeQuery) -> String {
    let mut text = query.role.clone().unwrap_or_else(|| "node".to_owned());
    if let Some(name) = &query.name {
        text.push_str(&format!(" named {name:?}"));
    }
    if let Some(part) = &query.name_contains {
        text.push_str(&format!(" with a name containing {part:?}"));
    }
    if let Some(pattern) = &query.name_matches {
        text.push_str(&format!(" with a name matching regex {pattern:?}"));
    }
    if let Some(scope) = &query.scope {
        if let Some(frame) = &scope.frame {
            text.push_str(&format!(" in frame {frame}"));
        }
        if let Some(region) = &scope.region {
            text.push_str(&format!(" in region {region}"));
        }
    }
    text
}
