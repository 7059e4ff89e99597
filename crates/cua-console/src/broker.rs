//! The session broker: live sessions, their leases, the intervention queue, and the human's
//! path through the same resolve → authorize → dispatch → evidence chokepoint as every actor.
//!
//! # A supervised escalation, end to end
//!
//! 1. The executor stops at a step and calls [`SessionSink::escalate`]: the lease goes
//!    running → paused (epoch 2, a `lease escalated` event), an intervention is opened and
//!    persisted, and the executor emits `escalate` and waits in
//!    [`SessionSink::handed_back`].
//! 2. An operator claims it ([`Broker::claim`]): paused → human control (epoch 3, `lease
//!    claimed`, with a hold that expires). A second claimer gets a conflict.
//! 3. Each gesture ([`Broker::gesture`]) is hit-tested against a fresh snapshot (a click is
//!    classified by the control it lands on, text and keys by the focused control), authorized
//!    as `human` at the current epoch, and only then dispatched; a control the policy's human
//!    profile marks irreversible needs [`Broker::confirm`].
//! 4. [`Broker::release`] records the human delta (ids only), moves the lease to resuming
//!    (epoch 4) and at once to running (epoch 5), and hands the run back: the executor
//!    re-anchors and finishes under epoch 5, in the same trace.
//!
//! An expired hold ([`Broker::sweep`]) returns the session to paused and the intervention to
//! the queue as abandoned, claimable again; the operator's epoch is then stale.
//!
//! Locks: the broker's state, then a session's lease, never the other way round, and neither
//! is held across an await. Human actions on one session are serialized by an async mutex.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use cua_artifact::{ActionKind, Actor, CapabilityRef, RunStatus};
use cua_evidence::{
    EvidenceBus, LeaseTransition as EventTransition, Note, Observe, Redactor, Resolve, RunEnd,
};
use cua_gate::{Gate, Passed, Refusal, Request, Ticket};
use cua_policy::{
    DenialCode, Lease, LeaseOperation, LeaseState, LeaseTransition, PolicyEngine, RawInput,
    ResolvedTarget, SurfaceAction,
};
use cua_replay::{EscalationRequest, EscalationSink, Handback, HandbackFuture};
use cua_snapshot::{NodeId, UiSnapshot};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::error::ConsoleError;
use crate::intervention::{Intervention, InterventionState, load_all, timestamp};
use crate::live::LiveSurface;

/// Milliseconds since the Unix epoch, injected so tests can move time.
pub trait ConsoleClock: Send + Sync {
    fn now_ms(&self) -> u64;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct WallClock;

impl ConsoleClock for WallClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }
}

/// How the broker behaves.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// The evidence root: run directories, and the interventions kept in them.
    pub evidence_root: PathBuf,
    /// How long a claim holds the session without a gesture (each gesture extends it).
    pub hold_for: Duration,
}

/// What a live session is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionMode {
    /// A capability runs on it; a human steps in when it escalates.
    Supervised,
    /// An operator demonstrates a task; gestures are recorded as a discovery trace.
    Recording,
}

/// A live session to register with the broker.
pub struct SessionConfig {
    pub id: String,
    pub mode: SessionMode,
    pub surface: Arc<dyn LiveSurface>,
    /// The policy human actions are decided by (narrowed to the capability, if one runs).
    pub engine: PolicyEngine,
    /// Everything the console shows of this session passes through it (frames included).
    pub redactor: Redactor,
    /// Shared with the executor: what it checks at every dispatch.
    pub lease: Arc<Mutex<Lease>>,
    /// What the console calls this session.
    pub label: String,
}

/// A run on a session: its evidence bus, and what it is for.
#[derive(Clone)]
pub struct RunAttachment {
    pub bus: Arc<EvidenceBus>,
    pub capability: Option<CapabilityRef>,
    pub goal: Option<String>,
}

/// An operator's gesture on the live view, in page CSS pixels.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Gesture {
    Click {
        x: f64,
        y: f64,
    },
    Text {
        text: String,
    },
    Key {
        key: String,
    },
    /// Recording only: read the control at the point into an output, dispatching nothing.
    Extract {
        x: f64,
        y: f64,
        into: String,
    },
}

