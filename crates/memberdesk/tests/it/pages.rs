//! Search and member detail for every seeded member on both variants, escaping of hostile
//! input, and insta snapshots of every page of both variants.

use memberdesk::{RunningFixture, Variant};

use crate::support::{Reply, Session, has_row, start};

fn member_field(variant: Variant) -> &'static str {
    match variant {
        Variant::FirstValley => "memno",
        Variant::NorthgateFcu => "member_num",
    }
}

/// What a search for `typed` answers.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    Redirect(&'static str),
    Text(&'static str),
}

async fn check_search(fixture: &RunningFixture, typed: &str, expect: Found) {
    let variant = fixture.variant();
    let mut session = Session::signed_on(fixture).await;
    let reply = session
        .post_form("/search", &[(member_field(variant), typed)])
        .await;
    match expect {
        Found::Redirect(location) => {
            assert_eq!(
                (reply.status, reply.location()),
                (303, Some(location)),
                "{typed}"
            );
        }
        Found::Text(text) => {
            assert_eq!(reply.status, 200, "{typed}");
            assert_eq!(reply.heading(), "Member Search");
            assert!(reply.text().contains(text), "{typed}: {}", reply.text());
        }
    }
}

#[tokio::test]
async fn search_finds_refuses_and_reports_missing_members() {
    for variant in Variant::ALL {
        let fixture = start(variant).await;
        check_search(&fixture, "12345", Found::Redirect("/member/12345")).await;
        check_search(&fixture, " 67890 ", Found::Redirect("/member/67890")).await;
        check_search(&fixture, "24680", Found::Redirect("/member/24680")).await;
        check_search(&fixture, "13579", Found::Redirect("/member/13579")).await;
        check_search(&fixture, "99999", Found::Text("No records found")).await;
        check_search(
            &fixture,
            "55555",
            Found::Text("You are not authorized to view this member record."),
        )
        .await;
        check_search(&fixture, "", Found::Text("Enter a member number.")).await;
        fixture.shutdown().await.expect("clean shutdown");
    }
}

#[tokio::test]
async fn member_pages_for_unknown_or_restricted_members_say_so() {
    let fixture = start(Variant::FirstValley).await;
    let mut session = Session::signed_on(&fixture).await;
    for (path, text) in [
        ("/member/99999", "No records found"),
        (
            "/member/55555",
            "You are not authorized to view this member record.",
        ),
        ("/member/99999/transfer", "No records found"),
        (
            "/member/55555/new-subaccount",
            "You are not authorized to view this member record.",
        ),
    ] {
        let reply = session.get(path).await;
        assert_eq!(reply.status, 200, "{path}");
        assert!(reply.text().contains(text), "{path}");
    }
    fixture.shutdown().await.expect("clean shutdown");
}

/// What a member detail page must show.
struct Detail {
    member: &'static str,
    name: &'static str,
    grid: &'static [[&'static str; 5]],
    /// (savings balance, status); `None` means "No savings account on file".
    summary: Option<(&'static str, &'static str)>,
}

const DETAILS: &[Detail] = &[
    Detail {
        member: "12345",
        name: "Ada Lovelace",
        grid: &[
            ["S-12345-01", "12345", "Savings", "$4,210.55", "Active"],
            ["C-12345-02", "12345", "Checking", "$812.30", "Active"],
        ],
        summary: Some(("$4,210.55", "Active")),
    },
    Detail {
        member: "67890",
        name: "Grace Hopper",
        grid: &[["S-67890-01", "67890", "Savings", "$18,730.00", "Active"]],
        summary: Some(("$18,730.00", "Active")),
    },
    Detail {
        member: "24680",
        name: "Alan Turing",
        grid: &[["S-24680-01", "24680", "Savings", "$0.00", "Closed"]],
        summary: Some(("$0.00", "Closed")),
    },
    Detail {
        member: "13579",
        name: "Katherine Johnson",
        grid: &[["C-13579-01", "13579", "Checking", "$1,020.00", "Active"]],
        summary: None,
    },
];

