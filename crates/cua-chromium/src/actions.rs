//! Performing one action on the live page. Targets are the backend nodes recorded by the last
//! observation; no selector is ever re-queried.

use cua_snapshot::{NodeId, squash_whitespace};
use cua_surface::SurfaceError;
use serde_json::{Value, json};

use crate::config::Viewport;
use crate::keys;
use crate::observe::frames;
use crate::session::{CallError, Session};
use crate::tree::NodeHandle;

/// The object group every resolved node joins, released after each action.
pub(crate) const OBJECT_GROUP: &str = "cua-dispatch";

/// The default wheel distance for a scroll without an amount, in CSS px.
const DEFAULT_SCROLL: i64 = 400;

/// A resolved target: the node id for messages, its handle for CDP.
pub(crate) struct Target<'a> {
    pub(crate) id: &'a NodeId,
    pub(crate) handle: &'a NodeHandle,
}

impl Target<'_> {
    fn gone(&self) -> SurfaceError {
        SurfaceError::NodeGone {
            node_id: self.id.to_string(),
        }
    }

    /// Maps a call error on this node: "no such node" means the node is gone.
    fn fail<'s>(&'s self, context: &'s str) -> impl FnOnce(CallError) -> SurfaceError + 's {
        move |error| {
            if error.is_node_gone() {
                self.gone()
            } else {
                error.into_surface(context)
            }
        }
    }

    /// Checks that the node is still in the document it was observed in: its frame shows the
    /// same document (loader) and the node is still connected to it.
    pub(crate) async fn check_live(&self, session: &Session) -> Result<(), SurfaceError> {
        let frames = frames(session).await?;
        let current = frames.iter().find(|frame| frame.id == self.handle.frame_id);
        if current.is_none_or(|frame| frame.loader_id != self.handle.loader_id) {
            return Err(self.gone());
        }
        let connected = self
            .call_on(
                session,
                "function() { return this.isConnected; }",
                json!([]),
            )
            .await?;
        if connected != Value::Bool(true) {
            return Err(self.gone());
        }
        Ok(())
    }

    async fn object(&self, session: &Session) -> Result<String, SurfaceError> {
        let resolved = session
            .call(
                "DOM.resolveNode",
                json!({ "backendNodeId": self.handle.backend, "objectGroup": OBJECT_GROUP }),
            )
            .await
            .map_err(self.fail("resolving the node"))?;
        resolved["object"]["objectId"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.gone())
    }

    async fn call_on(
        &self,
        session: &Session,
        function: &str,
        arguments: Value,
    ) -> Result<Value, SurfaceError> {
        let object = self.object(session).await?;
        let answer = session
            .call(
                "Runtime.callFunctionOn",
                json!({
                    "objectId": object,
                    "functionDeclaration": function,
                    "arguments": arguments,
                    "returnByValue": true,
                }),
            )
            .await
            .map_err(self.fail("running on the node"))?;
        if let Some(exception) = answer.get("exceptionDetails") {
            let text = exception["exception"]["description"]
                .as_str()
                .or_else(|| exception["text"].as_str())
                .unwrap_or("exception");
            return Err(SurfaceError::ActionFailed {
                reason: format!("script failed: {text}"),
            });
        }
        Ok(answer["result"]["value"].clone())
    }
}

/// Clicks the node: scroll it into view, find the centre of its visible box, check (in its
/// own document) that the centre hits the node or a descendant, and press and release the
/// mouse there. When something else covers the point, the element is clicked through the DOM
/// instead and the message says what covered it.
/// Focuses the node, as a keyboard user reaching it would.
async fn focus(session: &Session, target: &Target<'_>) -> Result<(), SurfaceError> {
    session
        .call(
            "DOM.focus",
            json!({ "backendNodeId": target.handle.backend }),
        )
        .await
        .map(drop)
        .map_err(target.fail("focusing the node"))
}

