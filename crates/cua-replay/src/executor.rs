//! The `Replayer`: what it is wired with, what a run asks for, and a run from its first event
//! to its last: preflight, entrypoint, steps, checkpoint, and the terminal status.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cua_artifact::{
    Actor, Capability, CapabilityRef, EffectVerdict, EscalationPolicy, FailureCode, Identifier,
    OutcomeResult, ResolutionStrategy, RiskTier, RunKind, RunResult, RunStatus, SealState, StepId,
    TenantId,
};
use cua_evidence::{Escalate, EvidenceBus, Note, RunEnd, RunStart, SecretResolver};
use cua_policy::{BrowserAction, IrreversibleGrant, Lease, PolicyEngine, RunBudget, SurfaceAction};
use cua_snapshot::{NodeId, UiSnapshot};
use cua_surface::{ScreenshotRequest, SurfaceDriver};
use serde_json::Value;

use crate::clock::RunClock;
use crate::error::ReplayError;
use crate::ports::{
    CapabilityLoader, Entropy, EscalationRequest, EscalationSink, Interrupt, SystemEntropy,
};
use crate::report::{ReplayReport, StepReport, run_verdict};
use crate::resume::Supervision;
use crate::stop::{Halt, Stop};
use crate::values::{RunValues, validate_inputs};
use cua_artifact::PreparedCapability;

/// How the executor behaves beyond what the artifact and the policy say. Passed explicitly.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// Whether an unsealed draft may run (a compiler's first check of its own output). Off by
    /// default: a reviewed capability is sealed.
    pub allow_drafts: bool,
    /// How long to wait for the entrypoint to settle (two identical observations).
    pub entry_settle: Duration,
    /// How long to wait for the screen to settle after a remedy action.
    pub remedy_settle: Duration,
    /// The first recovery backoff; `linear` waits `base × attempt`, `exponential`
    /// `base × 2^(attempt-1)`.
    pub backoff_base: Duration,
    /// No single backoff waits longer than this (nor past the run's duration budget).
    pub backoff_cap: Duration,
    /// Which (redacted) screenshots a run takes: of the screen a failed or escalated run
    /// stopped on, and of the last screen of every step that dispatched (the policy's
    /// `evidence.screenshots`).
    pub screenshots: cua_artifact::Screenshots,
    /// The operators `http` and `command` steps dispatch through; a run without one refuses
    /// those steps (`surface_unavailable`) before anything is sent.
    pub operators: Operators,
    /// The source of each visual observation ref's 256 random bits.
    pub entropy: Arc<dyn Entropy>,
    /// Raised to stop the run before its next dispatch (see [`Interrupt`]).
    pub interrupt: Interrupt,
    /// Refuse, at its dispatch, every action that would need a write-ahead intent: the run is
    /// a reconciliation, which may only read.
    pub read_only: bool,
}

/// The structured-api and native-cli operators, injected by the binary (replay itself links
/// no HTTP client).
#[derive(Clone, Default)]
pub struct Operators {
    pub http: Option<std::sync::Arc<dyn cua_surface::ServiceClient>>,
    pub command: Option<std::sync::Arc<dyn cua_surface::CommandRunner>>,
}

impl std::fmt::Debug for Operators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operators")
            .field("http", &self.http.is_some())
            .field("command", &self.command.is_some())
            .finish()
    }
}

impl Default for ReplayConfig {
    fn default() -> Self {
        Self {
            allow_drafts: false,
            entry_settle: Duration::from_secs(5),
            remedy_settle: Duration::from_secs(5),
            backoff_base: Duration::from_millis(250),
            backoff_cap: Duration::from_secs(4),
            screenshots: cua_artifact::Screenshots::OnFailure,
            operators: Operators::default(),
            entropy: Arc::new(SystemEntropy),
            interrupt: Interrupt::new(),
            read_only: false,
        }
    }
}

/// One run: which capability, with which inputs, for whom, under which grant and lease epoch.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub capability: PreparedCapability,
    /// Inputs by name. Strings are taken as given; a JSON number or boolean only where the
    /// declared type is one.
    pub inputs: BTreeMap<String, Value>,
    /// The tenant whose binding produced the capability, for the evidence.
    pub tenant: Option<TenantId>,
    /// The caller's opt-in to irreversible steps (`--allow-irreversible`).
    pub allow_irreversible: bool,
    /// The lease epoch this run was granted. `None` adopts the lease's current epoch; a value
    /// that is no longer current is refused before anything else.
    pub lease_epoch: Option<u64>,
    /// Which row and attempt this run is, and its idempotency key: written into every
    /// write-ahead intent, and given to the capability's `idempotency_key` input when the
    /// caller gave none. `None` keys the run by its own run id (attempt 1, no row).
    pub attempt: Option<Attempt>,
}

/// One attempt at a unit of work (a batch row, or a single run), for write-ahead intents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attempt {
    pub row: Option<u64>,
    /// From 1.
    pub attempt: u32,
    /// The same for every attempt at the row ([`cua_evidence::idempotency_key`]).
    pub idempotency_key: String,
}

