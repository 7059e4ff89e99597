//! The visual operators, only ever on an explicit `via: visual` route: `screenshot` issues a
//! 256-bit observation ref bound to the visual provider, the page it was taken on, this run and
//! the image's bounds; `click_at` claims that ref (once, within 30 seconds) and turns its pixel
//! point into a viewport point. Every check of the claim happens before the policy is asked,
//! and a rejected claim dispatches nothing.

use cua_artifact::{ActionKind, EffectVerdict, FailureCode, Step, StepId};
use cua_policy::{BrowserAction, SurfaceAction};
use cua_route::{
    AttemptOutcome, CoordinateClaim, DispatchReceipt, Millis, ObservationBinding, ObservationScope,
    PixelPoint, ProviderKind, RecoveryEdge, RouteError, TargetScope,
};
use cua_snapshot::UiSnapshot;
use cua_surface::{ScreenshotRequest, SurfaceDriver};
use serde_json::Value;

use crate::executor::{Execution, Replayer, RunState, millis};
use crate::route::RouteWalk;
use crate::step::{Declared, StepRecordInput};
use crate::stop::{Halt, Position, Stop};

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// `screenshot`: capture the viewport (sensitive regions painted over), keep the image as
    /// evidence, and issue the observation ref a later `click_at` claims. The capture walks its
    /// route: a capture that timed out is taken once more, as the visual route permits for a
    /// read; nothing else is retried.
    pub(crate) async fn screenshot_step(
        &self,
        frame: &mut Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        step: &Step,
        before: &UiSnapshot,
    ) -> Result<(), Halt> {
        let plan = &frame.routes[position.index as usize];
        let mut walk = RouteWalk::start(plan);
        // A capture is a read, but the policy and the lease decide it like any action.
        if let Err(failure) = self.authorize_action(
            frame,
            tally,
            Some(&position.id),
            SurfaceAction::Screenshot,
            None,
            Declared {
                risk: Some(step.risk),
                mutates: false,
            },
        ) {
            let input = capture_record(step.risk, "refused before capture", walk);
            self.record_step(frame, tally, position, input)?;
            return Err(failure.into_halt());
        }
        walk.take(RecoveryEdge::Open);
        // The ref's lifetime runs from the moment the pixels are asked for.
        let captured_at = self.now();
        let redact_regions = self.sensitive_regions(tally);
        let shot = loop {
            let request = ScreenshotRequest {
                redact_regions: redact_regions.clone(),
            };
            let error = match self.driver.screenshot(request).await {
                Ok(shot) => break shot,
                Err(error) => error,
            };
            walk.settle(AttemptOutcome::Failed(cua_route::ProviderFailure {
                phase: cua_route::DispatchPhase::Dispatched,
                retryable: matches!(error, cua_surface::SurfaceError::Timeout { .. }),
                reason: error.to_string(),
            }));
            if !walk.take(RecoveryEdge::Retry) {
                let input = capture_record(step.risk, "no observation was issued", walk);
                self.record_step(frame, tally, position, input)?;
                return Err(Stop::surface(
                    &error,
                    &format!("step `{}` taking a screenshot", position.id),
                )
                .into());
            }
        };
        let issued = self.issue_observation(tally, position, before, &shot, captured_at);
        let (reference, written) = match issued {
            Ok(issued) => issued,
            Err(stop) => {
                let input = capture_record(step.risk, "no observation was issued", walk);
                self.record_step(frame, tally, position, input)?;
                return Err(stop.into());
            }
        };
        walk.settle(AttemptOutcome::Receipt(DispatchReceipt {
            provider: plan.selection().provider(),
            physical_action: plan.selection().physical_action().clone(),
        }));
        self.note(
            "visual observation issued",
            [
                ("step", Value::from(position.id.to_string())),
                // The ref is a bearer capability: the evidence names it by its prefix only.
                ("observation", Value::from(format!("{reference:?}"))),
                ("screenshot_ref", Value::from(written.path)),
                ("screenshot_digest", Value::from(written.digest)),
                (
                    "pixels",
                    Value::from(format!("{}x{}", shot.width, shot.height)),
                ),
                (
                    "viewport",
                    Value::from(format!("{}x{}", shot.viewport_width, shot.viewport_height)),
                ),
                ("valid_ms", Value::from(cua_route::OBSERVATION_TTL_MILLIS)),
            ],
        )?;
        frame.observations.insert(position.id.clone(), reference);
        let input = capture_record(
            step.risk,
            "a screenshot: an observation, not an action",
            walk,
        );
        self.record_step(frame, tally, position, input)?;
        Ok(())
    }

    /// Keeps the image as evidence and issues its observation ref. A screenshot that cannot be
    /// kept (it would carry a secret) confers no authority.
    fn issue_observation(
        &self,
        tally: &mut RunState,
        position: &Position,
        before: &UiSnapshot,
        shot: &cua_surface::Screenshot,
        captured_at: Millis,
    ) -> Result<(cua_route::ObservationRef, cua_evidence::ArtifactRef), Stop> {
        let written = self
            .bus
            .write_screenshot(&format!("{}-observation", position.id), &shot.bytes)
            .map_err(|error| {
                Stop::new(
                    FailureCode::PolicyDenied,
                    format!(
                        "step `{}`: the screenshot cannot be kept as evidence ({error}), so it \
                         confers no coordinate authority",
                        position.id
                    ),
                )
            })?;
        let binding = ObservationBinding::new(
            ProviderKind::Visual,
            screen_scope(before, tally),
            self.bus.run_id().to_string(),
            (shot.width, shot.height),
            (shot.viewport_width, shot.viewport_height),
        )
        .map_err(|error| {
            Stop::new(
                FailureCode::ActionFailed,
                format!("step `{}`: {error}", position.id),
            )
        })?;
        let mut random = [0u8; 32];
        self.config.entropy.fill(&mut random).map_err(|error| {
            Stop::new(
                FailureCode::Internal,
                format!(
                    "step `{}`: no random bytes for an observation ref: {error}",
                    position.id
                ),
            )
        })?;
        let reference = tally
            .observations
            .issue(random, captured_at, binding)
            .map_err(|error| {
                Stop::new(
                    FailureCode::Internal,
                    format!("step `{}`: {error}", position.id),
                )
            })?;
        Ok((reference, written))
    }

    /// `click_at`: claims the ref for the step's planned provider, this screen, this run and the
    /// point, and returns the viewport click the policy is asked to authorize. The ref is spent by the attempt,
    /// whether or not the claim succeeds.
    pub(crate) fn claim_point(
        &self,
        frame: &Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        observation: &StepId,
        (x, y): (u32, u32),
        before: &UiSnapshot,
    ) -> Result<SurfaceAction, Stop> {
        let now = self.now();
        let session = self.bus.run_id().to_string();
        // The ledger, not this map, decides single use: a claimed ref is gone from it.
        let reference = frame.observations.get(observation).cloned();
        let rejected = |why: String| {
            Stop::new(
                FailureCode::PolicyDenied,
                format!(
                    "step `{}`: the observation of step `{observation}` confers no authority \
                     for ({x}, {y}): {why}; nothing was clicked",
                    position.id
                ),
            )
            .expected(format!(
                "a screenshot from step `{observation}` of this page, in this run, under {} s \
                 old, never claimed before, containing the point",
                cua_route::OBSERVATION_TTL_MILLIS / 1000
            ))
        };
        let Some(reference) = reference else {
            return Err(rejected(
                "that step issued no observation in this frame of the run".to_owned(),
            ));
        };
        // The step's route was planned before the run's first action; the claim checks that
        // the ref was issued by that provider, for this screen and this run.
        let provider = frame.routes[position.index as usize].selection().provider();
        let claim = CoordinateClaim {
            provider,
            scope: screen_scope(before, tally),
            session,
            point: PixelPoint { x, y },
        };
        let claimed =
            tally
                .observations
                .claim(&reference, &claim, now)
                .map_err(|error| match error {
                    RouteError::ObservationRejected(rejection) => {
                        rejected(rejection_reason(rejection).to_owned())
                    }
                    other => rejected(other.to_string()),
                })?;
        Ok(SurfaceAction::Browser(BrowserAction::PointClick {
            x: claimed.action_point.x,
            y: claimed.action_point.y,
        }))
    }

    /// The run clock as the observation ledger reads it.
    fn now(&self) -> Millis {
        Millis(millis(self.clock.elapsed()))
    }
}

