//! Client references on transfers: optional on the form, shown on review and confirmation,
//! listed under the member's Recent Transfers, found by the transfer lookup, counted by the
//! control surface, and never used to deduplicate.

use memberdesk::{Money, RunningFixture, Variant};

use crate::pages::grid_rows;
use crate::support::{Reply, Session, has_row, send, start};

/// The transfer form's field names and the labels that differ, per variant.
struct Fields {
    from: &'static str,
    to: &'static str,
    amount: &'static str,
    reference: &'static str,
    form_heading: &'static str,
    done_heading: &'static str,
    failed_heading: &'static str,
}

fn fields(variant: Variant) -> Fields {
    match variant {
        Variant::FirstValley => Fields {
            from: "fromacct",
            to: "toacct",
            amount: "amt",
            reference: "clientref",
            form_heading: "Transfer Funds",
            done_heading: "Transfer Complete",
            failed_heading: "Transfer Not Completed",
        },
        Variant::NorthgateFcu => Fields {
            from: "src_acct",
            to: "dst_acct",
            amount: "xfer_amt",
            reference: "xfer_memo",
            form_heading: "Funds Transfer",
            done_heading: "Transfer Posted",
            failed_heading: "Transfer Rejected",
        },
    }
}

const REFUSED: &str = "Client reference may hold up to 40 letters, digits and dashes";

/// Posts `path` (the review or the confirm) for member 12345 with a client reference.
async fn transfer(
    session: &mut Session,
    variant: Variant,
    path: &str,
    [from, to, amount]: [&str; 3],
    reference: &str,
) -> Reply {
    let names = fields(variant);
    session
        .post_form(
            path,
            &[
                (names.from, from),
                (names.to, to),
                (names.amount, amount),
                (names.reference, reference),
            ],
        )
        .await
}

const REVIEW: &str = "/member/12345/transfer";
const CONFIRM: &str = "/member/12345/transfer/confirm";

/// The rows after the "Recent Transfers" heading.
fn recent_transfer_rows(reply: &Reply) -> Vec<Vec<String>> {
    let start = reply
        .body
        .find(">Recent Transfers</h2>")
        .expect("the member record has a Recent Transfers section");
    Reply {
        status: reply.status,
        headers: Vec::new(),
        body: reply.body[start..].to_owned(),
    }
    .rows()
}

/// `GET /_control/transfers`, with an optional client reference.
async fn control_transfers(fixture: &RunningFixture, reference: Option<&str>) -> serde_json::Value {
    let path = match reference {
        Some(reference) => format!("/_control/transfers?client_reference={reference}"),
        None => "/_control/transfers".to_owned(),
    };
    let reply = send(fixture.addr(), "GET", &path, &[], None).await;
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    reply.json()
}

