//! Recording by demonstration: each gesture and navigation becomes the `agent_action` note
//! discovery would write, with its snapshot, so `cua compile` turns the trace into a draft.

use cua_artifact::{ActionKind, Actor, RunStatus};
use cua_evidence::{Note, Observe, RunEnd};
use cua_policy::{BrowserAction, ResolvedTarget, SurfaceAction};
use cua_snapshot::UiSnapshot;
use serde_json::{Value, json};

use crate::error::ConsoleError;

use super::gesture::{describe, target_of};
use super::{Broker, Gesture, GestureAnswer, RecordingSummary, Session, SessionMode, lock};

impl Broker {
    /// Finishes a recording: `run_end`, the run record, and where the trace is.
    pub fn finish_recording(&self, session_id: &str) -> Result<RecordingSummary, ConsoleError> {
        let session = self.session(session_id)?;
        if session.mode != SessionMode::Recording {
            return Err(ConsoleError::Conflict {
                reason: format!("session `{session_id}` is not a recording"),
            });
        }
        let bus = session.bus().ok_or_else(|| ConsoleError::Conflict {
            reason: "no recording is attached".to_owned(),
        })?;
        let recording = lock(&session.recording);
        let epoch = session.lease().epoch;
        bus.emit(
            Actor::Human,
            epoch,
            RunEnd {
                // The operator ends a demonstration when it has done what it shows, which is
                // what discovery calls reaching its goal (the compiler compiles only those).
                stop_reason: Some("goal_met".to_owned()),
                steps_attempted: Some(recording.steps),
                steps_effective: Some(recording.effective),
                ..RunEnd::with_status(RunStatus::Success)
            },
        )?;
        bus.finish()?;
        Ok(RecordingSummary {
            run_id: bus.run_id().to_string(),
            trace: bus.dir().join(cua_evidence::TRACE_FILE),
            steps: recording.effective,
            outputs: recording.outputs.iter().cloned().collect(),
        })
    }

    /// A recording's first action: open the target URL, through the chokepoint as a human.
    pub async fn record_navigate(
        &self,
        session_id: &str,
        operator: &str,
        url: &str,
    ) -> Result<GestureAnswer, ConsoleError> {
        let session = self.session(session_id)?;
        let _serial = session.actions.lock().await;
        let lease = session.lease();
        let mut note = serde_json::Map::new();
        let step = next_step(&session);
        note.insert("step".into(), json!(step));
        note.insert("tool".into(), json!(ActionKind::Navigate.as_str()));
        note.insert("url".into(), json!(url));
        // The screen the navigation starts from, as every recorded action names one.
        let before = session.surface.observe().await?;
        if let Some(snapshot_ref) = record_snapshot(&session, "start", &before)? {
            note.insert("snapshot_ref".into(), json!(snapshot_ref));
        }
        let answer = self
            .chokepoint(
                &session,
                operator,
                lease.epoch,
                SurfaceAction::Browser(BrowserAction::Navigate {
                    url: url.to_owned(),
                }),
                None,
                false,
                &mut note,
            )
            .await?;
        self.after_recorded_action(&session, &answer, note).await?;
        Ok(answer)
    }

    /// Recording: the `agent_action` note of a gesture (what discovery writes for a tool call).
    pub(super) fn recording_note(
        &self,
        session: &Session,
        gesture: &Gesture,
        snapshot: &UiSnapshot,
        snapshot_ref: Option<String>,
        landed: Option<&(usize, ResolvedTarget)>,
    ) -> serde_json::Map<String, Value> {
        let mut note = serde_json::Map::new();
        note.insert("step".into(), json!(next_step(session)));
        let kind = match gesture {
            Gesture::Click { .. } => ActionKind::Click,
            Gesture::Text { .. } => ActionKind::Type,
            Gesture::Key { .. } => ActionKind::PressKey,
            Gesture::Extract { .. } => ActionKind::Extract,
        };
        note.insert("tool".into(), json!(kind.as_str()));
        if let Some(snapshot_ref) = snapshot_ref {
            note.insert("snapshot_ref".into(), json!(snapshot_ref));
        }
        if let Some((index, target)) = landed {
            note.insert("node_id".into(), json!(target.node_id.as_str()));
            if let Ok(synthesized) = cua_target::synthesize(snapshot, *index)
                && synthesized.round_trips
                && let Ok(descriptor) = serde_json::to_value(&synthesized.descriptor)
            {
                note.insert("target".into(), descriptor);
            }
        }
        match gesture {
            Gesture::Text { text } => {
                let sensitive = landed.is_some_and(|(_, target)| looks_secret(&target.name));
                if sensitive {
                    // A password the operator typed is never written: it becomes a secret
                    // reference for the reviewer to bind.
                    session.redactor.register_secret(text);
                    let name = landed
                        .map(|(_, target)| secret_name(&target.name))
                        .unwrap_or_else(|| "recorded.secret".to_owned());
                    note.insert("value".into(), json!({ "$secret": name }));
                } else {
                    note.insert("value".into(), json!(text));
                }
            }
            Gesture::Key { key } => {
                note.insert("key".into(), json!(key));
            }
            Gesture::Click { .. } | Gesture::Extract { .. } => {}
        }
        note
    }

