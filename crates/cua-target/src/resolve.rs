//! The resolution ladder: a snapshot and a `TargetDescriptor` give exactly one node, or a
//! refusal that says why.

use std::cell::OnceCell;
use std::collections::BTreeSet;

use cua_artifact::{
    AnchorRelation, IdentityCheck, MatchMode, ResolutionRecord, ResolutionStrategy,
    TargetDescriptor, ValueExpr,
};
use cua_snapshot::{NodeId, UiSnapshot, fold, normalize_role, squash_whitespace};
use serde::Serialize;

use crate::bindings::{Bindings, bind_name, bind_target_text, bind_text};
use crate::error::{CandidateSummary, RungAttempt, RungOutcome, TargetError};
use crate::index::{SnapshotIndex, to_u32};
use crate::structure::{
    CONTAINER_ROLES, LABEL_ROLES, cell_text_indexed, label_of_indexed, record_key,
    record_key_place, record_of, records_called, row_cells, sibling_records,
};
use crate::text::{TextMatcher, fold_equals};

/// How the resolver runs. Passed explicitly; replay uses the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResolverConfig {
    /// Whether the vision rung may be asked for. Replay sets `false`: a descriptor recorded by
    /// vision is refused ([`TargetError::VisionRefused`]), never silently resolved another way.
    /// Discovery sets `true`, and the rung is reported as having no generator.
    pub allow_vision: bool,
}

impl ResolverConfig {
    /// Deterministic replay: no vision.
    pub const REPLAY: Self = Self {
        allow_vision: false,
    };
    /// Model-driven discovery, where vision may be asked for (it has no generator yet).
    pub const DISCOVERY: Self = Self { allow_vision: true };
}

/// One resolved target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolution {
    /// Index of the node in the snapshot.
    pub node: usize,
    pub node_id: NodeId,
    /// The rung that decided.
    pub strategy: ResolutionStrategy,
    /// The descriptor's drift baseline.
    pub recorded_strategy: Option<ResolutionStrategy>,
    /// How many candidates the deciding rung produced.
    pub candidates_considered: u32,
    /// `(n - 1) / n` over those candidates: reported, never used to decide.
    pub ambiguity: f64,
    /// Whether the deciding rung is weaker than the recorded one.
    pub drifted: bool,
    /// Whether an identity check ran on the node's row (and passed; a failure is an error).
    pub identity_verified: bool,
}

impl Resolution {
    /// The run-record form of this resolution.
    pub fn record(&self, descriptor: &TargetDescriptor) -> ResolutionRecord {
        ResolutionRecord {
            target_description: descriptor.describe(),
            strategy_recorded: self.recorded_strategy,
            strategy_used: Some(self.strategy),
            resolved_node_id: Some(self.node_id.to_string()),
            candidates_considered: self.candidates_considered,
            ambiguity_score: self.ambiguity,
            identity_verified: self.identity_verified.then_some(true),
        }
    }
}

