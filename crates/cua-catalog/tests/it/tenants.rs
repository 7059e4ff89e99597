//! `approval_for(reference, tenant)`: the base's approval carries to a tenant only through a
//! substitution-only binding whose effective capability is re-derived and compared; every other
//! way is refused with its reason.

use std::fmt::Write as _;

use cua_artifact::{CapabilityApproval, TenantId, yaml};
use cua_catalog::{ApprovalBasis, Integrity};

use crate::{Fixture, SAVINGS, reference_of};

fn tenant(name: &str) -> TenantId {
    TenantId::parse(name).unwrap()
}

fn rewrite_approval(fixture: &Fixture, change: impl FnOnce(&mut CapabilityApproval)) {
    let path = fixture
        .config()
        .capabilities
        .join(format!("{SAVINGS}.approval.yaml"));
    let mut approval: CapabilityApproval =
        yaml::from_yaml(&std::fs::read_to_string(&path).unwrap()).unwrap();
    change(&mut approval);
    std::fs::write(&path, yaml::to_yaml(&approval).unwrap()).unwrap();
}

fn write_binding(fixture: &Fixture, tenant: &str, text: &str) {
    let directory = fixture.config().tenants.join(tenant);
    std::fs::create_dir_all(&directory).unwrap();
    std::fs::write(directory.join("corebank.member.savings_balance.yaml"), text).unwrap();
}

struct Case {
    name: &'static str,
    tenant: &'static str,
    approve_base: bool,
    setup: fn(&Fixture),
    approved: bool,
}

const CASES: [Case; 9] = [
    Case {
        name: "substitution-only binding, base approved",
        tenant: "first-valley",
        approve_base: true,
        setup: |_| {},
        approved: true,
    },
    Case {
        name: "overriding binding, base approved",
        tenant: "northgate-fcu",
        approve_base: true,
        setup: |_| {},
        approved: false,
    },
    Case {
        name: "no binding: the tenant runs the base",
        tenant: "riverside-cu",
        approve_base: true,
        setup: |_| {},
        approved: true,
    },
    Case {
        name: "substitution-only binding, base not approved",
        tenant: "first-valley",
        approve_base: false,
        setup: |_| {},
        approved: false,
    },
    Case {
        name: "substitution-only binding, base edited and resealed after approval",
        tenant: "first-valley",
        approve_base: true,
        setup: |fixture| fixture.edit_and_reseal(SAVINGS, "max_steps: 12", "max_steps: 11"),
        approved: false,
    },
    Case {
        name: "substitution-only binding, base tampered after approval",
        tenant: "first-valley",
        approve_base: true,
        setup: |fixture| fixture.edit(SAVINGS, "max_steps: 12", "max_steps: 11"),
        approved: false,
    },
    Case {
        name: "approval scoped to other tenants",
        tenant: "first-valley",
        approve_base: true,
        setup: |fixture| {
            rewrite_approval(fixture, |approval| {
                approval.scope.tenants = vec![tenant("northgate-fcu")];
            });
        },
        approved: false,
    },
    Case {
        name: "binding pins another version",
        tenant: "first-valley",
        approve_base: true,
        setup: |fixture| {
            write_binding(
                fixture,
                "first-valley",
                "schema: cua.tenant_binding/v1\ncapability: corebank.member.savings_balance@1.1.0\n\
                 tenant: first-valley\nvars: {base_url: 'http://127.0.0.1:8811'}\n",
            );
        },
        approved: false,
    },
    Case {
        name: "binding overrides a step the base does not have",
        tenant: "first-valley",
        approve_base: true,
        setup: |fixture| {
            write_binding(
                fixture,
                "first-valley",
                "schema: cua.tenant_binding/v1\ncapability: corebank.member.savings_balance@1.0.0\n\
                 tenant: first-valley\noverrides:\n  read_overdraft:\n    wait: {timeout_ms: 100}\n",
            );
        },
        approved: false,
    },
];