/// The grid rows of a detail page: the rows after the "Account" header row, up to the first
/// row that is not five cells.
pub(crate) fn grid_rows(reply: &Reply) -> Vec<Vec<String>> {
    reply
        .rows()
        .into_iter()
        .skip_while(|row| row.first().map(String::as_str) != Some("Account"))
        .skip(1)
        .take_while(|row| row.len() == 5)
        .collect()
}

fn check_detail(variant: Variant, reply: &Reply, expect: &Detail) {
    let (heading, savings_label, status_label) = match variant {
        Variant::FirstValley => ("Member Detail", "Savings Balance", "Status"),
        Variant::NorthgateFcu => ("Member Profile", "Savings Bal.", "Acct Status"),
    };
    let context = format!("{variant} {}", expect.member);
    assert_eq!(
        (reply.status, reply.heading()),
        (200, heading.to_owned()),
        "{context}"
    );
    let rows = reply.rows();
    assert!(
        has_row(&rows, &["Member Number", expect.member]),
        "{context}"
    );
    assert!(has_row(&rows, &["Name", expect.name]), "{context}");
    assert!(has_row(
        &rows,
        &["Account", "Member", "Type", "Balance", "Status"]
    ));
    assert_eq!(grid_rows(reply), expect.grid.to_vec(), "{context}");
    let text = reply.text();
    match expect.summary {
        Some((balance, status)) => {
            assert!(has_row(&rows, &[savings_label, balance]), "{context}");
            assert!(has_row(&rows, &[status_label, status]), "{context}");
            assert!(has_row(&rows, &["As Of", "09/11/2026"]), "{context}");
            assert!(!text.contains("No savings account on file"), "{context}");
        }
        None => {
            assert!(text.contains("No savings account on file for this member."));
            assert!(
                !rows
                    .iter()
                    .any(|row| row.first().map(String::as_str) == Some("As Of"))
            );
        }
    }
    for link in ["Open Sub-Account", "Transfer Funds", "New Search"] {
        assert!(
            reply.body.contains(&format!(">{link}</a>")),
            "{context} {link}"
        );
    }
    assert!(reply.body.contains(&format!(
        "onclick=\"location.href='/member/{}/transfer';return false;\"",
        expect.member
    )));
}

#[tokio::test]
async fn member_detail_shows_each_seeded_member_on_both_variants() {
    for variant in Variant::ALL {
        let fixture = start(variant).await;
        let mut session = Session::signed_on(&fixture).await;
        for expect in DETAILS {
            let reply = session.get(&format!("/member/{}", expect.member)).await;
            check_detail(variant, &reply, expect);
        }
        fixture.shutdown().await.expect("clean shutdown");
    }
}

