//! The change watcher: in every document, a script in an isolated world (page scripts can
//! neither see nor patch it) counts what can change the accessibility tree without a new
//! document: DOM mutations (shadow roots included), input, focus, scrolling, hover, loads,
//! transitions, toggles. One call per frame reads the count, how long the frame has been quiet,
//! and a fingerprint of what changes without any event (a control's value or checked state set
//! by a script, the focused element, scroll offsets, the viewport, style sheets, the URL).
//!
//! It also counts the animation frames rendered since the last change and keeps the gaps
//! between recent bursts of changes (a page updating itself on a timer has a rhythm), and
//! answers a promise (`__cuaStill`) the moment the frame is still, so the driver waits inside the
//! page instead of looking again and again.
//!
//! Two uses: a screen is stable when every frame has been quiet long enough (instead of
//! comparing two full observations), and an observation is reused while nothing in any frame
//! changed (an observation of 10,000 nodes costs a second; reading the watchers, milliseconds).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

use crate::cdp::lock;
use crate::observe::FrameMeta;
use crate::session::{CallError, Session};

/// The isolated world the watcher lives in.
const WORLD: &str = "cua-watch";

/// Reads the watcher: `[changes, quiet milliseconds, fingerprint, settled, still frames, quiet
/// needed]`, where `settled` is false while an animation or transition runs or fonts load, and
/// in a document holding a custom element without an open shadow root (the tree may change with
/// no event then); `null` where it is not installed.
const READ: &str = "globalThis.__cuaWatch ? globalThis.__cuaWatch() : null";

