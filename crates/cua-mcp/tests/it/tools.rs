//! The tool list a client sees: names, schemas, annotations and descriptions, snapshotted
//! whole; and which capabilities are withheld, and why.

use serde_json::{Value, json};

use crate::support::{Harness, SAVINGS, TRANSFER, TempCatalog};

fn listed(harness: &Harness) -> Value {
    serde_json::to_value(harness.server.tools().unwrap()).unwrap()
}

fn tool<'a>(tools: &'a Value, name: &str) -> &'a Value {
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed in {tools:#}"))
}

#[test]
fn the_tool_list_of_the_reference_catalog() {
    let catalog = TempCatalog::with_approved(&[SAVINGS, TRANSFER]);
    let harness = Harness::new(&catalog);
    insta::assert_json_snapshot!("tool_list", listed(&harness));
    let withheld: Vec<String> = harness
        .server
        .tool_set()
        .unwrap()
        .withheld
        .iter()
        .map(|withheld| format!("{}: {}", withheld.capability, withheld.reason))
        .collect();
    insta::assert_json_snapshot!("withheld", withheld);
}

#[test]
fn a_read_capability_is_read_only_with_its_inputs_as_the_schema() {
    let catalog = TempCatalog::with_approved(&[SAVINGS]);
    let tools = listed(&Harness::new(&catalog));
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["corebank_member_savings_balance"]);
    let savings = tool(&tools, "corebank_member_savings_balance");
    assert_eq!(
        savings["inputSchema"],
        json!({
            "type": "object",
            "properties": {
                "member_id": {
                    "type": "string",
                    "description": "The member number as printed on the member's statement.",
                    "pattern": "^[0-9]{4,10}$",
                    "examples": ["12345"],
                }
            },
            "required": ["member_id"],
            "additionalProperties": false,
        })
    );
    assert_eq!(
        savings["annotations"],
        json!({
            "title": "Look up a member's savings balance",
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false,
        })
    );
    assert_eq!(
        savings["outputSchema"]["properties"]["outcome"]["properties"]["code"]["enum"],
        json!([
            "member_not_found",
            "no_savings_account",
            "permission_denied"
        ])
    );
    let description = savings["description"].as_str().unwrap();
    for needle in [
        "- member_not_found: No member exists with that number.",
        "status \"business_outcome\"",
        "Risk: safe.",
    ] {
        assert!(description.contains(needle), "{needle:?} in {description}");
    }
}

#[test]
fn an_irreversible_capability_is_destructive_and_has_a_read_only_plan_companion() {
    let catalog = TempCatalog::with_approved(&[SAVINGS, TRANSFER]);
    let tools = listed(&Harness::new(&catalog));
    let transfer = tool(&tools, "corebank_member_transfer_funds");
    assert_eq!(transfer["annotations"]["readOnlyHint"], false);
    assert_eq!(transfer["annotations"]["destructiveHint"], true);
    assert_eq!(transfer["annotations"]["idempotentHint"], false);
    let required = transfer["inputSchema"]["required"].as_array().unwrap();
    assert!(required.contains(&json!("approval_token")), "{required:?}");
    assert_eq!(
        transfer["inputSchema"]["properties"]["amount"]["pattern"],
        "^[0-9]{1,9}\\.[0-9]{2}$"
    );
    let plan = tool(&tools, "corebank_member_transfer_funds__plan");
    assert_eq!(plan["annotations"]["readOnlyHint"], true);
    assert_eq!(plan["annotations"]["destructiveHint"], false);
    let plan_inputs = plan["inputSchema"]["properties"].as_object().unwrap();
    assert!(!plan_inputs.contains_key("approval_token"));
    assert_eq!(plan_inputs.len(), 5);
}

#[test]
fn unapproved_drafts_and_edited_capabilities_are_withheld_with_the_reason() {
    let catalog = TempCatalog::with_approved(&[SAVINGS, TRANSFER]);
    // Edit the approved savings capability after its approval: the approval no longer covers it.
    let path = catalog.capability_path(SAVINGS);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("max_steps: 12", "max_steps: 11")).unwrap();
    let harness = Harness::new(&catalog);
    let set = harness.server.tool_set().unwrap();
    let offered: Vec<&str> = set
        .offered
        .iter()
        .map(|offered| offered.name.as_str())
        .collect();
    assert_eq!(offered, ["corebank_member_transfer_funds"]);
    let savings = set
        .withheld_as("corebank_member_savings_balance")
        .expect("withheld");
    assert!(savings.reason.starts_with("TAMPERED"), "{}", savings.reason);
    let open = set
        .withheld_as("corebank_member_open_subaccount")
        .expect("withheld");
    assert_eq!(open.reason, "not approved: no approval is recorded");
}

#[test]
fn a_revoked_approval_takes_the_tool_away_at_the_next_listing() {
    let catalog = TempCatalog::with_approved(&[SAVINGS]);
    let harness = Harness::new(&catalog);
    assert_eq!(harness.server.tools().unwrap().len(), 1);
    cua_catalog::Catalog::new(catalog.config())
        .revoke(&cua_catalog::RevokeRequest {
            reference: cua_artifact::CapabilityRef::parse(SAVINGS).unwrap(),
            by: "reviewer".to_owned(),
            at: "2026-11-30T01:00:00Z".to_owned(),
            notes: None,
            tenant: None,
        })
        .unwrap();
    assert_eq!(harness.server.tools().unwrap().len(), 0);
}
