//! The hostile display faults: pages that lie the way a reskinning proxy or a careless redesign
//! would (lookalike accounts, a duplicate summary row, help text quoting refusals, same-named
//! decoy controls), on both variants, while every business rule stays exactly as it was.

use memberdesk::{Money, RunningFixture, Variant};

use crate::faults::{FaultCase, check_fires_once};
use crate::pages::grid_rows;
use crate::support::{Reply, Session, arm, control, send, start};

/// The four hostile faults, by their control-surface names.
const HOSTILE_FAULTS: [&str; 4] = [
    "lookalike_account",
    "quoted_refusals",
    "decoy_control",
    "duplicate_summary_row",
];

/// The strings of a variant the tests need: form field names, labels, buttons, headings and
/// classes.
struct Names {
    member: &'static str,
    account_type: &'static str,
    deposit: &'static str,
    from: &'static str,
    to: &'static str,
    amount: &'static str,
    reference: &'static str,
    savings_label: &'static str,
    summary_heading: &'static str,
    post_button: &'static str,
    review_heading: &'static str,
    message_class: &'static str,
    section_class: &'static str,
}

fn names(variant: Variant) -> Names {
    match variant {
        Variant::FirstValley => Names {
            member: "memno",
            account_type: "accttype",
            deposit: "initdep",
            from: "fromacct",
            to: "toacct",
            amount: "amt",
            reference: "clientref",
            savings_label: "Savings Balance",
            summary_heading: "Summary",
            post_button: "Transfer Funds",
            review_heading: "Review Transfer",
            message_class: "msg1",
            section_class: "sect",
        },
        Variant::NorthgateFcu => Names {
            member: "member_num",
            account_type: "acct_kind",
            deposit: "open_amt",
            from: "src_acct",
            to: "dst_acct",
            amount: "xfer_amt",
            reference: "xfer_memo",
            savings_label: "Savings Bal.",
            summary_heading: "Savings Summary",
            post_button: "Post Transfer",
            review_heading: "Review Funds Transfer",
            message_class: "ng-note",
            section_class: "ng-h2",
        },
    }
}

const SEARCH_HELP: &str = "Help: any number not listed here answers No records found, and a \
                           restricted member answers You are not authorized to view this member \
                           record.";
const TRANSFER_HELP: &str = "Help: an account that is not the member's answers Select an account \
                             of this member. The same account twice answers From and To accounts \
                             must differ. A blank or zero amount answers Enter the amount as a \
                             positive amount, for example 100.00. A malformed client reference \
                             answers Client reference may hold up to 40 letters, digits and \
                             dashes. When posting, a short balance answers Insufficient funds and \
                             a closed account answers Account is closed.";
const SUBACCOUNT_HELP: &str = "Help: a deposit of less than 25.00 answers Initial deposit is \
                               below the minimum required for this account type. A deposit that \
                               is not an amount answers Enter the deposit as an amount, for \
                               example 100.00. A missing type answers Select an account type.";
const LOOKUP_HELP: &str = "Help: a reference that no posted transfer carries answers No transfer \
                           with that client reference, and a blank search answers Enter a client \
                           reference.";
const TRANSFER_DONE_QUOTE: &str = "Insufficient funds? Ask about overdraft protection";
const SUBACCOUNT_DONE_QUOTE: &str = "Deposits below the minimum required are refused";

fn rows(cells: &[[&str; 5]]) -> Vec<Vec<String>> {
    cells
        .iter()
        .map(|row| row.map(str::to_owned).to_vec())
        .collect()
}

/// The rows of a page whose first cell is `label`, as cell texts.
fn rows_labelled(reply: &Reply, label: &str) -> Vec<Vec<String>> {
    reply
        .rows()
        .into_iter()
        .filter(|row| row.first().map(String::as_str) == Some(label))
        .collect()
}

/// Escapes the way the app does, to find a text inside the markup.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;").replace('\'', "&#39;")
}

fn paragraph(class: &str, text: &str) -> String {
    format!("<p class=\"{class}\">{}</p>", escaped(text))
}

fn section(class: &str, text: &str) -> String {
    format!("<h2 class=\"{class}\">{}</h2>", escaped(text))
}

