//! The one chokepoint every actor's action passes, whoever proposes it (replay as `automation`,
//! discovery as `agent`, an operator in the console as `human`) and whichever port carries it
//! (the browser, the HTTP client, the command runner):
//!
//! 1. the policy engine decides, and the decision is recorded as `authorize`, granted or not;
//! 2. a granted action the caller may not send now (a read-only run's mutation, a mutation with
//!    no trace to announce it in) is withheld, recorded as a refused `dispatch`;
//! 3. a mutation is announced by a durable write-ahead `intent` before it can leave the process,
//!    in the trace and in the bus's intent journal when it has one (a batch queue);
//! 4. the lease is read again right before the dispatch, so a claim made while the decision was
//!    being made always wins over the action already authorized;
//! 5. the caller's port dispatches the witness, and the receipt or the failure is recorded as
//!    `dispatch`, followed by any request the surface blocked meanwhile.
//!
//! [`Gate::clear`] runs steps 1–4 and hands back the witness with a [`Ticket`]; the caller
//! dispatches through its own port and records the outcome with [`Gate::record`].
//! [`Gate::pass`] runs all five for a caller whose port is one call.
//!
//! Architecture invariant: nothing outside this crate turns a policy decision into evidence or
//! re-checks a lease at the dispatch; callers only map the outcome into their own answers. The
//! crate spawns nothing, reads no clock (an operator's hold is judged at the time the caller
//! passes in) and knows nothing of capabilities, steps or browsers.

use std::future::Future;

use cua_artifact::{ActionKind, Actor, CapabilityRef, RiskTier, StepId};
use cua_evidence::{Authorize, BlockedRequest, Dispatch, EvidenceBus, EvidenceError, Intent};
use cua_policy::{
    ActionRequest, AuthorizationContext, Authorized, AuthorizedAction, BrowserAction, Denial,
    Lease, PolicyEngine, ResolvedTarget, SurfaceAction,
};
use cua_snapshot::NodeId;
use cua_surface::{DispatchReceipt, SurfaceError};

/// Where the gate reads the session's lease, at the decision and again at the dispatch.
pub type LeaseSource<'g> = &'g (dyn Fn() -> Lease + Sync);

/// Reads the time an operator's hold is judged at, in milliseconds.
pub type HoldClock<'g> = &'g (dyn Fn() -> u64 + Sync);

/// The chokepoint of one session: its policy, its trace and its lease.
pub struct Gate<'g> {
    engine: &'g PolicyEngine,
    bus: Option<&'g EvidenceBus>,
    lease: LeaseSource<'g>,
    hold_clock: Option<HoldClock<'g>>,
}

/// One proposed action with everything the decision and its evidence need.
#[derive(Debug, Clone)]
pub struct Request {
    pub actor: Actor,
    /// The lease epoch the proposer believes it acts under.
    pub epoch: u64,
    /// The step the action serves, when it serves one.
    pub step: Option<StepId>,
    pub action: SurfaceAction,
    pub target: Option<ResolvedTarget>,
    /// The risk the capability declared, if any.
    pub declared_risk: Option<RiskTier>,
    /// The capability declares the step a mutation whatever its tier (`Step::mutates`).
    pub declared_mutation: bool,
    /// An operator's confirmation and a replay's irreversible grant.
    pub context: AuthorizationContext,
    /// The operator who confirmed the action, named in the recorded reason.
    pub confirmed_by: Option<String>,
    /// What the write-ahead intent is keyed by; a run serving no batch row when absent.
    pub intent: Option<IntentKey>,
    /// The caller may dispatch no mutation (a reconciliation's read-only run).
    pub read_only: bool,
}

impl Request {
    /// A request with nothing declared, confirmed or granted.
    pub fn new(actor: Actor, epoch: u64, action: SurfaceAction) -> Self {
        Self {
            actor,
            epoch,
            step: None,
            action,
            target: None,
            declared_risk: None,
            declared_mutation: false,
            context: AuthorizationContext::default(),
            confirmed_by: None,
            intent: None,
            read_only: false,
        }
    }
}

/// What a write-ahead intent is looked up by later: the batch row, the attempt at it, the key
/// every attempt at the row shares, and the remedy that mutated, if one did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentKey {
    pub row: Option<u64>,
    pub attempt: u32,
    pub idempotency_key: String,
    pub remedy: Option<CapabilityRef>,
}

/// A granted action the gate let through, with the facts the dispatch is recorded under.
#[derive(Debug)]
pub struct Cleared {
    /// The witness, for the caller's port to consume.
    pub authorized: AuthorizedAction,
    pub ticket: Ticket,
}

