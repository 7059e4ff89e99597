//! Stitches every frame's accessibility tree into one [`UiSnapshot`] node list, in document
//! order, with structural ids, normalized roles, scopes, values, states, bounds and CSS hints.
//!
//! Pure: it reads parsed CDP answers and returns nodes plus the backend handle of each node.

use std::collections::{BTreeSet, HashMap};

use cua_snapshot::{
    Bounds, NodeId, NodeScope, UiNode, is_noise_role, normalize_role, squash_whitespace,
};
use serde_json::Value;

use crate::dom::{DomIndex, css_hint};

/// Roles whose current value is reported (as an empty string when there is none).
const VALUE_ROLES: &[&str] = &[
    "textbox",
    "combobox",
    "spinbutton",
    "slider",
    "date",
    "time",
    "datetime",
];

/// One node of `Accessibility.getFullAXTree`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AxNode {
    pub(crate) id: String,
    pub(crate) parent: Option<String>,
    pub(crate) children: Vec<String>,
    pub(crate) ignored: bool,
    pub(crate) role: String,
    pub(crate) name: String,
    pub(crate) value: Option<String>,
    pub(crate) backend: Option<i64>,
    pub(crate) properties: Vec<(String, Value)>,
    /// The text of each element the DOM says labels this one (Chromium's `labelledby`
    /// relation: `<label for>`, a wrapping `<label>`, `aria-labelledby`).
    pub(crate) labels: Vec<String>,
}

impl AxNode {
    /// Parses the `nodes` of a `getFullAXTree` answer.
    pub(crate) fn parse_all(answer: &Value) -> Vec<Self> {
        let Some(nodes) = answer["nodes"].as_array() else {
            return Vec::new();
        };
        nodes.iter().filter_map(Self::parse).collect()
    }

