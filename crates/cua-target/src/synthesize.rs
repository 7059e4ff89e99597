//! Descriptor synthesis for the compiler: the strongest semantic descriptor for a node that
//! resolves back to exactly that node.

use std::collections::BTreeMap;
use std::fmt;

use cua_artifact::{
    Anchor, AnchorRelation, Hints, Identifier, IdentityCheck, MatchMode, NameMatch, NodeScope,
    TargetDescriptor, ValueExpr,
};
use cua_snapshot::{UiSnapshot, fold};

use crate::bindings::BoundValues;
use crate::error::TargetError;
use crate::index::{SnapshotIndex, to_u32};
use crate::resolve::{ResolverConfig, resolve_with};
use crate::structure::{
    cell_text_indexed, header_row, is_control, is_header_row, key_cell, label_of_indexed,
    repeated_structure, row_cells, table_rows,
};
use crate::text::looks_like_datum;

/// What the compiler knows beyond the snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SynthesisConfig {
    /// The recorded run's input values. When a cell of the target's row holds one of them (and
    /// its column has a header), the identity check reads that column and compares it with
    /// `{$input: name}` rather than with the literal seen while recording.
    pub known_inputs: BTreeMap<Identifier, String>,
}

/// A synthesized descriptor and what synthesis noticed.
#[derive(Debug, Clone, PartialEq)]
pub struct Synthesized {
    /// The descriptor, with `recorded_strategy` set to the rung that resolved it back.
    pub descriptor: TargetDescriptor,
    /// Whether resolving the descriptor against the same snapshot gives back the node.
    pub round_trips: bool,
    pub warnings: Vec<SynthesisWarning>,
}

/// Something a reviewer of the compiled draft should know about a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SynthesisWarning {
    /// A stronger descriptor was tried and did not resolve back to the node.
    Skipped { descriptor: String, outcome: String },
    /// No descriptor resolved back to the node; the one returned is the last tried.
    NotRoundTripped { descriptor: String, outcome: String },
    /// The node is chosen by position but no identity check can guard it.
    NoIdentity { reason: &'static str },
}

impl fmt::Display for SynthesisWarning {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Skipped {
                descriptor,
                outcome,
            } => {
                write!(
                    formatter,
                    "skipped `{descriptor}`, which does not resolve back: {outcome}"
                )
            }
            Self::NotRoundTripped {
                descriptor,
                outcome,
            } => {
                write!(
                    formatter,
                    "`{descriptor}` does not resolve back to the node: {outcome}"
                )
            }
            Self::NoIdentity { reason } => write!(
                formatter,
                "chosen by position without an identity check: {reason}"
            ),
        }
    }
}

/// Synthesizes a descriptor for the node at `node`; see [`synthesize_with`].
pub fn synthesize(snapshot: &UiSnapshot, node: usize) -> Result<Synthesized, TargetError> {
    synthesize_with(
        &SnapshotIndex::new(snapshot),
        node,
        &SynthesisConfig::default(),
    )
}