/// How a demonstration records a step of `kind`: the operator's gesture (or the page's own
/// navigation) that becomes it, or why none does. Exhaustive, so a new kind is decided here
/// before it compiles.
pub fn recorded_as(kind: ActionKind) -> Result<&'static str, &'static str> {
    match kind {
        ActionKind::Click => Ok("a click on the control"),
        ActionKind::Type => Ok("text typed into the focused field"),
        ActionKind::PressKey => Ok("a key pressed"),
        ActionKind::Extract => Ok("an extract gesture on the control"),
        ActionKind::Navigate => Ok("the page's navigation to an allowed address"),
        ActionKind::Select => {
            Err("no gesture chooses an option: clicks and keys on a select are recorded as such")
        }
        ActionKind::Reload | ActionKind::Scroll | ActionKind::WaitFor | ActionKind::Assert => {
            Err("the compiler derives waits and checks; a reviewer declares remedies")
        }
        ActionKind::RawInput => {
            Err("the gesture itself, which the recording turns into a semantic step")
        }
        ActionKind::Http | ActionKind::Command => {
            Err("an operator step names a declared service or program; a reviewer writes it")
        }
        ActionKind::Screenshot | ActionKind::ClickAt => {
            Err("the visual route is explicit and reviewed, never recorded from a gesture")
        }
    }
}

/// What became of a gesture. Every text is redacted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GestureAnswer {
    /// `dispatched`, `needs_confirmation`, `refused`, `failed`, `extracted`.
    pub outcome: &'static str,
    pub message: String,
    /// The control it landed on (`button "Transfer Funds"`), when one was found.
    pub target: Option<String>,
    pub risk: Option<String>,
    pub decision_id: Option<String>,
    pub epoch: u64,
}

/// The answer to a claim.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaimAnswer {
    pub session_id: String,
    pub epoch: u64,
    pub state: &'static str,
    pub hold_expires_at: Option<String>,
}

/// The answer to a release.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReleaseAnswer {
    pub epoch: u64,
    pub state: &'static str,
    pub human_actions: u64,
    pub human_delta: String,
    pub values_changed: Vec<String>,
    /// Whether a waiting run was handed the session back.
    pub resumed_run: bool,
}

/// A session as the console lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionView {
    pub id: String,
    pub label: String,
    pub mode: SessionMode,
    pub state: &'static str,
    pub holder: &'static str,
    pub epoch: u64,
    pub operator: Option<String>,
    /// When the operator's hold runs out (UTC), and how many seconds are left.
    pub hold_expires_at: Option<String>,
    pub hold_seconds_left: Option<u64>,
    pub run_id: Option<String>,
    pub capability: Option<String>,
    pub intervention: Option<String>,
    /// The control a gesture landed on that waits for the operator's explicit confirmation.
    pub pending_confirmation: Option<String>,
    pub human_actions: u64,
}

/// An intervention with what the console adds: whether its session is live.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InterventionCard {
    #[serde(flatten)]
    pub intervention: Intervention,
    pub live: bool,
    /// The run's evidence in the console.
    pub evidence: String,
}

/// Where a finished recording went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordingSummary {
    pub run_id: String,
    pub trace: PathBuf,
    pub steps: u32,
    pub outputs: Vec<String>,
}

/// The broker. Shared as `Arc<Broker>` by the server, the executor's sink and the binary.
pub struct Broker {
    config: BrokerConfig,
    clock: Arc<dyn ConsoleClock>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    sessions: BTreeMap<String, Arc<Session>>,
    interventions: BTreeMap<String, Intervention>,
    /// The hand-back channel of each open supervised intervention.
    senders: BTreeMap<String, oneshot::Sender<Option<Handback>>>,
    receivers: BTreeMap<String, oneshot::Receiver<Option<Handback>>>,
    /// Problems loading persisted interventions, shown in the console.
    load_problems: Vec<String>,
}

/// A live session.
pub struct Session {
    pub id: String,
    pub label: String,
    pub mode: SessionMode,
    surface: Arc<dyn LiveSurface>,
    engine: PolicyEngine,
    redactor: Redactor,
    lease: Arc<Mutex<Lease>>,
    run: Mutex<Option<RunAttachment>>,
    handoff: Mutex<Option<Handoff>>,
    pending: Mutex<Option<Pending>>,
    recording: Mutex<Recording>,
    /// Serializes human actions (and claims, releases) on this session.
    actions: tokio::sync::Mutex<()>,
}

