//! Observing and recording: snapshots into the evidence, blocked requests, the allowlist at a
//! navigation's landing, and each step's record.

use cua_artifact::{ActionKind, Actor, EffectVerdict, FailureCode, ObservationClass, RiskTier};
use cua_evidence::{BlockedRequest, Effect, Observe};
use cua_snapshot::UiSnapshot;
use cua_surface::SurfaceDriver;
use serde_json::Value;

use crate::executor::{Execution, Replayer, RunState};
use crate::report::{StepReport, StepResolution};
use crate::stop::{Halt, Position, Stop};

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// Observes the surface and records the snapshot.
    pub(crate) async fn observe(
        &self,
        tally: &mut RunState,
        label: &str,
    ) -> Result<UiSnapshot, Halt> {
        let snapshot = self
            .driver
            .observe()
            .await
            .map_err(|error| Stop::surface(&error, "observing the surface"))?;
        self.record(tally, label, &snapshot)?;
        Ok(snapshot)
    }

    /// Writes a snapshot (redacted) and its `observe` event, and reports blocked requests.
    pub(crate) fn record(
        &self,
        tally: &mut RunState,
        label: &str,
        snapshot: &UiSnapshot,
    ) -> Result<(), cua_evidence::EvidenceError> {
        let written = self.bus.write_snapshot(label, snapshot)?;
        self.bus.emit(
            Actor::System,
            0,
            Observe {
                url: snapshot.url.clone(),
                title: snapshot.title.clone(),
                node_count: u64::try_from(snapshot.nodes.len()).unwrap_or(u64::MAX),
                http_status: snapshot.http_status,
                snapshot_ref: Some(written.path.clone()),
                snapshot_digest: Some(written.digest),
            },
        )?;
        tally.last_snapshot_ref = Some(written.path);
        tally.last_snapshot = Some(snapshot.clone());
        self.drain_blocked()
    }

    /// Requests the surface refused (off the allowlist) go to the evidence.
    pub(crate) fn drain_blocked(&self) -> Result<(), cua_evidence::EvidenceError> {
        for blocked in self.driver.take_blocked_requests() {
            let event = BlockedRequest::refused(blocked.url, blocked.reason, blocked.resource_type);
            self.bus.emit(Actor::System, 0, event)?;
        }
        Ok(())
    }

    /// Where a navigation landed must be on the allowlist too: the action was permitted, its
    /// destination may not be.
    pub(crate) fn check_landing(
        &self,
        frame: &Execution<'_>,
        snapshot: &UiSnapshot,
        what: &str,
    ) -> Result<(), Stop> {
        frame.engine.check_landing(&snapshot.url).map_err(|blocked| {
            let _ = self.note(
                "navigation left the allowlist",
                [("reason", Value::from(blocked.reason.clone()))],
            );
            Stop::new(
                FailureCode::NavigationBlocked,
                format!(
                    "{what} landed on {}, outside the allowlist ({}); the action was permitted, its destination was not",
                    blocked.url, blocked.reason
                ),
            )
        })
    }

    /// Records a step's report and its `effect` event.
    pub(crate) fn record_step(
        &self,
        frame: &Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        input: StepRecordInput,
    ) -> Result<(), cua_evidence::EvidenceError> {
        // A step whose operator walked its own route brings its trace; any other step's walk is
        // the one its dispatch and settled verdict stand for.
        let route = input.route.or_else(|| {
            frame
                .routes
                .get(position.index as usize)
                .filter(|_| !position.checkpoint)
                .map(|plan| {
                    crate::route::settled_walk(plan, input.dispatched, input.verdict, &input.reason)
                })
        });
        // Taken whatever the step's end: a screenshot left over never names another step.
        let shot = tally.step_screenshot.take().filter(|_| input.dispatched);
        self.bus.emit(
            Actor::Automation,
            tally.epoch,
            Effect {
                step: position.id.clone(),
                verdict: input.verdict,
                reason: input.reason.clone(),
                decision_id: input.decision_id.clone(),
                route: route.clone(),
                undispatched: (!input.dispatched).then_some(input.kind),
                screenshot_ref: shot.as_ref().map(|shot| shot.path.clone()),
                screenshot_digest: shot.as_ref().map(|shot| shot.digest.clone()),
            },
        )?;
        tally.steps.push(StepReport {
            capability: frame.remedy.then(|| frame.reference.clone()),
            step: position.id.to_string(),
            index: position.index,
            action: input.kind,
            actor: Actor::Automation,
            observation: ObservationClass::Expected,
            resolution: input.resolution,
            dispatched: input.dispatched,
            decision_id: input.decision_id,
            verdict: input.verdict,
            verdict_reason: input.reason,
            risk: input.risk,
            route,
        });
        Ok(())
    }
}

pub(crate) struct StepRecordInput {
    pub(crate) kind: ActionKind,
    pub(crate) resolution: Option<StepResolution>,
    pub(crate) decision_id: Option<String>,
    pub(crate) dispatched: bool,
    pub(crate) verdict: EffectVerdict,
    pub(crate) reason: String,
    pub(crate) risk: RiskTier,
    /// The route trace of an operator that walked its route itself.
    pub(crate) route: Option<cua_artifact::RouteTrace>,
}

impl StepRecordInput {
    /// A step that only reads: nothing to verify.
    pub(super) fn read(kind: ActionKind, reason: &str) -> Self {
        Self {
            kind,
            resolution: None,
            decision_id: None,
            dispatched: false,
            verdict: EffectVerdict::NotApplicable,
            reason: reason.to_owned(),
            risk: RiskTier::Safe,
            route: None,
        }
    }
}
