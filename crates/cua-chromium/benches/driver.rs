//! Driver benchmark against real Chromium and the MemberDesk fixture: browser launch,
//! `observe()` on the member detail page, click round trips, and `observe()` on generated pages
//! of about 1,000 and 10,000 nodes, both reused (nothing changed since the last observation)
//! and fetched afresh (what any change costs). Medians of repeated runs are printed, never
//! asserted.
//!
//! Run with `cargo bench -p cua-chromium --bench driver` (or `make bench`).
#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use cua_artifact::{ActionKind, Actor};
use cua_chromium::{ChromiumConfig, ChromiumSurface};
use cua_policy::{
    ActionRequest, Allowlist, AuthorizationContext, Authorized, BrowserAction, Lease, PolicyEngine,
    PolicyRules, ResolvedTarget,
};
use cua_snapshot::{UiNode, UiSnapshot};
use cua_surface::{SurfaceDriver, WaitOutcome};
use memberdesk::{FixtureConfig, Variant};

const LAUNCHES: usize = 5;
const OBSERVES: usize = 30;
const CLICKS: usize = 30;
const LARGE_OBSERVES: usize = 10;
/// Rows of the generated pages: about 1,000 and 10,000 accessibility nodes.
const GENERATED_ROWS: [usize; 2] = [110, 1_100];

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run());
}

struct Authority {
    engine: PolicyEngine,
    lease: Lease,
}

impl Authority {
    fn new(allowlist: &Allowlist) -> Self {
        let engine = PolicyEngine::new(PolicyRules {
            allowlist: allowlist.clone(),
            allowed_actions: ActionKind::ALL.into_iter().collect(),
            human_only: BTreeSet::new(),
        });
        Self {
            engine,
            lease: Lease::new(Actor::Human),
        }
    }

    fn allow(&self, action: BrowserAction, target: Option<&UiNode>) -> Authorized<BrowserAction> {
        let request = ActionRequest {
            actor: Actor::Human,
            epoch: self.lease.epoch,
            action: action.into(),
            target: target.map(|node| ResolvedTarget {
                node_id: node.id.clone(),
                role: node.role.clone(),
                name: node.name.clone(),
            }),
            declared_risk: None,
        };
        let context = AuthorizationContext {
            confirmed: true,
            ..AuthorizationContext::default()
        };
        self.engine
            .authorize_with(&self.lease, request, &context)
            .expect("the bench policy allows")
            .into_browser()
            .expect("a browser action")
    }
}

