//! Recording by demonstration: gestures become the `agent_action` notes discovery writes, with
//! descriptors synthesized from the snapshot they landed on, and the recording ends as a
//! discovery run that verifies.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use cua_artifact::{Actor, RunKind};
use cua_console::{Gesture, LiveSurface, RunAttachment, SessionConfig, SessionMode};
use cua_evidence::{Event, EvidenceBus, RunId, RunStart, SteppingClock, Timestamp, read_trace};
use cua_policy::Lease;

use crate::support::{FakeLive, World, policy};

#[tokio::test]
async fn gestures_are_recorded_as_the_notes_discovery_writes() {
    let world = World::new();
    let (engine, redactor) = policy();
    let bus = Arc::new(
        EvidenceBus::create(
            world.root.path(),
            RunId::parse("record-1").unwrap(),
            Arc::new(SteppingClock::new(
                Timestamp::from_unix_micros(1_000_000_000).unwrap(),
                1_000,
            )),
            redactor,
        )
        .unwrap(),
    );
    bus.emit(
        Actor::Human,
        1,
        RunStart {
            kind: RunKind::Discovery,
            capability: None,
            content_hash: None,
            sealed_hash: None,
            bound_by: None,
            tenant: None,
            inputs: BTreeMap::new(),
            goal: Some("review a transfer".to_owned()),
            target_url: Some("http://127.0.0.1:9/".to_owned()),
            model: None,
            scripted_model: None,
            resolver_config_hash: None,
        },
    )
    .unwrap();
    let surface = FakeLive::new();
    world
        .broker
        .open_session(SessionConfig {
            id: "record-1".to_owned(),
            mode: SessionMode::Recording,
            surface: Arc::clone(&surface) as Arc<dyn LiveSurface>,
            engine,
            redactor: bus.redactor().clone(),
            lease: Arc::new(Mutex::new(Lease::new(Actor::Human))),
            label: "demonstration".to_owned(),
        })
        .unwrap();
    world
        .broker
        .attach_run(
            "record-1",
            RunAttachment {
                bus: Arc::clone(&bus),
                capability: None,
                goal: None,
            },
        )
        .unwrap();
    let broker = &world.broker;
    let clicked = broker
        .gesture("record-1", "ada", Gesture::Click { x: 50.0, y: 110.0 })
        .await
        .unwrap();
    assert_eq!(clicked.outcome, "dispatched");
    let typed = broker
        .gesture(
            "record-1",
            "ada",
            Gesture::Text {
                text: "25.00".to_owned(),
            },
        )
        .await
        .unwrap();
    assert_eq!(typed.outcome, "dispatched");
    let extracted = broker
        .gesture(
            "record-1",
            "ada",
            Gesture::Extract {
                x: 20.0,
                y: 20.0,
                into: "heading".to_owned(),
            },
        )
        .await
        .unwrap();
    assert_eq!(extracted.outcome, "extracted", "{extracted:?}");
    // The irreversible button still needs confirmation while recording.
    let transfer = broker
        .gesture("record-1", "ada", Gesture::Click { x: 30.0, y: 160.0 })
        .await
        .unwrap();
    assert_eq!(transfer.outcome, "needs_confirmation");
    assert_eq!(surface.dispatched().len(), 2);
    let summary = broker.finish_recording("record-1").unwrap();
    assert_eq!(summary.outputs, ["heading"]);
    let lines = read_trace(bus.dir()).unwrap();
    let actions: Vec<BTreeMap<String, serde_json::Value>> = lines
        .iter()
        .filter_map(|line| match &line.event {
            Event::Note(note) if note.note == "agent_action" => Some(note.data.clone()),
            _ => None,
        })
        .collect();
    let tools: Vec<(&str, &str)> = actions
        .iter()
        .map(|data| {
            (
                data["tool"].as_str().unwrap(),
                data["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("click", "dispatched"),
            ("type", "dispatched"),
            ("extract", "extracted"),
            ("click", "refused")
        ]
    );
    // The descriptor was synthesized from the snapshot the gesture landed on and resolves back.
    let target = &actions[0]["target"];
    assert_eq!(target["role"], "textbox", "{target}");
    assert_eq!(actions[1]["value"], "25.00");
    assert_eq!(actions[2]["into"], "heading");
    assert_eq!(actions[2]["extracted"], "Review Transfer");
    assert!(
        actions
            .iter()
            .all(|data| data["snapshot_ref"].as_str().is_some())
    );
    assert!(
        matches!(&lines.last().unwrap().event, Event::RunEnd(end) if end.stop_reason.as_deref() == Some("goal_met"))
    );
    assert!(cua_evidence::verify(bus.dir()).unwrap().is_intact());
    let record = cua_evidence::project(&lines).unwrap();
    assert_eq!(record.kind, RunKind::Discovery);
    assert_eq!(record.human_actions, 2);
}