/// The facts of one cleared action, for recording its dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    pub actor: Actor,
    pub epoch: u64,
    pub step: Option<StepId>,
    pub decision_id: String,
    pub kind: ActionKind,
    pub node_id: Option<NodeId>,
    pub risk: RiskTier,
    /// A write-ahead intent was recorded for it.
    pub mutation: bool,
}

/// What a port reported for a dispatch, as the trace records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The port performed the action without an error (a receipt, not a confirmation).
    pub ok: bool,
    pub navigated: bool,
    pub http_status: Option<u16>,
    pub duration_ms: u64,
    pub message: String,
}

impl Sent {
    /// A dispatch that failed with `message`.
    pub fn failed(message: String) -> Self {
        Self {
            ok: false,
            navigated: false,
            http_status: None,
            duration_ms: 0,
            message,
        }
    }
}

impl From<&DispatchReceipt> for Sent {
    fn from(receipt: &DispatchReceipt) -> Self {
        Self {
            ok: receipt.ok,
            navigated: receipt.navigated,
            http_status: receipt.http_status,
            duration_ms: receipt.duration_ms,
            message: receipt.message.clone(),
        }
    }
}

impl From<&Result<DispatchReceipt, SurfaceError>> for Sent {
    fn from(outcome: &Result<DispatchReceipt, SurfaceError>) -> Self {
        match outcome {
            Ok(receipt) => receipt.into(),
            Err(error) => Self::failed(error.to_string()),
        }
    }
}

/// Why nothing was dispatched. Every refusal is in the trace already (when there is one).
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The policy engine refused: a denied `authorize`.
    Denied {
        denial: Denial,
        /// The assessed tier of what was refused.
        risk: RiskTier,
    },
    /// Granted, then withheld before the dispatch: a refused `dispatch`.
    Withheld {
        decision_id: String,
        risk: RiskTier,
        why: Withholding,
    },
    /// Granted, then the lease moved before the dispatch: a refused `dispatch`, which settles
    /// the intent as never dispatched.
    Stale {
        decision_id: String,
        risk: RiskTier,
        /// The lease as it stood at the dispatch.
        lease: Lease,
    },
}

/// Why a granted action was withheld.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withholding {
    /// A read-only run (a reconciliation) may dispatch no mutation.
    ReadOnly,
    /// A mutation's intent must be written before it leaves, and there is no trace to write
    /// it in.
    NoTrace,
    /// The intent journal (a batch queue's database) refused the intent: the work it is for
    /// has passed to another worker, or the journal cannot be reached.
    Unjournaled,
    /// The intent journal took the intent, but its hold on the work may have run out since
    /// (the process was paused or slow between the journal and the dispatch).
    JournalLapsed,
}

impl Withholding {
    /// One line for the evidence and the caller's message.
    pub fn reason(self) -> &'static str {
        match self {
            Self::ReadOnly => "a read-only run (a reconciliation) may dispatch no mutation",
            Self::NoTrace => "a mutation needs a run's evidence for its write-ahead intent",
            Self::Unjournaled => "the intent journal refused the write-ahead intent",
            Self::JournalLapsed => {
                "the intent journal's hold on the work ran out before the dispatch"
            }
        }
    }
}

/// An action that went through the gate to its port.
#[derive(Debug)]
pub struct Passed {
    pub ticket: Ticket,
    pub outcome: Result<DispatchReceipt, SurfaceError>,
}

impl<'g> Gate<'g> {
    /// The gate of a session whose decisions are `engine`'s, recorded in `bus` (when the
    /// session has a trace), under the lease `lease` reads.
    pub fn new(
        engine: &'g PolicyEngine,
        bus: Option<&'g EvidenceBus>,
        lease: LeaseSource<'g>,
    ) -> Self {
        Self {
            engine,
            bus,
            lease,
            hold_clock: None,
        }
    }

    /// Judges an operator's hold at the time `now_ms` reads, so an expired hold is refused at
    /// the dispatch even before anything swept it.
    pub fn with_hold_clock(mut self, now_ms: HoldClock<'g>) -> Self {
        self.hold_clock = Some(now_ms);
        self
    }

