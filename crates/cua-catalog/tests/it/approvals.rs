//! Approvals pin the exact content hash: approving writes the pin, editing the artifact (resealed
//! or not) voids it, revoking keeps the pin and records who withdrew it. Only sealed artifacts
//! can be approved.

use std::fmt::Write as _;

use cua_catalog::{ApprovalBasis, CatalogError, ReviewStatus, RevokeRequest};

use crate::{AT, Fixture, SAVINGS, TRANSFER, reference_of};

fn state(fixture: &Fixture, reference: &str) -> String {
    let entry = fixture.entry(reference);
    format!("{} / {}", entry.integrity.label(), entry.review.label())
}

#[test]
fn approval_pins_the_hash_and_an_edit_voids_it() {
    let fixture = Fixture::new();
    let mut out = String::new();
    writeln!(out, "before:            {}", state(&fixture, SAVINGS)).unwrap();

    fixture.approve(SAVINGS, false).unwrap();
    writeln!(out, "approved:          {}", state(&fixture, SAVINGS)).unwrap();
    let approval_file = fixture
        .config()
        .capabilities
        .join(format!("{SAVINGS}.approval.yaml"));
    writeln!(
        out,
        "approval file:\n{}",
        std::fs::read_to_string(&approval_file).unwrap()
    )
    .unwrap();
    let answer = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), None)
        .unwrap();
    assert!(answer.approved);
    assert_eq!(answer.basis, ApprovalBasis::Direct);
    writeln!(out, "answer:            {}", answer.reason).unwrap();

    // Other capabilities are untouched.
    writeln!(out, "transfer:          {}", state(&fixture, TRANSFER)).unwrap();

    // An edit that is resealed: integrity is fine, the approval no longer counts.
    fixture.edit_and_reseal(SAVINGS, "max_steps: 12", "max_steps: 11");
    writeln!(out, "edited, resealed:  {}", state(&fixture, SAVINGS)).unwrap();
    let entry = fixture.entry(SAVINGS);
    let ReviewStatus::Stale {
        pinned, current, ..
    } = &entry.review
    else {
        panic!("expected a stale approval, got {:?}", entry.review);
    };
    assert_ne!(Some(pinned), current.as_ref());
    let answer = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), None)
        .unwrap();
    assert!(!answer.approved);
    writeln!(out, "answer:            {}", answer.reason).unwrap();

    // Approving again pins the new hash.
    fixture.approve(SAVINGS, false).unwrap();
    writeln!(out, "re-approved:       {}", state(&fixture, SAVINGS)).unwrap();

    // An edit that is not resealed: tampered, and the approval is stale too.
    fixture.edit(SAVINGS, "max_steps: 11", "max_steps: 10");
    writeln!(out, "edited in place:   {}", state(&fixture, SAVINGS)).unwrap();
    insta::assert_snapshot!(out);
}

#[test]
fn only_a_sealed_artifact_can_be_approved() {
    let mut out = String::new();
    type Setup = fn(&Fixture);
    let cases: [(&str, Setup); 4] = [
        ("draft", |fixture| {
            let text = fixture.read(SAVINGS);
            let kept: Vec<&str> = text
                .lines()
                .filter(|line| !line.starts_with("content_hash:"))
                .collect();
            fixture.write(SAVINGS, &kept.join("\n"));
        }),
        ("tampered", |fixture| {
            fixture.edit(SAVINGS, "max_steps: 12", "max_steps: 13");
        }),
        ("invalid", |fixture| fixture.write(SAVINGS, "schema: [\n")),
        ("missing", |fixture| {
            std::fs::remove_file(fixture.capability_path(SAVINGS)).unwrap();
        }),
    ];
    for (name, setup) in cases {
        let fixture = Fixture::new();
        setup(&fixture);
        let error = fixture.approve(SAVINGS, false).unwrap_err();
        assert!(!error.is_refusal(), "{name} is a usage error (exit 2)");
        let approval_file = fixture
            .config()
            .capabilities
            .join(format!("{SAVINGS}.approval.yaml"));
        assert!(!approval_file.exists(), "{name}: nothing was written");
        writeln!(
            out,
            "{name}: [{}] {}",
            error.code(),
            fixture.clean(&error.to_string())
        )
        .unwrap();
    }
    let fixture = Fixture::new();
    let error = fixture
        .catalog
        .approve(&cua_catalog::ApproveRequest {
            reference: reference_of(SAVINGS),
            by: "  ".to_owned(),
            at: AT.to_owned(),
            notes: None,
            from_eval: false,
            tenant: None,
        })
        .unwrap_err();
    assert!(matches!(error, CatalogError::NoReviewer));
    writeln!(out, "no reviewer: [{}] {error}", error.code()).unwrap();
    insta::assert_snapshot!(out);
}

