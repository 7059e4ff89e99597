//! `UiSnapshot` and `UiNode`: one observation of a surface, immutable, in document order.

use serde::{Deserialize, Serialize};

/// A node's stable identity within a page state, built from its structural path,
/// e.g. `content:/document[0]/table[1]/row[3]/cell[1]/textbox[0]`.
///
/// The same page state always yields the same ids, so ids can be compared across two
/// observations and written into evidence.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(String);

impl NodeId {
    /// Wraps a structural path. Drivers build these; nothing else should invent them.
    pub fn new(path: impl Into<String>) -> Self {
        Self(path.into())
    }

    /// The path text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a node lives: the frameset frame it was rendered in (by the frame's `name`), and the
/// region of the page inferred from the nearest preceding heading.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeScope {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

/// A node's box in page (top-level viewport) CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bounds {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

impl Bounds {
    /// Whether the point lies inside the box (edges included).
    pub fn contains(&self, x: f64, y: f64) -> bool {
        x >= self.x && y >= self.y && x <= self.x + self.width && y <= self.y + self.height
    }

    /// The area, used to prefer the smallest box in hit tests.
    pub fn area(&self) -> f64 {
        self.width * self.height
    }
}

/// One accessible node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiNode {
    pub id: NodeId,
    /// Normalized role (see [`crate::normalize_role`]).
    pub role: String,
    /// Accessible name, whitespace squashed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Current value of a control (textbox text, selected option), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// States such as `focused`, `disabled`, `checked`, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<Bounds>,
    #[serde(default)]
    pub scope: NodeScope,
    /// Depth in the stitched tree; the root of the top document is 0.
    pub depth: u32,
    /// Index of the parent in [`UiSnapshot::nodes`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
    /// Indexes of the children, in document order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<u32>,
    /// A CSS selector the driver observed for the element behind this node. An unverified
    /// cache for the `hint_cached` rung, never an identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub css_hint: Option<String>,
    /// The text of each element the page says labels this node (`<label for>`, a `<label>`
    /// around it, `aria-labelledby`), whitespace squashed, in the page's order. What an anchor
    /// `labelled_by` matches; empty when the page associates no label.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

/// One observation of a surface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiSnapshot {
    /// URL of the top-level document.
    pub url: String,
    pub title: String,
    /// The worst HTTP status among the documents of the last navigation, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// Every node, in document order (pre-order; a node's descendants follow it contiguously).
    pub nodes: Vec<UiNode>,
}

impl UiSnapshot {
    /// The index of the node with this id.
    pub fn position(&self, id: &NodeId) -> Option<usize> {
        self.nodes.iter().position(|node| &node.id == id)
    }

    /// The node with this id.
    pub fn node(&self, id: &NodeId) -> Option<&UiNode> {
        self.nodes.iter().find(|node| &node.id == id)
    }

    /// The parent index of the node at `index`. A parent precedes its children in document
    /// order; a link that does not (a malformed or crafted snapshot: the node itself, a later
    /// node, one past the end) is no parent, so no walk up the tree can loop or leave the
    /// snapshot.
    pub fn parent_of(&self, index: usize) -> Option<usize> {
        let parent = self.nodes.get(index)?.parent? as usize;
        (parent < index).then_some(parent)
    }

    /// Ancestors of the node at `index`, nearest first.
    pub fn ancestors(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(self.parent_of(index), move |&i| self.parent_of(i))
    }

    /// The nearest ancestor with this role.
    pub fn nearest_ancestor_with_role(&self, index: usize, role: &str) -> Option<usize> {
        self.ancestors(index).find(|&i| self.nodes[i].role == role)
    }

    /// Indexes of every descendant of the node at `index`, in document order.
    pub fn descendants(&self, index: usize) -> std::ops::Range<usize> {
        let Some(node) = self.nodes.get(index) else {
            return 0..0;
        };
        let end = self.nodes[index + 1..]
            .iter()
            .position(|other| other.depth <= node.depth)
            .map_or(self.nodes.len(), |offset| index + 1 + offset);
        index + 1..end
    }

    /// Whether `ancestor` is a proper ancestor of `index`.
    pub fn is_descendant_of(&self, index: usize, ancestor: usize) -> bool {
        self.descendants(ancestor).contains(&index)
    }

