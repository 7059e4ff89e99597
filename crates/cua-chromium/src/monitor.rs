//! The event side: the browser-level allowlist guard (`Fetch.requestPaused`) and the page
//! monitor (loading frames, navigations, document statuses, dialogs, crashes).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cua_policy::Allowlist;
use cua_snapshot::squash_whitespace;
use cua_surface::BlockedRequest;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::cdp::{RawCdp, RawEvent, lock};
use crate::session::Liveness;

/// How many document responses are remembered for status lookups.
const RESPONSES_KEPT: usize = 256;

/// One document (frame) response.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DocumentResponse {
    seq: u64,
    frame_id: String,
    loader_id: String,
    status: u16,
}

/// A point in the page's event history, taken before an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    activity: u64,
    navigations: u64,
    seq: u64,
    blocked_documents: u64,
    dialogs: u64,
}

/// How long a script request in flight holds the page as loading.
const REQUEST_PATIENCE: Duration = Duration::from_secs(5);

/// What the monitor knows about the page, updated from events.
#[derive(Debug, Default)]
pub(crate) struct PageState {
    loading: BTreeSet<String>,
    /// Script requests (XHR, fetch) sent and not yet finished or failed, with when they were
    /// seen: a page that re-renders a form from a request is not settled while it is out,
    /// however still its tree looks. One out longer than [`REQUEST_PATIENCE`] (a long poll, a
    /// stream) no longer counts, so it cannot hold every wait to its timeout.
    requests: BTreeMap<String, Instant>,
    /// Navigations requested or started (any frame).
    activity: u64,
    /// Documents committed (any frame).
    navigations: u64,
    responses: VecDeque<DocumentResponse>,
    next_seq: u64,
    /// Document requests of the page's own (main) frame the guard blocked, and the last one
    /// as `<url>: <reason>`. A frame's or a popup's blocked document is no redirect of the
    /// page's navigation.
    blocked_documents: u64,
    last_blocked_document: Option<String>,
    /// The page's main frame (in Chromium, its target id); until it is known, every blocked
    /// document counts.
    pub(crate) main_frame: Option<String>,
    /// JavaScript dialogs answered: how many, and the last few as `confirm declined`.
    dialogs: u64,
    dialog_log: VecDeque<(u64, String)>,
    /// The one `confirm()` message the action being dispatched may answer OK (whitespace
    /// squashed); taken when it is answered, so it never answers a second dialog.
    expected_confirm: Option<String>,
    /// Another page (a popup) opened: it takes the foreground, and a page in the background
    /// gets no animation frames, so input would wait for an acknowledgement that never comes.
    pub(crate) foreground_lost: bool,
}

impl PageState {
    /// Applies one page-session event.
    pub(crate) fn apply(&mut self, method: &str, params: &Value) {
        let frame_id = || params["frameId"].as_str().unwrap_or_default().to_string();
        match method {
            "Page.frameStartedLoading" => {
                self.loading.insert(frame_id());
                self.activity += 1;
            }
            "Page.frameStoppedLoading" | "Page.frameDetached" => {
                self.loading.remove(&frame_id());
            }
            "Page.frameRequestedNavigation" | "Page.frameStartedNavigating" => self.activity += 1,
            "Page.frameNavigated" => {
                self.navigations += 1;
                // A new top-level document: the old one's requests never report back.
                if params["frame"]["parentId"].is_null() {
                    self.requests.clear();
                }
            }
            "Network.requestWillBeSent"
                if matches!(params["type"].as_str(), Some("XHR" | "Fetch")) =>
            {
                if let Some(id) = params["requestId"].as_str() {
                    self.requests.insert(id.to_string(), Instant::now());
                }
            }
            "Network.loadingFinished" | "Network.loadingFailed" => {
                if let Some(id) = params["requestId"].as_str() {
                    self.requests.remove(id);
                }
            }
            "Network.responseReceived" if params["type"] == "Document" => {
                let status = params["response"]["status"].as_f64().unwrap_or(0.0);
                self.next_seq += 1;
                if self.responses.len() == RESPONSES_KEPT {
                    self.responses.pop_front();
                }
                self.responses.push_back(DocumentResponse {
                    seq: self.next_seq,
                    frame_id: frame_id(),
                    loader_id: params["loaderId"].as_str().unwrap_or_default().to_string(),
                    status: status.clamp(0.0, f64::from(u16::MAX)) as u16,
                });
            }
            _ => {}
        }
    }

