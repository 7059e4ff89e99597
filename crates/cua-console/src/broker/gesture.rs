//! An operator's gesture: hit-tested (or focus-tested) against a fresh snapshot, then passed
//! through the gate as `human` at the held epoch; an irreversible control waits for the explicit
//! confirmation.

use std::sync::Arc;

use cua_artifact::Actor;
use cua_evidence::Resolve;
use cua_gate::{Gate, Passed, Refusal, Request, Ticket};
use cua_policy::{BrowserAction, DenialCode, LeaseState, RawInput, ResolvedTarget, SurfaceAction};
use cua_snapshot::UiSnapshot;
use serde_json::{Value, json};

use crate::error::ConsoleError;

use super::recording::record_snapshot;
use super::{Broker, Gesture, GestureAnswer, Pending, Session, SessionMode, lock, millis};

impl Broker {
    /// One gesture of the operator holding `session_id`.
    pub async fn gesture(
        &self,
        session_id: &str,
        operator: &str,
        gesture: Gesture,
    ) -> Result<GestureAnswer, ConsoleError> {
        let session = self.session(session_id)?;
        let _serial = session.actions.lock().await;
        self.act(&session, operator, gesture, None).await
    }

    /// Performs the gesture that waits for confirmation, with the operator's explicit
    /// confirmation, provided it still lands on the same control.
    pub async fn confirm(
        &self,
        session_id: &str,
        operator: &str,
    ) -> Result<GestureAnswer, ConsoleError> {
        let session = self.session(session_id)?;
        let _serial = session.actions.lock().await;
        let pending = lock(&session.pending)
            .take()
            .ok_or_else(|| ConsoleError::Conflict {
                reason: "no action waits for confirmation".to_owned(),
            })?;
        let gesture = pending.gesture.clone();
        self.act(&session, operator, gesture, Some(pending)).await
    }

    /// Drops the gesture that waits for confirmation.
    pub fn cancel_confirmation(&self, session_id: &str) -> Result<bool, ConsoleError> {
        let session = self.session(session_id)?;
        Ok(lock(&session.pending).take().is_some())
    }