    /// All node names joined by newlines, in document order: what `text_present` searches.
    pub fn text_content(&self) -> String {
        let mut text = String::new();
        for node in &self.nodes {
            if node.name.is_empty() {
                continue;
            }
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&node.name);
        }
        text
    }

    /// The smallest node whose bounds contain the point, preferring the deepest on ties.
    pub fn hit_test(&self, x: f64, y: f64) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for (index, node) in self.nodes.iter().enumerate() {
            let Some(bounds) = node.bounds else { continue };
            if !bounds.contains(x, y) || bounds.area() <= 0.0 {
                continue;
            }
            if best.is_none_or(|(_, area)| bounds.area() <= area) {
                best = Some((index, bounds.area()));
            }
        }
        best.map(|(index, _)| index)
    }

    /// Canonical JSON bytes: the same page state gives the same bytes.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a snapshot of strings, numbers and vectors serializes")
    }

    /// A blake3 digest of the canonical bytes, as `blake3:<hex>`.
    pub fn digest(&self) -> String {
        format!("blake3:{}", blake3::hash(&self.to_json_bytes()).to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, role: &str, name: &str, depth: u32, parent: Option<u32>) -> UiNode {
        UiNode {
            id: NodeId::new(id),
            role: role.into(),
            name: name.into(),
            value: None,
            states: vec![],
            bounds: None,
            scope: NodeScope::default(),
            depth,
            parent,
            children: vec![],
            css_hint: None,
            labels: vec![],
        }
    }

    fn table() -> UiSnapshot {
        let mut nodes = vec![
            node("main:/document[0]", "document", "", 0, None),
            node("main:/document[0]/row[0]", "row", "", 1, Some(0)),
            node(
                "main:/document[0]/row[0]/cell[0]",
                "cell",
                "Savings Balance",
                2,
                Some(1),
            ),
            node(
                "main:/document[0]/row[0]/cell[1]",
                "cell",
                "$4,210.55",
                2,
                Some(1),
            ),
            node("main:/document[0]/row[1]", "row", "", 1, Some(0)),
        ];
        nodes[0].children = vec![1, 4];
        nodes[1].children = vec![2, 3];
        UiSnapshot {
            url: "http://127.0.0.1/".into(),
            title: "t".into(),
            http_status: Some(200),
            nodes,
        }
    }

    /// A crafted snapshot (a page's evidence read back from disk, say) whose parent links point
    /// at the node itself, forward, or past the end neither loops nor panics a walk up the tree.
    #[test]
    fn a_crafted_parent_link_is_no_parent() {
        let mut snapshot = table();
        assert_eq!(snapshot.ancestors(3).collect::<Vec<_>>(), [1, 0]);
        for crafted in [3, 4, 99] {
            snapshot.nodes[3].parent = Some(crafted);
            assert_eq!(snapshot.parent_of(3), None, "parent {crafted}");
            assert_eq!(snapshot.nearest_ancestor_with_role(3, "row"), None);
        }
        // A cycle through an earlier node is cut where a link points forward.
        snapshot.nodes[1].parent = Some(3);
        snapshot.nodes[3].parent = Some(1);
        assert_eq!(snapshot.ancestors(3).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn tree_navigation_follows_document_order() {
        let snapshot = table();
        assert_eq!(snapshot.descendants(1), 2..4);
        assert_eq!(snapshot.descendants(0), 1..5);
        assert_eq!(snapshot.descendants(4), 5..5);
        assert_eq!(snapshot.ancestors(3).collect::<Vec<_>>(), vec![1, 0]);
        assert_eq!(snapshot.nearest_ancestor_with_role(3, "row"), Some(1));
        assert!(snapshot.is_descendant_of(2, 1));
        assert!(!snapshot.is_descendant_of(4, 1));
        assert_eq!(snapshot.text_content(), "Savings Balance\n$4,210.55");
    }

    #[test]
    fn serialization_is_stable_and_round_trips() {
        let snapshot = table();
        let bytes = snapshot.to_json_bytes();
        let back: UiSnapshot = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back, snapshot);
        assert_eq!(back.to_json_bytes(), bytes);
        assert_eq!(back.digest(), snapshot.digest());
        let mut changed = snapshot.clone();
        changed.nodes[3].name = "$4,210.56".into();
        assert_ne!(changed.digest(), snapshot.digest());
    }

    #[test]
    fn hit_test_prefers_the_smallest_box() {
        let mut snapshot = table();
        snapshot.nodes[1].bounds = Some(Bounds {
            x: 0.0,
            y: 0.0,
            width: 200.0,
            height: 20.0,
        });
        snapshot.nodes[3].bounds = Some(Bounds {
            x: 100.0,
            y: 0.0,
            width: 100.0,
            height: 20.0,
        });
        assert_eq!(snapshot.hit_test(150.0, 10.0), Some(3));
        assert_eq!(snapshot.hit_test(50.0, 10.0), Some(1));
        assert_eq!(snapshot.hit_test(500.0, 10.0), None);
    }
}
