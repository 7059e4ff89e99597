//! The ladder: each rung alone, the decision rule, ambiguity, ordinals, hints, drift, vision.

use cua_artifact::ResolutionStrategy;
use cua_target::{BoundValues, ResolverConfig, SnapshotIndex, drift_score, resolve, resolve_with};

use crate::dsl::snapshot;
use crate::fixtures::{member_detail, member_detail_northgate, search_page, subaccount_form};
use crate::{check, render, target};

#[test]
fn semantic_exact_compares_by_the_name_match_mode() {
    let page = snapshot(
        r#"
document
  textbox "Member Number:*"
  textbox "Search members by name"
  button "Sign On"
"#,
    );
    check(
        &page,
        "{role: textbox, name: {value: Member Number}}",
        "semantic_exact main:/document[0]/textbox[0]",
    );
    check(
        &page,
        "{role: textbox, name: {value: BY NAME, match: contains}}",
        "semantic_exact main:/document[0]/textbox[1]",
    );
    check(
        &page,
        r#"{role: textbox, name: {value: '^Search\b', match: regex}}"#,
        "semantic_exact main:/document[0]/textbox[1]",
    );
    check(
        &page,
        "{role: button, name: {value: Sign On}}",
        "semantic_exact main:/document[0]/button[0]",
    );
    // The role is part of the description: a button is not a textbox.
    check(
        &page,
        "{role: button, name: {value: Member Number}}",
        "error: no node matches button named exact \"Member Number\"; tried semantic_exact: no candidate; \
         semantic_normalized: no candidate; label_association: no candidate; structural_anchor: not applicable \
         (no anchor); hint_cached: not applicable (no css hint); ordinal_in_region: not applicable (the name or \
         anchor matched nothing and there is no ordinal)",
    );
}

#[test]
fn semantic_normalized_folds_case_and_punctuation_but_is_not_fuzzy() {
    let page = snapshot(
        r#"
document
  button "SIGN-ON"
  textbox "Member #"
"#,
    );
    check(
        &page,
        "{role: button, name: {value: Sign On}}",
        "semantic_normalized main:/document[0]/button[0]",
    );
    check(
        &page,
        "{role: textbox, name: {value: 'Member #'}}",
        "semantic_exact main:/document[0]/textbox[0]",
    );
    let outcome = resolve(
        &page,
        &target("{role: textbox, name: {value: Member Number}}"),
        &BoundValues::new(),
    );
    assert!(
        render(&outcome).starts_with("error: no node matches"),
        "{}",
        render(&outcome)
    );
}

#[test]
fn label_association_finds_unnamed_controls_beside_their_label_cell() {
    let form = subaccount_form(false);
    check(
        &form,
        "{role: combobox, name: {value: Account Type}}",
        "label_association content:/document[0]/table[0]/row[0]/cell[1]/combobox[0]",
    );
    // The label cell reads "Initial Deposit:"; exact matching drops the trailing colon.
    check(
        &form,
        "{role: textbox, name: {value: Initial Deposit}}",
        "label_association content:/document[0]/table[0]/row[1]/cell[1]/textbox[0]",
    );
    // The cell that holds the combobox is named after the selected option; it labels nothing.
    check(
        &form,
        "{role: textbox, name: {value: Savings}}",
        "error: no node matches textbox named exact \"Savings\"; tried semantic_exact: no candidate; \
         semantic_normalized: no candidate; label_association: no candidate; structural_anchor: not applicable \
         (no anchor); hint_cached: not applicable (no css hint); ordinal_in_region: not applicable (the name or \
         anchor matched nothing and there is no ordinal)",
    );
}

#[test]
fn label_association_outside_tables_uses_the_preceding_sibling() {
    let page = snapshot(
        r#"
document
  group > text "Amount" | textbox
  group
    group > label "Memo"
    group > textbox
  group > textbox
"#,
    );
    check(
        &page,
        "{role: textbox, name: {value: Amount}}",
        "label_association main:/document[0]/group[0]/textbox[0]",
    );
    check(
        &page,
        "{role: textbox, name: {value: Memo}}",
        "label_association main:/document[0]/group[1]/group[1]/textbox[0]",
    );
    // The last textbox follows a group whose "Memo" label already labels that group's textbox.
    check(
        &page,
        "{role: textbox, ordinal: 2}",
        "ordinal_in_region main:/document[0]/group[2]/textbox[0] (3 candidates)",
    );
}