/// Resolves `descriptor` in `snapshot` for replay (no vision).
///
/// The ladder runs in fixed order: semantic_exact, semantic_normalized, label_association,
/// structural_anchor, hint_cached, ordinal_in_region. The first rung that produces any
/// candidate decides: one candidate wins; several are narrowed by an in-range `ordinal`
/// (`candidates[ordinal]`, document order) or refused as [`TargetError::Ambiguous`]; when no
/// rung produces one, the result is [`TargetError::NotFound`]. There are no scores and no
/// thresholds.
///
/// A name and an anchor are both constraints: when the screen has a node matching the anchor
/// text (other than a node the name itself describes), the name rungs (semantic_exact, semantic_normalized, label_association, hint_cached)
/// keep only the candidates that stand where the anchor says (the structural_anchor rung's
/// nodes); named candidates elsewhere are `OutsideAnchor`, and then the rungs that ignore the
/// name (structural_anchor, ordinal_in_region) are not tried: the name did not drift, it is
/// somewhere else, and the result is a refusal. When no node matches the anchor text, the name
/// alone decides.
///
/// An `identity` check keys the target by its record (its table row, list item, article or
/// definition): the deciding rung's candidates are narrowed to those whose record's key (a
/// row's cell under `identity.column` or its first cell, a definition's term, a list item's or
/// article's own first heading or run of text) matches the bound value, and the ordinal counts
/// among those. When none does, the result is [`TargetError::IdentityMismatch`] (a weaker rung
/// is never tried). When another record of the chosen node's structure holds the same key, the
/// key does not identify the record and the result is [`TargetError::IdentityNotUnique`],
/// whatever the ordinal says.
///
/// What each rung matches (role is always compared after `normalize_role`; scope means every
/// frame/region the descriptor gives equals the node's):
/// - **semantic_exact**: role, scope, and the node's name by `name.match` (exact after
///   `normalize_name`; normalized by `fold`; contains, case-insensitively; regex search).
/// - **semantic_normalized**: role, scope, and `fold(name) == fold(descriptor name)` (a
///   `contains` name compares folded substrings; a regex name skips this rung).
/// - **label_association**: role and scope, and the node's label ([`crate::label_of`]: the
///   nearest preceding label cell or text in its row, or the preceding sibling outside rows)
///   matches the name by `name.match`.
/// - **structural_anchor**: anchor nodes are nodes (not rows, tables or documents) whose name
///   matches `anchor.text` by `anchor.match`; for each anchor, candidates with role and scope
///   are taken relative to it, never the anchor itself, its ancestors or its descendants:
///   `row_of` inside the anchor's nearest row; `adjacent_to` in the first following sibling of
///   the anchor (a `text` anchor that is the last child of a cell stands for its cell) that is,
///   or contains, a match; `within_section` inside the anchor's nearest table, or for a heading
///   the nodes after it up to the next heading within its parent, or else its parent;
///   `labelled_by` the nodes one of whose page-given labels ([`cua_snapshot::UiNode::labels`]) matches the
///   anchor text; `beside_label` the nodes whose heuristic label ([`crate::label_of`]) does.
///   Deduplicated, in document order.
/// - **hint_cached**: nodes whose CSS hint equals `hints.css`, kept only if they also have the
///   role and scope and, when the descriptor has a name, the name matches by `name.match`, by
///   `fold`, or through the node's label. A dead hint finds nothing; a lying one is rejected.
/// - **ordinal_in_region**: every node with the role and scope, in document order; the
///   candidate is `pool[ordinal]`. It runs only when the descriptor has an `ordinal`, or has
///   neither a name nor an anchor (then role and scope are the whole description): a name or
///   anchor that matched nothing is never satisfied by position alone.
pub fn resolve<B: Bindings + ?Sized>(
    snapshot: &UiSnapshot,
    descriptor: &TargetDescriptor,
    bindings: &B,
) -> Result<Resolution, TargetError> {
    resolve_with(
        &SnapshotIndex::new(snapshot),
        descriptor,
        bindings,
        &ResolverConfig::REPLAY,
    )
}

