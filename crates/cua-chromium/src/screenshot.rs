//! Screenshots: sensitive regions are painted over inside the page before the capture (the
//! unredacted pixels are never captured), and the metadata is read from the PNG bytes.

use base64::Engine;
use cua_snapshot::Bounds;
use cua_surface::{Screenshot, ScreenshotRequest, SurfaceError};
use serde_json::{Value, json};

use crate::observe::{FrameMeta, frames};
use crate::session::{CallError, Session};

/// The isolated world the overlays are injected from, so that page scripts cannot see or
/// patch the functions that paint them.
const WORLD: &str = "cua-redaction";

/// Captures the viewport as PNG, painting `request.redact_regions` over first.
pub(crate) async fn capture(
    session: &Session,
    request: &ScreenshotRequest,
) -> Result<Screenshot, SurfaceError> {
    // The image is in device pixels and includes any scrollbar; input lands in CSS pixels. The
    // ratio between them is the device pixel ratio, read before the capture.
    let ratio = session
        .call(
            "Runtime.evaluate",
            json!({ "expression": "window.devicePixelRatio", "returnByValue": true }),
        )
        .await
        .map_err(|error| error.into_surface("reading the device pixel ratio"))?;
    let ratio = ratio["result"]["value"]
        .as_f64()
        .filter(|ratio| ratio.is_finite() && *ratio > 0.0)
        .ok_or_else(|| SurfaceError::ActionFailed {
            reason: "Chromium reported no device pixel ratio for the screenshot".to_string(),
        })?;
    let mut painted = Vec::new();
    let outcome = async {
        if !request.redact_regions.is_empty() {
            let frames = frames(session).await?;
            for (context, origin) in contexts(session, &frames).await? {
                paint(session, context, origin, &request.redact_regions).await?;
                painted.push(context);
            }
            // Let the overlays reach the compositor before the capture.
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
        session
            .call("Page.captureScreenshot", json!({ "format": "png", "fromSurface": true }))
            .await
            .map_err(|error| error.into_surface("capturing the screenshot"))
    }
    .await;
    for context in painted {
        let remove = "document.querySelectorAll('[data-cua-redaction]').forEach(e => e.remove())";
        let _ = session
            .call(
                "Runtime.evaluate",
                json!({ "expression": remove, "contextId": context }),
            )
            .await;
    }
    let answer = outcome?;
    let data = answer["data"].as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|error| SurfaceError::ActionFailed {
            reason: format!("the screenshot is not base64: {error}"),
        })?;
    let (width, height) = png_size(&bytes).ok_or_else(|| SurfaceError::ActionFailed {
        reason: "the screenshot is not a PNG image".to_string(),
    })?;
    Ok(Screenshot {
        bytes,
        mime_type: "image/png".to_string(),
        width,
        height,
        viewport_width: css_size(width, ratio),
        viewport_height: css_size(height, ratio),
        redacted_regions: request.redact_regions.len(),
    })
}

/// An execution context in every rendered frame, with the frame's viewport origin.
async fn contexts(
    session: &Session,
    frames: &[FrameMeta],
) -> Result<Vec<(i64, (f64, f64))>, SurfaceError> {
    let mut contexts = Vec::new();
    for (position, frame) in frames.iter().enumerate() {
        let origin = if position == 0 {
            Some((0.0, 0.0))
        } else {
            frame_origin(session, frame).await
        };
        let Some(origin) = origin else { continue };
        let world = session
            .call(
                "Page.createIsolatedWorld",
                json!({ "frameId": frame.id, "worldName": WORLD }),
            )
            .await
            .map_err(|error| error.into_surface("preparing the redaction"))?;
        let context =
            world["executionContextId"]
                .as_i64()
                .ok_or_else(|| SurfaceError::ActionFailed {
                    reason: "no execution context for redaction".into(),
                })?;
        contexts.push((context, origin));
    }
    Ok(contexts)
}

async fn frame_origin(session: &Session, frame: &FrameMeta) -> Option<(f64, f64)> {
    let owner = session
        .call("DOM.getFrameOwner", json!({ "frameId": frame.id }))
        .await
        .ok()?;
    let backend = owner["backendNodeId"].as_i64()?;
    let model = session
        .call("DOM.getBoxModel", json!({ "backendNodeId": backend }))
        .await
        .ok()?;
    let content = model["model"]["content"].as_array()?;
    Some((content.first()?.as_f64()?, content.get(1)?.as_f64()?))
}

/// Paints the regions (top-level coordinates) into one frame, translated to its viewport.
/// Fails closed: if a frame cannot be painted, no capture happens.
async fn paint(
    session: &Session,
    context: i64,
    origin: (f64, f64),
    regions: &[Bounds],
) -> Result<(), SurfaceError> {
    let boxes: Vec<Value> = regions
        .iter()
        .map(|r| json!([r.x - origin.0, r.y - origin.1, r.width, r.height]))
        .collect();
    let expression = format!(
        "(() => {{ const root = document.documentElement; if (!root) return -1; \
         for (const [x, y, w, h] of {boxes}) {{ \
           const d = document.createElement('div'); d.setAttribute('data-cua-redaction', ''); \
           d.style.cssText = `all:initial !important; position:fixed !important; display:block !important; \
             left:${{x}}px !important; top:${{y}}px !important; width:${{w}}px !important; height:${{h}}px !important; \
             background:#000 !important; z-index:2147483647 !important; pointer-events:none !important; \
             opacity:1 !important; visibility:visible !important`; \
           root.appendChild(d); }} return {count}; }})()",
        boxes = Value::Array(boxes),
        count = regions.len(),
    );
    let answer = session
        .call(
            "Runtime.evaluate",
            json!({ "expression": expression, "contextId": context, "returnByValue": true }),
        )
        .await
        .map_err(|error: CallError| error.into_surface("painting a redaction"))?;
    if answer["result"]["value"].as_i64() != Some(regions.len() as i64) {
        return Err(SurfaceError::ActionFailed {
            reason: "a redaction overlay could not be painted; nothing was captured".into(),
        });
    }
    Ok(())
}

/// Width and height from a PNG's IHDR chunk.
pub(crate) fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];
    if bytes.len() < 24 || bytes[..8] != SIGNATURE || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let width = u32::from_be_bytes(bytes[16..20].try_into().ok()?);
    let height = u32::from_be_bytes(bytes[20..24].try_into().ok()?);
    Some((width, height))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_header() {
        let mut bytes = vec![
            0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n', 0, 0, 0, 13,
        ];
        bytes.extend_from_slice(b"IHDR");
        bytes.extend_from_slice(&1280u32.to_be_bytes());
        bytes.extend_from_slice(&800u32.to_be_bytes());
        assert_eq!(png_size(&bytes), Some((1280, 800)));
        bytes[1] = b'X';
        assert_eq!(png_size(&bytes), None);
        assert_eq!(png_size(b"short"), None);
    }
}

/// A device-pixel length in CSS pixels, at least 1.
fn css_size(device: u32, ratio: f64) -> u32 {
    let css = (f64::from(device) / ratio).round();
    if css >= f64::from(u32::MAX) {
        u32::MAX
    } else if css >= 1.0 {
        // In range and integral: the conversion is exact.
        css as u32
    } else {
        1
    }
}

#[cfg(test)]
mod css_tests {
    use super::css_size;

    #[test]
    fn device_pixels_become_css_pixels() {
        assert_eq!(css_size(1280, 1.0), 1280);
        assert_eq!(css_size(2560, 2.0), 1280);
        assert_eq!(css_size(1921, 1.5), 1281);
        assert_eq!(css_size(0, 1.0), 1);
    }
}