/// Synthesizes a descriptor for the node at `node`, trying in order and keeping the first that
/// resolves back to the node on the same snapshot:
///
/// 1. **Its own name**, when the name is stable and unique among nodes of its role and scope:
///    `semantic_exact`, plus an anchor when one is available. A name is stable unless it reads
///    as a datum, or the node is a readable cell or text that is a value (it has a label before
///    it in its row, or sits in a data row of a repeated structure).
/// 2. **Its label** ([`crate::label_of`]) as the name, when the node is a control: the
///    label_association idiom for unnamed controls beside a label cell.
/// 3. **An anchor alone** (not in repeated structures, where every cell is data): a readable
///    value is `adjacent_to` the nearest preceding sibling (of its cell, for a text) that is
///    named and not a datum; a control is `row_of` the first cell of its row that is named, not
///    a datum and does not hold a control.
/// 4. **Its position**: `ordinal_in_region` among nodes of its role and scope, with an identity
///    check on the key cell of its row.
///
/// A target in a data row of a repeated structure (a table whose first row is a header, with
/// at least two data rows) always carries an identity check on its row's key cell. The CSS
/// hint, when the node has one, is kept under `hints`.
pub fn synthesize_with(
    index: &SnapshotIndex<'_>,
    node: usize,
    config: &SynthesisConfig,
) -> Result<Synthesized, TargetError> {
    let found = index.node(node).ok_or(TargetError::NodeOutOfRange {
        index: node,
        len: index.len(),
    })?;
    let row = index.nearest_row(node);
    let repeated = row.is_some_and(|row| repeated_structure(index, row).is_some());
    let row_identity = row.and_then(|row| key_identity(index, row, config));
    let base = TargetDescriptor {
        role: found.role.clone(),
        name: None,
        scope: (found.scope.frame.is_some() || found.scope.region.is_some()).then(|| NodeScope {
            frame: found.scope.frame.clone(),
            region: found.scope.region.clone(),
        }),
        anchor: None,
        ordinal: None,
        identity: if repeated { row_identity.clone() } else { None },
        hints: Hints {
            css: found.css_hint.clone(),
        },
        recorded_strategy: None,
    };
    let readable = is_readable(index, node);
    let anchor = if repeated {
        None
    } else if readable {
        readable_anchor(index, node)
    } else {
        control_anchor(index, node)
    };

    let mut attempts = Vec::new();
    if let Some(name) = stable_unique_name(index, node, readable, repeated) {
        attempts.push(TargetDescriptor {
            name: Some(exact(name)),
            anchor: anchor.clone(),
            ..base.clone()
        });
    }
    if !readable && !repeated {
        let label =
            label_of_indexed(index, node).map(|label| index.normalized_name(label).to_owned());
        if let Some(label) = label.filter(|label| !looks_like_datum(label)) {
            attempts.push(TargetDescriptor {
                name: Some(exact(label)),
                anchor: anchor.clone(),
                ..base.clone()
            });
        }
    }
    if let Some(anchor) = anchor {
        attempts.push(TargetDescriptor {
            anchor: Some(anchor),
            ..base.clone()
        });
    }
    let mut warnings = Vec::new();
    let identity = base.identity.clone().or(row_identity);
    let ordinal = keyed_position(index, node, identity.as_ref());
    if identity.is_none() {
        warnings.push(SynthesisWarning::NoIdentity {
            reason: if row.is_none() {
                "the node is not inside a row"
            } else {
                "its row has no key cell with text that no other row shares"
            },
        });
    }
    let positional = TargetDescriptor {
        ordinal: ordinal.map(to_u32),
        identity,
        ..base
    };

    let bindings = config
        .known_inputs
        .iter()
        .fold(BoundValues::new(), |bindings, (name, value)| {
            bindings.with_input(name.clone(), value.clone())
        });
    let verify = |descriptor: &mut TargetDescriptor| match resolve_with(
        index,
        descriptor,
        &bindings,
        &ResolverConfig::REPLAY,
    ) {
        Ok(resolution) if resolution.node == node => {
            descriptor.recorded_strategy = Some(resolution.strategy);
            Ok(())
        }
        Ok(resolution) => Err(format!(
            "it resolves to {} on {}",
            resolution.node_id,
            resolution.strategy.as_str()
        )),
        Err(error) => Err(error.to_string()),
    };
    for mut descriptor in attempts {
        match verify(&mut descriptor) {
            Ok(()) => {
                // A stronger form won, so the warning about choosing by position does not apply.
                warnings.retain(|warning| !matches!(warning, SynthesisWarning::NoIdentity { .. }));
                return Ok(Synthesized {
                    descriptor,
                    round_trips: true,
                    warnings,
                });
            }
            Err(outcome) => warnings.push(SynthesisWarning::Skipped {
                descriptor: descriptor.describe(),
                outcome,
            }),
        }
    }
    let mut descriptor = positional;
    let round_trips = match verify(&mut descriptor) {
        Ok(()) => true,
        Err(outcome) => {
            warnings.push(SynthesisWarning::NotRoundTripped {
                descriptor: descriptor.describe(),
                outcome,
            });
            false
        }
    };
    Ok(Synthesized {
        descriptor,
        round_trips,
        warnings,
    })
}

/// Cells and text carry the values a capability reads; their names are data unless they are
/// the label itself.
fn is_readable(index: &SnapshotIndex<'_>, node: usize) -> bool {
    index
        .node(node)
        .is_some_and(|found| matches!(found.role.as_str(), "cell" | "text"))
}

fn exact(value: String) -> NameMatch {
    NameMatch {
        value,
        match_mode: MatchMode::Exact,
    }
}

fn stable_unique_name(
    index: &SnapshotIndex<'_>,
    node: usize,
    readable: bool,
    repeated: bool,
) -> Option<String> {
    let name = index.normalized_name(node);
    if name.is_empty() || looks_like_datum(name) {
        return None;
    }
    if readable {
        // A column header is a label even though other headers precede it in its row.
        let header = index
            .nearest_row(node)
            .is_some_and(|row| is_header_row(index, row));
        let value = index.nearest_row(node).is_some() && label_of_indexed(index, node).is_some();
        if repeated || (value && !header) {
            return None;
        }
    }
    let found = index.node(node)?;
    let same = index
        .nodes_with_role(&found.role)
        .iter()
        .map(|&other| other as usize)
        .filter(|&other| {
            index
                .node(other)
                .is_some_and(|other| other.scope == found.scope)
        })
        .filter(|&other| index.normalized_name(other) == name)
        .count();
    (same == 1).then(|| name.to_owned())
}

