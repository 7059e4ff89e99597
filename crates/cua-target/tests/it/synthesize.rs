//! Descriptor synthesis: the strongest descriptor that resolves back, identity in grids.

use std::collections::BTreeMap;

use cua_artifact::{Identifier, ResolutionStrategy};
use cua_snapshot::UiSnapshot;
use cua_target::{
    BoundValues, SnapshotIndex, SynthesisConfig, resolve, resolve_with, synthesize, synthesize_with,
};

use crate::fixtures::{member_detail, member_detail_lookalike, search_page, subaccount_form};
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
fn grid_targets_carry_an_identity_check_that_refuses_the_lookalike() {
    let page = member_detail();
    let balance = page
        .nodes
        .iter()
        .position(|node| node.id.as_str().ends_with("table[1]/row[1]/cell[3]"))
        .unwrap();
    let config = SynthesisConfig {
        known_inputs: BTreeMap::from([(
            Identifier::parse("member_id").unwrap(),
            "12345".to_owned(),
        )]),
    };
    let synthesized = synthesize_with(&SnapshotIndex::new(&page), balance, &config).unwrap();
    assert!(synthesized.round_trips, "{:?}", synthesized.warnings);
    insta::assert_snapshot!(cua_artifact::yaml::to_yaml(&synthesized.descriptor).unwrap(), @r"
    role: cell
    scope:
      frame: content
      region: accounts_view
    ordinal: 8
    identity:
      column: Member
      equals:
        $input: member_id
    recorded_strategy: ordinal_in_region
    ");
    let bindings = inputs(&[("member_id", "12345")]);
    let lookalike = member_detail_lookalike();
    let refused = resolve_with(
        &SnapshotIndex::new(&lookalike),
        &synthesized.descriptor,
        &bindings,
        &cua_target::ResolverConfig::REPLAY,
    );
    assert!(
        matches!(
            refused,
            Err(cua_target::TargetError::IdentityMismatch { .. })
        ),
        "{refused:?}"
    );
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
