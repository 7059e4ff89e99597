//! `SnapshotIndex`: lookups over one snapshot, each built on first use and kept for the
//! snapshot's lifetime, so resolving many targets against one observation stays linear.

use std::cell::OnceCell;
use std::collections::BTreeMap;

use cua_snapshot::{UiNode, UiSnapshot, fold, normalize_name, squash_whitespace};

/// Per-snapshot indexes for the resolver and the predicate evaluator.
///
/// Building one costs nothing: every table (subtree extents, nearest row and table, nodes by
/// role and by CSS hint) is computed the first time something needs it, in one pass over the
/// nodes, and a node's normalized and folded names the first time that node's are needed. Posting lists hold node indexes in document order, and
/// the maps are `BTreeMap`s, so nothing here depends on hash order.
///
/// The index borrows the snapshot; build one per observation and pass it to
/// [`crate::resolve_with`], [`crate::evaluate_indexed`] and [`crate::synthesize_with`].
pub struct SnapshotIndex<'s> {
    snapshot: &'s UiSnapshot,
    subtree_end: OnceCell<Vec<u32>>,
    nearest_row: OnceCell<Vec<Option<u32>>>,
    nearest_table: OnceCell<Vec<Option<u32>>>,
    by_role: OnceCell<BTreeMap<&'s str, Vec<u32>>>,
    by_css: OnceCell<BTreeMap<&'s str, Vec<u32>>>,
    normalized: OnceCell<Vec<OnceCell<String>>>,
    folded: OnceCell<Vec<OnceCell<String>>>,
    searchable_text: OnceCell<String>,
    row_labels: OnceCell<Vec<Option<u32>>>,
}

impl<'s> SnapshotIndex<'s> {
    /// An index over `snapshot`; nothing is computed until it is needed.
    pub fn new(snapshot: &'s UiSnapshot) -> Self {
        Self {
            snapshot,
            subtree_end: OnceCell::new(),
            nearest_row: OnceCell::new(),
            nearest_table: OnceCell::new(),
            by_role: OnceCell::new(),
            by_css: OnceCell::new(),
            normalized: OnceCell::new(),
            folded: OnceCell::new(),
            searchable_text: OnceCell::new(),
            row_labels: OnceCell::new(),
        }
    }