/// [`resolve`] over a prebuilt index, with an explicit configuration.
pub fn resolve_with<B: Bindings + ?Sized>(
    index: &SnapshotIndex<'_>,
    descriptor: &TargetDescriptor,
    bindings: &B,
    config: &ResolverConfig,
) -> Result<Resolution, TargetError> {
    if descriptor.recorded_strategy == Some(ResolutionStrategy::Vision) && !config.allow_vision {
        return Err(TargetError::VisionRefused {
            target: descriptor.describe(),
        });
    }
    let query = Query::new(index, descriptor, bindings)?;
    let identity = descriptor
        .identity
        .as_ref()
        .map(|identity| IdentityKey::new(identity, bindings))
        .transpose()?;
    // Where the anchor says the target stands (role and scope relative to the anchor nodes).
    // `None` without an anchor, or when the only nodes matching the anchor text are ones the
    // name itself describes: then the name alone decides, as it would have had no anchor.
    let anchored: Option<BTreeSet<usize>> = if query.anchor_shown() {
        match query.structural_anchor() {
            Generated::Candidates(found) | Generated::Pool(found) => {
                Some(found.into_iter().collect())
            }
            Generated::Nothing(_) => Some(BTreeSet::new()),
        }
    } else {
        None
    };
    let mut tried = Vec::new();
    let mut named_elsewhere = false;
    for strategy in ResolutionStrategy::LADDER {
        let generated = match strategy {
            ResolutionStrategy::SemanticExact => query.semantic_exact(),
            ResolutionStrategy::SemanticNormalized => query.semantic_normalized(),
            ResolutionStrategy::LabelAssociation => query.label_association(),
            ResolutionStrategy::StructuralAnchor => query.structural_anchor(),
            ResolutionStrategy::HintCached => query.hint_cached(),
            ResolutionStrategy::OrdinalInRegion => query.ordinal_in_region(),
            ResolutionStrategy::Vision => {
                if config.allow_vision {
                    tried.push(RungAttempt {
                        strategy,
                        outcome: RungOutcome::NoGenerator,
                    });
                }
                continue;
            }
        };
        // The name is on the screen, only not where the anchor says: it did not drift, so the
        // rungs that ignore the name (the anchor's, the ordinal's) may not stand in for it.
        if named_elsewhere
            && matches!(
                strategy,
                ResolutionStrategy::StructuralAnchor | ResolutionStrategy::OrdinalInRegion
            )
        {
            tried.push(RungAttempt {
                strategy,
                outcome: RungOutcome::NotApplicable {
                    reason: "the name matched outside the anchor",
                },
            });
            continue;
        }
        // A name and an anchor are both constraints: on the rungs that match the name, only
        // candidates standing where the anchor says count. (The anchor rung itself ignores the
        // name: it is what still finds a control whose name drifted.)
        let generated = match (&anchored, strategy, generated) {
            (
                Some(anchored),
                ResolutionStrategy::SemanticExact
                | ResolutionStrategy::SemanticNormalized
                | ResolutionStrategy::LabelAssociation
                | ResolutionStrategy::HintCached,
                Generated::Candidates(found),
            ) => {
                let named = to_u32(found.len());
                let kept: Vec<usize> = found
                    .into_iter()
                    .filter(|node| anchored.contains(node))
                    .collect();
                if kept.is_empty() {
                    named_elsewhere = true;
                    Generated::Nothing(RungOutcome::OutsideAnchor { named })
                } else {
                    Generated::Candidates(kept)
                }
            }
            (_, _, generated) => generated,
        };
        let (found, positional) = match generated {
            Generated::Candidates(found) => (found, false),
            Generated::Pool(pool) => (pool, true),
            Generated::Nothing(outcome) => {
                tried.push(RungAttempt { strategy, outcome });
                continue;
            }
        };
        // An identity check keys the target: only candidates in a record whose key holds the
        // bound value are candidates at all, and the ordinal counts among those.
        let keyed = match &identity {
            Some(identity) => {
                let keyed: Vec<usize> = found
                    .iter()
                    .copied()
                    .filter(|&node| identity.holds_on(index, node))
                    .collect();
                if keyed.is_empty() {
                    let refused = descriptor
                        .ordinal
                        .and_then(|ordinal| found.get(ordinal as usize))
                        .or(found.first())
                        .copied()
                        .expect("a rung with candidates has a first one");
                    return Err(identity.mismatch(index, refused));
                }
                keyed
            }
            None => found,
        };
        let chosen = if let (true, Some(ordinal)) = (positional, descriptor.ordinal) {
            match pick_ordinal(ordinal, &keyed) {
                Ok(chosen) => chosen,
                Err(outcome) => {
                    tried.push(RungAttempt { strategy, outcome });
                    continue;
                }
            }
        } else {
            decide(index, descriptor, strategy, &keyed)?
        };
        if let Some(identity) = &identity {
            identity.unique(index, descriptor, chosen, &keyed)?;
        }
        let considered = to_u32(keyed.len());
        return Ok(Resolution {
            node: chosen,
            node_id: index
                .node(chosen)
                .map(|node| node.id.clone())
                .expect("candidates are indexes of the snapshot"),
            strategy,
            recorded_strategy: descriptor.recorded_strategy,
            candidates_considered: considered,
            ambiguity: if considered == 0 {
                0.0
            } else {
                f64::from(considered - 1) / f64::from(considered)
            },
            drifted: descriptor
                .recorded_strategy
                .is_some_and(|recorded| recorded.drifted_to(strategy)),
            identity_verified: identity.is_some(),
        });
    }
    Err(TargetError::NotFound {
        target: descriptor.describe(),
        tried,
    })
}

