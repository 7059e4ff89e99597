//! Reads one `DOMSnapshot.captureSnapshot` answer: for every backend node across every frame,
//! its element name, attributes and layout box, in one CDP call rather than one per node.

use std::collections::HashMap;

use cua_snapshot::Bounds;
use serde_json::Value;

/// One DOM node the accessibility tree may point at.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DomNode {
    /// Lower-case element name (`input`, `td`); `#text` and friends for other node types.
    pub(crate) tag: String,
    /// 1 for elements, 3 for text, 9 for documents.
    pub(crate) node_type: i64,
    pub(crate) attributes: Vec<(String, String)>,
    /// The layout box in its own document's coordinates (unscrolled), if it has one.
    pub(crate) layout: Option<Bounds>,
    /// Index of the document this node belongs to.
    pub(crate) document: usize,
}

impl DomNode {
    /// The value of an attribute, if present.
    pub(crate) fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// One document (one frame).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DomDocument {
    pub(crate) frame_id: String,
    pub(crate) title: String,
    pub(crate) scroll_x: f64,
    pub(crate) scroll_y: f64,
    /// Backend id of the `<frame>`/`<iframe>` element hosting this document, if any.
    pub(crate) owner_backend: Option<i64>,
}

/// The parsed snapshot, indexed by backend node id.
#[derive(Debug, Default)]
pub(crate) struct DomIndex {
    pub(crate) documents: Vec<DomDocument>,
    nodes: HashMap<i64, DomNode>,
    /// Some node sits in a closed shadow root: no page-side watcher can see changes there.
    pub(crate) closed_shadow: bool,
}

