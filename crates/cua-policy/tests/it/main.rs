//! The policy engine against real documents: dispositions per actor, the lexicon, the
//! irreversible grant, capability narrowing and budgets.

#![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

use cua_artifact::{
    ActionKind, Actor, ApprovalSchema, ApprovalScope, ApprovalState, Capability,
    CapabilityApproval, RiskTier, SealState,
};
use cua_policy::{
    ActionRequest, Allowlist, AuthorizationContext, BrowserAction, BudgetExceeded, DenialCode,
    IrreversibleGrant, Lease, PolicyEngine, PolicyRules, ResolvedTarget, SurfaceAction,
};
use cua_snapshot::NodeId;

mod operators;

const TRANSFER: &str = r#"
schema: cua.capability/v1
id: corebank.member.transfer_test
version: 1.0.0
title: Transfer between a member's accounts
description: Test capability with one irreversible click.
surface:
  kind: legacy_web
  driver_capabilities: [semantic_tree]
  app: {vendor: acme-core, product: MemberDesk}
entrypoint: {url: "{base_url}/"}
steps:
  - id: confirm
    action:
      type: click
      target:
        role: button
        name: {value: Transfer Funds, match: exact}
    postcondition: {assert: text_present, value: Transfer Complete}
    risk: irreversible
    reconcile:
      capability: corebank.member.find_transfer_test@1.0.0
      not_done: [transfer_not_found]
checkpoint: {assert: text_present, value: Transfer Complete}
policy:
  allowed_domains: ["127.0.0.1:8811"]
  allowed_actions: [click, navigate]
  max_steps: 5
  max_duration_ms: 30000
"#;

fn engine() -> PolicyEngine {
    PolicyEngine::new(PolicyRules {
        allowlist: Allowlist::new(&["127.0.0.1".to_string()], &[]).unwrap(),
        allowed_actions: [
            ActionKind::Click,
            ActionKind::Type,
            ActionKind::Navigate,
            ActionKind::Extract,
        ]
        .into_iter()
        .collect(),
        human_only: [ActionKind::RawInput].into_iter().collect(),
    })
}

fn sealed_transfer() -> Capability {
    let capability = Capability::from_yaml(TRANSFER).unwrap().sealed();
    assert!(matches!(capability.seal_state(), SealState::Sealed(_)));
    capability
}

fn approval_of(capability: &Capability, state: ApprovalState) -> CapabilityApproval {
    let SealState::Sealed(hash) = capability.seal_state() else {
        panic!("sealed")
    };
    CapabilityApproval {
        schema: ApprovalSchema::V1,
        capability: capability.reference(),
        content_hash: hash,
        state,
        approved_by: Some("reviewer".to_string()),
        approved_at: None,
        scope: ApprovalScope::default(),
        notes: String::new(),
    }
}

fn click(actor: Actor, epoch: u64, name: &str, declared: Option<RiskTier>) -> ActionRequest {
    ActionRequest {
        actor,
        epoch,
        action: SurfaceAction::Browser(BrowserAction::Click),
        target: Some(ResolvedTarget {
            node_id: NodeId::new("content:/document[0]/button[0]"),
            role: "button".to_string(),
            name: name.to_string(),
        }),
        declared_risk: declared,
    }
}

/// One decision: who, what control, declared risk, confirmation, grant → allowed tier or denial.
fn check(
    request: ActionRequest,
    context: AuthorizationContext,
    expect: Result<RiskTier, DenialCode>,
) {
    let engine = engine();
    let mut lease = Lease::new(Actor::Automation);
    if request.actor == Actor::Human {
        lease.transfer(Actor::Human);
    }
    let described = format!("{request:?}");
    let got = engine
        .authorize_with(&lease, request, &context)
        .map(|authorized| authorized.risk())
        .map_err(|denial| denial.code);
    assert_eq!(got, expect, "{described}");
}

fn plain() -> AuthorizationContext {
    AuthorizationContext::default()
}

fn granted(opt_in: bool) -> AuthorizationContext {
    let capability = sealed_transfer();
    let approval = approval_of(&capability, ApprovalState::Approved);
    AuthorizationContext {
        confirmed: false,
        grant: IrreversibleGrant::evaluate(&capability, Some(&approval), None, opt_in),
    }
}

/// Issue #14: a tenant's own approval, presented with `--approval` to a run bound to no tenant,
/// grants nothing, even when the tenant's binding left the content as the base's.
#[test]
fn a_tenant_scoped_approval_grants_nothing_to_a_run_without_a_tenant() {
    let capability = sealed_transfer();
    let mut approval = approval_of(&capability, ApprovalState::Approved);
    approval.scope.tenants = vec![cua_artifact::TenantId::parse("northgate-fcu").unwrap()];
    let context = AuthorizationContext {
        confirmed: false,
        grant: IrreversibleGrant::evaluate(&capability, Some(&approval), None, true),
    };
    check(
        click(
            Actor::Automation,
            1,
            "Transfer Funds",
            Some(RiskTier::Irreversible),
        ),
        context,
        Err(DenialCode::PolicyDenied),
    );
}

