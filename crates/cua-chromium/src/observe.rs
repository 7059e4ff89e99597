//! `observe()`: the frame tree, every frame's accessibility tree and one DOM snapshot, fetched
//! concurrently and stitched into a [`UiSnapshot`]; or, when every frame's change watcher says
//! nothing changed since the last one, that last observation again.

use std::collections::HashMap;
use std::sync::Mutex;

use cua_snapshot::{NodeId, UiSnapshot};
use cua_surface::SurfaceError;
use futures::future::join_all;
use serde_json::json;

use crate::cdp::lock;
use crate::dom::DomIndex;
use crate::monitor::PageState;
use crate::session::{CallError, Session};
use crate::tree::{AxNode, FrameInput, NodeHandle, stitch};
use crate::watch::{Watch, Watchers, unchanged};

/// One observation and what the driver keeps from it to act later.
#[derive(Clone)]
pub(crate) struct Observation {
    pub(crate) snapshot: UiSnapshot,
    pub(crate) handles: HashMap<NodeId, NodeHandle>,
    /// Every frame's id and loader: it changes exactly when some frame shows a new document.
    pub(crate) documents: String,
    /// What the change watchers said last: after the trees were fetched, or when a kept
    /// observation was reused.
    pub(crate) watch: Watch,
    /// No watcher saw a change while the trees were fetched (always so when reused): the
    /// snapshot is one moment of the page, not a mix of two.
    pub(crate) steady: bool,
}

/// The last observation, kept for reuse while nothing changes; see [`observe`].
#[derive(Default)]
pub(crate) struct Reuse {
    last: Mutex<Option<Kept>>,
    /// Raised by every `forget`: an observation that began before an action (a console's look
    /// racing a dispatch) is not kept after it.
    generation: std::sync::atomic::AtomicU64,
    /// Observations fetched, and reused.
    counts: Mutex<(u64, u64)>,
}

struct Kept {
    /// Every frame's id, loader and URL.
    frames: Vec<(String, String, String)>,
    observation: Observation,
}

impl Reuse {
    /// Forgets the kept observation (before an action, which may change anything).
    pub(crate) fn forget(&self) {
        let mut last = lock(&self.last);
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        *last = None;
    }

    /// How many observations were fetched, and how many reused.
    pub(crate) fn counts(&self) -> (u64, u64) {
        *lock(&self.counts)
    }
}

fn frames_key(frames: &[FrameMeta]) -> Vec<(String, String, String)> {
    frames
        .iter()
        .map(|frame| (frame.id.clone(), frame.loader_id.clone(), frame.url.clone()))
        .collect()
}

/// A frame of `Page.getFrameTree`, in pre-order.
#[derive(Debug, Clone)]
pub(crate) struct FrameMeta {
    pub(crate) id: String,
    pub(crate) parent: Option<usize>,
    pub(crate) name: String,
    pub(crate) url: String,
    pub(crate) loader_id: String,
}

/// The page's frames, the main frame first, children in document order.
pub(crate) async fn frames(session: &Session) -> Result<Vec<FrameMeta>, SurfaceError> {
    let tree = session
        .call("Page.getFrameTree", json!({}))
        .await
        .map_err(|error| error.into_surface("reading the frame tree"))?;
    let mut frames = Vec::new();
    let mut pending = vec![(&tree["frameTree"], None)];
    while let Some((node, parent)) = pending.pop() {
        let frame = &node["frame"];
        let Some(id) = frame["id"].as_str() else {
            continue;
        };
        let mut url = frame["url"].as_str().unwrap_or_default().to_string();
        url.push_str(frame["urlFragment"].as_str().unwrap_or_default());
        let position = frames.len();
        frames.push(FrameMeta {
            id: id.to_string(),
            parent,
            name: frame["name"].as_str().unwrap_or_default().to_string(),
            url,
            loader_id: frame["loaderId"].as_str().unwrap_or_default().to_string(),
        });
        if let Some(children) = node["childFrames"].as_array() {
            for child in children.iter().rev() {
                pending.push((child, Some(position)));
            }
        }
    }
    if frames.is_empty() {
        return Err(SurfaceError::ActionFailed {
            reason: "the page has no main frame".into(),
        });
    }
    Ok(frames)
}

/// Every frame's id and loader, in frame order: it changes exactly when some frame shows a new
/// document.
pub(crate) fn documents_signature(frames: &[FrameMeta]) -> String {
    frames
        .iter()
        .map(|frame| format!("{}:{}", frame.id, frame.loader_id))
        .collect::<Vec<_>>()
        .join(",")
}

/// The top-left of each frame's viewport in top-level viewport CSS px (the main frame at the
/// origin); `None` for a frame whose host element has no box.
pub(crate) async fn frame_origins(
    session: &Session,
    frames: &[FrameMeta],
    dom: &DomIndex,
) -> Vec<Option<(f64, f64)>> {
    let lookups = frames
        .iter()
        .enumerate()
        .map(|(position, frame)| async move {
            if position == 0 {
                return Some((0.0, 0.0));
            }
            let owner = dom.document_of_frame(&frame.id)?.owner_backend?;
            let model = session
                .call("DOM.getBoxModel", json!({ "backendNodeId": owner }))
                .await
                .ok()?;
            let content = model["model"]["content"].as_array()?;
            Some((content.first()?.as_f64()?, content.get(1)?.as_f64()?))
        });
    join_all(lookups).await
}

