//! Replay's side of the chokepoint: every action passes `cua-gate` as automation, keyed by the
//! run's attempt, and a refusal becomes the stop the run ends on.

use cua_artifact::{Actor, FailureCode, RiskTier, StepId};
use cua_gate::{
    Cleared, Gate, IntentKey, Refusal, Request as GateRequest, Sent, Ticket, Withholding,
};
use cua_policy::{AuthorizationContext, DenialCode, ResolvedTarget, SurfaceAction};
use cua_surface::SurfaceDriver;

use crate::executor::{Execution, Replayer, RunState};
use crate::stop::Stop;

use super::{Declared, DispatchFailure, Dispatched};

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// Passes one action through the gate as automation (lease, allowlist, risk, approval, the
    /// write-ahead intent of a mutation, the lease again) and maps a refusal to the stop it
    /// ends the run on. Every operator passes here: the browser, the HTTP client, the command
    /// runner and the screenshot.
    pub(crate) fn authorize_action(
        &self,
        frame: &Execution<'_>,
        tally: &mut RunState,
        step: Option<&StepId>,
        action: SurfaceAction,
        target: Option<ResolvedTarget>,
        declared: Declared,
    ) -> Result<Cleared, DispatchFailure> {
        let kind = action.kind();
        if self.config.interrupt.is_raised() {
            return Err(DispatchFailure::Refused {
                stop: interrupted(step.map_or("the entrypoint", StepId::as_str)),
                decision_id: String::new(),
                risk: declared.risk.unwrap_or_default(),
            });
        }
        let request = GateRequest {
            step: step.cloned(),
            target,
            declared_risk: declared.risk,
            declared_mutation: declared.mutates,
            context: AuthorizationContext {
                confirmed: false,
                grant: frame.grant.clone(),
            },
            intent: Some(IntentKey {
                row: tally.attempt.row,
                attempt: tally.attempt.attempt,
                idempotency_key: tally.attempt.idempotency_key.clone(),
                remedy: frame.remedy.then(|| frame.reference.clone()),
            }),
            read_only: self.config.read_only,
            ..GateRequest::new(Actor::Automation, tally.epoch, action)
        };
        let lease = || self.current_lease();
        let refusal = match Gate::new(&frame.engine, Some(self.bus), &lease).clear(request)? {
            Ok(cleared) => {
                if cleared.ticket.mutation {
                    tally
                        .intents
                        .push((step.cloned(), cleared.ticket.decision_id.clone()));
                }
                return Ok(cleared);
            }
            Err(refusal) => refusal,
        };
        let (stop, decision_id, risk) = match refusal {
            Refusal::Denied { denial, risk } => {
                let code = match denial.code {
                    DenialCode::LeaseLost => FailureCode::LeaseLost,
                    DenialCode::NavigationBlocked => FailureCode::NavigationBlocked,
                    DenialCode::NeedsConfirmation | DenialCode::PolicyDenied => {
                        FailureCode::PolicyDenied
                    }
                };
                let reason = format!("policy refused `{}`: {}", kind.as_str(), denial.reason);
                (Stop::new(code, reason), denial.decision_id, risk)
            }
            Refusal::Withheld {
                decision_id,
                risk,
                why,
            } => {
                let reason = format!(
                    "`{}` is assessed {}: {}",
                    kind.as_str(),
                    risk.as_str(),
                    why.reason()
                );
                // A journal that refuses the intent says the row passed to another worker.
                let code = match why {
                    Withholding::Unjournaled | Withholding::JournalLapsed => FailureCode::LeaseLost,
                    Withholding::ReadOnly | Withholding::NoTrace => FailureCode::PolicyDenied,
                };
                (Stop::new(code, reason), decision_id, risk)
            }
            Refusal::Stale {
                decision_id,
                risk,
                lease,
            } => {
                let reason = format!(
                    "the session passed to {} (epoch {}) before `{}` was dispatched",
                    lease.holder.as_str(),
                    lease.epoch,
                    kind.as_str()
                );
                (Stop::new(FailureCode::LeaseLost, reason), decision_id, risk)
            }
        };
        Err(DispatchFailure::Refused {
            stop,
            decision_id,
            risk,
        })
    }

    /// Records what a port reported for a cleared action, and the requests the browser
    /// blocked meanwhile.
    pub(crate) fn record_sent(
        &self,
        frame: &Execution<'_>,
        ticket: &Ticket,
        sent: Sent,
        blocked: Vec<cua_surface::BlockedRequest>,
    ) -> Result<(), cua_evidence::EvidenceError> {
        let lease = || self.current_lease();
        Gate::new(&frame.engine, Some(self.bus), &lease).record(ticket, sent, blocked)
    }

    /// The chokepoint every browser action passes: the gate, then the surface, then the
    /// record of what it reported.
    pub(crate) async fn chokepoint(
        &self,
        frame: &Execution<'_>,
        tally: &mut RunState,
        step: Option<&StepId>,
        action: SurfaceAction,
        target: Option<ResolvedTarget>,
        declared_risk: Option<RiskTier>,
    ) -> Result<Dispatched, DispatchFailure> {
        let Cleared { authorized, ticket } = self.authorize_action(
            frame,
            tally,
            step,
            action,
            target,
            Declared {
                risk: declared_risk,
                mutates: false,
            },
        )?;
        tally.fresh = None;
        let outcome = match authorized.into_browser() {
            Ok(browser) => self.driver.dispatch(browser).await,
            Err(kind) => Err(cua_surface::SurfaceError::wrong_port(
                kind.as_str(),
                "browser",
            )),
        };
        tally.dispatches += 1;
        self.record_sent(
            frame,
            &ticket,
            Sent::from(&outcome),
            self.driver.take_blocked_requests(),
        )?;
        let Ticket {
            decision_id,
            risk,
            kind,
            ..
        } = ticket;
        match outcome {
            Ok(receipt) => Ok(Dispatched {
                decision_id,
                risk,
                receipt,
            }),
            Err(error) => {
                let reached = !matches!(
                    error,
                    cua_surface::SurfaceError::NodeGone { .. }
                        | cua_surface::SurfaceError::NavigationBlocked { .. }
                );
                Err(DispatchFailure::Failed {
                    stop: Stop::surface(&error, &format!("dispatching `{}`", kind.as_str())),
                    decision_id,
                    risk,
                    reached,
                })
            }
        }
    }
}

pub(super) fn interrupted(what: &str) -> Stop {
    Stop::new(
        FailureCode::Interrupted,
        format!(
            "the run was asked to stop (a signal) before `{what}`; nothing more was dispatched"
        ),
    )
}