#[test]
fn carry_over_only_through_a_substitution_only_binding() {
    let mut out = String::new();
    for case in CASES {
        let fixture = Fixture::new();
        if case.approve_base {
            fixture.approve(SAVINGS, false).unwrap();
        }
        (case.setup)(&fixture);
        let answer = fixture
            .catalog
            .approval_for(&reference_of(SAVINGS), Some(&tenant(case.tenant)))
            .unwrap();
        assert_eq!(
            answer.approved, case.approved,
            "{}: {}",
            case.name, answer.reason
        );
        assert_eq!(answer.tenant, Some(tenant(case.tenant)));
        writeln!(
            out,
            "{} ({}):\n  approved: {}, basis: {:?}\n  {}",
            case.name,
            case.tenant,
            answer.approved,
            answer.basis,
            fixture.clean(&answer.reason)
        )
        .unwrap();
    }
    insta::assert_snapshot!(out);
}

#[test]
fn the_carried_answer_names_the_effective_hash_not_the_base_hash() {
    let fixture = Fixture::new();
    fixture.approve(SAVINGS, false).unwrap();
    let Integrity::Sealed { content_hash: base } = fixture.entry(SAVINGS).integrity else {
        panic!("the fixture is sealed");
    };
    let answer = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), Some(&tenant("first-valley")))
        .unwrap();
    assert_eq!(answer.basis, ApprovalBasis::CarriedFromBase);
    let effective = answer.content_hash.unwrap();
    assert_ne!(effective, base);

    // The same binding applied by hand derives the same effective capability.
    let binding = fixture
        .catalog
        .binding(&tenant("first-valley"), &reference_of(SAVINGS))
        .unwrap()
        .unwrap();
    let base_capability = fixture.catalog.load(&reference_of(SAVINGS)).unwrap();
    let applied = binding.apply(&base_capability).unwrap();
    assert_eq!(applied.content_hash, Some(effective));
}

#[test]
fn a_binding_in_the_wrong_tenant_directory_is_invalid() {
    let fixture = Fixture::new();
    let text = std::fs::read_to_string(
        fixture
            .config()
            .tenants
            .join("first-valley/corebank.member.savings_balance.yaml"),
    )
    .unwrap();
    write_binding(&fixture, "riverside-cu", &text);
    let error = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), Some(&tenant("riverside-cu")))
        .unwrap_err();
    assert_eq!(error.code(), "invalid_document");
    assert_eq!(
        fixture.clean(&error.to_string()),
        "ROOT/tenants/riverside-cu/corebank.member.savings_balance.yaml is not a valid document: \
         the binding is for tenant first-valley, but it sits in riverside-cu's directory"
    );
}

fn approve_for(
    fixture: &Fixture,
    tenant_name: &str,
) -> Result<cua_catalog::DecisionRecorded, cua_catalog::CatalogError> {
    fixture.catalog.approve(&cua_catalog::ApproveRequest {
        reference: reference_of(SAVINGS),
        by: "tenant-reviewer".to_owned(),
        at: "2026-10-02T09:00:00.000000Z".to_owned(),
        notes: None,
        from_eval: false,
        tenant: Some(tenant(tenant_name)),
    })
}

#[test]
fn a_tenant_approves_what_its_binding_makes_and_nothing_else() {
    let fixture = Fixture::new();
    fixture.approve(SAVINGS, false).unwrap();
    let northgate = tenant("northgate-fcu");
    let before = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), Some(&northgate))
        .unwrap();
    assert!(!before.approved, "an overriding binding carries nothing");

    let decision = approve_for(&fixture, "northgate-fcu").unwrap();
    assert_eq!(
        decision.path,
        fixture
            .config()
            .tenants
            .join(format!("northgate-fcu/{SAVINGS}.approval.yaml"))
    );
    assert_eq!(decision.approval.scope.tenants, vec![northgate.clone()]);
    // Pinned to what the policy re-derives: the binding applied to the base.
    let binding = fixture
        .catalog
        .binding(&northgate, &reference_of(SAVINGS))
        .unwrap()
        .unwrap();
    let base = fixture.catalog.load(&reference_of(SAVINGS)).unwrap();
    let reviewed = binding.reviewed(&base).unwrap();
    assert_eq!(
        Some(decision.approval.content_hash.clone()),
        reviewed.content_hash
    );

    let after = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), Some(&northgate))
        .unwrap();
    assert!(after.approved, "{}", after.reason);
    assert_eq!(after.basis, ApprovalBasis::Tenant);
    assert_eq!(
        fixture
            .catalog
            .approval_record(&reference_of(SAVINGS), Some(&northgate))
            .unwrap(),
        Some(decision.approval.clone())
    );
    // The base's own approval and another tenant's carry-over are untouched.
    let base_answer = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), None)
        .unwrap();
    assert_eq!(base_answer.basis, ApprovalBasis::Direct);
    let first_valley = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), Some(&tenant("first-valley")))
        .unwrap();
    assert_eq!(first_valley.basis, ApprovalBasis::CarriedFromBase);

    // A reviewed change to the base voids the tenant's approval: it names the new hash.
    fixture.edit_and_reseal(SAVINGS, "max_steps: 12", "max_steps: 11");
    let stale = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), Some(&northgate))
        .unwrap();
    assert!(!stale.approved);
    assert!(
        stale.reason.contains("approve it again"),
        "{}",
        stale.reason
    );
}

