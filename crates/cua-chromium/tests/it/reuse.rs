//! A reused observation equals a fresh one. The page changes itself on a timer, one kind of
//! change at a time (each one the accessibility tree or the DOM snapshot shows, most of them
//! without an event a page would normally fire); between two changes the test takes `observe()`
//! (reused when no frame's change watcher saw anything) and a fresh observation, and they must
//! be equal. Nothing is dispatched meanwhile, since an action makes the next observation fresh:
//! one click starts the page's schedule, and the test counts from that click.

use std::time::{Duration, Instant};

use cua_surface::{SurfaceDriver, WaitCondition};

use cua_policy::BrowserAction;

use crate::support::{Authority, Page, Site, find, goto, launch, render};

/// How far apart the page's changes are; the test looks in the middle of each gap.
const CADENCE_MS: u64 = 900;

/// Each change, as a statement run on the page, and what it is.
const CHANGES: [(&str, &str); 20] = [
    (
        "text",
        "document.getElementById('t').firstChild.data = 'Balance 2'",
    ),
    (
        "attribute",
        "document.getElementById('b').setAttribute('aria-label', 'Renamed')",
    ),
    (
        "insertion",
        "document.getElementById('list').append(Object.assign(document.createElement('li'), {textContent: 'Added'}))",
    ),
    ("removal", "document.getElementById('gone').remove()"),
    (
        "value set by a script",
        "document.getElementById('v').value = 'set quietly'",
    ),
    (
        "checked set by a script",
        "document.getElementById('c').checked = true",
    ),
    (
        "selection set by a script",
        "document.getElementById('s').selectedIndex = 1",
    ),
    (
        "a class hiding a row",
        "document.getElementById('h').className = 'hidden'",
    ),
    (
        "a style rule added through the CSSOM",
        "document.styleSheets[0].insertRule('#cssom { display: none }')",
    ),
    (
        "an open shadow root's content",
        "document.getElementById('host').shadowRoot.innerHTML = '<button>Inside 2</button>'",
    ),
    (
        "a shadow root attached",
        "document.getElementById('late').attachShadow({mode: 'open'}).innerHTML = '<p>Shadowed</p>'",
    ),
    (
        "focus moved by a script",
        "document.getElementById('v').focus()",
    ),
    (
        "a details element opened",
        "document.getElementById('d').open = true",
    ),
    (
        "a frame's text",
        "frames[0].document.getElementById('ft').textContent = 'Frame 2'",
    ),
    ("scrolled by a script", "scrollTo(0, 400)"),
    (
        "an element scrolled by a script",
        "document.getElementById('box').scrollTop = 120",
    ),
    (
        "a style rule edited through the CSSOM",
        "[...document.styleSheets[0].cssRules].find((r) => r.selectorText === '#styled').style.display = 'none'",
    ),
    (
        "a popover shown",
        "document.getElementById('pop').showPopover()",
    ),
    ("the title", "document.title = 'Reuse 2'"),
    ("the URL's fragment", "location.hash = '#moved'"),
];

fn page() -> String {
    let steps: Vec<String> = CHANGES
        .iter()
        .enumerate()
        .map(|(index, (_, statement))| {
            format!(
                "setTimeout(() => {{ {statement}; }}, {});",
                (index as u64 + 1) * CADENCE_MS
            )
        })
        .collect();
    format!(
        r#"<title>Reuse</title><style>.hidden {{ display: none }} #styled {{ color: black }}</style>
        <p id="t">Balance 1</p><button id="b">Named</button>
        <ul id="list"><li>First</li><li id="gone">Going</li></ul>
        <input id="v" aria-label="Value" value="typed"><input id="c" type="checkbox" aria-label="Checked">
        <select id="s" aria-label="Choice"><option>One</option><option>Two</option></select>
        <p id="h">Hidden later</p><p id="cssom">Styled away</p><p id="styled">Styled in place</p>
        <div id="box" style="height: 60px; overflow: auto"><p>Row 1</p><p>Row 2</p><p>Row 3</p><p>Row 4</p><p>Row 5</p><p>Row 6</p></div>
        <div id="pop" popover>Popped</div>
        <div id="host"></div><div id="late"><p>Light</p></div>
        <details id="d"><summary>More</summary><p>Details body</p></details>
        <iframe src="/frame" title="Inner"></iframe><button id="go">Start</button>
        <div style="height: 3000px">Tall</div>
        <script>
        document.getElementById('host').attachShadow({{mode: 'open'}}).innerHTML = '<button>Inside 1</button>';
        document.getElementById('go').addEventListener('click', () => {{ {} }});
        </script>"#,
        steps.join(" ")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_observation_always_equals_a_fresh_one() {
    let site = Site::serve(vec![
        ("/", Page::html(page())),
        ("/frame", Page::html(r#"<p id="ft">Frame 1</p>"#)),
    ])
    .await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/")).await;
    surface
        .wait(WaitCondition::SnapshotStable, Duration::from_secs(5))
        .await
        .unwrap();
    let page = surface.observe().await.unwrap();
    let start = find(&page, "button", "Start").clone();
    let loaded = Instant::now();
    surface
        .dispatch(authority.allow(BrowserAction::Click, Some(&start)))
        .await
        .unwrap();
    let mut previous = surface.observe_afresh().await.unwrap();
    for (index, (what, _)) in CHANGES.iter().enumerate() {
        // The middle of the gap after this change.
        let at = loaded + Duration::from_millis((index as u64 + 1) * CADENCE_MS + CADENCE_MS / 2);
        tokio::time::sleep_until(at.into()).await;
        let (_, reused_before) = surface.observation_counts();
        let observed = surface.observe().await.unwrap();
        let fresh = surface.observe_afresh().await.unwrap();
        assert_eq!(
            render(&observed),
            render(&fresh),
            "after the change `{what}`, observe() returned a stale snapshot"
        );
        assert_eq!(
            observed, fresh,
            "after the change `{what}`, observe() returned stale bounds, states or ids"
        );
        assert_ne!(
            fresh, previous,
            "the change `{what}` did not show in the snapshot: the test proves nothing by it"
        );
        assert_eq!(
            surface.observation_counts().1,
            reused_before,
            "after the change `{what}`, observe() reused the last observation"
        );
        // Nothing changed since the fresh one: this one is reused, and equal.
        let again = surface.observe().await.unwrap();
        assert_eq!(
            surface.observation_counts().1,
            reused_before + 1,
            "with nothing changed after `{what}`, observe() fetched everything again"
        );
        assert_eq!(again, fresh);
        previous = fresh;
    }
}