impl DomIndex {
    /// Parses the CDP answer. Missing or malformed parts yield fewer facts, never an error:
    /// bounds and hints are conveniences, the accessibility tree is the source of truth.
    pub(crate) fn parse(answer: &Value) -> Self {
        let strings: Vec<&str> = answer["strings"]
            .as_array()
            .map(|all| all.iter().map(|s| s.as_str().unwrap_or_default()).collect())
            .unwrap_or_default();
        let string = |index: &Value| -> String {
            index
                .as_i64()
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| strings.get(i))
                .map(|s| (*s).to_string())
                .unwrap_or_default()
        };
        let mut index = Self::default();
        let mut owners: Vec<(usize, i64)> = Vec::new();
        let empty = Vec::new();
        for (document_index, document) in answer["documents"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .enumerate()
        {
            index.documents.push(DomDocument {
                frame_id: string(&document["frameId"]),
                title: string(&document["title"]),
                scroll_x: document["scrollOffsetX"].as_f64().unwrap_or(0.0),
                scroll_y: document["scrollOffsetY"].as_f64().unwrap_or(0.0),
                owner_backend: None,
            });
            let nodes = &document["nodes"];
            let backends = nodes["backendNodeId"].as_array().unwrap_or(&empty);
            let mut layout_of: HashMap<usize, Bounds> = HashMap::new();
            let layout = &document["layout"];
            let layout_nodes = layout["nodeIndex"].as_array().unwrap_or(&empty);
            let layout_bounds = layout["bounds"].as_array().unwrap_or(&empty);
            for (node, rect) in layout_nodes.iter().zip(layout_bounds) {
                let (Some(node), Some(rect)) = (node.as_u64(), rect.as_array()) else {
                    continue;
                };
                let number = |i: usize| rect.get(i).and_then(Value::as_f64).unwrap_or(0.0);
                layout_of.entry(node as usize).or_insert(Bounds {
                    x: number(0),
                    y: number(1),
                    width: number(2),
                    height: number(3),
                });
            }
            let content_documents = rare_integers(&nodes["contentDocumentIndex"]);
            let empty_values = Vec::new();
            index.closed_shadow |= nodes["shadowRootType"]["value"]
                .as_array()
                .unwrap_or(&empty_values)
                .iter()
                .any(|value| string(value) == "closed");
            for (position, backend) in backends.iter().enumerate() {
                let Some(backend) = backend.as_i64() else {
                    continue;
                };
                let node_type = nodes["nodeType"][position].as_i64().unwrap_or(0);
                let mut tag = string(&nodes["nodeName"][position]);
                if node_type == 1 {
                    tag.make_ascii_lowercase();
                }
                let attributes = nodes["attributes"][position]
                    .as_array()
                    .map(|pairs| {
                        pairs
                            .chunks(2)
                            .map(|pair| {
                                (
                                    string(&pair[0]),
                                    pair.get(1).map(&string).unwrap_or_default(),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                if let Some(&child) = content_documents.get(&position) {
                    owners.push((child, backend));
                }
                index.nodes.insert(
                    backend,
                    DomNode {
                        tag,
                        node_type,
                        attributes,
                        layout: layout_of.get(&position).copied(),
                        document: document_index,
                    },
                );
            }
        }
        for (child, owner) in owners {
            if let Some(document) = index.documents.get_mut(child) {
                document.owner_backend = Some(owner);
            }
        }
        index
    }

    /// The node with this backend id.
    pub(crate) fn node(&self, backend: i64) -> Option<&DomNode> {
        self.nodes.get(&backend)
    }

    /// The document rendered in this frame.
    pub(crate) fn document_of_frame(&self, frame_id: &str) -> Option<&DomDocument> {
        self.documents
            .iter()
            .find(|document| document.frame_id == frame_id)
    }
}

/// A CDP `RareIntegerData` as a map from node position to value.
fn rare_integers(data: &Value) -> HashMap<usize, usize> {
    let empty = Vec::new();
    let indexes = data["index"].as_array().unwrap_or(&empty);
    let values = data["value"].as_array().unwrap_or(&empty);
    indexes
        .iter()
        .zip(values)
        .filter_map(|(index, value)| Some((index.as_u64()? as usize, value.as_u64()? as usize)))
        .collect()
}

/// A CSS selector for the element, as an unverified hint: `#id` when the id is a plain
/// identifier, else `tag[name="…"]` for named form controls and frames, else `tag.class…`.
pub(crate) fn css_hint(node: &DomNode) -> Option<String> {
    if node.node_type != 1 {
        return None;
    }
    if let Some(id) = node.attribute("id").filter(|id| is_identifier(id)) {
        return Some(format!("#{id}"));
    }
    let named = matches!(
        node.tag.as_str(),
        "input" | "select" | "textarea" | "button" | "form" | "frame" | "iframe" | "a" | "map"
    );
    if let Some(name) = node
        .attribute("name")
        .filter(|name| named && !name.is_empty())
    {
        let escaped = name.replace('\\', "\\\\").replace('"', "\\\"");
        return Some(format!("{}[name=\"{escaped}\"]", node.tag));
    }
    let classes: Vec<&str> = node
        .attribute("class")
        .map(|class| {
            class
                .split_whitespace()
                .filter(|c| is_identifier(c))
                .collect()
        })
        .unwrap_or_default();
    if !classes.is_empty() {
        return Some(format!("{}.{}", node.tag, classes.join(".")));
    }
    None
}

fn is_identifier(text: &str) -> bool {
    let body = text.strip_prefix('-').unwrap_or(text);
    body.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn element(tag: &str, attributes: &[(&str, &str)]) -> DomNode {
        DomNode {
            tag: tag.into(),
            node_type: 1,
            attributes: attributes
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            layout: None,
            document: 0,
        }
    }

    #[test]
    fn hints_prefer_id_then_name_then_class() {
        let check = |node: DomNode, expect: Option<&str>| {
            assert_eq!(css_hint(&node).as_deref(), expect, "{node:?}");
        };
        check(
            element("input", &[("id", "memno"), ("name", "x")]),
            Some("#memno"),
        );
        check(
            element("input", &[("name", "memno"), ("class", "frmfld")]),
            Some("input[name=\"memno\"]"),
        );
        check(element("input", &[("class", "btn1")]), Some("input.btn1"));
        check(element("td", &[("class", "a  b 1bad")]), Some("td.a.b"));
        check(element("td", &[("name", "ignored-on-cells")]), None);
        check(element("div", &[("id", "1starts-with-digit")]), None);
        check(
            element("input", &[("name", "say \"hi\"")]),
            Some("input[name=\"say \\\"hi\\\"\"]"),
        );
        let mut text = element("#text", &[]);
        text.node_type = 3;
        check(text, None);
    }

    #[test]
    fn parses_documents_layout_and_owners() {
        let answer = json!({
            "strings": ["F1", "Shell", "HTML", "IFRAME", "#text", "id", "x", "F2", "", "open"],
            "documents": [
                {
                    "frameId": 0, "title": 1, "scrollOffsetX": 0, "scrollOffsetY": 5,
                    "nodes": {
                        "backendNodeId": [10, 11, 12],
                        "nodeType": [9, 1, 1],
                        "nodeName": [8, 2, 3],
                        "attributes": [[], [], [5, 6]],
                        "contentDocumentIndex": {"index": [2], "value": [1]},
                        "shadowRootType": {"index": [1], "value": [9]}
                    },
                    "layout": {"nodeIndex": [1, 2], "bounds": [[0, 0, 100, 50], [10, 20, 30, 40]]}
                },
                {
                    "frameId": 7, "title": -1,
                    "nodes": {"backendNodeId": [20, 21], "nodeType": [9, 3], "nodeName": [8, 4]},
                    "layout": {"nodeIndex": [1], "bounds": [[1, 2, 3, 4]]}
                }
            ]
        });
        let index = DomIndex::parse(&answer);
        assert!(!index.closed_shadow, "an open shadow root is watched");
        assert_eq!(index.documents.len(), 2);
        assert_eq!(index.documents[0].title, "Shell");
        assert_eq!(index.documents[0].scroll_y, 5.0);
        assert_eq!(index.documents[1].frame_id, "F2");
        assert_eq!(index.documents[1].owner_backend, Some(12));
        let iframe = index.node(12).unwrap();
        assert_eq!(iframe.tag, "iframe");
        assert_eq!(iframe.attribute("id"), Some("x"));
        assert_eq!(
            iframe.layout,
            Some(Bounds {
                x: 10.0,
                y: 20.0,
                width: 30.0,
                height: 40.0
            })
        );
        assert_eq!(index.node(21).unwrap().document, 1);
        assert!(index.node(10).unwrap().layout.is_none());
        assert_eq!(
            index.document_of_frame("F2").unwrap().owner_backend,
            Some(12)
        );
    }
}
