//! Identity checks on the resolved node's row, and reading a grid by column header.

use cua_artifact::FailureCode;
use cua_target::{BoundValues, cell_text, read_by_column, resolve};

use crate::dsl::snapshot;
use crate::fixtures::{member_detail, member_detail_lookalike, member_detail_lookalike_account};
use crate::{check, check_with, inputs, render, target};

/// The first account's balance in the Accounts grid, chosen by position and guarded by the
/// member number in the same row: a key the member's two accounts share.
const GRID_BALANCE: &str = "{role: cell, scope: {region: accounts_view}, ordinal: 3, \
                            identity: {column: Member, equals: {$input: member_id}}}";

/// A balance keyed by what the caller gave: the money cell of the row whose Account cell holds
/// the account number.
const KEYED_BALANCE: &str = "{role: cell, name: {value: '^\\$[0-9,]+\\.[0-9]{2}$', match: regex}, \
                             scope: {region: accounts_view}, \
                             identity: {column: Account, equals: {$input: account}}}";

#[test]
fn the_identity_check_passes_on_the_right_row() {
    check_with(
        &member_detail(),
        KEYED_BALANCE,
        &inputs(&[("account", "S-12345-01")]),
        "semantic_exact content:/document[0]/table[1]/row[1]/cell[3] identity verified",
    );
    check_with(
        &member_detail(),
        KEYED_BALANCE,
        &inputs(&[("account", "C-12345-02")]),
        "semantic_exact content:/document[0]/table[1]/row[2]/cell[3] identity verified",
    );
    // The ordinal counts among the cells of the keyed row.
    check_with(
        &member_detail(),
        "{role: cell, scope: {region: accounts_view}, ordinal: 3, identity: {column: Account, equals: {$input: account}}}",
        &inputs(&[("account", "C-12345-02")]),
        "ordinal_in_region content:/document[0]/table[1]/row[2]/cell[3] (5 candidates) identity verified",
    );
    // Without a column the key is the row's first cell.
    check(
        &member_detail(),
        "{role: cell, name: {value: Savings}, identity: {equals: S-12345-01}}",
        "semantic_exact content:/document[0]/table[1]/row[1]/cell[2] identity verified",
    );
}