#[test]
fn revoke_keeps_the_pin_and_records_the_history() {
    let fixture = Fixture::new();
    let revoke = |notes: Option<&str>| {
        fixture.catalog.revoke(&RevokeRequest {
            reference: reference_of(SAVINGS),
            by: "maria".to_owned(),
            at: "2026-10-02T10:30:00.000000Z".to_owned(),
            notes: notes.map(str::to_owned),
            tenant: None,
        })
    };
    let error = revoke(None).unwrap_err();
    assert_eq!(error.code(), "nothing_to_revoke");

    fixture
        .catalog
        .approve(&cua_catalog::ApproveRequest {
            reference: reference_of(SAVINGS),
            by: "aditya".to_owned(),
            at: AT.to_owned(),
            notes: Some("walked through every step with the branch team".to_owned()),
            from_eval: false,
            tenant: None,
        })
        .unwrap();
    let pinned = fixture.entry(SAVINGS).approval.unwrap().content_hash;
    let recorded = revoke(Some("the branch reported a wrong balance")).unwrap();
    assert_eq!(recorded.approval.content_hash, pinned);
    assert!(recorded.previous.is_approved());
    assert_eq!(state(&fixture, SAVINGS), "sealed / revoked");
    let answer = fixture
        .catalog
        .approval_for(&reference_of(SAVINGS), None)
        .unwrap();
    assert!(!answer.approved);
    insta::assert_snapshot!(format!(
        "{}\nanswer: {}",
        std::fs::read_to_string(&recorded.path).unwrap(),
        answer.reason
    ));
}

#[test]
fn an_unreadable_approval_is_flagged_not_trusted() {
    let fixture = Fixture::new();
    let path = fixture
        .config()
        .capabilities
        .join(format!("{SAVINGS}.approval.yaml"));
    std::fs::write(
        &path,
        "schema: cua.capability_approval/v1\nstate: approved\n",
    )
    .unwrap();
    let entry = fixture.entry(SAVINGS);
    assert_eq!(entry.review.label(), "invalid approval");
    assert!(!entry.review.is_approved());

    // An approval of another capability, put beside this one, does not count either.
    fixture.approve(TRANSFER, false).unwrap();
    let transfer_approval = fixture
        .config()
        .capabilities
        .join(format!("{TRANSFER}.approval.yaml"));
    std::fs::copy(transfer_approval, &path).unwrap();
    let entry = fixture.entry(SAVINGS);
    let ReviewStatus::Invalid { reason } = &entry.review else {
        panic!("expected an invalid approval, got {:?}", entry.review);
    };
    assert_eq!(
        reason,
        "it approves corebank.member.transfer_funds@1.0.0, not corebank.member.savings_balance@1.0.0"
    );
}

#[test]
fn writes_leave_no_temporary_files() {
    let fixture = Fixture::new();
    fixture.approve(SAVINGS, false).unwrap();
    fixture.approve(SAVINGS, false).unwrap();
    let leftovers: Vec<String> = std::fs::read_dir(&fixture.config().capabilities)
        .unwrap()
        .map(|item| item.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect();
    assert_eq!(leftovers, Vec::<String>::new());
}