/// The screen an observation is bound to: the page (see [`page_scope`]), the exact observation
/// the step was judged on, how many actions the run has dispatched and under which lease
/// epoch. Anything dispatched after the screenshot (a scroll, a remedy), any change the next
/// observation shows, and a hand-back to a human and back, all void the observation.
fn screen_scope(snapshot: &UiSnapshot, tally: &RunState) -> ObservationScope {
    let mut scope = page_scope(snapshot);
    scope.target.push_str(&format!(
        " | {} | after {} dispatches at epoch {}",
        snapshot.digest(),
        tally.dispatches,
        tally.epoch
    ));
    scope
}

/// The page an observation is bound to: the top-level document's URL and the title of every
/// document in it, frames included. A click after a navigation (of the page or of one of its
/// frames) finds another page and is refused.
fn page_scope(snapshot: &UiSnapshot) -> ObservationScope {
    let mut target = snapshot.url.clone();
    for document in snapshot.nodes.iter().filter(|node| node.role == "document") {
        let frame = document.scope.frame.as_deref().unwrap_or("top");
        target.push_str(&format!(" | {frame}: {}", document.name));
    }
    ObservationScope {
        target_scope: TargetScope::BrowserRenderer,
        target,
    }
}

fn rejection_reason(rejection: cua_route::ObservationRejection) -> &'static str {
    use cua_route::ObservationRejection as R;
    match rejection {
        R::NotFound => "the observation ref is unknown or was already claimed",
        R::Expired => "the observation is older than its 30-second lifetime",
        R::ProviderMismatch => "the observation was issued by another provider",
        R::ScopeMismatch => "the screen changed, or something was dispatched, since the screenshot",
        R::SessionMismatch => "the observation belongs to another run",
        R::OutOfBounds => "the point lies outside the screenshot",
    }
}

