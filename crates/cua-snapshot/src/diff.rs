//! What changed between two observations, by node id, without carrying any value.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{NodeId, UiSnapshot};

/// The difference between two snapshots: ids only, so it can be written to evidence even when
/// the values are sensitive.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SnapshotDiff {
    pub added: Vec<NodeId>,
    pub removed: Vec<NodeId>,
    /// Nodes present in both whose value differs.
    pub value_changed: Vec<NodeId>,
    pub url_changed: bool,
}

impl SnapshotDiff {
    /// A one-line summary such as `+77/-4 nodes, 1 value changed`.
    pub fn summary(&self) -> String {
        format!(
            "+{}/-{} nodes, {} value(s) changed",
            self.added.len(),
            self.removed.len(),
            self.value_changed.len()
        )
    }
}

/// Compares two snapshots node by node.
pub fn diff(before: &UiSnapshot, after: &UiSnapshot) -> SnapshotDiff {
    let before_values: BTreeMap<&NodeId, &Option<String>> = before
        .nodes
        .iter()
        .map(|node| (&node.id, &node.value))
        .collect();
    let after_values: BTreeMap<&NodeId, &Option<String>> = after
        .nodes
        .iter()
        .map(|node| (&node.id, &node.value))
        .collect();
    let mut result = SnapshotDiff {
        url_changed: before.url != after.url,
        ..Default::default()
    };
    for node in &after.nodes {
        match before_values.get(&node.id) {
            None => result.added.push(node.id.clone()),
            Some(value) if **value != node.value => result.value_changed.push(node.id.clone()),
            Some(_) => {}
        }
    }
    for node in &before.nodes {
        if !after_values.contains_key(&node.id) {
            result.removed.push(node.id.clone());
        }
    }
    result
}