/// The operator's tenure over a session.
struct Handoff {
    intervention: Option<String>,
    operator: String,
    before: Option<UiSnapshot>,
    actions: u64,
}

/// A gesture that waits for the operator's confirmation, and the control it landed on.
#[derive(Clone)]
struct Pending {
    gesture: Gesture,
    node_id: Option<NodeId>,
    described: String,
}

#[derive(Default)]
struct Recording {
    steps: u32,
    effective: u32,
    outputs: BTreeSet<String>,
}

impl Session {
    /// The live surface (for the live view).
    pub fn surface(&self) -> &Arc<dyn LiveSurface> {
        &self.surface
    }

    /// The redactor every view of this session passes through.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The lease as it is now.
    pub fn lease(&self) -> Lease {
        *lock(&self.lease)
    }

    /// The shared lease, for the executor.
    pub fn shared_lease(&self) -> Arc<Mutex<Lease>> {
        Arc::clone(&self.lease)
    }

    /// The run currently attached, if any.
    pub fn run(&self) -> Option<RunAttachment> {
        lock(&self.run).clone()
    }

    fn bus(&self) -> Option<Arc<EvidenceBus>> {
        lock(&self.run).as_ref().map(|run| Arc::clone(&run.bus))
    }

    /// Emits on the attached run's bus, if there is one.
    fn emit(
        &self,
        actor: Actor,
        epoch: u64,
        event: impl Into<cua_evidence::Event>,
    ) -> Result<(), ConsoleError> {
        if let Some(bus) = self.bus() {
            bus.emit(actor, epoch, event)?;
        }
        Ok(())
    }
}

/// The escalation sink of one supervised session: what the executor is wired with.
pub struct SessionSink {
    broker: Arc<Broker>,
    session: String,
}

impl EscalationSink for SessionSink {
    fn escalate(&self, request: &EscalationRequest) -> String {
        self.broker.escalate(&self.session, request)
    }

    fn supervises(&self) -> bool {
        true
    }

    fn handed_back<'a>(&'a self, intervention: &'a str) -> HandbackFuture<'a> {
        let receiver = lock(&self.broker.state).receivers.remove(intervention);
        Box::pin(async move {
            match receiver {
                Some(receiver) => receiver.await.ok().flatten(),
                None => None,
            }
        })
    }
}

impl Broker {
    /// A broker over the evidence root, with every intervention kept there loaded back.
    pub fn new(config: BrokerConfig, clock: Arc<dyn ConsoleClock>) -> Arc<Self> {
        let (loaded, load_problems) = load_all(&config.evidence_root);
        let interventions = loaded
            .into_iter()
            .map(|intervention| (intervention.id.clone(), intervention))
            .collect();
        Arc::new(Self {
            config,
            clock,
            state: Mutex::new(State {
                interventions,
                load_problems,
                ..State::default()
            }),
        })
    }

    /// The evidence root the console serves.
    pub fn evidence_root(&self) -> &Path {
        &self.config.evidence_root
    }

    /// Problems met loading persisted interventions.
    pub fn load_problems(&self) -> Vec<String> {
        lock(&self.state).load_problems.clone()
    }

    /// Registers a live session.
    pub fn open_session(&self, config: SessionConfig) -> Result<Arc<Session>, ConsoleError> {
        let mut state = lock(&self.state);
        if state.sessions.contains_key(&config.id) {
            return Err(ConsoleError::Conflict {
                reason: format!("session `{}` is already open", config.id),
            });
        }
        let session = Arc::new(Session {
            id: config.id.clone(),
            label: config.label,
            mode: config.mode,
            surface: config.surface,
            engine: config.engine,
            redactor: config.redactor,
            lease: config.lease,
            run: Mutex::new(None),
            handoff: Mutex::new(None),
            pending: Mutex::new(None),
            recording: Mutex::new(Recording::default()),
            actions: tokio::sync::Mutex::new(()),
        });
        if config.mode == SessionMode::Recording {
            *lock(&session.handoff) = Some(Handoff {
                intervention: None,
                operator: String::new(),
                before: None,
                actions: 0,
            });
        }
        state.sessions.insert(config.id, Arc::clone(&session));
        Ok(session)
    }

