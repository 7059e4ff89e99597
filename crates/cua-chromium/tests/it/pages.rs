//! Observation on hand-written pages: frames stitched under their hosts, ids, scopes, values,
//! states, bounds in top-level coordinates, HTTP statuses, determinism.

use cua_policy::{BrowserAction, RawInput};
use cua_surface::{SurfaceDriver, SurfaceError};

use crate::support::{Authority, Page, Site, find, goto, has, launch, observe_until, render};

fn shell_site_pages() -> Vec<(&'static str, Page)> {
    vec![
        (
            "/",
            Page::html(
                r#"<html><head><title>Shell</title></head>
                <frameset cols="220,*"><frame name="nav" src="/nav"><frame name="content" src="/content"></frameset></html>"#,
            ),
        ),
        (
            "/nav",
            Page::html(
                r##"<html><body><a href="#" onclick="parent.content.location='/content'">Member Search</a><br>
                <a href="/bye" target="_top">Sign Off</a></body></html>"##,
            ),
        ),
        (
            "/content",
            Page::html(
                r#"<html><head><title>Content</title></head><body>
                <h2>Member Search</h2>
                <table class="t1"><tr><td>Member Number</td><td><input name="memno" class="frmfld" title="Member Number" value="12" required></td></tr>
                <tr><td>Type</td><td><select name="ty"><option value="s">Savings</option><option value="c" selected>Checking</option></select></td></tr></table>
                <input type="submit" value="Search" class="btn1" disabled>
                <input type="checkbox" checked title="Active">
                <h3>Training members</h3>
                <table><tr><th>Member Number</th><th>Name</th></tr><tr><td>12345</td><td>Ada</td></tr></table>
                <iframe name="inner" src="/inner" style="position:absolute; left:300px; top:300px; width:200px; height:100px; border:3px solid red"></iframe>
                </body></html>"#,
            ),
        ),
        (
            "/inner",
            Page::html(
                r#"<html><body style="margin:10px"><button id="ib" onclick="this.textContent = 'Pressed ' + (window.presses = (window.presses || 0) + 1)">Inner Button</button></body></html>"#,
            ),
        ),
        (
            "/missing-frame",
            Page::html(
                r#"<frameset rows="50%,*"><frame name="top" src="/nav"><frame name="bottom" src="/broken"></frameset>"#,
            ),
        ),
        (
            "/broken",
            Page::html("<title>Oops</title><h1>Service Temporarily Unavailable</h1>").status(502),
        ),
        ("/bye", Page::html("<title>Bye</title><h1>Signed off</h1>")),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_are_stitched_under_their_hosts() {
    let site = Site::serve(shell_site_pages()).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/")).await;
    let snapshot = observe_until(&surface, "the inner frame", |s| {
        has(s, "button", "Inner Button")
    })
    .await;
    insta::assert_snapshot!(render(&snapshot).replace(&site.entry(), "SITE"));

    let textbox = find(&snapshot, "textbox", "Member Number");
    assert_eq!(
        textbox.id.as_str(),
        "content:/document[0]/table[0]/row[0]/cell[1]/textbox[0]"
    );
    assert_eq!(textbox.css_hint.as_deref(), Some("input[name=\"memno\"]"));
    assert_eq!(textbox.value.as_deref(), Some("12"));
    assert_eq!(textbox.states, ["required"]);
    assert_eq!(
        find(&snapshot, "combobox", "").value.as_deref(),
        Some("Checking")
    );
    assert_eq!(find(&snapshot, "button", "Search").states, ["disabled"]);
    assert_eq!(
        find(&snapshot, "button", "Search").css_hint.as_deref(),
        Some("input.btn1")
    );
    assert_eq!(find(&snapshot, "checkbox", "Active").states, ["checked"]);
    let inner = find(&snapshot, "button", "Inner Button");
    assert_eq!(inner.id.as_str(), "inner:/document[0]/button[0]");
    assert_eq!(inner.scope.frame.as_deref(), Some("inner"));
    assert_eq!(inner.css_hint.as_deref(), Some("#ib"));
    let decoy = snapshot
        .nodes
        .iter()
        .filter(|n| n.role == "cell" && n.name == "Member Number");
    let regions: Vec<_> = decoy
        .map(|n| n.scope.region.clone().unwrap_or_default())
        .collect();
    assert_eq!(regions, ["member_search", "training_members"]);

    // A click two frames deep lands on the button.
    let receipt = surface
        .dispatch(authority.allow(BrowserAction::Click, Some(inner)))
        .await
        .unwrap();
    assert!(receipt.message.starts_with("clicked at"), "{receipt:?}");
    observe_until(&surface, "the first press", |s| {
        has(s, "button", "Pressed 1")
    })
    .await;

    // The bounds are in top-level viewport pixels: a raw click at the box's centre, through two
    // frame boundaries, lands on the button too.
    let bounds = inner.bounds.expect("the inner button is rendered");
    assert!(bounds.x > 500.0 && bounds.y > 300.0, "{bounds:?}");
    let (x, y) = (
        bounds.x + bounds.width / 2.0,
        bounds.y + bounds.height / 2.0,
    );
    assert_eq!(
        snapshot.nodes[snapshot.hit_test(x, y).unwrap()].name,
        "Inner Button"
    );
    let click = authority.allow(BrowserAction::RawInput(RawInput::MouseClick { x, y }), None);
    surface.dispatch(click).await.unwrap();
    observe_until(&surface, "the second press", |s| {
        has(s, "button", "Pressed 2")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_page_state_gives_the_same_bytes() {
    let site = Site::serve(shell_site_pages()).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/")).await;
    let first = observe_until(&surface, "the inner frame", |s| {
        has(s, "button", "Inner Button")
    })
    .await;
    let again = surface.observe().await.unwrap();
    assert_eq!(again.to_json_bytes(), first.to_json_bytes());
    let receipt = surface
        .dispatch(authority.allow(BrowserAction::Reload, None))
        .await
        .unwrap();
    assert!(receipt.navigated, "{receipt:?}");
    let reloaded = observe_until(&surface, "the inner frame", |s| {
        has(s, "button", "Inner Button")
    })
    .await;
    assert_eq!(
        reloaded.to_json_bytes(),
        first.to_json_bytes(),
        "{}",
        render(&reloaded)
    );

    // A second browser on the same page state agrees byte for byte.
    let other = launch(&[site.entry()]).await;
    goto(&other, &authority, &site.url("/")).await;
    let elsewhere = observe_until(&other, "the inner frame", |s| {
        has(s, "button", "Inner Button")
    })
    .await;
    assert_eq!(elsewhere.digest(), first.digest());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_status_is_the_worst_document_of_the_current_page() {
    let site = Site::serve(shell_site_pages()).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    let receipt = goto(&surface, &authority, &site.url("/missing-frame")).await;
    assert_eq!(receipt.http_status, Some(502));
    let snapshot = observe_until(&surface, "the broken frame", |s| {
        has(s, "heading", "Service Temporarily Unavailable")
    })
    .await;
    assert_eq!(snapshot.http_status, Some(502));
    let receipt = goto(&surface, &authority, &site.url("/nowhere")).await;
    assert_eq!(receipt.http_status, Some(404));
    assert_eq!(surface.observe().await.unwrap().http_status, Some(404));
    let receipt = goto(&surface, &authority, &site.url("/bye")).await;
    assert_eq!((receipt.navigated, receipt.http_status), (true, Some(200)));
    let snapshot = surface.observe().await.unwrap();
    assert_eq!(
        (snapshot.http_status, snapshot.title.as_str()),
        (Some(200), "Bye")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_from_a_previous_document_is_gone() {
    let site = Site::serve(shell_site_pages()).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/inner")).await;
    let snapshot = surface.observe().await.unwrap();
    let button = find(&snapshot, "button", "Inner Button").clone();
    goto(&surface, &authority, &site.url("/bye")).await;
    let stale = surface
        .dispatch(authority.allow(BrowserAction::Click, Some(&button)))
        .await;
    match stale {
        Err(SurfaceError::NodeGone { node_id }) => assert_eq!(node_id, button.id.as_str()),
        other => panic!("expected node gone, got {other:?}"),
    }
    // An id the last observation never had is gone too.
    let mut invented = button.clone();
    invented.id = cua_snapshot::NodeId::new("main:/document[0]/button[7]");
    let missing = surface
        .dispatch(authority.allow(BrowserAction::Click, Some(&invented)))
        .await;
    assert!(
        matches!(missing, Err(SurfaceError::NodeGone { .. })),
        "{missing:?}"
    );
}

/// A node's labels are the page's own label relations, read from the browser: `<label for>`, a
/// `<label>` around the control, `aria-labelledby` (several, in order). Text that merely sits
/// before a control labels nothing, and neither does a `<label for>` naming another control.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_are_the_pages_label_relations() {
    let site = Site::serve(vec![(
        "/form",
        Page::html(
            r#"<html><head><title>Labels</title></head><body><main>
            <label for="amount" id="l1">Amount</label> <span>USD</span> <input id="amount">
            <label for="amount" id="l2">in dollars</label>
            <label>Memo <input id="memo"></label>
            <span id="fee">Fee</span> <span id="waived">to waive</span>
            <input id="charge" aria-labelledby="fee waived">
            <p>Enter the Amount here</p> <input id="note" title="Note">
            <label for="nowhere">Orphan</label>
            </main></body></html>"#,
        ),
    )])
    .await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/form")).await;
    let snapshot = surface.observe().await.unwrap();
    let labels = |name: &str| find(&snapshot, "textbox", name).labels.clone();
    // Two <label for> elements (with ids) are two labels, never one joined name.
    assert_eq!(labels("Amount in dollars"), ["Amount", "in dollars"]);
    assert_eq!(labels("Memo"), ["Memo"]);
    // The elements aria-labelledby names make one label, as a screen reader announces it.
    assert_eq!(labels("Fee to waive"), ["Fee to waive"]);
    assert!(labels("Note").is_empty(), "{}", render(&snapshot));
    assert!(
        snapshot
            .nodes
            .iter()
            .filter(|node| node.role != "textbox")
            .all(|node| node.labels.is_empty()),
        "only the controls are labelled:\n{}",
        render(&snapshot)
    );
}