/// Whether the node reads as a field's label: a cell, text or label whose text ends with a
/// colon (`Start date:`, `Member Number:*`).
fn reads_as_label(index: &SnapshotIndex<'_>, node: usize) -> bool {
    index.node(node).is_some_and(|found| {
        LABEL_ROLES.contains(&found.role.as_str())
            && squash_whitespace(&found.name)
                .trim_end_matches(|c: char| c == '*' || c.is_whitespace())
                .ends_with(':')
    })
}

/// The ordinal rung's pick from its (keyed) pool: `pool[ordinal]`.
fn pick_ordinal(ordinal: u32, pool: &[usize]) -> Result<usize, RungOutcome> {
    pool.get(ordinal as usize)
        .copied()
        .ok_or(RungOutcome::OrdinalOutOfRange {
            ordinal,
            pool: to_u32(pool.len()),
        })
}

/// The share of resolutions that fell to a weaker rung than recorded: drifted / total, 0 when
/// there were none. A signal for reviewers; it never stops a run.
pub fn drift_score(resolutions: &[Resolution]) -> f64 {
    if resolutions.is_empty() {
        return 0.0;
    }
    let drifted = resolutions
        .iter()
        .filter(|resolution| resolution.drifted)
        .count();
    drifted as f64 / resolutions.len() as f64
}

/// An identity check bound to the run: the key column, the expected text and its matcher.
///
/// The key is read on the target's record ([`record_of`]: its table row, list item, article or
/// definition). A key identifies a record only when no other record of the same structure holds
/// it: a look-alike that shares the key is indistinguishable by it, so [`IdentityKey::unique`]
/// refuses rather than letting document order decide.
struct IdentityKey<'d> {
    column: Option<&'d str>,
    expected: String,
    matcher: TextMatcher,
}

impl<'d> IdentityKey<'d> {
    fn new<B: Bindings + ?Sized>(
        identity: &'d IdentityCheck,
        bindings: &B,
    ) -> Result<Self, TargetError> {
        let expected = bind_text(&identity.equals, bindings, "an identity check")?;
        // A bound value is a key, not a pattern: escaped, so `.*` keys no row but its own.
        let pattern = match (&identity.equals, identity.match_mode) {
            (ValueExpr::Input(_) | ValueExpr::Output(_), MatchMode::Regex) => {
                format!("^{}$", regex::escape(&expected))
            }
            _ => expected.clone(),
        };
        let matcher = TextMatcher::new(identity.match_mode, &pattern)?;
        Ok(Self {
            column: identity.column.as_deref(),
            expected,
            matcher,
        })
    }

    /// Where the key of `record` is read, for messages.
    fn key(&self, index: &SnapshotIndex<'_>, record: usize) -> String {
        let role = index.node(record).map_or("row", |node| node.role.as_str());
        record_key_place(role, self.column)
    }

    fn record_holds(&self, index: &SnapshotIndex<'_>, record: usize) -> bool {
        record_key(index, record, self.column)
            .is_some_and(|key| self.matcher.matches(&cell_text_indexed(index, key)))
    }

    /// Whether the node's record holds the key.
    fn holds_on(&self, index: &SnapshotIndex<'_>, node: usize) -> bool {
        record_of(index, node).is_some_and(|record| self.record_holds(index, record))
    }

    /// The refusal for a node whose record does not hold the key.
    fn mismatch(&self, index: &SnapshotIndex<'_>, node: usize) -> TargetError {
        let node_id = index
            .node(node)
            .map(|found| found.id.clone())
            .unwrap_or_else(|| NodeId::new(""));
        let (key, found) = match record_of(index, node) {
            None => (
                "the node's record (it is in no row, list item, article or definition)".to_owned(),
                None,
            ),
            Some(record) => (
                self.key(index, record),
                record_key(index, record, self.column).map(|key| cell_text_indexed(index, key)),
            ),
        };
        TargetError::IdentityMismatch {
            node: node_id,
            key,
            expected: self.expected.clone(),
            found,
        }
    }