    /// Decides, records the decision, writes a mutation's intent and checks the lease again.
    /// The outer error is a trace that could not be written: nothing was dispatched.
    pub fn clear(&self, request: Request) -> Result<Result<Cleared, Refusal>, EvidenceError> {
        let read_only = request.read_only;
        let (authorized, ticket, intent) = match self.decide(request)? {
            Ok(decided) => decided,
            Err((denial, risk)) => return Ok(Err(Refusal::Denied { denial, risk })),
        };
        let actor = ticket.actor;
        if ticket.mutation {
            let bus = match self.bus {
                Some(bus) if !read_only => bus,
                _ => {
                    let why = if read_only {
                        Withholding::ReadOnly
                    } else {
                        Withholding::NoTrace
                    };
                    self.refuse_dispatch(&ticket, why.reason(), None)?;
                    return Ok(Err(Refusal::Withheld {
                        decision_id: ticket.decision_id,
                        risk: ticket.risk,
                        why,
                    }));
                }
            };
            // Write-ahead: announced durably before it can leave the process, so a crash after
            // this line leaves it in doubt, never unrecorded. It is written before the last
            // lease check, so nothing slow stands between that check and the dispatch.
            let intent = write_ahead(bus, &ticket, intent);
            let seq = bus.emit(actor, ticket.epoch, intent.clone())?;
            // The shared journal (a batch queue) takes it too, or nothing leaves: a journal that
            // refuses says this process no longer holds the work the mutation is for.
            if let Err(reason) = bus.journal(seq, &intent) {
                return self.withhold(ticket, Withholding::Unjournaled, &reason);
            }
        }
        let lease = (self.lease)();
        let permitted = match self.hold_clock {
            Some(now_ms) => lease.permits_at(actor, ticket.epoch, now_ms()),
            None => lease.permits(actor, ticket.epoch),
        };
        if !permitted {
            self.refuse_dispatch(&ticket, "stale lease epoch", Some(lease.epoch))?;
            return Ok(Err(Refusal::Stale {
                decision_id: ticket.decision_id,
                risk: ticket.risk,
                lease,
            }));
        }
        // Last, because it is the one bound that runs out by itself: the journal's hold (a
        // queue lease) must still cover the dispatch that follows, however long the process
        // spent since the journal took the intent.
        if ticket.mutation
            && let Some(bus) = self.bus
            && let Err(reason) = bus.journal_holds()
        {
            return self.withhold(ticket, Withholding::JournalLapsed, &reason);
        }
        Ok(Ok(Cleared { authorized, ticket }))
    }

    /// Records that a mutation announced in the journal was withheld for `why`, and says so.
    fn withhold(
        &self,
        ticket: Ticket,
        why: Withholding,
        detail: &str,
    ) -> Result<Result<Cleared, Refusal>, EvidenceError> {
        self.refuse_dispatch(&ticket, &format!("{}: {detail}", why.reason()), None)?;
        Ok(Err(Refusal::Withheld {
            decision_id: ticket.decision_id,
            risk: ticket.risk,
            why,
        }))
    }

    /// Judges a proposal without performing it: the decision is recorded as `authorize`, and
    /// the witness is dropped (assisted replay's proposal is performed later by the run).
    /// The answer is the decision id, or the policy's refusal.
    pub fn judge(&self, request: Request) -> Result<Result<String, Denial>, EvidenceError> {
        Ok(self
            .decide(request)?
            .map(|(_dropped, ticket, _)| ticket.decision_id)
            .map_err(|(denial, _)| denial))
    }

    /// Authorizes and records the decision, granted or not; a refusal comes with the assessed
    /// tier of what was refused.
    #[expect(clippy::type_complexity, reason = "the parts of one decision")]
    fn decide(
        &self,
        request: Request,
    ) -> Result<
        Result<(AuthorizedAction, Ticket, Option<IntentKey>), (Denial, RiskTier)>,
        EvidenceError,
    > {
        let Request {
            actor,
            epoch,
            step,
            action,
            target,
            declared_risk,
            declared_mutation,
            mut context,
            confirmed_by,
            intent,
            read_only: _,
        } = request;
        let kind = action.kind();
        let node_id = target.as_ref().map(|target| target.node_id.clone());
        context.confirmed = context.confirmed || confirmed_by.is_some();
        let assessed_target = target.clone();
        let decision = self.engine.authorize_with(
            &(self.lease)(),
            ActionRequest {
                actor,
                epoch,
                action,
                target,
                declared_risk,
            },
            &context,
        );
        let authorized = match decision {
            Ok(authorized) => authorized,
            Err(denial) => {
                let assessment = denial.assessment.clone().unwrap_or_else(|| {
                    self.engine
                        .assess(kind, assessed_target.as_ref(), declared_risk)
                });
                self.emit(
                    actor,
                    epoch,
                    Authorize {
                        step,
                        decision_id: denial.decision_id.clone(),
                        granted: false,
                        action_type: kind,
                        risk: assessment.tier,
                        signals: assessment.signals,
                        reason: denial.reason.clone(),
                        denial: Some(denial.code.as_str().to_owned()),
                        approval: None,
                        node_id,
                    },
                )?;
                return Ok(Err((denial, assessment.tier)));
            }
        };
        let ticket = Ticket {
            actor,
            epoch: authorized.lease_epoch(),
            step,
            decision_id: authorized.decision_id().to_owned(),
            kind,
            node_id,
            risk: authorized.risk(),
            mutation: Intent::required(authorized.risk(), declared_mutation),
        };
        let reason = match &confirmed_by {
            Some(operator) => format!(
                "{}; confirmed by {operator}",
                authorized.assessment().reason
            ),
            None => authorized.assessment().reason.clone(),
        };
        self.emit(
            actor,
            ticket.epoch,
            Authorize {
                step: ticket.step.clone(),
                decision_id: ticket.decision_id.clone(),
                granted: true,
                action_type: kind,
                risk: ticket.risk,
                signals: authorized.assessment().signals.clone(),
                reason,
                denial: None,
                approval: (ticket.risk == RiskTier::Irreversible)
                    .then(|| context.grant.approved_under().map(str::to_owned))
                    .flatten(),
                node_id: ticket.node_id.clone(),
            },
        )?;
        Ok(Ok((authorized, ticket, intent)))
    }

