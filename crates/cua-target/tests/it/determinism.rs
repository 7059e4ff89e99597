//! Resolution depends on nothing but the snapshot and the descriptor: not on how often it ran,
//! what ran before it on the same index, or a serde round trip of the snapshot.

use cua_artifact::{
    Anchor, AnchorRelation, Hints, MatchMode, NameMatch, NodeScope, TargetDescriptor,
};
use cua_snapshot::{NodeId, UiNode, UiSnapshot};
use cua_target::{
    BoundValues, ResolverConfig, SnapshotIndex, label_of, resolve, resolve_with, synthesize,
};
use proptest::prelude::*;

const ROLES: [&str; 10] = [
    "document", "table", "row", "cell", "text", "textbox", "button", "link", "heading", "group",
];
const NAMES: [&str; 7] = [
    "",
    "Member Number",
    "Savings Balance",
    "$4,210.55",
    "Active",
    "Search",
    "12345",
];
const HINTS: [Option<&str>; 3] = [None, Some("#a"), Some(".b")];
const REGIONS: [Option<&str>; 3] = [None, Some("summary"), Some("search_form")];

/// A node as generated: how deep relative to the previous one, and what it is.
type NodeSpec = (usize, usize, usize, usize, usize);

fn build(specs: &[NodeSpec]) -> UiSnapshot {
    let mut nodes: Vec<UiNode> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for (position, &(level, role, name, hint, region)) in specs.iter().enumerate() {
        // A node may be a child of any open node, or a new root.
        let depth = if position == 0 {
            0
        } else {
            level % (open.len() + 1)
        };
        open.truncate(depth);
        let parent = open.last().copied();
        let mut scope = parent
            .map(|parent| nodes[parent].scope.clone())
            .unwrap_or_default();
        if let Some(region) = REGIONS[region % REGIONS.len()] {
            scope.region = Some(region.to_owned());
        }
        nodes.push(UiNode {
            id: NodeId::new(format!("main:/n{position}")),
            role: ROLES[role % ROLES.len()].to_owned(),
            name: NAMES[name % NAMES.len()].to_owned(),
            value: None,
            states: Vec::new(),
            bounds: None,
            scope,
            depth: depth as u32,
            parent: parent.map(|parent| parent as u32),
            children: Vec::new(),
            css_hint: HINTS[hint % HINTS.len()].map(str::to_owned),
            labels: Vec::new(),
        });
        if let Some(parent) = parent {
            nodes[parent].children.push(position as u32);
        }
        open.push(position);
    }
    UiSnapshot {
        url: "http://127.0.0.1/".to_owned(),
        title: String::new(),
        http_status: Some(200),
        nodes,
    }
}

fn descriptor() -> impl Strategy<Value = TargetDescriptor> {
    let mode = prop_oneof![
        Just(MatchMode::Exact),
        Just(MatchMode::Normalized),
        Just(MatchMode::Contains),
        Just(MatchMode::Regex)
    ];
    let relation = prop_oneof![
        Just(AnchorRelation::RowOf),
        Just(AnchorRelation::AdjacentTo),
        Just(AnchorRelation::WithinSection),
        Just(AnchorRelation::LabelledBy)
    ];
    (
        0..ROLES.len(),
        proptest::option::of((1..NAMES.len(), mode.clone())),
        proptest::option::of((relation, 1..NAMES.len(), mode)),
        proptest::option::of(0u32..4),
        0..HINTS.len(),
        0..REGIONS.len(),
    )
        .prop_map(
            |(role, name, anchor, ordinal, hint, region)| TargetDescriptor {
                role: ROLES[role].to_owned(),
                name: name.map(|(name, match_mode)| NameMatch {
                    value: regex_safe(NAMES[name]),
                    match_mode,
                }),
                scope: REGIONS[region].map(|region| NodeScope {
                    frame: None,
                    region: Some(region.to_owned()),
                }),
                anchor: anchor.map(|(relation, text, match_mode)| Anchor {
                    relation,
                    text: regex_safe(NAMES[text]),
                    match_mode,
                }),
                ordinal,
                identity: None,
                hints: Hints {
                    css: HINTS[hint].map(str::to_owned),
                },
                recorded_strategy: None,
            },
        )
}

