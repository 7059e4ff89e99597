//! Median resolve time per rung on a generated 10,000-node snapshot. Figures are printed, never
//! asserted: `cargo bench -p cua-target --bench resolve`.
//!
//! The page is a legacy back office at scale: 250 label/value tables of 8 rows each (a label
//! cell with a text child, a value cell holding a textbox or a value text), each under a
//! heading that sets its region, and a button and a link per table. Every descriptor below is
//! decided by the rung its label starts with.
#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use cua_artifact::TargetDescriptor;
use cua_snapshot::{NodeId, NodeScope, UiNode, UiSnapshot};
use cua_target::{BoundValues, ResolverConfig, SnapshotIndex, resolve, resolve_with};

const TABLES: usize = 250;
const ROWS: usize = 8;
/// A heading, a table, eight rows of five nodes, a button and a link.
const NODES_PER_TABLE: usize = 2 + ROWS * 5 + 2;
const ITERATIONS: usize = 101;

fn main() {
    let page = generate();
    println!(
        "cua-target resolve bench: {} nodes, median of {ITERATIONS} runs",
        page.nodes.len()
    );
    let cases: [(&str, &str); 8] = [
        (
            "semantic_exact",
            "{role: textbox, name: {value: Field 137-3}}",
        ),
        // A name and an anchor: the anchor's nodes are found (one scan of the page) and the
        // named candidates kept only where the anchor says.
        (
            "semantic_exact + anchor",
            "{role: textbox, name: {value: Field 137-3}, anchor: {relation: row_of, text: Label 137-3}}",
        ),
        (
            "semantic_normalized",
            "{role: button, name: {value: 'SAVE TABLE 137'}}",
        ),
        (
            "label_association",
            "{role: textbox, name: {value: Label 137-5}}",
        ),
        (
            "structural_anchor",
            "{role: cell, anchor: {relation: adjacent_to, text: Label 137-2}}",
        ),
        (
            "hint_cached",
            "{role: textbox, hints: {css: '#field-137-3'}}",
        ),
        (
            "ordinal_in_region",
            "{role: textbox, scope: {region: section_137}, ordinal: 2}",
        ),
        (
            "not_found (every rung)",
            "{role: textbox, name: {value: Nowhere}, anchor: {relation: row_of, text: Nowhere}, hints: {css: '#nowhere'}}",
        ),
    ];
    let bindings = BoundValues::new();
    println!("{:<26} {:>16} {:>16}", "rung", "fresh index", "warm index");
    for (label, yaml) in cases {
        let descriptor: TargetDescriptor =
            cua_artifact::yaml::from_yaml(yaml).expect("bench descriptors parse");
        let expected = resolve(&page, &descriptor, &bindings);
        if !label.starts_with("not_found") {
            let resolution = expected.as_ref().expect("bench descriptors resolve");
            assert_eq!(
                resolution.strategy.as_str(),
                label.split(' ').next().unwrap_or(label),
                "{yaml} is decided by its rung"
            );
        }
        // Fresh: the index is built inside the call, as a replay step that resolves once does.
        let fresh = median(|| {
            black_box(resolve(black_box(&page), black_box(&descriptor), &bindings).is_ok());
        });
        // Warm: the index of this snapshot already exists, as when a step resolves several targets.
        let index = SnapshotIndex::new(&page);
        let _ = resolve_with(&index, &descriptor, &bindings, &ResolverConfig::REPLAY);
        let warm = median(|| {
            black_box(
                resolve_with(
                    &index,
                    black_box(&descriptor),
                    &bindings,
                    &ResolverConfig::REPLAY,
                )
                .is_ok(),
            );
        });
        println!(
            "{label:<26} {:>16} {:>16}",
            format_duration(fresh),
            format_duration(warm)
        );
    }
}

fn median(mut run: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..ITERATIONS)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn format_duration(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

struct Page {
    nodes: Vec<UiNode>,
}

impl Page {
    fn push(
        &mut self,
        parent: Option<usize>,
        role: &str,
        name: &str,
        region: Option<&str>,
        css: Option<String>,
    ) -> usize {
        let index = self.nodes.len();
        let depth = parent.map_or(0, |parent| self.nodes[parent].depth + 1);
        let id = match parent {
            Some(parent) => format!(
                "{}/{role}[{}]",
                self.nodes[parent].id,
                self.nodes[parent].children.len()
            ),
            None => format!("content:/{role}[0]"),
        };
        self.nodes.push(UiNode {
            id: NodeId::new(id),
            role: role.to_owned(),
            name: name.to_owned(),
            value: None,
            states: Vec::new(),
            bounds: None,
            scope: NodeScope {
                frame: Some("content".to_owned()),
                region: region.map(str::to_owned),
            },
            depth,
            parent: parent.map(|parent| parent as u32),
            children: Vec::new(),
            css_hint: css,
            labels: Vec::new(),
        });
        if let Some(parent) = parent {
            self.nodes[parent].children.push(index as u32);
        }
        index
    }
}

fn generate() -> UiSnapshot {
    let mut page = Page { nodes: Vec::new() };
    let document = page.push(None, "document", "MemberDesk", None, None);
    let mut table_index = 0;
    while page.nodes.len() + NODES_PER_TABLE <= 10_000 && table_index < TABLES {
        let region = format!("section_{table_index}");
        let region = Some(region.as_str());
        page.push(
            Some(document),
            "heading",
            &format!("Section {table_index}"),
            region,
            None,
        );
        let table = page.push(Some(document), "table", "", region, None);
        for row_index in 0..ROWS {
            let row = page.push(Some(table), "row", "", region, None);
            let label = format!("Label {table_index}-{row_index}");
            let label_cell = page.push(
                Some(row),
                "cell",
                &label,
                region,
                Some("td.lblc".to_owned()),
            );
            page.push(Some(label_cell), "text", &label, region, None);
            if row_index % 2 == 0 {
                let value = format!("${table_index},{row_index:03}.00");
                let value_cell = page.push(
                    Some(row),
                    "cell",
                    &value,
                    region,
                    Some("td.valc".to_owned()),
                );
                page.push(Some(value_cell), "text", &value, region, None);
            } else {
                let value_cell = page.push(Some(row), "cell", "", region, None);
                // Odd rows: the textbox of row 3 is named; row 5's is unnamed (label only).
                let name = if row_index == 3 {
                    format!("Field {table_index}-{row_index}")
                } else {
                    String::new()
                };
                page.push(
                    Some(value_cell),
                    "textbox",
                    &name,
                    region,
                    Some(format!("#field-{table_index}-{row_index}")),
                );
            }
        }
        page.push(
            Some(document),
            "button",
            &format!("Save table {table_index}"),
            region,
            None,
        );
        page.push(
            Some(document),
            "link",
            &format!("Details {table_index}"),
            region,
            None,
        );
        table_index += 1;
    }
    while page.nodes.len() < 10_000 {
        page.push(Some(document), "text", "Footer", None, None);
    }
    UiSnapshot {
        url: "http://127.0.0.1:8080/bench".to_owned(),
        title: "bench".to_owned(),
        http_status: Some(200),
        nodes: page.nodes,
    }
}