#[test]
fn structural_anchor_relations() {
    let detail = member_detail();
    // adjacent_to: the value cell beside its label; the label's text child stands for its cell.
    check(
        &detail,
        "{role: cell, anchor: {relation: adjacent_to, text: Savings Balance}}",
        "structural_anchor content:/document[0]/table[2]/row[0]/cell[1]",
    );
    check(
        &detail,
        "{role: text, anchor: {relation: adjacent_to, text: Savings Balance}}",
        "structural_anchor content:/document[0]/table[2]/row[0]/cell[1]/text[0]",
    );
    // The grid's "Status" column header is last in its row: only the summary's label has a
    // value beside it (the reference savings_balance capability reads it this way).
    check(
        &detail,
        "{role: cell, anchor: {relation: adjacent_to, text: Status}, scope: {frame: content}}",
        "structural_anchor content:/document[0]/table[2]/row[1]/cell[1]",
    );
    check(
        &member_detail_northgate(),
        "{role: cell, anchor: {relation: adjacent_to, text: Acct Status}, scope: {frame: content}}",
        "structural_anchor content:/document[0]/table[2]/row[1]/cell[1]",
    );
    // row_of: everything of the role in the anchor's row, except the anchor and what holds it.
    check(
        &detail,
        "{role: cell, anchor: {relation: row_of, text: As Of}}",
        "structural_anchor content:/document[0]/table[2]/row[2]/cell[1]",
    );
    check(
        &detail,
        "{role: text, anchor: {relation: row_of, text: Status}}",
        "structural_anchor content:/document[0]/table[2]/row[1]/cell[1]/text[0]",
    );
    // within_section: inside the anchor's table; the anchor is one of the cells, the rest tie.
    check(
        &detail,
        "{role: cell, anchor: {relation: within_section, text: Ada Lovelace}, ordinal: 2}",
        "structural_anchor content:/document[0]/table[0]/row[1]/cell[0] (3 candidates)",
    );
    // within_section from a heading: the nodes after it up to the next heading.
    check(
        &detail,
        "{role: cell, anchor: {relation: within_section, text: Accounts}, ordinal: 8}",
        "structural_anchor content:/document[0]/table[1]/row[1]/cell[3] (15 candidates)",
    );
    // beside_label: the control whose visual label (the cell before it) is the anchor text.
    check(
        &subaccount_form(false),
        "{role: textbox, anchor: {relation: beside_label, text: Initial Deposit}}",
        "structural_anchor content:/document[0]/table[0]/row[1]/cell[1]/textbox[0]",
    );
    // labelled_by needs the page's own label relation, which MemberDesk's form never makes.
    assert!(
        render(&resolve(
            &subaccount_form(false),
            &target("{role: textbox, anchor: {relation: labelled_by, text: Initial Deposit}}"),
            &BoundValues::new(),
        ))
        .starts_with("error: no node matches"),
    );
    // An anchor that matches nothing says so.
    check(
        &detail,
        "{role: cell, anchor: {relation: adjacent_to, text: Checking Balance}}",
        "error: no node matches cell adjacent_to \"Checking Balance\"; tried semantic_exact: not applicable (no \
         name); semantic_normalized: not applicable (no name); label_association: not applicable (no name); \
         structural_anchor: no node matches the anchor text; hint_cached: not applicable (no css hint); \
         ordinal_in_region: not applicable (the name or anchor matched nothing and there is no ordinal)",
    );
}

/// `labelled_by` follows the page's label relations (`<label for>`, a wrapping `<label>`,
/// `aria-labelledby`), never the text that happens to sit before a control; `beside_label` is
/// that text. On a page where they differ, each finds its own control, and a label quoted in
/// help text labels nothing.
#[test]
fn labelled_by_follows_the_page_and_beside_label_the_layout() {
    let page = snapshot(
        r#"
document "Transfer"
  text "Amount"
  textbox "Amount" label="Amount"
  paragraph > text "Fee"
  textbox "Charge" label="Fee to waive" label="Charge"
  paragraph > text "Enter the Amount to waive"
  textbox "Note"
"#,
    );
    check(
        &page,
        "{role: textbox, anchor: {relation: labelled_by, text: Fee to waive, match: exact}}",
        "structural_anchor main:/document[0]/textbox[1]",
    );
    check(
        &page,
        "{role: textbox, anchor: {relation: labelled_by, text: Amount, match: exact}}",
        "structural_anchor main:/document[0]/textbox[0]",
    );
    // The text before the note quotes "Amount"; the page labels the note with nothing.
    check(
        &page,
        "{role: textbox, anchor: {relation: labelled_by, text: Amount, match: contains}}",
        "structural_anchor main:/document[0]/textbox[0]",
    );
    let unlabelled = resolve(
        &page,
        &target("{role: textbox, anchor: {relation: labelled_by, text: Note}}"),
        &BoundValues::new(),
    );
    assert!(
        render(&unlabelled).starts_with("error: no node matches"),
        "{}",
        render(&unlabelled)
    );
    // A name and a label relation narrow each other: "Amount" is not the field the page labels
    // "Fee to waive", so the named field is refused as standing outside the anchor.
    let outside = resolve(
        &page,
        &target(
            "{role: textbox, name: {value: Amount}, anchor: {relation: labelled_by, text: Fee to waive}}",
        ),
        &BoundValues::new(),
    );
    assert!(
        render(&outside).starts_with("error: no node matches"),
        "{}",
        render(&outside)
    );
    check(
        &page,
        "{role: textbox, name: {value: Charge}, anchor: {relation: labelled_by, text: Fee to waive}}",
        "semantic_exact main:/document[0]/textbox[1]",
    );
    // Text on the screen that the page makes no label of does not let the name decide alone:
    // the note is not labelled by the help text before it.
    let beside_none = resolve(
        &page,
        &target(
            "{role: textbox, name: {value: Note}, anchor: {relation: labelled_by, text: Enter the Amount to waive}}",
        ),
        &BoundValues::new(),
    );
    assert!(
        render(&beside_none).starts_with("error: no node matches"),
        "{}",
        render(&beside_none)
    );
    // The visual label of the second textbox is the paragraph before it.
    check(
        &page,
        "{role: textbox, anchor: {relation: beside_label, text: Fee}}",
        "structural_anchor main:/document[0]/textbox[1]",
    );
}

