//! A fake live surface over fixed snapshots, a manual clock, and a broker with one supervised
//! session whose run writes a real evidence bus.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cua_artifact::{Actor, CapabilityRef, FailureCode, PolicyConfig, RunKind, StepId};
use cua_console::{
    BoxFuture, Broker, BrokerConfig, ConsoleClock, FrameStream, LiveFrame, LiveSurface,
    RunAttachment, Session, SessionConfig, SessionMode,
};
use cua_evidence::{EvidenceBus, Redactor, RunId, RunStart, SteppingClock, Timestamp};
use cua_policy::{Authorized, BrowserAction, Lease, PolicyEngine};
use cua_replay::EscalationRequest;
use cua_snapshot::{Bounds, NodeId, NodeScope, UiNode, UiSnapshot};
use cua_surface::{BlockedRequest, DispatchReceipt, SurfaceError};

/// The canary a policy rule masks; it is on the fake page.
pub(crate) const CANARY: &str = "Lovelace";

pub(crate) struct ManualClock(pub(crate) AtomicU64);

impl ConsoleClock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl ManualClock {
    pub(crate) fn advance(&self, by: Duration) {
        self.0
            .fetch_add(u64::try_from(by.as_millis()).unwrap(), Ordering::SeqCst);
    }
}

/// A page with a heading, a canary cell, a focused textbox and an irreversible button.
pub(crate) fn review_page() -> UiSnapshot {
    let node = |id: &str,
                role: &str,
                name: &str,
                bounds: Option<(f64, f64, f64, f64)>,
                parent: Option<u32>| UiNode {
        id: NodeId::new(id),
        role: role.to_owned(),
        name: name.to_owned(),
        value: (role == "textbox").then(|| "10.00".to_owned()),
        states: if role == "textbox" {
            vec!["focused".to_owned()]
        } else {
            Vec::new()
        },
        bounds: bounds.map(|(x, y, width, height)| Bounds {
            x,
            y,
            width,
            height,
        }),
        scope: NodeScope {
            frame: Some("content".to_owned()),
            region: None,
        },
        depth: u32::from(parent.is_some()),
        parent,
        children: Vec::new(),
        css_hint: None,
        labels: Vec::new(),
    };
    let mut nodes = vec![
        node(
            "content:/document[0]",
            "document",
            "Review",
            Some((0.0, 0.0, 640.0, 400.0)),
            None,
        ),
        node(
            "content:/document[0]/heading[0]",
            "heading",
            "Review Transfer",
            Some((10.0, 10.0, 300.0, 30.0)),
            Some(0),
        ),
        node(
            "content:/document[0]/cell[0]",
            "cell",
            &format!("Ada {CANARY}"),
            Some((10.0, 60.0, 200.0, 20.0)),
            Some(0),
        ),
        node(
            "content:/document[0]/textbox[0]",
            "textbox",
            "Amount",
            Some((10.0, 100.0, 200.0, 24.0)),
            Some(0),
        ),
        node(
            "content:/document[0]/button[0]",
            "button",
            "Transfer Funds",
            Some((10.0, 150.0, 140.0, 30.0)),
            Some(0),
        ),
        node(
            "content:/document[0]/button[0]/statictext[0]",
            "statictext",
            "Transfer Funds",
            Some((20.0, 155.0, 100.0, 20.0)),
            Some(4),
        ),
        node(
            "content:/document[0]/link[0]",
            "link",
            "Cancel",
            Some((200.0, 150.0, 60.0, 30.0)),
            Some(0),
        ),
    ];
    nodes[0].children = vec![1, 2, 3, 4, 6];
    nodes[4].children = vec![5];
    nodes[5].depth = 2;
    UiSnapshot {
        url: "http://127.0.0.1:9/member/12345/transfer".to_owned(),
        title: "Review".to_owned(),
        http_status: Some(200),
        nodes,
    }
}

/// A surface that shows one page, counts dispatches, and paints a white frame.
pub(crate) struct FakeLive {
    pub(crate) page: Mutex<UiSnapshot>,
    pub(crate) dispatched: Mutex<Vec<String>>,
}

impl FakeLive {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            page: Mutex::new(review_page()),
            dispatched: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn dispatched(&self) -> Vec<String> {
        self.dispatched.lock().unwrap().clone()
    }
}

struct OneFrame(Option<LiveFrame>);

impl FrameStream for OneFrame {
    fn next_frame(&mut self) -> BoxFuture<'_, Option<LiveFrame>> {
        Box::pin(async move {
            match self.0.take() {
                Some(frame) => Some(frame),
                None => std::future::pending().await,
            }
        })
    }
}

