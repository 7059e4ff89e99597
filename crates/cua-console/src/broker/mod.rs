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

mod gesture;
mod lease;
mod recording;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use cua_artifact::{ActionKind, Actor, CapabilityRef};
use cua_evidence::{EvidenceBus, Redactor};
use cua_policy::{Lease, PolicyEngine};
use cua_replay::{EscalationRequest, EscalationSink, Handback, HandbackFuture};
use cua_snapshot::{NodeId, UiSnapshot};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::error::ConsoleError;
use crate::intervention::{Intervention, load_all, timestamp};
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

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Locks a mutex, recovering the data if a holder panicked (the broker's data stay valid
/// between statements).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
