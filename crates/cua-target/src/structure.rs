//! The table and label structure of legacy pages: which text labels a control, which cells
//! make a row, which row heads a table, and how to read a cell by its column header.
//!
//! Legacy back-office pages lay forms out in `<table>`s with the label in the cell to the left
//! of its control and no `<label for>`; grids put column headers in the first row. These
//! helpers give those idioms one precise meaning that the resolver, the identity check and
//! descriptor synthesis share.

use cua_snapshot::{UiSnapshot, fold, normalize_name, squash_whitespace};

use crate::index::{SnapshotIndex, to_u32};

/// Roles that can carry a label's text.
pub(crate) const LABEL_ROLES: [&str; 4] = ["cell", "text", "label", "labeltext"];

/// Roles of interactive controls. A control's own text never labels another node.
pub(crate) const CONTROL_ROLES: [&str; 15] = [
    "textbox",
    "combobox",
    "listbox",
    "checkbox",
    "radio",
    "button",
    "link",
    "slider",
    "spinbutton",
    "switch",
    "option",
    "menulistpopup",
    "menuitem",
    "searchbox",
    "menubutton",
];

/// Roles whose accessible name is computed from everything inside them; they are never
/// anchors, because "the row named after its cells" says nothing a cell does not.
pub(crate) const CONTAINER_ROLES: [&str; 7] = [
    "document", "iframe", "frame", "table", "rowgroup", "row", "group",
];

/// The node that labels the node at `index`, by the adjacent-cell idiom of legacy tables.
///
/// Precisely, for a node `C`:
/// 1. **In a row.** When `C` has a nearest `row` ancestor `R`, the label is the last node, in
///    document order, that lies inside `R` before `C` and is a *label node*: its role is
///    `cell`, `text`, `label` or `labeltext`, its normalized name is not empty, it is not an
///    ancestor of `C` (the cell holding `C` does not label `C`), it is not a control or inside
///    one (a link's text labels nothing), and it holds no control (a cell holding a combobox is
///    named after the selected option, which is not a label). With no such node, `C` has no
///    label: the row rule never falls through to the sibling rule. Labels for every node are
///    computed in one pass per snapshot (`row_labels`).
/// 2. **Outside rows.** Otherwise the label is found among the preceding siblings: take `C`,
///    or, when `C` is its parent's first child, its parent (up to three levels, never past a
///    `row`, `table` or `document`); the label is the last label node within that node's
///    immediately preceding sibling (the sibling itself included), provided no control comes
///    after it inside that sibling (then it labels that control, not this one).
///
/// Returns the label node's index.
pub fn label_of(snapshot: &UiSnapshot, index: usize) -> Option<usize> {
    label_of_indexed(&SnapshotIndex::new(snapshot), index)
}

/// The text of a node, as an identity check, a column read or an `extract` sees it: its
/// normalized name, or, when it is unnamed (a paragraph, a landmark), the text runs inside it
/// joined by spaces (else the names of what it contains, a link without a text run), or a
/// control's value as the last resort.
pub fn cell_text(snapshot: &UiSnapshot, index: usize) -> String {
    cell_text_indexed(&SnapshotIndex::new(snapshot), index)
}

/// The cell of `row` (a row, or any node inside one) under the column whose header reads
/// `header`.
///
/// The header row is the first `row` of the row's nearest `table` (a `columnheader` is aliased
/// to `cell`, so `<th>` and `<td>` headers read alike). The header cell is the first of that
/// row's cells whose folded text equals `header` folded; the answer is the cell at the same
/// position among `row`'s own cells (cells whose nearest row is `row`, in document order).
/// Column spans are not modelled: legacy grids rarely use them, and a wrong column would be
/// caught by the identity check anyway.
pub fn read_by_column(snapshot: &UiSnapshot, row: usize, header: &str) -> Option<usize> {
    let index = SnapshotIndex::new(snapshot);
    column_cell(&index, index.row_of(row)?, header)
}

pub(crate) fn label_of_indexed(index: &SnapshotIndex<'_>, node: usize) -> Option<usize> {
    index.node(node)?;
    if index.nearest_row(node).is_some() {
        return index.row_label(node);
    }
    let mut current = node;
    for _ in 0..3 {
        let parent = index.parent(current)?;
        let siblings = &index.node(parent)?.children;
        let position = siblings
            .iter()
            .position(|&sibling| sibling as usize == current)?;
        if position > 0 {
            // The last label inside the preceding sibling, unless a control comes after it
            // there: that label is the control's.
            let sibling = siblings[position - 1] as usize;
            for candidate in (sibling..index.subtree_end(sibling)).rev() {
                if is_within_control(index, candidate, sibling.saturating_sub(1)) {
                    return None;
                }
                if is_label_node(index, candidate) {
                    return Some(candidate);
                }
            }
            return None;
        }
        let role = index.node(parent)?.role.as_str();
        if matches!(role, "row" | "table" | "document") {
            return None;
        }
        current = parent;
    }
    None
}

