//! Re-anchoring after a hand-back, on the reference savings-balance capability: a step is
//! skipped only when its postcondition holds, the run resumes at the first step not visibly
//! done when its precondition holds, and fails closed otherwise.

use std::collections::BTreeMap;
use std::path::Path;

use cua_artifact::Capability;
use cua_replay::{reanchor, validate_inputs};
use cua_snapshot::{NodeId, NodeScope, UiNode, UiSnapshot};

fn capability() -> Capability {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../capabilities/corebank.member.savings_balance@1.0.0.yaml");
    Capability::from_yaml(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A content frame holding `(role, name, value)` nodes.
fn screen(nodes: &[(&str, &str, Option<&str>)]) -> UiSnapshot {
    let mut all = vec![UiNode {
        id: NodeId::new("content:/document[0]"),
        role: "document".to_owned(),
        name: String::new(),
        value: None,
        states: Vec::new(),
        bounds: None,
        scope: NodeScope {
            frame: Some("content".to_owned()),
            region: None,
        },
        depth: 0,
        parent: None,
        children: Vec::new(),
        css_hint: None,
        labels: Vec::new(),
    }];
    for (index, (role, name, value)) in nodes.iter().enumerate() {
        all.push(UiNode {
            id: NodeId::new(format!("content:/document[0]/{role}[{index}]")),
            role: (*role).to_owned(),
            name: (*name).to_owned(),
            value: value.map(str::to_owned),
            states: Vec::new(),
            bounds: None,
            scope: NodeScope {
                frame: Some("content".to_owned()),
                region: None,
            },
            depth: 1,
            parent: Some(0),
            children: Vec::new(),
            css_hint: None,
            labels: Vec::new(),
        });
        all[0].children.push(u32::try_from(index + 1).unwrap());
    }
    UiSnapshot {
        url: "http://127.0.0.1:9/".to_owned(),
        title: "MemberDesk".to_owned(),
        http_status: Some(200),
        nodes: all,
    }
}

fn check(snapshot: &UiSnapshot, from: usize, expect: Option<usize>, skipped: &[&str]) {
    let capability = capability();
    let inputs = BTreeMap::from([("member_id".to_owned(), serde_json::json!("12345"))]);
    let values = validate_inputs(&capability, &inputs).unwrap();
    let found = reanchor(&capability, snapshot, &values, from).unwrap();
    assert_eq!(found.resume_index, expect, "{}", found.reason);
    let names: Vec<&str> = found.skipped.iter().map(|id| id.as_str()).collect();
    assert_eq!(names, skipped, "{}", found.reason);
}

#[test]
fn a_step_is_skipped_only_when_its_postcondition_holds() {
    // The operator typed the member number: enter_member_id is done, submit_search is next.
    let typed = screen(&[
        ("textbox", "Member Number", Some("12345")),
        ("button", "Search", None),
    ]);
    check(&typed, 0, Some(1), &["enter_member_id"]);
    // An empty field: enter_member_id is not done, and its precondition holds.
    let empty = screen(&[
        ("textbox", "Member Number", Some("")),
        ("button", "Search", None),
    ]);
    check(&empty, 0, Some(0), &[]);
    // Another member's number does not count as done.
    let other = screen(&[("textbox", "Member Number", Some("67890"))]);
    check(&other, 0, Some(0), &[]);
}

#[test]
fn a_screen_the_capability_does_not_describe_fails_closed() {
    // Still on the dialog: enter_member_id is not done and its precondition fails.
    let dialog = screen(&[
        ("heading", "System Notice", None),
        ("link", "Continue", None),
    ]);
    check(&dialog, 0, None, &[]);
}

#[test]
fn the_operator_may_finish_the_search_and_reads_are_never_skipped() {
    // On the member record: both search steps are done (the field is gone, and the
    // postcondition of submit_search is its absence); read_balance has no postcondition, so it
    // is never skipped, and its precondition holds.
    let record = screen(&[
        ("cell", "Savings Balance", None),
        ("cell", "$4,210.55", None),
    ]);
    // From enter_member_id, its postcondition (a field holding the number) does not hold and
    // its precondition (the field exists) fails: the run does not guess past it.
    check(&record, 0, None, &[]);
    // From submit_search (where a stop after the typing would leave it), the search is done.
    check(&record, 1, Some(2), &["submit_search"]);
    // Resuming beyond the last step goes straight to the checkpoint.
    let capability = capability();
    check(
        &record,
        capability.steps.len(),
        Some(capability.steps.len()),
        &[],
    );
}