#[tokio::test]
async fn a_client_reference_is_shown_on_review_and_confirmation_and_under_recent_transfers() {
    for variant in Variant::ALL {
        let fixture = start(variant).await;
        let names = fields(variant);
        let mut session = Session::signed_on(&fixture).await;

        let before = session.get("/member/12345").await;
        assert_eq!(
            recent_transfer_rows(&before),
            Vec::<Vec<String>>::new(),
            "{variant}"
        );
        assert!(
            before.text().ends_with("Recent Transfers No transfers"),
            "{variant}: {}",
            before.text()
        );

        // The form: a labelled row right after Amount, holding an unnamed textbox.
        let form = session.get(REVIEW).await;
        let labels: Vec<String> = form
            .rows()
            .into_iter()
            .filter_map(|row| row.into_iter().next())
            .collect();
        let amount = labels.iter().position(|label| label == "Amount");
        let reference = labels.iter().position(|label| label == "Client Reference");
        assert_eq!(
            reference,
            amount.map(|amount| amount + 1),
            "{variant}: {labels:?}"
        );
        assert!(form.body.contains(&format!(
            "<tr><td class=\"{}\">Client Reference</td><td><input type=\"text\" name=\"{}\" \
             class=\"{}\" value=\"\"></td></tr>",
            match variant {
                Variant::FirstValley => "lblc",
                Variant::NorthgateFcu => "ng-k",
            },
            names.reference,
            match variant {
                Variant::FirstValley => "frmfld",
                Variant::NorthgateFcu => "ng-inp",
            },
        )));

        let fields = ["S-12345-01", "C-12345-02", "100"];
        let review = transfer(&mut session, variant, REVIEW, fields, " idem-7f3a ").await;
        assert!(
            has_row(&review.rows(), &["Client Reference", "idem-7f3a"]),
            "{variant}"
        );
        assert!(review.body.contains(&format!(
            "<input type=\"hidden\" name=\"{}\" value=\"idem-7f3a\">",
            names.reference
        )));
        assert!(
            fixture.handle().transfers().is_empty(),
            "reviewing posts nothing"
        );

        let done = transfer(
            &mut session,
            variant,
            CONFIRM,
            ["S-12345-01", "C-12345-02", "100.00"],
            "idem-7f3a",
        )
        .await;
        assert_eq!(done.heading(), names.done_heading, "{variant}");
        let rows = done.rows();
        assert!(has_row(&rows, &["Confirmation Number", "TF-000001"]));
        assert!(has_row(&rows, &["Client Reference", "idem-7f3a"]));

        // Without a reference the review and confirmation pages are as they always were.
        let plain = ["C-12345-02", "S-12345-01", "5"];
        let review = transfer(&mut session, variant, REVIEW, plain, "").await;
        assert!(review.body.contains("value=\"5.00\""), "{variant}");
        assert!(!review.text().contains("Client Reference"), "{variant}");
        let done = transfer(&mut session, variant, CONFIRM, plain, "").await;
        assert!(has_row(&done.rows(), &["Confirmation Number", "TF-000002"]));
        assert!(!done.text().contains("Client Reference"), "{variant}");

        let stored: Vec<Option<String>> = fixture
            .handle()
            .transfers()
            .into_iter()
            .map(|record| {
                record
                    .client_reference
                    .map(|reference| reference.to_string())
            })
            .collect();
        assert_eq!(stored, [Some("idem-7f3a".to_owned()), None]);
        let state = send(fixture.addr(), "GET", "/_control/state", &[], None).await;
        assert_eq!(
            state.json()["transfers"],
            serde_json::json!([
                {"confirmation": "TF-000001", "member_id": "12345", "from": "S-12345-01",
                 "to": "C-12345-02", "amount": "100.00", "client_reference": "idem-7f3a"},
                {"confirmation": "TF-000002", "member_id": "12345", "from": "C-12345-02",
                 "to": "S-12345-01", "amount": "5.00"},
            ])
        );

        // Recent Transfers: newest first, amounts without a currency sign, after everything
        // else; the Accounts grid reads as before.
        let detail = session.get("/member/12345").await;
        assert_eq!(
            recent_transfer_rows(&detail),
            [
                [
                    "Confirmation Number",
                    "From Account",
                    "To Account",
                    "Amount",
                    "Client Reference"
                ],
                ["TF-000002", "C-12345-02", "S-12345-01", "5.00", ""],
                [
                    "TF-000001",
                    "S-12345-01",
                    "C-12345-02",
                    "100.00",
                    "idem-7f3a"
                ],
            ],
            "{variant}"
        );
        assert_eq!(
            grid_rows(&detail),
            [
                ["S-12345-01", "12345", "Savings", "$4,115.55", "Active"],
                ["C-12345-02", "12345", "Checking", "$907.30", "Active"],
            ],
            "{variant}"
        );
        let recent = &detail.body[detail.body.find(">Recent Transfers</h2>").unwrap_or(0)..];
        assert!(!recent.contains('$'), "{variant}: {recent}");
        let links = detail.body.find(">New Search</a>").expect("the links");
        let summary = detail.body.find(">As Of<").expect("the summary");
        let heading = detail
            .body
            .find(">Recent Transfers</h2>")
            .expect("the section");
        assert!(summary < links && links < heading, "{variant}");
        // Another member's record lists none of these.
        let other = session.get("/member/67890").await;
        assert!(other.text().ends_with("Recent Transfers No transfers"));
        fixture.shutdown().await.expect("clean shutdown");
    }
}