#[test]
fn a_key_two_rows_share_is_refused_whatever_the_ordinal_says() {
    let outcome = resolve(
        &member_detail(),
        &target(GRID_BALANCE),
        &inputs(&[("member_id", "12345")]),
    );
    insta::assert_snapshot!(render(&outcome), @r#"error: identity check on cell #3 in region accounts_view where row[Member] = {$input: member_id} is not unique: 2 rows hold "12345" in the "Member" cell of its row: content:/document[0]/table[1]/row[1] row "S-12345-01 | 12345 | Savings | $4,210.55 | Active" in frame content in region accounts_view; content:/document[0]/table[1]/row[2] row "C-12345-02 | 12345 | Checking | $812.30 | Active" in frame content in region accounts_view"#);
    assert_eq!(
        outcome.unwrap_err().failure_code(),
        FailureCode::TargetAmbiguous
    );
}

#[test]
fn the_lookalike_rows_are_never_read() {
    // Another member listed first: keyed by the account, the right row is read; keyed by the
    // member, the member's own two rows share the key and the read is refused.
    let lookalike = member_detail_lookalike();
    check_with(
        &lookalike,
        KEYED_BALANCE,
        &inputs(&[("account", "S-12345-01")]),
        "semantic_exact content:/document[0]/table[1]/row[2]/cell[3] identity verified",
    );
    let outcome = resolve(
        &lookalike,
        &target(GRID_BALANCE),
        &inputs(&[("member_id", "12345")]),
    );
    assert_eq!(
        outcome.unwrap_err().failure_code(),
        FailureCode::TargetAmbiguous
    );
    // The member's own account one digit off, listed first with the same Member cell and a
    // balance one cent off: position and member number would read $4,210.56.
    let same_member = member_detail_lookalike_account();
    check_with(
        &same_member,
        KEYED_BALANCE,
        &inputs(&[("account", "S-12345-01")]),
        "semantic_exact content:/document[0]/table[1]/row[2]/cell[3] identity verified",
    );
    let outcome = resolve(
        &same_member,
        &target(
            "{role: cell, name: {value: '^\\$[0-9,]+\\.[0-9]{2}$', match: regex}, \
             scope: {region: accounts_view}, ordinal: 0, \
             identity: {column: Member, equals: {$input: member_id}, match: exact}}",
        ),
        &inputs(&[("member_id", "12345")]),
    );
    insta::assert_snapshot!(render(&outcome), @r#"error: identity check on cell named regex "^\$[0-9,]+\.[0-9]{2}$" #0 in region accounts_view where row[Member] = {$input: member_id} is not unique: 3 rows hold "12345" in the "Member" cell of its row: content:/document[0]/table[1]/row[1] row "S-12345-09 | 12345 | Savings | $4,210.56 | Active" in frame content in region accounts_view; content:/document[0]/table[1]/row[2] row "S-12345-01 | 12345 | Savings | $4,210.55 | Active" in frame content in region accounts_view; content:/document[0]/table[1]/row[3] row "C-12345-02 | 12345 | Checking | $812.30 | Active" in frame content in region accounts_view"#);
    // A key no row holds is a mismatch, reported on the candidate the ordinal pointed at.
    let outcome = resolve(
        &same_member,
        &target(
            "{role: cell, scope: {region: accounts_view}, ordinal: 8, identity: {equals: S-12345-05}}",
        ),
        &BoundValues::new(),
    );
    insta::assert_snapshot!(render(&outcome), @r#"error: identity check failed on content:/document[0]/table[1]/row[1]/cell[3]: expected "S-12345-05" in the first cell of its row, found "S-12345-09""#);
    assert_eq!(
        outcome.unwrap_err().failure_code(),
        FailureCode::TargetNotFound
    );
}

#[test]
fn an_identity_check_that_cannot_find_its_key_refuses() {
    let detail = member_detail();
    check(
        &detail,
        "{role: cell, scope: {region: accounts_view}, ordinal: 8, identity: {column: Owner, equals: '12345'}}",
        "error: identity check failed on content:/document[0]/table[1]/row[1]/cell[3]: expected \"12345\" in the \
         \"Owner\" cell of its row, found nothing",
    );
    check(
        &detail,
        "{role: link, name: {value: New Search}, identity: {equals: '12345'}}",
        "error: identity check failed on content:/document[0]/link[2]: expected \"12345\" in the node's record (it \
         is in no row, list item, article or definition), found nothing",
    );
    check(
        &detail,
        "{role: cell, scope: {region: accounts_view}, ordinal: 8, identity: {column: Member, equals: {$input: member_id}}}",
        "error: input `member_id` is not bound",
    );
}

#[test]
fn a_secret_can_never_be_bound_into_an_identity_check() {
    let outcome = resolve(
        &member_detail(),
        &target(
            "{role: cell, scope: {region: accounts_view}, ordinal: 8, identity: {equals: {$secret: corebank.pin}}}",
        ),
        &BoundValues::new(),
    );
    insta::assert_snapshot!(render(&outcome), @"error: secret `corebank.pin` cannot be used in an identity check; secrets are bound only at dispatch");
}

#[test]
fn identity_match_modes() {
    let detail = member_detail();
    let bindings = inputs(&[("account", "s-12345-01"), ("prefix", "S-12345")]);
    // normalized (the default) folds case and punctuation.
    check_with(
        &detail,
        "{role: cell, name: {value: Savings}, identity: {column: Account, equals: {$input: account}}}",
        &bindings,
        "semantic_exact content:/document[0]/table[1]/row[1]/cell[2] identity verified",
    );
    check_with(
        &detail,
        "{role: cell, name: {value: Savings}, identity: {column: Account, equals: {$input: account}, match: exact}}",
        &bindings,
        "error: identity check failed on content:/document[0]/table[1]/row[1]/cell[2]: expected \"s-12345-01\" in \
         the \"Account\" cell of its row, found \"S-12345-01\"",
    );
    check_with(
        &detail,
        "{role: cell, name: {value: Savings}, identity: {column: Account, equals: {$input: prefix}, match: contains}}",
        &bindings,
        "semantic_exact content:/document[0]/table[1]/row[1]/cell[2] identity verified",
    );
}

#[test]
fn read_by_column_picks_the_cell_under_its_header() {
    let grid = snapshot(
        r#"
document
  table
    rowgroup > row > cell "Account" | cell "Member" | cell "Type" | cell "Balance" | cell "Status"
    rowgroup
      row > cell "S-12345-01" | cell "12345" | cell "Savings" | cell "$4,210.55" | cell "Active"
      row
        cell > link "C-12345-02"
        cell "12345"
        cell "Checking"
        cell > text "$812.30"
        cell "Closed"
          table > row > cell "nested" | cell "cells"
"#,
    );
    let rows: Vec<usize> = grid
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, node)| node.role == "row")
        .map(|(at, _)| at)
        .collect();
    let read = |row: usize, header: &str| {
        read_by_column(&grid, row, header).map(|cell| cell_text(&grid, cell))
    };
    assert_eq!(read(rows[1], "Balance").as_deref(), Some("$4,210.55"));
    assert_eq!(read(rows[1], "balance").as_deref(), Some("$4,210.55"));
    assert_eq!(read(rows[2], "Balance").as_deref(), Some("$812.30"));
    assert_eq!(read(rows[2], "Account").as_deref(), Some("C-12345-02"));
    // Cells of a nested table are not cells of the outer row.
    assert_eq!(read(rows[2], "Status").as_deref(), Some("Closed"));
    assert_eq!(read(rows[2], "Owner"), None);
    // Any node inside the row stands for its row.
    let link = grid
        .nodes
        .iter()
        .position(|node| node.role == "link")
        .unwrap();
    assert_eq!(read(link, "Type").as_deref(), Some("Checking"));
}

/// A look-alike table earlier on the page, holding the same key in a column of the same name:
/// both rows are keyed candidates, so the read is refused, whatever table the ordinal lands in.
#[test]
fn a_key_held_in_another_table_is_refused_too() {
    let page = snapshot(
        r#"
document
  table
    row > cell "Confirmation" | cell "Client Reference"
    row > cell "TF-000999" | cell "cua-ref-1"
    row > cell "TF-000998" | cell "cua-other"
  table
    row > cell "Confirmation" | cell "Client Reference"
    row > cell "TF-000001" | cell "cua-ref-1"
    row > cell "TF-000002" | cell "cua-ref-2"
"#,
    );
    let outcome = resolve(
        &page,
        &target(
            "{role: cell, name: {value: '^TF-[0-9]{6}$', match: regex}, ordinal: 0, \
             identity: {column: Client Reference, equals: {$input: reference}, match: exact}}",
        ),
        &inputs(&[("reference", "cua-ref-1")]),
    );
    assert_eq!(
        outcome.unwrap_err().failure_code(),
        FailureCode::TargetAmbiguous
    );
    // A key that is a regex in a `regex` identity is matched as text: `.*` keys nothing here.
    let outcome = resolve(
        &page,
        &target(
            "{role: cell, name: {value: '^TF-[0-9]{6}$', match: regex}, \
             identity: {column: Client Reference, equals: {$input: reference}, match: regex}}",
        ),
        &inputs(&[("reference", ".*")]),
    );
    assert_eq!(
        outcome.unwrap_err().failure_code(),
        FailureCode::TargetNotFound
    );
}

/// A name that a value leaves empty is refused: it would match any unnamed control.
#[test]
fn a_name_emptied_by_its_value_is_refused() {
    let outcome = resolve(
        &member_detail(),
        &target("{role: cell, name: {value: '{$input: payee}', match: exact}}"),
        &inputs(&[("payee", " ")]),
    );
    insta::assert_snapshot!(render(&outcome), @r#"error: the name "{$input: payee}" is empty once its values are bound; a run's value never stands for an unnamed control"#);
    assert_eq!(
        outcome.unwrap_err().failure_code(),
        FailureCode::InputValidationFailed
    );
}

/// An unnamed node reads as the text runs inside it, each once: a link repeats its own text
/// run as its name, and a key cell holding a link must not read as the number twice.
#[test]
fn an_unnamed_node_reads_as_its_text_runs_once() {
    let page = snapshot(
        r#"
document
  paragraph
    text "Call"
    link "Member Services"
      text "Member Services"
    text "today"
  table
    row
      cell
        link "C-12345-02"
          text "C-12345-02"
"#,
    );
    let position = |role: &str| {
        page.nodes
            .iter()
            .position(|node| node.role == role)
            .unwrap()
    };
    assert_eq!(
        cell_text(&page, position("paragraph")),
        "Call Member Services today"
    );
    assert_eq!(cell_text(&page, position("cell")), "C-12345-02");
}

/// Beyond tables: a list item is keyed by its heading (else its first text), an article (a card)
/// likewise, a definition by its term. Position breaks a tie only among the records that hold
/// the key, and a look-alike record that holds it too is refused, not chosen by order.
#[test]
fn list_items_cards_and_definitions_carry_identity() {
    let page = snapshot(
        r#"
document "Activity"
  list
    listitem > heading "Issue #51" | text "Filed by Ada" | link "Open"
    listitem > heading "Issue #5" | text "Filed by Bob" | link "Open"
    listitem > listmarker "•" | text "Issue #7" | link "Open"
  article > heading "Branch Hours" | paragraph > text "Open 9 to 5" | button "Edit"
  article > heading "Branch Closures" | paragraph > text "Closed Monday" | button "Edit"
  list
    term "Bug #51: Card not arriving"
    definition > text "cua-ref-1" | link "Ada"
    term "Bug #52: Card not arriving again"
    definition > text "cua-ref-2" | link "Bob"
"#,
    );
    let bindings = inputs(&[
        ("issue", "Issue #5"),
        ("seven", "Issue #7"),
        ("card", "Branch Closures"),
        ("bug", "Bug #52: Card not arriving again"),
    ]);
    // The item whose heading is exactly the key, not the one whose heading starts with it.
    check_with(
        &page,
        "{role: link, name: {value: Open}, identity: {equals: {$input: issue}, match: exact}}",
        &bindings,
        "semantic_exact main:/document[0]/list[0]/listitem[1]/link[0] identity verified",
    );
    // An item with no heading is keyed by its first text (its bullet, Chromium's list marker,
    // is no key).
    check_with(
        &page,
        "{role: link, name: {value: Open}, identity: {equals: {$input: seven}, match: exact}}",
        &bindings,
        "semantic_exact main:/document[0]/list[0]/listitem[2]/link[0] identity verified",
    );
    // A card by its heading; the ordinal counts among the keyed candidates only.
    check_with(
        &page,
        "{role: text, ordinal: 0, identity: {equals: {$input: card}, match: exact}}",
        &bindings,
        "ordinal_in_region main:/document[0]/article[1]/paragraph[0]/text[0] identity verified",
    );
    // A definition by its term.
    check_with(
        &page,
        "{role: text, ordinal: 0, identity: {equals: {$input: bug}, match: exact}}",
        &bindings,
        "ordinal_in_region main:/document[0]/list[1]/definition[1]/text[0] identity verified",
    );
    // A key two items hold (a part of both headings) identifies neither.
    check_with(
        &page,
        "{role: link, ordinal: 0, identity: {equals: 'Issue #5', match: contains}}",
        &bindings,
        "error: identity check on link #0 where its key = \"Issue #5\" is not unique: 2 list items hold \
         \"Issue #5\" in the first heading or text of its listitem: \
         main:/document[0]/list[0]/listitem[0] listitem \"Issue #51\"; \
         main:/document[0]/list[0]/listitem[1] listitem \"Issue #5\"",
    );
    // Without an ordinal, two keyed candidates are simply ambiguous.
    assert!(
        render(&cua_target::resolve(
            &page,
            &target(
                "{role: link, name: {value: Open}, identity: {equals: 'Issue #5', match: contains}}"
            ),
            &bindings,
        ))
        .starts_with("error: 2 candidates for link"),
    );
    // A heading planted inside an item's reply keys the reply, never the item around it.
    let planted = snapshot(
        r#"
document "Thread"
  list
    listitem > text "Issue #7" | link "Open"
      list > listitem > heading "Issue #9"
"#,
    );
    let nine = cua_target::resolve(
        &planted,
        &target("{role: link, name: {value: Open}, identity: {equals: 'Issue #9', match: exact}}"),
        &bindings,
    );
    assert!(
        render(&nine).starts_with("error: identity check failed"),
        "{}",
        render(&nine)
    );
    // A column names a table column: it keys no list item.
    check_with(
        &page,
        "{role: link, name: {value: Open}, identity: {column: Issue, equals: {$input: issue}}}",
        &bindings,
        "error: identity check failed on main:/document[0]/list[0]/listitem[0]/link[0]: expected \"Issue #5\" in \
         the \"Issue\" cell, but the node is in a listitem, not a row, found nothing",
    );
}

/// An unnamed cell reads as the text runs inside it, and only those: not the text that ends
/// the cell before it.
#[test]
fn an_unnamed_cell_reads_its_own_text_runs() {
    let page = snapshot(
        r#"
document
  table
    row
      cell > text "Account"
      cell > text "S-12345-01"
"#,
    );
    let cells: Vec<usize> = (0..page.nodes.len())
        .filter(|&node| page.nodes[node].role == "cell")
        .collect();
    assert!(cells.iter().all(|&cell| page.nodes[cell].name.is_empty()));
    let texts: Vec<String> = cells.iter().map(|&cell| cell_text(&page, cell)).collect();
    assert_eq!(texts, ["Account", "S-12345-01"]);
}

/// A record with nothing to key it is never keyed by what follows it on the page: the heading
/// after the list is not the last item's key.
#[test]
fn a_record_is_never_keyed_by_the_node_after_it() {
    let page = snapshot(
        r#"
document "Issues"
  list
    listitem > link "Open"
  heading "Issue #9"
"#,
    );
    let outcome = render(&resolve(
        &page,
        &target("{role: link, name: {value: Open}, identity: {equals: 'Issue #9', match: exact}}"),
        &BoundValues::new(),
    ));
    assert!(outcome.starts_with("error: identity check"), "{outcome}");
}

/// A list item's key is its first heading or text, read past what cannot be one: the list
/// marker's own text ("1."), a named control before the title, and the group the title sits
/// in.
#[test]
fn a_list_items_key_is_read_past_its_marker_controls_and_groups() {
    let page = snapshot(
        r#"
document "Issues"
  list
    listitem
      listmarker "1."
        text "1."
      checkbox "Select"
      paragraph > text "Issue #5"
      link "Open"
    listitem
      listmarker "2."
        text "2."
      checkbox "Select"
      paragraph > text "Issue #6"
      link "Open"
"#,
    );
    check(
        &page,
        "{role: link, name: {value: Open}, identity: {equals: 'Issue #6', match: exact}}",
        "semantic_exact main:/document[0]/list[0]/listitem[1]/link[0] identity verified",
    );
    let marker = render(&resolve(
        &page,
        &target("{role: link, name: {value: Open}, identity: {equals: '2.', match: exact}}"),
        &BoundValues::new(),
    ));
    assert!(
        marker.starts_with("error: identity check failed"),
        "{marker}"
    );
}

/// Another item holding the same key refuses the read even when that item lacks the target (a
/// closed issue offers "Reopen", not "Open"): the key does not tell the two apart.
#[test]
fn a_record_without_the_target_still_makes_the_key_ambiguous() {
    let page = snapshot(
        r#"
document "Issues"
  list
    listitem > heading "Issue #5" | link "Reopen"
    listitem > heading "Issue #5" | link "Open"
  list
    listitem > heading "Issue #6" | link "Open"
"#,
    );
    insta::assert_snapshot!(
        render(&resolve(
            &page,
            &target("{role: link, name: {value: Open}, identity: {equals: 'Issue #5', match: exact}}"),
            &BoundValues::new(),
        )),
        @r#"error: identity check on link named exact "Open" where its key = "Issue #5" is not unique: 2 list items hold "Issue #5" in the first heading or text of its listitem: main:/document[0]/list[0]/listitem[0] listitem "Issue #5"; main:/document[0]/list[0]/listitem[1] listitem "Issue #5""#
    );
    // An item of another list is no sibling: its own key is unique.
    check(
        &page,
        "{role: link, name: {value: Open}, identity: {equals: 'Issue #6', match: exact}}",
        "semantic_exact main:/document[0]/list[1]/listitem[0]/link[0] identity verified",
    );
}
