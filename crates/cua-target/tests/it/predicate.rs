//! Predicate evaluation and explanations.

use cua_artifact::Predicate;
use cua_target::{Bindings, BoundValues, evaluate, explain};

use crate::fixtures::{member_detail, search_page};
use crate::inputs;

fn predicate(yaml: &str) -> Predicate {
    cua_artifact::yaml::from_yaml(yaml)
        .unwrap_or_else(|error| panic!("bad predicate {yaml}: {error}"))
}

/// Evaluates on the member detail page: `true`, `false`, or `error: …`.
#[track_caller]
fn check(yaml: &str, bindings: &dyn Bindings, expect: &str) {
    let outcome = match evaluate(&predicate(yaml), &member_detail(), bindings) {
        Ok(holds) => holds.to_string(),
        Err(error) => format!("error: {error}"),
    };
    assert_eq!(outcome, expect, "predicate: {yaml}");
}

#[test]
fn leaves_evaluate_as_documented() {
    let none = BoundValues::new();
    let member = inputs(&[("member_id", "12345"), ("missing_member", "99999")]);
    for (yaml, expect) in [
        (
            "{assert: node_exists, query: {role: link, name: Transfer Funds}}",
            "true",
        ),
        (
            "{assert: node_exists, query: {role: link, name: 'transfer funds!'}}",
            "true",
        ),
        (
            "{assert: node_exists, query: {role: button, name: Transfer Funds}}",
            "false",
        ),
        (
            "{assert: node_exists, query: {role: cell, name: Active}, min_count: 3}",
            "true",
        ),
        (
            "{assert: node_exists, query: {role: cell, name: Active}, min_count: 4}",
            "false",
        ),
        (
            "{assert: node_exists, query: {name_contains: sub account}}",
            "true",
        ),
        (
            "{assert: node_exists, query: {role: cell, name_matches: '^S-\\d{5}-01$'}}",
            "true",
        ),
        (
            "{assert: node_exists, query: {role: cell, name: Active, scope: {region: summary}}}",
            "true",
        ),
        (
            "{assert: node_exists, query: {role: cell, name: Active, scope: {frame: nav}}}",
            "false",
        ),
        (
            "{assert: node_exists, query: {role: cell, name: Active, scope: {region: detail_view}}}",
            "false",
        ),
        (
            "{assert: node_absent, query: {role: heading, name: Member Search}}",
            "true",
        ),
        (
            "{assert: text_present, value: 'no savings account'}",
            "false",
        ),
        ("{assert: text_present, value: '$4,210.55'}", "true"),
        ("{assert: text_present, value: '$42,105.5'}", "false"),
        ("{assert: text_present, value: 'ada   LOVELACE'}", "true"),
        ("{assert: text_absent, value: No records found}", "true"),
        ("{assert: money_present, value: '$4,210.55'}", "true"),
        ("{assert: money_present, value: '4210.55'}", "true"),
        ("{assert: money_present, value: '$4,210.56'}", "false"),
        // A member number is a number, not money.
        ("{assert: money_present, value: '12345'}", "false"),
        (
            "{assert: money_present, value: '812.30', query: {role: cell}}",
            "true",
        ),
        (
            "{assert: money_present, value: '812.30', query: {role: link}}",
            "false",
        ),
        ("{assert: url_matches, pattern: '/member/\\d+$'}", "true"),
        ("{assert: url_matches, pattern: '/search'}", "false"),
        ("{assert: http_status_in, codes: [200, 304]}", "true"),
        ("{assert: http_status_in, codes: [502]}", "false"),
        ("{assert: all_of, of: []}", "true"),
        ("{assert: any_of, of: []}", "false"),
        (
            "{assert: not, of: {assert: text_present, value: Ada}}",
            "false",
        ),
    ] {
        check(yaml, &none, expect);
    }
    check(
        "{assert: text_present, value: {$input: member_id}}",
        &member,
        "true",
    );
    check(
        "{assert: text_present, value: {$input: missing_member}}",
        &member,
        "false",
    );
    check(
        "{assert: text_present, value: {$input: other}}",
        &member,
        "error: input `other` is not bound",
    );
    check(
        "{assert: text_present, value: {$output: balance}}",
        &BoundValues::new().with_output(
            cua_artifact::Identifier::parse("balance").unwrap(),
            "$812.30",
        ),
        "true",
    );
    check(
        "{assert: text_present, value: {$output: balance}}",
        &none,
        "error: output `balance` has not been produced",
    );
}

