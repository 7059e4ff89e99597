//! Descriptor synthesis: the strongest descriptor that resolves back, identity in grids.

use std::collections::BTreeMap;

use cua_artifact::{Identifier, ResolutionStrategy};
use cua_snapshot::UiSnapshot;
use cua_target::{
    BoundValues, SnapshotIndex, SynthesisConfig, resolve, resolve_with, synthesize, synthesize_with,
};

use crate::fixtures::{
    member_detail, member_detail_lookalike, member_detail_lookalike_account, search_page,
    subaccount_form,
};
use crate::inputs;

const TARGET_ROLES: [&str; 7] = [
    "textbox", "combobox", "button", "link", "cell", "text", "heading",
];

/// One line per targetable node: its id, the synthesized descriptor and warnings.
fn synthesize_page(page: &UiSnapshot) -> String {
    let mut report = String::new();
    for (at, node) in page.nodes.iter().enumerate() {
        if !TARGET_ROLES.contains(&node.role.as_str()) {
            continue;
        }
        let synthesized = synthesize(page, at).unwrap();
        let strategy = synthesized
            .descriptor
            .recorded_strategy
            .map_or("-", ResolutionStrategy::as_str);
        report.push_str(&format!(
            "{}\n  {} [{strategy}]{}\n",
            node.id,
            synthesized.descriptor.describe(),
            if synthesized.round_trips {
                ""
            } else {
                " DOES NOT ROUND-TRIP"
            }
        ));
        for warning in &synthesized.warnings {
            report.push_str(&format!("  ! {warning}\n"));
        }
        // Round-tripping is the contract: check it independently of synthesis' own check.
        if synthesized.round_trips {
            let resolution = resolve(page, &synthesized.descriptor, &BoundValues::new()).unwrap();
            assert_eq!(resolution.node, at, "{}", node.id);
            assert_eq!(
                Some(resolution.strategy),
                synthesized.descriptor.recorded_strategy
            );
        }
    }
    report
}

#[test]
fn member_detail_targets_round_trip() {
    insta::assert_snapshot!(synthesize_page(&member_detail()));
}

#[test]
fn search_page_targets_round_trip() {
    insta::assert_snapshot!(synthesize_page(&search_page()));
}

#[test]
fn subaccount_form_targets_round_trip() {
    insta::assert_snapshot!(synthesize_page(&subaccount_form(false)));
}

#[test]
fn grid_targets_are_keyed_by_a_cell_no_other_row_shares() {
    let page = member_detail();
    let balance = page
        .nodes
        .iter()
        .position(|node| node.id.as_str().ends_with("table[1]/row[1]/cell[3]"))
        .unwrap();
    let config = SynthesisConfig {
        // The member number is an input too, but both of the member's rows hold it.
        known_inputs: BTreeMap::from([
            (Identifier::parse("member_id").unwrap(), "12345".to_owned()),
            (
                Identifier::parse("account").unwrap(),
                "S-12345-01".to_owned(),
            ),
        ]),
    };
    let synthesized = synthesize_with(&SnapshotIndex::new(&page), balance, &config).unwrap();
    assert!(synthesized.round_trips, "{:?}", synthesized.warnings);
    insta::assert_snapshot!(cua_artifact::yaml::to_yaml(&synthesized.descriptor).unwrap(), @r"
    role: cell
    scope:
      frame: content
      region: accounts_view
    ordinal: 3
    identity:
      column: Account
      equals:
        $input: account
    recorded_strategy: ordinal_in_region
    ");
    // Beside a lookalike of another member and one of the member's own account, the keyed
    // descriptor still reads the account's own balance cell.
    let bindings = inputs(&[("member_id", "12345"), ("account", "S-12345-01")]);
    for lookalike in [member_detail_lookalike(), member_detail_lookalike_account()] {
        let resolved = resolve_with(
            &SnapshotIndex::new(&lookalike),
            &synthesized.descriptor,
            &bindings,
            &cua_target::ResolverConfig::REPLAY,
        )
        .unwrap();
        assert_eq!(
            resolved.node_id.as_str(),
            "content:/document[0]/table[1]/row[2]/cell[3]"
        );
        assert_eq!(
            cua_target::cell_text(&lookalike, resolved.node),
            "$4,210.55"
        );
    }
}

#[test]
fn a_node_outside_the_snapshot_is_an_error() {
    let page = member_detail();
    let error = synthesize(&page, page.nodes.len()).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "node index {} is outside the snapshot ({} nodes)",
            page.nodes.len(),
            page.nodes.len()
        )
    );
}