impl RunRequest {
    /// A request for a capability with these inputs and nothing else.
    pub fn new(capability: PreparedCapability, inputs: BTreeMap<String, Value>) -> Self {
        Self {
            capability,
            inputs,
            tenant: None,
            allow_irreversible: false,
            lease_epoch: None,
            attempt: None,
        }
    }
}

/// Where a continued run picks up (see [`Replayer::continue_run`]): assisted replay continues
/// a stopped run from the step a model's proposal unblocked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContinueAt {
    /// The index of the first step to execute; `steps.len()` goes straight to the checkpoint.
    pub step_index: usize,
    /// Outputs an earlier run of the same capability already extracted, by output name. Names
    /// the capability does not declare are ignored.
    pub outputs: BTreeMap<String, String>,
    /// Why the run continues rather than starting over, for the evidence.
    pub reason: String,
}

/// The deterministic executor, wired with everything it uses. It reads no clock, environment
/// or file of its own, and makes no network call beyond what the surface driver does.
pub struct Replayer<'r, D: SurfaceDriver> {
    pub driver: &'r D,
    /// The global policy; each run narrows it to its capability (and starts a fresh decision
    /// counter, so decision ids repeat run after run).
    pub policy: &'r PolicyEngine,
    pub bus: &'r EvidenceBus,
    /// Elapsed time for budgets and the sleeps of recovery backoff.
    pub clock: &'r dyn RunClock,
    /// Resolves `{$secret: …}` at the dispatch that types it, registering each value with the
    /// bus's redactor as it is issued.
    pub secrets: &'r SecretResolver,
    /// Where `run_capability` remedies come from, with their approvals.
    pub capabilities: &'r dyn CapabilityLoader,
    pub escalations: &'r dyn EscalationSink,
    /// The session lease, shared with whoever may take the session over (the console).
    pub lease: Arc<Mutex<Lease>>,
    pub config: ReplayConfig,
}

/// The state of one capability being executed: the run's own, or a `run_capability` remedy.
pub(crate) struct Execution<'c> {
    pub(crate) capability: &'c Capability,
    pub(crate) reference: CapabilityRef,
    /// Set for a remedy: its steps are reported under its reference, and it may not nest.
    pub(crate) remedy: bool,
    pub(crate) engine: PolicyEngine,
    pub(crate) grant: IrreversibleGrant,
    pub(crate) budget: RunBudget,
    pub(crate) values: RunValues,
    /// The clock reading when the execution started.
    pub(crate) started: Duration,
    /// Attempts per recovery rule.
    pub(crate) attempts: BTreeMap<Identifier, u32>,
    /// Whether the caller opted in to irreversible steps (remedies inherit it).
    pub(crate) allow_irreversible: bool,
    /// Each step's route, planned before the execution's first action.
    pub(crate) routes: Vec<cua_route::RoutePlan>,
    /// The entrypoint navigation's route, planned with the steps'.
    pub(crate) entry_route: cua_route::RoutePlan,
    /// The observation ref each `screenshot` step issued, until a `click_at` claims it.
    pub(crate) observations: BTreeMap<StepId, cua_route::ObservationRef>,
}

/// What the whole run accumulates, across its remedies.
#[derive(Debug, Default)]
pub(crate) struct RunState {
    /// The lease epoch the run acts under.
    pub(crate) epoch: u64,
    pub(crate) steps: Vec<StepReport>,
    pub(crate) dispatches: u32,
    pub(crate) recovery_attempts: u32,
    /// How many `run_capability` remedies have run.
    pub(crate) remedy_runs: u32,
    /// The step whose dispatch may have carried a mutation the page still shows the result
    /// of; while set, no remedy may reload (see the crate documentation).
    pub(crate) mutation_mark: Option<String>,
    /// Nodes a secret or sensitive value was typed into, painted over in screenshots.
    pub(crate) sensitive_nodes: BTreeSet<NodeId>,
    pub(crate) last_snapshot: Option<UiSnapshot>,
    pub(crate) last_snapshot_ref: Option<String>,
    /// A recorded snapshot taken after the last action settled, which the next classification
    /// uses instead of observing again. Any dispatch clears it.
    pub(crate) fresh: Option<UiSnapshot>,
    /// A supervised escalation that was opened (and its `escalate` emitted) but never handed
    /// back: the run ends as `needs_human` on it without opening another.
    pub(crate) open_intervention: Option<String>,
    /// The run's live visual observation refs.
    pub(crate) observations: cua_route::ObservationLedger,
    /// Which attempt this run is, for its write-ahead intents.
    pub(crate) attempt: Attempt,
    /// Every mutation announced by a durable `intent` and then handed over, in order: the
    /// step and the decision. A run with any never ends as plain `failed`.
    pub(crate) intents: Vec<(Option<StepId>, String)>,
    /// The screenshot of the current step's last screen, until its `effect` names it.
    pub(crate) step_screenshot: Option<cua_evidence::ArtifactRef>,
    /// The run's sensitive outputs not read yet: until they are, the painter does not know
    /// their values, and no step screenshot is taken (a remedy's steps included).
    pub(crate) unread_sensitive: BTreeSet<String>,
}

