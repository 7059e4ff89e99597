//! The live view of the page for the operator console: a continuous `Page.startScreencast`
//! stream on a connection of its own, and an observation that leaves the driver's node
//! handles alone.
//!
//! The screencast runs on a separate
//! CDP connection and session attached to the same page, so it never competes with commands
//! or with the allowlist guard; frames are acknowledged only as the consumer takes them, so a
//! slow viewer slows the stream instead of queueing frames. Dropping the [`Screencast`] closes
//! its connection, which ends the stream.

use std::sync::Arc;

use base64::Engine;
use cua_snapshot::UiSnapshot;
use cua_surface::SurfaceError;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::cdp::RawCdp;
use crate::surface::ChromiumSurface;

/// How the screencast is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScreencastOptions {
    /// JPEG quality, 0 to 100.
    pub quality: u8,
    /// The largest frame Chromium sends, in device pixels (the viewport is scaled down to fit).
    pub max_width: u32,
    pub max_height: u32,
}

impl Default for ScreencastOptions {
    fn default() -> Self {
        Self {
            quality: 70,
            max_width: 1280,
            max_height: 800,
        }
    }
}

/// One frame as Chromium painted it, with the metadata that maps its pixels to page CSS
/// pixels (the coordinates snapshot bounds and mouse events use).
#[derive(Clone, PartialEq)]
pub struct ScreencastFrame {
    /// The JPEG bytes.
    pub jpeg: Vec<u8>,
    /// The viewport size in CSS pixels that the frame shows.
    pub device_width: f64,
    pub device_height: f64,
    /// The page scale factor (pinch zoom; 1 in headless).
    pub page_scale_factor: f64,
    /// The top offset of the viewport in the frame, in CSS pixels.
    pub offset_top: f64,
    /// The page's scroll position, in CSS pixels.
    pub scroll_offset_x: f64,
    pub scroll_offset_y: f64,
}

impl std::fmt::Debug for ScreencastFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScreencastFrame")
            .field("jpeg", &self.jpeg.len())
            .field("device_width", &self.device_width)
            .field("device_height", &self.device_height)
            .finish_non_exhaustive()
    }
}

/// A running screencast. Frames arrive in order; `None` means the stream ended (the page or
/// the browser went away).
pub struct Screencast {
    frames: mpsc::Receiver<ScreencastFrame>,
    task: JoinHandle<()>,
    _connection: Arc<RawCdp>,
}

impl Screencast {
    /// The next frame, waiting for the page to paint one.
    pub async fn next_frame(&mut self) -> Option<ScreencastFrame> {
        self.frames.recv().await
    }
}

impl Drop for Screencast {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for Screencast {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Screencast").finish_non_exhaustive()
    }
}

impl ChromiumSurface {
    /// Starts a screencast of this surface's page on a connection of its own.
    pub async fn screencast(&self, options: ScreencastOptions) -> Result<Screencast, SurfaceError> {
        if let Some(reason) = self.session().liveness.dead() {
            return Err(SurfaceError::Unavailable { reason });
        }
        let timeout = self.session().timeout;
        let unavailable = |reason: String| SurfaceError::Unavailable { reason };
        let (connection, mut events) = RawCdp::connect(self.devtools_endpoint(), timeout)
            .await
            .map_err(unavailable)?;
        let connection = Arc::new(connection);
        let target = self.session().target_id.clone();
        let attached = connection
            .call(
                "Target.attachToTarget",
                json!({ "targetId": target, "flatten": true }),
                None,
                timeout,
            )
            .await
            .map_err(|error| unavailable(format!("attaching the screencast: {error}")))?;
        let session = attached["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let start = json!({
            "format": "jpeg",
            "quality": options.quality.min(100),
            "maxWidth": options.max_width,
            "maxHeight": options.max_height,
            "everyNthFrame": 1,
        });
        for (method, params) in [("Page.enable", json!({})), ("Page.startScreencast", start)] {
            connection
                .call(method, params, Some(&session), timeout)
                .await
                .map_err(|error| unavailable(format!("{method}: {error}")))?;
        }
        let (sender, frames) = mpsc::channel(1);
        let acks = Arc::clone(&connection);
        let task = tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                if event.method != "Page.screencastFrame"
                    || event.session_id.as_deref() != Some(&session)
                {
                    continue;
                }
                let params = &event.params;
                let Ok(jpeg) = base64::engine::general_purpose::STANDARD
                    .decode(params["data"].as_str().unwrap_or_default())
                else {
                    continue;
                };
                let metadata = &params["metadata"];
                let number = |key: &str, default: f64| metadata[key].as_f64().unwrap_or(default);
                let frame = ScreencastFrame {
                    jpeg,
                    device_width: number("deviceWidth", 0.0),
                    device_height: number("deviceHeight", 0.0),
                    page_scale_factor: number("pageScaleFactor", 1.0),
                    offset_top: number("offsetTop", 0.0),
                    scroll_offset_x: number("scrollOffsetX", 0.0),
                    scroll_offset_y: number("scrollOffsetY", 0.0),
                };
                // Waits for the consumer: the acknowledgement is what lets Chromium paint the
                // next frame, so a slow viewer slows the stream.
                if sender.send(frame).await.is_err() {
                    return;
                }
                let ack = json!({ "sessionId": params["sessionId"] });
                if acks
                    .call("Page.screencastFrameAck", ack, Some(&session), timeout)
                    .await
                    .is_err()
                {
                    return;
                }
            }
        });
        Ok(Screencast {
            frames,
            task,
            _connection: connection,
        })
    }

    /// Observes the page without replacing the node handles the driver acts on, so a viewer
    /// can look at the page while an executor holds a resolved target.
    pub async fn peek(&self) -> Result<UiSnapshot, SurfaceError> {
        // Afresh: the console paints its redactions from this look, so it never rests on a
        // watcher's word that nothing moved.
        self.observe_afresh().await
    }
}