#[test]
fn dispositions_per_actor_and_tier() {
    use Actor::{Agent, Automation, Human};
    use RiskTier::{Elevated, Irreversible, Safe};
    check(click(Automation, 1, "Search", None), plain(), Ok(Safe));
    // Elevated by the lexicon: automation needs the capability to declare it.
    check(
        click(Automation, 1, "Open Account", None),
        plain(),
        Err(DenialCode::PolicyDenied),
    );
    check(
        click(Automation, 1, "Open Account", Some(Elevated)),
        plain(),
        Ok(Elevated),
    );
    // Irreversible by the lexicon: declared, approved and opted in.
    check(
        click(Automation, 1, "Transfer Funds", Some(Irreversible)),
        granted(true),
        Ok(Irreversible),
    );
    check(
        click(Automation, 1, "Transfer Funds", Some(Irreversible)),
        granted(false),
        Err(DenialCode::PolicyDenied),
    );
    check(
        click(Automation, 1, "Transfer Funds", Some(Irreversible)),
        plain(),
        Err(DenialCode::PolicyDenied),
    );
    // A lexicon-only irreversible on a step declared lower is not covered by any approval.
    check(
        click(Automation, 1, "Transfer Funds", Some(Safe)),
        granted(true),
        Err(DenialCode::PolicyDenied),
    );
    // The discovering agent never takes irreversible actions, approval or not.
    check(
        click(Agent, 1, "Transfer Funds", Some(Irreversible)),
        granted(true),
        Err(DenialCode::PolicyDenied),
    );
    check(click(Agent, 1, "Search", None), plain(), Ok(Safe));
    // A human must confirm irreversible actions explicitly.
    check(
        click(Human, 2, "Transfer Funds", None),
        plain(),
        Err(DenialCode::NeedsConfirmation),
    );
    let confirmed = AuthorizationContext {
        confirmed: true,
        ..plain()
    };
    check(
        click(Human, 2, "Transfer Funds", None),
        confirmed,
        Ok(Irreversible),
    );
    check(click(Human, 2, "Open Account", None), plain(), Ok(Elevated));
}

#[test]
fn read_only_actions_are_safe_whatever_the_control_says() {
    let engine = engine();
    let target = ResolvedTarget {
        node_id: NodeId::new("content:/cell[0]"),
        role: "button".to_string(),
        name: "Delete Account".to_string(),
    };
    let assessment = engine.assess(ActionKind::Extract, Some(&target), None);
    assert_eq!(assessment.tier, RiskTier::Safe);
    assert_eq!(assessment.signals, vec!["read_only_action"]);
    let click = engine.assess(ActionKind::Click, Some(&target), Some(RiskTier::Elevated));
    assert_eq!(click.tier, RiskTier::Irreversible);
    assert_eq!(
        click.reason,
        r#"irreversible (lexicon:"delete", declared:elevated)"#
    );
}

#[test]
fn grants_are_pinned_to_the_recomputed_hash() {
    let gates = *engine().gates();
    let capability = sealed_transfer();
    let approved = approval_of(&capability, ApprovalState::Approved);
    let grant = IrreversibleGrant::evaluate(&capability, Some(&approved), None, true);
    assert_eq!(grant.refusal(&gates), None);
    assert!(
        grant
            .approved_under()
            .unwrap()
            .contains("approved by reviewer")
    );

    let revoked = approval_of(&capability, ApprovalState::Revoked);
    let refusal =
        IrreversibleGrant::evaluate(&capability, Some(&revoked), None, true).refusal(&gates);
    assert!(refusal.unwrap().contains("does not cover"));

    // Editing meaning without resealing: the declared hash no longer matches the content.
    let mut edited = capability.clone();
    edited.title = "Transfer everything".to_string();
    let refusal = IrreversibleGrant::evaluate(&edited, Some(&approved), None, true).refusal(&gates);
    assert!(refusal.unwrap().contains("tampered"));

    // Resealed after the edit: a new hash the approval does not pin.
    let resealed = edited.sealed();
    let refusal =
        IrreversibleGrant::evaluate(&resealed, Some(&approved), None, true).refusal(&gates);
    assert!(refusal.unwrap().contains("does not cover"));

    let refusal = IrreversibleGrant::evaluate(&capability, None, None, false)
        .refusal(&gates)
        .unwrap();
    assert!(
        refusal.contains("did not opt in") && refusal.contains("no approval"),
        "{refusal}"
    );
}

