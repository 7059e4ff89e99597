//! Stage 13, the human handoff: an armed undeclared screen escalates a supervised replay to
//! `needs_human`; an operator, scripted through the console's broker on the very browser the
//! replays drive, claims the intervention, clicks through the dialog with a gesture (hit-tested,
//! authorized as `human`, dispatched), and hands back; the run re-anchors and finishes under
//! the new epoch. Every figure of the line is read back from the run's trace.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cua_artifact::{Actor, RunStatus};
use cua_chromium::ChromiumSurface;
use cua_console::{
    Broker, BrokerConfig, Gesture, InterventionState, RunAttachment, SessionConfig, SessionMode,
    WallClock,
};
use cua_evidence::{Event, LeaseTransition, TraceLine};
use cua_policy::Lease;
use cua_snapshot::UiSnapshot;
use cua_surface::SurfaceDriver;
use memberdesk::{Fault, FaultCount};

use super::StageFuture;
use super::rig::{Demo, StageFailure, Supervision, expect, failed, outputs_line};
use super::stages::{expect_answer, member_request, reviewed};
use crate::commands::console::ChromiumLive;

/// The supervised session's id in the broker, and the operator who takes it over.
const SESSION: &str = "demo-live";
const OPERATOR: &str = "demo-operator";
const RUN_ID: &str = "s13-human-handoff";
/// The member the supervised run looks up.
const MEMBER: &str = "12345";
/// How long the operator waits for something to appear (the intervention, the next screen).
const PATIENCE: Duration = Duration::from_secs(20);
/// How long a claim holds the session without a gesture.
const HOLD: Duration = Duration::from_secs(60);