// ---- lookalike_account ----

#[tokio::test]
async fn lookalike_account_fires_once_per_member_detail() {
    check_fires_once(FaultCase {
        fault: "lookalike_account",
        method: "GET",
        path: "/member/12345",
        fields: &[],
        fired: |reply| grid_rows(reply).first().map(|row| row[0].as_str()) == Some("S-12345-09"),
    })
    .await;
}

#[tokio::test]
async fn lookalike_account_adds_a_near_account_number_for_the_same_member_before_the_first() {
    for variant in Variant::ALL {
        let fixture = start(variant).await;
        let names = names(variant);
        let seeded = fixture.handle().view().balances;
        let mut session = Session::signed_on(&fixture).await;
        arm(&fixture, "lookalike_account", -1).await;
        let detail = session.get("/member/12345").await;
        assert_eq!(
            grid_rows(&detail),
            rows(&[
                ["S-12345-09", "12345", "Savings", "$4,210.56", "Active"],
                ["S-12345-01", "12345", "Savings", "$4,210.55", "Active"],
                ["C-12345-02", "12345", "Checking", "$812.30", "Active"],
            ]),
            "{variant}"
        );
        assert_eq!(
            grid_rows(&session.get("/member/67890").await),
            rows(&[
                ["S-67890-09", "67890", "Savings", "$18,730.01", "Active"],
                ["S-67890-01", "67890", "Savings", "$18,730.00", "Active"],
            ]),
            "{variant}"
        );
        // The summary still describes the real savings account.
        assert_eq!(
            rows_labelled(&detail, names.savings_label),
            [[names.savings_label, "$4,210.55"]]
        );
        // The lookalike is markup only: no form offers it and a transfer from it is refused.
        let form = session.get("/member/12345/transfer").await;
        assert!(!form.body.contains("S-12345-09"), "{variant}");
        let refused = session
            .post_form(
                "/member/12345/transfer",
                &[
                    (names.from, "S-12345-09"),
                    (names.to, "C-12345-02"),
                    (names.amount, "1"),
                ],
            )
            .await;
        assert!(
            refused.text().contains("Select an account of this member."),
            "{variant}"
        );
        assert_eq!(fixture.handle().view().balances, seeded, "{variant}");
        assert_eq!(fixture.handle().balance("S-12345-09"), None);

        arm(&fixture, "lookalike_account", 0).await;
        assert_eq!(
            grid_rows(&session.get("/member/12345").await),
            rows(&[
                ["S-12345-01", "12345", "Savings", "$4,210.55", "Active"],
                ["C-12345-02", "12345", "Checking", "$812.30", "Active"],
            ]),
            "{variant} disarmed"
        );
        fixture.shutdown().await.expect("clean shutdown");
    }
}

#[tokio::test]
async fn lookalike_account_and_lookalike_row_stack_before_the_real_rows() {
    let fixture = start(Variant::FirstValley).await;
    let mut session = Session::signed_on(&fixture).await;
    arm(&fixture, "lookalike_row", -1).await;
    arm(&fixture, "lookalike_account", -1).await;
    assert_eq!(
        grid_rows(&session.get("/member/12345").await),
        rows(&[
            ["S-12346-01", "12346", "Savings", "$5,210.55", "Active"],
            ["S-12345-09", "12345", "Savings", "$4,210.56", "Active"],
            ["S-12345-01", "12345", "Savings", "$4,210.55", "Active"],
            ["C-12345-02", "12345", "Checking", "$812.30", "Active"],
        ])
    );
    fixture.shutdown().await.expect("clean shutdown");
}

// ---- duplicate_summary_row ----

#[tokio::test]
async fn duplicate_summary_row_fires_once_per_member_detail() {
    check_fires_once(FaultCase {
        fault: "duplicate_summary_row",
        method: "GET",
        path: "/member/12345",
        fields: &[],
        fired: |reply| reply.text().contains("Savings Balance $4,310.55"),
    })
    .await;
}

