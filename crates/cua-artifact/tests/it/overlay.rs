//! Tenant overlays: applying one yields a re-validated, resealed effective capability whose hash
//! covers the overlay; unknown steps and widening fail closed; approvals carry over only through
//! substitution-only bindings that re-derive exactly.

use std::collections::BTreeMap;

use cua_artifact::{
    ApprovalScope, ApprovalState, ArtifactError, Capability, CapabilityApproval, DiagnosticCode,
    Identifier, PolicyNarrowing, SealState, StepOverride, TargetOverride, TenantBinding,
    check_binding,
};

use crate::support::{MINIMAL, NORTHGATE_BINDINGS, minimal_with, read, reference};

fn northgate(file_name: &str) -> TenantBinding {
    TenantBinding::from_yaml(&read(&format!("tenants/northgate-fcu/{file_name}")))
        .expect("binding loads")
}

fn problems(result: Result<Capability, ArtifactError>) -> Vec<(DiagnosticCode, String)> {
    match result {
        Err(ArtifactError::Invalid(problems)) => problems
            .into_iter()
            .map(|problem| (problem.code, problem.path.to_string()))
            .collect(),
        other => panic!("expected problems, got {other:?}"),
    }
}

fn sealed_minimal() -> Capability {
    Capability::from_yaml(MINIMAL)
        .expect("MINIMAL loads")
        .sealed()
}

fn binding_for(base: &Capability) -> TenantBinding {
    TenantBinding {
        schema: Default::default(),
        capability: base.reference(),
        tenant: "northgate-fcu".parse().expect("a tenant id"),
        description: String::new(),
        vars: BTreeMap::new(),
        overrides: BTreeMap::new(),
        recovery_extra: Vec::new(),
        checkpoint: None,
        policy: None,
    }
}

#[test]
fn northgate_overlays_apply_and_reseal() {
    for file_name in NORTHGATE_BINDINGS {
        let binding = northgate(file_name);
        let base = reference(&binding.capability.file_name());
        let effective = binding
            .apply(&base)
            .unwrap_or_else(|error| panic!("{file_name}: {error}"));
        assert_eq!(effective.reference(), base.reference());
        assert_eq!(effective.validate(), vec![], "{file_name}");
        let SealState::Sealed(hash) = effective.seal_state() else {
            panic!("{file_name}: the effective capability is sealed")
        };
        assert_ne!(
            Some(&hash),
            base.content_hash.as_ref(),
            "{file_name}: the hash covers the overlay"
        );
        // Applying twice gives the same content: the effective hash is a function of base ⊕ overlay.
        assert_eq!(
            binding.apply(&base).expect("applies again").content_hash,
            Some(hash)
        );
    }
}