#[tokio::test]
async fn grid_headers_are_th_and_the_decoy_repeats_the_labels() {
    let fixture = start(Variant::FirstValley).await;
    let mut session = Session::signed_on(&fixture).await;
    let detail = session.get("/member/12345").await;
    assert!(detail.body.contains(
        "<tr><th>Account</th><th>Member</th><th>Type</th><th>Balance</th><th>Status</th></tr>"
    ));
    let search = session.get("/search").await;
    let rows = search.rows();
    assert!(has_row(&rows, &["Training members"]));
    assert!(has_row(
        &rows,
        &["Member Number", "Name", "Savings Balance"]
    ));
    assert!(has_row(&rows, &["12345", "Ada Lovelace", "$4,210.55"]));
    assert!(has_row(&rows, &["13579", "Katherine Johnson", "n/a"]));
    assert!(search.body.contains(
        "<input type=\"text\" name=\"memno\" title=\"Member Number\" class=\"frmfld\" \
         maxlength=\"10\" value=\"\">"
    ));
    assert!(
        search
            .body
            .contains("<input type=\"submit\" value=\"Search\" class=\"btn1\">")
    );
    // The decoy lists seeded values, never live ones.
    fixture
        .handle()
        .set_balance("S-12345-01", memberdesk::Money::from_cents(1))
        .expect("the account exists");
    assert!(has_row(
        &session.get("/search").await.rows(),
        &["12345", "Ada Lovelace", "$4,210.55"]
    ));
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn hostile_input_is_escaped_wherever_it_is_echoed() {
    let hostile = "\"><script>alert('x')</script>";
    let escaped = "&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;";
    let fixture = start(Variant::FirstValley).await;
    let mut anonymous = Session::new(&fixture);
    let login = anonymous
        .post_form("/login", &[("user", hostile), ("pw", "x")])
        .await;
    let mut session = Session::signed_on(&fixture).await;
    let search = session.post_form("/search", &[("memno", hostile)]).await;
    let subaccount = session
        .post_form(
            "/member/12345/new-subaccount",
            &[("accttype", hostile), ("initdep", hostile)],
        )
        .await;
    let transfer = session
        .post_form(
            "/member/12345/transfer",
            &[
                ("fromacct", hostile),
                ("toacct", "C-12345-02"),
                ("amt", hostile),
                ("clientref", hostile),
            ],
        )
        .await;
    fixture.handle().arm(
        memberdesk::Fault::UndeclaredDialog,
        memberdesk::FaultCount::Times(1),
    );
    let notice = session.get("/member/12345?a='1'&b=2").await;
    for (page, reply) in [
        ("login", &login),
        ("search", &search),
        ("subaccount", &subaccount),
        ("transfer", &transfer),
    ] {
        assert_eq!(reply.status, 200, "{page}");
        assert!(
            reply.body.contains(escaped),
            "{page} escapes the echoed value"
        );
        assert!(
            !reply.body.contains("<script>"),
            "{page} has no live script"
        );
    }
    assert_eq!(notice.heading(), "System Notice");
    assert!(
        notice
            .body
            .contains("href=\"/member/12345?a=&#39;1&#39;&amp;b=2\"")
    );
    fixture.shutdown().await.expect("clean shutdown");
}

/// Every page of a variant, in a fixed order, as (name, reply).
async fn every_page(variant: Variant) -> Vec<(&'static str, Reply)> {
    let fixture = start(variant).await;
    let skin = match variant {
        Variant::FirstValley => [
            "memno",
            "accttype",
            "initdep",
            "fromacct",
            "toacct",
            "amt",
            "clientref",
        ],
        Variant::NorthgateFcu => [
            "member_num",
            "acct_kind",
            "open_amt",
            "src_acct",
            "dst_acct",
            "xfer_amt",
            "xfer_memo",
        ],
    };
    let [member, account_type, deposit, from, to, amount, reference] = skin;
    let mut anonymous = Session::new(&fixture);
    let mut pages = vec![
        ("frameset", anonymous.get("/").await),
        ("nav", anonymous.get("/nav").await),
        ("login", anonymous.get("/login").await),
    ];
    let mut session = Session::signed_on(&fixture).await;
    pages.push(("search", session.get("/search").await));
    pages.push((
        "search_not_found",
        session.post_form("/search", &[(member, "99999")]).await,
    ));
    pages.push((
        "search_restricted",
        session.post_form("/search", &[(member, "55555")]).await,
    ));
    for (name, id) in [
        ("detail_12345", "12345"),
        ("detail_67890", "67890"),
        ("detail_24680", "24680"),
        ("detail_13579", "13579"),
    ] {
        pages.push((name, session.get(&format!("/member/{id}")).await));
    }
    pages.push((
        "subaccount_form",
        session.get("/member/12345/new-subaccount").await,
    ));
    pages.push((
        "subaccount_below_minimum",
        session
            .post_form(
                "/member/12345/new-subaccount",
                &[(account_type, "checking"), (deposit, "10.00")],
            )
            .await,
    ));
    pages.push((
        "subaccount_confirmation",
        session
            .post_form(
                "/member/12345/new-subaccount",
                &[(account_type, "certificate"), (deposit, "500")],
            )
            .await,
    ));
    pages.push(("transfer_form", session.get("/member/12345/transfer").await));
    let fields = [(from, "S-12345-01"), (to, "C-12345-02"), (amount, "100")];
    pages.push((
        "transfer_review",
        session.post_form("/member/12345/transfer", &fields).await,
    ));
    pages.push((
        "transfer_complete",
        session
            .post_form("/member/12345/transfer/confirm", &fields)
            .await,
    ));
    pages.push((
        "transfer_insufficient",
        session
            .post_form(
                "/member/12345/transfer/confirm",
                &[(from, "C-12345-02"), (to, "S-12345-01"), (amount, "99999")],
            )
            .await,
    ));
    for fault in ["lookalike_row", "undeclared_dialog", "transient_load"] {
        crate::support::arm(&fixture, fault, 1).await;
        let name = match fault {
            "lookalike_row" => "fault_lookalike_row",
            "undeclared_dialog" => "fault_system_notice",
            _ => "fault_unavailable",
        };
        pages.push((name, session.get("/member/12345").await));
    }
    let with_reference = [
        (from, "C-12345-02"),
        (to, "S-12345-01"),
        (amount, "12.5"),
        (reference, "idem-7f3a"),
    ];
    pages.push((
        "transfer_review_reference",
        session
            .post_form("/member/12345/transfer", &with_reference)
            .await,
    ));
    pages.push((
        "transfer_complete_reference",
        session
            .post_form("/member/12345/transfer/confirm", &with_reference)
            .await,
    ));
    pages.push((
        "transfer_reference_refused",
        session
            .post_form(
                "/member/12345/transfer",
                &[
                    (from, "C-12345-02"),
                    (to, "S-12345-01"),
                    (amount, "12.5"),
                    (reference, "idem 7f3a"),
                ],
            )
            .await,
    ));
    pages.push((
        "detail_recent_transfers",
        session.get("/member/12345").await,
    ));
    pages.push(("transfer_lookup", session.get("/transfers/lookup").await));
    pages.push((
        "transfer_lookup_found",
        session
            .get(&format!("/transfers/lookup?{reference}=idem-7f3a"))
            .await,
    ));
    pages.push((
        "transfer_lookup_none",
        session
            .get(&format!("/transfers/lookup?{reference}=idem-none"))
            .await,
    ));
    // Last, so the pages above are exactly what they were before the hostile faults existed.
    for fault in [
        "lookalike_account",
        "quoted_refusals",
        "decoy_control",
        "duplicate_summary_row",
    ] {
        crate::support::arm(&fixture, fault, -1).await;
    }
    pages.push(("hostile_search", session.get("/search").await));
    pages.push((
        "hostile_search_not_found",
        session.post_form("/search", &[(member, "99999")]).await,
    ));
    pages.push(("hostile_detail_12345", session.get("/member/12345").await));
    pages.push((
        "hostile_subaccount_form",
        session.get("/member/12345/new-subaccount").await,
    ));
    pages.push((
        "hostile_subaccount_confirmation",
        session
            .post_form(
                "/member/12345/new-subaccount",
                &[(account_type, "savings"), (deposit, "40")],
            )
            .await,
    ));
    pages.push((
        "hostile_transfer_form",
        session.get("/member/12345/transfer").await,
    ));
    pages.push((
        "hostile_transfer_review",
        session.post_form("/member/12345/transfer", &fields).await,
    ));
    pages.push((
        "hostile_transfer_complete",
        session
            .post_form("/member/12345/transfer/confirm", &fields)
            .await,
    ));
    pages.push((
        "hostile_transfer_lookup",
        session
            .get(&format!("/transfers/lookup?{reference}=idem-7f3a"))
            .await,
    ));
    pages.push(("decoy", session.get("/decoy").await));
    fixture.shutdown().await.expect("clean shutdown");
    pages
}

#[tokio::test]
async fn every_page_of_both_variants_matches_its_snapshot() {
    for variant in Variant::ALL {
        for (name, reply) in every_page(variant).await {
            let snapshot = format!(
                "status: {}\ncontent-type: {}\n\n{}",
                reply.status,
                reply.header("content-type").unwrap_or("-"),
                reply.body
            );
            insta::assert_snapshot!(format!("{variant}__{name}"), snapshot);
        }
    }
}
