//! Calls refused before anything runs (unknown and withheld tools, bad inputs, every way a plan
//! approval can fail to match), and what a run through the executor returns when its surface
//! is dead: the surface factory counts every surface it opens.

use std::time::Duration;

use cua_mcp::DEFAULT_PLAN_TTL;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};

use crate::support::{BASE_URL, DeadSurfaces, Harness, SAVINGS, TRANSFER, TempCatalog};

const TRANSFER_TOOL: &str = "corebank_member_transfer_funds";
const PLAN_TOOL: &str = "corebank_member_transfer_funds__plan";

fn arguments(value: Value) -> JsonObject {
    value.as_object().unwrap().clone()
}

fn transfer_inputs() -> Value {
    json!({
        "member_id": "12345",
        "from_account": "S-12345-01",
        "to_account": "C-12345-02",
        "amount": "100.00",
    })
}

fn with_token(inputs: &Value, token: &str) -> JsonObject {
    let mut inputs = arguments(inputs.clone());
    inputs.insert("approval_token".to_owned(), Value::from(token));
    inputs
}

async fn call(harness: &Harness, tool: &str, arguments: JsonObject) -> CallToolResult {
    harness.server.call(tool, arguments).await.unwrap()
}

fn structured(result: &CallToolResult) -> &Value {
    result.structured_content.as_ref().unwrap()
}

/// Asserts a refusal with `code` and returns its message.
fn refused(result: &CallToolResult, code: &str) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let content = structured(result);
    assert_eq!(content["status"], "refused", "{content:#}");
    assert_eq!(content["error"]["code"], code, "{content:#}");
    content["error"]["message"].as_str().unwrap().to_owned()
}