    /// Refuses when another record of the chosen node's structure holds the key as well.
    fn unique(
        &self,
        index: &SnapshotIndex<'_>,
        descriptor: &TargetDescriptor,
        chosen: usize,
        keyed: &[usize],
    ) -> Result<(), TargetError> {
        // Every record that holds the key counts: those of the chosen node's structure (a
        // header row included: a key equal to a column title identifies nothing) and the
        // record of every keyed candidate, wherever it is, so a look-alike list or table
        // earlier on the page cannot win by position.
        let mut holding: Vec<usize> = keyed
            .iter()
            .filter_map(|&node| record_of(index, node))
            .collect();
        let record = record_of(index, chosen);
        if let Some(record) = record {
            holding.extend(
                sibling_records(index, record)
                    .into_iter()
                    .filter(|&sibling| self.record_holds(index, sibling)),
            );
        }
        holding.sort_unstable();
        holding.dedup();
        if holding.len() <= 1 {
            return Ok(());
        }
        Err(TargetError::IdentityNotUnique {
            target: descriptor.describe(),
            key: record.map_or_else(String::new, |record| self.key(index, record)),
            expected: self.expected.clone(),
            count: to_u32(holding.len()),
            records: records_called(
                record
                    .and_then(|record| index.node(record))
                    .map_or("row", |node| node.role.as_str()),
            ),
            rows: holding
                .iter()
                .take(5)
                .filter_map(|&record| {
                    // A row's own name is usually empty: its cells say which row it is.
                    let name = if index.node(record).is_some_and(|node| node.role == "row") {
                        row_cells(index, record)
                            .into_iter()
                            .map(|cell| cell_text_indexed(index, cell))
                            .collect::<Vec<_>>()
                            .join(" | ")
                    } else {
                        record_key(index, record, self.column)
                            .map(|key| cell_text_indexed(index, key))
                            .unwrap_or_default()
                    };
                    summarize(index, record).map(|summary| CandidateSummary { name, ..summary })
                })
                .collect(),
        })
    }
}

/// What a rung produced.
enum Generated {
    /// Candidates in document order, for the decision rule.
    Candidates(Vec<usize>),
    /// The ordinal rung's pool, in document order: the ordinal picks from it.
    Pool(Vec<usize>),
    Nothing(RungOutcome),
}

impl Generated {
    fn from_candidates(found: Vec<usize>) -> Self {
        if found.is_empty() {
            Self::Nothing(RungOutcome::NoCandidates)
        } else {
            Self::Candidates(found)
        }
    }
}

/// The decision rule for a rung with candidates.
fn decide(
    index: &SnapshotIndex<'_>,
    descriptor: &TargetDescriptor,
    strategy: ResolutionStrategy,
    found: &[usize],
) -> Result<usize, TargetError> {
    if let [only] = found {
        return Ok(*only);
    }
    if let Some(&chosen) = descriptor
        .ordinal
        .and_then(|ordinal| found.get(ordinal as usize))
    {
        return Ok(chosen);
    }
    Err(TargetError::Ambiguous {
        target: descriptor.describe(),
        strategy,
        count: to_u32(found.len()),
        ordinal: descriptor.ordinal,
        candidates: found
            .iter()
            .take(5)
            .filter_map(|&candidate| summarize(index, candidate))
            .collect(),
    })
}

fn summarize(index: &SnapshotIndex<'_>, node: usize) -> Option<CandidateSummary> {
    let found = index.node(node)?;
    Some(CandidateSummary {
        id: found.id.clone(),
        role: found.role.clone(),
        name: found.name.clone(),
        scope: found.scope.clone(),
    })
}

