//! The lease cycle over a live session: an escalation pauses it and opens an intervention; an
//! operator claims it (a hold that expires), releases it or gives up; a sweep reclaims expired
//! holds. Every transition is a new epoch and a `lease` event.

use std::sync::Arc;

use cua_artifact::Actor;
use cua_evidence::LeaseTransition as EventTransition;
use cua_policy::{Lease, LeaseOperation, LeaseState, LeaseTransition};
use cua_replay::{EscalationRequest, Handback};
use cua_snapshot::NodeId;
use tokio::sync::oneshot;

use crate::error::ConsoleError;
use crate::intervention::{Intervention, InterventionState, timestamp};

use super::recording::record_snapshot;
use super::{Broker, ClaimAnswer, Handoff, ReleaseAnswer, Session, SessionMode, lock, millis};

impl Broker {
    /// The executor's escalation: pause the lease, open and persist an intervention.
    pub fn escalate(&self, session_id: &str, request: &EscalationRequest) -> String {
        let now = self.clock.now_ms();
        let mut state = lock(&self.state);
        let count = state
            .interventions
            .values()
            .filter(|intervention| intervention.run_id == request.run_id)
            .count();
        let id = format!("int-{}-{}", request.run_id, count + 1);
        let Some(session) = state.sessions.get(session_id).cloned() else {
            tracing::warn!(session = session_id, "an escalation for an unknown session");
            return id;
        };
        let redactor = &session.redactor;
        let mut history = Vec::new();
        let transition = lock(&session.lease).escalate(&format!(
            "{} at {}",
            request.failure_code.as_str(),
            request
                .step
                .as_ref()
                .map_or("the checkpoint", |step| step.as_str())
        ));
        let epoch = match transition {
            Ok(transition) => {
                history.push(redactor.redact_text(&transition.history_line()));
                if let Err(error) = emit_transition(&session, &transition, Some(&id), None) {
                    tracing::error!(%error, "the escalation's lease event was not recorded");
                }
                transition.epoch
            }
            Err(error) => {
                tracing::warn!(%error, "the lease did not pause");
                session.lease().epoch
            }
        };
        let goal = lock(&session.run).as_ref().and_then(|run| run.goal.clone());
        let intervention = Intervention {
            id: id.clone(),
            run_id: request.run_id.clone(),
            session_id: session_id.to_owned(),
            capability: Some(request.capability.to_string()),
            goal: goal.map(|goal| redactor.redact_text(&goal)),
            stopped_at: request.step.as_ref().map(ToString::to_string),
            step_index: request.step_index,
            failure_code: request.failure_code.as_str().to_owned(),
            reason: redactor.redact_text(&request.reason),
            snapshot_ref: request.snapshot_ref.clone(),
            screenshot_ref: request.screenshot_ref.clone(),
            state: InterventionState::Open,
            operator: None,
            opened_at: timestamp(now),
            updated_at: timestamp(now),
            hold_expires_at: None,
            epoch,
            history,
            human_actions: 0,
            human_delta: None,
            values_changed: Vec::new(),
        };
        self.store(&mut state, intervention);
        let (sender, receiver) = oneshot::channel();
        state.senders.insert(id.clone(), sender);
        state.receivers.insert(id.clone(), receiver);
        id
    }

