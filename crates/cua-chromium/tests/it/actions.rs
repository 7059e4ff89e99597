//! Every action kind on a hand-written page, checked by what the page then holds.

use cua_policy::{BrowserAction, RawInput, ScrollDirection};
use cua_snapshot::{UiNode, UiSnapshot};
use cua_surface::{DispatchReceipt, SurfaceDriver, SurfaceError};

use crate::support::{Authority, Page, Site, find, goto, has, launch, observe_until};

const PAGE: &str = r#"<html><head><title>Actions</title></head><body style="margin:0">
<h1>Actions</h1>
<input id="field" title="Field" value="abc">
<input id="second" title="Second">
<select title="Pick"><option value="a">Alpha</option><option value="b">Beta</option><option value="c" disabled>Gamma</option></select>
<div style="position:relative; width:200px; height:40px">
  <button id="covered" style="position:absolute; left:0; top:0; width:200px; height:40px" onclick="this.textContent = 'Covered clicked'">Covered</button>
  <div id="glass" style="position:absolute; left:0; top:0; width:200px; height:40px; z-index:2"></div>
</div>
<button onclick="alert('hello'); this.textContent = 'Alert passed'">Alert</button>
<button onclick="this.textContent = confirm('Really?') ? 'Confirmed' : 'Declined'">Confirm</button>
<p id="log">no key</p>
<input id="due" type="date" title="Due" onchange="document.getElementById('log').textContent = 'due ' + this.value">
<div><span style="position:relative; left:-9999px"><button onfocus="this.parentElement.style.left = '0'" onclick="this.textContent = 'Shy clicked'">Shy</button></span></div>
<div><span style="position:relative; left:-9999px"><button onfocus="this.parentElement.style.left = '0'; this.textContent = 'Pay now'" onclick="this.textContent = 'Trap clicked'">Trap</button></span></div>
<div style="height:3000px"></div>
<button onclick="this.textContent = 'Far clicked'">Far</button>
<script>
  document.getElementById('second').addEventListener('keydown', e => {
    document.getElementById('log').textContent = 'key ' + e.key;
  });
</script>
</body></html>"#;

struct Bench {
    _site: Site,
    surface: cua_chromium::ChromiumSurface,
    authority: Authority,
}

impl Bench {
    async fn open() -> Self {
        let site = Site::serve(vec![("/", Page::html(PAGE))]).await;
        let surface = launch(&[site.entry()]).await;
        let authority = Authority::new(&[site.entry()]);
        goto(&surface, &authority, &site.url("/")).await;
        Self {
            _site: site,
            surface,
            authority,
        }
    }

    async fn snapshot(&self) -> UiSnapshot {
        self.surface.observe().await.expect("observing")
    }

    async fn act(
        &self,
        action: BrowserAction,
        target: Option<&UiNode>,
    ) -> Result<DispatchReceipt, SurfaceError> {
        self.surface
            .dispatch(self.authority.allow(action, target))
            .await
    }

    async fn value(&self, name: &str) -> String {
        find(&self.snapshot().await, "textbox", name)
            .value
            .clone()
            .unwrap_or_default()
    }
}