    /// Resolve → authorize → dispatch → evidence for one human gesture.
    pub(super) async fn act(
        &self,
        session: &Arc<Session>,
        operator: &str,
        gesture: Gesture,
        confirmed: Option<Pending>,
    ) -> Result<GestureAnswer, ConsoleError> {
        self.sweep();
        let lease = self.check_holder(session, operator)?;
        {
            let now = self.clock.now_ms();
            let mut shared = lock(&session.lease);
            if shared.state == LeaseState::HumanControl && shared.hold_expires_at_ms.is_some() {
                shared.extend_hold(lease.epoch, now, millis(self.config.hold_for))?;
            }
        }
        if session.mode == SessionMode::Recording
            && let Some(handoff) = lock(&session.handoff).as_mut()
            && handoff.operator.is_empty()
        {
            handoff.operator = operator.to_owned();
        }
        let snapshot = session.surface.observe().await?;
        let snapshot_ref = record_snapshot(session, "human", &snapshot)?;
        let (action, landed) = match &gesture {
            Gesture::Click { x, y } => (
                SurfaceAction::Browser(BrowserAction::RawInput(RawInput::MouseClick {
                    x: *x,
                    y: *y,
                })),
                landing(&snapshot, snapshot.hit_test(*x, *y)),
            ),
            Gesture::Text { text } => (
                SurfaceAction::Browser(BrowserAction::RawInput(RawInput::Text {
                    text: text.clone(),
                })),
                landing(&snapshot, focused(&snapshot)),
            ),
            Gesture::Key { key } => (
                SurfaceAction::Browser(BrowserAction::RawInput(RawInput::Key { key: key.clone() })),
                landing(&snapshot, focused(&snapshot)),
            ),
            Gesture::Extract { x, y, into } => {
                return self
                    .extract(session, &snapshot, snapshot_ref, *x, *y, into)
                    .map(|answer| GestureAnswer {
                        epoch: lease.epoch,
                        ..answer
                    });
            }
        };
        let described = landed
            .as_ref()
            .map(|(_, target)| describe(target))
            .unwrap_or_else(|| "no control".to_owned());
        let redacted_described = session.redactor.redact_text(&described);
        if let Some(pending) = &confirmed
            && pending.node_id != landed.as_ref().map(|(_, target)| target.node_id.clone())
        {
            return Err(ConsoleError::Conflict {
                reason: format!(
                    "the screen changed: the gesture now lands on {redacted_described}, not {}; nothing was done",
                    pending.described
                ),
            });
        }
        session.emit(
            Actor::Human,
            lease.epoch,
            Resolve {
                step: None,
                target: format!("{} on {described}", gesture_name(&gesture)),
                resolved: landed.is_some(),
                node_id: landed.as_ref().map(|(_, target)| target.node_id.clone()),
                candidates_considered: u32::from(landed.is_some()),
                ..Resolve::default()
            },
        )?;
        let landed_id = landed.as_ref().map(|(_, target)| target.node_id.clone());
        let mut note = serde_json::Map::new();
        if session.mode == SessionMode::Recording {
            note = self.recording_note(session, &gesture, &snapshot, snapshot_ref, landed.as_ref());
        }
        let answer = self
            .chokepoint(
                session,
                operator,
                lease.epoch,
                action,
                landed.map(|(_, target)| target),
                confirmed.is_some(),
                &mut note,
            )
            .await?;
        if answer.outcome == "needs_confirmation" {
            *lock(&session.pending) = Some(Pending {
                gesture,
                node_id: landed_id,
                described: redacted_described,
            });
        }
        if session.mode == SessionMode::Recording {
            self.after_recorded_action(session, &answer, note).await?;
        }
        Ok(answer)
    }

    /// The chokepoint: authorize as `human` at `epoch` (with the operator's confirmation when
    /// given), check the lease again at the dispatch, dispatch, and record each stage.
    #[expect(clippy::too_many_arguments, reason = "one decision's inputs")]
    pub(super) async fn chokepoint(
        &self,
        session: &Arc<Session>,
        operator: &str,
        epoch: u64,
        action: SurfaceAction,
        target: Option<ResolvedTarget>,
        confirmed: bool,
        note: &mut serde_json::Map<String, Value>,
    ) -> Result<GestureAnswer, ConsoleError> {
        let described = target
            .as_ref()
            .map(|target| session.redactor.redact_text(&describe(target)));
        let request = Request {
            target,
            confirmed_by: confirmed.then(|| operator.to_owned()),
            ..Request::new(Actor::Human, epoch, action)
        };
        let bus = session.bus();
        let lease = || session.lease();
        let now_ms = || self.clock.now_ms();
        let gate = Gate::new(&session.engine, bus.as_deref(), &lease).with_hold_clock(&now_ms);
        let passed = gate
            .pass(
                request,
                |authorized| session.surface.dispatch(authorized),
                || session.surface.take_blocked_requests(),
            )
            .await?;
        let Passed { ticket, outcome } = match passed {
            Ok(passed) => passed,
            Err(Refusal::Denied { denial, risk }) => {
                note.insert("outcome".into(), json!("refused"));
                note.insert("decision_id".into(), json!(denial.decision_id));
                note.insert("reason".into(), json!(denial.reason));
                let needs_confirmation = denial.code == DenialCode::NeedsConfirmation;
                return Ok(GestureAnswer {
                    outcome: if needs_confirmation {
                        "needs_confirmation"
                    } else {
                        "refused"
                    },
                    message: session.redactor.redact_text(&if needs_confirmation {
                        format!(
                            "{} is {}: confirm to perform it",
                            described
                                .clone()
                                .unwrap_or_else(|| "this control".to_owned()),
                            risk.as_str()
                        )
                    } else {
                        denial.reason.clone()
                    }),
                    target: described,
                    risk: Some(risk.as_str().to_owned()),
                    decision_id: Some(denial.decision_id),
                    epoch,
                });
            }
            Err(Refusal::Withheld { risk, .. }) => {
                return Err(ConsoleError::Conflict {
                    reason: format!(
                        "a {} action needs a run's evidence for its write-ahead intent, and this \
                         session has no run attached",
                        risk.as_str()
                    ),
                });
            }
            Err(Refusal::Stale { lease, .. }) => {
                return Err(ConsoleError::Conflict {
                    reason: format!(
                        "the session moved to epoch {} before the action was dispatched",
                        lease.epoch
                    ),
                });
            }
        };
        let Ticket {
            decision_id, risk, ..
        } = ticket;
        let (ok, navigated, message) = match &outcome {
            Ok(receipt) => (receipt.ok, receipt.navigated, receipt.message.clone()),
            Err(error) => (false, false, error.to_string()),
        };
        if let Some(handoff) = lock(&session.handoff).as_mut() {
            handoff.actions += 1;
        }
        note.insert("decision_id".into(), json!(decision_id));
        note.insert("navigated".into(), json!(navigated));
        note.insert(
            "outcome".into(),
            json!(if ok { "dispatched" } else { "failed" }),
        );
        if !ok {
            note.insert("reason".into(), json!(message));
        }
        Ok(GestureAnswer {
            outcome: if ok { "dispatched" } else { "failed" },
            message: session.redactor.redact_text(&message),
            target: described,
            risk: Some(risk.as_str().to_owned()),
            decision_id: Some(decision_id),
            epoch,
        })
    }
}