/// Installs the watcher in its world (once per document) and reads it.
const INSTALL: &str = r"(() => {
  const g = globalThis;
  if (!g.__cuaWatch) {
    let changes = 0;
    let last = performance.now();
    // Animation frames rendered since the last change, counted for a few frames after each
    // change and then left alone, so a still page runs no callbacks. A frame that renders
    // nothing (hidden, or laid out at no size) gets no animation frames: none is waited for.
    const counted = 3;
    let still = 0;
    let counting = false;
    const count = () => {
      still += 1;
      counting = still < counted;
      if (counting) requestAnimationFrame(count);
    };
    const recount = () => {
      still = 0;
      if (!counting) { counting = true; requestAnimationFrame(count); }
    };
    const renders = () => !document.hidden && innerWidth > 0 && innerHeight > 0;
    const stillFrames = () => (renders() ? still : counted);
    // The page's own rhythm: when its recent changes came in separate bursts (a page updating
    // itself on a timer), quiet shorter than the gaps between them is no sign it stopped. Input
    // from outside the page (a trusted input, focus or pointer event, as an action raises)
    // starts the count again: the gap before it was the driver's, not the page's.
    // The input's own burst (its handlers' immediate changes) is not the page's either: a rhythm
    // takes two bursts of the page's own.
    const bursts = [];
    let outsideAt = -Infinity;
    const outside = new Set(['input', 'change', 'focusin', 'focusout', 'pointerover', 'pointerout',
      'submit', 'reset']);
    const fromOutside = (event) => {
      if (event && event.isTrusted) { bursts.length = 0; outsideAt = performance.now(); return true; }
      return false;
    };
    const bump = (event) => {
      const now = performance.now();
      changes += 1;
      last = now;
      recount();
      if (event && outside.has(event.type) && fromOutside(event)) return;
      if (now - outsideAt <= 8) return;
      const end = bursts.length - 1;
      if (end >= 0 && now - bursts[end] <= 8) bursts[end] = now; else bursts.push(now);
      if (bursts.length > 8) bursts.shift();
    };
    recount();
    // How long a frame must stay quiet after its last change: twice the widest gap (up to
    // 250 ms) between its bursts of the last half second, so a tick its timer runs late is
    // still waited for.
    const needed = () => {
      const now = performance.now();
      let widest = 0;
      for (let i = 1; i < bursts.length; i += 1) {
        const gap = bursts[i] - bursts[i - 1];
        if (now - bursts[i - 1] <= 500 && gap <= 250) widest = Math.max(widest, gap);
      }
      return widest * 2;
    };
    const observer = new MutationObserver(bump);
    const options = { subtree: true, childList: true, attributes: true, characterData: true };
    const watched = new WeakSet();
    const watch = (root) => {
      if (!watched.has(root)) { watched.add(root); observer.observe(root, options); }
    };
    watch(document);
    const events = ['input', 'change', 'focusin', 'focusout', 'scroll', 'toggle', 'load',
      'error', 'transitionrun', 'transitionend', 'transitioncancel', 'animationstart',
      'animationend', 'animationcancel', 'reset', 'submit', 'pointerover', 'pointerout',
      'close', 'cancel'];
    // On the window first: installed as the document starts, these listeners run before any
    // of the page's, so no page listener can stop an event before it is counted. On the
    // document too, for events whose path does not reach the window (a resource's load).
    const listen = { capture: true, passive: true };
    for (const type of events) {
      addEventListener(type, bump, listen);
      document.addEventListener(type, bump, listen);
    }
    for (const type of ['resize', 'hashchange', 'popstate', 'pageshow']) addEventListener(type, bump, listen);
    for (const type of ['pointerdown', 'mousedown', 'keydown', 'click', 'wheel']) {
      addEventListener(type, fromOutside, listen);
    }
    if (document.fonts) document.fonts.addEventListener('loadingdone', bump);
    const ids = new WeakMap();
    let nextId = 1;
    const id = (node) => {
      if (!node) return 0;
      if (!ids.has(node)) ids.set(node, nextId++);
      return ids.get(node);
    };
    // Resolves once the frame is still: `wanted` animation frames rendered since its last
    // change, and quiet for `floor` ms (counted from the wait's start, `waited` ms ago, at the
    // latest) or as long as its rhythm asks; at once if it is. Or after `cap` ms whatever
    // happened (a page that never stops). The watch then, its quiet as the wait saw it.
    g.__cuaStill = (wanted, floor, waited, cap) => new Promise((resolve) => {
      const since = performance.now() - waited;
      let finished = false;
      let pending = 0;
      let later = 0;
      const quiet = () => performance.now() - Math.max(last, since);
      const finish = () => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        clearTimeout(later);
        cancelAnimationFrame(pending);
        const read = g.__cuaWatch();
        read[1] = quiet();
        resolve(read);
      };
      const timer = setTimeout(finish, cap);
      // Looked at again on the next animation frame and when the quiet it lacks has passed, so
      // a frame with no animation frames is not left to the cap.
      const check = () => {
        if (finished) return;
        const wantedQuiet = Math.max(floor, needed());
        if (stillFrames() >= wanted && quiet() >= wantedQuiet) { finish(); return; }
        cancelAnimationFrame(pending);
        pending = requestAnimationFrame(check);
        clearTimeout(later);
        later = setTimeout(check, Math.max(1, wantedQuiet - quiet()));
      };
      check();
    });
    g.__cuaWatch = () => {
      let hash = 2166136261;
      const mix = (text) => {
        const s = String(text);
        for (let i = 0; i < s.length; i += 1) hash = Math.imul(hash ^ s.charCodeAt(i), 16777619);
        hash = Math.imul(hash ^ 31, 16777619);
      };
      let shadows = 0;
      // A custom element may change its accessible name or role through ElementInternals, or
      // hide a closed shadow root, with no mutation and no event: a document with one is
      // never reused.
      let opaque = false;
      const sheets = (root) => {
        for (const sheet of [...root.styleSheets, ...(root.adoptedStyleSheets || [])]) {
          mix(sheet.disabled);
          let rules = null;
          try { rules = sheet.cssRules; } catch (_) { mix('opaque'); continue; }
          mix(rules.length);
          for (const rule of rules) mix(rule.cssText.length);
        }
      };
      const walk = (root) => {
        const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
        for (let e = walker.nextNode(); e; e = walker.nextNode()) {
          const tag = e.localName;
          if (e.shadowRoot) { shadows += 1; watch(e.shadowRoot); sheets(e.shadowRoot); walk(e.shadowRoot); }
          else if (tag.includes('-')) opaque = true;
          if (tag === 'input' || tag === 'textarea' || tag === 'select' || tag === 'option') {
            mix(id(e)); mix(e.value); mix(e.checked); mix(e.indeterminate); mix(e.selected);
            mix(e.disabled); mix(e.selectedIndex);
          }
          if (e.scrollTop || e.scrollLeft) { mix(id(e)); mix(e.scrollTop); mix(e.scrollLeft); }
          if (e.hasAttribute('popover')) { mix(id(e)); mix(e.matches(':popover-open')); }
        }
      };
      walk(document);
      mix(shadows);
      let active = document.activeElement;
      while (active) { mix(id(active)); active = active.shadowRoot && active.shadowRoot.activeElement; }
      mix(location.href); mix(scrollX); mix(scrollY); mix(innerWidth); mix(innerHeight);
      mix(document.title);
      sheets(document);
      const moving = document.getAnimations().some((a) => a.playState === 'running' || a.pending);
      const fonts = !document.fonts || document.fonts.status === 'loaded';
      return [changes, performance.now() - last, (hash >>> 0).toString(16), !moving && fonts && !opaque,
        stillFrames(), needed()];
    };
  }
  return g.__cuaWatch();
})()";