async fn run() {
    let fixture = memberdesk::serve(FixtureConfig::loopback(Variant::FirstValley))
        .await
        .expect("the fixture serves");
    let large = generated_pages_server().await;
    let entries = vec![fixture.addr().to_string(), large.to_string()];
    let allowlist = Allowlist::new(&entries, &[]).expect("loopback entries");
    let config = ChromiumConfig::from_env(allowlist.clone());
    let authority = Authority::new(&allowlist);
    let version = std::process::Command::new(&config.executable)
        .arg("--version")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .unwrap_or_else(|error| format!("unknown ({error})"));
    println!("cua-chromium driver benchmark");
    println!(
        "browser: {version} ({}); cores: {}",
        config.executable.display(),
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    println!();

    let mut launches = Vec::new();
    let mut closes = Vec::new();
    for _ in 0..LAUNCHES {
        let started = Instant::now();
        let surface = ChromiumSurface::launch(config.clone())
            .await
            .expect("Chromium launches");
        launches.push(started.elapsed());
        let started = Instant::now();
        surface.close().await;
        closes.push(started.elapsed());
    }
    report("launch (spawn to page ready)", &launches, "");
    report("close (graceful quit and reap)", &closes, "");

    let surface = ChromiumSurface::launch(config.clone())
        .await
        .expect("Chromium launches");
    let act = |action, target: Option<&UiNode>| surface.dispatch(authority.allow(action, target));
    act(
        BrowserAction::Navigate {
            url: format!("{}/", fixture.base_url()),
        },
        None,
    )
    .await
    .expect("navigate");
    let login = until(&surface, |s| has(s, "button", "Sign On")).await;
    let typing = |text: &str| BrowserAction::Type {
        text: text.to_string(),
        clear_first: true,
    };
    act(
        typing(memberdesk::OPERATOR_ID),
        Some(find(&login, "textbox", "Operator ID")),
    )
    .await
    .expect("type");
    act(
        typing(memberdesk::OPERATOR_PASSWORD),
        Some(find(&login, "textbox", "Password")),
    )
    .await
    .expect("type");
    act(
        BrowserAction::Click,
        Some(find(&login, "button", "Sign On")),
    )
    .await
    .expect("sign on");
    let search = until(&surface, |s| has(s, "textbox", "Member Number")).await;
    act(
        typing("12345"),
        Some(find(&search, "textbox", "Member Number")),
    )
    .await
    .expect("type");
    act(
        BrowserAction::Click,
        Some(find(&search, "button", "Search")),
    )
    .await
    .expect("search");
    let detail = until(&surface, |s| has(s, "link", "Transfer Funds")).await;

    let mut observes = Vec::new();
    for _ in 0..OBSERVES {
        let started = Instant::now();
        let snapshot = surface.observe().await.expect("observe");
        observes.push(started.elapsed());
        assert_eq!(
            snapshot.digest(),
            detail.digest(),
            "the page did not change"
        );
    }
    report(
        "observe(), member detail",
        &observes,
        &format!("{} nodes, 3 frames, unchanged", detail.nodes.len()),
    );
    let afresh = observe_afresh(&surface, &detail).await;
    report(
        "observe afresh, member detail",
        &afresh,
        "every tree fetched again",
    );

    let cell = find(&detail, "cell", "09/11/2026").clone();
    let mut clicks = Vec::new();
    for _ in 0..CLICKS {
        let started = Instant::now();
        let receipt = act(BrowserAction::Click, Some(&cell)).await.expect("click");
        clicks.push(started.elapsed());
        assert!(!receipt.navigated);
    }
    report(
        "click round trip, no navigation",
        &clicks,
        "dispatch to receipt",
    );

    let mut navigations = Vec::new();
    for _ in 0..CLICKS {
        let page = surface.observe().await.expect("observe");
        let link = find(&page, "link", "Member Search").clone();
        let started = Instant::now();
        let receipt = act(BrowserAction::Click, Some(&link)).await.expect("click");
        navigations.push(started.elapsed());
        assert!(receipt.navigated, "{receipt:?}");
    }
    report(
        "click round trip, frame navigation",
        &navigations,
        "until the new document loaded",
    );

    for rows in GENERATED_ROWS {
        act(
            BrowserAction::Navigate {
                url: format!("http://{large}/{rows}"),
            },
            None,
        )
        .await
        .expect("navigate");
        let page = until(&surface, |s| {
            has(s, "cell", &format!("Member {}", rows - 1))
        })
        .await;
        let afresh = observe_afresh(&surface, &page).await;
        let mut reused = Vec::new();
        let (_, reused_before) = surface.observation_counts();
        for _ in 0..LARGE_OBSERVES {
            let started = Instant::now();
            let snapshot = surface.observe().await.expect("observe");
            reused.push(started.elapsed());
            assert_eq!(snapshot, page, "the generated page did not change");
        }
        let (_, reused_after) = surface.observation_counts();
        let nodes = page.nodes.len();
        report(
            &format!("observe(), {nodes} nodes, unchanged"),
            &reused,
            &format!(
                "{} of {LARGE_OBSERVES} reused",
                reused_after - reused_before
            ),
        );
        report(
            &format!("observe afresh, {nodes} nodes"),
            &afresh,
            "what any change costs",
        );
    }
    surface.close().await;
    let _ = fixture.shutdown().await;
}

/// Fresh observations of an unchanged page, each equal to `page`.
async fn observe_afresh(surface: &ChromiumSurface, page: &UiSnapshot) -> Vec<Duration> {
    let mut samples = Vec::new();
    for _ in 0..LARGE_OBSERVES {
        let started = Instant::now();
        let snapshot = surface.observe_afresh().await.expect("observe afresh");
        samples.push(started.elapsed());
        assert_eq!(snapshot.digest(), page.digest(), "the page did not change");
    }
    samples
}

/// Serves generated pages at `/<rows>`: a table of that many rows of four cells (ten
/// accessibility nodes a row once rows, cells and their texts are counted).
async fn generated_pages_server() -> std::net::SocketAddr {
    let page = |rows: usize| {
        let mut html = String::from("<!doctype html><title>Large</title><h1>Generated</h1><table>");
        for row in 0..rows {
            html.push_str(&format!(
                "<tr><td>R{row}</td><td>Member {row}</td><td>${row}.00</td><td><a href=\"#r{row}\">Open</a></td></tr>"
            ));
        }
        html.push_str("</table>");
        html
    };
    let mut app = axum::Router::new();
    for rows in GENERATED_ROWS {
        let html = page(rows);
        app = app.route(
            &format!("/{rows}"),
            axum::routing::get(move || async move { axum::response::Html(html) }),
        );
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("bound address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

async fn until(
    surface: &ChromiumSurface,
    predicate: impl Fn(&UiSnapshot) -> bool + Send + Sync,
) -> UiSnapshot {
    match surface
        .wait_until(predicate, Duration::from_secs(10))
        .await
        .expect("observe")
    {
        WaitOutcome::Met(snapshot) => *snapshot,
        WaitOutcome::TimedOut(_) => panic!("the fixture page did not appear"),
    }
}

fn has(snapshot: &UiSnapshot, role: &str, name: &str) -> bool {
    snapshot
        .nodes
        .iter()
        .any(|node| node.role == role && node.name == name)
}

fn find<'a>(snapshot: &'a UiSnapshot, role: &str, name: &str) -> &'a UiNode {
    snapshot
        .nodes
        .iter()
        .find(|node| node.role == role && node.name == name)
        .unwrap_or_else(|| panic!("no {role} {name:?} on the page"))
}

fn report(what: &str, samples: &[Duration], note: &str) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{what:<38} median {:>8.1} ms   min {:>8.1}   max {:>8.1}   n={:<3} {note}",
        ms(median),
        ms(sorted[0]),
        ms(sorted[sorted.len() - 1]),
        samples.len()
    );
}