#[track_caller]
fn assert_no_match(page: &cua_snapshot::UiSnapshot, descriptor: &str) {
    let outcome = render(&resolve(page, &target(descriptor), &BoundValues::new()));
    assert!(outcome.starts_with("error: no node matches"), "{outcome}");
}

/// A label whose value is empty: the page's empty value element never reaches the snapshot, so
/// the next thing after "Start date:" is the label "Due date:". Reading it would answer with
/// the wrong field; the read is refused instead, and the filled field still reads.
#[test]
fn an_empty_value_beside_its_label_is_refused_never_read_from_the_next_field() {
    let page = snapshot(
        r#"
document "Issue"
  text "Status:"
  text "New"
  text "Start date:"
  text "Due date:"
  text "2027-01-15"
"#,
    );
    check(
        &page,
        "{role: text, anchor: {relation: adjacent_to, text: Status}}",
        "structural_anchor main:/document[0]/text[1]",
    );
    check(
        &page,
        "{role: text, anchor: {relation: adjacent_to, text: Due date}}",
        "structural_anchor main:/document[0]/text[4]",
    );
    assert_no_match(
        &page,
        "{role: text, anchor: {relation: adjacent_to, text: Start date}}",
    );
    // A required field's label carries a star after its colon, and is a label all the same.
    let starred = snapshot(
        r#"
document "Issue"
  text "Start date:*"
  text "Due date: *"
  text "2027-01-15"
"#,
    );
    assert_no_match(
        &starred,
        "{role: text, anchor: {relation: adjacent_to, text: Start date}}",
    );
}

