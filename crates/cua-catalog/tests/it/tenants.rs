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