#[tokio::test]
async fn duplicate_summary_row_adds_a_different_savings_balance_before_the_real_one() {
    for variant in Variant::ALL {
        let fixture = start(variant).await;
        let names = names(variant);
        let seeded = fixture.handle().view().balances;
        let mut session = Session::signed_on(&fixture).await;
        arm(&fixture, "duplicate_summary_row", -1).await;
        let label = names.savings_label;
        let detail = session.get("/member/12345").await;
        assert_eq!(
            rows_labelled(&detail, label),
            [[label, "$4,310.55"], [label, "$4,210.55"]],
            "{variant}"
        );
        assert_eq!(
            detail.regions_of(&format!(">{label}</td>")),
            [names.summary_heading, names.summary_heading],
            "{variant}: both rows sit in the summary"
        );
        assert_eq!(
            rows_labelled(&session.get("/member/67890").await, label),
            [[label, "$18,830.00"], [label, "$18,730.00"]],
            "{variant}"
        );
        // A member with no savings account has no summary to duplicate.
        let no_savings = session.get("/member/13579").await;
        assert!(rows_labelled(&no_savings, label).is_empty(), "{variant}");
        assert!(
            no_savings
                .text()
                .contains("No savings account on file for this member.")
        );
        // The grid and the balances are untouched.
        assert_eq!(grid_rows(&detail).len(), 2, "{variant}");
        assert_eq!(fixture.handle().view().balances, seeded, "{variant}");

        arm(&fixture, "duplicate_summary_row", 0).await;
        assert_eq!(
            rows_labelled(&session.get("/member/12345").await, label),
            [[label, "$4,210.55"]],
            "{variant} disarmed"
        );
        fixture.shutdown().await.expect("clean shutdown");
    }
}

// ---- quoted_refusals ----

#[tokio::test]
async fn quoted_refusals_fires_once_per_rendered_page() {
    check_fires_once(FaultCase {
        fault: "quoted_refusals",
        method: "GET",
        path: "/search",
        fields: &[],
        fired: |reply| reply.text().contains(SEARCH_HELP),
    })
    .await;
    check_fires_once(FaultCase {
        fault: "quoted_refusals",
        method: "POST",
        path: "/member/12345/transfer/confirm",
        fields: &[
            ("fromacct", "S-12345-01"),
            ("toacct", "C-12345-02"),
            ("amt", "1"),
        ],
        fired: |reply| reply.text().contains(TRANSFER_DONE_QUOTE),
    })
    .await;
}

/// Every page `quoted_refusals` distorts, with the markup that shows it fired.
async fn quoted_pages(fixture: &RunningFixture, session: &mut Session) -> Vec<(String, Reply)> {
    let names = names(fixture.variant());
    let transfer = [
        (names.from, "S-12345-01"),
        (names.to, "C-12345-02"),
        (names.amount, "100"),
        (names.reference, "idem-quoted"),
    ];
    let mut pages = vec![
        ("search".to_owned(), session.get("/search").await),
        (
            "search not found".to_owned(),
            session
                .post_form("/search", &[(names.member, "99999")])
                .await,
        ),
        (
            "member route, restricted member".to_owned(),
            session.get("/member/55555").await,
        ),
        (
            "transfer form".to_owned(),
            session.get("/member/12345/transfer").await,
        ),
        (
            "transfer form refused".to_owned(),
            session
                .post_form(
                    "/member/12345/transfer",
                    &[(names.from, "S-12345-01"), (names.to, "S-12345-01")],
                )
                .await,
        ),
        (
            "transfer complete".to_owned(),
            session
                .post_form("/member/12345/transfer/confirm", &transfer)
                .await,
        ),
        (
            "sub-account form".to_owned(),
            session.get("/member/12345/new-subaccount").await,
        ),
        (
            "sub-account refused".to_owned(),
            session
                .post_form(
                    "/member/12345/new-subaccount",
                    &[(names.account_type, "savings"), (names.deposit, "10")],
                )
                .await,
        ),
        (
            "sub-account confirmation".to_owned(),
            session
                .post_form(
                    "/member/12345/new-subaccount",
                    &[(names.account_type, "checking"), (names.deposit, "30")],
                )
                .await,
        ),
        (
            "transfer lookup".to_owned(),
            session.get("/transfers/lookup").await,
        ),
    ];
    pages.push((
        "transfer lookup found".to_owned(),
        session
            .get(&format!(
                "/transfers/lookup?{}=idem-quoted",
                names.reference
            ))
            .await,
    ));
    pages
}

