//! The waits: bounded, polling, and a timeout is an outcome, not an error.

use std::time::{Duration, Instant};

use cua_policy::BrowserAction;
use cua_surface::{SurfaceDriver, WaitCondition, WaitOutcome};

use crate::support::{Authority, Page, Site, find, goto, has, launch};

fn pages() -> Vec<(&'static str, Page)> {
    vec![
        (
            "/settling",
            Page::html(
                r#"<title>Settling</title><p id="n">0</p><script>
                let n = 0; const t = setInterval(() => {
                  document.getElementById('n').textContent = ++n < 10 ? String(n) : 'done';
                  if (n >= 10) clearInterval(t);
                }, 40);</script><a href="/next">Next</a>"#,
            ),
        ),
        (
            "/restless",
            Page::html(
                r#"<title>Restless</title><p id="n">0</p><script>
                let n = 0; setInterval(() => { document.getElementById('n').textContent = String(++n); }, 30);</script>"#,
            ),
        ),
        ("/next", Page::html("<title>Next</title><h1>Next page</h1>")),
        (
            "/shell",
            Page::html(
                r#"<title>Shell</title><frameset cols="50%,*"><frame name="nav" src="/nav"><frame name="content" src="/next"></frameset>"#,
            ),
        ),
        (
            "/nav",
            Page::html(r#"<a href="/settling" target="content">Settle</a>"#),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stable_is_met_once_the_page_stops_changing_and_times_out_otherwise() {
    let site = Site::serve(pages()).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/settling")).await;
    match surface
        .wait(WaitCondition::SnapshotStable, Duration::from_secs(5))
        .await
        .unwrap()
    {
        WaitOutcome::Met(snapshot) => assert!(has(&snapshot, "text", "done")),
        WaitOutcome::TimedOut(snapshot) => panic!("never stable: {snapshot:?}"),
    }
    goto(&surface, &authority, &site.url("/restless")).await;
    let started = Instant::now();
    let outcome = surface
        .wait(WaitCondition::SnapshotStable, Duration::from_millis(600))
        .await
        .unwrap();
    assert!(matches!(outcome, WaitOutcome::TimedOut(_)), "{outcome:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_is_met_by_a_new_document_in_any_frame() {
    let site = Site::serve(pages()).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/settling")).await;
    let before = surface.observe().await.unwrap();
    let link = find(&before, "link", "Next").clone();
    let receipt = surface
        .dispatch(authority.allow(BrowserAction::Click, Some(&link)))
        .await
        .unwrap();
    assert!(receipt.navigated, "{receipt:?}");
    let outcome = surface
        .wait(
            WaitCondition::Navigation {
                before: Box::new(before),
            },
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    let WaitOutcome::Met(after) = outcome else {
        panic!("no navigation: {outcome:?}")
    };
    assert_eq!(after.url, site.url("/next"));
    let unchanged = surface
        .wait(
            WaitCondition::Navigation { before: after },
            Duration::from_millis(400),
        )
        .await
        .unwrap();
    assert!(
        matches!(unchanged, WaitOutcome::TimedOut(_)),
        "{unchanged:?}"
    );

    // In a frameset the top URL stays; the content frame's new document is the navigation.
    goto(&surface, &authority, &site.url("/shell")).await;
    let shell = surface.observe().await.unwrap();
    let settle = find(&shell, "link", "Settle").clone();
    surface
        .dispatch(authority.allow(BrowserAction::Click, Some(&settle)))
        .await
        .unwrap();
    let outcome = surface
        .wait(
            WaitCondition::Navigation {
                before: Box::new(shell.clone()),
            },
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    let WaitOutcome::Met(after) = outcome else {
        panic!("no frame navigation: {outcome:?}")
    };
    assert_eq!(after.url, shell.url);
    assert!(has(&after, "document", "Settling"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_until_polls_a_predicate_within_its_bound() {
    let site = Site::serve(pages()).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/settling")).await;
    let outcome = surface
        .wait_until(|s| has(s, "text", "done"), Duration::from_secs(5))
        .await
        .unwrap();
    assert!(matches!(outcome, WaitOutcome::Met(_)), "{outcome:?}");
    let started = Instant::now();
    let outcome = surface
        .wait_until(|s| has(s, "text", "never"), Duration::from_millis(300))
        .await
        .unwrap();
    assert!(matches!(outcome, WaitOutcome::TimedOut(_)), "{outcome:?}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
}
