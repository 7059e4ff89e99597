//! The steps that only read: an assertion, a wait for a condition, and an extraction into an
//! output.

use cua_artifact::{ActionKind, FailureCode, Predicate, TargetDescriptor};
use cua_snapshot::UiSnapshot;
use cua_surface::SurfaceDriver;

use crate::executor::{Execution, Replayer, RunState};
use crate::stop::{Halt, Position, Stop};
use crate::transform;

use super::explain;
use super::record::StepRecordInput;

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// `assert`: evaluated on the snapshot, never dispatched.
    pub(super) fn assert_step(
        &self,
        frame: &Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        that: &Predicate,
        snapshot: &UiSnapshot,
    ) -> Result<(), Halt> {
        let explanation = explain(that, snapshot, &frame.values, "an assertion")?;
        self.record_step(
            frame,
            tally,
            position,
            StepRecordInput::read(ActionKind::Assert, "an assertion reads the screen"),
        )?;
        if explanation.holds {
            Ok(())
        } else {
            Err(Stop::new(
                FailureCode::PreconditionFailed,
                format!(
                    "the assertion of step `{}` does not hold: {}",
                    position.id, explanation.text
                ),
            )
            .observed(explanation.text)
            .into())
        }
    }

    /// `wait_for`: polled on the surface, bounded; a timeout is a result.
    pub(super) async fn wait_for_step(
        &self,
        frame: &Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        until: &Predicate,
        timeout_ms: u32,
        before: &UiSnapshot,
    ) -> Result<(), Halt> {
        let (satisfied, snapshot) = self
            .wait_predicate(frame, tally, Some(&position.id), until, timeout_ms, before)
            .await?;
        self.record(tally, &format!("{}-after", position.id), &snapshot)?;
        if satisfied {
            tally.fresh = Some(snapshot.clone());
        }
        self.record_step(
            frame,
            tally,
            position,
            StepRecordInput::read(ActionKind::WaitFor, "a wait reads the screen"),
        )?;
        if satisfied {
            Ok(())
        } else {
            let explanation = explain(until, &snapshot, &frame.values, "a wait")?;
            Err(Stop::new(
                FailureCode::Timeout,
                format!(
                    "step `{}` waited {timeout_ms} ms and its condition never held: {}",
                    position.id, explanation.text
                ),
            )
            .observed(explanation.text)
            .into())
        }
    }

    /// `extract`: resolves the node on the snapshot and reads its value (or its name); never
    /// authorized or dispatched, since nothing is done to the surface.
    #[expect(
        clippy::too_many_arguments,
        reason = "the fields of one extract action"
    )]
    pub(super) fn extract_step(
        &self,
        frame: &mut Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        target: &TargetDescriptor,
        into: &cua_artifact::OutputName,
        transform: Option<cua_artifact::Transform>,
        snapshot: &UiSnapshot,
    ) -> Result<(), Halt> {
        let (resolution, resolved) = match self.resolve(frame, tally, position, target, snapshot)? {
            Ok(found) => found,
            Err(stop) => {
                self.record_step(
                    frame,
                    tally,
                    position,
                    StepRecordInput::read(ActionKind::Extract, "a read that found no target"),
                )?;
                return Err(stop.into());
            }
        };
        // A control's value, else the node's name, else its rendered text (the names of the
        // text inside it, joined): a paragraph or a landmark has no name of its own.
        let node = &snapshot.nodes[resolution.node];
        let text = match node
            .value
            .as_deref()
            .filter(|value| !value.trim().is_empty())
        {
            Some(value) => value.to_owned(),
            None if !node.name.trim().is_empty() => node.name.clone(),
            None => cua_target::cell_text(snapshot, resolution.node),
        };
        let text = text.as_str();
        let mut input = StepRecordInput::read(ActionKind::Extract, "a read from the snapshot");
        input.resolution = Some(resolved);
        self.record_step(frame, tally, position, input)?;
        if text.trim().is_empty() {
            return Err(Stop::new(
                FailureCode::ActionFailed,
                format!(
                    "step `{}` resolved {} but it holds no text to extract",
                    position.id, resolution.node_id
                ),
            )
            .into());
        }
        let value = transform::apply(transform, text).map_err(|reason| {
            Stop::new(
                FailureCode::ActionFailed,
                format!("step `{}` cannot extract `{into}`: {reason}", position.id),
            )
        })?;
        if frame
            .capability
            .output(into.as_str())
            .is_some_and(|output| output.sensitive)
        {
            self.bus.redactor().register_sensitive_value(&value);
            if !frame.remedy {
                tally.unread_sensitive.remove(into.as_str());
            }
        }
        frame.values.set_output(into.clone(), value);
        Ok(())
    }
}
