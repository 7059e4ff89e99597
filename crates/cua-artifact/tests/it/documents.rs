//! Approvals, evaluations and run records: their behaviour beyond parsing.

use cua_artifact::{
    CapabilityApproval, CapabilityEvaluation, ContentHash, DiagnosticCode, DocumentKind,
    ResolutionRecord, ResolutionStrategy, RunRecord, RunStatus, check_source, yaml::from_yaml,
};

const EVALUATION: &str = "schema: cua.capability_evaluation/v1
capability: corebank.member.savings_balance@1.0.0
content_hash: blake3:713b2dda4d72825177885d079246a228718554f1687c7635a51d09f663409682
suite: cross_tenant
runs: 20
successes: 14
business_outcomes: 6
needs_human: 0
failures: 0
wrong_actions: 0
unauthorized_dispatches: 0
ambiguity_refusals: 0
determinism_holds: true
mean_drift: 0.05
strategy_mix: {semantic_exact: 40, structural_anchor: 60}
fallback_rate: 0.0
";

#[test]
fn approvals_cover_exactly_their_pinned_hash() {
    let text = "schema: cua.capability_approval/v1
capability: corebank.member.savings_balance@1.0.0
content_hash: blake3:713b2dda4d72825177885d079246a228718554f1687c7635a51d09f663409682
state: approved
approved_by: aditya
";
    let approval: CapabilityApproval = from_yaml(text).expect("parses");
    let pinned = approval.content_hash.clone();
    let other = ContentHash::of_bytes(b"another content");
    assert!(approval.covers(&pinned));
    assert!(!approval.covers(&other));
    assert!(
        !approval.permits_unattended_replay(&pinned),
        "unattended replay is opt-in"
    );
    assert!(check_source("approval.yaml", text).is_valid());
    // An approval is always pinned: no hash, no approval.
    let unpinned = text.replace(
        "content_hash: blake3:713b2dda4d72825177885d079246a228718554f1687c7635a51d09f663409682\n",
        "",
    );
    let checked = check_source("approval.yaml", &unpinned);
    assert_eq!(
        checked
            .diagnostics
            .iter()
            .map(|d| d.code)
            .collect::<Vec<_>>(),
        [DiagnosticCode::MissingKey]
    );
}

#[test]
fn evaluations_recommend_but_never_approve() {
    let evaluation: CapabilityEvaluation = from_yaml(EVALUATION).expect("parses");
    assert_eq!(evaluation.validate(), vec![]);
    assert_eq!(evaluation.stability_score(), 1.0);
    assert!(evaluation.is_trustworthy());
    let (recommended, why) = CapabilityApproval::recommend(&evaluation);
    assert!(recommended, "{why}");
    for (change, reason) in [
        ("wrong_actions: 0", "wrong_actions: 1"),
        ("runs: 20\nsuccesses: 14", "runs: 4\nsuccesses: 0"),
        ("determinism_holds: true", "determinism_holds: false"),
        ("determinism_holds: true", "determinism_holds: null"),
        ("unauthorized_dispatches: 0", "unauthorized_dispatches: 1"),
        ("unauthorized_dispatches: 0\n", ""),
        ("failures: 0", "failures: 2"),
    ] {
        let mut text = EVALUATION.replace(change, reason);
        if reason == "failures: 2" {
            text = text.replace("successes: 14", "successes: 12");
        }
        let evaluation: CapabilityEvaluation = from_yaml(&text).expect("parses");
        assert!(!CapabilityApproval::recommend(&evaluation).0, "{reason}");
    }
}

#[test]
fn run_records_project_drift_and_authorization() {
    let record = RunRecord {
        schema: Default::default(),
        run_id: "run-1".into(),
        kind: cua_artifact::RunKind::Replay,
        capability: Some(
            "corebank.member.savings_balance@1.0.0"
                .parse()
                .expect("a reference"),
        ),
        capability_content_hash: None,
        sealed_content_hash: None,
        bound_by: None,
        tenant: None,
        goal: None,
        inputs: Default::default(),
        steps: Vec::new(),
        result: None,
        started_at: "2026-09-30T22:07:14Z".into(),
        duration_ms: 10,
        evidence_ref: "evidence/runs/run-1".into(),
        model_name: None,
        tokens_used: None,
        resolver_config_hash: None,
        human_actions: 0,
        lease_transitions: Vec::new(),
    };
    assert_eq!(record.drift_score(), 0.0);
    assert_eq!(record.unauthorized_dispatches(), 0);
    let resolution = |recorded, used| ResolutionRecord {
        target_description: "cell adjacent_to \"Savings Balance\"".into(),
        strategy_recorded: recorded,
        strategy_used: used,
        resolved_node_id: None,
        candidates_considered: 1,
        ambiguity_score: 0.0,
        identity_verified: None,
    };
    use ResolutionStrategy::*;
    assert!(resolution(Some(SemanticExact), Some(StructuralAnchor)).drifted());
    assert!(!resolution(Some(StructuralAnchor), Some(SemanticExact)).drifted());
    assert!(!resolution(None, Some(OrdinalInRegion)).drifted());
    assert_eq!(SemanticExact.rank(), 0);
    assert_eq!(Vision.rank(), 6);
    let text = cua_artifact::yaml::to_yaml(&record).expect("dumps");
    let checked = check_source("run.yaml", &text);
    assert_eq!(checked.kind, Some(DocumentKind::RunRecord));
    assert!(
        checked.is_valid(),
        "{}",
        cua_artifact::render_plain(&checked.diagnostics)
    );
    assert_eq!(RunStatus::BusinessOutcome.as_str(), "business_outcome");
}

