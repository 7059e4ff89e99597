//! Transfers: form, review, confirm; every confirm POST moves money, refusals move nothing.

use memberdesk::{AccountStatus, Money, Variant};

use crate::support::{Reply, Session, has_row, start};

struct TransferForm {
    from: &'static str,
    to: &'static str,
    amount: &'static str,
    review_button: &'static str,
    post_button: &'static str,
    review_heading: &'static str,
    done_heading: &'static str,
    failed_heading: &'static str,
}

fn transfer_form(variant: Variant) -> TransferForm {
    match variant {
        Variant::FirstValley => TransferForm {
            from: "fromacct",
            to: "toacct",
            amount: "amt",
            review_button: "Review Transfer",
            post_button: "Transfer Funds",
            review_heading: "Review Transfer",
            done_heading: "Transfer Complete",
            failed_heading: "Transfer Not Completed",
        },
        Variant::NorthgateFcu => TransferForm {
            from: "src_acct",
            to: "dst_acct",
            amount: "xfer_amt",
            review_button: "Continue to Review",
            post_button: "Post Transfer",
            review_heading: "Review Funds Transfer",
            done_heading: "Transfer Posted",
            failed_heading: "Transfer Rejected",
        },
    }
}

async fn confirm(session: &mut Session, form: &TransferForm, fields: [&str; 3]) -> Reply {
    let [from, to, amount] = fields;
    session
        .post_form(
            "/member/12345/transfer/confirm",
            &[(form.from, from), (form.to, to), (form.amount, amount)],
        )
        .await
}

#[tokio::test]
async fn a_reviewed_transfer_moves_the_balance_and_a_double_submit_moves_it_twice() {
    for variant in Variant::ALL {
        let fixture = start(variant).await;
        let form = transfer_form(variant);
        let mut session = Session::signed_on(&fixture).await;

        let page = session.get("/member/12345/transfer").await;
        assert!(
            page.body
                .contains(&format!("value=\"{}\"", form.review_button))
        );
        assert!(
            page.body
                .contains("<option value=\"S-12345-01\">S-12345-01 Savings</option>")
        );
        assert!(
            page.body
                .contains("<option value=\"C-12345-02\">C-12345-02 Checking</option>")
        );

        let review = session
            .post_form(
                "/member/12345/transfer",
                &[
                    (form.from, "S-12345-01"),
                    (form.to, "C-12345-02"),
                    (form.amount, "100"),
                ],
            )
            .await;
        assert_eq!(review.heading(), form.review_heading, "{variant}");
        let rows = review.rows();
        assert!(has_row(&rows, &["From Account", "S-12345-01 Savings"]));
        assert!(has_row(&rows, &["To Account", "C-12345-02 Checking"]));
        assert!(has_row(&rows, &["Amount", "$100.00"]));
        assert!(
            review
                .body
                .contains(&format!("value=\"{}\"", form.post_button))
        );
        assert!(review.body.contains(">Cancel</a>"));
        assert!(
            review
                .body
                .contains(&format!("name=\"{}\" value=\"100.00\"", form.amount))
        );
        // Reviewing moves nothing.
        assert_eq!(
            fixture.handle().balance("S-12345-01"),
            Some(Money::from_cents(421_055))
        );

        let fields = ["S-12345-01", "C-12345-02", "100.00"];
        let first = confirm(&mut session, &form, fields).await;
        assert_eq!(first.heading(), form.done_heading, "{variant}");
        assert!(has_row(
            &first.rows(),
            &["Confirmation Number", "TF-000001"]
        ));
        assert_eq!(
            fixture.handle().balance("S-12345-01"),
            Some(Money::from_cents(411_055))
        );
        assert_eq!(
            fixture.handle().balance("C-12345-02"),
            Some(Money::from_cents(91_230))
        );

        let second = confirm(&mut session, &form, fields).await;
        assert!(has_row(
            &second.rows(),
            &["Confirmation Number", "TF-000002"]
        ));
        assert_eq!(
            fixture.handle().balance("S-12345-01"),
            Some(Money::from_cents(401_055))
        );
        assert_eq!(
            fixture.handle().balance("C-12345-02"),
            Some(Money::from_cents(101_230))
        );

        let detail = session.get("/member/12345").await;
        assert!(has_row(
            &detail.rows(),
            &["S-12345-01", "12345", "Savings", "$4,010.55", "Active"]
        ));
        let state = fixture.handle().view();
        assert_eq!(
            serde_json::to_value(&state.transfers).expect("serializable"),
            serde_json::json!([
                {"confirmation": "TF-000001", "member_id": "12345", "from": "S-12345-01",
                 "to": "C-12345-02", "amount": "100.00"},
                {"confirmation": "TF-000002", "member_id": "12345", "from": "S-12345-01",
                 "to": "C-12345-02", "amount": "100.00"},
            ])
        );
        fixture.shutdown().await.expect("clean shutdown");
    }
}