fn page<'a>(pages: &'a [(String, Reply)], name: &str) -> &'a Reply {
    pages
        .iter()
        .find(|(page, _)| page == name)
        .map(|(_, reply)| reply)
        .expect("the page was visited")
}

/// The markup `quoted_refusals` adds to a page of `quoted_pages`.
fn quoted_markup(variant: Variant, page: &str) -> String {
    let names = names(variant);
    match page {
        "search" | "search not found" | "member route, restricted member" => {
            paragraph(names.message_class, SEARCH_HELP)
        }
        "transfer form" | "transfer form refused" => paragraph(names.message_class, TRANSFER_HELP),
        "transfer complete" => section(names.section_class, TRANSFER_DONE_QUOTE),
        "sub-account form" | "sub-account refused" => {
            paragraph(names.message_class, SUBACCOUNT_HELP)
        }
        "sub-account confirmation" => section(names.section_class, SUBACCOUNT_DONE_QUOTE),
        _ => paragraph(names.message_class, LOOKUP_HELP),
    }
}

#[tokio::test]
async fn quoted_refusals_quote_refusals_in_help_and_in_success_page_headings() {
    for variant in Variant::ALL {
        let fixture = start(variant).await;
        let mut session = Session::signed_on(&fixture).await;
        arm(&fixture, "quoted_refusals", -1).await;
        let armed = quoted_pages(&fixture, &mut session).await;
        for (page, reply) in &armed {
            let markup = quoted_markup(variant, page);
            assert_eq!(reply.status, 200, "{variant} {page}");
            assert!(
                reply.body.contains(&markup),
                "{variant} {page} lacks {markup}: {}",
                reply.body
            );
        }
        // The quoting changes no outcome: the transfer and the sub-account were made, once.
        let transfers = fixture.handle().transfers();
        assert_eq!(transfers.len(), 1, "{variant}");
        assert_eq!(
            fixture.handle().balance("S-12345-01"),
            Some(Money::from_cents(411_055))
        );
        assert_eq!(
            fixture.handle().balance("C-12345-03"),
            Some(Money::from_cents(3_000))
        );
        assert!(
            page(&armed, "transfer lookup found")
                .text()
                .contains("TF-000001"),
            "{variant}: the lookup still lists the transfer under the quote"
        );
        // The success headings sit right under the page heading, so the confirmation's rows
        // are in the quoting heading's section.
        assert_eq!(
            page(&armed, "transfer complete").regions_of(">Confirmation Number</td>"),
            [TRANSFER_DONE_QUOTE]
        );
        assert_eq!(
            page(&armed, "sub-account confirmation").regions_of(">Reference</td>"),
            [SUBACCOUNT_DONE_QUOTE]
        );

        control(&fixture, "/_control/reset", "").await;
        let disarmed = quoted_pages(&fixture, &mut session).await;
        for (page, reply) in &disarmed {
            let markup = quoted_markup(variant, page);
            assert!(
                !reply.body.contains(&markup),
                "{variant} {page} disarmed still shows {markup}"
            );
            assert!(!reply.text().contains("Help:"), "{variant} {page}");
        }
        let done = page(&disarmed, "transfer complete");
        assert!(!done.body.contains("<h2"), "{variant}: no second heading");
        assert!(!done.text().contains("Insufficient funds"), "{variant}");
        fixture.shutdown().await.expect("clean shutdown");
    }
}

// ---- decoy_control ----

#[tokio::test]
async fn decoy_control_fires_once_per_rendered_page() {
    check_fires_once(FaultCase {
        fault: "decoy_control",
        method: "GET",
        path: "/member/12345",
        fields: &[],
        fired: |reply| reply.body.contains("location.href='/decoy'"),
    })
    .await;
}

/// The search page, the member detail and the review page of a fixture.
async fn decoy_pages(fixture: &RunningFixture, session: &mut Session) -> [Reply; 3] {
    let names = names(fixture.variant());
    [
        session.get("/search").await,
        session.get("/member/12345").await,
        session
            .post_form(
                "/member/12345/transfer",
                &[
                    (names.from, "S-12345-01"),
                    (names.to, "C-12345-02"),
                    (names.amount, "100"),
                ],
            )
            .await,
    ]
}