pub(crate) fn cell_text_indexed(index: &SnapshotIndex<'_>, cell: usize) -> String {
    let own = index.normalized_name(cell);
    if !own.is_empty() {
        return own.to_owned();
    }
    // The text runs inside, when there are any: a link or a button repeats its own text run
    // as its name, so counting both would read "Member Services Member Services".
    let names = |text_only: bool| -> Vec<&str> {
        (cell + 1..index.subtree_end(cell))
            .filter(|&inside| {
                !text_only || index.node(inside).is_some_and(|node| node.role == "text")
            })
            .map(|inside| index.normalized_name(inside))
            .filter(|name| !name.is_empty())
            .collect()
    };
    let runs = names(true);
    let inner = if runs.is_empty() { names(false) } else { runs };
    if !inner.is_empty() {
        return squash_whitespace(&inner.join(" "));
    }
    (cell..index.subtree_end(cell))
        .find_map(|inside| index.node(inside).and_then(|node| node.value.as_deref()))
        .map(normalize_name)
        .unwrap_or_default()
}

/// The cells of `row`: cells whose nearest row is `row` (not those of a nested table), in
/// document order.
pub(crate) fn row_cells(index: &SnapshotIndex<'_>, row: usize) -> Vec<usize> {
    (row + 1..index.subtree_end(row))
        .filter(|&inside| {
            index.node(inside).is_some_and(|node| node.role == "cell")
                && index.nearest_row(inside) == Some(row)
        })
        .collect()
}

/// The rows of `table`: rows whose nearest table is `table`, in document order.
pub(crate) fn table_rows(index: &SnapshotIndex<'_>, table: usize) -> Vec<usize> {
    (table + 1..index.subtree_end(table))
        .filter(|&inside| {
            index.node(inside).is_some_and(|node| node.role == "row")
                && index.nearest_table(inside) == Some(table)
        })
        .collect()
}

/// The header row of the table `row` belongs to: that table's first row.
pub(crate) fn header_row(index: &SnapshotIndex<'_>, row: usize) -> Option<usize> {
    let table = index.nearest_table(row)?;
    (table + 1..index.subtree_end(table)).find(|&inside| {
        index.node(inside).is_some_and(|node| node.role == "row")
            && index.nearest_table(inside) == Some(table)
    })
}

/// The position of the column headed `header` in `row`'s table.
pub(crate) fn column_position(
    index: &SnapshotIndex<'_>,
    row: usize,
    header: &str,
) -> Option<usize> {
    let wanted = fold(header);
    if wanted.is_empty() {
        return None;
    }
    row_cells(index, header_row(index, row)?)
        .into_iter()
        .position(|cell| fold(&cell_text_indexed(index, cell)) == wanted)
}

/// The key cell of `row` for an identity check: the cell under the column headed `column`, or
/// the row's first cell.
pub(crate) fn key_cell(
    index: &SnapshotIndex<'_>,
    row: usize,
    column: Option<&str>,
) -> Option<usize> {
    match column {
        Some(column) => column_cell(index, row, column),
        None => row_cells(index, row).first().copied(),
    }
}

/// The cell of `row` under the column headed `header`.
pub(crate) fn column_cell(index: &SnapshotIndex<'_>, row: usize, header: &str) -> Option<usize> {
    let position = column_position(index, row, header)?;
    row_cells(index, row).get(position).copied()
}

/// Roles of records, the entries of a repeated structure an identity check keys, with what
/// several of them are called: a table row, a list item, an article (a card in a feed), a
/// definition (a `<dd>`, keyed by its term).
const RECORDS: [(&str, &str); 4] = [
    ("row", "rows"),
    ("listitem", "list items"),
    ("article", "articles"),
    ("definition", "definitions"),
];

/// Whether `role` is a record's.
fn is_record_role(role: &str) -> bool {
    RECORDS.iter().any(|(record, _)| *record == role)
}

/// What several records with `role` are called, for messages (`rows` for anything else).
pub(crate) fn records_called(role: &str) -> &'static str {
    RECORDS
        .iter()
        .find(|(record, _)| *record == role)
        .map_or("rows", |(_, plural)| plural)
}

