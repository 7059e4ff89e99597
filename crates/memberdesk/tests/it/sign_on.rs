//! Sign-on, sessions, the shell (frameset, nav) and logout.

use memberdesk::Variant;

use crate::support::{Session, send, start};

#[tokio::test]
async fn sign_on_sets_an_http_only_session_cookie() {
    for variant in Variant::ALL {
        let fixture = start(variant).await;
        let mut session = Session::new(&fixture);
        let reply = session.sign_on().await;
        assert_eq!(reply.status, 303, "{variant}");
        assert_eq!(reply.location(), Some("/search"));
        let cookie = reply.header("set-cookie").expect("a session cookie");
        assert_eq!(
            cookie,
            "md_session=md-00000001; Path=/; HttpOnly; SameSite=Lax"
        );
        let search = session.get("/search").await;
        assert_eq!(
            (search.status, search.heading()),
            (200, "Member Search".to_owned())
        );
        fixture.shutdown().await.expect("clean shutdown");
    }
}

/// (operator id, password) → whether sign-on succeeds.
async fn check_credentials(variant: Variant, operator_id: &str, password: &str, expect: bool) {
    let fixture = start(variant).await;
    let (user_field, password_field) = match variant {
        Variant::FirstValley => ("user", "pw"),
        Variant::NorthgateFcu => ("opr_id", "opr_pass"),
    };
    let mut session = Session::new(&fixture);
    let reply = session
        .post_form(
            "/login",
            &[(user_field, operator_id), (password_field, password)],
        )
        .await;
    if expect {
        assert_eq!(reply.status, 303, "{operator_id}/{password}");
        assert!(session.cookie.is_some());
    } else {
        assert_eq!(reply.status, 200, "{operator_id}/{password}");
        assert_eq!(reply.heading(), "Operator Sign On");
        assert!(reply.text().contains("Invalid operator ID or password."));
        assert_eq!(reply.header("set-cookie"), None);
        assert!(
            reply.body.contains(&format!("value=\"{operator_id}\"")),
            "the operator id is kept"
        );
    }
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn only_the_contract_credentials_sign_on() {
    for variant in Variant::ALL {
        check_credentials(variant, "teller01", "not-a-real-password", true).await;
        check_credentials(variant, "teller01", "wrong", false).await;
        check_credentials(variant, "teller02", "not-a-real-password", false).await;
        check_credentials(variant, "", "", false).await;
    }
    // The base field names do nothing on the other variant.
    let fixture = start(Variant::NorthgateFcu).await;
    let mut session = Session::new(&fixture);
    let reply = session
        .post_form(
            "/login",
            &[("user", "teller01"), ("pw", "not-a-real-password")],
        )
        .await;
    assert_eq!(reply.status, 200);
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn content_pages_redirect_to_sign_on_without_a_session() {
    let fixture = start(Variant::FirstValley).await;
    let mut anonymous = Session::new(&fixture);
    for path in [
        "/search",
        "/member/12345",
        "/member/12345/new-subaccount",
        "/member/12345/transfer",
    ] {
        let reply = anonymous.get(path).await;
        assert_eq!(
            (reply.status, reply.location()),
            (303, Some("/login")),
            "{path}"
        );
    }
    let posted = anonymous
        .post_form("/member/12345/transfer/confirm", &[])
        .await;
    assert_eq!((posted.status, posted.location()), (303, Some("/login")));
    anonymous.cookie = Some("md-99999999".to_owned());
    let forged = anonymous.get("/search").await;
    assert_eq!((forged.status, forged.location()), (303, Some("/login")));
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn the_frameset_points_the_content_frame_at_sign_on_or_search() {
    let fixture = start(Variant::FirstValley).await;
    let mut session = Session::new(&fixture);
    let before = session.get("/").await;
    assert!(before.body.contains("<frameset cols=\"220,*\">"));
    assert!(before.body.contains("<frame name=\"nav\" src=\"/nav\">"));
    assert!(
        before
            .body
            .contains("<frame name=\"content\" src=\"/login\">")
    );
    session.sign_on().await;
    let after = session.get("/").await;
    assert!(
        after
            .body
            .contains("<frame name=\"content\" src=\"/search\">")
    );
    let nav = session.get("/nav").await;
    assert!(
        nav.body.contains(
            "onclick=\"parent.content.location='/search';return false;\">Member Search</a>"
        )
    );
    assert!(
        nav.body
            .contains("href=\"/logout\" class=\"nv1\" target=\"_top\">Sign Off</a>")
    );
    assert!(
        nav.body
            .contains("aria-disabled=\"true\" onclick=\"return false;\">Reports</a>")
    );
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn logout_clears_the_cookie_and_ends_the_session() {
    let fixture = start(Variant::FirstValley).await;
    let mut session = Session::signed_on(&fixture).await;
    let token = session.cookie.clone().expect("signed on");
    let reply = session.get("/logout").await;
    assert_eq!((reply.status, reply.location()), (303, Some("/")));
    assert_eq!(
        reply.header("set-cookie"),
        Some("md_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax")
    );
    assert_eq!(session.cookie, None);
    // Replaying the old token does not work: the session ended on the server too.
    session.cookie = Some(token);
    let replayed = session.get("/search").await;
    assert_eq!(
        (replayed.status, replayed.location()),
        (303, Some("/login"))
    );
    assert_eq!(fixture.handle().view().sessions, 0);
    fixture.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn shutdown_stops_listening() {
    let fixture = start(Variant::FirstValley).await;
    let addr = fixture.addr();
    assert_eq!(fixture.base_url(), format!("http://{addr}"));
    assert_eq!(send(addr, "GET", "/login", &[], None).await.status, 200);
    fixture.shutdown().await.expect("clean shutdown");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