    /// Attaches a run's evidence to a session: lease events and human actions go to its trace.
    pub fn attach_run(&self, session_id: &str, run: RunAttachment) -> Result<(), ConsoleError> {
        let session = self.session(session_id)?;
        *lock(&session.run) = Some(run);
        Ok(())
    }

    /// The escalation sink for a supervised session.
    pub fn sink(self: &Arc<Self>, session_id: &str) -> SessionSink {
        SessionSink {
            broker: Arc::clone(self),
            session: session_id.to_owned(),
        }
    }

    /// A live session by id.
    pub fn session(&self, id: &str) -> Result<Arc<Session>, ConsoleError> {
        lock(&self.state)
            .sessions
            .get(id)
            .cloned()
            .ok_or_else(|| ConsoleError::NotFound {
                what: "session",
                id: id.to_owned(),
            })
    }

    /// Every live session.
    pub fn sessions(&self) -> Vec<SessionView> {
        self.sweep();
        let now = self.clock.now_ms();
        let sessions: Vec<Arc<Session>> = lock(&self.state).sessions.values().cloned().collect();
        sessions
            .iter()
            .map(|session| {
                let lease = session.lease();
                let handoff = lock(&session.handoff);
                let run = lock(&session.run);
                SessionView {
                    id: session.id.clone(),
                    label: session.redactor.redact_text(&session.label),
                    mode: session.mode,
                    state: lease.state.as_str(),
                    holder: lease.holder.as_str(),
                    epoch: lease.epoch,
                    operator: handoff
                        .as_ref()
                        .map(|handoff| handoff.operator.clone())
                        .filter(|operator| !operator.is_empty()),
                    hold_expires_at: lease.hold_expires_at_ms.map(timestamp),
                    hold_seconds_left: lease
                        .hold_expires_at_ms
                        .map(|expires| expires.saturating_sub(now) / 1000),
                    run_id: run.as_ref().map(|run| run.bus.run_id().to_string()),
                    capability: run
                        .as_ref()
                        .and_then(|run| run.capability.as_ref())
                        .map(ToString::to_string),
                    intervention: handoff
                        .as_ref()
                        .and_then(|handoff| handoff.intervention.clone()),
                    pending_confirmation: lock(&session.pending)
                        .as_ref()
                        .map(|pending| pending.described.clone()),
                    human_actions: handoff.as_ref().map_or(0, |handoff| handoff.actions),
                }
            })
            .collect()
    }

    /// Every intervention, claimable ones first (oldest first), then the rest, newest first.
    pub fn interventions(&self) -> Vec<InterventionCard> {
        self.sweep();
        let state = lock(&self.state);
        let mut cards: Vec<InterventionCard> = state
            .interventions
            .values()
            .map(|intervention| InterventionCard {
                live: state.sessions.contains_key(&intervention.session_id),
                evidence: format!("#/runs/{}", intervention.run_id),
                intervention: intervention.clone(),
            })
            .collect();
        cards.sort_by(|a, b| {
            let claimable = |card: &InterventionCard| !card.intervention.state.claimable();
            claimable(a)
                .cmp(&claimable(b))
                .then_with(|| {
                    if a.intervention.state.claimable() {
                        a.intervention.opened_at.cmp(&b.intervention.opened_at)
                    } else {
                        b.intervention.updated_at.cmp(&a.intervention.updated_at)
                    }
                })
                .then_with(|| a.intervention.id.cmp(&b.intervention.id))
        });
        cards
    }