    pub(crate) fn mark(&self) -> Mark {
        Mark {
            activity: self.activity,
            navigations: self.navigations,
            seq: self.next_seq,
            blocked_documents: self.blocked_documents,
            dialogs: self.dialogs,
        }
    }

    /// Whether anything navigation-like happened since the mark.
    pub(crate) fn active_since(&self, mark: Mark) -> bool {
        self.activity != mark.activity || self.navigations != mark.navigations
    }

    /// Whether a document committed since the mark.
    pub(crate) fn navigated_since(&self, mark: Mark) -> bool {
        self.navigations != mark.navigations
    }

    /// Whether the guard blocked a document request since the mark.
    /// The last document of the main frame blocked since the mark, as `<url>: <reason>`.
    pub(crate) fn blocked_document_since(&self, mark: Mark) -> Option<&str> {
        (self.blocked_documents != mark.blocked_documents)
            .then_some(self.last_blocked_document.as_deref())
            .flatten()
    }

    fn document_blocked(&mut self, frame: &str, blocked: &BlockedRequest) {
        if self
            .main_frame
            .as_deref()
            .is_none_or(|main_frame| main_frame == frame)
        {
            self.blocked_documents += 1;
            self.last_blocked_document = Some(format!("{}: {}", blocked.url, blocked.reason));
        }
    }

    /// The worst status among documents received since the mark.
    pub(crate) fn worst_since(&self, mark: Mark) -> Option<u16> {
        self.responses
            .iter()
            .filter(|r| r.seq > mark.seq)
            .map(|r| r.status)
            .max()
    }

    /// The status of the document a frame currently shows (matched by loader), if known.
    pub(crate) fn status_of(&self, frame_id: &str, loader_id: &str) -> Option<u16> {
        self.responses
            .iter()
            .rev()
            .find(|r| r.frame_id == frame_id && r.loader_id == loader_id)
            .map(|r| r.status)
    }

    /// Arms the answer OK for one `confirm()` with exactly this message.
    pub(crate) fn expect_confirm(&mut self, message: &str) {
        self.expected_confirm = Some(squash_whitespace(message));
    }

    /// Disarms the expected confirm; whether it was still armed (never answered).
    pub(crate) fn disarm_confirm(&mut self) -> bool {
        self.expected_confirm.take().is_some()
    }

    /// How a dialog of this kind and message is answered: alerts and leave-page prompts OK, a
    /// confirm OK only when it is the one armed (which it then consumes), anything else
    /// declined, so an unexpected "Are you sure?" never says yes on its own.
    pub(crate) fn answer(&mut self, kind: &str, message: &str) -> bool {
        match kind {
            "alert" | "beforeunload" => true,
            "confirm" => {
                let armed = self
                    .expected_confirm
                    .as_deref()
                    .is_some_and(|expected| expected == squash_whitespace(message));
                if armed {
                    self.expected_confirm = None;
                }
                armed
            }
            _ => false,
        }
    }

    /// Records a dialog the monitor answered.
    pub(crate) fn dialog_answered(&mut self, kind: &str, accepted: bool) {
        self.dialogs += 1;
        if self.dialog_log.len() == 16 {
            self.dialog_log.pop_front();
        }
        let answer = if accepted { "accepted" } else { "declined" };
        self.dialog_log
            .push_back((self.dialogs, format!("{kind} {answer}")));
    }

    /// The dialogs answered since the mark, oldest first.
    pub(crate) fn dialogs_since(&self, mark: Mark) -> Vec<String> {
        self.dialog_log
            .iter()
            .filter(|(n, _)| *n > mark.dialogs)
            .map(|(_, d)| d.clone())
            .collect()
    }