#[test]
fn preflight_applies_only_to_irreversible_capabilities() {
    let engine = engine();
    let capability = sealed_transfer();
    let err = engine
        .preflight_irreversible(&capability, &IrreversibleGrant::none())
        .unwrap_err();
    assert!(err.contains("did not opt in"), "{err}");
    let approval = approval_of(&capability, ApprovalState::Approved);
    let grant = IrreversibleGrant::evaluate(&capability, Some(&approval), None, true);
    assert_eq!(engine.preflight_irreversible(&capability, &grant), Ok(()));
    // A read-only capability needs no grant at all.
    let savings = Capability::from_yaml(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../capabilities/corebank.member.savings_balance@1.0.0.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(savings.max_risk() < RiskTier::Irreversible);
    assert_eq!(
        engine.preflight_irreversible(&savings, &IrreversibleGrant::none()),
        Ok(())
    );
}

/// An action the policy keeps for humans is the human's even when the vocabulary would let
/// automation take it.
#[test]
fn the_policys_own_human_only_list_binds_automation() {
    let engine = PolicyEngine::new(PolicyRules {
        allowlist: Allowlist::new(&["127.0.0.1".to_string()], &[]).unwrap(),
        allowed_actions: [ActionKind::Navigate].into_iter().collect(),
        human_only: [ActionKind::Navigate].into_iter().collect(),
    });
    let navigate = |actor, epoch| ActionRequest {
        actor,
        epoch,
        action: SurfaceAction::Browser(BrowserAction::Navigate {
            url: "http://127.0.0.1/".to_owned(),
        }),
        target: None,
        declared_risk: None,
    };
    let lease = Lease::new(Actor::Automation);
    assert_eq!(
        engine
            .authorize(&lease, navigate(Actor::Automation, lease.epoch))
            .unwrap_err()
            .code,
        DenialCode::PolicyDenied
    );
    let mut human = Lease::new(Actor::Automation);
    let _ = human.transfer(Actor::Human);
    assert!(
        engine
            .authorize(&human, navigate(Actor::Human, human.epoch))
            .is_ok()
    );
}

#[test]
fn a_capability_only_narrows() {
    let capability = sealed_transfer();
    let narrowed = engine().for_capability(&capability).unwrap();
    let lease = Lease::new(Actor::Automation);
    let navigate = |url: &str| ActionRequest {
        actor: Actor::Automation,
        epoch: 1,
        action: SurfaceAction::Browser(BrowserAction::Navigate {
            url: url.to_string(),
        }),
        target: None,
        declared_risk: None,
    };
    assert!(
        narrowed
            .authorize(&lease, navigate("http://127.0.0.1:8811/"))
            .is_ok()
    );
    let denial = narrowed
        .authorize(&lease, navigate("http://127.0.0.1:9999/"))
        .unwrap_err();
    assert_eq!(denial.code, DenialCode::NavigationBlocked);
    // `type` is allowed by the policy but not by this capability.
    let typing = ActionRequest {
        action: SurfaceAction::Browser(BrowserAction::Type {
            text: "x".to_string(),
            clear_first: true,
        }),
        ..click(Actor::Automation, 1, "Member Number", None)
    };
    assert_eq!(
        narrowed.authorize(&lease, typing).unwrap_err().code,
        DenialCode::PolicyDenied
    );
    // A fresh counter per run keeps decision ids deterministic.
    let first = narrowed
        .authorize(&lease, click(Actor::Automation, 1, "Search", None))
        .unwrap();
    let fresh = engine().for_capability(&capability).unwrap();
    let again = fresh
        .authorize(&lease, click(Actor::Automation, 1, "Search", None))
        .unwrap();
    assert_eq!(again.decision_id(), "dec-000001");
    assert_eq!(first.decision_id(), "dec-000004");
    // A nested run in the same trace numbers its decisions in a namespace of its own.
    let nested = fresh.with_decision_namespace("r1/sign on");
    let inner = nested
        .authorize(&lease, click(Actor::Automation, 1, "Search", None))
        .unwrap();
    assert_eq!(inner.decision_id(), "dec-r1signon-000001");
    let inner_clone = nested.clone();
    let cloned = inner_clone
        .authorize(&lease, click(Actor::Automation, 1, "Search", None))
        .unwrap();
    assert_eq!(cloned.decision_id(), "dec-r1signon-000001");
}

#[test]
fn budgets_take_the_smaller_cap_and_count_recovery() {
    let capability = sealed_transfer();
    let mut budget = engine().run_budget(&capability);
    assert_eq!(budget.check_steps(5), Ok(()));
    assert_eq!(
        budget.check_steps(6),
        Err(BudgetExceeded::Steps { steps: 6, max: 5 })
    );
    assert_eq!(budget.max_duration_ms(), 30_000);
    assert!(budget.check_elapsed(30_001).is_err());
    for spent in 1..=6 {
        assert_eq!(budget.charge_recovery(), Ok(spent));
    }
    assert_eq!(
        budget.charge_recovery(),
        Err(BudgetExceeded::Recovery { spent: 6, max: 6 })
    );
}

mod lease;

#[test]
fn answering_ok_to_a_confirm_is_judged_by_its_message() {
    use RiskTier::{Elevated, Irreversible};
    let accepting = |message: &str, declared| ActionRequest {
        action: SurfaceAction::Browser(BrowserAction::ClickAcceptingConfirm {
            confirm: message.to_string(),
        }),
        ..click(Actor::Automation, 1, "Remove", declared)
    };
    // The control is a harmless link name here; the dialog is what makes it a mutation.
    let harmless = |message: &str, declared| ActionRequest {
        target: Some(ResolvedTarget {
            node_id: NodeId::new("content:/document[0]/link[0]"),
            role: "link".to_string(),
            name: "Tidy up".to_string(),
        }),
        ..accepting(message, declared)
    };
    // Saying OK is never safe: undeclared, automation is refused.
    check(
        harmless("Are you sure?", None),
        plain(),
        Err(DenialCode::PolicyDenied),
    );
    check(
        harmless("Are you sure?", Some(Elevated)),
        plain(),
        Ok(Elevated),
    );
    // The message reads as a delete: irreversible, so only an approved, opted-in run says OK.
    let delete = "You are about to permanently delete these items. 'OK' to delete.";
    check(
        harmless(delete, Some(Elevated)),
        plain(),
        Err(DenialCode::PolicyDenied),
    );
    check(
        harmless(delete, Some(Irreversible)),
        plain(),
        Err(DenialCode::PolicyDenied),
    );
    check(
        harmless(delete, Some(Irreversible)),
        granted(true),
        Ok(Irreversible),
    );
    let assessment =
        engine().assess_with_confirm(ActionKind::Click, None, Some(Elevated), Some(delete));
    assert_eq!(
        assessment.reason,
        r#"irreversible (accepts_confirm, confirm_lexicon:"delete", declared:elevated)"#
    );
}

/// A click, a typing or a selection the resolver found no node for is denied, whoever asks:
/// the engine never lets an action land wherever the focus happens to be.
#[test]
fn an_action_on_a_node_without_a_resolved_node_is_denied() {
    // A human holds the lease from its transfer, one epoch on.
    for (actor, epoch) in [(Actor::Automation, 1), (Actor::Human, 2)] {
        let mut request = click(actor, epoch, "Search", Some(RiskTier::Safe));
        request.target = None;
        check(request, plain(), Err(DenialCode::PolicyDenied));
    }
}

/// A tenant's own approval grants the irreversible step only at the hash it pins: the
/// binding applied to the sealed base, as `cua validate` prints it. The same approval pinned
/// to anything else (here the base's own hash) grants nothing.
#[test]
fn a_tenants_own_approval_grants_only_at_the_binding_it_pins() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    let base = Capability::from_yaml(&read(
        "capabilities/corebank.member.transfer_funds@1.0.0.yaml",
    ))
    .unwrap();
    let binding = cua_artifact::TenantBinding::from_yaml(&read(
        "tenants/northgate-fcu/corebank.member.transfer_funds.yaml",
    ))
    .unwrap();
    let capability = binding.apply(&base).unwrap();
    let reviewed = binding.reviewed(&base).unwrap().content_hash.unwrap();
    let SealState::Sealed(base_hash) = base.seal_state() else {
        panic!("the base is sealed")
    };
    assert_ne!(reviewed, base_hash);
    let gates = *engine().gates();
    let scoped = |hash, tenants| {
        let mut approval = approval_of(&base, ApprovalState::Approved);
        approval.content_hash = hash;
        approval.scope.tenants = tenants;
        IrreversibleGrant::evaluate(
            &capability,
            Some(&approval),
            Some(cua_policy::BoundFrom {
                base: &base,
                binding: &binding,
            }),
            true,
        )
        .refusal(&gates)
    };
    let grant = |hash| scoped(hash, vec![binding.tenant.clone()]);
    assert_eq!(grant(reviewed.clone()), None);
    let refusal = grant(base_hash).expect("an approval of another hash grants nothing");
    assert!(refusal.contains("does not cover"), "{refusal}");
    // Pinned to the binding but scoped to no tenant: not the tenant's approval.
    assert!(scoped(reviewed, Vec::new()).is_some());
}
