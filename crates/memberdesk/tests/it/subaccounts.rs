//! Opening a sub-account: the reference, the new grid row, the minimum deposit.

use memberdesk::{Money, Variant};

use crate::pages::grid_rows;
use crate::support::{Session, start};

/// Field names (type, deposit), heading, button.
fn form(variant: Variant) -> (&'static str, &'static str, &'static str, &'static str) {
    match variant {
        Variant::FirstValley => ("accttype", "initdep", "Confirmation", "Open Account"),
        Variant::NorthgateFcu => (
            "acct_kind",
            "open_amt",
            "Request Received",
            "Submit Request",
        ),
    }
}

async fn check_open(
    variant: Variant,
    member: &str,
    account_type: &str,
    deposit: &str,
    expect: Result<[&str; 5], &str>,
) {
    let fixture = start(variant).await;
    let (type_field, deposit_field, done_heading, button) = form(variant);
    let mut session = Session::signed_on(&fixture).await;
    let page = session
        .get(&format!("/member/{member}/new-subaccount"))
        .await;
    assert!(
        page.body.contains(&format!("value=\"{button}\"")),
        "{variant}"
    );
    let before = grid_rows(&session.get(&format!("/member/{member}")).await);
    let reply = session
        .post_form(
            &format!("/member/{member}/new-subaccount"),
            &[(type_field, account_type), (deposit_field, deposit)],
        )
        .await;
    let after = grid_rows(&session.get(&format!("/member/{member}")).await);
    let context = format!("{variant} {member} {account_type} {deposit}");
    assert_eq!(reply.status, 200, "{context}");
    match expect {
        Ok([reference, number, type_label, balance, status]) => {
            assert_eq!(reply.heading(), done_heading, "{context}");
            let rows = reply.rows();
            assert!(
                crate::support::has_row(&rows, &["Reference", reference]),
                "{context}"
            );
            assert!(
                crate::support::has_row(&rows, &["Account", number]),
                "{context}"
            );
            let mut expected = before.clone();
            expected.push(
                [number, member, type_label, balance, status]
                    .map(str::to_owned)
                    .to_vec(),
            );
            assert_eq!(after, expected, "{context}");
        }
        Err(message) => {
            assert_ne!(reply.heading(), done_heading, "{context}");
            assert!(
                reply.text().contains(message),
                "{context}: {}",
                reply.text()
            );
            assert_eq!(after, before, "{context}: nothing was opened");
        }
    }
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn opening_a_sub_account_adds_it_to_the_member() {
    let below = "Initial deposit is below the minimum required for this account type.";
    for variant in Variant::ALL {
        check_open(
            variant,
            "12345",
            "savings",
            "25.00",
            Ok(["SA-12345-SAV", "S-12345-03", "Savings", "$25.00", "Active"]),
        )
        .await;
        check_open(
            variant,
            "13579",
            "checking",
            "$1,500",
            Ok([
                "SA-13579-CHE",
                "C-13579-02",
                "Checking",
                "$1,500.00",
                "Active",
            ]),
        )
        .await;
        check_open(
            variant,
            "67890",
            "certificate",
            "1000.5",
            Ok([
                "SA-67890-CER",
                "D-67890-02",
                "Certificate",
                "$1,000.50",
                "Active",
            ]),
        )
        .await;
        check_open(variant, "12345", "savings", "24.99", Err(below)).await;
        check_open(
            variant,
            "12345",
            "savings",
            "lots",
            Err("Enter the deposit as an amount, for example 100.00."),
        )
        .await;
        check_open(
            variant,
            "12345",
            "bonds",
            "100",
            Err("Select an account type."),
        )
        .await;
    }
}

#[tokio::test]
async fn a_refused_deposit_keeps_what_was_typed() {
    let fixture = start(Variant::FirstValley).await;
    let mut session = Session::signed_on(&fixture).await;
    let reply = session
        .post_form(
            "/member/12345/new-subaccount",
            &[("accttype", "checking"), ("initdep", "10.00")],
        )
        .await;
    assert_eq!(reply.heading(), "Open Sub-Account");
    assert!(
        reply
            .body
            .contains("<option value=\"checking\" selected>Checking</option>")
    );
    assert!(
        reply
            .body
            .contains("name=\"initdep\" class=\"frmfld\" value=\"10.00\"")
    );
    assert_eq!(fixture.handle().balance("C-12345-03"), None);
    assert_eq!(
        fixture.handle().balance("C-12345-02"),
        Some(Money::from_cents(81_230))
    );
    fixture.shutdown().await.expect("clean shutdown");
}