/// The record `node` belongs to: the node itself or its nearest ancestor whose role is one of
/// the record roles. A row inside a list item is the record of its cells.
pub(crate) fn record_of(index: &SnapshotIndex<'_>, node: usize) -> Option<usize> {
    let mut at = Some(node);
    while let Some(current) = at {
        if index
            .node(current)
            .is_some_and(|found| is_record_role(&found.role))
        {
            return Some(current);
        }
        at = index.parent(current);
    }
    None
}

/// The node holding `record`'s key for an identity check: a row's cell under `column` (or its
/// first cell); a definition's term (the nearest `term` before it among its siblings); a list
/// item's or an article's own first heading or run of text, whichever comes first (never one
/// inside a nested record). A `column` names a table column, so it keys rows only.
pub(crate) fn record_key(
    index: &SnapshotIndex<'_>,
    record: usize,
    column: Option<&str>,
) -> Option<usize> {
    let role = index.node(record)?.role.as_str();
    if role == "row" {
        return key_cell(index, record, column);
    }
    if column.is_some() {
        return None;
    }
    if role == "definition" {
        let siblings = &index.node(index.parent(record)?)?.children;
        let position = siblings
            .iter()
            .position(|&sibling| sibling as usize == record)?;
        return siblings[..position]
            .iter()
            .rev()
            .map(|&sibling| sibling as usize)
            .find(|&sibling| index.node(sibling).is_some_and(|node| node.role == "term"));
    }
    // The record's own first heading or run of text, whichever comes first: a nested record
    // (a reply, an item of an inner list) keys itself, not this one, and a list marker's
    // bullet is no key. Not "a heading anywhere first": the record's own content (a comment, a
    // description) could plant one, while what leads the record is its title or a badge, and a
    // badge as the key fails the check rather than passing it.
    let mut node = record + 1;
    let end = index.subtree_end(record);
    while node < end {
        let Some(found) = index.node(node) else {
            break;
        };
        if is_record_role(&found.role) || found.role == "listmarker" {
            node = index.subtree_end(node);
            continue;
        }
        let text = found.role == "text" && !index.normalized_name(node).is_empty();
        if found.role == "heading" || text {
            return Some(node);
        }
        node += 1;
    }
    None
}

/// Where [`record_key`] reads the key of a record with `role`, for messages.
pub(crate) fn record_key_place(role: &str, column: Option<&str>) -> String {
    match (role, column) {
        ("row", Some(column)) => format!("the {column:?} cell of its row"),
        ("row", None) => "the first cell of its row".to_owned(),
        (_, Some(column)) => format!("the {column:?} cell, but the node is in a {role}, not a row"),
        ("definition", None) => "the term before its definition".to_owned(),
        (role, None) => format!("the first heading or text of its {role}"),
    }
}

/// The records `record` is one of: the rows of its table, or the records with its role among
/// its parent's children (the items of one list, the definitions of one description list).
pub(crate) fn sibling_records(index: &SnapshotIndex<'_>, record: usize) -> Vec<usize> {
    let Some(node) = index.node(record) else {
        return Vec::new();
    };
    if node.role == "row" {
        return index
            .nearest_table(record)
            .map_or_else(|| vec![record], |table| table_rows(index, table));
    }
    let Some(parent) = index.parent(record).and_then(|parent| index.node(parent)) else {
        return vec![record];
    };
    parent
        .children
        .iter()
        .map(|&child| child as usize)
        .filter(|&child| {
            index
                .node(child)
                .is_some_and(|found| found.role == node.role)
        })
        .collect()
}

/// When `row` is a data row of a repeated structure, its table: a table whose first row is a
/// header (at least two cells, every one named and none reading as a datum) followed by at
/// least two more rows. Those rows look alike by design, so a target inside one needs an
/// identity check.
pub(crate) fn repeated_structure(index: &SnapshotIndex<'_>, row: usize) -> Option<usize> {
    let table = index.nearest_table(row)?;
    let header = headed_table(index, table)?;
    (header != row).then_some(table)
}

/// Whether `row` is the header row of a repeated structure: its cells are column labels.
pub(crate) fn is_header_row(index: &SnapshotIndex<'_>, row: usize) -> bool {
    index
        .nearest_table(row)
        .and_then(|table| headed_table(index, table))
        == Some(row)
}

/// The header row of `table` when the table is a repeated structure.
fn headed_table(index: &SnapshotIndex<'_>, table: usize) -> Option<usize> {
    let rows = table_rows(index, table);
    let (&header, data) = rows.split_first()?;
    if data.len() < 2 {
        return None;
    }
    let headers = row_cells(index, header);
    let headed = headers.len() >= 2
        && headers.iter().all(|&cell| {
            let text = cell_text_indexed(index, cell);
            !text.is_empty() && !crate::text::looks_like_datum(&text)
        });
    headed.then_some(header)
}