async fn plan(harness: &Harness, inputs: &Value) -> String {
    let result = call(harness, PLAN_TOOL, arguments(inputs.clone())).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    structured(&result)["approval_request"]["approval_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn an_unknown_tool_is_a_protocol_error_and_a_withheld_one_says_why() {
    let catalog = TempCatalog::with_approved(&[SAVINGS]);
    let harness = Harness::new(&catalog);
    let error = harness
        .server
        .call("no_such_tool", JsonObject::new())
        .await
        .unwrap_err();
    assert_eq!(error.message, "unknown tool no_such_tool");
    let result = call(&harness, TRANSFER_TOOL, arguments(transfer_inputs())).await;
    let message = refused(&result, "not_offered");
    assert_eq!(
        message,
        "refused: corebank.member.transfer_funds@1.0.0 is in the catalog but not offered as a \
         tool: not approved: no approval is recorded"
    );
    assert_eq!(harness.opened(), 0);
}

#[tokio::test]
async fn inputs_are_validated_before_any_surface_opens() {
    let catalog = TempCatalog::with_approved(&[SAVINGS]);
    let harness = Harness::new(&catalog);
    for (inputs, needle) in [
        (json!({"member_id": "12a45"}), "member_id"),
        (json!({}), "is required"),
        (
            json!({"member_id": "12345", "pin": "1"}),
            "`pin` is not an input",
        ),
    ] {
        let result = call(
            &harness,
            "corebank_member_savings_balance",
            arguments(inputs),
        )
        .await;
        let message = refused(&result, "input_validation_failed");
        assert!(message.contains(needle), "{needle:?} in {message}");
    }
    assert_eq!(harness.opened(), 0);
}

#[tokio::test]
async fn an_irreversible_run_without_a_plan_approval_is_refused_and_nothing_opens() {
    let catalog = TempCatalog::with_approved(&[SAVINGS, TRANSFER]);
    let harness = Harness::new(&catalog);
    let result = call(&harness, TRANSFER_TOOL, arguments(transfer_inputs())).await;
    let message = refused(&result, "plan_approval_required");
    assert!(message.contains(PLAN_TOOL), "{message}");
    for (token, code) in [
        (json!(42), "plan_approval_invalid"),
        (json!("cua-plan-v1.e30.AAAA"), "plan_approval_invalid"),
        (json!(""), "plan_approval_required"),
    ] {
        let mut inputs = arguments(transfer_inputs());
        inputs.insert("approval_token".to_owned(), token);
        refused(&call(&harness, TRANSFER_TOOL, inputs).await, code);
    }
    assert_eq!(harness.opened(), 0);
}

#[tokio::test]
async fn a_plan_returns_an_approval_request_bound_to_hash_overlay_inputs_and_expiry() {
    let catalog = TempCatalog::with_approved(&[SAVINGS, TRANSFER]);
    let harness = Harness::new(&catalog);
    let result = call(&harness, PLAN_TOOL, arguments(transfer_inputs())).await;
    assert_eq!(result.is_error, Some(false));
    let plan = structured(&result);
    assert_eq!(plan["status"], "plan");
    assert_eq!(plan["tool"], TRANSFER_TOOL);
    let request = &plan["approval_request"];
    assert_eq!(
        request["artifact_hash"],
        "blake3:4e5d8496125669ec174b6a53c89400b7ca3631c776277ac3313afb3de3d7879d"
    );
    assert!(
        request["overlay_hash"]
            .as_str()
            .unwrap()
            .starts_with("blake3:")
    );
    assert!(
        request["input_digest"]
            .as_str()
            .unwrap()
            .starts_with("blake3:")
    );
    assert_eq!(request["expires_at"], "2026-11-30T00:58:20.000000Z");
    assert_eq!(request["single_use"], true);
    assert_eq!(plan["irreversible_steps"], json!(["post_transfer"]));
    assert_eq!(plan["inputs"], transfer_inputs());
    assert_eq!(harness.opened(), 0, "a plan opens nothing");
}

#[tokio::test]
async fn a_plan_approval_for_other_inputs_is_refused() {
    let catalog = TempCatalog::with_approved(&[SAVINGS, TRANSFER]);
    let harness = Harness::new(&catalog);
    let token = plan(&harness, &transfer_inputs()).await;
    let mut more = transfer_inputs();
    more["amount"] = json!("1000.00");
    let message = refused(
        &call(&harness, TRANSFER_TOOL, with_token(&more, &token)).await,
        "plan_approval_mismatch",
    );
    assert!(
        message.starts_with("refused: the inputs differ from the planned inputs (input_digest:"),
        "{message}"
    );
    assert_eq!(harness.opened(), 0);
}

#[tokio::test]
async fn an_expired_plan_approval_is_refused() {
    let catalog = TempCatalog::with_approved(&[SAVINGS, TRANSFER]);
    let harness = Harness::new(&catalog);
    let token = plan(&harness, &transfer_inputs()).await;
    harness.clock.advance(DEFAULT_PLAN_TTL);
    let message = refused(
        &call(
            &harness,
            TRANSFER_TOOL,
            with_token(&transfer_inputs(), &token),
        )
        .await,
        "plan_approval_expired",
    );
    assert!(
        message.starts_with(
            "refused: the plan approval expired at 2026-11-30T00:58:20.000000Z (now \
             2026-11-30T00:58:20.000000Z)"
        ),
        "{message}"
    );
    assert_eq!(harness.opened(), 0);
}

#[tokio::test]
async fn a_plan_approval_does_not_survive_a_change_of_the_artifact() {
    let catalog = TempCatalog::with_approved(&[SAVINGS, TRANSFER]);
    let harness = Harness::new(&catalog);
    let token = plan(&harness, &transfer_inputs()).await;
    // A reviewer edits, reseals and re-approves the capability: same tool, new content.
    let path = catalog.capability_path(TRANSFER);
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replace("max_steps: 14", "max_steps: 13");
    let sealed = cua_artifact::seal_source("transfer", &edited).unwrap();
    std::fs::write(&path, sealed.text).unwrap();
    catalog.approve(TRANSFER);
    let message = refused(
        &call(
            &harness,
            TRANSFER_TOOL,
            with_token(&transfer_inputs(), &token),
        )
        .await,
        "plan_approval_mismatch",
    );
    assert!(
        message.starts_with(
            "refused: the capability changed since it was planned (artifact_hash: planned \
             blake3:4e5d8496"
        ),
        "{message}"
    );
    assert_eq!(harness.opened(), 0);
}

#[tokio::test]
async fn a_plan_approval_does_not_carry_to_another_overlay() {
    let catalog = TempCatalog::with_approved(&[SAVINGS, TRANSFER]);
    let planned_here = Harness::new(&catalog);
    let token = plan(&planned_here, &transfer_inputs()).await;
    // Same key, same catalog, another base URL: another overlay.
    let elsewhere = Harness::with(&catalog, "http://127.0.0.1:8812", DeadSurfaces::default());
    let message = refused(
        &call(
            &elsewhere,
            TRANSFER_TOOL,
            with_token(&transfer_inputs(), &token),
        )
        .await,
        "plan_approval_mismatch",
    );
    assert!(
        message.starts_with("refused: the tenant overlay changed since it was planned"),
        "{message}"
    );
    assert_eq!(elsewhere.opened(), 0);
}

#[tokio::test]
async fn a_matching_plan_approval_runs_once() {
    let catalog = TempCatalog::with_approved(&[SAVINGS, TRANSFER]);
    let harness = Harness::new(&catalog);
    let token = plan(&harness, &transfer_inputs()).await;
    let first = call(
        &harness,
        TRANSFER_TOOL,
        with_token(&transfer_inputs(), &token),
    )
    .await;
    // The run reached the executor; its surface answers nothing, so it fails with evidence.
    assert_eq!(harness.opened(), 1);
    assert_eq!(first.is_error, Some(true), "{first:?}");
    let content = structured(&first);
    assert_eq!(content["status"], "failed", "{content:#}");
    assert_eq!(
        content["error"]["code"], "surface_unavailable",
        "{content:#}"
    );
    let evidence = content["run"]["evidence"].as_str().unwrap();
    assert!(
        std::path::Path::new(evidence).join("trace.jsonl").is_file(),
        "{evidence}"
    );
    let again = call(
        &harness,
        TRANSFER_TOOL,
        with_token(&transfer_inputs(), &token),
    )
    .await;
    let message = refused(&again, "plan_approval_used");
    assert!(message.contains("plan-000001"), "{message}");
    assert_eq!(harness.opened(), 1);
}

#[tokio::test]
async fn no_surface_is_a_refusal_that_names_the_install_step() {
    let catalog = TempCatalog::with_approved(&[SAVINGS]);
    let harness = Harness::with(
        &catalog,
        BASE_URL,
        DeadSurfaces {
            refuse_to_open: true,
            ..DeadSurfaces::default()
        },
    );
    let result = call(
        &harness,
        "corebank_member_savings_balance",
        arguments(json!({"member_id": "12345"})),
    )
    .await;
    let message = refused(&result, "chromium_missing");
    assert!(message.contains("apt-get install -y chromium"), "{message}");
}

#[tokio::test]
async fn a_plan_approval_is_honoured_until_the_last_second_of_its_lifetime() {
    let catalog = TempCatalog::with_approved(&[SAVINGS, TRANSFER]);
    let harness = Harness::new(&catalog);
    let token = plan(&harness, &transfer_inputs()).await;
    harness
        .clock
        .advance(DEFAULT_PLAN_TTL - Duration::from_secs(1));
    let result = call(
        &harness,
        TRANSFER_TOOL,
        with_token(&transfer_inputs(), &token),
    )
    .await;
    assert_eq!(structured(&result)["status"], "failed", "{result:?}");
    assert_eq!(harness.opened(), 1);
}