    /// Records what the port reported for a cleared action, then the requests the surface
    /// blocked meanwhile.
    pub fn record(
        &self,
        ticket: &Ticket,
        sent: Sent,
        blocked: Vec<cua_surface::BlockedRequest>,
    ) -> Result<(), EvidenceError> {
        self.emit(
            ticket.actor,
            ticket.epoch,
            Dispatch {
                step: ticket.step.clone(),
                decision_id: ticket.decision_id.clone(),
                action_type: ticket.kind,
                node_id: ticket.node_id.clone(),
                refused: false,
                ok: sent.ok,
                navigated: sent.navigated,
                http_status: sent.http_status,
                duration_ms: sent.duration_ms,
                message: sent.message,
                reason: None,
                expected_epoch: None,
            },
        )?;
        self.record_blocked(blocked)
    }

    /// Records requests the surface refused to fetch.
    pub fn record_blocked(
        &self,
        blocked: Vec<cua_surface::BlockedRequest>,
    ) -> Result<(), EvidenceError> {
        for request in blocked {
            let event = BlockedRequest::refused(request.url, request.reason, request.resource_type);
            self.emit(Actor::System, 0, event)?;
        }
        Ok(())
    }

    /// The whole passage for a port that is one call: [`Gate::clear`], `dispatch`, then
    /// [`Gate::record`] with what `take_blocked` returns. The outer error is a trace that could
    /// not be written; once the dispatch has begun, the action may have happened.
    pub async fn pass<F, Fut>(
        &self,
        request: Request,
        dispatch: F,
        take_blocked: impl FnOnce() -> Vec<cua_surface::BlockedRequest>,
    ) -> Result<Result<Passed, Refusal>, EvidenceError>
    where
        F: FnOnce(Authorized<BrowserAction>) -> Fut,
        Fut: Future<Output = Result<DispatchReceipt, SurfaceError>>,
    {
        let Cleared { authorized, ticket } = match self.clear(request)? {
            Ok(cleared) => cleared,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let outcome = match authorized.into_browser() {
            Ok(browser) => dispatch(browser).await,
            Err(kind) => Err(SurfaceError::wrong_port(kind.as_str(), "browser")),
        };
        self.record(&ticket, Sent::from(&outcome), take_blocked())?;
        Ok(Ok(Passed { ticket, outcome }))
    }

    /// Records that a granted action was refused right at its dispatch: nothing left the
    /// process.
    fn refuse_dispatch(
        &self,
        ticket: &Ticket,
        reason: &str,
        expected_epoch: Option<u64>,
    ) -> Result<(), EvidenceError> {
        self.emit(
            ticket.actor,
            ticket.epoch,
            Dispatch::refused(
                ticket.step.clone(),
                &ticket.decision_id,
                ticket.kind,
                ticket.node_id.clone(),
                reason,
                expected_epoch,
            ),
        )
    }

    fn emit(
        &self,
        actor: Actor,
        epoch: u64,
        event: impl Into<cua_evidence::Event>,
    ) -> Result<(), EvidenceError> {
        match self.bus {
            Some(bus) => bus.emit(actor, epoch, event).map(drop),
            None => Ok(()),
        }
    }
}

/// The write-ahead intent of a cleared mutation, keyed by `key` or, absent one, by the run.
fn write_ahead(bus: &EvidenceBus, ticket: &Ticket, key: Option<IntentKey>) -> Intent {
    match key {
        Some(key) => Intent {
            step: ticket.step.clone(),
            decision_id: ticket.decision_id.clone(),
            action_type: ticket.kind,
            risk: ticket.risk,
            row: key.row,
            attempt: key.attempt,
            idempotency_key: key.idempotency_key,
            remedy: key.remedy,
        },
        None => Intent::of_run(
            bus.run_id().as_str(),
            ticket.step.clone(),
            &ticket.decision_id,
            ticket.kind,
            ticket.risk,
        ),
    }
}