#[test]
fn node_has_value_compares_the_squashed_value() {
    let page = search_page();
    let mut typed = page.clone();
    let textbox = typed
        .nodes
        .iter()
        .position(|node| node.role == "textbox")
        .unwrap();
    typed.nodes[textbox].value = Some("  12345 ".to_owned());
    let query = "{assert: node_has_value, query: {role: textbox, name: Member Number}, value: {$input: member_id}}";
    let bindings = inputs(&[("member_id", "12345")]);
    assert!(!evaluate(&predicate(query), &page, &bindings).unwrap());
    assert!(evaluate(&predicate(query), &typed, &bindings).unwrap());
    insta::assert_snapshot!(explain(&predicate(query), &page, &bindings).unwrap().text, @r#"expected textbox named "Member Number" has value "12345" ({$input: member_id}), which does not hold: found no value"#);
    // Three matches are all shown; more are counted past the third.
    let three = "{assert: node_has_value, query: {role: cell, name: Active}, value: '12345'}";
    insta::assert_snapshot!(explain(&predicate(three), &member_detail(), &bindings).unwrap().text, @r#"expected cell named "Active" has value "12345", which does not hold: found no value, no value, no value"#);
    let cells = "{assert: node_has_value, query: {role: cell}, value: '12345'}";
    insta::assert_snapshot!(explain(&predicate(cells), &member_detail(), &bindings).unwrap().text, @r#"expected cell has value "12345", which does not hold: found no value, no value, no value and 22 more"#);
}

#[test]
fn a_secret_in_a_predicate_is_an_error_wherever_it_sits() {
    let bindings = inputs(&[("member_id", "12345")]);
    // Even behind an any_of whose first branch already holds.
    check(
        "{assert: any_of, of: [{assert: text_present, value: Ada}, {assert: text_present, value: {$secret: corebank.operator_password}}]}",
        &bindings,
        "error: secret `corebank.operator_password` cannot be used in a predicate; secrets are bound only at dispatch",
    );
    check(
        "{assert: node_has_value, query: {role: textbox}, value: {$secret: corebank.operator_password}}",
        &bindings,
        "error: secret `corebank.operator_password` cannot be used in a predicate; secrets are bound only at dispatch",
    );
    check(
        "{assert: all_of, of: [{assert: text_absent, value: x}, {assert: url_matches, pattern: '(['}]}",
        &bindings,
        "error: invalid regex \"([\": regex parse error:\n    ([\n     ^\nerror: unclosed character class",
    );
}

#[test]
fn explanations_name_the_part_that_failed() {
    let page = member_detail();
    let bindings = inputs(&[("member_id", "12345")]);
    let mut report = String::new();
    for yaml in [
        "{assert: node_exists, query: {role: textbox, name: Member Number}}",
        "{assert: node_exists, query: {role: cell, name: Active}, min_count: 5}",
        "{assert: node_absent, query: {role: cell, name: Active}}",
        "{assert: all_of, of: [{assert: url_matches, pattern: /member/}, {assert: text_present, value: {$input: member_id}}, {assert: node_exists, query: {role: heading, name: Transfer Complete, scope: {frame: content}}}]}",
        "{assert: any_of, of: [{assert: text_present, value: No records found}, {assert: http_status_in, codes: [404, 502]}]}",
        "{assert: not, of: {assert: node_exists, query: {role: link, name_contains: transfer}}}",
        "{assert: url_matches, pattern: /confirm$}",
        "{assert: text_absent, value: {$input: member_id}}",
        "{assert: all_of, of: [{assert: url_matches, pattern: /member/}, {assert: text_present, value: Ada Lovelace}]}",
    ] {
        let explanation = explain(&predicate(yaml), &page, &bindings).unwrap();
        assert_eq!(
            explanation.holds,
            evaluate(&predicate(yaml), &page, &bindings).unwrap()
        );
        report.push_str(&format!(
            "{yaml}\n  => {}: {explanation}\n",
            if explanation.holds { "holds" } else { "fails" }
        ));
    }
    insta::assert_snapshot!(report);
}

#[test]
fn a_query_name_binds_the_run_values_literally() {
    let account = inputs(&[("account", "S-12345-01"), ("other", "S-12345-09")]);
    check(
        "{assert: node_exists, query: {role: cell, name: '{$input: account}'}}",
        &account,
        "true",
    );
    check(
        "{assert: node_exists, query: {role: cell, name: '{$input: other}'}}",
        &account,
        "false",
    );
    // A part of a name.
    check(
        "{assert: node_exists, query: {role: cell, name_contains: '12345-0{$input: digit}'}}",
        &inputs(&[("digit", "1")]),
        "true",
    );
    check(
        "{assert: node_exists, query: {role: cell, name_contains: '12345-0{$input: digit}'}}",
        &inputs(&[("digit", "7")]),
        "false",
    );
    check(
        "{assert: node_exists, query: {role: cell, name: '{$input: absent}'}}",
        &account,
        "error: input `absent` is not bound",
    );
}

#[test]
fn a_query_name_bound_to_nothing_is_refused_not_matched_everywhere() {
    check(
        "{assert: node_exists, query: {name_contains: '{$input: part}'}}",
        &inputs(&[("part", " ")]),
        "error: the name \"{$input: part}\" is empty once its values are bound; a run's value never stands for an unnamed control",
    );
    // A value with no letters or digits folds to nothing, which is part of every name.
    check(
        "{assert: node_exists, query: {name_contains: '{$input: part}'}}",
        &inputs(&[("part", "--")]),
        "error: the name \"{$input: part}\" is empty once its values are bound; a run's value never stands for an unnamed control",
    );
    check(
        "{assert: node_absent, query: {role: cell, name: 'Ref {$input: part}'}}",
        &inputs(&[("part", "#")]),
        "true",
    );
}
