//! Shared test support: launching a browser, minting authorized actions, tiny loopback sites.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Response, StatusCode};
use cua_artifact::{ActionKind, Actor};
use cua_chromium::{ChromiumConfig, ChromiumSurface, LaunchError};
use cua_policy::{
    ActionRequest, Allowlist, AuthorizationContext, Authorized, BrowserAction, Lease, PolicyEngine,
    PolicyRules, ResolvedTarget,
};
use cua_snapshot::{UiNode, UiSnapshot};
use cua_surface::{BlockedRequest, DispatchReceipt, SurfaceDriver, SurfaceError};

/// An allowlist of exact `host:port` entries.
pub(crate) fn allowlist(entries: &[String]) -> Allowlist {
    Allowlist::new(entries, &[]).expect("test allowlist entries are well formed")
}

/// The configuration every test uses: `CUA_CHROMIUM` honoured, the rest defaults.
pub(crate) fn config(entries: &[String]) -> ChromiumConfig {
    ChromiumConfig::from_env(allowlist(entries))
}

/// Launches a browser that may reach `entries`; a missing Chromium fails the test loudly.
pub(crate) async fn launch(entries: &[String]) -> ChromiumSurface {
    launch_with(config(entries)).await
}

pub(crate) async fn launch_with(config: ChromiumConfig) -> ChromiumSurface {
    match ChromiumSurface::launch(config).await {
        Ok(surface) => surface,
        Err(error @ LaunchError::ChromiumMissing { .. }) => {
            panic!("these tests need Chromium: {error} (apt-get install -y chromium)")
        }
        Err(error) => panic!("launching Chromium failed: {error}"),
    }
}

/// Authorizes actions the way a confirmed human operator would, so every kind (including the
/// irreversible "Transfer Funds") passes the engine; the engine is still the only mint.
pub(crate) struct Authority {
    engine: PolicyEngine,
    lease: Lease,
}

impl Authority {
    pub(crate) fn new(entries: &[String]) -> Self {
        let allowed: BTreeSet<ActionKind> = ActionKind::ALL.into_iter().collect();
        let engine = PolicyEngine::new(PolicyRules {
            allowlist: allowlist(entries),
            allowed_actions: allowed,
            human_only: BTreeSet::new(),
        });
        Self {
            engine,
            lease: Lease::new(Actor::Human),
        }
    }

    /// Authorizes `action`, on `target` when given.
    pub(crate) fn allow(
        &self,
        action: BrowserAction,
        target: Option<&UiNode>,
    ) -> Authorized<BrowserAction> {
        let target = target.map(|node| ResolvedTarget {
            node_id: node.id.clone(),
            role: node.role.clone(),
            name: node.name.clone(),
        });
        let request = ActionRequest {
            actor: Actor::Human,
            epoch: self.lease.epoch,
            action: action.into(),
            target,
            declared_risk: None,
        };
        let context = AuthorizationContext {
            confirmed: true,
            ..AuthorizationContext::default()
        };
        self.engine
            .authorize_with(&self.lease, request, &context)
            .unwrap_or_else(|denial| panic!("the test policy denied an action: {denial:?}"))
            .into_browser()
            .expect("a browser action")
    }

    /// A navigation that skips the engine's own allowlist check is impossible, so blocked
    /// navigations are authorized against a wide engine and must be stopped by the driver.
    pub(crate) fn allow_anywhere(&self, url: &str) -> Authorized<BrowserAction> {
        let wide = Authority::new(&[host_of(url)]);
        wide.allow(
            BrowserAction::Navigate {
                url: url.to_string(),
            },
            None,
        )
    }
}

fn host_of(url: &str) -> String {
    url.split("://")
        .nth(1)
        .unwrap_or_default()
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Navigates and waits for the page to settle.
pub(crate) async fn goto(
    surface: &ChromiumSurface,
    authority: &Authority,
    url: &str,
) -> DispatchReceipt {
    let action = authority.allow(
        BrowserAction::Navigate {
            url: url.to_string(),
        },
        None,
    );
    surface
        .dispatch(action)
        .await
        .unwrap_or_else(|error| panic!("navigating to {url}: {error}"))
}

/// Observes until `predicate` holds (5 s), failing with the last snapshot rendered.
pub(crate) async fn observe_until(
    surface: &ChromiumSurface,
    what: &str,
    predicate: impl Fn(&UiSnapshot) -> bool + Send + Sync,
) -> UiSnapshot {
    match surface.wait_until(predicate, Duration::from_secs(5)).await {
        Ok(cua_surface::WaitOutcome::Met(snapshot)) => *snapshot,
        Ok(cua_surface::WaitOutcome::TimedOut(snapshot)) => {
            panic!(
                "timed out waiting for {what}; last snapshot:\n{}",
                render(&snapshot)
            )
        }
        Err(error) => panic!("observing failed while waiting for {what}: {error}"),
    }
}

/// The first node with this role and (normalized) name, optionally within a frame.
pub(crate) fn find<'a>(snapshot: &'a UiSnapshot, role: &str, name: &str) -> &'a UiNode {
    snapshot
        .nodes
        .iter()
        .find(|node| node.role == role && node.name == name)
        .unwrap_or_else(|| panic!("no {role} named {name:?} in:\n{}", render(snapshot)))
}