/// Takes one observation. A page caught between two documents can refuse a call (its frame
/// just went away); that is retried once before it counts as a failure.
///
/// The last observation is reused, not fetched again, only when all of these hold: no action
/// was dispatched since (`Reuse::forget`); the same frames show the same documents at the same
/// URLs; every frame's watcher was read both times and saw no change and the same fingerprint;
/// no frame has an animation, transition or font load under way or a custom element that could
/// change unseen; and, when it was taken, every frame was fetched, the watchers saw no change
/// during the fetch (and were settled both times), no node sat in a closed shadow root, and no
/// action began meanwhile.
///
/// With `afresh`, everything is fetched whatever the watchers say (what a reused observation
/// must always equal).
pub(crate) async fn observe(
    session: &Session,
    state: &Mutex<PageState>,
    watchers: &Watchers,
    reuse: &Reuse,
    afresh: bool,
) -> Result<Observation, SurfaceError> {
    match observe_once(session, state, watchers, reuse, afresh).await {
        Err(SurfaceError::ActionFailed { .. }) => {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            observe_once(session, state, watchers, reuse, afresh).await
        }
        outcome => outcome,
    }
}

async fn observe_once(
    session: &Session,
    state: &Mutex<PageState>,
    watchers: &Watchers,
    reuse: &Reuse,
    afresh: bool,
) -> Result<Observation, SurfaceError> {
    let generation = reuse.generation.load(std::sync::atomic::Ordering::SeqCst);
    let frames = frames(session).await?;
    let watch = watchers.read(session, &frames).await;
    let key = frames_key(&frames);
    if !afresh {
        let kept = lock(&reuse.last);
        if let Some(kept) = kept.as_ref()
            && kept.frames == key
            && unchanged(&kept.observation.watch, &watch)
            && watch.iter().flatten().all(|frame| frame.settled)
        {
            let mut observation = kept.observation.clone();
            observation.watch = watch;
            lock(&reuse.counts).1 += 1;
            return Ok(observation);
        }
    }
    let (mut observation, fetched) = fetch(session, state, &frames).await?;
    let after = watchers.read(session, &frames).await;
    observation.steady = unchanged(&watch, &after);
    let settled = [&watch, &after]
        .iter()
        .all(|read| read.iter().flatten().all(|frame| frame.settled));
    observation.watch = after;
    lock(&reuse.counts).0 += 1;
    let keep = observation.steady && settled && fetched.complete && !fetched.closed_shadow;
    let mut last = lock(&reuse.last);
    // Compared under the lock `forget` takes: an action that began during the fetch wins.
    let current = reuse.generation.load(std::sync::atomic::Ordering::SeqCst) == generation;
    *last = (keep && current).then(|| Kept {
        frames: key,
        observation: observation.clone(),
    });
    drop(last);
    Ok(observation)
}

/// What a fetch says beside its observation.
struct Fetched {
    /// Every frame's tree was read and every child frame's position found.
    complete: bool,
    /// Some node sits in a closed shadow root.
    closed_shadow: bool,
}

/// Fetches every frame's tree and the DOM snapshot.
async fn fetch(
    session: &Session,
    state: &Mutex<PageState>,
    frames: &[FrameMeta],
) -> Result<(Observation, Fetched), SurfaceError> {
    let trees = join_all(frames.iter().map(|frame| {
        session.call(
            "Accessibility.getFullAXTree",
            json!({ "frameId": frame.id }),
        )
    }));
    let dom = session.call(
        "DOMSnapshot.captureSnapshot",
        json!({ "computedStyles": [], "includeDOMRects": false }),
    );
    let (trees, dom) = futures::join!(trees, dom);
    let dom = DomIndex::parse(&dom.map_err(|error| error.into_surface("capturing the DOM"))?);
    let mut inputs = Vec::with_capacity(frames.len());
    let mut complete = true;
    for (position, (frame, tree)) in frames.iter().zip(trees).enumerate() {
        let ax = match tree {
            Ok(tree) => AxNode::parse_all(&tree),
            // A child frame may go away between the two calls; it is simply not there.
            Err(CallError::Protocol(_)) if position > 0 => {
                complete = false;
                Vec::new()
            }
            Err(error) => return Err(error.into_surface("reading the accessibility tree")),
        };
        inputs.push(FrameInput {
            frame_id: frame.id.clone(),
            loader_id: frame.loader_id.clone(),
            parent: frame.parent,
            name: frame.name.clone(),
            ax,
            owner_backend: dom
                .document_of_frame(&frame.id)
                .and_then(|d| d.owner_backend),
            origin: None,
        });
    }
    for (input, origin) in inputs
        .iter_mut()
        .zip(frame_origins(session, frames, &dom).await)
    {
        complete &= origin.is_some();
        input.origin = origin;
    }
    let stitched = stitch(&inputs, &dom);
    let main = &frames[0];
    let title = dom
        .document_of_frame(&main.id)
        .map(|document| document.title.clone())
        .filter(|title| !title.is_empty())
        .or_else(|| stitched.nodes.first().map(|root| root.name.clone()))
        .unwrap_or_default();
    let http_status = {
        let mut state = lock(state);
        state.keep_frames(frames.iter().map(|frame| frame.id.as_str()));
        frames
            .iter()
            .filter_map(|frame| state.status_of(&frame.id, &frame.loader_id))
            .max()
    };
    let documents = documents_signature(frames);
    Ok((
        Observation {
            snapshot: UiSnapshot {
                url: main.url.clone(),
                title,
                http_status,
                nodes: stitched.nodes,
            },
            handles: stitched.handles.into_iter().collect(),
            documents,
            watch: Vec::new(),
            steady: false,
        },
        Fetched {
            complete,
            closed_shadow: dom.closed_shadow,
        },
    ))
}
