//! Faults armed through the unlinked control surface: each fires, is consumed one per eligible
//! request, runs in the fixed guard order, and reset clears it.

use std::time::{Duration, Instant};

use memberdesk::{Money, RunningFixture, Variant};

use crate::pages::grid_rows;
use crate::support::{Reply, Session, arm, control, send, start};

/// One request the fault is eligible for, and how to tell from the reply that it fired.
pub(crate) struct FaultCase {
    pub(crate) fault: &'static str,
    pub(crate) method: &'static str,
    pub(crate) path: &'static str,
    pub(crate) fields: &'static [(&'static str, &'static str)],
    pub(crate) fired: fn(&Reply) -> bool,
}

async fn perform(session: &mut Session, case: &FaultCase) -> Reply {
    match case.method {
        "GET" => session.get(case.path).await,
        _ => session.post_form(case.path, case.fields).await,
    }
}

fn armed(fixture: &RunningFixture) -> serde_json::Value {
    serde_json::to_value(fixture.handle().view().armed).expect("serializable")
}

/// Arms the fault once: the first eligible request shows it, the second does not, and the
/// state shows it consumed. Then armed indefinitely it fires twice, and reset clears it.
pub(crate) async fn check_fires_once(case: FaultCase) {
    let fixture = start(Variant::FirstValley).await;
    let mut session = Session::signed_on(&fixture).await;
    arm(&fixture, case.fault, 1).await;
    assert_eq!(armed(&fixture), serde_json::json!({ case.fault: 1 }));
    let first = perform(&mut session, &case).await;
    assert!((case.fired)(&first), "{} fires: {}", case.fault, first.body);
    assert_eq!(
        armed(&fixture),
        serde_json::json!({}),
        "{} is consumed",
        case.fault
    );
    if session.cookie.is_none() {
        session = Session::signed_on(&fixture).await;
    }
    let second = perform(&mut session, &case).await;
    assert!(!(case.fired)(&second), "{} fires only once", case.fault);

    arm(&fixture, case.fault, -1).await;
    for attempt in 0..2 {
        if session.cookie.is_none() {
            session = Session::signed_on(&fixture).await;
        }
        let reply = perform(&mut session, &case).await;
        assert!(
            (case.fired)(&reply),
            "{} fires indefinitely ({attempt})",
            case.fault
        );
    }
    assert_eq!(armed(&fixture), serde_json::json!({ case.fault: -1 }));
    let reset = control(&fixture, "/_control/reset", "").await;
    assert_eq!(reset.json()["armed"], serde_json::json!({}));
    if session.cookie.is_none() {
        session = Session::signed_on(&fixture).await;
    }
    let after_reset = perform(&mut session, &case).await;
    assert!(
        !(case.fired)(&after_reset),
        "{} is cleared by reset",
        case.fault
    );
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn transient_load_serves_a_502() {
    check_fires_once(FaultCase {
        fault: "transient_load",
        method: "GET",
        path: "/member/12345",
        fields: &[],
        fired: |reply| reply.status == 502 && reply.heading() == "Service Temporarily Unavailable",
    })
    .await;
}

#[tokio::test]
async fn session_timeout_redirects_to_sign_on_and_deletes_the_cookie() {
    check_fires_once(FaultCase {
        fault: "session_timeout",
        method: "GET",
        path: "/search",
        fields: &[],
        fired: |reply| {
            reply.status == 303
                && reply.location() == Some("/login")
                && reply
                    .header("set-cookie")
                    .is_some_and(|cookie| cookie.starts_with("md_session=; Path=/; Max-Age=0"))
        },
    })
    .await;
}

#[tokio::test]
async fn undeclared_dialog_interrupts_a_navigation() {
    check_fires_once(FaultCase {
        fault: "undeclared_dialog",
        method: "GET",
        path: "/member/67890",
        fields: &[],
        fired: |reply| {
            reply.heading() == "System Notice"
                && reply
                    .body
                    .contains("<a href=\"/member/67890\" class=\"lnk1\">Continue</a>")
        },
    })
    .await;
}

#[tokio::test]
async fn validation_error_refuses_a_valid_sub_account() {
    check_fires_once(FaultCase {
        fault: "validation_error",
        method: "POST",
        path: "/member/12345/new-subaccount",
        fields: &[("accttype", "savings"), ("initdep", "500.00")],
        fired: |reply| {
            reply.heading() == "Open Sub-Account"
                && reply.text().contains(
                    "Initial deposit is below the minimum required for this account type.",
                )
        },
    })
    .await;
}

#[tokio::test]
async fn lookalike_row_adds_a_near_duplicate_row_before_the_real_one() {
    check_fires_once(FaultCase {
        fault: "lookalike_row",
        method: "GET",
        path: "/member/12345",
        fields: &[],
        fired: |reply| grid_rows(reply).len() == 3,
    })
    .await;
    let fixture = start(Variant::NorthgateFcu).await;
    let mut session = Session::signed_on(&fixture).await;
    arm(&fixture, "lookalike_row", 1).await;
    let reply = session.get("/member/12345").await;
    assert_eq!(
        grid_rows(&reply),
        [
            ["S-12346-01", "12346", "Savings", "$5,210.55", "Active"],
            ["S-12345-01", "12345", "Savings", "$4,210.55", "Active"],
            ["C-12345-02", "12345", "Checking", "$812.30", "Active"],
        ]
        .map(|row| row.map(str::to_owned).to_vec())
    );
    // The summary still describes the real savings account.
    assert!(crate::support::has_row(
        &reply.rows(),
        &["Savings Bal.", "$4,210.55"]
    ));
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn slow_page_delays_one_response_by_a_second_and_a_half() {
    let fixture = start(Variant::FirstValley).await;
    let mut session = Session::signed_on(&fixture).await;
    arm(&fixture, "slow_page", 1).await;
    let started = Instant::now();
    let slow = session.get("/member/12345").await;
    let slow_elapsed = started.elapsed();
    let started = Instant::now();
    let fast = session.get("/member/12345").await;
    let fast_elapsed = started.elapsed();
    assert_eq!((slow.status, fast.status), (200, 200));
    assert_eq!(slow.body, fast.body, "slowness changes nothing but timing");
    assert!(
        slow_elapsed >= Duration::from_millis(1_500),
        "{slow_elapsed:?}"
    );
    assert!(
        fast_elapsed < Duration::from_millis(1_000),
        "{fast_elapsed:?}"
    );
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn guards_fire_in_the_fixed_order_one_fault_per_request() {
    let fixture = start(Variant::FirstValley).await;
    let mut session = Session::signed_on(&fixture).await;
    for fault in ["undeclared_dialog", "session_timeout", "transient_load"] {
        arm(&fixture, fault, 1).await;
    }
    let first = session.get("/search").await;
    assert_eq!(first.status, 502, "the 502 comes first");
    let second = session.get("/search").await;
    assert_eq!(
        (second.status, second.location()),
        (303, Some("/login")),
        "then timeout"
    );
    assert_eq!(session.cookie, None);
    let third = session.get("/search").await;
    assert_eq!(
        (third.status, third.location()),
        (303, Some("/login")),
        "then not signed in"
    );
    assert_eq!(
        armed(&fixture),
        serde_json::json!({"undeclared_dialog": 1}),
        "the dialog waits for a signed-in navigation"
    );
    let mut session = Session::signed_on(&fixture).await;
    let posted = session.post_form("/search", &[("memno", "12345")]).await;
    assert_eq!(
        posted.location(),
        Some("/member/12345"),
        "a POST is never interrupted"
    );
    let fourth = session.get("/member/12345").await;
    assert_eq!(fourth.heading(), "System Notice", "then the dialog");
    let fifth = session.get("/member/12345").await;
    assert_eq!(fifth.heading(), "Member Detail");
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_faulted_confirm_moves_nothing() {
    let fixture = start(Variant::FirstValley).await;
    let mut session = Session::signed_on(&fixture).await;
    arm(&fixture, "transient_load", 1).await;
    let fields = [
        ("fromacct", "S-12345-01"),
        ("toacct", "C-12345-02"),
        ("amt", "5"),
    ];
    let faulted = session
        .post_form("/member/12345/transfer/confirm", &fields)
        .await;
    assert_eq!(faulted.status, 502);
    assert_eq!(
        fixture.handle().balance("S-12345-01"),
        Some(Money::from_cents(421_055))
    );
    let posted = session
        .post_form("/member/12345/transfer/confirm", &fields)
        .await;
    assert_eq!(posted.heading(), "Transfer Complete");
    assert_eq!(
        fixture.handle().balance("S-12345-01"),
        Some(Money::from_cents(420_555))
    );
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn sign_on_api_and_control_are_never_faulted() {
    let fixture = start(Variant::FirstValley).await;
    arm(&fixture, "transient_load", -1).await;
    arm(&fixture, "undeclared_dialog", -1).await;
    let mut session = Session::new(&fixture);
    assert_eq!(session.get("/").await.status, 200);
    assert_eq!(session.get("/nav").await.status, 200);
    assert_eq!(session.get("/login").await.heading(), "Operator Sign On");
    assert_eq!(session.sign_on().await.status, 303);
    let api = send(
        fixture.addr(),
        "GET",
        "/api/members/12345",
        &[("Authorization", "Bearer md-api-token")],
        None,
    )
    .await;
    assert_eq!(api.status, 200);
    assert_eq!(session.get("/search").await.status, 502);
    fixture.shutdown().await.expect("clean shutdown");
}

/// (request body, expected status, expected error text fragment).
async fn check_arm(body: &str, status: u16, error: &str) {
    let fixture = start(Variant::FirstValley).await;
    let reply = control(&fixture, "/_control/arm", body).await;
    assert_eq!(reply.status, status, "{body}: {}", reply.body);
    let json = reply.json();
    if status == 200 {
        assert!(json["armed"].is_object(), "{body}");
    } else {
        let message = json["error"].as_str().expect("an error message");
        assert!(message.contains(error), "{body}: {message}");
    }
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn arm_validates_its_request() {
    check_arm(r#"{"fault": "slow_page", "count": 2}"#, 200, "").await;
    check_arm(r#"{"fault": "slow_page"}"#, 200, "").await;
    check_arm(r#"{"fault": "slow_page", "count": 0}"#, 200, "").await;
    check_arm(
        r#"{"fault": "flaky", "count": 1}"#,
        400,
        "unknown fault `flaky` (valid faults: transient_load, session_timeout, undeclared_dialog, \
         validation_error, slow_page, lookalike_row, lookalike_account, quoted_refusals, \
         decoy_control, duplicate_summary_row)",
    )
    .await;
    check_arm(
        r#"{"fault": "slow_page", "count": -7}"#,
        400,
        "invalid fault count -7",
    )
    .await;
    check_arm(
        r#"{"fault": "slow_page", "times": 1}"#,
        400,
        "unknown field `times`",
    )
    .await;
    check_arm("not json", 400, "invalid request").await;
}

#[tokio::test]
async fn control_state_reports_faults_balances_and_transfers_and_reset_restores_them() {
    let fixture = start(Variant::NorthgateFcu).await;
    let mut session = Session::signed_on(&fixture).await;
    arm(&fixture, "lookalike_row", 3).await;
    session
        .post_form(
            "/member/12345/transfer/confirm",
            &[
                ("src_acct", "S-12345-01"),
                ("dst_acct", "C-12345-02"),
                ("xfer_amt", "10"),
            ],
        )
        .await;
    session
        .post_form(
            "/member/67890/new-subaccount",
            &[("acct_kind", "checking"), ("open_amt", "30")],
        )
        .await;
    let state = send(fixture.addr(), "GET", "/_control/state", &[], None).await;
    assert_eq!(state.header("content-type"), Some("application/json"));
    assert_eq!(
        state.json(),
        serde_json::json!({
            "variant": "northgate-fcu",
            "armed": {"lookalike_row": 3},
            "balances": {
                "C-12345-02": "822.30",
                "C-13579-01": "1020.00",
                "C-67890-02": "30.00",
                "S-12345-01": "4200.55",
                "S-24680-01": "0.00",
                "S-67890-01": "18730.00",
            },
            "transfers": [{"confirmation": "TF-000001", "member_id": "12345",
                           "from": "S-12345-01", "to": "C-12345-02", "amount": "10.00"}],
            "sessions": 1,
            "decoy_hits": 0,
        })
    );
    let reset = control(&fixture, "/_control/reset", "").await;
    let json = reset.json();
    assert_eq!(json["armed"], serde_json::json!({}));
    assert_eq!(json["transfers"], serde_json::json!([]));
    assert_eq!(json["balances"]["S-12345-01"], "4210.55");
    assert_eq!(json["balances"].get("C-67890-02"), None);
    assert_eq!(json["sessions"], 1, "sessions survive a reset");
    fixture.shutdown().await.expect("clean shutdown");
}