/// The node's accessible name as the browser computes it now.
async fn accessible_name(session: &Session, target: &Target<'_>) -> Result<String, SurfaceError> {
    let answer = session
        .call(
            "Accessibility.getPartialAXTree",
            json!({ "backendNodeId": target.handle.backend, "fetchRelatives": false }),
        )
        .await
        .map_err(target.fail("reading the node's name"))?;
    Ok(answer["nodes"][0]["name"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// Scrolls the node into view when it is not.
async fn scroll_into_view(session: &Session, target: &Target<'_>) -> Result<(), SurfaceError> {
    session
        .call(
            "DOM.scrollIntoViewIfNeeded",
            json!({ "backendNodeId": target.handle.backend }),
        )
        .await
        .map(drop)
        .map_err(target.fail("scrolling the node into view"))
}

pub(crate) async fn click(
    session: &Session,
    target: &Target<'_>,
    viewport: Viewport,
    judged: Option<&str>,
) -> Result<String, SurfaceError> {
    scroll_into_view(session, target).await?;
    let (x, y, revealed) = match centre(session, target, viewport).await {
        Ok((x, y)) => (x, y, false),
        // A row action shown only on hover or focus (WordPress's list tables keep them off
        // screen until then): focused, as a keyboard user reaches it, it may show itself. A
        // control that stays invisible is never clicked.
        Err(hidden) => {
            focus(session, target).await?;
            let _ = scroll_into_view(session, target).await;
            let (x, y) = match centre(session, target, viewport).await {
                Ok(point) => point,
                Err(_) => return Err(hidden),
            };
            // Focusing runs the page's handlers: one may have renamed the control after the
            // policy judged it by its name. Then nothing is clicked.
            if let Some(judged) = judged {
                let now = accessible_name(session, target).await?;
                if squash_whitespace(&now) != squash_whitespace(judged) {
                    return Err(SurfaceError::ActionFailed {
                        reason: format!(
                            "the control was renamed when it was focused ({judged:?} became \
                             {now:?}); nothing was clicked"
                        ),
                    });
                }
            }
            (x, y, true)
        }
    };
    let revealed = if revealed {
        " (shown once focused)"
    } else {
        ""
    };
    let (origin_x, origin_y) = frame_origin(session, &target.handle.frame_id).await?;
    let covering = target
        .call_on(
            session,
            "function(x, y) { \
               const e = this.nodeType === 1 ? this : this.parentElement; \
               if (!e) return 'nothing'; \
               const hit = e.ownerDocument.elementFromPoint(x, y); \
               if (hit === e || (hit && e.contains(hit))) return ''; \
               if (!hit) return 'nothing'; \
               let text = hit.localName; \
               if (hit.id) text += '#' + hit.id; \
               for (const c of hit.classList) text += '.' + c; \
               return '`' + text + '`'; }",
            json!([{ "value": x - origin_x }, { "value": y - origin_y }]),
        )
        .await?;
    let covering = covering.as_str().unwrap_or("nothing").to_string();
    if covering.is_empty() {
        mouse_click(session, x, y).await?;
        return Ok(format!("clicked at ({x:.0}, {y:.0}){revealed}"));
    }
    let clicked = target
        .call_on(
            session,
            "function() { const e = this.nodeType === 1 ? this : this.parentElement; \
             if (!e) return false; e.click(); return true; }",
            json!([]),
        )
        .await?;
    if clicked != Value::Bool(true) {
        return Err(SurfaceError::ActionFailed {
            reason: "the node is not clickable".into(),
        });
    }
    Ok(format!(
        "the node's centre was covered by {covering}; clicked it through the DOM"
    ))
}

/// Focuses the node and inserts the text (after selecting and replacing the current content
/// when `clear_first`). The text itself never appears in a message.
pub(crate) async fn type_text(
    session: &Session,
    target: &Target<'_>,
    text: &str,
    clear_first: bool,
) -> Result<String, SurfaceError> {
    focus(session, target).await?;
    let count = text.chars().count();
    // Date and time inputs take no typed text (Chromium edits them field by field, in the
    // locale's order): their value is set in its ISO form, as a form posts it, and read back,
    // so a value the control rejects is an error instead of a silently empty field. Any other
    // control has its content selected (to be replaced) or the caret put at its end.
    let set = target
        .call_on(
            session,
            "function(text, clear) { \
               const e = this.nodeType === 1 ? this : this.parentElement; \
               const kinds = ['date', 'time', 'datetime-local', 'month', 'week']; \
               if (e instanceof HTMLInputElement && kinds.includes(e.type)) { \
                 e.value = text; \
                 e.dispatchEvent(new Event('input', { bubbles: true })); \
                 e.dispatchEvent(new Event('change', { bubbles: true })); \
                 return e.type + ':' + (e.value === text ? 'ok' : 'rejected'); \
               } \
               if (typeof e.setSelectionRange === 'function' && typeof e.value === 'string') { \
                 try { clear ? e.select() : e.setSelectionRange(e.value.length, e.value.length); return null; } catch (_) {} \
               } \
               const range = document.createRange(); range.selectNodeContents(e); \
               if (!clear) range.collapse(false); \
               const selection = e.ownerDocument.getSelection(); \
               selection.removeAllRanges(); selection.addRange(range); \
               return null; }",
            json!([{ "value": text }, { "value": clear_first }]),
        )
        .await?;
    if let Some(answer) = set.as_str() {
        let (kind, verdict) = answer.split_once(':').unwrap_or((answer, ""));
        if verdict != "ok" {
            return Err(SurfaceError::ActionFailed {
                reason: format!(
                    "the <input type={kind}> refused the value ({count} characters): give it in \
                     the control's ISO form, e.g. 2026-12-24 for a date"
                ),
            });
        }
        return Ok(format!(
            "set the {kind} control's value ({count} characters)"
        ));
    }
    if text.is_empty() {
        if clear_first {
            press(session, "Backspace").await?;
        }
    } else {
        session
            .call("Input.insertText", json!({ "text": text }))
            .await
            .map_err(|error| error.into_surface("inserting text"))?;
    }
    Ok(match (clear_first, count) {
        (true, 0) => "cleared the field".to_string(),
        (true, _) => format!("replaced the content with {count} characters"),
        (false, _) => format!("typed {count} characters"),
    })
}

/// Selects the option whose value, label or text equals `wanted`, firing `input` and `change`.
pub(crate) async fn select(
    session: &Session,
    target: &Target<'_>,
    wanted: &str,
) -> Result<String, SurfaceError> {
    let outcome = target
        .call_on(
            session,
            "function(wanted) { \
               const select = this.tagName === 'SELECT' ? this : (this.closest ? this.closest('select') : null); \
               if (!select) return 'the node is not a select control'; \
               const options = Array.from(select.options); \
               const trimmed = wanted.trim(); \
               const option = options.find(o => o.value === wanted) \
                 || options.find(o => o.label.trim() === trimmed) \
                 || options.find(o => o.text.trim() === trimmed); \
               if (!option) return 'no option has that value or label'; \
               if (option.disabled || select.disabled) return 'the option is disabled'; \
               select.focus(); option.selected = true; \
               select.dispatchEvent(new Event('input', { bubbles: true })); \
               select.dispatchEvent(new Event('change', { bubbles: true })); \
               return 'ok:' + (options.indexOf(option) + 1) + '/' + options.length; }",
            json!([{ "value": wanted }]),
        )
        .await?;
    match outcome.as_str() {
        Some(ok) if ok.starts_with("ok:") => Ok(format!("selected option {}", &ok[3..])),
        Some(reason) => Err(SurfaceError::ActionFailed {
            reason: reason.to_string(),
        }),
        None => Err(SurfaceError::ActionFailed {
            reason: "the select script answered nothing".into(),
        }),
    }
}

/// Presses one key (with modifiers) at the focused element, or at `target` after focusing it.
pub(crate) async fn press_key(
    session: &Session,
    target: Option<&Target<'_>>,
    key: &str,
) -> Result<String, SurfaceError> {
    if let Some(target) = target {
        focus(session, target).await?;
    }
    press(session, key).await?;
    Ok(format!("pressed {key}"))
}

/// Scrolls the node into view, or turns the wheel by `amount` px over the node (or the
/// viewport's centre).
pub(crate) async fn scroll(
    session: &Session,
    target: Option<&Target<'_>>,
    down: Option<bool>,
    amount: Option<i64>,
    viewport: Viewport,
) -> Result<String, SurfaceError> {
    let Some(down) = down else {
        let target = target.ok_or_else(|| SurfaceError::ActionFailed {
            reason: "scrolling into view needs a resolved target".into(),
        })?;
        scroll_into_view(session, target).await?;
        return Ok("scrolled the node into view".to_string());
    };
    let (x, y) = match target {
        Some(target) => centre(session, target, viewport).await?,
        None => (
            f64::from(viewport.width) / 2.0,
            f64::from(viewport.height) / 2.0,
        ),
    };
    let distance = amount.unwrap_or(DEFAULT_SCROLL).abs();
    let delta = if down { distance } else { -distance };
    session
        .call(
            "Input.dispatchMouseEvent",
            json!({ "type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": delta }),
        )
        .await
        .map_err(|error| error.into_surface("turning the wheel"))?;
    next_frames(session).await;
    Ok(format!(
        "scrolled {} by {distance} px",
        if down { "down" } else { "up" }
    ))
}

/// A click at top-level viewport coordinates.
pub(crate) async fn mouse_click(session: &Session, x: f64, y: f64) -> Result<(), SurfaceError> {
    let events = [
        json!({ "type": "mouseMoved", "x": x, "y": y }),
        json!({ "type": "mousePressed", "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1 }),
        json!({ "type": "mouseReleased", "x": x, "y": y, "button": "left", "buttons": 0, "clickCount": 1 }),
    ];
    for event in events {
        session
            .call("Input.dispatchMouseEvent", event)
            .await
            .map_err(|error| error.into_surface("dispatching the mouse"))?;
    }
    Ok(())
}

/// Inserts text at the focused element.
pub(crate) async fn insert_text(session: &Session, text: &str) -> Result<(), SurfaceError> {
    session
        .call("Input.insertText", json!({ "text": text }))
        .await
        .map(|_| ())
        .map_err(|error| error.into_surface("inserting text"))
}

/// One key down and up.
pub(crate) async fn press(session: &Session, key: &str) -> Result<(), SurfaceError> {
    let press = keys::parse(key).ok_or_else(|| SurfaceError::ActionFailed {
        reason: format!("unknown key `{key}`"),
    })?;
    let mut down = json!({
        "type": if press.text.is_some() { "keyDown" } else { "rawKeyDown" },
        "key": press.key,
        "code": press.code,
        "windowsVirtualKeyCode": press.virtual_key,
        "nativeVirtualKeyCode": press.virtual_key,
        "modifiers": press.modifiers,
    });
    if let Some(text) = &press.text {
        down["text"] = json!(text);
        down["unmodifiedText"] = json!(text);
    }
    let up = json!({
        "type": "keyUp",
        "key": press.key,
        "code": press.code,
        "windowsVirtualKeyCode": press.virtual_key,
        "nativeVirtualKeyCode": press.virtual_key,
        "modifiers": press.modifiers,
    });
    for event in [down, up] {
        session
            .call("Input.dispatchKeyEvent", event)
            .await
            .map_err(|error| error.into_surface("dispatching the key"))?;
    }
    Ok(())
}

/// Waits for two animation frames, so that an input's effect is painted.
pub(crate) async fn next_frames(session: &Session) {
    let _ = session
        .call(
            "Runtime.evaluate",
            json!({
                "expression": "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))",
                "awaitPromise": true,
            }),
        )
        .await;
}

/// The top-left of a frame's viewport in top-level viewport coordinates, read now (after any
/// scrolling the action caused).
async fn frame_origin(session: &Session, frame_id: &str) -> Result<(f64, f64), SurfaceError> {
    let frames = frames(session).await?;
    if frames.first().is_some_and(|main| main.id == frame_id) {
        return Ok((0.0, 0.0));
    }
    let unrendered = || SurfaceError::ActionFailed {
        reason: "the node's frame is not rendered".into(),
    };
    let owner = session
        .call("DOM.getFrameOwner", json!({ "frameId": frame_id }))
        .await
        .map_err(|error| error.into_surface("finding the node's frame"))?;
    let backend = owner["backendNodeId"].as_i64().ok_or_else(unrendered)?;
    let model = session
        .call("DOM.getBoxModel", json!({ "backendNodeId": backend }))
        .await
        .map_err(|error| error.into_surface("measuring the node's frame"))?;
    let content = model["model"]["content"]
        .as_array()
        .ok_or_else(unrendered)?;
    match (
        content.first().and_then(Value::as_f64),
        content.get(1).and_then(Value::as_f64),
    ) {
        (Some(x), Some(y)) => Ok((x, y)),
        _ => Err(unrendered()),
    }
}

/// The centre of the node's first visible box, clipped to the viewport.
async fn centre(
    session: &Session,
    target: &Target<'_>,
    viewport: Viewport,
) -> Result<(f64, f64), SurfaceError> {
    let answer = session
        .call(
            "DOM.getContentQuads",
            json!({ "backendNodeId": target.handle.backend }),
        )
        .await
        .map_err(target.fail("measuring the node"))?;
    let quads = answer["quads"].as_array().cloned().unwrap_or_default();
    let (width, height) = (f64::from(viewport.width), f64::from(viewport.height));
    for quad in quads {
        let points: Vec<f64> = quad
            .as_array()
            .map(|q| q.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        if points.len() != 8 {
            continue;
        }
        let xs = [points[0], points[2], points[4], points[6]];
        let ys = [points[1], points[3], points[5], points[7]];
        let left = xs.iter().copied().fold(f64::INFINITY, f64::min).max(0.0);
        let right = xs
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
            .min(width);
        let top = ys.iter().copied().fold(f64::INFINITY, f64::min).max(0.0);
        let bottom = ys
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
            .min(height);
        if right - left >= 1.0 && bottom - top >= 1.0 {
            return Ok(((left + right) / 2.0, (top + bottom) / 2.0));
        }
    }
    Err(SurfaceError::ActionFailed {
        reason: format!("node `{}` has no visible box in the viewport", target.id),
    })
}