#[test]
fn the_savings_overlay_changes_exactly_what_it_says() {
    let binding = northgate("corebank.member.savings_balance.yaml");
    let base = reference("corebank.member.savings_balance@1.0.0.yaml");
    let effective = binding.apply(&base).expect("applies");
    let anchor = |capability: &Capability, step: &str| {
        capability
            .step(step)
            .and_then(|step| step.action.target())
            .and_then(|target| target.anchor.clone())
            .map(|anchor| anchor.text)
    };
    assert_eq!(
        anchor(&effective, "read_balance").as_deref(),
        Some("Savings Bal.")
    );
    assert_eq!(
        anchor(&effective, "read_status").as_deref(),
        Some("Acct Status")
    );
    assert_eq!(
        anchor(&effective, "read_as_of"),
        anchor(&base, "read_as_of")
    );
    let hint = effective
        .step("enter_member_id")
        .and_then(|step| step.action.target())
        .and_then(|target| target.hints.css.clone());
    assert_eq!(hint.as_deref(), Some(r#"input[name="member_num"]"#));
    // The field-merge kept everything the override did not name.
    let target = effective
        .step("enter_member_id")
        .and_then(|step| step.action.target())
        .expect("a target");
    assert_eq!(
        target.name.as_ref().map(|name| name.value.as_str()),
        Some("Member Number")
    );
    assert_eq!(effective.policy.max_duration_ms, 45_000);
    assert_eq!(effective.policy.max_steps, base.policy.max_steps);
    assert_ne!(effective.checkpoint, base.checkpoint);
    // Everything else is the base's.
    assert_eq!(effective.steps.len(), base.steps.len());
    assert_eq!(effective.outcomes, base.outcomes);
    assert_eq!(effective.recovery, base.recovery);
}

#[test]
fn the_transfer_overlay_keeps_the_confirm_irreversible_under_its_new_name() {
    let binding = northgate("corebank.member.transfer_funds.yaml");
    let base = reference("corebank.member.transfer_funds@1.0.0.yaml");
    let effective = binding.apply(&base).expect("applies");
    let post = effective.step("post_transfer").expect("the confirm step");
    assert_eq!(
        post.action
            .target()
            .and_then(|t| t.name.as_ref())
            .map(|n| n.value.as_str()),
        Some("Post Transfer")
    );
    assert_eq!(post.risk, cua_artifact::RiskTier::Irreversible);

    // An overlay that renamed the confirm to something irreversible on a step declared safe
    // would be caught when the effective capability is re-validated.
    let mut sneaky = binding.clone();
    let review = Identifier::parse("review_transfer").expect("an id");
    sneaky.overrides.insert(
        review,
        StepOverride {
            target: Some(TargetOverride {
                name: Some(cua_artifact::NameMatch {
                    value: "Post Transfer".into(),
                    match_mode: Default::default(),
                }),
                ..TargetOverride::default()
            }),
            ..StepOverride::default()
        },
    );
    let found = problems(sneaky.apply(&base));
    assert!(
        found
            .iter()
            .any(|(code, _)| *code == DiagnosticCode::UndeclaredRisk),
        "{found:?}"
    );
}

#[test]
fn an_override_naming_an_unknown_step_fails_closed() {
    let base = sealed_minimal();
    let mut binding = binding_for(&base);
    binding.overrides.insert(
        Identifier::parse("read_savings").expect("an id"),
        StepOverride::default(),
    );
    assert_eq!(
        problems(binding.apply(&base)),
        vec![(
            DiagnosticCode::OverlayUnknownStep,
            "overrides.read_savings".into()
        )]
    );
}

#[test]
fn a_target_override_on_a_step_without_a_target_fails_closed() {
    let text = minimal_with(
        "  - id: read_balance\n",
        "  - id: wait_for_record\n    action: {type: wait_for, until: {assert: text_present, value: Balance}}\n  - id: read_balance\n",
    )
    .replace("[navigate, type, click, extract, reload]", "[navigate, type, click, extract, reload, wait_for]");
    let base = Capability::from_yaml(&text).expect("loads").sealed();
    let mut binding = binding_for(&base);
    binding.overrides.insert(
        Identifier::parse("wait_for_record").expect("an id"),
        StepOverride {
            target: Some(TargetOverride {
                role: Some("cell".into()),
                ..TargetOverride::default()
            }),
            ..StepOverride::default()
        },
    );
    assert_eq!(
        problems(binding.apply(&base)),
        vec![(
            DiagnosticCode::OverlayTargetWithoutTarget,
            "overrides.wait_for_record.target".into()
        )]
    );
}

#[test]
fn an_overlay_cannot_widen_the_policy() {
    let base = sealed_minimal();
    let mut binding = binding_for(&base);
    binding.policy = Some(PolicyNarrowing {
        allowed_domains: Some(vec!["{base_url}".into(), "https://evil.example".into()]),
        allowed_actions: Some(vec![cua_artifact::ActionKind::Select]),
        max_steps: Some(41),
        max_duration_ms: Some(120_001),
    });
    let found = problems(binding.apply(&base));
    assert_eq!(
        found,
        vec![
            (
                DiagnosticCode::OverlayWidensPolicy,
                "policy.allowed_domains".into()
            ),
            (
                DiagnosticCode::OverlayWidensPolicy,
                "policy.allowed_actions".into()
            ),
            (
                DiagnosticCode::OverlayWidensPolicy,
                "policy.max_steps".into()
            ),
            (
                DiagnosticCode::OverlayWidensPolicy,
                "policy.max_duration_ms".into()
            ),
        ]
    );
    // Narrowing is fine, and narrowing so far that a step is no longer allowed is caught by
    // re-validating the effective capability.
    binding.policy = Some(PolicyNarrowing {
        allowed_actions: Some(vec![
            cua_artifact::ActionKind::Navigate,
            cua_artifact::ActionKind::Type,
        ]),
        ..PolicyNarrowing::default()
    });
    let found = problems(binding.apply(&base));
    assert!(
        found
            .iter()
            .all(|(code, _)| *code == DiagnosticCode::ActionOutsidePolicy),
        "{found:?}"
    );
    binding.policy = Some(PolicyNarrowing {
        max_steps: Some(3),
        max_duration_ms: Some(1_000),
        ..PolicyNarrowing::default()
    });
    let effective = binding.apply(&base).expect("narrowing applies");
    assert_eq!(
        (effective.policy.max_steps, effective.policy.max_duration_ms),
        (3, 1_000)
    );
}

#[test]
fn bases_must_match_and_be_sealed() {
    let base = sealed_minimal();
    let other = Capability::from_yaml(&minimal_with("version: 1.0.0", "version: 1.1.0"))
        .expect("loads")
        .sealed();
    let binding = binding_for(&base);
    assert!(matches!(
        binding.apply(&other),
        Err(ArtifactError::BindingMismatch { .. })
    ));
    let draft = Capability::from_yaml(MINIMAL).expect("loads");
    assert!(matches!(
        binding.apply(&draft),
        Err(ArtifactError::BaseNotSealed { .. })
    ));
    let mut tampered = base.clone();
    tampered.title.push('!');
    assert!(matches!(
        binding.apply(&tampered),
        Err(ArtifactError::Tampered { .. })
    ));
}

#[test]
fn vars_substitute_placeholders_and_approvals_carry_only_through_substitution() {
    let base = sealed_minimal();
    let mut binding = binding_for(&base);
    binding.vars.insert(
        Identifier::parse("base_url").expect("an id"),
        "http://127.0.0.1:8812".into(),
    );
    assert!(binding.substitutes_only());
    let effective = binding.apply(&base).expect("applies");
    assert_eq!(effective.entrypoint.url, "http://127.0.0.1:8812/");
    assert_eq!(effective.policy.allowed_domains, ["http://127.0.0.1:8812"]);
    assert_ne!(effective.content_hash, base.content_hash);

    let approval = CapabilityApproval {
        schema: Default::default(),
        capability: base.reference(),
        content_hash: base.content_hash.clone().expect("sealed"),
        state: ApprovalState::Approved,
        approved_by: Some("reviewer".into()),
        approved_at: Some("2026-09-15T18:27:33Z".into()),
        scope: ApprovalScope::default(),
        notes: String::new(),
    };
    assert_eq!(
        binding.carries_approval(&base, &approval, &effective),
        Ok(())
    );

    // Not if the effective capability is anything but what the binding derives.
    let mut forged = effective.clone();
    forged.title = "Something else".into();
    let forged = forged.sealed();
    assert!(binding.carries_approval(&base, &approval, &forged).is_err());
    // Not if the approval is for another content, or not approved.
    let revoked = CapabilityApproval {
        state: ApprovalState::Revoked,
        ..approval.clone()
    };
    assert!(
        binding
            .carries_approval(&base, &revoked, &effective)
            .is_err()
    );
    // Not if the binding does more than substitute.
    let mut overriding = binding.clone();
    overriding.overrides.insert(
        Identifier::parse("submit_search").expect("an id"),
        StepOverride::default(),
    );
    let effective = overriding.apply(&base).expect("applies");
    assert!(
        overriding
            .carries_approval(&base, &approval, &effective)
            .is_err()
    );
    // Not to a tenant the approval does not name.
    let elsewhere = CapabilityApproval {
        scope: ApprovalScope {
            unattended_replay: false,
            tenants: vec!["first-valley".parse().expect("a tenant")],
        },
        ..approval
    };
    let effective = binding.apply(&base).expect("applies");
    assert!(
        binding
            .carries_approval(&base, &elsewhere, &effective)
            .is_err()
    );
}

#[test]
fn overlay_diagnostics_point_into_the_binding() {
    let base = reference("corebank.member.savings_balance@1.0.0.yaml");
    let text = read("tenants/northgate-fcu/corebank.member.savings_balance.yaml")
        .replace("  read_status:", "  read_state:");
    let binding = TenantBinding::from_yaml(&text).expect("parses");
    let diagnostics =
        check_binding("northgate.yaml", &text, &binding, &base).expect_err("an unknown step");
    insta::assert_snapshot!(cua_artifact::render_plain(&diagnostics));
}

#[test]
fn problems_of_the_effective_capability_are_placed_in_the_binding_where_they_can_be() {
    let base = sealed_minimal();
    let text = "schema: cua.tenant_binding/v1
capability: acme.member.lookup@1.0.0
tenant: northgate-fcu
overrides:
  submit_search:
    target: {role: Button}
checkpoint: {assert: url_matches, pattern: '('}
";
    let binding = TenantBinding::from_yaml(text).expect("parses");
    // Applied directly, every problem of the result says it is one, at its path in the result.
    let found: Vec<String> = match binding.apply(&base) {
        Err(ArtifactError::Invalid(problems)) => problems
            .into_iter()
            .map(|problem| format!("{} {}", problem.path, problem.message))
            .collect(),
        other => panic!("expected problems, got {other:?}"),
    };
    assert_eq!(
        found,
        [
            "steps[1].action.target.role effective: role \"Button\" is not a role name",
            "checkpoint.pattern effective: the regex \"(\" does not compile: unclosed group",
        ]
    );
    // Checked against the binding's text: the checkpoint's pattern is in the binding and is
    // pointed at; the step's role is not (the override is), so that one is reported on the
    // binding as a whole, naming its path in the effective capability.
    let diagnostics = check_binding("binding.yaml", text, &binding, &base).expect_err("invalid");
    let placed: Vec<String> = diagnostics
        .iter()
        .map(|diagnostic| {
            format!(
                "{} ({}) {}",
                diagnostic.position(),
                diagnostic.path,
                diagnostic.message
            )
        })
        .collect();
    assert_eq!(
        placed,
        [
            "binding.yaml:1:1 ((document)) effective: role \"Button\" is not a role name (at steps[1].action.target.role)",
            "binding.yaml:7:44 (checkpoint.pattern) effective: the regex \"(\" does not compile: unclosed group",
        ]
    );
}

#[test]
fn what_a_tenant_approval_reviews_leaves_out_only_the_base_url() {
    let text = minimal_with("title: Look up a member", "title: Look up a {member}");
    let base = Capability::from_yaml(&text).expect("loads").sealed();
    let mut binding = binding_for(&base);
    binding.vars.insert(
        Identifier::parse("base_url").expect("an id"),
        "http://127.0.0.1:8812".into(),
    );
    binding.vars.insert(
        Identifier::parse("member").expect("an id"),
        "shareholder".into(),
    );
    let reviewed = binding.reviewed(&base).expect("applies");
    assert_eq!(reviewed.title, "Look up a shareholder");
    assert_eq!(reviewed.entrypoint.url, "{base_url}/");
    assert_eq!(reviewed.policy.allowed_domains, ["{base_url}"]);
    let effective = binding.apply(&base).expect("applies");
    assert_eq!(effective.title, "Look up a shareholder");
    assert_eq!(effective.entrypoint.url, "http://127.0.0.1:8812/");
    assert_ne!(reviewed.content_hash, effective.content_hash);
}

#[test]
fn an_approval_does_not_carry_to_an_effective_capability_edited_after_sealing() {
    let base = sealed_minimal();
    let binding = binding_for(&base);
    let approval = CapabilityApproval {
        schema: Default::default(),
        capability: base.reference(),
        content_hash: base.content_hash.clone().expect("sealed"),
        state: ApprovalState::Approved,
        approved_by: Some("reviewer".into()),
        approved_at: Some("2026-09-15T18:27:33Z".into()),
        scope: ApprovalScope::default(),
        notes: String::new(),
    };
    let effective = binding.apply(&base).expect("applies");
    assert_eq!(
        binding.carries_approval(&base, &approval, &effective),
        Ok(())
    );
    // The claimed hash is still the derived one, but the content no longer is.
    let mut edited = effective.clone();
    edited.title = "Something else".into();
    assert_eq!(edited.content_hash, effective.content_hash);
    assert_eq!(
        binding.carries_approval(&base, &approval, &edited),
        Err("the effective capability is not what this binding derives from this base".to_owned())
    );
}

#[test]
fn an_overlay_may_keep_the_policy_budgets_exactly() {
    let base = sealed_minimal();
    let mut binding = binding_for(&base);
    binding.policy = Some(PolicyNarrowing {
        max_steps: Some(base.policy.max_steps),
        max_duration_ms: Some(base.policy.max_duration_ms),
        ..PolicyNarrowing::default()
    });
    let effective = binding
        .apply(&base)
        .expect("the same budgets are no widening");
    assert_eq!(effective.policy, base.policy);
}