/// A white 640×400 JPEG of the 640×400 page.
pub(crate) fn white_frame() -> LiveFrame {
    let pixels = vec![255_u8; 640 * 400 * 3];
    let mut jpeg = Vec::new();
    jpeg_encoder::Encoder::new(&mut jpeg, 90)
        .encode(&pixels, 640, 400, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    LiveFrame {
        jpeg,
        page_width: 640.0,
        page_height: 400.0,
    }
}

impl LiveSurface for FakeLive {
    fn observe(&self) -> BoxFuture<'_, Result<UiSnapshot, SurfaceError>> {
        Box::pin(async move { Ok(self.page.lock().unwrap().clone()) })
    }

    fn peek(&self) -> BoxFuture<'_, Result<UiSnapshot, SurfaceError>> {
        Box::pin(async move { Ok(self.page.lock().unwrap().clone()) })
    }

    fn dispatch(
        &self,
        action: Authorized<BrowserAction>,
    ) -> BoxFuture<'_, Result<DispatchReceipt, SurfaceError>> {
        Box::pin(async move {
            self.dispatched.lock().unwrap().push(format!(
                "{:?} by {} at epoch {}",
                action.action(),
                action.actor().as_str(),
                action.lease_epoch()
            ));
            Ok(DispatchReceipt {
                ok: true,
                navigated: false,
                http_status: None,
                duration_ms: 1,
                message: "done".to_owned(),
            })
        })
    }

    fn frames(&self) -> BoxFuture<'_, Result<Box<dyn FrameStream>, SurfaceError>> {
        Box::pin(async move { Ok(Box::new(OneFrame(Some(white_frame()))) as Box<dyn FrameStream>) })
    }

    fn take_blocked_requests(&self) -> Vec<BlockedRequest> {
        Vec::new()
    }
}

/// The policy file the repository ships, with one more redaction rule for the canary.
pub(crate) fn policy() -> (PolicyEngine, Redactor) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/policy.yaml");
    let mut config = PolicyConfig::from_yaml(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut text = serde_json::to_value(&config).unwrap();
    text["redaction"]["rules"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({ "name": "canary", "pattern": CANARY }));
    config = serde_json::from_value(text).unwrap();
    let engine = PolicyEngine::from_config(&config).unwrap();
    let redactor = Redactor::from_policy(&config.redaction).unwrap();
    (engine, redactor)
}

/// A broker over a temporary evidence root with one supervised session on a fake surface.
pub(crate) struct World {
    pub(crate) root: tempfile::TempDir,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) broker: Arc<Broker>,
    pub(crate) surface: Arc<FakeLive>,
    pub(crate) session: Arc<Session>,
    pub(crate) bus: Arc<EvidenceBus>,
    pub(crate) redactor: Redactor,
}

pub(crate) const HOLD: Duration = Duration::from_secs(600);

impl World {
    pub(crate) fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock(AtomicU64::new(1_000_000)));
        let broker = Broker::new(
            BrokerConfig {
                evidence_root: root.path().to_path_buf(),
                hold_for: HOLD,
            },
            Arc::clone(&clock) as Arc<dyn ConsoleClock>,
        );
        let (engine, redactor) = policy();
        let bus = Arc::new(
            EvidenceBus::create(
                root.path(),
                RunId::parse("run-1").unwrap(),
                Arc::new(SteppingClock::new(
                    Timestamp::from_unix_micros(1_000_000_000).unwrap(),
                    1_000,
                )),
                redactor.clone(),
            )
            .unwrap(),
        );
        bus.emit(
            Actor::Automation,
            1,
            RunStart {
                kind: RunKind::Replay,
                capability: Some(capability()),
                content_hash: None,
                sealed_hash: None,
                bound_by: None,
                tenant: None,
                inputs: BTreeMap::new(),
                goal: None,
                target_url: None,
                model: None,
                scripted_model: None,
                resolver_config_hash: None,
            },
        )
        .unwrap();
        let surface = FakeLive::new();
        let session = broker
            .open_session(SessionConfig {
                id: "live-1".to_owned(),
                mode: SessionMode::Supervised,
                surface: Arc::clone(&surface) as Arc<dyn LiveSurface>,
                engine,
                redactor: bus.redactor().clone(),
                lease: Arc::new(Mutex::new(Lease::new(Actor::Automation))),
                label: "corebank.member.savings_balance@1.0.0".to_owned(),
            })
            .unwrap();
        broker
            .attach_run(
                "live-1",
                RunAttachment {
                    bus: Arc::clone(&bus),
                    capability: Some(capability()),
                    goal: Some(format!("Look up Ada {CANARY}'s balance")),
                },
            )
            .unwrap();
        Self {
            root,
            clock,
            broker,
            surface,
            session,
            bus,
            redactor,
        }
    }

    /// What the executor does when a step fails with an escalating code.
    pub(crate) fn escalate(&self) -> String {
        use cua_replay::EscalationSink;
        self.broker.sink("live-1").escalate(&EscalationRequest {
            run_id: "run-1".to_owned(),
            capability: capability(),
            failure_code: FailureCode::UnexpectedState,
            reason: format!("step `enter_member_id` found a System Notice naming Ada {CANARY}"),
            step: Some(StepId::parse("enter_member_id").unwrap()),
            step_index: Some(0),
            snapshot_ref: None,
            screenshot_ref: None,
        })
    }
}

pub(crate) fn capability() -> CapabilityRef {
    CapabilityRef::parse("corebank.member.savings_balance@1.0.0").unwrap()
}