    fn parse(node: &Value) -> Option<Self> {
        let text = |value: &Value| match value {
            Value::String(text) => Some(text.clone()),
            Value::Number(number) => Some(number.to_string()),
            Value::Bool(flag) => Some(flag.to_string()),
            _ => None,
        };
        Some(Self {
            id: node["nodeId"].as_str()?.to_string(),
            parent: node["parentId"].as_str().map(str::to_string),
            children: node["childIds"]
                .as_array()
                .map(|ids| {
                    ids.iter()
                        .filter_map(|id| id.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            ignored: node["ignored"].as_bool().unwrap_or(false),
            role: node["role"]["value"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            name: text(&node["name"]["value"]).unwrap_or_default(),
            value: text(&node["value"]["value"]),
            backend: node["backendDOMNodeId"].as_i64(),
            properties: node["properties"]
                .as_array()
                .map(|properties| {
                    properties
                        .iter()
                        .filter_map(|property| {
                            Some((
                                property["name"].as_str()?.to_string(),
                                property["value"]["value"].clone(),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default(),
            labels: labels(node),
        })
    }

    fn property(&self, name: &str) -> Option<&Value> {
        self.properties
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value)
    }
}

/// The labels the page gives an AX node, from the sources of its accessible name: each
/// `<label>` (`for` it, or around it) is one label; the elements `aria-labelledby` names make
/// one label together, in their order, as a screen reader announces it.
fn labels(node: &Value) -> Vec<String> {
    let texts = |related: &Value| -> Vec<String> {
        related["relatedNodes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|related| related["text"].as_str().map(squash_whitespace))
            .filter(|text| !text.is_empty())
            .collect()
    };
    let mut labels = Vec::new();
    for source in node["name"]["sources"].as_array().into_iter().flatten() {
        if source["type"] != "relatedElement" {
            continue;
        }
        if source["attribute"] == "aria-labelledby" {
            let joined = texts(&source["attributeValue"]).join(" ");
            if !joined.is_empty() {
                labels.push(joined);
            }
        } else if matches!(
            source["nativeSource"].as_str(),
            Some("labelfor" | "labelwrapped")
        ) {
            labels.extend(texts(&source["nativeSourceValue"]));
        }
    }
    labels
}

/// One frame's input to the stitcher, in frame-tree pre-order (the main frame first).
#[derive(Debug, Clone)]
pub(crate) struct FrameInput {
    pub(crate) frame_id: String,
    pub(crate) loader_id: String,
    /// Index of the parent frame in the input list.
    pub(crate) parent: Option<usize>,
    /// The frame's `name` attribute (empty when unnamed).
    pub(crate) name: String,
    pub(crate) ax: Vec<AxNode>,
    /// Backend id of the element hosting this frame, in the parent frame's document.
    pub(crate) owner_backend: Option<i64>,
    /// The frame viewport's top-left in top-level viewport CSS px, when it is rendered.
    pub(crate) origin: Option<(f64, f64)>,
}

/// What the driver needs to act on a node later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeHandle {
    pub(crate) backend: i64,
    pub(crate) frame_id: String,
    /// The loader of the document the node was observed in: a different loader now means the
    /// frame shows another document and the node is gone, even if its id still resolves.
    pub(crate) loader_id: String,
}

/// The stitched nodes and the handle of each node that has a DOM node behind it.
#[derive(Debug, Default)]
pub(crate) struct Stitched {
    pub(crate) nodes: Vec<UiNode>,
    pub(crate) handles: Vec<(NodeId, NodeHandle)>,
}

/// The id prefix of each frame: `main` for the top frame; a child frame's `name` when it is
/// non-empty and unique in this page; otherwise `frame{n}` by pre-order position. The second
/// value is the node scope's `frame`: `None` for the top frame.
pub(crate) fn frame_keys(frames: &[FrameInput]) -> Vec<(String, Option<String>)> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for frame in frames.iter().skip(1) {
        *counts.entry(frame.name.as_str()).or_default() += 1;
    }
    frames
        .iter()
        .enumerate()
        .map(|(position, frame)| {
            if position == 0 {
                return ("main".to_string(), None);
            }
            let unique = counts.get(frame.name.as_str()) == Some(&1);
            let usable = !frame.name.is_empty() && frame.name != "main" && unique;
            let key = if usable {
                frame.name.clone()
            } else {
                format!("frame{position}")
            };
            (key.clone(), Some(key))
        })
        .collect()
}

enum Work {
    Node {
        frame: usize,
        ax: usize,
        parent: Option<u32>,
    },
    Frame {
        frame: usize,
        parent: u32,
    },
}

/// Stitches the frames. Child frames go under the node of the element that hosts them; a
/// frame whose host is not in its parent's tree (hidden) is left out.
pub(crate) fn stitch(frames: &[FrameInput], dom: &DomIndex) -> Stitched {
    let keys = frame_keys(frames);
    let by_id: Vec<HashMap<&str, usize>> = frames
        .iter()
        .map(|frame| {
            frame
                .ax
                .iter()
                .enumerate()
                .map(|(i, n)| (n.id.as_str(), i))
                .collect()
        })
        .collect();
    let mut hosted: HashMap<(usize, i64), usize> = HashMap::new();
    for (position, frame) in frames.iter().enumerate() {
        if let (Some(parent), Some(owner)) = (frame.parent, frame.owner_backend) {
            hosted.insert((parent, owner), position);
        }
    }
    let mut out = Stitched::default();
    let mut out_frame: Vec<usize> = Vec::new();
    let mut counters: Vec<HashMap<String, u32>> = Vec::new();
    let mut root_counters: Vec<HashMap<String, u32>> = vec![HashMap::new(); frames.len()];
    let mut regions: Vec<Option<String>> = vec![None; frames.len()];
    // Per frame, the landmarks the walk is inside: each one's depth and the region in effect
    // before it, restored when the walk leaves its subtree.
    let mut landmarks: Vec<Vec<(u32, Option<String>)>> = vec![Vec::new(); frames.len()];
    let mut visited: Vec<Vec<bool>> = frames.iter().map(|f| vec![false; f.ax.len()]).collect();
    let mut work = Vec::new();
    if let Some(root) = frames.first().and_then(root_of) {
        work.push(Work::Node {
            frame: 0,
            ax: root,
            parent: None,
        });
    }
    while let Some(item) = work.pop() {
        let (frame_index, ax_index, parent) = match item {
            Work::Node { frame, ax, parent } => (frame, ax, parent),
            Work::Frame { frame, parent } => {
                if let Some(root) = root_of(&frames[frame]) {
                    work.push(Work::Node {
                        frame,
                        ax: root,
                        parent: Some(parent),
                    });
                }
                continue;
            }
        };
        if std::mem::replace(&mut visited[frame_index][ax_index], true) {
            continue;
        }
        let frame = &frames[frame_index];
        let node = &frame.ax[ax_index];
        let element = node.backend.and_then(|backend| dom.node(backend));
        let role = normalize_role(&node.role);
        let name = squash_whitespace(&node.name);
        let hosted_frame = node
            .backend
            .and_then(|b| hosted.get(&(frame_index, b)).copied());
        let children: Vec<usize> = node
            .children
            .iter()
            .filter_map(|id| by_id[frame_index].get(id.as_str()).copied())
            .collect();
        let skipped = node.ignored
            || is_noise_role(&node.role)
            || is_noise_role(&role)
            || (role == "text" && name.is_empty());
        if skipped {
            for &child in children.iter().rev() {
                work.push(Work::Node {
                    frame: frame_index,
                    ax: child,
                    parent,
                });
            }
            continue;
        }
        // A native text field's accessibility children are its internal editor: the value
        // already says what they say.
        let native_field = VALUE_ROLES.contains(&role.as_str())
            && element.is_some_and(|e| e.tag == "input" || e.tag == "textarea");
        let frame_root = parent.is_none_or(|p| out_frame[p as usize] != frame_index);
        let counter = match parent {
            Some(p) if !frame_root => &mut counters[p as usize],
            _ => &mut root_counters[frame_index],
        };
        let ordinal = counter.entry(role.clone()).or_default();
        let segment = format!("{role}[{ordinal}]");
        *ordinal += 1;
        let path = match parent {
            Some(p) if !frame_root => format!("{}/{segment}", out.nodes[p as usize].id),
            _ => format!("{}:/{segment}", keys[frame_index].0),
        };
        let depth = parent.map_or(0, |p| out.nodes[p as usize].depth + 1);
        // Leaving a landmark's subtree restores the region around it, so a heading inside
        // `main` never names what follows in the footer.
        while landmarks[frame_index]
            .last()
            .is_some_and(|&(landmark_depth, _)| landmark_depth >= depth)
        {
            if let Some((_, saved)) = landmarks[frame_index].pop() {
                regions[frame_index] = saved;
            }
        }
        if let Some(region) = landmark_region(&role, &name) {
            landmarks[frame_index].push((depth, regions[frame_index].replace(region)));
        } else if role == "heading" && !name.is_empty() {
            regions[frame_index] = Some(slug(&name));
        }
        let bounds = element.and_then(|e| {
            let layout = e.layout?;
            let (origin_x, origin_y) = frame.origin?;
            let document = dom.documents.get(e.document)?;
            Some(Bounds {
                x: round(layout.x - document.scroll_x + origin_x),
                y: round(layout.y - document.scroll_y + origin_y),
                width: round(layout.width),
                height: round(layout.height),
            })
        });
        let index = u32::try_from(out.nodes.len()).expect("fewer than 4 billion nodes");
        let id = NodeId::new(path);
        if let Some(backend) = node.backend {
            out.handles.push((
                id.clone(),
                NodeHandle {
                    backend,
                    frame_id: frame.frame_id.clone(),
                    loader_id: frame.loader_id.clone(),
                },
            ));
        }
        out.nodes.push(UiNode {
            id,
            value: VALUE_ROLES
                .contains(&role.as_str())
                .then(|| node.value.clone().unwrap_or_default()),
            states: states(node),
            bounds,
            scope: NodeScope {
                frame: keys[frame_index].1.clone(),
                region: regions[frame_index].clone(),
            },
            depth,
            parent,
            children: Vec::new(),
            css_hint: element.and_then(css_hint),
            labels: node.labels.clone(),
            role,
            name,
        });
        if let Some(p) = parent {
            out.nodes[p as usize].children.push(index);
        }
        out_frame.push(frame_index);
        counters.push(HashMap::new());
        if let Some(child_frame) = hosted_frame {
            work.push(Work::Frame {
                frame: child_frame,
                parent: index,
            });
        }
        if !native_field {
            for &child in children.iter().rev() {
                work.push(Work::Node {
                    frame: frame_index,
                    ax: child,
                    parent: Some(index),
                });
            }
        }
    }
    out
}

/// The tree's root: the first node without a parent.
fn root_of(frame: &FrameInput) -> Option<usize> {
    frame.ax.iter().position(|node| node.parent.is_none())
}

/// The states cua reports, sorted.
fn states(node: &AxNode) -> Vec<String> {
    let mut states = BTreeSet::new();
    for flag in [
        "focused", "disabled", "required", "readonly", "selected", "modal", "busy",
    ] {
        if node.property(flag) == Some(&Value::Bool(true)) {
            states.insert(flag.to_string());
        }
    }
    if node.property("multiselectable") == Some(&Value::Bool(true)) {
        states.insert("multiselectable".to_string());
    }
    if node.property("expanded") == Some(&Value::Bool(true)) {
        states.insert("expanded".to_string());
    }
    match node.property("checked").and_then(Value::as_str) {
        Some("true") => {
            states.insert("checked".to_string());
        }
        Some("mixed") => {
            states.insert("mixed".to_string());
        }
        _ => {}
    }
    if matches!(
        node.property("pressed").and_then(Value::as_str),
        Some("true" | "mixed")
    ) {
        states.insert("pressed".to_string());
    }
    if node
        .property("invalid")
        .and_then(Value::as_str)
        .is_some_and(|v| v != "false")
    {
        states.insert("invalid".to_string());
    }
    states.into_iter().collect()
}

/// `Member Search` → `member_search`.
/// The region a landmark opens: a named landmark is named by its label (`Site Tools`), an
/// unnamed one by its role (`main`, `navigation`, `banner`, `contentinfo`, `complementary`); a
/// `region` without a name is no landmark, as in ARIA.
fn landmark_region(role: &str, name: &str) -> Option<String> {
    let landmark = matches!(
        role,
        "main" | "navigation" | "banner" | "contentinfo" | "complementary" | "region" | "search"
    );
    if !landmark {
        return None;
    }
    if !name.is_empty() {
        return Some(slug(name));
    }
    (role != "region").then(|| role.to_owned())
}

pub(crate) fn slug(name: &str) -> String {
    let mut slug = String::with_capacity(name.len());
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('_') && !slug.is_empty() {
            slug.push('_');
        }
    }
    slug.trim_end_matches('_').to_string()
}

fn round(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `(id, parent, role, name, backend, children, extra)` → an AX node.
    fn ax(
        id: &str,
        parent: Option<&str>,
        role: &str,
        name: &str,
        backend: i64,
        children: &[&str],
    ) -> AxNode {
        AxNode {
            id: id.into(),
            parent: parent.map(str::to_string),
            children: children.iter().map(|c| c.to_string()).collect(),
            ignored: role == "none",
            role: role.into(),
            name: name.into(),
            value: None,
            backend: Some(backend),
            properties: vec![],
            labels: vec![],
        }
    }

    fn frame(
        id: &str,
        parent: Option<usize>,
        name: &str,
        owner: Option<i64>,
        ax: Vec<AxNode>,
    ) -> FrameInput {
        FrameInput {
            frame_id: id.into(),
            loader_id: format!("L-{id}"),
            parent,
            name: name.into(),
            ax,
            owner_backend: owner,
            origin: Some((0.0, 0.0)),
        }
    }

    fn render(stitched: &Stitched) -> String {
        stitched
            .nodes
            .iter()
            .map(|n| {
                format!(
                    "{}{} {:?} {:?} {:?}/{:?}{}",
                    "  ".repeat(n.depth as usize),
                    n.id,
                    n.name,
                    n.value,
                    n.scope.frame,
                    n.scope.region,
                    if n.states.is_empty() {
                        String::new()
                    } else {
                        format!(" {:?}", n.states)
                    }
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn frames_are_stitched_under_their_hosts_in_document_order() {
        let main = vec![
            ax("1", None, "RootWebArea", "Shell", 1, &["2"]),
            ax("2", Some("1"), "none", "", 2, &["3", "4"]),
            ax("3", Some("2"), "Iframe", "", 3, &[]),
            ax("4", Some("2"), "Iframe", "", 4, &[]),
        ];
        let nav = vec![
            ax("10", None, "RootWebArea", "", 10, &["11"]),
            ax("11", Some("10"), "generic", "", 11, &["12", "13"]),
            ax("12", Some("11"), "link", "Member Search", 12, &["14"]),
            ax("13", Some("11"), "LineBreak", "\n", 13, &[]),
            ax("14", Some("12"), "StaticText", "Member Search", 14, &["15"]),
            ax("15", Some("14"), "InlineTextBox", "Member Search", 15, &[]),
        ];
        let mut textbox = ax("25", Some("24"), "textbox", "Member Number", 25, &["26"]);
        textbox.value = Some("12".into());
        textbox.properties = vec![
            ("focused".into(), json!(true)),
            ("invalid".into(), json!("false")),
        ];
        let content = vec![
            ax(
                "20",
                None,
                "RootWebArea",
                "Content",
                20,
                &["21", "22", "23"],
            ),
            ax("21", Some("20"), "heading", "Member  Search", 21, &[]),
            ax("22", Some("20"), "LayoutTable", "", 22, &["24"]),
            ax("23", Some("20"), "heading", "Training members", 23, &["30"]),
            ax("24", Some("22"), "LayoutTableRow", "", 24, &["27", "28"]),
            ax(
                "27",
                Some("24"),
                "LayoutTableCell",
                "Member Number",
                27,
                &[],
            ),
            ax("28", Some("24"), "LayoutTableCell", "12", 28, &["25"]),
            textbox,
            ax("26", Some("25"), "generic", "", 26, &["29"]),
            ax("29", Some("26"), "StaticText", "12", 29, &[]),
            ax("30", Some("23"), "StaticText", " ", 30, &[]),
        ];
        let frames = vec![
            frame("F0", None, "", None, main),
            frame("F1", Some(0), "nav", Some(3), nav),
            frame("F2", Some(0), "content", Some(4), content),
        ];
        let dom = DomIndex::parse(&json!({
            "strings": ["INPUT", "memno"],
            "documents": [{"frameId": 9, "nodes": {
                "backendNodeId": [25], "nodeType": [1], "nodeName": [0], "attributes": [[1, 1]]
            }}]
        }));
        let stitched = stitch(&frames, &dom);
        insta::assert_snapshot!(render(&stitched), @r#"
        main:/document[0] "Shell" None None/None
          main:/document[0]/iframe[0] "" None None/None
            nav:/document[0] "" None Some("nav")/None
              nav:/document[0]/link[0] "Member Search" None Some("nav")/None
                nav:/document[0]/link[0]/text[0] "Member Search" None Some("nav")/None
          main:/document[0]/iframe[1] "" None None/None
            content:/document[0] "Content" None Some("content")/None
              content:/document[0]/heading[0] "Member Search" None Some("content")/Some("member_search")
              content:/document[0]/table[0] "" None Some("content")/Some("member_search")
                content:/document[0]/table[0]/row[0] "" None Some("content")/Some("member_search")
                  content:/document[0]/table[0]/row[0]/cell[0] "Member Number" None Some("content")/Some("member_search")
                  content:/document[0]/table[0]/row[0]/cell[1] "12" None Some("content")/Some("member_search")
                    content:/document[0]/table[0]/row[0]/cell[1]/textbox[0] "Member Number" Some("12") Some("content")/Some("member_search") ["focused"]
              content:/document[0]/heading[1] "Training members" None Some("content")/Some("training_members")
        "#);
        let snapshot_nodes = &stitched.nodes;
        for (index, node) in snapshot_nodes.iter().enumerate() {
            for &child in &node.children {
                assert_eq!(snapshot_nodes[child as usize].parent, Some(index as u32));
            }
        }
        assert_eq!(stitched.handles.len(), stitched.nodes.len());
    }

    /// Landmarks open regions and close them: a heading inside `main` names the region only
    /// until `main` ends, and the footer after it is `contentinfo`, not the last heading.
    #[test]
    fn regions_follow_landmarks_before_headings() {
        let page = vec![
            ax("1", None, "RootWebArea", "Wiki", 1, &["2", "4", "8"]),
            ax("2", Some("1"), "banner", "", 2, &["3"]),
            ax("3", Some("2"), "heading", "Site Tools", 3, &[]),
            ax("4", Some("1"), "main", "", 4, &["5", "6", "7"]),
            ax("5", Some("4"), "heading", "Start Page", 5, &[]),
            ax("6", Some("4"), "paragraph", "", 6, &["9"]),
            ax("7", Some("4"), "navigation", "Page Tools", 7, &["10"]),
            ax("8", Some("1"), "contentinfo", "", 8, &["11"]),
            ax("9", Some("6"), "StaticText", "Welcome", 9, &[]),
            ax("10", Some("7"), "link", "Edit", 10, &[]),
            ax("11", Some("8"), "link", "Edit", 11, &[]),
        ];
        let frames = vec![frame("F0", None, "", None, page)];
        let dom = DomIndex::parse(&json!({"strings": [], "documents": []}));
        insta::assert_snapshot!(render(&stitch(&frames, &dom)), @r#"
        main:/document[0] "Wiki" None None/None
          main:/document[0]/banner[0] "" None None/Some("banner")
            main:/document[0]/banner[0]/heading[0] "Site Tools" None None/Some("site_tools")
          main:/document[0]/main[0] "" None None/Some("main")
            main:/document[0]/main[0]/heading[0] "Start Page" None None/Some("start_page")
            main:/document[0]/main[0]/paragraph[0] "" None None/Some("start_page")
              main:/document[0]/main[0]/paragraph[0]/text[0] "Welcome" None None/Some("start_page")
            main:/document[0]/main[0]/navigation[0] "Page Tools" None None/Some("page_tools")
              main:/document[0]/main[0]/navigation[0]/link[0] "Edit" None None/Some("page_tools")
          main:/document[0]/contentinfo[0] "" None None/Some("contentinfo")
            main:/document[0]/contentinfo[0]/link[0] "Edit" None None/Some("contentinfo")
        "#);
    }

    #[test]
    fn frame_keys_fall_back_for_unnamed_and_duplicate_names() {
        let frames = vec![
            frame("A", None, "", None, vec![]),
            frame("B", Some(0), "nav", None, vec![]),
            frame("C", Some(0), "", None, vec![]),
            frame("D", Some(0), "dup", None, vec![]),
            frame("E", Some(0), "dup", None, vec![]),
            frame("F", Some(0), "main", None, vec![]),
        ];
        let keys: Vec<String> = frame_keys(&frames)
            .into_iter()
            .map(|(key, _)| key)
            .collect();
        assert_eq!(
            keys,
            ["main", "nav", "frame2", "frame3", "frame4", "frame5"]
        );
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("Member Search"), "member_search");
        assert_eq!(slug("  Open Sub-Account! "), "open_sub_account");
        assert_eq!(slug("Résumé 2"), "résumé_2");
    }
}