/// A client reference that must be refused, at review and at confirm, moving nothing.
async fn check_refused_reference(variant: Variant, typed: &str) {
    let fixture = start(variant).await;
    let names = fields(variant);
    let before = fixture.handle().view().balances;
    let mut session = Session::signed_on(&fixture).await;
    let fields = ["S-12345-01", "C-12345-02", "100.00"];

    let review = transfer(&mut session, variant, REVIEW, fields, typed).await;
    assert_eq!(review.status, 200);
    assert_eq!(review.heading(), names.form_heading, "{variant} {typed:?}");
    assert!(
        review.text().contains(REFUSED),
        "{variant} {typed:?}: {}",
        review.text()
    );
    assert!(!review.body.contains("<script>"), "{typed:?} is escaped");

    let confirm = transfer(&mut session, variant, CONFIRM, fields, typed).await;
    assert_eq!(
        confirm.heading(),
        names.failed_heading,
        "{variant} {typed:?}"
    );
    assert!(confirm.text().contains(REFUSED), "{variant} {typed:?}");

    assert_eq!(fixture.handle().view().balances, before, "{typed:?}");
    assert!(fixture.handle().transfers().is_empty(), "{typed:?}");
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn an_invalid_client_reference_is_refused_and_nothing_moves() {
    for variant in Variant::ALL {
        check_refused_reference(variant, &"a".repeat(41)).await;
        check_refused_reference(variant, "idem 7f3a").await;
        check_refused_reference(variant, "idem_7f3a").await;
        check_refused_reference(variant, "réf-1").await;
        check_refused_reference(variant, "<script>x</script>").await;
    }
}

/// What the lookup answers for `typed`.
#[derive(Debug)]
enum Lookup<'a> {
    Rows(&'a [[&'a str; 6]]),
    Text(&'a str),
}

async fn check_lookup(session: &mut Session, variant: Variant, typed: &str, expect: Lookup<'_>) {
    let field = fields(variant).reference;
    let query: String = typed
        .chars()
        .map(|character| match character {
            ' ' => "+".to_owned(),
            other => other.to_string(),
        })
        .collect();
    let reply = session
        .get(&format!("/transfers/lookup?{field}={query}"))
        .await;
    assert_eq!(
        (reply.status, reply.heading()),
        (200, "Find Transfer".into())
    );
    assert!(
        reply.body.contains("title=\"Client Reference\""),
        "{variant}"
    );
    let header = [
        "Confirmation Number",
        "Member",
        "From Account",
        "To Account",
        "Amount",
        "Client Reference",
    ];
    let found: Vec<Vec<String>> = reply
        .rows()
        .into_iter()
        .skip_while(|row| row.first().map(String::as_str) != Some(header[0]))
        .collect();
    match expect {
        Lookup::Rows(rows) => {
            assert_eq!(
                found.first().map(Vec::as_slice),
                Some(&header.map(String::from)[..])
            );
            assert_eq!(&found[1..], rows, "{variant} {typed:?}");
            assert!(!reply.text().contains("No transfer with"));
        }
        Lookup::Text(text) => {
            assert!(found.is_empty(), "{variant} {typed:?}: {found:?}");
            assert!(
                reply.text().contains(text),
                "{variant} {typed:?}: {}",
                reply.text()
            );
        }
    }
}