    /// The indexed snapshot.
    pub fn snapshot(&self) -> &'s UiSnapshot {
        self.snapshot
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.snapshot.nodes.len()
    }

    /// Whether the snapshot has no node.
    pub fn is_empty(&self) -> bool {
        self.snapshot.nodes.is_empty()
    }

    /// Indexes of the nodes with this role, in document order.
    pub fn nodes_with_role(&self, role: &str) -> &[u32] {
        self.by_role
            .get_or_init(|| {
                let mut map: BTreeMap<&'s str, Vec<u32>> = BTreeMap::new();
                for (position, node) in self.snapshot.nodes.iter().enumerate() {
                    map.entry(node.role.as_str())
                        .or_default()
                        .push(to_u32(position));
                }
                map
            })
            .get(role)
            .map_or(&[], Vec::as_slice)
    }

    /// Indexes of the nodes whose `css_hint` is exactly `css`, in document order.
    pub fn nodes_with_css_hint(&self, css: &str) -> &[u32] {
        self.by_css
            .get_or_init(|| {
                let mut map: BTreeMap<&'s str, Vec<u32>> = BTreeMap::new();
                for (position, node) in self.snapshot.nodes.iter().enumerate() {
                    if let Some(hint) = &node.css_hint {
                        map.entry(hint.as_str()).or_default().push(to_u32(position));
                    }
                }
                map
            })
            .get(css)
            .map_or(&[], Vec::as_slice)
    }

    /// One past the last descendant of the node at `index`: its subtree is `index..end`.
    pub fn subtree_end(&self, index: usize) -> usize {
        self.subtree_ends()
            .get(index)
            .map_or(index, |&end| end as usize)
    }

    /// Whether `ancestor` is a proper ancestor of `index`.
    pub fn is_ancestor(&self, ancestor: usize, index: usize) -> bool {
        ancestor < index && index < self.subtree_end(ancestor)
    }

    /// The nearest proper ancestor of `index` whose role is `row`.
    pub fn nearest_row(&self, index: usize) -> Option<usize> {
        self.nearest_rows()
            .get(index)
            .copied()
            .flatten()
            .map(|row| row as usize)
    }

    /// The row a node belongs to: the node itself when it is a row, else its nearest row.
    pub fn row_of(&self, index: usize) -> Option<usize> {
        match self.node(index) {
            Some(node) if node.role == "row" => Some(index),
            Some(_) => self.nearest_row(index),
            None => None,
        }
    }

    /// The nearest proper ancestor of `index` whose role is `table`.
    pub fn nearest_table(&self, index: usize) -> Option<usize> {
        self.nearest_tables()
            .get(index)
            .copied()
            .flatten()
            .map(|table| table as usize)
    }

    /// The node's name as a person reads it ([`normalize_name`]), computed once per node.
    pub fn normalized_name(&self, index: usize) -> &str {
        let Some(node) = self.node(index) else {
            return "";
        };
        self.normalized.get_or_init(|| {
            std::iter::repeat_with(OnceCell::new)
                .take(self.len())
                .collect()
        })[index]
            .get_or_init(|| normalize_name(&node.name))
    }

    /// The node's folded name ([`fold`]), computed once per node.
    pub fn folded_name(&self, index: usize) -> &str {
        let Some(node) = self.node(index) else {
            return "";
        };
        self.folded.get_or_init(|| {
            std::iter::repeat_with(OnceCell::new)
                .take(self.len())
                .collect()
        })[index]
            .get_or_init(|| fold(&node.name))
    }

    /// The node at `index`.
    pub fn node(&self, index: usize) -> Option<&'s UiNode> {
        self.snapshot.nodes.get(index)
    }

    /// The node's parent index; a malformed link is no parent ([`UiSnapshot::parent_of`]).
    pub fn parent(&self, index: usize) -> Option<usize> {
        self.snapshot.parent_of(index)
    }

    /// The text `text_present` searches: every name, whitespace squashed and lower-cased,
    /// nodes separated by one space.
    pub(crate) fn searchable_text(&self) -> &str {
        self.searchable_text
            .get_or_init(|| squash_whitespace(&self.snapshot.text_content()).to_lowercase())
    }

    /// The label of a node inside a row, by the row rule of [`crate::label_of`].
    pub(crate) fn row_label(&self, index: usize) -> Option<usize> {
        self.row_labels
            .get_or_init(|| crate::structure::row_labels(self))
            .get(index)
            .copied()
            .flatten()
            .map(|label| label as usize)
    }

    fn subtree_ends(&self) -> &[u32] {
        self.subtree_end.get_or_init(|| {
            // Pre-order with depths: a node's subtree ends at the first later node that is not
            // deeper. One stack pass closes every open node when that node arrives.
            let nodes = &self.snapshot.nodes;
            let mut ends = vec![to_u32(nodes.len()); nodes.len()];
            let mut open: Vec<usize> = Vec::new();
            for (position, node) in nodes.iter().enumerate() {
                while let Some(&top) = open.last() {
                    if nodes[top].depth >= node.depth {
                        ends[top] = to_u32(position);
                        open.pop();
                    } else {
                        break;
                    }
                }
                open.push(position);
            }
            ends
        })
    }

    fn nearest_rows(&self) -> &[Option<u32>] {
        self.nearest_row
            .get_or_init(|| self.nearest_with_role("row"))
    }

    fn nearest_tables(&self) -> &[Option<u32>] {
        self.nearest_table
            .get_or_init(|| self.nearest_with_role("table"))
    }

    /// For every node, the nearest proper ancestor with `role`. A parent precedes its children
    /// in document order, so each entry reuses its parent's; a node whose parent link is
    /// malformed has no parent (see [`SnapshotIndex::parent`]) and so no ancestor.
    fn nearest_with_role(&self, role: &str) -> Vec<Option<u32>> {
        let nodes = &self.snapshot.nodes;
        let mut nearest: Vec<Option<u32>> = Vec::with_capacity(nodes.len());
        for position in 0..nodes.len() {
            let found = self.parent(position).and_then(|parent| {
                if nodes[parent].role == role {
                    Some(to_u32(parent))
                } else {
                    nearest[parent]
                }
            });
            nearest.push(found);
        }
        nearest
    }
}

/// Node counts fit in `u32`: a snapshot of four billion nodes is not an observation.
pub(crate) fn to_u32(value: usize) -> u32 {
    u32::try_from(value).expect("a snapshot has fewer than 2^32 nodes")
}