/// A confirm that must be refused with `message`, moving nothing.
async fn check_refused_confirm(variant: Variant, fields: [&str; 3], close: bool, message: &str) {
    let fixture = start(variant).await;
    let form = transfer_form(variant);
    if close {
        fixture
            .handle()
            .set_status("C-12345-02", AccountStatus::Closed)
            .expect("the account exists");
    }
    let before = fixture.handle().view().balances;
    let mut session = Session::signed_on(&fixture).await;
    let reply = confirm(&mut session, &form, fields).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.heading(), form.failed_heading, "{variant} {fields:?}");
    assert!(
        reply.text().contains(message),
        "{variant} {fields:?}: {}",
        reply.text()
    );
    assert_eq!(fixture.handle().view().balances, before);
    assert!(fixture.handle().transfers().is_empty());
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn refused_confirms_move_nothing() {
    for variant in Variant::ALL {
        check_refused_confirm(
            variant,
            ["C-12345-02", "S-12345-01", "812.31"],
            false,
            "Insufficient funds",
        )
        .await;
        check_refused_confirm(
            variant,
            ["S-12345-01", "C-12345-02", "1.00"],
            true,
            "Account is closed",
        )
        .await;
        check_refused_confirm(
            variant,
            ["C-12345-02", "S-12345-01", "1.00"],
            true,
            "Account is closed",
        )
        .await;
        check_refused_confirm(
            variant,
            ["S-12345-01", "S-67890-01", "1.00"],
            false,
            "Select an account of this member.",
        )
        .await;
    }
}

#[tokio::test]
async fn the_whole_balance_can_move_but_not_a_cent_more() {
    let fixture = start(Variant::FirstValley).await;
    let form = transfer_form(Variant::FirstValley);
    let mut session = Session::signed_on(&fixture).await;
    let all = confirm(&mut session, &form, ["C-12345-02", "S-12345-01", "812.30"]).await;
    assert_eq!(all.heading(), "Transfer Complete");
    assert_eq!(
        fixture.handle().balance("C-12345-02"),
        Some(Money::from_cents(0))
    );
    let more = confirm(&mut session, &form, ["C-12345-02", "S-12345-01", "0.01"]).await;
    assert!(more.text().contains("Insufficient funds"));
    fixture.shutdown().await.expect("clean shutdown");
}

/// Review-time refusals re-render the form with the message.
async fn check_review_refusal(fields: [&str; 3], message: &str) {
    let fixture = start(Variant::FirstValley).await;
    let mut session = Session::signed_on(&fixture).await;
    let [from, to, amount] = fields;
    let reply = session
        .post_form(
            "/member/12345/transfer",
            &[("fromacct", from), ("toacct", to), ("amt", amount)],
        )
        .await;
    assert_eq!(reply.heading(), "Transfer Funds", "{fields:?}");
    assert!(
        reply.text().contains(message),
        "{fields:?}: {}",
        reply.text()
    );
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn review_refuses_bad_forms() {
    check_review_refusal(
        ["S-12345-01", "S-12345-01", "5"],
        "From and To accounts must differ.",
    )
    .await;
    let bad_amount = "Enter the amount as a positive amount, for example 100.00.";
    check_review_refusal(["S-12345-01", "C-12345-02", "0"], bad_amount).await;
    check_review_refusal(["S-12345-01", "C-12345-02", "-5"], bad_amount).await;
    check_review_refusal(["S-12345-01", "C-12345-02", ""], bad_amount).await;
    check_review_refusal(
        ["S-99999-01", "C-12345-02", "5"],
        "Select an account of this member.",
    )
    .await;
}