    /// Recording: an extraction reads the control at the point and dispatches nothing.
    pub(super) fn extract(
        &self,
        session: &Session,
        snapshot: &UiSnapshot,
        snapshot_ref: Option<String>,
        x: f64,
        y: f64,
        into: &str,
    ) -> Result<GestureAnswer, ConsoleError> {
        if session.mode != SessionMode::Recording {
            return Err(ConsoleError::BadRequest {
                reason: "extraction is for recordings".to_owned(),
            });
        }
        let valid = !into.is_empty()
            && into
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && into.starts_with(|c: char| c.is_ascii_lowercase());
        if !valid {
            return Err(ConsoleError::BadRequest {
                reason: "an output name is lowercase letters, digits and `_`".to_owned(),
            });
        }
        let Some(index) = snapshot.hit_test(x, y) else {
            return Err(ConsoleError::BadRequest {
                reason: "nothing to read at that point".to_owned(),
            });
        };
        let text = cua_target::cell_text(snapshot, index);
        let mut note = self.recording_note(
            session,
            &Gesture::Extract {
                x,
                y,
                into: into.to_owned(),
            },
            snapshot,
            snapshot_ref,
            Some(&(index, target_of(snapshot, index))),
        );
        note.insert("outcome".into(), json!("extracted"));
        note.insert("into".into(), json!(into));
        note.insert("extracted".into(), json!(text));
        let epoch = session.lease().epoch;
        session.emit(
            Actor::Human,
            0,
            Note {
                note: "agent_action".to_owned(),
                data: note.into_iter().collect(),
            },
        )?;
        {
            let mut recording = lock(&session.recording);
            recording.effective += 1;
            recording.outputs.insert(into.to_owned());
        }
        Ok(GestureAnswer {
            outcome: "extracted",
            message: session.redactor.redact_text(&format!("{into} = {text:?}")),
            target: Some(
                session
                    .redactor
                    .redact_text(&describe(&target_of(snapshot, index))),
            ),
            risk: None,
            decision_id: None,
            epoch,
        })
    }

    /// Recording: writes the note and lets the screen settle into the next observation.
    pub(super) async fn after_recorded_action(
        &self,
        session: &Session,
        answer: &GestureAnswer,
        note: serde_json::Map<String, Value>,
    ) -> Result<(), ConsoleError> {
        if note.is_empty() {
            return Ok(());
        }
        session.emit(
            Actor::Human,
            0,
            Note {
                note: "agent_action".to_owned(),
                data: note.into_iter().collect(),
            },
        )?;
        if answer.outcome == "dispatched" {
            lock(&session.recording).effective += 1;
            if let Ok(snapshot) = session.surface.observe().await {
                record_snapshot(session, "recorded", &snapshot)?;
            }
        }
        Ok(())
    }
}

/// Writes a snapshot to the session's run (redacted by the bus) with its `observe` event.
pub(super) fn record_snapshot(
    session: &Session,
    label: &str,
    snapshot: &UiSnapshot,
) -> Result<Option<String>, ConsoleError> {
    let Some(bus) = session.bus() else {
        return Ok(None);
    };
    let written = bus.write_snapshot(label, snapshot)?;
    let path = written.path.clone();
    bus.emit(Actor::System, 0, Observe::of(snapshot, Some(written)))?;
    Ok(Some(path))
}

/// Whether a control's name says it takes a secret.
pub(super) fn looks_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["password", "passcode", "pin", "secret", "token"]
        .iter()
        .any(|word| name.contains(word))
}

/// `recorded.password` for a control named "Password".
pub(super) fn secret_name(name: &str) -> String {
    let slug: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("recorded.{}", slug.trim_matches('_'))
}

pub(super) fn next_step(session: &Session) -> u32 {
    let mut recording = lock(&session.recording);
    recording.steps += 1;
    recording.steps
}
