//! Target synthesis: the node acted on becomes a descriptor verified by resolving it back on the
//! recorded snapshot; a value read from a grid row is keyed by that row through an input.

use std::collections::BTreeMap;

use cua_artifact::{Identifier, InputSpec, NodeQuery, NodeScope, ValueExpr};
use cua_snapshot::{UiSnapshot, normalize_name};
use cua_target::{
    BoundValues, ResolverConfig, SnapshotIndex, SynthesisConfig, read_by_column, resolve_with,
    synthesize_with,
};

use crate::error::CompileError;
use crate::shape::infer_pattern;

use super::conditions::node_exists;
use super::notes::{contains_token, quoted, snake};
use super::{Compiler, Recorded, Target};

impl Compiler {
    /// The target of an action: synthesized from the node acted on, verified by resolving it
    /// back on the recorded snapshot with the run's input examples bound.
    pub(super) fn target(
        &mut self,
        action: &Recorded<'_>,
        node_id: &str,
    ) -> Result<Target, CompileError> {
        let snapshot = action.before;
        let node = snapshot
            .nodes
            .iter()
            .position(|node| node.id.as_str() == node_id)
            .ok_or_else(|| CompileError::Trace {
                reason: format!("node {node_id} is not in {}", action.before_ref),
            })?;
        if action.tool == "extract" {
            self.row_key_input(snapshot, node);
        }
        let index = SnapshotIndex::new(snapshot);
        let known: BTreeMap<Identifier, String> = self
            .inputs
            .iter()
            .filter_map(|input| Some((input.name.clone(), input.example.as_ref()?.literal_text()?)))
            .collect();
        let synthesized = synthesize_with(
            &index,
            node,
            &SynthesisConfig {
                known_inputs: known.clone(),
            },
        )
        .map_err(|error| CompileError::Trace {
            reason: error.to_string(),
        })?;
        let mut descriptor = synthesized.descriptor;
        let bindings = known
            .iter()
            .fold(BoundValues::new(), |bindings, (name, value)| {
                bindings.with_input(name.clone(), value.clone())
            });
        // A region is named after a heading, and headings are what tenants rebrand first: keep
        // it only when the target needs it to stay unique (a position within a grid does).
        if descriptor.ordinal.is_none()
            && let Some(scope) = descriptor
                .scope
                .as_ref()
                .filter(|scope| scope.region.is_some())
        {
            let mut wider = descriptor.clone();
            wider.scope = scope.frame.clone().map(|frame| NodeScope {
                frame: Some(frame),
                region: None,
            });
            if let Ok(resolution) = resolve_with(&index, &wider, &bindings, &ResolverConfig::REPLAY)
                && resolution.node == node
            {
                wider.recorded_strategy = Some(resolution.strategy);
                descriptor = wider;
            }
        }
        let round_trips = synthesized.round_trips
            && resolve_with(&index, &descriptor, &bindings, &ResolverConfig::REPLAY)
                .is_ok_and(|resolution| resolution.node == node);
        let described = descriptor.describe();
        if !round_trips {
            self.warnings.push(format!(
                "the target `{described}` (node {node_id}) does not resolve back to the node acted on; a reviewer must describe it by hand"
            ));
        }
        let column = column_header(snapshot, node);
        if descriptor.ordinal.is_some() {
            let column_note = column.as_ref().map_or_else(String::new, |column| {
                format!(" in column {}", quoted(column))
            });
            self.warnings.push(format!(
                "the target `{described}` is chosen by position{column_note}; its identity check keeps it on the right row, but confirm the position holds for every record"
            ));
        }
        for warning in &synthesized.warnings {
            if let cua_target::SynthesisWarning::NoIdentity { reason } = warning {
                self.warnings.push(format!(
                    "the target `{described}` has no identity check: {reason}"
                ));
            }
        }
        let found = &snapshot.nodes[node];
        let scope = found.scope.frame.clone().map(|frame| NodeScope {
            frame: Some(frame),
            region: None,
        });
        let label = descriptor
            .name
            .as_ref()
            .map(|name| name.value.clone())
            .or_else(|| descriptor.anchor.as_ref().map(|anchor| anchor.text.clone()))
            .or_else(|| column.clone())
            .unwrap_or_else(|| found.role.clone());
        let presence = match (&descriptor.name, &descriptor.anchor, &column) {
            (Some(name), _, _) => node_exists(NodeQuery {
                role: Some(descriptor.role.clone()),
                name: Some(name.value.clone()),
                scope: scope.clone(),
                ..NodeQuery::default()
            }),
            (None, Some(anchor), _) => node_exists(NodeQuery {
                name: Some(anchor.text.clone()),
                scope: scope.clone(),
                ..NodeQuery::default()
            }),
            (None, None, Some(column)) => node_exists(NodeQuery {
                role: Some("cell".to_owned()),
                name: Some(column.clone()),
                scope: scope.clone(),
                ..NodeQuery::default()
            }),
            (None, None, None) => node_exists(NodeQuery {
                role: Some(descriptor.role.clone()),
                scope: scope.clone(),
                ..NodeQuery::default()
            }),
        };
        // The hint is an unverified cache: kept, but never what the target depends on.
        if descriptor.hints.css.as_deref().is_some_and(str::is_empty) {
            descriptor.hints.css = None;
        }
        Ok(Target {
            descriptor,
            label,
            column,
            scope,
            presence,
        })
    }

