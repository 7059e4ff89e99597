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
            // Slower than any fixed quiet window: only the page's own rhythm says it goes on.
            "/ticking",
            Page::html(
                r#"<title>Ticking</title><p id="n">0</p><script>
                let n = 0; const t = setInterval(() => {
                  document.getElementById('n').textContent = ++n < 10 ? String(n) : 'done';
                  if (n >= 10) clearInterval(t);
                }, 70);</script>"#,
            ),
        ),
        (
            // One change starts a slide that no further change shows until it ends.
            "/sliding",
            Page::html(
                r#"<title>Sliding</title><style>#box { transition: transform 400ms linear; }
                .moved { transform: translateX(300px); }</style>
                <div id="box"><p id="s">sliding</p></div><script>
                requestAnimationFrame(() => requestAnimationFrame(() => {
                  const box = document.getElementById('box');
                  box.addEventListener('transitionend', () => {
                    document.getElementById('s').textContent = 'arrived';
                  });
                  box.className = 'moved';
                }));</script>"#,
            ),
        ),
        (
            // A frame that renders nothing gets no animation frames.
            "/hidden-frame",
            Page::html(
                r#"<title>Hidden frame</title><h1>Visible</h1>
                <iframe src="/next" style="display:none"></iframe>"#,
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

/// The texts of a snapshot, for a failure message.
fn texts(snapshot: &cua_snapshot::UiSnapshot) -> Vec<&str> {
    snapshot
        .nodes
        .iter()
        .map(|node| node.name.as_str())
        .collect()
}

/// Waits for a stable screen and says whether it shows `text`.
async fn stable_shows(surface: &impl SurfaceDriver, text: &str) -> Result<(), String> {
    match surface
        .wait(WaitCondition::SnapshotStable, Duration::from_secs(5))
        .await
        .map_err(|error| error.to_string())?
    {
        WaitOutcome::Met(snapshot) if has(&snapshot, "text", text) => Ok(()),
        WaitOutcome::Met(snapshot) => Err(format!(
            "stable before {text:?} showed: {:?}",
            texts(&snapshot)
        )),
        WaitOutcome::TimedOut(snapshot) => Err(format!("never stable: {:?}", texts(&snapshot))),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_updating_itself_on_a_timer_is_not_stable_between_two_ticks() {
    let site = Site::serve(pages()).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/ticking")).await;
    // Before two ticks a page has shown no rhythm of its own; from then on a wait rides it out.
    let ticked = surface
        .wait_until(
            |snapshot| has(snapshot, "text", "2"),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert!(matches!(ticked, WaitOutcome::Met(_)), "{ticked:?}");
    stable_shows(&surface, "done").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moving_page_is_not_stable_until_it_stops_moving() {
    let site = Site::serve(pages()).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/sliding")).await;
    stable_shows(&surface, "arrived").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_counts_from_the_wait_not_from_the_last_change() {
    let site = Site::serve(pages()).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/next")).await;
    surface.observe().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Looked at once already: the wait's own look is the kept one, in a few milliseconds.
    surface.observe().await.unwrap();
    // Long quiet before the wait says nothing of what its action may still start: the page is
    // watched for the whole window from the wait's start, however still it was before.
    let started = Instant::now();
    let outcome = surface
        .wait(WaitCondition::SnapshotStable, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(matches!(outcome, WaitOutcome::Met(_)), "{outcome:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(50),
        "met after {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_that_renders_nothing_does_not_hold_a_wait() {
    let site = Site::serve(pages()).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/hidden-frame")).await;
    stable_shows(&surface, "Visible").await.unwrap();
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