/// The row rule of [`label_of`] for every node at once, in one pass: for each node inside a
/// row, the last label node of that row (or of any row around it) that precedes the node and
/// is not its ancestor.
///
/// The nodes before `C` that are not its ancestors are exactly the nodes whose subtrees have
/// closed when `C` is reached. So the pass walks the nodes in document order, and when a
/// subtree closes (by then it is known whether it holds a control) a label node updates the
/// latest label of every row still open around it; `C` then reads its nearest row's entry.
/// Cost: the number of nodes times the nesting depth of rows.
pub(crate) fn row_labels(index: &SnapshotIndex<'_>) -> Vec<Option<u32>> {
    let nodes = &index.snapshot().nodes;
    let mut pass = RowLabelPass {
        index,
        labels: vec![None; nodes.len()],
        inside_control: vec![false; nodes.len()],
        holds_control: vec![false; nodes.len()],
        latest_in_row: vec![None; nodes.len()],
        open_rows: Vec::new(),
    };
    let mut open: Vec<usize> = Vec::new();
    for (position, node) in nodes.iter().enumerate() {
        while let Some(&top) = open.last() {
            if nodes[top].depth < node.depth {
                break;
            }
            open.pop();
            pass.close(top);
        }
        pass.visit(position);
        open.push(position);
    }
    while let Some(top) = open.pop() {
        pass.close(top);
    }
    pass.labels
}

/// The state of [`row_labels`]' single pass.
struct RowLabelPass<'i, 's> {
    index: &'i SnapshotIndex<'s>,
    labels: Vec<Option<u32>>,
    /// The node is a control or inside one.
    inside_control: Vec<bool>,
    /// The node's subtree holds a control (complete once the node has closed).
    holds_control: Vec<bool>,
    /// Per open row: the latest label node closed inside it so far.
    latest_in_row: Vec<Option<u32>>,
    open_rows: Vec<usize>,
}

impl RowLabelPass<'_, '_> {
    fn visit(&mut self, position: usize) {
        let Some(node) = self.index.node(position) else {
            return;
        };
        let parent_inside = self
            .index
            .parent(position)
            .is_some_and(|parent| self.inside_control[parent]);
        self.inside_control[position] =
            parent_inside || CONTROL_ROLES.contains(&node.role.as_str());
        if let Some(row) = self.index.nearest_row(position) {
            self.labels[position] = self.latest_in_row[row];
        }
        if node.role == "row" {
            self.open_rows.push(position);
        }
    }

    fn close(&mut self, closing: usize) {
        let Some(node) = self.index.node(closing) else {
            return;
        };
        if self.open_rows.last() == Some(&closing) {
            self.open_rows.pop();
        }
        let control = CONTROL_ROLES.contains(&node.role.as_str());
        if let Some(parent) = self.index.parent(closing)
            && (control || self.holds_control[closing])
        {
            self.holds_control[parent] = true;
        }
        let label = LABEL_ROLES.contains(&node.role.as_str())
            && has_readable_text(&node.name)
            && !self.holds_control[closing]
            && !self.inside_control[closing];
        if label {
            let closing = to_u32(closing);
            for &row in &self.open_rows {
                let latest = self.latest_in_row[row].get_or_insert(closing);
                *latest = (*latest).max(closing);
            }
        }
    }
}

/// Whether a name says anything once normalized: `normalize_name` leaves text only when some
/// character is not whitespace, `:` or `*`.
fn has_readable_text(name: &str) -> bool {
    name.chars()
        .any(|character| !(character.is_whitespace() || character == ':' || character == '*'))
}

/// Whether `node` could label the control after it. That it holds no control is left to the
/// caller's walk: it goes backwards through the preceding sibling, so a control inside a label
/// node is met (and ends the walk) before the label node is.
fn is_label_node(index: &SnapshotIndex<'_>, node: usize) -> bool {
    index.node(node).is_some_and(|found| {
        LABEL_ROLES.contains(&found.role.as_str()) && !index.normalized_name(node).is_empty()
    })
}

pub(crate) fn is_control(index: &SnapshotIndex<'_>, node: usize) -> bool {
    index
        .node(node)
        .is_some_and(|found| CONTROL_ROLES.contains(&found.role.as_str()))
}

/// Whether `node` is a control or sits inside one, looking up to (excluding) `boundary`.
fn is_within_control(index: &SnapshotIndex<'_>, node: usize, boundary: usize) -> bool {
    let mut current = Some(node);
    while let Some(at) = current {
        if at <= boundary {
            return false;
        }
        if is_control(index, at) {
            return true;
        }
        current = index.parent(at);
    }
    false
}