fn capture_record(risk: cua_artifact::RiskTier, reason: &str, walk: RouteWalk) -> StepRecordInput {
    StepRecordInput {
        kind: ActionKind::Screenshot,
        resolution: None,
        decision_id: None,
        dispatched: false,
        verdict: EffectVerdict::NotApplicable,
        reason: reason.to_owned(),
        risk,
        route: Some(walk.finish()),
    }
}

#[cfg(test)]
mod tests {
    use cua_snapshot::{NodeId, NodeScope, UiNode};

    use super::*;

    fn page(url: &str, documents: &[(Option<&str>, &str)]) -> UiSnapshot {
        UiSnapshot {
            url: url.to_owned(),
            title: String::new(),
            http_status: None,
            nodes: documents
                .iter()
                .enumerate()
                .map(|(index, (frame, title))| UiNode {
                    id: NodeId::new(format!("main:/document[{index}]")),
                    role: "document".to_owned(),
                    name: (*title).to_owned(),
                    value: None,
                    states: Vec::new(),
                    bounds: None,
                    scope: NodeScope {
                        frame: frame.map(str::to_owned),
                        region: None,
                    },
                    depth: u32::from(frame.is_some()),
                    parent: None,
                    children: Vec::new(),
                    css_hint: None,
                    labels: Vec::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_frame_that_navigated_is_another_page() {
        let search = page(
            "http://desk/",
            &[(None, "MemberDesk"), (Some("content"), "Member Search")],
        );
        let detail = page(
            "http://desk/",
            &[(None, "MemberDesk"), (Some("content"), "Member Details")],
        );
        assert_eq!(page_scope(&search), page_scope(&search.clone()));
        assert_ne!(page_scope(&search), page_scope(&detail));
        assert_ne!(
            page_scope(&page("http://desk/a", &[])),
            page_scope(&page("http://desk/b", &[]))
        );
    }
}