/// How a capability's execution ended.
#[derive(Debug)]
pub(crate) enum ExecutionEnd {
    Success,
    Outcome(OutcomeResult),
    Stopped(Box<Stop>),
}

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// Runs one capability to its terminal status, leaving its evidence (trace, snapshots,
    /// screenshot on failure, `run_record.json`) in the bus's run directory.
    ///
    /// Before the first action: the lease (held by automation at the granted epoch), the
    /// content hash, the entrypoint's placeholders, the step budget, the inputs and the
    /// irreversible approval gate; a refusal there dispatches nothing. A tampered or draft
    /// artifact or an unbound entrypoint is an `Err` (after the refusal is written to the
    /// evidence); everything else that stops a run is a report with status `failed` or
    /// `needs_human`.
    pub async fn run(&self, request: RunRequest) -> Result<ReplayReport, ReplayError> {
        self.run_from(request, None).await
    }

    /// Continues a run on the screen the surface shows now: everything [`Replayer::run`] checks
    /// before the first action, then no entrypoint navigation, the earlier run's outputs
    /// carried over, and execution from `at.step_index`, in a trace of its own. Assisted replay
    /// uses it after a deterministic run stopped at a step the artifact's target no longer
    /// finds: no step before `at.step_index` is dispatched again.
    pub async fn continue_run(
        &self,
        request: RunRequest,
        at: ContinueAt,
    ) -> Result<ReplayReport, ReplayError> {
        self.run_from(request, Some(&at)).await
    }

    async fn run_from(
        &self,
        request: RunRequest,
        at: Option<&ContinueAt>,
    ) -> Result<ReplayReport, ReplayError> {
        let mut attempt = request.attempt.clone().unwrap_or_else(|| Attempt {
            row: None,
            attempt: 1,
            idempotency_key: cua_evidence::idempotency_key(self.bus.run_id().as_str(), None),
        });
        let mut request = request;
        request.inputs = crate::values::with_idempotency_key(
            &request.capability.capability,
            std::mem::take(&mut request.inputs),
            &attempt.idempotency_key,
        );
        // The intents carry the key the application is given: the caller's, when it gave one.
        if let Some(given) =
            crate::values::idempotency_value(&request.capability.capability, &request.inputs)
        {
            attempt.idempotency_key = given;
        }
        let request = request;
        let capability = &request.capability.capability;
        let redactor = self.bus.redactor();
        redactor.add_sensitive_keys(capability.sensitive_names().into_iter().map(str::to_owned));
        for input in capability.inputs.iter().filter(|input| input.sensitive) {
            if let Some(value) = request.inputs.get(input.name.as_str()) {
                redactor.register_sensitive_value(&value_text(value));
            }
        }
        let lease = self.current_lease();
        self.bus.emit(
            Actor::Automation,
            lease.epoch,
            RunStart {
                kind: RunKind::Replay,
                capability: Some(capability.reference()),
                content_hash: capability.content_hash.clone(),
                sealed_hash: request
                    .capability
                    .overlay
                    .as_ref()
                    .and_then(|overlay| overlay.base.content_hash.clone()),
                bound_by: request
                    .capability
                    .overlay
                    .as_ref()
                    .map(|overlay| describe_binding(&overlay.binding)),
                tenant: request.tenant.clone(),
                inputs: request.inputs.clone(),
                goal: None,
                target_url: None,
                model: None,
                scripted_model: None,
                resolver_config_hash: None,
            },
        )?;
        let mut tally = RunState {
            epoch: request.lease_epoch.unwrap_or(lease.epoch),
            attempt,
            unread_sensitive: request
                .capability
                .capability
                .outputs
                .iter()
                .filter(|output| output.sensitive)
                .map(|output| output.name.to_string())
                .collect(),
            ..RunState::default()
        };
        let started = self.clock.elapsed();
        let (ending, values) = match self.execute(&request, &mut tally, at).await {
            Ok(done) => done,
            Err(Halt::Stop(stop)) => (ExecutionEnd::Stopped(stop), RunValues::default()),
            Err(Halt::Fatal(
                refusal @ (ReplayError::Tampered { .. }
                | ReplayError::Draft { .. }
                | ReplayError::UnboundPlaceholder { .. }),
            )) => {
                self.refuse(&tally, &refusal)?;
                return Err(refusal);
            }
            Err(Halt::Fatal(error)) => return Err(error),
        };
        self.conclude(&request, tally, ending, &values, started)
            .await
    }

    /// Everything from the lease check to the checkpoint.
    async fn execute(
        &self,
        request: &RunRequest,
        tally: &mut RunState,
        at: Option<&ContinueAt>,
    ) -> Result<(ExecutionEnd, RunValues), Halt> {
        let capability = &request.capability.capability;
        let lease = self.current_lease();
        if lease.holder != Actor::Automation || tally.epoch != lease.epoch {
            return Err(Stop::new(
                FailureCode::LeaseLost,
                format!(
                    "the run was granted epoch {} but the session is held by {} at epoch {}; nothing was done",
                    tally.epoch,
                    lease.holder.as_str(),
                    lease.epoch
                ),
            )
            .into());
        }
        match capability.seal_state() {
            SealState::Sealed(_) => {}
            SealState::Draft if self.config.allow_drafts => {}
            SealState::Draft => {
                return Err(ReplayError::Draft {
                    reference: Box::new(capability.reference()),
                }
                .into());
            }
            SealState::Tampered { declared, computed } => {
                return Err(ReplayError::Tampered {
                    reference: Box::new(capability.reference()),
                    declared,
                    computed,
                }
                .into());
            }
        }
        if let Some(placeholder) = cua_artifact::tenant_placeholder(&capability.entrypoint.url) {
            return Err(ReplayError::UnboundPlaceholder {
                reference: Box::new(capability.reference()),
                url: capability.entrypoint.url.clone(),
                placeholder: placeholder.to_owned(),
            }
            .into());
        }
        let mut frame = self.open_frame(
            &request.capability,
            &request.inputs,
            request.allow_irreversible,
            None,
        )?;
        let start = match at {
            None => {
                self.enter(&frame, tally).await?;
                0
            }
            Some(at) => self.carry_over(&mut frame, at)?,
        };
        let mut ending = self.run_execution_from(&mut frame, tally, start).await?;
        // A supervised escalation resumes the run itself after the hand-back (see `resume`).
        while let ExecutionEnd::Stopped(stop) = &ending {
            ending = match self.supervise(&mut frame, tally, stop).await? {
                Supervision::Ended => break,
                Supervision::ResumeAt(index) => {
                    self.run_execution_from(&mut frame, tally, index).await?
                }
                Supervision::Refused(stop) => ExecutionEnd::Stopped(stop),
            };
        }
        Ok((ending, frame.values))
    }

    /// A continued run's starting point: the step index checked, the earlier outputs set, and
    /// a note saying where and why the run continues.
    fn carry_over(&self, frame: &mut Execution<'_>, at: &ContinueAt) -> Result<usize, Halt> {
        let steps = frame.capability.steps.len();
        if at.step_index > steps {
            return Err(Stop::new(
                FailureCode::Internal,
                format!(
                    "cannot continue at step index {}: {} has {steps} step(s)",
                    at.step_index, frame.reference
                ),
            )
            .into());
        }
        for (name, value) in &at.outputs {
            if frame.capability.output(name).is_some()
                && let Ok(name) = Identifier::parse(name)
            {
                frame.values.set_output(name, value.clone());
            }
        }
        let step = frame
            .capability
            .steps
            .get(at.step_index)
            .map_or_else(|| "checkpoint".to_owned(), |step| step.id.to_string());
        self.note(
            "continuing on the current screen",
            [
                ("step_index", Value::from(at.step_index as u64)),
                ("step", Value::from(step)),
                (
                    "carried_outputs",
                    Value::from(
                        frame
                            .values
                            .outputs()
                            .keys()
                            .map(|name| Value::from(name.as_str()))
                            .collect::<Vec<_>>(),
                    ),
                ),
                ("reason", Value::from(at.reason.clone())),
            ],
        )?;
        Ok(at.step_index)
    }

    /// Prepares a capability for execution: narrowed policy, budget, validated inputs, and the
    /// irreversible gate. Shared by the run and its `run_capability` remedies; `remedy` is the
    /// remedy run's number in this run (its decision ids read `dec-r<n>-…`, so they never repeat
    /// the parent's in the shared trace).
    pub(crate) fn open_frame<'c>(
        &self,
        prepared: &'c PreparedCapability,
        inputs: &BTreeMap<String, Value>,
        allow_irreversible: bool,
        remedy: Option<u32>,
    ) -> Result<Execution<'c>, Halt> {
        let capability = &prepared.capability;
        let mut engine = self.policy.for_capability(capability).map_err(|error| {
            Halt::Fatal(ReplayError::Policy {
                reference: Box::new(capability.reference()),
                reason: error.to_string(),
            })
        })?;
        if let Some(number) = remedy {
            engine = engine.with_decision_namespace(&format!("r{number}"));
        }
        let budget = engine.run_budget(capability);
        budget
            .check_steps(capability.steps.len())
            .map_err(|exceeded| Stop::new(FailureCode::PolicyDenied, exceeded.to_string()))?;
        let values = validate_inputs(capability, inputs).map_err(|problems| {
            let message = problems
                .iter()
                .map(|problem| problem.message.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            Stop::new(FailureCode::InputValidationFailed, message)
                .expected("inputs that satisfy every input spec of the capability")
        })?;
        let routes = crate::route::plan_steps(capability)?;
        let entry_route = crate::route::plan_action(
            capability,
            &cua_artifact::Action::Navigate {
                url: capability.entrypoint.url.clone(),
            },
            "the entrypoint",
        )?;
        let grant = cua_policy::IrreversibleGrant::for_prepared(prepared, allow_irreversible);
        engine
            .preflight_irreversible(capability, &grant)
            .map_err(|reason| {
                Stop::new(
                    FailureCode::PolicyDenied,
                    format!(
                        "{} has irreversible steps and may not run: {reason}",
                        capability.reference()
                    ),
                )
            })?;
        Ok(Execution {
            capability,
            reference: capability.reference(),
            remedy: remedy.is_some(),
            engine,
            grant,
            budget,
            values,
            started: self.clock.elapsed(),
            attempts: BTreeMap::new(),
            allow_irreversible,
            routes,
            entry_route,
            observations: BTreeMap::new(),
        })
    }

    /// Navigates to the entrypoint through the chokepoint and lets it settle.
    async fn enter(&self, frame: &Execution<'_>, tally: &mut RunState) -> Result<(), Halt> {
        let url = self
            .bind_url(frame, &frame.capability.entrypoint.url)
            .map_err(Halt::from)?;
        let dispatched = self
            .chokepoint(
                frame,
                tally,
                None,
                SurfaceAction::Browser(BrowserAction::Navigate { url: url.clone() }),
                None,
                None,
            )
            .await
            .map_err(|failure| failure.into_halt())?;
        if !dispatched.receipt.ok {
            // The application did not answer: a dead target, not a refusal.
            return Err(Stop::new(
                FailureCode::SurfaceUnavailable,
                format!(
                    "the entrypoint {url} could not be loaded: {}",
                    dispatched.receipt.message
                ),
            )
            .into());
        }
        let (settled, landed) = self
            .settle_screen(tally, None, self.config.entry_settle)
            .await?;
        self.record(tally, "entrypoint", &landed)?;
        self.check_landing(frame, &landed, "the entrypoint")?;
        if settled {
            tally.fresh = Some(landed);
        }
        let verdict_reason = if settled {
            "navigation receipt; the first step's classification checks where it landed".to_owned()
        } else {
            "navigation receipt; the page did not settle in time, the first step's classification checks it"
                .to_owned()
        };
        let route = crate::route::settled_walk(
            &frame.entry_route,
            true,
            EffectVerdict::Unverifiable,
            &verdict_reason,
        );
        // The run record names the entrypoint's step and route from this event, as stdout does.
        self.bus.emit(
            Actor::Automation,
            tally.epoch,
            cua_evidence::Effect {
                step: entrypoint_id(),
                verdict: EffectVerdict::Unverifiable,
                reason: verdict_reason.clone(),
                decision_id: Some(dispatched.decision_id.clone()),
                route: Some(route.clone()),
                undispatched: None,
                screenshot_ref: None,
                screenshot_digest: None,
            },
        )?;
        tally.steps.push(StepReport {
            capability: None,
            step: entrypoint_id().to_string(),
            index: 0,
            action: cua_artifact::ActionKind::Navigate,
            actor: Actor::Automation,
            observation: cua_artifact::ObservationClass::Expected,
            resolution: None,
            dispatched: true,
            decision_id: Some(dispatched.decision_id),
            verdict: EffectVerdict::Unverifiable,
            verdict_reason,
            risk: dispatched.risk,
            route: Some(route),
        });
        Ok(())
    }

    /// Writes a refusal of the document itself to the evidence and closes the run.
    fn refuse(&self, tally: &RunState, refusal: &ReplayError) -> Result<(), ReplayError> {
        let reason = refusal.to_string();
        self.bus.emit(
            Actor::System,
            0,
            Note {
                note: "refused before the first action".to_owned(),
                data: BTreeMap::from([("reason".to_owned(), Value::from(reason.clone()))]),
            },
        )?;
        self.bus.emit(
            Actor::Automation,
            tally.epoch,
            RunEnd {
                failure_code: Some(FailureCode::PolicyDenied),
                reason: Some(reason),
                effect: Some(EffectVerdict::NotApplicable),
                steps_executed: Some(0),
                ..RunEnd::with_status(RunStatus::Failed)
            },
        )?;
        self.bus.finish()?;
        Ok(())
    }

    /// Turns the ending into the terminal status: escalation by the artifact's triggers,
    /// failure capture, `escalate` and `run_end`, and the run record.
    async fn conclude(
        &self,
        request: &RunRequest,
        mut tally: RunState,
        ending: ExecutionEnd,
        values: &RunValues,
        started: Duration,
    ) -> Result<ReplayReport, ReplayError> {
        let capability = &request.capability.capability;
        let outputs: BTreeMap<String, Value> = values
            .outputs()
            .iter()
            .filter(|(name, _)| capability.output(name.as_str()).is_some())
            .map(|(name, value)| (name.to_string(), Value::from(value.clone())))
            .collect();
        let top_steps: Vec<&StepReport> = tally
            .steps
            .iter()
            .filter(|step| step.capability.is_none() && step.step != "entrypoint")
            .collect();
        let steps_executed = u32::try_from(
            top_steps
                .iter()
                .map(|step| step.index)
                .collect::<BTreeSet<_>>()
                .len(),
        )
        .unwrap_or(u32::MAX);
        let steps_total = u32::try_from(capability.steps.len()).unwrap_or(u32::MAX);
        let ending = self.outcome_after_mutation(&tally, ending);
        let effect = run_verdict(
            tally
                .steps
                .iter()
                .filter(|step| step.risk > RiskTier::Safe)
                .map(|step| &step.verdict),
        );
        let mut result = RunResult {
            status: RunStatus::Success,
            capability: Some(capability.reference()),
            run_id: self.bus.run_id().to_string(),
            outputs: outputs.clone(),
            outcome: None,
            error: None,
            intervention: None,
            steps_executed,
            steps_total,
            duration_ms: 0,
            drift_score: drift_score(&tally.steps),
            strategy_mix: strategy_mix(&tally.steps),
            recovery_attempts: tally.recovery_attempts,
            evidence_ref: self.bus.dir().display().to_string(),
        };
        let mut end = RunEnd {
            outputs,
            effect: Some(effect),
            steps_executed: Some(steps_executed),
            steps_total: Some(steps_total),
            ..RunEnd::with_status(RunStatus::Success)
        };
        match ending {
            ExecutionEnd::Success => {}
            ExecutionEnd::Outcome(outcome) => {
                result.status = RunStatus::BusinessOutcome;
                end.status = RunStatus::BusinessOutcome;
                end.outcome = Some(outcome.code.clone());
                end.outcome_data = outcome.data.clone();
                result.outcome = Some(outcome);
            }
            ExecutionEnd::Stopped(mut stop) => {
                // A run that handed a mutation over and then stopped has changed the world:
                // "failed" would read as "nothing happened", so it goes to a person, named.
                let mutated = self.mutation_summary(&tally);
                if let Some(summary) = &mutated {
                    stop.message = format!("{}; {summary}", stop.message);
                }
                // An ambiguous screen is escalated wherever an unexpected one is.
                let trigger = |code: FailureCode| capability.escalation.triggers.contains(&code);
                let escalates = mutated.is_some()
                    || (capability.escalation.policy == EscalationPolicy::PauseAndRequestHuman
                        && (trigger(stop.code)
                            || (stop.code == FailureCode::AmbiguousScreen
                                && trigger(FailureCode::UnexpectedState))));
                let status = if escalates {
                    RunStatus::NeedsHuman
                } else {
                    RunStatus::Failed
                };
                if escalates && let Some(intervention) = tally.open_intervention.take() {
                    // Supervised: the intervention was opened and `escalate` emitted already.
                    result.intervention = Some(cua_artifact::InterventionRef {
                        intervention_id: intervention,
                        reason: self.bus.redactor().redact_text(&stop.message),
                        step_id: stop.step.clone(),
                        step_index: stop.step_index,
                        outputs_so_far: result.outputs.clone(),
                    });
                    result.status = status;
                    result.error = Some(redacted_detail(self.bus, &stop));
                    end.status = status;
                    end.failure_code = Some(stop.code);
                    end.reason = Some(stop.message.clone());
                    end.step = stop.step.clone();
                    let detail = stop.detail();
                    end.expected = detail.expected;
                    end.observed = detail.observed;
                    result.duration_ms = millis(self.clock.elapsed().saturating_sub(started));
                    self.bus.emit(Actor::Automation, tally.epoch, end)?;
                    self.bus.finish()?;
                    return Ok(ReplayReport {
                        result,
                        effect,
                        steps: tally.steps,
                        dispatches: tally.dispatches,
                        evidence_dir: self.bus.dir().to_path_buf(),
                    });
                }
                let screenshot = self.capture_failure(&mut tally, &stop).await?;
                let mut escalate = Escalate {
                    step: stop.step.clone(),
                    step_index: stop.step_index,
                    status: Some(status),
                    failure_code: Some(stop.code),
                    reason: stop.message.clone(),
                    intervention: None,
                    snapshot_ref: tally.last_snapshot_ref.clone(),
                    screenshot_ref: screenshot.as_ref().map(|shot| shot.path.clone()),
                    screenshot_digest: screenshot.as_ref().map(|shot| shot.digest.clone()),
                };
                if escalates {
                    let intervention = self.escalations.escalate(&EscalationRequest {
                        run_id: self.bus.run_id().to_string(),
                        capability: capability.reference(),
                        failure_code: stop.code,
                        reason: self.bus.redactor().redact_text(&stop.message),
                        step: stop.step.clone(),
                        step_index: stop.step_index,
                        snapshot_ref: escalate.snapshot_ref.clone(),
                        screenshot_ref: escalate.screenshot_ref.clone(),
                    });
                    escalate.intervention = Some(intervention.clone());
                    result.intervention = Some(cua_artifact::InterventionRef {
                        intervention_id: intervention,
                        reason: self.bus.redactor().redact_text(&stop.message),
                        step_id: stop.step.clone(),
                        step_index: stop.step_index,
                        outputs_so_far: result.outputs.clone(),
                    });
                }
                self.bus.emit(Actor::System, tally.epoch, escalate)?;
                result.status = status;
                result.error = Some(redacted_detail(self.bus, &stop));
                end.status = status;
                end.failure_code = Some(stop.code);
                end.reason = Some(stop.message.clone());
                end.step = stop.step.clone();
                let detail = stop.detail();
                end.expected = detail.expected;
                end.observed = detail.observed;
            }
        }
        result.duration_ms = millis(self.clock.elapsed().saturating_sub(started));
        self.bus.emit(Actor::Automation, tally.epoch, end)?;
        self.bus.finish()?;
        Ok(ReplayReport {
            result,
            effect,
            steps: tally.steps,
            dispatches: tally.dispatches,
            evidence_dir: self.bus.dir().to_path_buf(),
        })
    }

    /// A business outcome says "this is the answer, and (for a refusal) nothing happened". After
    /// this run handed a mutation over, the screen that shows the outcome could as well be the
    /// mutation's result quoting it (a heading, a help text), so the outcome stands only when
    /// every handed-over mutation's screen was left unchanged by it (`suspected_noop`);
    /// otherwise the screen is ambiguous and the run stops, naming the mutation.
    fn outcome_after_mutation(&self, tally: &RunState, ending: ExecutionEnd) -> ExecutionEnd {
        let ExecutionEnd::Outcome(outcome) = &ending else {
            return ending;
        };
        let changed: Vec<String> = tally
            .intents
            .iter()
            .filter(|(_, decision)| {
                !tally.steps.iter().any(|report| {
                    report.decision_id.as_deref() == Some(decision.as_str())
                        && report.verdict == EffectVerdict::SuspectedNoop
                })
            })
            .map(|(step, _)| format!("`{}`", step.as_ref().map_or("-", StepId::as_str)))
            .collect();
        if changed.is_empty() {
            return ending;
        }
        ExecutionEnd::Stopped(Box::new(
            Stop::new(
                FailureCode::AmbiguousScreen,
                format!(
                    "the outcome `{}` was detected after the mutation(s) {} were handed over and changed the screen; \
                     an outcome cannot say nothing happened once something may have",
                    outcome.code,
                    changed.join(", ")
                ),
            )
            .expected("an outcome only before any mutation, or after one that left the screen unchanged"),
        ))
    }

    /// What a stopped run mutated, for its reason: each handed-over mutation's step and whether
    /// its effect was confirmed or is in doubt, and where the evidence is. `None` when the run
    /// handed no mutation over.
    fn mutation_summary(&self, tally: &RunState) -> Option<String> {
        if tally.intents.is_empty() {
            return None;
        }
        let described: Vec<String> = tally
            .intents
            .iter()
            .map(|(step, decision)| {
                let confirmed = tally.steps.iter().any(|report| {
                    report.decision_id.as_deref() == Some(decision.as_str())
                        && report.verdict == EffectVerdict::Confirmed
                });
                format!(
                    "`{}` ({})",
                    step.as_ref().map_or("-", StepId::as_str),
                    if confirmed { "confirmed" } else { "in doubt" }
                )
            })
            .collect();
        Some(format!(
            "the run had already dispatched the mutation(s) {} (evidence: {}), so a person must \
             check the application's state before anything is run again",
            described.join(", "),
            self.bus.dir().display()
        ))
    }

    /// A redacted screenshot of the failure, best effort: painted over are the nodes a secret
    /// or sensitive value was typed into and every node whose text the redactor would change.
    pub(crate) async fn capture_failure(
        &self,
        tally: &mut RunState,
        stop: &Stop,
    ) -> Result<Option<cua_evidence::ArtifactRef>, ReplayError> {
        // Only a run that has seen the surface captures it, and never once the session belongs
        // to someone else or the surface is gone.
        if self.config.screenshots == cua_artifact::Screenshots::Never
            || tally.last_snapshot.is_none()
            || matches!(
                stop.code,
                FailureCode::SurfaceUnavailable | FailureCode::LeaseLost
            )
        {
            return Ok(None);
        }
        let Some((written, redacted_regions)) = self
            .capture(
                tally,
                &format!("failure-{}", stop.code.as_str()),
                "failure capture",
            )
            .await?
        else {
            return Ok(None);
        };
        self.note(
            &format!("failure capture: {}", stop.code.as_str()),
            [
                ("screenshot_ref", Value::from(written.path.clone())),
                ("screenshot_digest", Value::from(written.digest.clone())),
                ("redacted_regions", Value::from(redacted_regions)),
            ],
        )?;
        Ok(Some(written))
    }

    /// A screenshot of the last screen of the step at `position`, when the policy keeps one of
    /// every dispatched step; the step's `effect` names it.
    ///
    /// A sensitive output is painted over only once it has been read (the redactor then knows
    /// its value), yet the screen may show it a step earlier. So while `capability` declares a
    /// sensitive output this run has not read, no step screenshot is taken: a note says why.
    pub(crate) async fn capture_step(
        &self,
        tally: &mut RunState,
        capability: &cua_artifact::Capability,
        values: &crate::values::RunValues,
        position: &crate::stop::Position,
    ) -> Result<(), ReplayError> {
        tally.step_screenshot = None;
        if self.config.screenshots != cua_artifact::Screenshots::EveryDispatchedStep {
            return Ok(());
        }
        let mut unread: BTreeSet<&str> = capability
            .outputs
            .iter()
            .filter(|output| output.sensitive && !values.outputs().contains_key(&output.name))
            .map(|output| output.name.as_str())
            .collect();
        unread.extend(tally.unread_sensitive.iter().map(String::as_str));
        if !unread.is_empty() {
            self.note(
                "step capture: screenshot withheld",
                [(
                    "reason",
                    Value::from(format!(
                        "the sensitive output(s) {} may be on screen before they are read and \
                         painted over",
                        unread.into_iter().collect::<Vec<_>>().join(", ")
                    )),
                )],
            )?;
            return Ok(());
        }
        tally.step_screenshot = self
            .capture(tally, &format!("step-{}", position.id), "step capture")
            .await?
            .map(|(written, _)| written);
        Ok(())
    }

    /// A screenshot of the screen now, written as `label`, best effort: painted over are the
    /// nodes a secret or sensitive value was typed into and every node whose text the redactor
    /// would change. A capture that fails, or that still carries a registered secret, is a
    /// note (`<what>: …`) and no screenshot; only evidence that cannot be written is an error.
    async fn capture(
        &self,
        tally: &RunState,
        label: &str,
        what: &str,
    ) -> Result<Option<(cua_evidence::ArtifactRef, usize)>, ReplayError> {
        let regions = self.sensitive_regions(tally);
        let shot = match self
            .driver
            .screenshot(ScreenshotRequest {
                redact_regions: regions,
            })
            .await
        {
            Ok(shot) => shot,
            Err(error) => {
                self.note(
                    &format!("{what}: no screenshot"),
                    [("reason", Value::from(error.to_string()))],
                )?;
                return Ok(None);
            }
        };
        match self.bus.write_screenshot(label, &shot.bytes) {
            Ok(written) => Ok(Some((written, shot.redacted_regions))),
            Err(cua_evidence::EvidenceError::SecretInScreenshot { .. }) => {
                self.note(
                    &format!("{what}: screenshot withheld"),
                    [("reason", Value::from("it carried a registered secret"))],
                )?;
                Ok(None)
            }
            Err(error) => Err(error.into()),
        }
    }

    /// The boxes of the last snapshot's nodes that hold a secret or a sensitive value, to be
    /// painted over before any screenshot.
    pub(crate) fn sensitive_regions(&self, tally: &RunState) -> Vec<cua_snapshot::Bounds> {
        let redactor = self.bus.redactor();
        tally
            .last_snapshot
            .as_ref()
            .map(|snapshot| {
                snapshot
                    .nodes
                    .iter()
                    .filter(|node| {
                        tally.sensitive_nodes.contains(&node.id)
                            || !redactor.is_clean(&node.name)
                            || node
                                .value
                                .as_deref()
                                .is_some_and(|value| !redactor.is_clean(value))
                    })
                    .filter_map(|node| node.bounds)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Emits a `note` as the system.
    pub(crate) fn note<const N: usize>(
        &self,
        note: &str,
        data: [(&str, Value); N],
    ) -> Result<(), cua_evidence::EvidenceError> {
        self.bus
            .emit(
                Actor::System,
                0,
                Note {
                    note: note.to_owned(),
                    data: data
                        .into_iter()
                        .map(|(key, value)| (key.to_owned(), value))
                        .collect(),
                },
            )
            .map(drop)
    }

    /// The lease as it is now.
    pub(crate) fn current_lease(&self) -> Lease {
        *self.lease.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The failure detail the caller sees, passed through the redactor like every sink.
fn redacted_detail(bus: &EvidenceBus, stop: &Stop) -> cua_artifact::FailureDetail {
    let redactor = bus.redactor();
    let mut detail = stop.detail();
    detail.message = redactor.redact_text(&detail.message);
    detail.expected = detail.expected.map(|text| redactor.redact_text(&text));
    detail.observed = detail.observed.map(|text| redactor.redact_text(&text));
    if let Some(resolution) = &mut detail.resolution {
        resolution.candidate_summaries = resolution
            .candidate_summaries
            .iter()
            .map(|summary| redactor.redact_text(summary))
            .collect();
    }
    detail
}

/// Drifted resolutions over resolutions, over every step that resolved a target.
fn drift_score(steps: &[StepReport]) -> f64 {
    let resolutions: Vec<_> = steps
        .iter()
        .filter_map(|step| step.resolution.as_ref())
        .collect();
    if resolutions.is_empty() {
        return 0.0;
    }
    let drifted = resolutions
        .iter()
        .filter(|resolution| resolution.drifted)
        .count();
    drifted as f64 / resolutions.len() as f64
}

/// How many resolutions each rung decided.
fn strategy_mix(steps: &[StepReport]) -> BTreeMap<ResolutionStrategy, u32> {
    let mut mix = BTreeMap::new();
    for resolution in steps.iter().filter_map(|step| step.resolution.as_ref()) {
        *mix.entry(resolution.strategy).or_insert(0) += 1;
    }
    mix
}

/// A JSON input's text, as the redactor should know it.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A binding in words, for the run record: whose it is, which vars it substitutes and which
/// steps it overrides.
fn describe_binding(binding: &cua_artifact::TenantBinding) -> String {
    let vars: Vec<&str> = binding.vars.keys().map(|name| name.as_str()).collect();
    let mut text = format!("the binding of tenant {}", binding.tenant);
    if !vars.is_empty() {
        text.push_str(&format!(", vars {}", vars.join(", ")));
    }
    if !binding.overrides.is_empty() {
        let steps: Vec<&str> = binding.overrides.keys().map(|step| step.as_str()).collect();
        text.push_str(&format!(", overriding steps {}", steps.join(", ")));
    }
    if binding.policy.is_some()
        || !binding.recovery_extra.is_empty()
        || binding.checkpoint.is_some()
    {
        text.push_str(", and more (policy, recovery or checkpoint)");
    }
    text
}

pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The step id the entrypoint's navigation is reported under.
pub(crate) fn entrypoint_id() -> StepId {
    StepId::parse("entrypoint").expect("`entrypoint` is a valid identifier")
}

/// The step id the checkpoint is reported under.
pub(crate) fn checkpoint_id() -> StepId {
    StepId::parse("checkpoint").expect("`checkpoint` is a valid identifier")
}