/// Has every new document of the page start with its watcher, in the same isolated world
/// `Page.createIsolatedWorld` later names; a document loaded before (or one where that world
/// turns out to be another) gets it on its first read.
pub(crate) async fn install_on_new_documents(session: &Session) -> Result<(), CallError> {
    session
        .call(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": INSTALL, "worldName": WORLD }),
        )
        .await
        .map(drop)
}

/// What a frame must show to count as stopped: animation frames rendered since its last
/// change, and how long it has been quiet (or longer, as its own rhythm asks).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stillness {
    pub(crate) frames: u32,
    pub(crate) quiet: Duration,
}

/// The most animation frames the watcher counts after a change (`counted` in [`INSTALL`]).
const FRAMES_COUNTED: u32 = 3;

/// Waits, in the watcher's world, until the frame is still (see `__cuaStill`) for a wait that
/// began `waited` ago, or `cap` passes.
fn still_expression(still: Stillness, waited: Duration, cap: Duration) -> String {
    format!(
        "globalThis.__cuaStill ? globalThis.__cuaStill({}, {}, {}, {}) : null",
        still.frames.min(FRAMES_COUNTED),
        still.quiet.as_millis(),
        waited.as_millis(),
        cap.as_millis()
    )
}

/// What one frame's watcher said.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FrameWatch {
    pub(crate) changes: u64,
    /// Milliseconds since the last change the watcher saw (installed counts as a change).
    pub(crate) quiet_ms: f64,
    pub(crate) fingerprint: String,
    /// No animation, transition or font load under way, and no custom element that could
    /// change unseen.
    pub(crate) settled: bool,
    /// Animation frames rendered since the last change (counted up to three).
    pub(crate) still_frames: u32,
    /// How long the frame must be quiet before it counts as stopped, in milliseconds: twice the
    /// widest recent gap between its bursts of changes (a page updating
    /// itself on a timer is not stopped between two ticks), zero after a single burst.
    pub(crate) needed_ms: f64,
}

impl FrameWatch {
    /// Quiet as long as `still` asks, or its own rhythm if longer, with the animation frames
    /// rendered since, and nothing moving that no change would show (an animation, a font
    /// load, a custom element).
    fn still(&self, still: Stillness) -> bool {
        let floor = still.quiet.as_secs_f64() * 1000.0;
        self.settled
            && self.still_frames >= still.frames.min(FRAMES_COUNTED)
            && self.quiet_ms >= floor.max(self.needed_ms)
    }

    /// Whether nothing the tree depends on changed between `self` and `later`.
    pub(crate) fn unchanged(&self, later: &FrameWatch) -> bool {
        self.changes == later.changes && self.fingerprint == later.fingerprint
    }
}

/// Every frame's watch, in frame order; `None` for a frame whose watcher could not be read (a
/// frame between documents, a page that blocks scripts): nothing is known about it then.
pub(crate) type Watch = Vec<Option<FrameWatch>>;

/// The isolated world of each document the watcher was installed in.
#[derive(Debug, Default)]
pub(crate) struct Watchers {
    worlds: Mutex<HashMap<(String, String), i64>>,
}

impl Watchers {
    /// Reads every frame's watcher, installing it in documents that have none yet. The frames
    /// are read together.
    pub(crate) async fn read(&self, session: &Session, frames: &[FrameMeta]) -> Watch {
        let watch = self.read_each(session, frames, READ).await;
        // Forget the worlds of documents that are gone.
        let present: Vec<(String, String)> = frames
            .iter()
            .map(|frame| (frame.id.clone(), frame.loader_id.clone()))
            .collect();
        lock(&self.worlds).retain(|key, _| present.contains(key));
        watch
    }

    /// Every frame's watch once it is still for a wait that began `waited` ago, or `cap` has
    /// passed. The frames wait together: each answer comes when its page says so.
    pub(crate) async fn read_still(
        &self,
        session: &Session,
        frames: &[FrameMeta],
        still: Stillness,
        waited: Duration,
        cap: Duration,
    ) -> Watch {
        let expression = still_expression(still, waited, cap);
        self.read_each(session, frames, &expression).await
    }

