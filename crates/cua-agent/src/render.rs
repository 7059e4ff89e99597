//! The snapshot as the model sees it: a compact, folded outline in document order, one line per
//! meaningful node, each with a node ref (`n42`) the model can name in a tool call. Long tables
//! are folded after a few rows and can be expanded with `observe {"expand": "n17"}`.
//!
//! Everything is redacted before it is rendered: the snapshot goes through the run's
//! [`Redactor`] (registered secrets, sensitive input values, policy patterns) and the finished
//! text through it once more. Nothing in an outline is a secret.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use cua_evidence::Redactor;
use cua_snapshot::{UiNode, UiSnapshot};

/// How much of a snapshot an outline shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderConfig {
    /// Lines shown before the outline is cut.
    pub max_lines: usize,
    /// Characters of a control's or cell's name shown before it is cut with `…`.
    pub max_name_chars: usize,
    /// Characters of a text node shown (page prose is longer than a label).
    pub max_text_chars: usize,
    /// Characters of a control's value shown.
    pub max_value_chars: usize,
    /// Rows of a table shown before the rest is folded.
    pub table_rows: usize,
}

impl Default for RenderConfig {
    fn default() -> Self {
        Self {
            max_lines: 220,
            max_name_chars: 80,
            max_text_chars: 240,
            max_value_chars: 40,
            table_rows: 8,
        }
    }
}

/// A rendered outline and what its refs point at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outline {
    pub text: String,
    /// `n42` → the index of the node in the snapshot the outline was rendered from.
    pub refs: BTreeMap<String, usize>,
}

impl Outline {
    /// The snapshot index a ref names, if the outline showed it.
    pub fn node(&self, reference: &str) -> Option<usize> {
        self.refs.get(reference.trim()).copied()
    }
}

/// The ref of the node at `index`.
pub fn node_ref(index: usize) -> String {
    format!("n{index}")
}

/// Renders `snapshot`, redacted, with the tables whose refs are in `expanded` shown whole.
pub fn render(
    snapshot: &UiSnapshot,
    redactor: &Redactor,
    expanded: &BTreeSet<usize>,
    config: &RenderConfig,
) -> Outline {
    let redacted = redactor.redact_snapshot(snapshot);
    let mut writer = Writer {
        snapshot: &redacted,
        expanded,
        config,
        lines: Vec::new(),
        refs: BTreeMap::new(),
        frame: None,
        cut: 0,
    };
    let status = redacted
        .http_status
        .map_or_else(String::new, |status| format!("  http_status: {status}"));
    writer.lines.push(format!(
        "url: {}  title: {}{status}",
        redacted.url,
        quote(&redacted.title, config.max_name_chars)
    ));
    for (index, node) in redacted.nodes.iter().enumerate() {
        if node.parent.is_none() {
            writer.block(index, 0);
        }
    }
    if writer.cut > 0 {
        writer.lines.push(format!(
            "… outline cut: {} more line(s) not shown",
            writer.cut
        ));
    }
    let text = redactor.redact_text(&writer.lines.join("\n"));
    Outline {
        text,
        refs: writer.refs,
    }
}

/// Roles a model acts on.
const CONTROL_ROLES: [&str; 12] = [
    "button",
    "link",
    "textbox",
    "combobox",
    "checkbox",
    "radio",
    "menuitem",
    "tab",
    "switch",
    "slider",
    "spinbutton",
    "option",
];

/// Containers that add nothing to a line of their own.
const TRANSPARENT_ROLES: [&str; 10] = [
    "document",
    "iframe",
    "frame",
    "group",
    "rowgroup",
    "generic",
    "section",
    "form",
    "list",
    "paragraph",
];

struct Writer<'s> {
    snapshot: &'s UiSnapshot,
    expanded: &'s BTreeSet<usize>,
    config: &'s RenderConfig,
    lines: Vec<String>,
    refs: BTreeMap<String, usize>,
    frame: Option<Option<String>>,
    cut: usize,
}