/// Whether a node with this role and name exists.
pub(crate) fn has(snapshot: &UiSnapshot, role: &str, name: &str) -> bool {
    snapshot
        .nodes
        .iter()
        .any(|node| node.role == role && node.name == name)
}

/// The control with `role` in the table row whose first cell is named `label`.
pub(crate) fn in_row<'a>(snapshot: &'a UiSnapshot, label: &str, role: &str) -> &'a UiNode {
    for (index, node) in snapshot.nodes.iter().enumerate() {
        if node.role != "row" {
            continue;
        }
        let cells: Vec<usize> = node
            .children
            .iter()
            .map(|&c| c as usize)
            .filter(|&c| snapshot.nodes[c].role == "cell")
            .collect();
        if cells
            .first()
            .is_some_and(|&c| snapshot.nodes[c].name == label)
            && let Some(found) = snapshot
                .descendants(index)
                .find(|&d| snapshot.nodes[d].role == role)
        {
            return &snapshot.nodes[found];
        }
    }
    panic!(
        "no {role} in a row labelled {label:?} in:\n{}",
        render(snapshot)
    )
}

/// The compact text render the insta snapshots use: one line per node.
pub(crate) fn render(snapshot: &UiSnapshot) -> String {
    let mut out = format!(
        "url: {}\ntitle: {}\nhttp_status: {:?}\n",
        snapshot.url, snapshot.title, snapshot.http_status
    );
    for node in &snapshot.nodes {
        out.push_str(&"  ".repeat(node.depth as usize));
        out.push_str(&node.role);
        if !node.name.is_empty() {
            out.push_str(&format!(" {:?}", node.name));
        }
        if let Some(value) = &node.value {
            out.push_str(&format!(" = {value:?}"));
        }
        if !node.states.is_empty() {
            out.push_str(&format!(" [{}]", node.states.join(",")));
        }
        let frame = node.scope.frame.as_deref().unwrap_or("main");
        match &node.scope.region {
            Some(region) => out.push_str(&format!(" @{frame}/{region}")),
            None => out.push_str(&format!(" @{frame}")),
        }
        out.push('\n');
    }
    out
}

/// Polls the blocked-request log until one matches `path` (5 s), returning everything taken.
pub(crate) async fn blocked_until(surface: &ChromiumSurface, path: &str) -> Vec<BlockedRequest> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut taken = Vec::new();
    loop {
        taken.extend(surface.take_blocked_requests());
        if taken.iter().any(|blocked| blocked.url.contains(path)) || Instant::now() > deadline {
            return taken;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asserts an error is `Unavailable`.
pub(crate) fn assert_unavailable<T: std::fmt::Debug>(result: Result<T, SurfaceError>) {
    match result {
        Err(SurfaceError::Unavailable { .. }) => {}
        other => panic!("expected surface unavailable, got {other:?}"),
    }
}

/// One canned answer.
#[derive(Clone)]
pub(crate) struct Page {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: String,
}

impl Page {
    pub(crate) fn html(body: impl Into<String>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type", "text/html; charset=utf-8".into())],
            body: body.into(),
        }
    }

    pub(crate) fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    pub(crate) fn redirect(location: impl Into<String>) -> Self {
        Self {
            status: 302,
            headers: vec![("location", location.into())],
            body: String::new(),
        }
    }
}

/// A loopback site answering fixed pages by path (anything else: 404), counting every hit.
pub(crate) struct Site {
    pub(crate) addr: SocketAddr,
    pub(crate) hits: Arc<AtomicUsize>,
    pub(crate) paths: Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Site {
    pub(crate) async fn serve(pages: Vec<(&'static str, Page)>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        Self::serve_on(listener, pages)
    }

    pub(crate) fn serve_on(
        listener: tokio::net::TcpListener,
        pages: Vec<(&'static str, Page)>,
    ) -> Self {
        let addr = listener.local_addr().expect("bound address");
        let hits = Arc::new(AtomicUsize::new(0));
        let paths = Arc::new(std::sync::Mutex::new(Vec::new()));
        let pages = Arc::new(pages);
        let (counter, seen) = (Arc::clone(&hits), Arc::clone(&paths));
        let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
            let pages = Arc::clone(&pages);
            let (counter, seen) = (Arc::clone(&counter), Arc::clone(&seen));
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                let path = request.uri().path().to_string();
                seen.lock().expect("paths lock").push(path.clone());
                let page = pages
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map(|(_, page)| page.clone())
                    .unwrap_or_else(|| Page::html("<title>Not here</title>nothing").status(404));
                let mut response = Response::builder()
                    .status(StatusCode::from_u16(page.status).expect("valid status"));
                for (name, value) in &page.headers {
                    response = response.header(*name, value);
                }
                response
                    .body(Body::from(page.body))
                    .expect("valid response")
            }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            addr,
            hits,
            paths,
            task,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The `host:port` allowlist entry for this site.
    pub(crate) fn entry(&self) -> String {
        self.addr.to_string()
    }

    pub(crate) fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.task.abort();
    }
}