    /// One intervention.
    pub fn intervention(&self, id: &str) -> Result<InterventionCard, ConsoleError> {
        self.interventions()
            .into_iter()
            .find(|card| card.intervention.id == id)
            .ok_or_else(|| ConsoleError::NotFound {
                what: "intervention",
                id: id.to_owned(),
            })
    }

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
                files: Default::default(),
                status: RunStatus::Success,
                failure_code: None,
                reason: None,
                step: None,
                expected: None,
                observed: None,
                outcome: None,
                outcome_data: BTreeMap::new(),
                outputs: BTreeMap::new(),
                effect: None,
                steps_executed: None,
                steps_total: None,
                // The operator ends a demonstration when it has done what it shows, which is
                // what discovery calls reaching its goal (the compiler compiles only those).
                stop_reason: Some("goal_met".to_owned()),
                steps_attempted: Some(recording.steps),
                steps_effective: Some(recording.effective),
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
                SurfaceAction::Navigate {
                    url: url.to_owned(),
                },
                None,
                false,
                &mut note,
            )
            .await?;
        self.after_recorded_action(&session, &answer, note).await?;
        Ok(answer)
    }

    /// The operator's tenure check: the session is in human control, held by this operator,
    /// and the hold has not run out. Recording sessions are held by whoever drives them.
    fn check_holder(&self, session: &Session, operator: &str) -> Result<Lease, ConsoleError> {
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

    /// Resolve → authorize → dispatch → evidence for one human gesture.
    async fn act(
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
                SurfaceAction::RawInput(RawInput::MouseClick { x: *x, y: *y }),
                landing(&snapshot, snapshot.hit_test(*x, *y)),
            ),
            Gesture::Text { text } => (
                SurfaceAction::RawInput(RawInput::Text { text: text.clone() }),
                landing(&snapshot, focused(&snapshot)),
            ),
            Gesture::Key { key } => (
                SurfaceAction::RawInput(RawInput::Key { key: key.clone() }),
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
    async fn chokepoint(
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

    /// Recording: the `agent_action` note of a gesture (what discovery writes for a tool call).
    fn recording_note(
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
    fn extract(
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
    async fn after_recorded_action(
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

    /// Updates an intervention in memory and on disk.
    fn store(&self, state: &mut State, intervention: Intervention) {
        if let Err(error) = intervention.persist(&self.config.evidence_root) {
            tracing::error!(%error, intervention = %intervention.id, "an intervention was not persisted");
        }
        state
            .interventions
            .insert(intervention.id.clone(), intervention);
    }
}

/// Emits a lease transition as a `lease` event on the session's run, by the actor it concerns.
fn emit_transition(
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

/// Writes a snapshot to the session's run (redacted by the bus) with its `observe` event.
fn record_snapshot(
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

/// The roles a gesture acts on; a hit on text inside one of them is classified by it.
const ACTIONABLE_ROLES: [&str; 14] = [
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
fn landing(snapshot: &UiSnapshot, hit: Option<usize>) -> Option<(usize, ResolvedTarget)> {
    let hit = hit?;
    let index = std::iter::once(hit)
        .chain(snapshot.ancestors(hit))
        .find(|&index| ACTIONABLE_ROLES.contains(&snapshot.nodes[index].role.as_str()))
        .unwrap_or(hit);
    Some((index, target_of(snapshot, index)))
}

fn target_of(snapshot: &UiSnapshot, index: usize) -> ResolvedTarget {
    let node = &snapshot.nodes[index];
    ResolvedTarget {
        node_id: node.id.clone(),
        role: node.role.clone(),
        name: node.name.clone(),
    }
}

/// The focused node, the deepest one if several report focus.
fn focused(snapshot: &UiSnapshot) -> Option<usize> {
    snapshot
        .nodes
        .iter()
        .rposition(|node| node.states.iter().any(|state| state == "focused"))
}

/// `button "Transfer Funds"`.
fn describe(target: &ResolvedTarget) -> String {
    if target.name.is_empty() {
        target.role.clone()
    } else {
        format!("{} {:?}", target.role, target.name)
    }
}

fn gesture_name(gesture: &Gesture) -> String {
    match gesture {
        Gesture::Click { x, y } => format!("raw click at ({x:.0}, {y:.0})"),
        Gesture::Text { text } => format!("raw text ({} chars)", text.chars().count()),
        Gesture::Key { key } => format!("raw key {key}"),
        Gesture::Extract { x, y, .. } => format!("read at ({x:.0}, {y:.0})"),
    }
}

/// Whether a control's name says it takes a secret.
fn looks_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["password", "passcode", "pin", "secret", "token"]
        .iter()
        .any(|word| name.contains(word))
}

/// `recorded.password` for a control named "Password".
fn secret_name(name: &str) -> String {
    let slug: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("recorded.{}", slug.trim_matches('_'))
}

fn next_step(session: &Session) -> u32 {
    let mut recording = lock(&session.recording);
    recording.steps += 1;
    recording.steps
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Locks a mutex, recovering the data if a holder panicked (the broker's data stay valid
/// between statements).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
