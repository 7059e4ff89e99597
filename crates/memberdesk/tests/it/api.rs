//! The JSON read API: `GET /api/members/{id}` with a session cookie or the bearer token.

use memberdesk::Variant;

use crate::support::{Session, send, start};

async fn check_api(headers: &[(&str, &str)], member: &str, status: u16, body: serde_json::Value) {
    let fixture = start(Variant::NorthgateFcu).await;
    let reply = send(
        fixture.addr(),
        "GET",
        &format!("/api/members/{member}"),
        headers,
        None,
    )
    .await;
    assert_eq!(
        (reply.status, reply.json()),
        (status, body),
        "{member} {headers:?}"
    );
    assert_eq!(reply.header("content-type"), Some("application/json"));
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn api_reads_members_with_the_bearer_token() {
    let bearer = [("Authorization", "Bearer md-api-token")];
    check_api(
        &bearer,
        "12345",
        200,
        serde_json::json!({
            "member_id": "12345",
            "name": "Ada Lovelace",
            "accounts": [
                {"account": "S-12345-01", "type": "Savings", "balance": "4210.55", "status": "Active"},
                {"account": "C-12345-02", "type": "Checking", "balance": "812.30", "status": "Active"},
            ],
        }),
    )
    .await;
    check_api(
        &bearer,
        "24680",
        200,
        serde_json::json!({
            "member_id": "24680",
            "name": "Alan Turing",
            "accounts": [
                {"account": "S-24680-01", "type": "Savings", "balance": "0.00", "status": "Closed"},
            ],
        }),
    )
    .await;
    check_api(
        &bearer,
        "99999",
        404,
        serde_json::json!({"error": "member_not_found"}),
    )
    .await;
    check_api(
        &bearer,
        "55555",
        403,
        serde_json::json!({"error": "permission_denied"}),
    )
    .await;
    let unauthorized = serde_json::json!({"error": "unauthorized"});
    check_api(&[], "12345", 401, unauthorized.clone()).await;
    check_api(
        &[("Authorization", "Bearer wrong")],
        "12345",
        401,
        unauthorized.clone(),
    )
    .await;
    check_api(
        &[("Cookie", "md_session=md-00000001")],
        "12345",
        401,
        unauthorized,
    )
    .await;
}

#[tokio::test]
async fn api_accepts_a_signed_in_session_and_sees_live_balances() {
    let fixture = start(Variant::FirstValley).await;
    let mut session = Session::signed_on(&fixture).await;
    session
        .post_form(
            "/member/12345/transfer/confirm",
            &[
                ("fromacct", "C-12345-02"),
                ("toacct", "S-12345-01"),
                ("amt", "12.30"),
            ],
        )
        .await;
    let cookie = format!("md_session={}", session.cookie.clone().expect("signed on"));
    let reply = send(
        fixture.addr(),
        "GET",
        "/api/members/12345",
        &[("Cookie", &cookie)],
        None,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["accounts"][0]["balance"], "4222.85");
    assert_eq!(reply.json()["accounts"][1]["balance"], "800.00");
    fixture.shutdown().await.expect("clean shutdown");
}