/// Stage 13: escalate → operator claims and drives the live session → hand back → re-anchored
/// → success under the new epoch.
pub(super) fn human_handoff(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let demo: &Demo = demo;
        let reviewed = reviewed(demo)?;
        let (fixture, surface) = demo.first_valley_live()?;
        let base_url = fixture.base_url();
        let request = member_request(reviewed, &base_url, MEMBER)?;
        let engine = demo
            .policy
            .engine
            .for_capability(&request.capability.capability)
            .map_err(|error| failed(format!("the capability's policy: {error}")))?;
        let bus = Arc::new(demo.evidence_bus(RUN_ID)?);
        let broker = Broker::new(
            BrokerConfig {
                evidence_root: demo.runs_dir(),
                hold_for: HOLD,
            },
            Arc::new(WallClock),
        );
        let lease = Arc::new(Mutex::new(Lease::new(Actor::Automation)));
        broker
            .open_session(SessionConfig {
                id: SESSION.to_owned(),
                mode: SessionMode::Supervised,
                surface: Arc::new(ChromiumLive(Arc::clone(&surface))),
                engine,
                redactor: bus.redactor().clone(),
                lease: Arc::clone(&lease),
                label: reviewed.reference().to_string(),
            })
            .map_err(|error| failed(format!("opening the supervised session: {error}")))?;
        broker
            .attach_run(
                SESSION,
                RunAttachment {
                    bus: Arc::clone(&bus),
                    capability: Some(reviewed.reference()),
                    goal: Some(reviewed.title.clone()),
                },
            )
            .map_err(|error| failed(format!("attaching the run: {error}")))?;
        let sink = broker.sink(SESSION);

        fixture
            .handle()
            .arm(Fault::UndeclaredDialog, FaultCount::Times(1));
        let finished = AtomicBool::new(false);
        let run = async {
            let report = demo
                .replay_on(
                    Supervision {
                        surface: &surface,
                        bus: &bus,
                        escalations: &sink,
                        lease: Arc::clone(&lease),
                    },
                    &base_url,
                    RUN_ID,
                    request,
                )
                .await;
            finished.store(true, Ordering::SeqCst);
            report
        };
        let (report, operated) = tokio::join!(run, operate(&broker, &surface, &finished));
        fixture.handle().disarm(Fault::UndeclaredDialog);
        let report = report?;
        let operated = operated?;

        expect_answer(fixture.handle(), MEMBER, &report)?;
        let card = broker
            .intervention(&operated.intervention)
            .map_err(|error| failed(error.to_string()))?;
        expect(
            card.intervention.state == InterventionState::Resolved,
            || {
                format!(
                    "intervention {} is {} after the hand-back",
                    operated.intervention,
                    card.intervention.state.as_str()
                )
            },
        )?;
        let trace = cua_evidence::read_trace(&report.evidence_dir)
            .map_err(|error| failed(format!("reading the handoff trace: {error}")))?;
        let read = TraceFacts::read(&trace);
        let expected = [
            (LeaseTransition::Escalated, 2),
            (LeaseTransition::Claimed, 3),
            (LeaseTransition::Released, 4),
            (LeaseTransition::Resumed, 5),
        ];
        let transitions: Vec<(LeaseTransition, u64)> = read
            .leases
            .iter()
            .map(|(transition, _, epoch)| (*transition, *epoch))
            .collect();
        expect(transitions == expected, || {
            format!("the trace's lease events are {transitions:?}, not escalated 2 → resumed 5")
        })?;
        let human_dispatches: Vec<u64> = read
            .dispatches
            .iter()
            .filter(|(actor, _)| *actor == Actor::Human)
            .map(|(_, epoch)| *epoch)
            .collect();
        let automation_epochs: Vec<u64> = read
            .dispatches
            .iter()
            .filter(|(actor, _)| *actor == Actor::Automation)
            .map(|(_, epoch)| *epoch)
            .collect();
        expect(
            human_dispatches == [3]
                && automation_epochs.first() == Some(&1)
                && automation_epochs.last() == Some(&5),
            || {
                format!(
                    "dispatches by human at epochs {human_dispatches:?}, by automation at {automation_epochs:?}"
                )
            },
        )?;
        expect(
            read.end_epoch == Some(5) && read.end_status == Some(RunStatus::Success),
            || {
                format!(
                    "the run ended {:?} at epoch {:?}",
                    read.end_status, read.end_epoch
                )
            },
        )?;
        let reanchored = match &read.reanchor {
            Some((Some(index), skipped)) => format!(
                "re-anchored on the live screen: resumed at step {}{}",
                usize::try_from(*index)
                    .ok()
                    .and_then(|index| reviewed.steps.get(index))
                    .map_or_else(|| format!("#{index}"), |step| step.id.to_string()),
                if skipped.is_empty() {
                    " (none visibly done, none skipped)".to_owned()
                } else {
                    format!(" (skipped as done: {})", skipped.join(", "))
                }
            ),
            Some((None, _)) => {
                return Err(failed("re-anchoring found no step to resume at"));
            }
            None => return Err(failed("the trace has no re-anchor note")),
        };
        let epochs = std::iter::once(1)
            .chain(read.leases.iter().map(|(_, _, epoch)| *epoch))
            .map(|epoch| epoch.to_string())
            .collect::<Vec<_>>()
            .join("→");
        let transitions = read
            .leases
            .iter()
            .map(|(transition, actor, _)| format!("{} by {}", transition.as_str(), actor.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        let dispatches_by = |actor: Actor, epochs: &[u64]| {
            format!(
                "{} ×{} at epoch {}",
                actor.as_str(),
                epochs.len(),
                dedup(epochs)
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        };
        Ok(format!(
            "undeclared_dialog armed: {} {} at {}, intervention {}; {OPERATOR} claimed it (epoch {}), clicked {} on the live session ({}), handed back (epoch {}); {}; SUCCESS {} under epoch {}; trace: epochs {epochs} ({transitions}), dispatches by {} and {}",
            operated.escalated_status,
            operated.failure_code,
            operated.stopped_at,
            operated.intervention,
            operated.claimed_epoch,
            operated.clicked,
            operated.gesture_outcome,
            operated.released_epoch,
            reanchored,
            outputs_line(reviewed, &report),
            read.end_epoch.unwrap_or(0),
            dispatches_by(Actor::Automation, &automation_epochs),
            dispatches_by(Actor::Human, &human_dispatches),
        ))
    })
}

/// What the scripted operator did.
struct Operated {
    intervention: String,
    escalated_status: &'static str,
    failure_code: String,
    stopped_at: String,
    claimed_epoch: u64,
    clicked: String,
    gesture_outcome: &'static str,
    released_epoch: u64,
}

/// The operator: waits for the intervention, claims it, clicks through the dialog on the live
/// view, waits for the screen behind it, and hands back. On any failure after the escalation
/// the paused run is given up, so it ends as `needs_human` instead of waiting forever.
async fn operate(
    broker: &Arc<Broker>,
    surface: &ChromiumSurface,
    run_finished: &AtomicBool,
) -> Result<Operated, StageFailure> {
    let started = Instant::now();
    let card = loop {
        let open = broker.interventions().into_iter().find(|card| {
            card.intervention.session_id == SESSION
                && card.intervention.state == InterventionState::Open
        });
        if let Some(card) = open {
            break card;
        }
        if run_finished.load(Ordering::SeqCst) {
            return Err(failed(
                "the supervised run ended without escalating to the console",
            ));
        }
        if started.elapsed() > PATIENCE {
            return Err(failed(format!(
                "no intervention was opened within {} s",
                PATIENCE.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let intervention = card.intervention.id.clone();
    let outcome = drive(broker, surface, &card.intervention).await;
    if outcome.is_err() {
        let _ = broker.give_up(&intervention);
    }
    outcome
}

/// Claim, click through, hand back.
async fn drive(
    broker: &Arc<Broker>,
    surface: &ChromiumSurface,
    intervention: &cua_console::Intervention,
) -> Result<Operated, StageFailure> {
    let id = &intervention.id;
    let claimed = broker
        .claim(id, OPERATOR, Some(intervention.epoch))
        .await
        .map_err(|error| failed(format!("claiming {id}: {error}")))?;
    let screen = observe(surface).await?;
    let (label, (x, y)) = ["Continue", "OK", "Close", "Dismiss"]
        .iter()
        .find_map(|name| {
            screen
                .nodes
                .iter()
                .find(|node| {
                    matches!(node.role.as_str(), "link" | "button")
                        && node.name == *name
                        && node.bounds.is_some()
                })
                .and_then(|node| {
                    node.bounds.map(|bounds| {
                        (
                            format!("{} {:?}", node.role, node.name),
                            (
                                bounds.x + bounds.width / 2.0,
                                bounds.y + bounds.height / 2.0,
                            ),
                        )
                    })
                })
        })
        .ok_or_else(|| {
            failed(format!(
                "the escalated screen ({}) offers no way through the dialog",
                screen.url
            ))
        })?;
    let answer = broker
        .gesture(SESSION, OPERATOR, Gesture::Click { x, y })
        .await
        .map_err(|error| failed(format!("the operator's click: {error}")))?;
    expect(answer.outcome == "dispatched", || {
        format!(
            "the operator's click on {label} was {}: {}",
            answer.outcome, answer.message
        )
    })?;
    // The screen behind the dialog: the member search form.
    let started = Instant::now();
    loop {
        let screen = observe(surface).await?;
        let form = screen.nodes.iter().any(|node| {
            node.role == "textbox" && node.name == "Member Number" && node.bounds.is_some()
        });
        if form {
            break;
        }
        if started.elapsed() > PATIENCE {
            return Err(failed(format!(
                "after the click the session shows {} and no member search form",
                screen.url
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let released = broker
        .release(SESSION, OPERATOR)
        .await
        .map_err(|error| failed(format!("handing back: {error}")))?;
    expect(released.resumed_run, || {
        "the hand-back found no run waiting to resume".to_owned()
    })?;
    Ok(Operated {
        intervention: id.clone(),
        escalated_status: RunStatus::NeedsHuman.as_str(),
        failure_code: intervention.failure_code.clone(),
        stopped_at: intervention.stopped_at.clone().map_or_else(
            || "the checkpoint".to_owned(),
            |step| format!("step {step}"),
        ),
        claimed_epoch: claimed.epoch,
        clicked: answer.target.unwrap_or(label),
        gesture_outcome: answer.outcome,
        released_epoch: released.epoch,
    })
}

/// What the handoff run's trace says.
struct TraceFacts {
    /// Lease transitions, by whom, at which epoch.
    leases: Vec<(LeaseTransition, Actor, u64)>,
    /// Dispatches that reached the surface: by whom, at which epoch.
    dispatches: Vec<(Actor, u64)>,
    /// The re-anchor note: the step index it resumed at, and the steps it skipped as done.
    reanchor: Option<(Option<u64>, Vec<String>)>,
    end_status: Option<RunStatus>,
    end_epoch: Option<u64>,
}

impl TraceFacts {
    fn read(trace: &[TraceLine]) -> Self {
        let mut facts = Self {
            leases: Vec::new(),
            dispatches: Vec::new(),
            reanchor: None,
            end_status: None,
            end_epoch: None,
        };
        for line in trace {
            match &line.event {
                Event::Lease(lease) => {
                    facts
                        .leases
                        .push((lease.transition, line.actor, line.lease_epoch));
                }
                Event::Dispatch(dispatch) if !dispatch.refused => {
                    facts.dispatches.push((line.actor, line.lease_epoch));
                }
                Event::Note(note) if note.note == "re-anchor after handoff" => {
                    let skipped = note
                        .data
                        .get("skipped")
                        .and_then(|skipped| skipped.as_array())
                        .map(|skipped| {
                            skipped
                                .iter()
                                .filter_map(|step| step.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default();
                    let index = note
                        .data
                        .get("resume_index")
                        .and_then(serde_json::Value::as_u64);
                    facts.reanchor = Some((index, skipped));
                }
                Event::RunEnd(end) => {
                    facts.end_status = Some(end.status);
                    facts.end_epoch = Some(line.lease_epoch);
                }
                _ => {}
            }
        }
        facts
    }
}

async fn observe(surface: &ChromiumSurface) -> Result<UiSnapshot, StageFailure> {
    surface
        .observe()
        .await
        .map_err(|error| failed(format!("observing the live session: {error}")))
}

/// The distinct values, in order of first appearance.
fn dedup(values: &[u64]) -> Vec<u64> {
    let mut seen = Vec::new();
    for value in values {
        if !seen.contains(value) {
            seen.push(*value);
        }
    }
    seen
}