/// A descriptor compiled against one index: role normalized, patterns compiled once.
struct Query<'i, 's> {
    index: &'i SnapshotIndex<'s>,
    descriptor: &'i TargetDescriptor,
    role: String,
    name: Option<TextMatcher>,
    /// The folded name for semantic_normalized, when that rung applies.
    folded_name: Option<(String, bool)>,
    anchor: Option<(AnchorRelation, TextMatcher)>,
    /// The nodes the anchor text names, found once: both the name rungs (through the anchored
    /// set) and the anchor rung need them, and finding them scans the whole snapshot.
    anchor_nodes: OnceCell<Vec<usize>>,
}

impl<'i, 's> Query<'i, 's> {
    fn new<B: Bindings + ?Sized>(
        index: &'i SnapshotIndex<'s>,
        descriptor: &'i TargetDescriptor,
        bindings: &B,
    ) -> Result<Self, TargetError> {
        let name = descriptor
            .name
            .as_ref()
            .map(|name| {
                let regex = name.match_mode == MatchMode::Regex;
                let value = bind_name(&name.value, bindings, regex)?;
                Ok((name.match_mode, value))
            })
            .transpose()?;
        let folded_name = name.as_ref().and_then(|(mode, value)| {
            let folded = fold(value);
            let applies = *mode != MatchMode::Regex && !folded.is_empty();
            applies.then_some((folded, *mode == MatchMode::Contains))
        });
        let name = name
            .map(|(mode, value)| TextMatcher::for_target_name(mode, &value))
            .transpose()?;
        let anchor = descriptor
            .anchor
            .as_ref()
            .map(|anchor| {
                let text = bind_target_text(
                    &anchor.text,
                    bindings,
                    anchor.match_mode == MatchMode::Regex,
                )?;
                TextMatcher::new(anchor.match_mode, &text).map(|matcher| (anchor.relation, matcher))
            })
            .transpose()?;
        Ok(Self {
            index,
            descriptor,
            role: normalize_role(&descriptor.role),
            name,
            folded_name,
            anchor,
            anchor_nodes: OnceCell::new(),
        })
    }