#[tokio::test]
async fn decoy_control_puts_same_named_controls_under_headings_of_their_own() {
    for variant in Variant::ALL {
        let fixture = start(variant).await;
        let names = names(variant);
        let mut session = Session::signed_on(&fixture).await;
        arm(&fixture, "decoy_control", -1).await;
        let [search, detail, review] = decoy_pages(&fixture, &mut session).await;

        // Search: a second "Search" button and "Member Number" textbox, first on the page.
        assert_eq!(
            search.regions_of("<input type=\"submit\" value=\"Search\""),
            ["Quick Search Help", "Member Search"],
            "{variant}"
        );
        assert_eq!(
            search.regions_of("title=\"Member Number\""),
            ["Quick Search Help", "Member Search"],
            "{variant}"
        );
        let decoy_form = search
            .body
            .find("<form method=\"post\" action=\"/decoy\">")
            .expect("the decoy form posts to /decoy");
        let real_form = search
            .body
            .find("<form method=\"post\" action=\"/search\">")
            .expect("the real form is still there");
        assert!(decoy_form < real_form, "{variant}: the decoy comes first");
        assert_eq!(search.heading(), "Member Search");

        // Member detail: the action links again, in a section before the real ones.
        for link in ["Open Sub-Account", "Transfer Funds"] {
            assert_eq!(
                detail.regions_of(&format!(">{link}</a>")),
                ["Training Links", names.summary_heading],
                "{variant} {link}"
            );
            let decoy = detail
                .body
                .find(&format!(
                    "location.href='/decoy';return false;\">{link}</a>"
                ))
                .expect("the decoy link leads to /decoy");
            let real = detail
                .body
                .find(&format!("/transfer';return false;\">{link}</a>"))
                .or_else(|| {
                    detail
                        .body
                        .find(&format!("/new-subaccount';return false;\">{link}</a>"))
                })
                .expect("the real link is still there");
            assert!(decoy < real, "{variant} {link}: the decoy comes first");
        }

        // Review: a second confirm button in a form of its own, before the real form.
        let button = format!("<input type=\"submit\" value=\"{}\"", names.post_button);
        assert_eq!(
            review.regions_of(&button),
            ["Practice Transfer", names.review_heading],
            "{variant}"
        );
        let decoy_form = review
            .body
            .find("<form method=\"post\" action=\"/decoy\">")
            .expect("the decoy form posts to /decoy");
        let real_form = review
            .body
            .find("<form method=\"post\" action=\"/member/12345/transfer/confirm\">")
            .expect("the real form is still there");
        assert!(decoy_form < real_form, "{variant}");
        assert_eq!(review.heading(), names.review_heading);

        arm(&fixture, "decoy_control", 0).await;
        for reply in decoy_pages(&fixture, &mut session).await {
            assert!(!reply.body.contains("/decoy"), "{variant}: {}", reply.body);
            assert!(!reply.body.contains("Quick Search Help"));
            assert!(!reply.body.contains("Training Links"));
            assert!(!reply.body.contains("Practice Transfer"));
        }
        fixture.shutdown().await.expect("clean shutdown");
    }
}

fn decoy_hits_reported(state: &Reply) -> u64 {
    state.json()["decoy_hits"]
        .as_u64()
        .expect("the state reports decoy_hits")
}