fn typing(text: &str, clear_first: bool) -> BrowserAction {
    BrowserAction::Type {
        text: text.to_string(),
        clear_first,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_appends_or_replaces_and_never_reports_the_text() {
    let bench = Bench::open().await;
    let field = find(&bench.snapshot().await, "textbox", "Field").clone();
    let receipt = bench.act(typing("def", false), Some(&field)).await.unwrap();
    assert_eq!(bench.value("Field").await, "abcdef");
    assert!(
        !receipt.message.contains("def") && !receipt.navigated,
        "{receipt:?}"
    );
    bench.act(typing("xyz", true), Some(&field)).await.unwrap();
    assert_eq!(bench.value("Field").await, "xyz");
    bench.act(typing("", true), Some(&field)).await.unwrap();
    assert_eq!(bench.value("Field").await, "");
    let focused = bench.snapshot().await;
    assert!(
        find(&focused, "textbox", "Field")
            .states
            .contains(&"focused".to_string())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_and_raw_input_reach_the_focused_element() {
    let bench = Bench::open().await;
    let second = find(&bench.snapshot().await, "textbox", "Second").clone();
    let bounds = second.bounds.expect("rendered");
    let click = RawInput::MouseClick {
        x: bounds.x + 5.0,
        y: bounds.y + bounds.height / 2.0,
    };
    bench
        .act(BrowserAction::RawInput(click), None)
        .await
        .unwrap();
    bench
        .act(
            BrowserAction::RawInput(RawInput::Text {
                text: "hello".into(),
            }),
            None,
        )
        .await
        .unwrap();
    assert_eq!(bench.value("Second").await, "hello");
    bench
        .act(
            BrowserAction::PressKey {
                key: "Backspace".into(),
            },
            Some(&second),
        )
        .await
        .unwrap();
    assert_eq!(bench.value("Second").await, "hell");
    bench
        .act(
            BrowserAction::RawInput(RawInput::Key { key: "a".into() }),
            None,
        )
        .await
        .unwrap();
    let snapshot = bench.snapshot().await;
    assert_eq!(
        find(&snapshot, "textbox", "Second").value.as_deref(),
        Some("hella")
    );
    assert!(
        has(&snapshot, "text", "key a"),
        "the keydown listener saw the key"
    );
    bench
        .act(BrowserAction::PressKey { key: "Tab".into() }, None)
        .await
        .unwrap();
    let tabbed = bench.snapshot().await;
    assert!(
        find(&tabbed, "combobox", "Pick")
            .states
            .contains(&"focused".to_string()),
        "Tab moved focus"
    );
    let unknown = bench
        .act(
            BrowserAction::PressKey {
                key: "Hyper+Q".into(),
            },
            None,
        )
        .await;
    assert!(
        matches!(unknown, Err(SurfaceError::ActionFailed { .. })),
        "{unknown:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_by_value_or_label() {
    let bench = Bench::open().await;
    let pick = find(&bench.snapshot().await, "combobox", "Pick").clone();
    let select = |value: &str| BrowserAction::Select {
        value: value.to_string(),
    };
    bench.act(select("Beta"), Some(&pick)).await.unwrap();
    assert_eq!(
        find(&bench.snapshot().await, "combobox", "Pick")
            .value
            .as_deref(),
        Some("Beta")
    );
    bench.act(select("a"), Some(&pick)).await.unwrap();
    assert_eq!(
        find(&bench.snapshot().await, "combobox", "Pick")
            .value
            .as_deref(),
        Some("Alpha")
    );
    for refused in ["Delta", "Gamma"] {
        let result = bench.act(select(refused), Some(&pick)).await;
        assert!(
            matches!(result, Err(SurfaceError::ActionFailed { .. })),
            "{refused}: {result:?}"
        );
    }
    let field = find(&bench.snapshot().await, "textbox", "Field").clone();
    let not_a_select = bench.act(select("a"), Some(&field)).await;
    assert!(
        matches!(not_a_select, Err(SurfaceError::ActionFailed { .. })),
        "{not_a_select:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clicks_scroll_into_view_and_fall_back_when_covered() {
    let bench = Bench::open().await;
    let snapshot = bench.snapshot().await;
    let far = find(&snapshot, "button", "Far").clone();
    assert!(
        far.bounds.expect("rendered").y > 3000.0,
        "below the fold: {:?}",
        far.bounds
    );
    let receipt = bench.act(BrowserAction::Click, Some(&far)).await.unwrap();
    assert!(receipt.message.starts_with("clicked at"), "{receipt:?}");
    let after = observe_until(&bench.surface, "the far click", |s| {
        has(s, "button", "Far clicked")
    })
    .await;
    let scrolled = find(&after, "button", "Far clicked")
        .bounds
        .expect("rendered");
    assert!(
        scrolled.y >= 0.0 && scrolled.y < 800.0,
        "scrolled into view: {scrolled:?}"
    );

    let covered = find(&after, "button", "Covered").clone();
    let receipt = bench
        .act(BrowserAction::Click, Some(&covered))
        .await
        .unwrap();
    assert!(
        receipt.message.contains("covered by `div#glass`"),
        "{receipt:?}"
    );
    observe_until(&bench.surface, "the covered click", |s| {
        has(s, "button", "Covered clicked")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrolling_moves_the_page_by_the_amount_and_into_view() {
    let bench = Bench::open().await;
    let top = |s: &UiSnapshot| find(s, "button", "Far").bounds.expect("rendered").y;
    let start = top(&bench.snapshot().await);
    let down = BrowserAction::Scroll {
        direction: ScrollDirection::Down,
        amount: Some(500),
    };
    bench.act(down, None).await.unwrap();
    let moved = top(&bench.snapshot().await);
    assert!((start - moved - 500.0).abs() < 1.0, "{start} → {moved}");
    let up = BrowserAction::Scroll {
        direction: ScrollDirection::Up,
        amount: Some(200),
    };
    bench.act(up, None).await.unwrap();
    assert!((top(&bench.snapshot().await) - (moved + 200.0)).abs() < 1.0);
    let far = find(&bench.snapshot().await, "button", "Far").clone();
    let into_view = BrowserAction::Scroll {
        direction: ScrollDirection::IntoView,
        amount: None,
    };
    bench.act(into_view.clone(), Some(&far)).await.unwrap();
    let visible = top(&bench.snapshot().await);
    assert!((0.0..800.0).contains(&visible), "{visible}");
    let needs_target = bench.act(into_view, None).await;
    assert!(
        matches!(needs_target, Err(SurfaceError::ActionFailed { .. })),
        "{needs_target:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dialogs_never_hang_and_confirm_is_declined() {
    let bench = Bench::open().await;
    let snapshot = bench.snapshot().await;
    let alert = find(&snapshot, "button", "Alert");
    let receipt = bench.act(BrowserAction::Click, Some(alert)).await.unwrap();
    assert!(
        receipt
            .message
            .ends_with("dialogs answered: alert accepted"),
        "{receipt:?}"
    );
    observe_until(&bench.surface, "the alert to pass", |s| {
        has(s, "button", "Alert passed")
    })
    .await;
    let confirm = find(&snapshot, "button", "Confirm");
    let receipt = bench
        .act(BrowserAction::Click, Some(confirm))
        .await
        .unwrap();
    assert!(
        receipt
            .message
            .ends_with("dialogs answered: confirm declined"),
        "{receipt:?}"
    );
    observe_until(&bench.surface, "the confirm to be declined", |s| {
        has(s, "button", "Declined")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_date_input_takes_its_iso_value_and_refuses_an_impossible_one() {
    let bench = Bench::open().await;
    let due = find(&bench.snapshot().await, "date", "Due").clone();
    let receipt = bench
        .act(typing("2027-01-15", true), Some(&due))
        .await
        .unwrap();
    assert!(
        receipt.message.contains("set the date control's value"),
        "{receipt:?}"
    );
    let snapshot = observe_until(&bench.surface, "the change event", |s| {
        has(s, "text", "due 2027-01-15")
    })
    .await;
    assert_eq!(
        find(&snapshot, "date", "Due").value.as_deref(),
        Some("2027-01-15")
    );
    // No 31st of February: the control refuses it, and the action says so.
    let refused = bench
        .act(typing("2027-02-31", true), Some(&due))
        .await
        .expect_err("an impossible date is refused");
    assert!(
        refused.to_string().contains("refused the value"),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_answers_ok_only_to_the_confirm_it_declares() {
    let bench = Bench::open().await;
    let snapshot = bench.snapshot().await;
    let confirm = find(&snapshot, "button", "Confirm").clone();
    let accepting = |message: &str| BrowserAction::ClickAcceptingConfirm {
        confirm: message.to_string(),
    };
    // Another message: declined, and the action fails saying what it saw.
    let refused = bench
        .act(accepting("Are you sure?"), Some(&confirm))
        .await
        .expect_err("a confirm with another message is not answered OK");
    assert!(
        refused.to_string().contains(
            "raised no confirm() reading \"Are you sure?\" (dialogs answered: confirm declined)"
        ),
        "{refused}"
    );
    observe_until(&bench.surface, "the confirm to be declined", |s| {
        has(s, "button", "Declined")
    })
    .await;
    // The declared message (whitespace squashed): answered OK, once.
    let declined = find(&bench.snapshot().await, "button", "Declined").clone();
    let receipt = bench
        .act(accepting("  Really? "), Some(&declined))
        .await
        .unwrap();
    assert!(
        receipt
            .message
            .ends_with("dialogs answered: confirm accepted"),
        "{receipt:?}"
    );
    observe_until(&bench.surface, "the confirm to be accepted", |s| {
        has(s, "button", "Confirmed")
    })
    .await;
    // A click that raises no dialog at all fails: nothing was confirmed.
    let far = find(&bench.snapshot().await, "button", "Far").clone();
    let none = bench
        .act(accepting("Really?"), Some(&far))
        .await
        .expect_err("no dialog, no success");
    assert!(
        none.to_string().contains("(dialogs answered: none)"),
        "{none}"
    );
    // The next plain click does not inherit the armed answer.
    let confirmed = find(&bench.snapshot().await, "button", "Confirmed").clone();
    let receipt = bench
        .act(BrowserAction::Click, Some(&confirmed))
        .await
        .unwrap();
    assert!(
        receipt
            .message
            .ends_with("dialogs answered: confirm declined"),
        "{receipt:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_shown_on_focus_is_clicked_unless_focusing_renamed_it() {
    let bench = Bench::open().await;
    // Off screen until focused, as WordPress's row actions are.
    let shy = find(&bench.snapshot().await, "button", "Shy").clone();
    let receipt = bench.act(BrowserAction::Click, Some(&shy)).await.unwrap();
    assert!(
        receipt.message.contains("(shown once focused)"),
        "{receipt:?}"
    );
    observe_until(&bench.surface, "the revealed click", |s| {
        has(s, "button", "Shy clicked")
    })
    .await;
    // A page that renames the control as it is focused gets no click: the policy judged "Trap".
    let trap = find(&bench.snapshot().await, "button", "Trap").clone();
    let refused = bench
        .act(BrowserAction::Click, Some(&trap))
        .await
        .expect_err("renamed on focus");
    assert!(
        refused
            .to_string()
            .contains("renamed when it was focused (\"Trap\" became \"Pay now\")"),
        "{refused}"
    );
    assert!(!has(&bench.snapshot().await, "button", "Trap clicked"));
}