#[test]
fn an_empty_name_or_anchor_is_refused_with_the_form_for_unnamed_controls() {
    let checked = cua_artifact::check_source(
        "minimal.yaml",
        &crate::support::minimal_with(
            "target: {role: textbox, name: {value: Member Number}}",
            "target: {role: textbox, name: {value: '', match: normalized}}",
        ),
    );
    let messages: Vec<String> = checked
        .diagnostics
        .iter()
        .map(|diagnostic| format!("{} | {}", diagnostic.message, diagnostic.help))
        .collect();
    assert_eq!(
        messages,
        [
            "an empty name with `match: normalized` matches nothing | an unnamed control is `name: {value: \"\", match: exact}` (the node has no accessible name); better still, find it through its label with `anchor: {relation: row_of, text: …}`"
        ]
    );
    let checked = cua_artifact::check_source(
        "minimal.yaml",
        &crate::support::minimal_with(
            "target: {role: textbox, name: {value: Member Number}}",
            "target: {role: textbox, name: {value: '', match: exact}}",
        ),
    );
    assert!(
        checked.is_valid(),
        "{}",
        cua_artifact::render_plain(&checked.diagnostics)
    );
    let checked = cua_artifact::check_source(
        "minimal.yaml",
        &crate::support::minimal_with("text: Balance}}", "text: ' '}}"),
    );
    assert_eq!(
        checked
            .diagnostics
            .iter()
            .map(|d| d.message.as_str())
            .collect::<Vec<_>>(),
        ["an anchor with empty text anchors nothing"]
    );
}

#[test]
fn a_url_template_fixes_its_origin_and_carries_no_sensitive_value() {
    let codes = |url: &str, sensitive: bool| -> Vec<String> {
        let mut text = crate::support::minimal_with(
            "entrypoint: {url: \"{base_url}/\"}",
            &format!("entrypoint: {{url: \"{url}\"}}"),
        );
        if sensitive {
            text = text.replace(
                "- {name: member_id, pattern: \"^[0-9]{4,10}$\"}",
                "- {name: member_id, pattern: \"^[0-9]{4,10}$\", sensitive: true}",
            );
        }
        cua_artifact::check_source("minimal.yaml", &text)
            .diagnostics
            .iter()
            .map(|diagnostic| diagnostic.code.as_str().to_owned())
            .collect()
    };
    assert!(codes("{base_url}/member/{$input: member_id}", false).is_empty());
    assert_eq!(
        codes("{base_url}{$input: member_id}", false),
        ["cua::invalid_value"]
    );
    assert_eq!(
        codes("https:///{$input: member_id}/x", false),
        ["cua::invalid_value"]
    );
    assert_eq!(
        codes("{base_url}/member/{$input: member_id}", true),
        ["cua::secret_misplaced"]
    );
}

#[test]
fn document_kinds_are_named_by_their_short_name() {
    for kind in DocumentKind::ALL {
        assert_eq!(DocumentKind::from_name(kind.name()), Some(kind));
        assert_eq!(kind.to_string(), kind.name());
        assert_eq!(
            DocumentKind::from_schema_literal(kind.schema_literal()),
            Some(kind)
        );
    }
    assert_eq!(
        DocumentKind::ALL.map(|kind| kind.to_string()),
        [
            "capability",
            "tenant_binding",
            "approval",
            "evaluation",
            "run_record",
            "policy",
            "eval_suite"
        ]
    );
    assert_eq!(
        DocumentKind::from_name("run_record"),
        Some(DocumentKind::RunRecord)
    );
    // Only the short name: not the schema literal, not another spelling.
    for name in ["cua.policy/v1", "Policy", "tenant-binding", ""] {
        assert_eq!(DocumentKind::from_name(name), None, "{name}");
    }
}

/// An approval's `approved_at` and a run record's `started_at` are RFC 3339 instants, read by
/// jiff: anything else is a placed problem, never a string passed along.
#[test]
fn timestamps_in_documents_are_rfc_3339_instants() {
    let approval = |at: &str| {
        format!(
            "schema: cua.capability_approval/v1\ncapability: corebank.member.savings_balance@1.0.0\ncontent_hash: blake3:{}\nstate: approved\napproved_by: aditya\napproved_at: \"{at}\"\n",
            "0".repeat(64)
        )
    };
    for good in ["2026-10-01T09:00:00.000000Z", "2026-10-01T11:00:00+02:00"] {
        let checked = cua_artifact::check_source("a.yaml", &approval(good));
        assert!(
            checked.diagnostics.is_empty(),
            "{good}: {:?}",
            checked.diagnostics
        );
    }
    for bad in [
        "yesterday",
        "2026-10-01",
        "2026-02-30T09:00:00Z",
        "2026-10-01 09:00:00Z",
    ] {
        let checked = cua_artifact::check_source("a.yaml", &approval(bad));
        let paths: Vec<String> = checked
            .diagnostics
            .iter()
            .map(|diagnostic| format!("{} {}", diagnostic.code.as_str(), diagnostic.message))
            .collect();
        assert!(
            paths
                .iter()
                .any(|line| line.starts_with("cua::invalid_value")
                    && line.contains(&format!("`{bad}` is not an"))),
            "{bad}: {paths:?}"
        );
    }
}