#[tokio::test]
async fn decoy_controls_change_nothing_but_the_decoy_hits_and_reset_zeroes_them() {
    for variant in Variant::ALL {
        let fixture = start(variant).await;
        let names = names(variant);
        let mut session = Session::signed_on(&fixture).await;
        arm(&fixture, "decoy_control", -1).await;
        let seeded = fixture.handle().view().balances;
        assert_eq!(fixture.handle().decoy_hits(), 0);

        // Use each decoy as a browser would: the search form, the links, the confirm button.
        let searched = session
            .post_form("/decoy", &[(names.member, "12345")])
            .await;
        let linked = session.get("/decoy").await;
        let confirmed = session.post_form("/decoy", &[]).await;
        for reply in [&searched, &linked, &confirmed] {
            assert_eq!(reply.status, 200, "{variant}");
            assert_eq!(reply.heading(), "Training page");
            assert!(reply.text().contains("Training page"), "{variant}");
        }
        assert_eq!(fixture.handle().decoy_hits(), 3, "{variant}");
        let state = send(fixture.addr(), "GET", "/_control/state", &[], None).await;
        assert_eq!(decoy_hits_reported(&state), 3, "{variant}");
        assert_eq!(state.json()["transfers"], serde_json::json!([]));
        assert_eq!(fixture.handle().view().balances, seeded, "{variant}");

        // Never faulted, and counted without a session too.
        arm(&fixture, "transient_load", -1).await;
        arm(&fixture, "session_timeout", -1).await;
        let mut anonymous = Session::new(&fixture);
        let faulted = anonymous.post_form("/decoy", &[]).await;
        assert_eq!(
            (faulted.status, faulted.heading()),
            (200, "Training page".to_owned())
        );
        assert_eq!(fixture.handle().decoy_hits(), 4, "{variant}");

        let reset = control(&fixture, "/_control/reset", "").await;
        assert_eq!(decoy_hits_reported(&reset), 0, "{variant}");
        assert_eq!(fixture.handle().decoy_hits(), 0, "{variant}");
        fixture.shutdown().await.expect("clean shutdown");
    }
}

// ---- all together ----

/// The same operator session on a fixture: search, detail, sub-account, transfer, lookup, read
/// back through the JSON API. Answers the API's member record.
async fn business_session(fixture: &RunningFixture) -> serde_json::Value {
    let names = names(fixture.variant());
    let mut session = Session::signed_on(fixture).await;
    let found = session
        .post_form("/search", &[(names.member, "12345")])
        .await;
    assert_eq!(found.location(), Some("/member/12345"));
    session.get("/member/12345").await;
    session
        .post_form(
            "/member/12345/new-subaccount",
            &[(names.account_type, "certificate"), (names.deposit, "500")],
        )
        .await;
    let transfer = [
        (names.from, "S-12345-01"),
        (names.to, "C-12345-02"),
        (names.amount, "250.75"),
        (names.reference, "idem-hostile"),
    ];
    session.post_form("/member/12345/transfer", &transfer).await;
    session
        .post_form("/member/12345/transfer/confirm", &transfer)
        .await;
    session
        .post_form(
            "/member/12345/transfer/confirm",
            &[
                (names.from, "C-12345-02"),
                (names.to, "S-12345-01"),
                (names.amount, "99999"),
            ],
        )
        .await;
    session
        .get(&format!(
            "/transfers/lookup?{}=idem-hostile",
            names.reference
        ))
        .await;
    send(
        fixture.addr(),
        "GET",
        "/api/members/12345",
        &[("Authorization", "Bearer md-api-token")],
        None,
    )
    .await
    .json()
}

#[tokio::test]
async fn hostile_faults_change_what_pages_show_and_nothing_else() {
    for variant in Variant::ALL {
        let plain = start(variant).await;
        let hostile = start(variant).await;
        for fault in HOSTILE_FAULTS {
            arm(&hostile, fault, -1).await;
        }
        let plain_member = business_session(&plain).await;
        let hostile_member = business_session(&hostile).await;
        assert_eq!(hostile_member, plain_member, "{variant}");
        let (plain_view, hostile_view) = (plain.handle().view(), hostile.handle().view());
        assert_eq!(hostile_view.balances, plain_view.balances, "{variant}");
        assert_eq!(hostile_view.transfers, plain_view.transfers, "{variant}");
        assert_eq!(
            hostile_view.balances.get("S-12345-01"),
            Some(&Money::from_cents(395_980)),
            "{variant}: the transfer moved the money once"
        );
        assert_eq!(hostile_view.decoy_hits, 0, "{variant}: no decoy was used");
        assert_eq!(
            hostile_view.armed.len(),
            HOSTILE_FAULTS.len(),
            "{variant}: indefinite faults stay armed"
        );
        plain.shutdown().await.expect("clean shutdown");
        hostile.shutdown().await.expect("clean shutdown");
    }
}