    /// Forgets loading frames that are no longer in the page (a detach event can be missed
    /// when a whole subtree goes at once), so a vanished frame never looks busy forever.
    pub(crate) fn keep_frames<'a>(&mut self, present: impl IntoIterator<Item = &'a str>) {
        let present: BTreeSet<&str> = present.into_iter().collect();
        self.loading
            .retain(|frame| present.contains(frame.as_str()));
    }

    /// Whether any frame is loading or a script request is out (for less than
    /// [`REQUEST_PATIENCE`]).
    pub(crate) fn is_loading(&self) -> bool {
        !self.loading.is_empty()
            || self
                .requests
                .values()
                .any(|sent| sent.elapsed() < REQUEST_PATIENCE)
    }
}

/// What the guard decided about one paused request.
pub(crate) fn check_request(
    allowlist: &Allowlist,
    url: &str,
    resource_type: &str,
) -> Result<(), BlockedRequest> {
    allowlist.check(url).map_err(|blocked| BlockedRequest {
        url: blocked.url,
        reason: blocked.reason,
        resource_type: resource_type.to_string(),
    })
}

/// Everything the event loop updates.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) state: Arc<Mutex<PageState>>,
    pub(crate) blocked: Arc<Mutex<Vec<BlockedRequest>>>,
    pub(crate) liveness: Liveness,
}

/// Runs until the connection closes: answers every paused request (continue, or fail before
/// anything is fetched), and folds page events into the shared state.
pub(crate) async fn run(
    mut events: mpsc::UnboundedReceiver<RawEvent>,
    connection: Arc<RawCdp>,
    allowlist: Allowlist,
    shared: Shared,
    timeout: Duration,
) {
    while let Some(event) = events.recv().await {
        match (event.method.as_str(), &event.session_id) {
            ("Fetch.requestPaused", None) => {
                guard(&event.params, &connection, &allowlist, &shared, timeout);
            }
            ("Page.javascriptDialogOpening", Some(session)) => {
                let kind = event.params["type"].as_str().unwrap_or("dialog");
                let message = event.params["message"].as_str().unwrap_or_default();
                let accept = {
                    let mut state = lock(&shared.state);
                    let accept = state.answer(kind, message);
                    state.dialog_answered(kind, accept);
                    accept
                };
                let connection = Arc::clone(&connection);
                let session = session.clone();
                tokio::spawn(async move {
                    let params = json!({ "accept": accept });
                    let _ = connection
                        .call(
                            "Page.handleJavaScriptDialog",
                            params,
                            Some(&session),
                            timeout,
                        )
                        .await;
                });
            }
            ("Target.targetCreated", None) if event.params["targetInfo"]["type"] == "page" => {
                lock(&shared.state).foreground_lost = true;
            }
            ("Inspector.targetCrashed", Some(_)) => {
                shared.liveness.mark_dead("the page's renderer crashed");
            }
            ("Inspector.detached", Some(_)) | ("Target.detachedFromTarget", None) => {
                shared.liveness.mark_dead("the page was closed or detached");
            }
            (method, Some(_)) => lock(&shared.state).apply(method, &event.params),
            _ => {}
        }
    }
    let reason = connection
        .closed()
        .borrow()
        .clone()
        .unwrap_or_else(|| "events ended".into());
    shared
        .liveness
        .mark_dead(format!("the browser connection closed: {reason}"));
}