#[tokio::test]
async fn the_lookup_finds_transfers_by_client_reference_or_says_there_is_none() {
    for variant in Variant::ALL {
        let fixture = start(variant).await;
        let mut anonymous = Session::new(&fixture);
        let refused = anonymous.get("/transfers/lookup").await;
        assert_eq!((refused.status, refused.location()), (303, Some("/login")));

        let mut session = Session::signed_on(&fixture).await;
        let nav = session.get("/nav").await;
        assert!(nav.body.contains(
            "onclick=\"parent.content.location='/transfers/lookup';return false;\">Find Transfer</a>"
        ));
        let empty = session.get("/transfers/lookup").await;
        assert_eq!(empty.heading(), "Find Transfer");
        assert!(has_row(&empty.rows(), &["Client Reference"]));
        assert!(empty.body.contains("value=\"Find Transfer\""));
        assert!(!empty.text().contains("No transfer with"));

        for (reference, fields) in [
            ("idem-A", ["S-12345-01", "C-12345-02", "100.00"]),
            ("idem-B", ["C-12345-02", "S-12345-01", "2.50"]),
        ] {
            let done = transfer(&mut session, variant, CONFIRM, fields, reference).await;
            assert_eq!(done.status, 200);
        }
        let a = &[[
            "TF-000001",
            "12345",
            "S-12345-01",
            "C-12345-02",
            "100.00",
            "idem-A",
        ]];
        check_lookup(&mut session, variant, "idem-A", Lookup::Rows(a)).await;
        check_lookup(&mut session, variant, " idem-A ", Lookup::Rows(a)).await;
        check_lookup(
            &mut session,
            variant,
            "idem-B",
            Lookup::Rows(&[[
                "TF-000002",
                "12345",
                "C-12345-02",
                "S-12345-01",
                "2.50",
                "idem-B",
            ]]),
        )
        .await;
        for typed in ["IDEM-A", "idem-C", "idem_A"] {
            let none = Lookup::Text("No transfer with that client reference");
            check_lookup(&mut session, variant, typed, none).await;
        }
        check_lookup(
            &mut session,
            variant,
            " ",
            Lookup::Text("Enter a client reference."),
        )
        .await;

        // Guarded like every page of the app.
        crate::support::arm(&fixture, "transient_load", 1).await;
        assert_eq!(session.get("/transfers/lookup").await.status, 502);
        fixture.shutdown().await.expect("clean shutdown");
    }
}

#[tokio::test]
async fn posting_twice_with_the_same_client_reference_posts_two_transfers() {
    for variant in Variant::ALL {
        let fixture = start(variant).await;
        let mut session = Session::signed_on(&fixture).await;
        let fields = ["S-12345-01", "C-12345-02", "100.00"];
        for confirmation in ["TF-000001", "TF-000002"] {
            let done = transfer(&mut session, variant, CONFIRM, fields, "idem-dup").await;
            assert!(
                has_row(&done.rows(), &["Confirmation Number", confirmation]),
                "{variant}"
            );
        }
        assert_eq!(
            fixture.handle().balance("S-12345-01"),
            Some(Money::from_cents(401_055)),
            "the money moved twice"
        );
        let row = |confirmation| {
            [
                confirmation,
                "12345",
                "S-12345-01",
                "C-12345-02",
                "100.00",
                "idem-dup",
            ]
        };
        let both = [row("TF-000001"), row("TF-000002")];
        check_lookup(&mut session, variant, "idem-dup", Lookup::Rows(&both)).await;

        // The inspection surface counts them, over HTTP and in process.
        let counted = control_transfers(&fixture, Some("idem-dup")).await;
        assert_eq!(counted["count"], 2);
        assert_eq!(
            counted["by_client_reference"],
            serde_json::json!({"idem-dup": 2})
        );
        assert_eq!(counted["transfers"][1]["confirmation"], "TF-000002");
        assert_eq!(counted["transfers"][1]["client_reference"], "idem-dup");
        let missing = control_transfers(&fixture, Some("idem-none")).await;
        assert_eq!(
            missing,
            serde_json::json!({"count": 0, "by_client_reference": {}, "transfers": []})
        );
        transfer(&mut session, variant, CONFIRM, fields, "").await;
        let all = control_transfers(&fixture, None).await;
        assert_eq!(all["count"], 3);
        assert_eq!(
            all["by_client_reference"],
            serde_json::json!({"idem-dup": 2})
        );
        let handle = fixture.handle();
        assert_eq!(handle.transfers_with_client_reference("idem-dup").len(), 2);
        assert_eq!(
            handle.client_reference_counts(),
            [("idem-dup".to_owned(), 2)].into_iter().collect()
        );

        // A reset forgets them with every other transfer.
        let reset = crate::support::control(&fixture, "/_control/reset", "").await;
        assert_eq!(reset.status, 200);
        assert_eq!(control_transfers(&fixture, None).await["count"], 0);
        fixture.shutdown().await.expect("clean shutdown");
    }
}