    /// `expression` evaluated in every frame's watcher world at once; `None` for a frame that
    /// could not be read or whose renderer did not answer: nothing is known about it then.
    async fn read_each(&self, session: &Session, frames: &[FrameMeta], expression: &str) -> Watch {
        let reads = frames.iter().map(|frame| async {
            self.read_frame(session, frame, expression)
                .await
                .ok()
                .flatten()
        });
        futures::future::join_all(reads).await
    }

    /// One frame's answer to `expression` (`None`: the frame could not be read), installing the
    /// watcher first in a document that has none (or whose world is gone); `Err` when the
    /// renderer did not answer at all.
    async fn read_frame(
        &self,
        session: &Session,
        frame: &FrameMeta,
        expression: &str,
    ) -> Result<Option<FrameWatch>, ()> {
        let key = (frame.id.clone(), frame.loader_id.clone());
        let known = lock(&self.worlds).get(&key).copied();
        if let Some(context) = known
            && let Some(watch) = evaluate(session, context, expression).await?
        {
            return Ok(Some(watch));
        }
        let world = match session
            .call(
                "Page.createIsolatedWorld",
                json!({ "frameId": frame.id, "worldName": WORLD }),
            )
            .await
        {
            Ok(world) => world,
            Err(CallError::Protocol(_)) => return Ok(None),
            Err(_) => return Err(()),
        };
        let Some(context) = world["executionContextId"].as_i64() else {
            return Ok(None);
        };
        // Installing reads the watcher too: a plain read needs nothing more.
        let installed = evaluate(session, context, INSTALL).await?;
        if installed.is_none() {
            return Ok(None);
        }
        lock(&self.worlds).insert(key, context);
        if expression == READ {
            return Ok(installed);
        }
        evaluate(session, context, expression).await
    }
}

/// Evaluates in the watcher's world: `Ok(None)` when the page refused (the context is gone,
/// the script failed), `Err` when the renderer did not answer.
async fn evaluate(
    session: &Session,
    context: i64,
    expression: &str,
) -> Result<Option<FrameWatch>, ()> {
    let answer = match session
        .call(
            "Runtime.evaluate",
            json!({
                "expression": expression,
                "contextId": context,
                "returnByValue": true,
                "awaitPromise": true,
            }),
        )
        .await
    {
        Ok(answer) => answer,
        Err(CallError::Protocol(_)) => return Ok(None),
        Err(_) => return Err(()),
    };
    if answer.get("exceptionDetails").is_some() {
        return Ok(None);
    }
    Ok(parse(&answer["result"]["value"]))
}

fn parse(value: &Value) -> Option<FrameWatch> {
    let parts = value.as_array()?;
    Some(FrameWatch {
        changes: parts.first()?.as_u64()?,
        quiet_ms: parts.get(1)?.as_f64()?,
        fingerprint: parts.get(2)?.as_str()?.to_owned(),
        settled: parts.get(3)?.as_bool()?,
        still_frames: u32::try_from(parts.get(4)?.as_u64()?).ok()?,
        needed_ms: parts.get(5)?.as_f64()?,
    })
}

/// The longest quiet any frame's rhythm asks for (see [`FrameWatch::needed_ms`]).
pub(crate) fn needed(watch: &Watch) -> Duration {
    let longest = watch
        .iter()
        .flatten()
        .map(|frame| frame.needed_ms)
        .fold(0.0, f64::max);
    Duration::try_from_secs_f64(longest / 1000.0).unwrap_or_default()
}

/// Whether every frame, read in both watches, was still in `before` and changed nothing
/// between `before` and `after`.
pub(crate) fn still(before: &Watch, after: &Watch, stillness: Stillness) -> bool {
    unchanged(before, after) && before.iter().flatten().all(|frame| frame.still(stillness))
}

/// The shortest quiet time over every frame, or `None` when some frame could not be read.
pub(crate) fn quiet(watch: &Watch) -> Option<Duration> {
    let shortest = watch
        .iter()
        .map(|frame| frame.as_ref().map(|frame| frame.quiet_ms))
        .try_fold(f64::INFINITY, |shortest, quiet| {
            quiet.map(|quiet| shortest.min(quiet))
        })?;
    Duration::try_from_secs_f64(shortest / 1000.0).ok()
}