fn guard(
    params: &Value,
    connection: &Arc<RawCdp>,
    allowlist: &Allowlist,
    shared: &Shared,
    timeout: Duration,
) {
    let Some(request_id) = params["requestId"].as_str().map(str::to_string) else {
        return;
    };
    let mut url = params["request"]["url"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if let Some(fragment) = params["request"]["urlFragment"].as_str() {
        url.push_str(fragment);
    }
    let resource_type = params["resourceType"].as_str().unwrap_or("Other");
    let (method, params) = match check_request(allowlist, &url, resource_type) {
        Ok(()) => ("Fetch.continueRequest", json!({ "requestId": request_id })),
        Err(blocked) => {
            // A blocked document load is aborted rather than failed, so the frame stays on
            // the page it showed instead of committing an error page.
            let document = resource_type == "Document";
            let reason = if document {
                "Aborted"
            } else {
                "BlockedByClient"
            };
            if document {
                let frame = params["frameId"].as_str().unwrap_or_default();
                lock(&shared.state).document_blocked(frame, &blocked);
            }
            lock(&shared.blocked).push(blocked);
            (
                "Fetch.failRequest",
                json!({ "requestId": request_id, "errorReason": reason }),
            )
        }
    };
    let connection = Arc::clone(connection);
    tokio::spawn(async move {
        let _ = connection.call(method, params, None, timeout).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_request_in_flight_keeps_the_page_loading_until_it_ends() {
        let mut state = PageState::default();
        let sent = |id: &str, kind: &str| json!({"requestId": id, "type": kind});
        state.apply("Network.requestWillBeSent", &sent("r1", "XHR"));
        state.apply("Network.requestWillBeSent", &sent("r2", "Fetch"));
        // Images and stylesheets never hold the page: only script requests re-render it.
        state.apply("Network.requestWillBeSent", &sent("r3", "Image"));
        assert!(state.is_loading());
        state.apply("Network.loadingFinished", &json!({"requestId": "r1"}));
        assert!(state.is_loading(), "r2 is still out");
        state.apply("Network.loadingFailed", &json!({"requestId": "r2"}));
        assert!(!state.is_loading());
        // A new top-level document forgets the old one's requests; a frame's does not.
        state.apply("Network.requestWillBeSent", &sent("r4", "XHR"));
        state.apply(
            "Page.frameNavigated",
            &json!({"frame": {"id": "child", "parentId": "top"}}),
        );
        assert!(state.is_loading());
        state.apply("Page.frameNavigated", &json!({"frame": {"id": "top"}}));
        assert!(!state.is_loading());
    }

    #[test]
    fn statuses_follow_loaders_and_marks() {
        let mut state = PageState::default();
        let response = |frame: &str, loader: &str, status: u16| json!({"type": "Document", "frameId": frame, "loaderId": loader, "response": {"status": status}});
        state.apply("Network.responseReceived", &response("top", "L1", 200));
        let mark = state.mark();
        assert!(!state.active_since(mark));
        state.apply("Page.frameStartedLoading", &json!({"frameId": "content"}));
        assert!(state.is_loading());
        state.apply("Network.responseReceived", &response("content", "L2", 502));
        state.apply(
            "Network.responseReceived",
            &json!({"type": "Image", "frameId": "content", "response": {"status": 404}}),
        );
        state.apply("Page.frameNavigated", &json!({"frame": {"id": "content"}}));
        state.apply("Page.frameStoppedLoading", &json!({"frameId": "content"}));
        assert!(!state.is_loading());
        state.apply("Page.frameStartedLoading", &json!({"frameId": "gone"}));
        state.keep_frames(["top", "content"]);
        assert!(
            !state.is_loading(),
            "a frame that left the page is not loading"
        );
        assert!(state.active_since(mark));
        assert!(state.navigated_since(mark));
        assert_eq!(state.worst_since(mark), Some(502));
        assert_eq!(state.status_of("top", "L1"), Some(200));
        assert_eq!(state.status_of("content", "L2"), Some(502));
        assert_eq!(state.status_of("content", "L3"), None);
    }

    #[test]
    fn the_guard_reports_what_it_blocks() {
        let allowlist = Allowlist::new(&["127.0.0.1:8811".to_string()], &[]).unwrap();
        assert_eq!(
            check_request(&allowlist, "http://127.0.0.1:8811/x", "Document"),
            Ok(())
        );
        let blocked = check_request(&allowlist, "http://127.0.0.1:9/x", "Image").unwrap_err();
        assert_eq!(blocked.resource_type, "Image");
        assert!(
            blocked.reason.contains("not on the allowlist"),
            "{}",
            blocked.reason
        );
        assert!(check_request(&allowlist, "file:///etc/passwd", "Document").is_err());
    }
}
