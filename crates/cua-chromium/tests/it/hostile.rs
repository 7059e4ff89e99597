//! The hostile page suite: every way a page can try to leave the allowlist. Each attempt is
//! failed inside the browser before anything is fetched (the off-list server counts zero
//! hits), it is reported by `take_blocked_requests`, and the allowed page keeps working.

use std::time::Duration;

use cua_policy::BrowserAction;
use cua_surface::{SurfaceDriver, SurfaceError};

use crate::support::{
    Authority, Page, Site, blocked_until, find, goto, has, launch, observe_until,
};

/// A page that attempts one escape on load, with a counter button to prove it still works.
fn hostile(attempt: &str) -> Page {
    Page::html(format!(
        r#"<html><head><title>Hostile</title>{head}</head><body>
        <h1>Still here</h1>
        <button onclick="this.textContent = 'Clicked ' + (++window.clicks || (window.clicks = 1))">Count</button>
        {attempt}
        </body></html>"#,
        head = if attempt.starts_with("<meta") {
            attempt
        } else {
            ""
        },
    ))
}

struct Escape {
    path: &'static str,
    /// The off-list path the attempt reaches for.
    target: &'static str,
    attempt: String,
}

fn escapes(off: &str) -> Vec<Escape> {
    let e = |path, target: &'static str, attempt: String| Escape {
        path,
        target,
        attempt,
    };
    vec![
        e(
            "/window-open",
            "/popup",
            format!("<script>window.open('{off}/popup')</script>"),
        ),
        e(
            "/meta-refresh",
            "/meta",
            format!(r#"<meta http-equiv="refresh" content="0;url={off}/meta">"#),
        ),
        e(
            "/js-location",
            "/js",
            format!("<script>setTimeout(() => {{ location.href = '{off}/js'; }}, 10)</script>"),
        ),
        e(
            "/form-post",
            "/post",
            format!(
                r#"<form method="post" action="{off}/post"><input name="card" value="4111"></form><script>document.forms[0].submit()</script>"#
            ),
        ),
        e(
            "/iframe",
            "/frame",
            format!(r#"<iframe name="evil" src="{off}/frame"></iframe>"#),
        ),
        e(
            "/redirect-link",
            "/redirected",
            r#"<script>location.href = '/redirect'</script>"#.to_string(),
        ),
        e(
            "/fetch",
            "/fetch",
            format!(
                "<script>fetch('{off}/fetch').catch(() => {{}}); const x = new XMLHttpRequest(); x.open('GET', '{off}/xhr'); x.send();</script>"
            ),
        ),
        e(
            "/img",
            "/img.png",
            format!(r#"<img src="{off}/img.png" alt="">"#),
        ),
        e(
            "/beacon",
            "/beacon",
            format!("<script>navigator.sendBeacon('{off}/beacon', 'x')</script>"),
        ),
        e(
            "/target-blank",
            "/blank",
            format!(
                r#"<a id="out" href="{off}/blank" target="_blank">out</a><script>document.getElementById('out').click()</script>"#
            ),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_escape_is_blocked_reported_and_the_page_keeps_working() {
    let off_list = Site::serve(vec![]).await;
    let off = off_list.url("");
    let escapes = escapes(&off);
    let mut pages: Vec<(&'static str, Page)> = escapes
        .iter()
        .map(|escape| (escape.path, hostile(&escape.attempt)))
        .collect();
    pages.push(("/redirect", Page::redirect(format!("{off}/redirected"))));
    let site = Site::serve(pages).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    for escape in &escapes {
        let url = site.url(escape.path);
        goto(&surface, &authority, &url).await;
        let blocked = blocked_until(&surface, escape.target).await;
        let report = blocked
            .iter()
            .find(|b| b.url.contains(escape.target))
            .unwrap_or_else(|| {
                panic!(
                    "{}: no block reported for {}; got {blocked:?}",
                    escape.path, escape.target
                )
            });
        assert!(report.reason.contains("not on the allowlist"), "{report:?}");
        assert!(report.url.starts_with(&off), "{report:?}");
        // The page still works, and it is still the page we opened.
        let snapshot = surface.observe().await.unwrap();
        assert_eq!(snapshot.url, url, "{} moved the page", escape.path);
        let button = find(&snapshot, "button", "Count").clone();
        surface
            .dispatch(authority.allow(BrowserAction::Click, Some(&button)))
            .await
            .unwrap();
        observe_until(&surface, "the counter", |s| has(s, "button", "Clicked 1")).await;
    }
    // Give any straggler a moment, then: nothing ever reached the off-list server.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        off_list.hits(),
        0,
        "off-list paths fetched: {:?}",
        off_list.paths.lock().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_off_the_list_is_refused_and_the_page_does_not_move() {
    let off_list = Site::serve(vec![]).await;
    let site = Site::serve(vec![
        ("/", Page::html("<title>Home</title><h1>Home</h1>")),
        ("/redirect", Page::redirect(off_list.url("/redirected"))),
    ])
    .await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/")).await;
    for url in [off_list.url("/direct"), off_list.url("/again")] {
        let refused = surface.dispatch(authority.allow_anywhere(&url)).await;
        assert!(
            matches!(refused, Err(SurfaceError::NavigationBlocked { .. })),
            "{url}: {refused:?}"
        );
    }
    // Allowed first hop, off-list second hop: stopped at the redirect.
    let redirected = surface
        .dispatch(authority.allow(
            BrowserAction::Navigate {
                url: site.url("/redirect"),
            },
            None,
        ))
        .await;
    match redirected {
        Err(SurfaceError::NavigationBlocked { reason, .. }) => {
            assert!(reason.contains("/redirected"), "{reason}")
        }
        other => panic!("expected a blocked redirect, got {other:?}"),
    }
    let snapshot = surface.observe().await.unwrap();
    assert_eq!(
        (snapshot.url.as_str(), snapshot.title.as_str()),
        (site.url("/").as_str(), "Home")
    );
    let blocked = surface.take_blocked_requests();
    let urls: Vec<&str> = blocked.iter().map(|b| b.url.as_str()).collect();
    assert_eq!(urls.len(), 3, "{blocked:?}");
    assert!(
        urls[0].ends_with("/direct")
            && urls[1].ends_with("/again")
            && urls[2].ends_with("/redirected")
    );
    assert!(
        surface.take_blocked_requests().is_empty(),
        "taking drains the log"
    );
    assert_eq!(off_list.hits(), 0);
}