/// Whether every frame was read in both watches and none changed in between.
pub(crate) fn unchanged(before: &Watch, after: &Watch) -> bool {
    before.len() == after.len()
        && before.iter().zip(after).all(|pair| match pair {
            (Some(before), Some(after)) => before.unchanged(after),
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(changes: u64, quiet_ms: f64, fingerprint: &str) -> Option<FrameWatch> {
        Some(FrameWatch {
            changes,
            quiet_ms,
            fingerprint: fingerprint.to_owned(),
            settled: true,
            still_frames: 0,
            needed_ms: 0.0,
        })
    }

    #[test]
    fn a_watch_is_read_from_the_script_answer_and_nothing_else() {
        assert_eq!(
            parse(&json!([3, 12.5, "beef", true, 0, 0.0])),
            frame(3, 12.5, "beef")
        );
        assert_eq!(parse(&json!([3, 12.5, "beef"])), None);
        assert_eq!(parse(&json!({"changes": 3})), None);
        assert_eq!(parse(&json!(null)), None);
    }

    #[test]
    fn a_frame_is_still_after_its_frames_and_its_rhythm_and_no_change_after() {
        let read = |changes, still_frames, needed_ms| {
            parse(&json!([
                changes,
                40.0,
                "beef",
                true,
                still_frames,
                needed_ms
            ]))
        };
        assert_eq!(read(3, 2, 0.0).map(|frame| frame.still_frames), Some(2));
        assert_eq!(parse(&json!([3, 40.0, "beef", true, -1, 0.0])), None);
        assert_eq!(parse(&json!([3, 40.0, "beef", true, 2])), None);
        let wanting = |frames, quiet_ms| Stillness {
            frames,
            quiet: Duration::from_millis(quiet_ms),
        };
        let before = vec![read(3, 2, 0.0), read(7, 3, 30.0)];
        assert!(still(&before, &before, wanting(2, 40)));
        assert!(!still(&before, &before, wanting(3, 40)), "too few frames");
        assert!(
            !still(&before, &before, wanting(2, 50)),
            "too short a quiet"
        );
        assert!(
            !still(
                &before,
                &vec![read(3, 2, 0.0), read(8, 3, 30.0)],
                wanting(2, 40)
            ),
            "a change after the wait"
        );
        let mut moving = before.clone();
        if let Some(frame) = moving[0].as_mut() {
            frame.settled = false;
        }
        assert!(
            !still(&moving, &moving, wanting(2, 40)),
            "an animation runs"
        );
        let ticking = vec![read(3, 3, 0.0), read(7, 3, 60.0)];
        assert!(
            !still(&ticking, &ticking, wanting(2, 40)),
            "40 ms quiet on a page ticking every 40 ms"
        );
        assert_eq!(needed(&ticking), Duration::from_millis(60));
        let unread = vec![read(3, 2, 0.0), None];
        assert!(!still(&unread, &unread, wanting(2, 0)));
        assert!(!still(&vec![read(3, 2, 0.0)], &before, wanting(2, 0)));
    }

    #[test]
    fn the_watcher_counts_as_many_frames_as_the_driver_asks_for_at_most() {
        assert!(INSTALL.contains(&format!("const counted = {FRAMES_COUNTED};")));
        let expression = still_expression(
            Stillness {
                frames: FRAMES_COUNTED + 5,
                quiet: Duration::from_millis(50),
            },
            Duration::from_millis(7),
            Duration::from_millis(60),
        );
        assert_eq!(
            expression,
            format!(
                "globalThis.__cuaStill ? globalThis.__cuaStill({FRAMES_COUNTED}, 50, 7, 60) : null"
            )
        );
    }

    #[test]
    fn an_unread_frame_means_nothing_is_known() {
        let read = vec![frame(1, 50.0, "a"), frame(2, 10.0, "b")];
        assert_eq!(quiet(&read), Some(Duration::from_millis(10)));
        assert!(unchanged(&read, &read.clone()));
        let unread = vec![frame(1, 50.0, "a"), None];
        assert_eq!(quiet(&unread), None);
        assert_eq!(quiet(&vec![frame(1, -1.0, "a")]), None);
        assert!(!unchanged(&unread, &unread.clone()));
        assert!(!unchanged(&read, &vec![frame(1, 50.0, "a")]));
        assert!(!unchanged(
            &read,
            &vec![frame(1, 50.0, "a"), frame(3, 0.0, "b")]
        ));
        assert!(!unchanged(
            &read,
            &vec![frame(1, 50.0, "a"), frame(2, 0.0, "c")]
        ));
    }
}