    /// An operator claims an intervention: its session goes to human control at the next
    /// epoch. `expected_epoch` is the epoch the operator saw; a claim that lost its race (or
    /// acted on a stale reading) is a conflict.
    pub async fn claim(
        &self,
        intervention_id: &str,
        operator: &str,
        expected_epoch: Option<u64>,
    ) -> Result<ClaimAnswer, ConsoleError> {
        self.sweep();
        let session_id =
            {
                let state = lock(&self.state);
                let intervention = state.interventions.get(intervention_id).ok_or_else(|| {
                    ConsoleError::NotFound {
                        what: "intervention",
                        id: intervention_id.to_owned(),
                    }
                })?;
                if !state.sessions.contains_key(&intervention.session_id) {
                    return Err(ConsoleError::SessionGone {
                        id: intervention_id.to_owned(),
                    });
                }
                intervention.session_id.clone()
            };
        let session = self.session(&session_id)?;
        let _serial = session.actions.lock().await;
        let now = self.clock.now_ms();
        let transition = {
            let mut state = lock(&self.state);
            let Some(intervention) = state.interventions.get(intervention_id).cloned() else {
                return Err(ConsoleError::NotFound {
                    what: "intervention",
                    id: intervention_id.to_owned(),
                });
            };
            if !intervention.state.claimable() {
                return Err(ConsoleError::Conflict {
                    reason: format!(
                        "intervention `{intervention_id}` is {}{}",
                        intervention.state.as_str(),
                        intervention
                            .operator
                            .as_ref()
                            .map(|operator| format!(" by {operator}"))
                            .unwrap_or_default()
                    ),
                });
            }
            let transition = {
                let mut lease = lock(&session.lease);
                let expected = expected_epoch.unwrap_or(lease.epoch);
                lease.claim(operator, expected, now, millis(self.config.hold_for))?
            };
            emit_transition(&session, &transition, Some(intervention_id), None)?;
            let mut updated = intervention;
            updated.state = InterventionState::Claimed;
            updated.operator = Some(operator.to_owned());
            updated.updated_at = timestamp(now);
            updated.hold_expires_at = transition.hold_expires_at_ms.map(timestamp);
            updated.epoch = transition.epoch;
            updated
                .history
                .push(session.redactor.redact_text(&transition.history_line()));
            self.store(&mut state, updated);
            *lock(&session.handoff) = Some(Handoff {
                intervention: Some(intervention_id.to_owned()),
                operator: operator.to_owned(),
                before: None,
                actions: 0,
            });
            *lock(&session.pending) = None;
            transition
        };
        // What the screen was when the operator took over, for the delta at the release.
        let before = session.surface.observe().await.ok();
        if let Some(before) = &before {
            record_snapshot(&session, "handoff-before", before)?;
        }
        if let Some(handoff) = lock(&session.handoff).as_mut() {
            handoff.before = before;
        }
        Ok(ClaimAnswer {
            session_id,
            epoch: transition.epoch,
            state: transition.to.as_str(),
            hold_expires_at: transition.hold_expires_at_ms.map(timestamp),
        })
    }

    /// The operator hands the session back: the human delta is recorded, the lease goes to
    /// resuming and then running, and the waiting run resumes under the new epoch.
    pub async fn release(
        &self,
        session_id: &str,
        operator: &str,
    ) -> Result<ReleaseAnswer, ConsoleError> {
        let session = self.session(session_id)?;
        if session.mode == SessionMode::Recording {
            return Err(ConsoleError::Conflict {
                reason: "a recording is finished, not handed back".to_owned(),
            });
        }
        let _serial = session.actions.lock().await;
        self.sweep();
        self.check_holder(&session, operator)?;
        let after = session.surface.observe().await?;
        record_snapshot(&session, "handoff-after", &after)?;
        let now = self.clock.now_ms();
        let mut state = lock(&self.state);
        let handoff = lock(&session.handoff).take();
        let (intervention_id, before, actions) = match handoff {
            Some(handoff) => (handoff.intervention, handoff.before, handoff.actions),
            None => (None, None, 0),
        };
        let delta = before
            .as_ref()
            .map(|before| cua_snapshot::diff(before, &after))
            .unwrap_or_default();
        let values_changed: Vec<String> = delta
            .value_changed
            .iter()
            .map(|id| id.to_string())
            .collect();
        let released = {
            let mut lease = lock(&session.lease);
            let epoch = lease.epoch;
            match lease.release(operator, epoch) {
                Ok(released) => released,
                Err(error) => {
                    // Put the tenure back: nothing changed.
                    *lock(&session.handoff) = Some(Handoff {
                        intervention: intervention_id,
                        operator: operator.to_owned(),
                        before,
                        actions,
                    });
                    return Err(error.into());
                }
            }
        };
        emit_transition(
            &session,
            &released,
            intervention_id.as_deref(),
            Some((actions, delta.summary(), delta.value_changed.clone())),
        )?;
        *lock(&session.pending) = None;
        let resumed = lock(&session.lease).resume()?;
        emit_transition(&session, &resumed, intervention_id.as_deref(), None)?;
        let mut resumed_run = false;
        if let Some(id) = &intervention_id {
            if let Some(mut intervention) = state.interventions.get(id).cloned() {
                intervention.state = InterventionState::Resolved;
                intervention.updated_at = timestamp(now);
                intervention.hold_expires_at = None;
                intervention.epoch = resumed.epoch;
                intervention
                    .history
                    .push(session.redactor.redact_text(&released.history_line()));
                intervention
                    .history
                    .push(session.redactor.redact_text(&resumed.history_line()));
                intervention.human_actions = actions;
                intervention.human_delta = Some(delta.summary());
                intervention.values_changed = values_changed.clone();
                self.store(&mut state, intervention);
            }
            if let Some(sender) = state.senders.remove(id) {
                resumed_run = sender
                    .send(Some(Handback {
                        epoch: resumed.epoch,
                    }))
                    .is_ok();
            }
        }
        Ok(ReleaseAnswer {
            epoch: resumed.epoch,
            state: LeaseState::Running.as_str(),
            human_actions: actions,
            human_delta: delta.summary(),
            values_changed,
            resumed_run,
        })
    }