impl<'s> Writer<'s> {
    fn node(&self, index: usize) -> &'s UiNode {
        &self.snapshot.nodes[index]
    }

    fn children(&self, index: usize) -> Vec<usize> {
        self.node(index)
            .children
            .iter()
            .map(|&child| child as usize)
            .collect()
    }

    fn push(&mut self, depth: usize, line: String) {
        if self.lines.len() >= self.config.max_lines {
            self.cut += 1;
            return;
        }
        self.lines.push(format!("{}{line}", "  ".repeat(depth)));
    }

    fn reference(&mut self, index: usize) -> String {
        let reference = node_ref(index);
        self.refs.insert(reference.clone(), index);
        reference
    }

    /// Announces a frame when document order enters a different one.
    fn frame_header(&mut self, index: usize) {
        let frame = self.node(index).scope.frame.clone();
        if self.frame.as_ref() != Some(&frame) {
            if let Some(name) = &frame {
                self.push(0, format!("frame {name}:"));
            }
            self.frame = Some(frame);
        }
    }

    fn block(&mut self, index: usize, depth: usize) {
        let node = self.node(index);
        let role = node.role.as_str();
        // A layout cell that holds a table is structure, not content: its name only repeats
        // what the table shows.
        let layout_cell = role == "cell"
            && self
                .snapshot
                .descendants(index)
                .any(|inside| self.node(inside).role == "table");
        if TRANSPARENT_ROLES.contains(&role) && node.name.is_empty()
            || matches!(role, "document" | "iframe" | "frame")
            || layout_cell
        {
            for child in self.children(index) {
                self.block(child, depth);
            }
            return;
        }
        self.frame_header(index);
        match role {
            "table" => self.table(index, depth),
            "row" => self.row(index, depth),
            "text" => {
                let parent_name = self
                    .snapshot
                    .parent_of(index)
                    .map(|parent| self.node(parent).name.as_str());
                if !node.name.is_empty() && parent_name != Some(node.name.as_str()) {
                    let line = self.item(index);
                    self.push(depth, line);
                }
            }
            _ => {
                let line = self.item(index);
                self.push(depth, line);
                if !is_leaf(role) {
                    for child in self.children(index) {
                        self.block(child, depth + 1);
                    }
                }
            }
        }
    }

    fn table(&mut self, index: usize, depth: usize) {
        let rows: Vec<usize> = self
            .snapshot
            .descendants(index)
            .filter(|&inside| {
                self.node(inside).role == "row"
                    && self.snapshot.nearest_ancestor_with_role(inside, "table") == Some(index)
            })
            .collect();
        let reference = self.reference(index);
        let shown = if self.expanded.contains(&index) {
            rows.len()
        } else {
            rows.len().min(self.config.table_rows)
        };
        self.push(depth, format!("{reference} table ({} rows):", rows.len()));
        for &row in &rows[..shown] {
            self.row(row, depth + 1);
        }
        if shown < rows.len() {
            self.push(
                depth + 1,
                format!(
                    "… {} more row(s) folded; observe {{\"expand\": \"{reference}\"}} to see them",
                    rows.len() - shown
                ),
            );
        }
    }

    /// A row on one line, its cells separated by `|`, unless a cell holds a table of its own.
    fn row(&mut self, index: usize, depth: usize) {
        let cells = self.children(index);
        let nested = cells.iter().any(|&cell| {
            self.snapshot
                .descendants(cell)
                .any(|inside| self.node(inside).role == "table")
        });
        if nested {
            let reference = self.reference(index);
            self.push(depth, format!("{reference} row:"));
            for cell in cells {
                self.block(cell, depth + 1);
            }
            return;
        }
        let parts: Vec<String> = cells.iter().map(|&cell| self.cell(cell)).collect();
        let reference = self.reference(index);
        self.push(depth, format!("{reference} row: {}", parts.join(" | ")));
    }

    /// A cell: the controls inside it, or the cell with its text.
    fn cell(&mut self, index: usize) -> String {
        let controls: Vec<usize> = std::iter::once(index)
            .chain(self.snapshot.descendants(index))
            .filter(|&inside| {
                let role = self.node(inside).role.as_str();
                CONTROL_ROLES.contains(&role) && role != "option"
            })
            .collect();
        if controls.is_empty() {
            self.item(index)
        } else {
            controls
                .into_iter()
                .map(|control| self.item(control))
                .collect::<Vec<_>>()
                .join(" ")
        }
    }

    /// One node: `n42 textbox "Member Number" = "12345" [required]`, a combobox with its options.
    fn item(&mut self, index: usize) -> String {
        let reference = self.reference(index);
        let node = self.node(index);
        let mut line = format!("{reference} {}", node.role);
        let name = if node.name.is_empty() && node.role == "cell" {
            self.inner_text(index)
        } else {
            node.name.clone()
        };
        if !name.is_empty() || node.role == "cell" {
            let max = if node.role == "text" {
                self.config.max_text_chars
            } else {
                self.config.max_name_chars
            };
            line.push(' ');
            line.push_str(&quote(&name, max));
        }
        if let Some(value) = &node.value {
            let _ = write!(line, " = {}", quote(value, self.config.max_value_chars));
        } else if matches!(node.role.as_str(), "textbox" | "combobox") {
            line.push_str(" = \"\"");
        }
        let states: Vec<&str> = node
            .states
            .iter()
            .map(String::as_str)
            .filter(|state| matches!(*state, "disabled" | "checked" | "selected" | "required"))
            .collect();
        if !states.is_empty() {
            let _ = write!(line, " [{}]", states.join(", "));
        }
        if node.role == "combobox" {
            let options: Vec<String> = self
                .snapshot
                .descendants(index)
                .filter(|&inside| self.node(inside).role == "option")
                .map(|option| quote(&self.node(option).name, self.config.max_value_chars))
                .collect();
            if !options.is_empty() {
                let _ = write!(line, " options: {}", options.join(", "));
            }
        }
        line
    }

    fn inner_text(&self, index: usize) -> String {
        let names: Vec<&str> = self
            .snapshot
            .descendants(index)
            .map(|inside| self.node(inside).name.as_str())
            .filter(|name| !name.is_empty())
            .collect();
        names
            .first()
            .map_or_else(String::new, |first| (*first).to_owned())
    }
}

/// Roles whose children only repeat their own name.
fn is_leaf(role: &str) -> bool {
    CONTROL_ROLES.contains(&role) || matches!(role, "heading" | "cell" | "text" | "img" | "label")
}

/// A name as a JSON string, cut to `max` characters.
fn quote(text: &str, max: usize) -> String {
    let cut: String = if text.chars().count() > max {
        let mut cut: String = text.chars().take(max).collect();
        cut.push('…');
        cut
    } else {
        text.to_owned()
    };
    serde_json::Value::from(cut).to_string()
}
