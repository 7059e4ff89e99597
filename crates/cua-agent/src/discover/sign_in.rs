//! Signing in before the model takes over: a sign-in capability's steps run on the current
//! screen as the agent, through the same gate, and its checkpoint must hold afterwards.

use std::collections::BTreeMap;

use cua_artifact::{Action, Capability, ValueExpr};
use cua_policy::{BrowserAction, SurfaceAction};
use cua_surface::SurfaceDriver;
use cua_target::{BoundValues, evaluate};
use serde_json::json;

use crate::error::AgentError;
use crate::llm::LlmPort;
use crate::tools::{TargetSpec, TypedValue};

use super::act::bind;
use super::{Discovery, PHASE_NOTE, Passage, Session};

impl<D: SurfaceDriver, L: LlmPort> Discovery<'_, D, L> {
    /// Runs a sign-in capability's steps on the current screen, as the agent, through the
    /// chokepoint; its checkpoint must hold afterwards.
    pub(super) async fn sign_in(
        &self,
        session: &mut Session,
        capability: &Capability,
    ) -> Result<(), AgentError> {
        self.note(
            PHASE_NOTE,
            json!({ "phase": "sign_in", "capability": capability.reference().to_string() }),
        )?;
        for step in &capability.steps {
            let (action, target) = match &step.action {
                Action::Type {
                    target,
                    value,
                    clear_first,
                } => {
                    let text = match value {
                        ValueExpr::Secret(name) => TypedValue::Secret(name.clone()),
                        literal if literal.is_literal() => {
                            TypedValue::Literal(literal.literal_text().unwrap_or_default())
                        }
                        other => {
                            return Err(AgentError::SignIn {
                                reason: format!(
                                    "step `{}` types {other}, which sign-in cannot bind",
                                    step.id
                                ),
                            });
                        }
                    };
                    let text = bind(self.secrets, &text, &BTreeMap::new())
                        .map_err(|reason| AgentError::SignIn { reason })?;
                    (
                        SurfaceAction::Browser(BrowserAction::Type {
                            text,
                            clear_first: *clear_first,
                        }),
                        target,
                    )
                }
                Action::Click {
                    target,
                    accept_confirm,
                } => (
                    match accept_confirm {
                        Some(confirm) => {
                            SurfaceAction::Browser(BrowserAction::ClickAcceptingConfirm {
                                confirm: confirm.clone(),
                            })
                        }
                        None => SurfaceAction::Browser(BrowserAction::Click),
                    },
                    target,
                ),
                other => {
                    return Err(AgentError::SignIn {
                        reason: format!(
                            "step `{}` is a {} action; sign-in runs type and click steps only",
                            step.id,
                            other.kind().as_str()
                        ),
                    });
                }
            };
            let descriptor = target.clone();
            match self
                .chokepoint(
                    session,
                    Some(TargetSpec::Described(Box::new(descriptor))),
                    action,
                    Some(step.risk),
                )
                .await?
            {
                Passage::Dispatched { .. } => self.settle(session, step.id.as_str()).await?,
                Passage::Refused { reason, .. } | Passage::Failed { reason } => {
                    return Err(AgentError::SignIn {
                        reason: format!("step `{}`: {reason}", step.id),
                    });
                }
            }
        }
        let signed_in = evaluate(
            &capability.checkpoint,
            &session.snapshot,
            &BoundValues::new(),
        )
        .map_err(|error| AgentError::SignIn {
            reason: error.to_string(),
        })?;
        if !signed_in {
            return Err(AgentError::SignIn {
                reason: format!(
                    "the checkpoint of {} does not hold after its steps",
                    capability.reference()
                ),
            });
        }
        Ok(())
    }
}