/// The roles a gesture acts on; a hit on text inside one of them is classified by it.
pub(super) const ACTIONABLE_ROLES: [&str; 14] = [
    "button",
    "link",
    "textbox",
    "searchbox",
    "combobox",
    "listbox",
    "option",
    "checkbox",
    "radio",
    "switch",
    "menuitem",
    "tab",
    "slider",
    "spinbutton",
];

/// The control a hit (or the focus) belongs to: the nearest actionable node at or above it,
/// else the node itself.
pub(super) fn landing(
    snapshot: &UiSnapshot,
    hit: Option<usize>,
) -> Option<(usize, ResolvedTarget)> {
    let hit = hit?;
    let index = std::iter::once(hit)
        .chain(snapshot.ancestors(hit))
        .find(|&index| ACTIONABLE_ROLES.contains(&snapshot.nodes[index].role.as_str()))
        .unwrap_or(hit);
    Some((index, target_of(snapshot, index)))
}

pub(super) fn target_of(snapshot: &UiSnapshot, index: usize) -> ResolvedTarget {
    let node = &snapshot.nodes[index];
    ResolvedTarget {
        node_id: node.id.clone(),
        role: node.role.clone(),
        name: node.name.clone(),
    }
}

/// The focused node, the deepest one if several report focus.
pub(super) fn focused(snapshot: &UiSnapshot) -> Option<usize> {
    snapshot
        .nodes
        .iter()
        .rposition(|node| node.states.iter().any(|state| state == "focused"))
}

/// `button "Transfer Funds"`.
pub(super) fn describe(target: &ResolvedTarget) -> String {
    if target.name.is_empty() {
        target.role.clone()
    } else {
        format!("{} {:?}", target.role, target.name)
    }
}

pub(super) fn gesture_name(gesture: &Gesture) -> String {
    match gesture {
        Gesture::Click { x, y } => format!("raw click at ({x:.0}, {y:.0})"),
        Gesture::Text { text } => format!("raw text ({} chars)", text.chars().count()),
        Gesture::Key { key } => format!("raw key {key}"),
        Gesture::Extract { x, y, .. } => format!("read at ({x:.0}, {y:.0})"),
    }
}