#[test]
fn a_tenants_revocation_stands_over_the_bases_approval() {
    let fixture = Fixture::new();
    fixture.approve(SAVINGS, false).unwrap();
    approve_for(&fixture, "northgate-fcu").unwrap();
    let revoked = fixture
        .catalog
        .revoke(&cua_catalog::RevokeRequest {
            reference: reference_of(SAVINGS),
            by: "tenant-reviewer".to_owned(),
            at: "2026-10-03T09:00:00.000000Z".to_owned(),
            notes: Some("Northgate's confirm moved".to_owned()),
            tenant: Some(tenant("northgate-fcu")),
        })
        .unwrap();
    assert_eq!(revoked.approval.state, cua_artifact::ApprovalState::Revoked);
    let answer = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), Some(&tenant("northgate-fcu")))
        .unwrap();
    assert!(!answer.approved);
    assert!(answer.reason.contains("revoked"), "{}", answer.reason);
    assert!(
        fixture
            .catalog
            .approval_for(&reference_of(SAVINGS), None)
            .unwrap()
            .approved,
        "the base's own approval stands"
    );

    // First Valley's binding only substitutes vars, so the base's approval would carry over:
    // its own revocation still stands over it.
    let first_valley = tenant("first-valley");
    let carried = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), Some(&first_valley))
        .unwrap();
    assert!(carried.approved, "{}", carried.reason);
    approve_for(&fixture, "first-valley").unwrap();
    revoke_for(&fixture, "first-valley");
    let answer = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), Some(&first_valley))
        .unwrap();
    assert!(!answer.approved, "{}", answer.reason);
    let record = fixture
        .catalog
        .approval_record(&reference_of(SAVINGS), Some(&first_valley))
        .unwrap()
        .unwrap();
    assert_eq!(record.state, cua_artifact::ApprovalState::Revoked);
}

fn revoke_for(fixture: &Fixture, tenant_name: &str) -> cua_catalog::DecisionRecorded {
    fixture
        .catalog
        .revoke(&cua_catalog::RevokeRequest {
            reference: reference_of(SAVINGS),
            by: "tenant-reviewer".to_owned(),
            at: "2026-10-03T09:00:00.000000Z".to_owned(),
            notes: None,
            tenant: Some(tenant(tenant_name)),
        })
        .unwrap()
}

/// A tenant approval left behind when its binding is removed is never presented for a run, as
/// `approval_for` never judges by it, and it can still be revoked.
#[test]
fn a_tenant_approval_without_its_binding_is_never_presented_and_can_be_revoked() {
    let fixture = Fixture::new();
    let northgate = tenant("northgate-fcu");
    approve_for(&fixture, "northgate-fcu").unwrap();
    std::fs::remove_file(
        fixture
            .config()
            .tenants
            .join("northgate-fcu/corebank.member.savings_balance.yaml"),
    )
    .unwrap();
    assert_eq!(
        fixture
            .catalog
            .approval_record(&reference_of(SAVINGS), Some(&northgate))
            .unwrap(),
        None,
        "the base is not approved, and the leftover is not presented"
    );
    assert!(
        !fixture
            .catalog
            .approval_for(&reference_of(SAVINGS), Some(&northgate))
            .unwrap()
            .approved
    );
    let revoked = revoke_for(&fixture, "northgate-fcu");
    assert_eq!(revoked.approval.state, cua_artifact::ApprovalState::Revoked);
}

#[test]
fn a_tenant_without_a_binding_has_nothing_of_its_own_to_approve() {
    let fixture = Fixture::new();
    let error = approve_for(&fixture, "riverside-cu").unwrap_err();
    assert_eq!(error.code(), "no_binding", "{error}");
    assert!(error.to_string().contains("riverside-cu"), "{error}");
}