#[test]
fn the_first_rung_with_candidates_decides() {
    let page = snapshot(
        r#"
document
  button "Search" css="input.btn1"
  button "SEARCH!"
  button "Search" css="input.btn2"
"#,
    );
    // semantic_exact has two; the later rungs (normalized: three; the hint: one) never run.
    let outcome = resolve(
        &page,
        &target("{role: button, name: {value: Search}, hints: {css: input.btn2}}"),
        &BoundValues::new(),
    );
    insta::assert_snapshot!(render(&outcome), @r#"error: 2 candidates for button named exact "Search" on semantic_exact; refusing to guess: main:/document[0]/button[0] button "Search"; main:/document[0]/button[2] button "Search""#);
    // One exact candidate wins even though the normalized rung would have found two.
    let single = snapshot(
        r#"
document
  button "Search"
  button "SEARCH!"
"#,
    );
    check(
        &single,
        "{role: button, name: {value: Search}}",
        "semantic_exact main:/document[0]/button[0]",
    );
}

#[test]
fn ambiguity_is_refused_with_five_summaries() {
    let page = snapshot(
        r#"
document
  table region=accounts_view
    row > cell "Active" | cell "Active" | cell "Active"
    row > cell "Active" | cell "Active" | cell "Active" frame=other
"#,
    );
    let error = resolve(
        &page,
        &target("{role: cell, name: {value: Active}}"),
        &BoundValues::new(),
    )
    .unwrap_err();
    insta::assert_snapshot!(error.to_string(), @r#"6 candidates for cell named exact "Active" on semantic_exact; refusing to guess: main:/document[0]/table[0]/row[0]/cell[0] cell "Active" in region accounts_view; main:/document[0]/table[0]/row[0]/cell[1] cell "Active" in region accounts_view; main:/document[0]/table[0]/row[0]/cell[2] cell "Active" in region accounts_view; main:/document[0]/table[0]/row[1]/cell[0] cell "Active" in region accounts_view; main:/document[0]/table[0]/row[1]/cell[1] cell "Active" in region accounts_view; and 1 more"#);
    assert_eq!(
        error.failure_code(),
        cua_artifact::FailureCode::TargetAmbiguous
    );
    // The scope narrows: the frame of the last cell sets it apart.
    check(
        &page,
        "{role: cell, name: {value: Active}, scope: {frame: other}}",
        "semantic_exact main:/document[0]/table[0]/row[1]/cell[2]",
    );
}

#[test]
fn an_ordinal_picks_among_candidates_in_document_order() {
    let detail = member_detail();
    check(
        &detail,
        "{role: cell, name: {value: Active}, ordinal: 0}",
        "semantic_exact content:/document[0]/table[1]/row[1]/cell[4] (3 candidates)",
    );
    check(
        &detail,
        "{role: cell, name: {value: Active}, ordinal: 2}",
        "semantic_exact content:/document[0]/table[2]/row[1]/cell[1] (3 candidates)",
    );
    let error = resolve(
        &detail,
        &target("{role: cell, name: {value: Active}, ordinal: 3}"),
        &BoundValues::new(),
    )
    .unwrap_err();
    insta::assert_snapshot!(error.to_string(), @r#"3 candidates for cell named exact "Active" #3 on semantic_exact (ordinal 3 is out of range); refusing to guess: content:/document[0]/table[1]/row[1]/cell[4] cell "Active" in frame content in region accounts_view; content:/document[0]/table[1]/row[2]/cell[4] cell "Active" in frame content in region accounts_view; content:/document[0]/table[2]/row[1]/cell[1] cell "Active" in frame content in region summary"#);
}

#[test]
fn ordinal_in_region_takes_the_pool_position() {
    let page = snapshot(
        r#"
document
  group region=transfer > textbox | textbox | textbox
  group region=other > textbox
"#,
    );
    check(
        &page,
        "{role: textbox, scope: {region: transfer}, ordinal: 1}",
        "ordinal_in_region main:/document[0]/group[0]/textbox[1] (3 candidates)",
    );
    check(
        &page,
        "{role: textbox, scope: {region: transfer}, ordinal: 3}",
        "error: no node matches textbox #3 in region transfer; tried semantic_exact: not applicable (no name); \
         semantic_normalized: not applicable (no name); label_association: not applicable (no name); \
         structural_anchor: not applicable (no anchor); hint_cached: not applicable (no css hint); \
         ordinal_in_region: ordinal 3 is out of range for 3 node(s)",
    );
    // Without an ordinal, role and scope alone must be unique.
    check(
        &page,
        "{role: textbox, scope: {region: other}}",
        "ordinal_in_region main:/document[0]/group[1]/textbox[0]",
    );
    let outcome = resolve(
        &page,
        &target("{role: textbox, scope: {region: transfer}}"),
        &BoundValues::new(),
    );
    assert!(
        render(&outcome)
            .starts_with("error: 3 candidates for textbox in region transfer on ordinal_in_region")
    );
}

#[test]
fn a_hint_is_accepted_only_when_the_node_also_fits_the_description() {
    let page = snapshot(
        r#"
document region=search_form
  group > textbox css="input[name=memno]"
  group > textbox css="input[name=other]"
  button "Cancel" css="input.btn1"
"#,
    );
    // No name or anchor to go on: the hint picks one of two textboxes, and it is a textbox.
    check(
        &page,
        "{role: textbox, hints: {css: 'input[name=memno]'}}",
        "hint_cached main:/document[0]/group[0]/textbox[0]",
    );
    // A dead hint (nothing carries it) finds nothing; two textboxes are then ambiguous.
    let dead = resolve(
        &page,
        &target("{role: textbox, hints: {css: 'input[name=gone]'}}"),
        &BoundValues::new(),
    );
    assert!(
        render(&dead).starts_with("error: 2 candidates for textbox on ordinal_in_region"),
        "{}",
        render(&dead)
    );
    // A lying hint: it points at a "Cancel" button, not at a "Search" button.
    check(
        &page,
        "{role: button, name: {value: Search}, hints: {css: input.btn1}}",
        "error: no node matches button named exact \"Search\"; tried semantic_exact: no candidate; \
         semantic_normalized: no candidate; label_association: no candidate; structural_anchor: not applicable \
         (no anchor); hint_cached: 1 node(s) carry the hint but none has the described role, scope and name; \
         ordinal_in_region: not applicable (the name or anchor matched nothing and there is no ordinal)",
    );
    // A hint onto a node of another role is rejected too.
    let lying_role = resolve(
        &page,
        &target("{role: textbox, scope: {region: search_form}, hints: {css: input.btn1}}"),
        &BoundValues::new(),
    );
    assert!(
        render(&lying_role).starts_with("error: 2 candidates"),
        "{}",
        render(&lying_role)
    );
}

#[test]
fn ties_follow_document_order_across_frames() {
    let page = snapshot(
        r#"
document frame=nav
  link "Member Search"
document frame=content
  link "Member Search"
"#,
    );
    check(
        &page,
        "{role: link, name: {value: Member Search}, ordinal: 1}",
        "semantic_exact content:/document[0]/link[0] (2 candidates)",
    );
    check(
        &page,
        "{role: link, name: {value: Member Search}, scope: {frame: nav}}",
        "semantic_exact nav:/document[0]/link[0]",
    );
}

#[test]
fn the_decoy_table_is_told_apart_by_scope_and_anchor() {
    let search = search_page();
    // The label "Member Number" is both the form's label cell and the decoy's column header.
    let both = resolve(
        &search,
        &target("{role: cell, name: {value: Member Number}}"),
        &BoundValues::new(),
    );
    assert!(
        render(&both).starts_with("error: 2 candidates"),
        "{}",
        render(&both)
    );
    check(
        &search,
        "{role: cell, name: {value: Member Number}, scope: {region: search_form}}",
        "semantic_exact content:/document[0]/table[0]/row[0]/cell[0]",
    );
    check(
        &search,
        "{role: textbox, name: {value: Member Number}}",
        "semantic_exact content:/document[0]/table[0]/row[0]/cell[1]/textbox[0]",
    );
    // A header cell has no following sibling that is a value: adjacent_to finds only the form's.
    check(
        &search,
        "{role: textbox, anchor: {relation: adjacent_to, text: Member Number}}",
        "structural_anchor content:/document[0]/table[0]/row[0]/cell[1]/textbox[0]",
    );
    // A summary table and a decoy whose header row repeats its label, on one page.
    let with_summary = snapshot(
        r#"
document frame=content
  table region=summary
    row > cell "Savings Balance" | cell "$4,210.55"
  table region=training
    row > cell "Member Number" | cell "Name" | cell "Savings Balance"
    row > cell "12345" | cell "Ada Lovelace" | cell "$4,210.55"
"#,
    );
    check(
        &with_summary,
        "{role: cell, anchor: {relation: adjacent_to, text: Savings Balance}}",
        "structural_anchor content:/document[0]/table[0]/row[0]/cell[1]",
    );
    let row_of = resolve(
        &with_summary,
        &target("{role: cell, anchor: {relation: row_of, text: Savings Balance}}"),
        &BoundValues::new(),
    );
    assert!(
        render(&row_of).starts_with("error: 3 candidates"),
        "{}",
        render(&row_of)
    );
    check(
        &with_summary,
        "{role: cell, anchor: {relation: row_of, text: Savings Balance}, scope: {region: summary}}",
        "structural_anchor content:/document[0]/table[0]/row[0]/cell[1]",
    );
}

#[test]
fn northgate_relabels_fail_exact_and_resolve_through_the_overlay_anchor() {
    let base_value = "{role: cell, anchor: {relation: adjacent_to, text: Savings Balance}, hints: {css: td.valc}, \
                      recorded_strategy: structural_anchor}";
    check(
        &member_detail(),
        base_value,
        "structural_anchor content:/document[0]/table[2]/row[0]/cell[1]",
    );
    // On northgate-fcu the label reads "Savings Bal." and every CSS hint is dead.
    let northgate = member_detail_northgate();
    let outcome = resolve(&northgate, &target(base_value), &BoundValues::new());
    insta::assert_snapshot!(render(&outcome), @r#"error: no node matches cell adjacent_to "Savings Balance"; tried semantic_exact: not applicable (no name); semantic_normalized: not applicable (no name); label_association: not applicable (no name); structural_anchor: no node matches the anchor text; hint_cached: no node carries the hint; ordinal_in_region: not applicable (the name or anchor matched nothing and there is no ordinal)"#);
    // The tenant overlay replaces the anchor; the dead hint is never needed.
    check(
        &northgate,
        "{role: cell, anchor: {relation: adjacent_to, text: Savings Bal.}, hints: {css: td.valc}, \
         recorded_strategy: structural_anchor}",
        "structural_anchor content:/document[0]/table[2]/row[0]/cell[1]",
    );

    // A control recorded through its label: "Initial Deposit" became "Opening Deposit".
    let deposit = "{role: textbox, name: {value: Initial Deposit}, hints: {css: 'input[name=initdep]'}, \
                   recorded_strategy: label_association}";
    check(
        &subaccount_form(false),
        deposit,
        "label_association content:/document[0]/table[0]/row[1]/cell[1]/textbox[0]",
    );
    let northgate_form = subaccount_form(true);
    let outcome = resolve(&northgate_form, &target(deposit), &BoundValues::new());
    assert!(
        render(&outcome).starts_with("error: no node matches"),
        "{}",
        render(&outcome)
    );
    check(
        &northgate_form,
        "{role: textbox, name: {value: Initial Deposit}, anchor: {relation: beside_label, text: Opening Deposit}, \
         hints: {css: 'input[name=initdep]'}, recorded_strategy: label_association}",
        "structural_anchor content:/document[0]/table[0]/row[1]/cell[1]/textbox[0] drifted",
    );
}

#[test]
fn drift_is_a_weaker_rung_than_recorded_and_never_an_error() {
    let page = snapshot(
        r#"
document
  button "SIGN ON"
  button "Search"
"#,
    );
    let bindings = BoundValues::new();
    let weaker = resolve(
        &page,
        &target("{role: button, name: {value: Sign On}, recorded_strategy: semantic_exact}"),
        &bindings,
    )
    .unwrap();
    assert_eq!(
        (weaker.strategy, weaker.drifted),
        (ResolutionStrategy::SemanticNormalized, true)
    );
    let stronger = resolve(
        &page,
        &target("{role: button, name: {value: Search}, recorded_strategy: hint_cached}"),
        &bindings,
    )
    .unwrap();
    assert_eq!(
        (stronger.strategy, stronger.drifted),
        (ResolutionStrategy::SemanticExact, false)
    );
    let unrecorded = resolve(
        &page,
        &target("{role: button, name: {value: Sign On}}"),
        &bindings,
    )
    .unwrap();
    assert!(!unrecorded.drifted);
    assert_eq!(drift_score(&[]), 0.0);
    assert_eq!(
        drift_score(&[
            weaker.clone(),
            stronger.clone(),
            unrecorded.clone(),
            weaker.clone()
        ]),
        0.5
    );
    let record = weaker.record(&target(
        "{role: button, name: {value: Sign On}, recorded_strategy: semantic_exact}",
    ));
    assert!(record.drifted());
    assert_eq!(
        record.resolved_node_id.as_deref(),
        Some("main:/document[0]/button[0]")
    );
}

#[test]
fn vision_is_refused_in_replay_and_has_no_generator_in_discovery() {
    let page = snapshot("document > button \"Go\"");
    let recorded_by_vision = target("{role: button, name: {value: Go}, recorded_strategy: vision}");
    let error = resolve(&page, &recorded_by_vision, &BoundValues::new()).unwrap_err();
    insta::assert_snapshot!(error.to_string(), @r#"button named exact "Go" was recorded by vision, which replay refuses; record it again with a semantic descriptor"#);
    let index = SnapshotIndex::new(&page);
    let discovery = resolve_with(
        &index,
        &recorded_by_vision,
        &BoundValues::new(),
        &ResolverConfig::DISCOVERY,
    );
    assert_eq!(
        render(&discovery),
        "semantic_exact main:/document[0]/button[0]"
    );
    let missing = resolve_with(
        &index,
        &target("{role: button, name: {value: Stop}}"),
        &BoundValues::new(),
        &ResolverConfig::DISCOVERY,
    );
    assert!(
        render(&missing).ends_with("vision: no generator"),
        "{}",
        render(&missing)
    );
}

#[test]
fn an_invalid_regex_name_is_an_error_not_a_miss() {
    let page = snapshot("document > button \"Go\"");
    check(
        &page,
        "{role: button, name: {value: '(unclosed', match: regex}}",
        "error: invalid regex \"(unclosed\": regex parse error:\n    (unclosed\n    ^\nerror: unclosed group",
    );
}

/// A name or anchor may use the run's values: bound literally, escaped in a regex, and never a
/// secret.
#[test]
fn names_and_anchors_take_values_literally() {
    let detail = member_detail();
    let bindings = crate::inputs(&[("account", "S-12345-01"), ("amount", "$4,210.55")]);
    crate::check_with(
        &detail,
        "{role: cell, name: {value: '{$input: account}', match: exact}, scope: {region: accounts_view}}",
        &bindings,
        "semantic_exact content:/document[0]/table[1]/row[1]/cell[0]",
    );
    // `$`, `,` and `.` of the amount are literal, not regex syntax.
    crate::check_with(
        &detail,
        "{role: cell, name: {value: '^{$input: amount}$', match: regex}, scope: {region: accounts_view}}",
        &bindings,
        "semantic_exact content:/document[0]/table[1]/row[1]/cell[3]",
    );
    crate::check_with(
        &detail,
        "{role: cell, anchor: {relation: adjacent_to, text: '{$input: account}'}}",
        &bindings,
        "structural_anchor content:/document[0]/table[1]/row[1]/cell[1]",
    );
    crate::check_with(
        &detail,
        "{role: cell, name: {value: '{$input: missing}'}}",
        &bindings,
        "error: input `missing` is not bound",
    );
    crate::check_with(
        &detail,
        "{role: cell, name: {value: '{$secret: corebank.pin}'}}",
        &bindings,
        "error: secret `corebank.pin` cannot be used in a target's name or anchor; secrets are bound only at dispatch",
    );
}

/// An unnamed control is `name: {value: "", match: exact}`: the node has no accessible name.
#[test]
fn an_exact_empty_name_selects_the_unnamed_control() {
    let form = subaccount_form(false);
    crate::check(
        &form,
        "{role: textbox, name: {value: '', match: exact}}",
        "semantic_exact content:/document[0]/table[0]/row[1]/cell[1]/textbox[0]",
    );
    // Any other match mode with an empty name matches nothing (validation says so first).
    crate::check(
        &form,
        "{role: textbox, name: {value: '', match: normalized}}",
        "error: no node matches textbox named normalized \"\"; tried semantic_exact: no candidate; semantic_normalized: not applicable (a regex name, or one with no letters or digits, does not fold); label_association: no candidate; structural_anchor: not applicable (no anchor); hint_cached: not applicable (no css hint); ordinal_in_region: not applicable (the name or anchor matched nothing and there is no ordinal)",
    );
}

#[test]
fn a_name_and_an_anchor_are_both_constraints() {
    // The category list a search for "Loans" returns (WordPress): every row has a slug cell,
    // and the row is known only by its "Edit “…”" link.
    let page = snapshot(
        r#"
document
  table
    row
      cell "Name"
      cell "Slug"
    row
      cell "Auto Loans"
        link "Edit “Auto Loans”"
      cell "auto-loans"
    row
      cell "Loans"
        link "Edit “Loans”"
      cell "loans"
    row
      cell "Loans 2024"
        link "Edit “Loans 2024”"
      cell "loans-2024"
"#,
    );
    // Named alone, three slug cells tie; the anchor keeps the one in the row it names.
    check(
        &page,
        r#"{role: cell, name: {value: '^[a-z][a-z0-9-]*$', match: regex}, anchor: {relation: row_of, text: "Edit “Loans”", match: exact}}"#,
        "semantic_exact main:/document[0]/table[0]/row[2]/cell[1]",
    );
    // A name that matches only outside the anchor's row is not satisfied there, and nothing
    // that ignores the name stands in for it: the name did not drift, it is elsewhere. (Here
    // the anchor's row holds another cell, which the anchor rung alone would have taken.)
    let outside = render(&resolve(
        &page,
        &target(
            r#"{role: cell, name: {value: auto-loans}, anchor: {relation: row_of, text: "Edit “Loans”", match: exact}}"#,
        ),
        &BoundValues::new(),
    ));
    assert!(
        outside.starts_with("error: no node matches")
            && outside
                .contains("semantic_exact: 1 node(s) match the name, none where the anchor says")
            && outside.contains(
                "structural_anchor: not applicable (the name matched outside the anchor)"
            ),
        "{outside}"
    );
    // With nothing else in the anchor's row, the refusal says where the name did match.
    let refused = render(&resolve(
        &page,
        &target(
            r#"{role: link, name: {value: "Edit “Auto Loans”"}, anchor: {relation: row_of, text: "Edit “Loans”", match: exact}}"#,
        ),
        &BoundValues::new(),
    ));
    assert!(
        refused.starts_with("error: no node matches")
            && refused
                .contains("semantic_exact: 1 node(s) match the name, none where the anchor says"),
        "{refused}"
    );
    // A node the name itself describes is not the anchor: a form whose textbox is the only
    // thing named "Operator ID" has no label to be relative to, and the name decides.
    let form = snapshot(
        r#"
document
  textbox "Operator ID"
  textbox "Password"
"#,
    );
    check(
        &form,
        "{role: textbox, name: {value: Operator ID}, anchor: {relation: row_of, text: Operator ID}}",
        "semantic_exact main:/document[0]/textbox[0]",
    );
    // When no node on the screen matches the anchor text, the name alone decides.
    check(
        &page,
        r#"{role: cell, name: {value: loans-2024}, anchor: {relation: row_of, text: "Edit “Mortgages”", match: exact}}"#,
        "semantic_exact main:/document[0]/table[0]/row[3]/cell[1]",
    );
}

/// Scopes and rows are found through proper ancestry: a node lies inside each ancestor's
/// subtree and is never its own ancestor (a row would otherwise scope itself).
#[test]
fn a_node_is_never_its_own_ancestor() {
    let page = member_detail();
    let index = SnapshotIndex::new(&page);
    assert!(!index.is_empty());
    let mut empty = page.clone();
    empty.nodes.clear();
    assert!(SnapshotIndex::new(&empty).is_empty());
    let mut pairs = 0;
    for node in 0..index.len() {
        assert!(!index.is_ancestor(node, node), "node {node}");
        if let Some(parent) = page.nodes[node].parent {
            assert!(index.is_ancestor(parent as usize, node), "node {node}");
        }
        pairs += (0..node)
            .filter(|&ancestor| index.is_ancestor(ancestor, node))
            .count();
    }
    assert!(pairs > index.len(), "{pairs} ancestor pairs");
}

/// A snapshot read from a file may be crafted: a node that names itself, a later node or a
/// node past the end as its parent has no parent, so walking up from it ends, and no row.
#[test]
fn a_crafted_parent_link_is_no_parent() {
    let mut page = member_detail();
    let index = SnapshotIndex::new(&page);
    let cell = (0..index.len())
        .rev()
        .find(|&node| index.nearest_row(node).is_some())
        .expect("the page has a table");
    let honest = page.nodes[cell].parent.map(|parent| parent as usize);
    assert!(honest.is_some() && index.parent(cell) == honest);
    let len = page.nodes.len();
    for crafted in [cell, cell + 1, len, len + 5] {
        page.nodes[cell].parent = Some(u32::try_from(crafted).expect("small"));
        let index = SnapshotIndex::new(&page);
        assert_eq!(index.parent(cell), None, "parent {crafted}");
        assert_eq!(index.nearest_row(cell), None, "parent {crafted}");
    }
}

/// The ambiguity score evidence records: 0 for a target only one node could be, and for a
/// pick among n candidates, (n - 1) / n.
#[test]
fn the_ambiguity_score_grows_with_the_candidates() {
    let page = snapshot(
        r#"
document
  button "Search"
  textbox
  textbox
  textbox
  textbox
"#,
    );
    let score = |descriptor: &str| {
        let resolution = resolve(&page, &target(descriptor), &BoundValues::new())
            .unwrap_or_else(|error| panic!("{descriptor}: {error}"));
        (resolution.candidates_considered, resolution.ambiguity)
    };
    assert_eq!(score("{role: button, name: {value: Search}}"), (1, 0.0));
    assert_eq!(score("{role: textbox, ordinal: 1}"), (4, 0.75));
}

/// A label cell whose text is split across text nodes: the last of them stands for its cell,
/// so "the cell beside Balance" is the value cell, not nothing and not a node inside the label.
#[test]
fn a_text_that_ends_its_cell_stands_for_the_cell() {
    let page = snapshot(
        r#"
document
  table
    row
      cell "Savings Balance"
        text "Savings"
        text "Balance"
      cell "$4,210.55"
"#,
    );
    check(
        &page,
        "{role: cell, anchor: {relation: adjacent_to, text: Balance}}",
        "structural_anchor main:/document[0]/table[0]/row[0]/cell[1]",
    );
}

/// A row's label is its last readable label before the control: a required-field marker ("*")
/// or a lone colon says nothing and labels nothing. Outside rows, the label is the last label
/// node in the sibling before the control, never an icon after it nor a label holding a
/// control of its own.
#[test]
fn markers_and_icons_never_label_a_control() {
    let page = snapshot(
        r#"
document "Transfer"
  table
    row > cell "Amount" | cell > text "*" | text ":" | textbox
  group
    text "Memo"
    image "pencil"
  textbox
  label "Remember me" > checkbox "Remember me"
  textbox
"#,
    );
    let role = |role: &str| {
        (0..page.nodes.len())
            .filter(|&node| page.nodes[node].role == role)
            .collect::<Vec<_>>()
    };
    let textboxes = role("textbox");
    let label =
        |node: usize| cua_target::label_of(&page, node).map(|at| page.nodes[at].name.clone());
    assert_eq!(label(textboxes[0]).as_deref(), Some("Amount"));
    assert_eq!(label(textboxes[1]).as_deref(), Some("Memo"));
    // A label that holds a control is that control's: it labels nothing after it.
    assert_eq!(label(textboxes[2]), None);
}

/// A section anchored in a table is the table's inside: a match just before the table is not
/// in it.
#[test]
fn a_section_in_a_table_starts_inside_the_table() {
    let page = snapshot(
        r#"
document "Accounts"
  button "Edit"
  table
    row > cell "Savings" | cell > button "Edit"
"#,
    );
    check(
        &page,
        "{role: button, name: {value: Edit}, anchor: {relation: within_section, text: Savings}}",
        "semantic_exact main:/document[0]/table[0]/row[0]/cell[1]/button[0]",
    );
}

/// When the only node matching the anchor text is the one the name describes, the name
/// decides: a cell named "Total" is that cell, not the one beside it whose label it is.
#[test]
fn an_anchor_the_name_describes_leaves_the_name_to_decide() {
    let page = snapshot(
        r#"
document "Statement"
  table
    row > cell "Total" | cell "$5.00"
"#,
    );
    check(
        &page,
        "{role: cell, name: {value: Total}, anchor: {relation: adjacent_to, text: Total}}",
        "semantic_exact main:/document[0]/table[0]/row[0]/cell[0]",
    );
}

/// A hint onto the named node that stands outside the anchor is reported as outside the anchor,
/// not as a hint onto the wrong node: the hint was right about the node, the anchor says no.
#[test]
fn a_hint_outside_the_anchor_is_reported_as_outside_it() {
    let page = snapshot(
        r#"
document "Find"
  heading "Filters"
  textbox "Query"
  heading "Results"
  button "Search" css="input.go"
"#,
    );
    insta::assert_snapshot!(
        render(&resolve(
            &page,
            &target(
                "{role: button, name: {value: '^Sea', match: regex}, \
                 anchor: {relation: within_section, text: Filters}, hints: {css: input.go}}"
            ),
            &BoundValues::new(),
        )),
        @r#"error: no node matches button named regex "^Sea" within_section "Filters"; tried semantic_exact: 1 node(s) match the name, none where the anchor says; semantic_normalized: not applicable (a regex name, or one with no letters or digits, does not fold); label_association: no candidate; structural_anchor: not applicable (the name matched outside the anchor); hint_cached: 1 node(s) match the name, none where the anchor says; ordinal_in_region: not applicable (the name matched outside the anchor)"#
    );
    // The same with a name that matches only folded ("SEARCH" for "Search"): the hint is still
    // onto the named node.
    let folded = snapshot(
        r#"
document "Find"
  heading "Filters"
  textbox "Query"
  heading "Results"
  button "SEARCH" css="input.go"
"#,
    );
    let outcome = render(&resolve(
        &folded,
        &target(
            "{role: button, name: {value: Search}, \
             anchor: {relation: within_section, text: Filters}, hints: {css: input.go}}",
        ),
        &BoundValues::new(),
    ));
    assert!(
        outcome.contains("hint_cached: 1 node(s) match the name, none where the anchor says"),
        "{outcome}"
    );
}