    /// Gives a paused run up: it ends as `needs_human` without resuming, and its intervention
    /// leaves the queue as `given_up` (persisted, so a restart does not offer it again).
    pub fn give_up(&self, intervention_id: &str) -> Result<(), ConsoleError> {
        let now = self.clock.now_ms();
        let mut state = lock(&self.state);
        let sender =
            state
                .senders
                .remove(intervention_id)
                .ok_or_else(|| ConsoleError::Conflict {
                    reason: format!("no run waits on `{intervention_id}`"),
                })?;
        if let Some(mut intervention) = state.interventions.get(intervention_id).cloned() {
            intervention.state = InterventionState::GivenUp;
            intervention.updated_at = timestamp(now);
            intervention.hold_expires_at = None;
            intervention
                .history
                .push("given up: the run ends as needs_human".to_owned());
            self.store(&mut state, intervention);
        }
        let _ = sender.send(None);
        Ok(())
    }

    /// Returns every session whose hold has expired to the queue: the lease goes back to
    /// paused (a `lease hold_expired` event) and its intervention becomes abandoned,
    /// claimable again. Called before every operation and by the server's ticker.
    pub fn sweep(&self) {
        let now = self.clock.now_ms();
        let mut state = lock(&self.state);
        let sessions: Vec<Arc<Session>> = state.sessions.values().cloned().collect();
        for session in sessions {
            let reclaimed = {
                let mut lease = lock(&session.lease);
                if !lease.hold_expired(now) {
                    continue;
                }
                lease.reclaim_expired(now)
            };
            let Ok(transition) = reclaimed else { continue };
            let handoff = lock(&session.handoff).take();
            *lock(&session.pending) = None;
            let intervention_id = handoff.and_then(|handoff| handoff.intervention);
            if let Err(error) =
                emit_transition(&session, &transition, intervention_id.as_deref(), None)
            {
                tracing::error!(%error, "the hand-back's lease event was not recorded");
            }
            if let Some(id) = intervention_id
                && let Some(mut intervention) = state.interventions.get(&id).cloned()
            {
                intervention.state = InterventionState::Abandoned;
                intervention.updated_at = timestamp(now);
                intervention.hold_expires_at = None;
                intervention.epoch = transition.epoch;
                intervention
                    .history
                    .push(session.redactor.redact_text(&transition.history_line()));
                self.store(&mut state, intervention);
            }
        }
    }

    /// The operator's tenure check: the session is in human control, held by this operator,
    /// and the hold has not run out. Recording sessions are held by whoever drives them.
    pub(super) fn check_holder(
        &self,
        session: &Session,
        operator: &str,
    ) -> Result<Lease, ConsoleError> {
        let lease = session.lease();
        let now = self.clock.now_ms();
        if lease.state != LeaseState::HumanControl || lease.hold_expired(now) {
            return Err(ConsoleError::Conflict {
                reason: format!(
                    "nobody holds session `{}` (it is {} at epoch {})",
                    session.id,
                    lease.state.as_str(),
                    lease.epoch
                ),
            });
        }
        let holder = lock(&session.handoff)
            .as_ref()
            .map(|handoff| handoff.operator.clone());
        match holder {
            Some(holder) if holder == operator || session.mode == SessionMode::Recording => {
                Ok(lease)
            }
            _ => Err(ConsoleError::NotHolder {
                operator: operator.to_owned(),
                session: session.id.clone(),
            }),
        }
    }
}

/// Emits a lease transition as a `lease` event on the session's run, by the actor it concerns.
pub(super) fn emit_transition(
    session: &Session,
    transition: &LeaseTransition,
    intervention: Option<&str>,
    released: Option<(u64, String, Vec<NodeId>)>,
) -> Result<(), ConsoleError> {
    let (event_transition, actor) = match transition.operation {
        LeaseOperation::Escalate => (EventTransition::Escalated, Actor::System),
        LeaseOperation::Claim => (EventTransition::Claimed, Actor::Human),
        LeaseOperation::Release => (EventTransition::Released, Actor::Human),
        LeaseOperation::Resume => (EventTransition::Resumed, Actor::Automation),
        LeaseOperation::ReclaimExpired => (EventTransition::HoldExpired, Actor::System),
    };
    let (human_actions, human_delta, values_changed) = match released {
        Some((actions, delta, changed)) => (Some(actions), Some(delta), changed),
        None => (None, None, Vec::new()),
    };
    session.emit(
        actor,
        transition.epoch,
        cua_evidence::Lease {
            transition: event_transition,
            holder: transition.holder,
            operator: transition.operator.clone(),
            intervention: intervention.map(str::to_owned),
            human_actions,
            human_delta,
            values_changed,
        },
    )
}