    /// Nodes with the descriptor's role and scope, in document order.
    fn pool(&self) -> impl Iterator<Item = usize> + '_ {
        self.index
            .nodes_with_role(&self.role)
            .iter()
            .map(|&node| node as usize)
            .filter(|&node| self.in_scope(node))
    }

    fn in_scope(&self, node: usize) -> bool {
        let Some(scope) = &self.descriptor.scope else {
            return true;
        };
        let Some(found) = self.index.node(node) else {
            return false;
        };
        scope
            .frame
            .as_ref()
            .is_none_or(|frame| found.scope.frame.as_ref() == Some(frame))
            && scope
                .region
                .as_ref()
                .is_none_or(|region| found.scope.region.as_ref() == Some(region))
    }

    fn has_role_and_scope(&self, node: usize) -> bool {
        self.index
            .node(node)
            .is_some_and(|found| found.role == self.role)
            && self.in_scope(node)
    }

    fn folded_matches(&self, node: usize) -> bool {
        self.folded_name.as_ref().is_some_and(|(folded, contains)| {
            if *contains {
                self.index.folded_name(node).contains(folded.as_str())
            } else {
                self.index
                    .node(node)
                    .is_some_and(|found| fold_equals(&found.name, folded))
            }
        })
    }

    /// Whether `node` is labelled by the anchor's text under a label relation: `labelled_by`
    /// by one of the labels the page gives it, `beside_label` by its heuristic label.
    fn labelled(&self, relation: AnchorRelation, matcher: &TextMatcher, node: usize) -> bool {
        match relation {
            AnchorRelation::LabelledBy => self
                .index
                .node(node)
                .is_some_and(|found| found.labels.iter().any(|label| matcher.matches(label))),
            _ => self.label_matches(matcher, node),
        }
    }

    fn label_matches(&self, matcher: &TextMatcher, node: usize) -> bool {
        label_of_indexed(self.index, node)
            .is_some_and(|label| matcher.matches_node(self.index, label))
    }

    fn semantic_exact(&self) -> Generated {
        let Some(name) = &self.name else {
            return Generated::Nothing(RungOutcome::NotApplicable { reason: "no name" });
        };
        Generated::from_candidates(
            self.pool()
                .filter(|&node| name.matches_node(self.index, node))
                .collect(),
        )
    }

    fn semantic_normalized(&self) -> Generated {
        if self.name.is_none() {
            return Generated::Nothing(RungOutcome::NotApplicable { reason: "no name" });
        }
        if self.folded_name.is_none() {
            return Generated::Nothing(RungOutcome::NotApplicable {
                reason: "a regex name, or one with no letters or digits, does not fold",
            });
        }
        Generated::from_candidates(
            self.pool()
                .filter(|&node| self.folded_matches(node))
                .collect(),
        )
    }

    fn label_association(&self) -> Generated {
        let Some(name) = &self.name else {
            return Generated::Nothing(RungOutcome::NotApplicable { reason: "no name" });
        };
        Generated::from_candidates(
            self.pool()
                .filter(|&node| self.label_matches(name, node))
                .collect(),
        )
    }

    fn structural_anchor(&self) -> Generated {
        let Some((relation, matcher)) = &self.anchor else {
            return Generated::Nothing(RungOutcome::NotApplicable {
                reason: "no anchor",
            });
        };
        if matches!(
            relation,
            AnchorRelation::LabelledBy | AnchorRelation::BesideLabel
        ) {
            return Generated::from_candidates(
                self.pool()
                    .filter(|&node| self.labelled(*relation, matcher, node))
                    .collect(),
            );
        }
        let anchors = self.anchor_nodes();
        if anchors.is_empty() {
            return Generated::Nothing(RungOutcome::NoAnchor);
        }
        let mut found = BTreeSet::new();
        for &anchor in anchors {
            match relation {
                AnchorRelation::RowOf => {
                    if let Some(row) = self.index.nearest_row(anchor) {
                        self.collect_relative(
                            anchor,
                            row + 1..self.index.subtree_end(row),
                            &mut found,
                        );
                    }
                }
                AnchorRelation::AdjacentTo => self.collect_adjacent(anchor, &mut found),
                AnchorRelation::WithinSection => {
                    let section = self.section_of(anchor);
                    self.collect_relative(anchor, section, &mut found);
                }
                AnchorRelation::LabelledBy | AnchorRelation::BesideLabel => {}
            }
        }
        Generated::from_candidates(found.into_iter().collect())
    }

    /// The nodes an anchor text names: any but rows, tables and documents.
    fn anchor_nodes(&self) -> &[usize] {
        self.anchor_nodes.get_or_init(|| {
            let Some((_, matcher)) = &self.anchor else {
                return Vec::new();
            };
            (0..self.index.len())
                .filter(|&node| {
                    matcher.matches_node(self.index, node)
                        && self
                            .index
                            .node(node)
                            .is_some_and(|found| !CONTAINER_ROLES.contains(&found.role.as_str()))
                })
                .collect()
        })
    }

    /// Whether the screen shows the anchor as a node other than one the name itself describes
    /// (a textbox named "Operator ID" is not the label "Operator ID" beside it).
    fn anchor_shown(&self) -> bool {
        let Some((relation, matcher)) = &self.anchor else {
            return false;
        };
        // A label relation is shown when a candidate is labelled so, or when its text is on the
        // screen at all (as any anchor's): a label that labels none of them does not let the
        // name decide alone.
        if matches!(
            relation,
            AnchorRelation::LabelledBy | AnchorRelation::BesideLabel
        ) && self
            .pool()
            .any(|node| self.labelled(*relation, matcher, node))
        {
            return true;
        }
        self.anchor_nodes().iter().any(|&node| {
            let described = self.has_role_and_scope(node)
                && self
                    .name
                    .as_ref()
                    .is_some_and(|name| name.matches_node(self.index, node));
            !described
        })
    }

    /// Adds the nodes of `range` with role and scope that are not `anchor`, an ancestor of it,
    /// or inside it.
    fn collect_relative(
        &self,
        anchor: usize,
        range: std::ops::Range<usize>,
        found: &mut BTreeSet<usize>,
    ) {
        let anchor_end = self.index.subtree_end(anchor);
        for node in range {
            let related = node == anchor
                || self.index.is_ancestor(node, anchor)
                || (anchor < node && node < anchor_end);
            if !related && self.has_role_and_scope(node) {
                found.insert(node);
            }
        }
    }

    /// The first following sibling of the anchor that is, or contains, a match.
    fn collect_adjacent(&self, anchor: usize, found: &mut BTreeSet<usize>) {
        let mut from = anchor;
        let Some(mut parent) = self.index.parent(from) else {
            return;
        };
        // A text node that ends its cell stands for the cell: "the cell beside this label".
        let is_text = self
            .index
            .node(from)
            .is_some_and(|node| node.role == "text");
        let parent_is_cell = self
            .index
            .node(parent)
            .is_some_and(|node| node.role == "cell");
        if is_text
            && parent_is_cell
            && self
                .index
                .node(parent)
                .and_then(|node| node.children.last())
                == Some(&to_u32(from))
        {
            from = parent;
            match self.index.parent(from) {
                Some(grandparent) => parent = grandparent,
                None => return,
            }
        }
        let Some(siblings) = self.index.node(parent).map(|node| &node.children) else {
            return;
        };
        let Some(position) = siblings
            .iter()
            .position(|&sibling| sibling as usize == from)
        else {
            return;
        };
        // A label's value slot may be empty, and the accessibility tree drops an empty element:
        // then the next thing after "Start date:" is the label "Due date:". Reading on would
        // answer with the wrong field, so another label ends the search.
        let label_anchor = reads_as_label(self.index, anchor);
        for &sibling in &siblings[position + 1..] {
            let sibling = sibling as usize;
            if label_anchor && reads_as_label(self.index, sibling) {
                return;
            }
            let matches: Vec<usize> = (sibling..self.index.subtree_end(sibling))
                .filter(|&node| self.has_role_and_scope(node))
                .collect();
            if !matches.is_empty() {
                found.extend(matches);
                return;
            }
        }
    }

    /// The section an anchor belongs to, as a range of node indexes.
    fn section_of(&self, anchor: usize) -> std::ops::Range<usize> {
        if let Some(table) = self.index.nearest_table(anchor) {
            return table + 1..self.index.subtree_end(table);
        }
        let Some(parent) = self.index.parent(anchor) else {
            return 0..0;
        };
        let parent_end = self.index.subtree_end(parent);
        if self
            .index
            .node(anchor)
            .is_some_and(|node| node.role == "heading")
        {
            let start = self.index.subtree_end(anchor);
            let end = (start..parent_end)
                .find(|&node| {
                    self.index
                        .node(node)
                        .is_some_and(|found| found.role == "heading")
                })
                .unwrap_or(parent_end);
            return start..end;
        }
        parent + 1..parent_end
    }

    fn hint_cached(&self) -> Generated {
        let Some(css) = &self.descriptor.hints.css else {
            return Generated::Nothing(RungOutcome::NotApplicable {
                reason: "no css hint",
            });
        };
        let carriers = self.index.nodes_with_css_hint(css);
        if carriers.is_empty() {
            return Generated::Nothing(RungOutcome::HintDead);
        }
        let accepted: Vec<usize> = carriers
            .iter()
            .map(|&node| node as usize)
            .filter(|&node| self.has_role_and_scope(node))
            .filter(|&node| match &self.name {
                None => true,
                Some(name) => {
                    name.matches_node(self.index, node)
                        || self.folded_matches(node)
                        || self.label_matches(name, node)
                }
            })
            .collect();
        if accepted.is_empty() {
            return Generated::Nothing(RungOutcome::HintRejected {
                carriers: to_u32(carriers.len()),
            });
        }
        Generated::Candidates(accepted)
    }

    fn ordinal_in_region(&self) -> Generated {
        let described = self.descriptor.name.is_some() || self.descriptor.anchor.is_some();
        if described && self.descriptor.ordinal.is_none() {
            return Generated::Nothing(RungOutcome::NotApplicable {
                reason: "the name or anchor matched nothing and there is no ordinal",
            });
        }
        let pool: Vec<usize> = self.pool().collect();
        if pool.is_empty() {
            return Generated::Nothing(RungOutcome::NoCandidates);
        }
        Generated::Pool(pool)
    }
}