/// The generated names double as regexes; `$` would anchor, so it is escaped.
fn regex_safe(name: &str) -> String {
    name.replace('$', "\\$")
}

fn snapshot_specs() -> impl Strategy<Value = Vec<NodeSpec>> {
    proptest::collection::vec(
        (
            0usize..6,
            0..ROLES.len(),
            0..NAMES.len(),
            0..HINTS.len(),
            0..REGIONS.len(),
        ),
        1..60,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn resolution_depends_only_on_the_snapshot(
        specs in snapshot_specs(),
        target in descriptor(),
        others in proptest::collection::vec(descriptor(), 0..4),
    ) {
        let page = build(&specs);
        let bindings = BoundValues::new();
        let first = resolve(&page, &target, &bindings);
        prop_assert_eq!(&resolve(&page, &target, &bindings), &first);

        let bytes = page.to_json_bytes();
        let reloaded: UiSnapshot = serde_json::from_slice(&bytes).unwrap();
        prop_assert_eq!(&resolve(&reloaded, &target, &bindings), &first);

        // A warm index (caches filled by other resolutions) gives the same answer.
        let index = SnapshotIndex::new(&page);
        for other in &others {
            let _ = resolve_with(&index, other, &bindings, &ResolverConfig::REPLAY);
        }
        prop_assert_eq!(&resolve_with(&index, &target, &bindings, &ResolverConfig::REPLAY), &first);

        if let Ok(resolution) = &first {
            prop_assert_eq!(&page.nodes[resolution.node].role, &target.role);
            prop_assert_eq!(&page.nodes[resolution.node].id, &resolution.node_id);
        }
    }

    #[test]
    fn synthesized_descriptors_that_round_trip_resolve_to_their_node(specs in snapshot_specs(), pick in 0usize..60) {
        let page = build(&specs);
        let node = pick % page.nodes.len();
        let synthesized = synthesize(&page, node).unwrap();
        if synthesized.round_trips {
            let resolution = resolve(&page, &synthesized.descriptor, &BoundValues::new()).unwrap();
            prop_assert_eq!(resolution.node, node);
        } else {
            prop_assert!(!synthesized.warnings.is_empty());
        }
    }

    #[test]
    fn the_one_pass_row_labels_match_the_definition(specs in snapshot_specs()) {
        let page = build(&specs);
        for node in 0..page.nodes.len() {
            if page.nearest_ancestor_with_role(node, "row").is_some() {
                prop_assert_eq!(label_of(&page, node), naive_row_label(&page, node), "node {}", node);
            }
        }
    }
}

/// The row rule of `label_of`, written as its definition reads: scan back from the node to its
/// row for the last label node that is not an ancestor, not inside a control and holds none.
fn naive_row_label(page: &UiSnapshot, node: usize) -> Option<usize> {
    const CONTROLS: [&str; 3] = ["textbox", "button", "link"];
    let row = page.nearest_ancestor_with_role(node, "row")?;
    let is_control = |at: usize| CONTROLS.contains(&page.nodes[at].role.as_str());
    (row + 1..node).rev().find(|&candidate| {
        let found = &page.nodes[candidate];
        let label_role = matches!(found.role.as_str(), "cell" | "text" | "label" | "labeltext");
        let named = !cua_snapshot::normalize_name(&found.name).is_empty();
        let ancestor = page.is_descendant_of(node, candidate);
        let inside = is_control(candidate) || page.ancestors(candidate).any(is_control);
        let holds = page.descendants(candidate).any(is_control);
        label_role && named && !ancestor && !inside && !holds
    })
}