    /// A value read from a grid row is keyed by that row: when a cell of the row holds a value
    /// the goal names (an account number), that value becomes an input named after its column,
    /// so the identity check compares the row's key with the input rather than a literal.
    pub(super) fn row_key_input(&mut self, snapshot: &UiSnapshot, node: usize) {
        let Some(row) = snapshot.nearest_ancestor_with_role(node, "row") else {
            return;
        };
        let cells: Vec<usize> = snapshot.nodes[row]
            .children
            .iter()
            .map(|&child| child as usize)
            .filter(|&child| snapshot.nodes[child].role == "cell")
            .collect();
        for cell in cells {
            let text = normalize_name(&cua_target::cell_text(snapshot, cell));
            let known = self.inputs.iter().any(|input| {
                input
                    .example
                    .as_ref()
                    .and_then(ValueExpr::literal_text)
                    .as_deref()
                    == Some(text.as_str())
            });
            if text.is_empty() || known || !contains_token(&self.goal, &text) {
                continue;
            }
            let Some(column) = column_header(snapshot, cell) else {
                continue;
            };
            let mut name = snake(&column);
            if Identifier::parse(&name).is_err() {
                name = "row_key".to_owned();
            }
            while self.inputs.iter().any(|input| input.name.as_str() == name) {
                name.push_str("_2");
            }
            let Ok(name) = Identifier::parse(&name) else {
                return;
            };
            let pattern = infer_pattern(&text);
            self.notes.push(format!(
                "Input `{name}` selects the row of the {} grid column that discovery read; it was seen once in the goal ({text:?}), and its pattern `{}` was inferred from it.",
                quoted(&column),
                pattern.as_deref().unwrap_or("none")
            ));
            self.inputs.push(InputSpec {
                name,
                value_type: cua_artifact::ValueType::String,
                required: true,
                description: format!(
                    "The {} of the row to read, as the grid shows it.",
                    quoted(&column)
                ),
                pattern,
                allowed: Vec::new(),
                default: None,
                example: Some(ValueExpr::String(text)),
                sensitive: false,
                idempotency_key: false,
            });
            return;
        }
    }
}

/// The header of the column a grid cell sits in: the same position in its table's first row,
/// checked by reading that column back.
pub(super) fn column_header(snapshot: &UiSnapshot, node: usize) -> Option<String> {
    let cell = if snapshot.nodes[node].role == "cell" {
        node
    } else {
        snapshot.nearest_ancestor_with_role(node, "cell")?
    };
    let row = snapshot.nearest_ancestor_with_role(cell, "row")?;
    let table = snapshot.nearest_ancestor_with_role(row, "table")?;
    let header_row = snapshot
        .descendants(table)
        .find(|&inside| snapshot.nodes[inside].role == "row")?;
    if header_row == row {
        return None;
    }
    let cells = |row: usize| -> Vec<usize> {
        snapshot.nodes[row]
            .children
            .iter()
            .map(|&child| child as usize)
            .filter(|&child| snapshot.nodes[child].role == "cell")
            .collect()
    };
    let position = cells(row).iter().position(|&candidate| candidate == cell)?;
    let header_cells = cells(header_row);
    let data_columns = cells(row).len();
    if data_columns < 3 || header_cells.len() != data_columns {
        return None;
    }
    let header = normalize_name(&cua_target::cell_text(
        snapshot,
        *header_cells.get(position)?,
    ));
    if header.is_empty() || cua_target::looks_like_datum(&header) {
        return None;
    }
    (read_by_column(snapshot, cell, &header) == Some(cell)).then_some(header)
}
