//! A surface that records every call and shows one fixed page: enough to prove what happens
//! (and what does not) before the first action, without a browser.

use std::sync::Mutex;
use std::time::Duration;

use cua_policy::{Authorized, BrowserAction};
use cua_snapshot::{NodeId, NodeScope, UiNode, UiSnapshot};
use cua_surface::{
    BlockedRequest, DispatchReceipt, Screenshot, ScreenshotRequest, SurfaceDriver, SurfaceError,
    WaitCondition, WaitOutcome,
};

/// Every call the executor made, in order.
#[derive(Debug, Default)]
pub(crate) struct FakeSurface {
    calls: Mutex<Vec<String>>,
}

impl FakeSurface {
    pub(crate) fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn push(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }

    fn page() -> UiSnapshot {
        let node = |id: &str, role: &str, name: &str, depth: u32, parent: Option<u32>| UiNode {
            id: NodeId::new(id),
            role: role.to_owned(),
            name: name.to_owned(),
            value: None,
            states: Vec::new(),
            bounds: None,
            scope: NodeScope {
                frame: Some("content".to_owned()),
                region: None,
            },
            depth,
            parent,
            children: Vec::new(),
            css_hint: None,
            labels: Vec::new(),
        };
        let mut nodes = vec![
            node("content:/document[0]", "document", "", 0, None),
            node(
                "content:/document[0]/heading[0]",
                "heading",
                "Nothing here",
                1,
                Some(0),
            ),
        ];
        nodes[0].children = vec![1];
        UiSnapshot {
            url: "http://127.0.0.1:9/".to_owned(),
            title: "fake".to_owned(),
            http_status: Some(200),
            nodes,
        }
    }
}

impl SurfaceDriver for FakeSurface {
    async fn observe(&self) -> Result<UiSnapshot, SurfaceError> {
        self.push("observe".to_owned());
        Ok(Self::page())
    }

    async fn dispatch(
        &self,
        action: Authorized<BrowserAction>,
    ) -> Result<DispatchReceipt, SurfaceError> {
        self.push(format!("dispatch {:?}", action.action()));
        Ok(DispatchReceipt {
            ok: true,
            navigated: false,
            http_status: Some(200),
            duration_ms: 0,
            message: String::new(),
        })
    }

    async fn wait(
        &self,
        _condition: WaitCondition,
        _timeout: Duration,
    ) -> Result<WaitOutcome, SurfaceError> {
        self.push("wait".to_owned());
        Ok(WaitOutcome::Met(Box::new(Self::page())))
    }

    async fn wait_until<P>(
        &self,
        predicate: P,
        _timeout: Duration,
    ) -> Result<WaitOutcome, SurfaceError>
    where
        P: Fn(&UiSnapshot) -> bool + Send + Sync,
    {
        self.push("wait_until".to_owned());
        let page = Self::page();
        Ok(if predicate(&page) {
            WaitOutcome::Met(Box::new(page))
        } else {
            WaitOutcome::TimedOut(Box::new(page))
        })
    }

    async fn screenshot(&self, request: ScreenshotRequest) -> Result<Screenshot, SurfaceError> {
        self.push("screenshot".to_owned());
        Ok(Screenshot {
            bytes: b"\x89PNG fake".to_vec(),
            mime_type: "image/png".to_owned(),
            width: 1,
            height: 1,
            viewport_width: 1,
            viewport_height: 1,
            redacted_regions: request.redact_regions.len(),
        })
    }

    fn take_blocked_requests(&self) -> Vec<BlockedRequest> {
        Vec::new()
    }
}
