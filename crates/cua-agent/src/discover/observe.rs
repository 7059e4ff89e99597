//! Observing the screen: settling after an action, the snapshot and its redacted outline recorded,
//! and the notes the compiler reads.

use std::collections::BTreeMap;
use std::time::Instant;

use cua_artifact::Actor;
use cua_evidence::{Note, Observe, Wait};
use cua_snapshot::UiSnapshot;
use cua_surface::{SurfaceDriver, WaitCondition, WaitOutcome};
use serde_json::{Value, json};

use crate::error::AgentError;
use crate::llm::LlmPort;

use super::{Discovery, Session};

impl<D: SurfaceDriver, L: LlmPort> Discovery<'_, D, L> {
    /// Waits for the screen to settle after an action and records the observation.
    pub(super) async fn settle(
        &self,
        session: &mut Session,
        label: &str,
    ) -> Result<(), AgentError> {
        let started = Instant::now();
        let outcome = self
            .driver
            .wait(WaitCondition::SnapshotStable, self.config.settle_timeout)
            .await
            .map_err(|error| AgentError::Surface {
                reason: error.to_string(),
            })?;
        let (satisfied, snapshot) = match outcome {
            WaitOutcome::Met(snapshot) => (true, *snapshot),
            WaitOutcome::TimedOut(snapshot) => (false, *snapshot),
        };
        self.bus.emit(
            Actor::System,
            0,
            Wait {
                step: None,
                condition: "snapshot_stable".to_owned(),
                satisfied,
                waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                timeout_ms: Some(
                    u64::try_from(self.config.settle_timeout.as_millis()).unwrap_or(u64::MAX),
                ),
            },
        )?;
        self.record(session, snapshot, label)
    }

    /// Observes the surface now and records it.
    pub(super) async fn observe(
        &self,
        session: &mut Session,
        label: &str,
    ) -> Result<(), AgentError> {
        let snapshot = self
            .driver
            .observe()
            .await
            .map_err(|error| AgentError::Surface {
                reason: error.to_string(),
            })?;
        self.record(session, snapshot, label)
    }

    pub(super) fn record(
        &self,
        session: &mut Session,
        snapshot: UiSnapshot,
        label: &str,
    ) -> Result<(), AgentError> {
        let written = self.bus.write_snapshot(label, &snapshot)?;
        self.bus.emit(
            Actor::System,
            0,
            Observe {
                url: snapshot.url.clone(),
                title: snapshot.title.clone(),
                node_count: snapshot.nodes.len() as u64,
                http_status: snapshot.http_status,
                snapshot_ref: Some(written.path.clone()),
                snapshot_digest: Some(written.digest),
            },
        )?;
        if let Err(blocked) = self.policy.check_landing(&snapshot.url) {
            self.note(
                "navigation left the allowlist",
                json!({ "url": snapshot.url, "reason": blocked.reason }),
            )?;
        }
        session.snapshot = snapshot;
        session.snapshot_ref = Some(written.path);
        session.expanded.clear();
        Ok(())
    }

    pub(super) fn note(&self, note: &str, data: Value) -> Result<(), AgentError> {
        let data = match data {
            Value::Object(map) => map.into_iter().collect(),
            other => BTreeMap::from([("value".to_owned(), other)]),
        };
        self.bus.emit(
            Actor::Agent,
            0,
            Note {
                note: note.to_owned(),
                data,
            },
        )?;
        Ok(())
    }
}