/// `adjacent_to` the nearest preceding named, non-datum sibling of the value (or of the cell
/// holding a text).
fn readable_anchor(index: &SnapshotIndex<'_>, node: usize) -> Option<Anchor> {
    let mut value = node;
    let parent = index.parent(node)?;
    if index.node(node)?.role == "text" && index.node(parent)?.role == "cell" {
        value = parent;
    }
    let container = index.parent(value)?;
    let siblings = &index.node(container)?.children;
    let position = siblings
        .iter()
        .position(|&sibling| sibling as usize == value)?;
    siblings[..position]
        .iter()
        .rev()
        .map(|&sibling| sibling as usize)
        .find_map(|sibling| {
            let text = cell_text_indexed(index, sibling);
            (!text.is_empty() && !looks_like_datum(&text) && !is_control(index, sibling)).then_some(
                Anchor {
                    relation: AnchorRelation::AdjacentTo,
                    text,
                    match_mode: MatchMode::Normalized,
                },
            )
        })
}

/// `row_of` the first cell of the control's row that is named, not a datum, and holds no
/// control and not the node.
fn control_anchor(index: &SnapshotIndex<'_>, node: usize) -> Option<Anchor> {
    let row = index.nearest_row(node)?;
    row_cells(index, row).into_iter().find_map(|cell| {
        let holds_control = (cell..index.subtree_end(cell)).any(|inside| is_control(index, inside));
        let text = cell_text_indexed(index, cell);
        let usable = !holds_control
            && !index.is_ancestor(cell, node)
            && !text.is_empty()
            && !looks_like_datum(&text);
        usable.then_some(Anchor {
            relation: AnchorRelation::RowOf,
            text,
            match_mode: MatchMode::Normalized,
        })
    })
}

/// The identity check for `row`: a column holding a known input whose value no other row of the
/// table holds, else the row's first cell when that is unique. A key another row shares does
/// not identify the row (the resolver refuses it), so it is never proposed.
fn key_identity(
    index: &SnapshotIndex<'_>,
    row: usize,
    config: &SynthesisConfig,
) -> Option<IdentityCheck> {
    let cells = row_cells(index, row);
    // Columns have names only in a repeated structure; elsewhere the first row is just a row.
    let header = header_row(index, row)
        .filter(|&header| header != row && repeated_structure(index, row).is_some());
    let header_text = |position: usize| {
        let header = header?;
        let text = cell_text_indexed(index, *row_cells(index, header).get(position)?);
        (!text.is_empty()).then_some(text)
    };
    for (position, &cell) in cells.iter().enumerate() {
        let text = fold(&cell_text_indexed(index, cell));
        if text.is_empty() || !unique_in_column(index, row, position, &text) {
            continue;
        }
        let input = config
            .known_inputs
            .iter()
            .find(|(_, value)| fold(value) == text);
        if let Some((name, _)) = input {
            let column = header_text(position);
            if column.is_some() || position == 0 {
                return Some(IdentityCheck {
                    column,
                    equals: ValueExpr::Input(name.clone()),
                    match_mode: MatchMode::Normalized,
                });
            }
        }
    }
    let first = *cells.first()?;
    let text = cell_text_indexed(index, first);
    if text.is_empty() || !unique_in_column(index, row, 0, &fold(&text)) {
        return None;
    }
    Some(IdentityCheck {
        column: header_text(0),
        equals: ValueExpr::String(text),
        match_mode: MatchMode::Normalized,
    })
}

/// Whether no other row of `row`'s table holds `folded` in the cell at `position`.
fn unique_in_column(index: &SnapshotIndex<'_>, row: usize, position: usize, folded: &str) -> bool {
    let Some(table) = index.nearest_table(row) else {
        return true;
    };
    !table_rows(index, table).into_iter().any(|other| {
        other != row
            && row_cells(index, other)
                .get(position)
                .is_some_and(|&cell| fold(&cell_text_indexed(index, cell)) == folded)
    })
}

/// The node's position among the nodes of its role and scope whose row holds the same key as
/// its own: the ordinal the resolver counts once the identity check has keyed the pool.
fn keyed_position(
    index: &SnapshotIndex<'_>,
    node: usize,
    identity: Option<&IdentityCheck>,
) -> Option<usize> {
    let found = index.node(node)?;
    let key_of = |candidate: usize| -> Option<String> {
        let identity = identity?;
        let cell = key_cell(index, index.row_of(candidate)?, identity.column.as_deref())?;
        Some(fold(&cell_text_indexed(index, cell)))
    };
    let own_key = key_of(node);
    index
        .nodes_with_role(&found.role)
        .iter()
        .map(|&candidate| candidate as usize)
        .filter(|&candidate| {
            index
                .node(candidate)
                .is_some_and(|other| other.scope == found.scope)
                && (identity.is_none() || key_of(candidate) == own_key)
        })
        .position(|candidate| candidate == node)
}
