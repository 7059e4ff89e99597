//! What the demo's stages share: the demo directory, the policy, the two in-process fixtures
//! and their browsers, the model, what earlier stages produced, and one replay wired the way
//! `cua replay` wires it (the catalog's sign-on for `run_capability` remedies, the process
//! environment's secrets with the fixture's operator on top, a fresh evidence directory).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cua_artifact::{Actor, Capability, SecretName};
use cua_chromium::{ChromiumConfig, ChromiumSurface, LaunchError};
use cua_evidence::{Event, EvidenceBus, Redactor, RunId, SecretResolver, SystemClock};
use cua_policy::Lease;
use cua_replay::{
    CapabilityList, EscalationSink, PreparedCapability, RecordedEscalations, ReplayConfig,
    ReplayReport, Replayer, RunRequest, TokioClock,
};
use memberdesk::RunningFixture;
use serde_json::Value;

use crate::commands::discover::Model;
use crate::commands::policy::LoadedPolicy;
use crate::error::chain;

/// The sign-on capability every `session_expired` remedy names.
pub(super) const SIGN_ON: &str = "corebank.auth.sign_on@1.0.0";

/// Why a stage does not hold.
#[derive(Debug)]
pub(super) enum StageFailure {
    /// The fact does not hold, or something the stage needed broke.
    Failed(String),
    /// The browser cannot run: the demo stops here with exit 69.
    Unavailable(String),
}

/// A stage's result: the fact that proves it, or why not.
pub(super) type StageResult = Result<String, StageFailure>;

/// Fails the stage with `reason` unless `holds`.
pub(super) fn expect(holds: bool, reason: impl FnOnce() -> String) -> Result<(), StageFailure> {
    if holds {
        Ok(())
    } else {
        Err(StageFailure::Failed(reason()))
    }
}

/// Shorthand for a failed stage.
pub(super) fn failed(reason: impl Into<String>) -> StageFailure {
    StageFailure::Failed(reason.into())
}

/// One tenant's application and the browser that drives it. Each tenant has its own browser
/// profile, so their sessions never mix. The browser is shared so that the console's broker can
/// hold the same live session the replays drive.
pub(super) struct Tenant {
    pub(super) fixture: RunningFixture,
    pub(super) surface: Option<Arc<ChromiumSurface>>,
}

/// The discovered draft as stage 3 left it: sealed as compiled.
pub(super) struct Draft {
    pub(super) capability: Capability,
}

/// Everything the stages share.
pub(super) struct Demo {
    /// The demo directory; everything the demo writes is under it.
    pub(super) out: PathBuf,
    /// The reference catalog (read only).
    pub(super) catalog: PathBuf,
    pub(super) tenants: PathBuf,
    pub(super) policy_path: PathBuf,
    pub(super) policy: LoadedPolicy,
    pub(super) first_valley: Option<Tenant>,
    pub(super) northgate: Option<Tenant>,
    pub(super) model: Option<Model>,
    /// Requests the scripted model had answered when discovery ended.
    pub(super) model_requests_after_discovery: Option<usize>,
    pub(super) discovery_run: Option<PathBuf>,
    pub(super) draft: Option<Draft>,
    /// The reviewed, sealed capability in the demo catalog.
    pub(super) reviewed: Option<Capability>,
}

impl Demo {
    pub(super) fn new(
        out: PathBuf,
        catalog: PathBuf,
        tenants: PathBuf,
        policy_path: PathBuf,
        policy: LoadedPolicy,
    ) -> Self {
        Self {
            out,
            catalog,
            tenants,
            policy_path,
            policy,
            first_valley: None,
            northgate: None,
            model: None,
            model_requests_after_discovery: None,
            discovery_run: None,
            draft: None,
            reviewed: None,
        }
    }

    /// Where the demo catalog lives: the reviewed capability, copies of the reference
    /// capabilities it approves, and their approvals.
    pub(super) fn demo_catalog(&self) -> PathBuf {
        self.out.join("catalog")
    }

    /// Where replays write their run directories.
    pub(super) fn runs_dir(&self) -> PathBuf {
        self.out.join("runs")
    }

    /// The first-valley tenant with its browser, or why the stage cannot go on.
    pub(super) fn first_valley(&self) -> Result<(&RunningFixture, &ChromiumSurface), StageFailure> {
        tenant_parts(self.first_valley.as_ref(), "first-valley")
    }

    /// The first-valley tenant with its browser as the shared live session.
    pub(super) fn first_valley_live(
        &self,
    ) -> Result<(&RunningFixture, Arc<ChromiumSurface>), StageFailure> {
        let (fixture, _) = self.first_valley()?;
        let surface = self
            .first_valley
            .as_ref()
            .and_then(|tenant| tenant.surface.clone())
            .ok_or_else(|| failed("no browser drives the first-valley fixture"))?;
        Ok((fixture, surface))
    }

    /// Launches Debian's Chromium under the policy's allowlist; a missing browser stops the
    /// demo (exit 69) naming the install step.
    pub(super) async fn launch_browser(&self) -> Result<ChromiumSurface, StageFailure> {
        ChromiumSurface::launch(ChromiumConfig::from_env(
            self.policy.engine.allowlist().clone(),
        ))
        .await
        .map_err(|error| match error {
            LaunchError::ChromiumMissing { .. } => StageFailure::Unavailable(error.to_string()),
            other => StageFailure::Unavailable(format!(
                "{other}; the demo drives Debian's Chromium (apt-get install -y chromium)"
            )),
        })
    }

    /// A reference capability from the read-only catalog.
    pub(super) fn reference(&self, reference: &str) -> Result<Capability, StageFailure> {
        let path = self.catalog.join(format!("{reference}.yaml"));
        cua_fs::read_to_string_bounded(&path, crate::limits::DOCUMENT)
            .map_err(|error| error.to_string())
            .and_then(|text| Capability::from_yaml(&text).map_err(|error| error.to_string()))
            .map_err(|error| failed(format!("{}: {error}", path.display())))
    }

    /// Replays `request` on `surface` into `<out>/runs/<run_id>`. `run_capability` remedies
    /// find the catalog's sign-on bound to `base_url`; secrets come from the environment with
    /// the fixture's operator on top. An escalation is recorded and ends the run.
    pub(super) async fn replay(
        &self,
        surface: &ChromiumSurface,
        base_url: &str,
        run_id: &str,
        request: RunRequest,
    ) -> Result<ReplayReport, StageFailure> {
        let bus = self.evidence_bus(run_id)?;
        let escalations = RecordedEscalations::new();
        self.replay_on(
            Supervision {
                surface,
                bus: &bus,
                escalations: &escalations,
                lease: Arc::new(Mutex::new(Lease::new(Actor::Automation))),
            },
            base_url,
            run_id,
            request,
        )
        .await
    }

    /// A fresh evidence bus for `<out>/runs/<run_id>`, redacting by the policy's rules.
    pub(super) fn evidence_bus(&self, run_id: &str) -> Result<EvidenceBus, StageFailure> {
        let redactor = Redactor::from_policy(&self.policy.config.redaction)
            .map_err(|error| failed(error.to_string()))?;
        RunId::parse(run_id)
            .and_then(|run_id| {
                EvidenceBus::create(&self.runs_dir(), run_id, Arc::new(SystemClock), redactor)
            })
            .map_err(|error| failed(format!("evidence for {run_id}: {error}")))
    }

    /// Replays `request` wired as `supervision` says: which surface, which bus, who hears an
    /// escalation, and the lease the executor checks at every dispatch.
    pub(super) async fn replay_on(
        &self,
        supervision: Supervision<'_>,
        base_url: &str,
        run_id: &str,
        request: RunRequest,
    ) -> Result<ReplayReport, StageFailure> {
        self.replay_wired(supervision, &Wiring::default(), base_url, run_id, request)
            .await
    }

    /// [`Demo::replay_on`] with more wired in: another policy, the operators, more secrets.
    pub(super) async fn replay_wired(
        &self,
        supervision: Supervision<'_>,
        wiring: &Wiring<'_>,
        base_url: &str,
        run_id: &str,
        request: RunRequest,
    ) -> Result<ReplayReport, StageFailure> {
        let remedies = self.remedies(base_url)?;
        let secrets = wiring.secrets.iter().fold(
            self.secrets(supervision.bus.redactor().clone()),
            |secrets, (name, value)| secrets.with_override(name.clone(), value.clone()),
        );
        let clock = TokioClock::new();
        let replayer = Replayer {
            driver: supervision.surface,
            policy: wiring.policy.unwrap_or(&self.policy.engine),
            bus: supervision.bus,
            clock: &clock,
            secrets: &secrets,
            capabilities: &remedies,
            escalations: supervision.escalations,
            lease: supervision.lease,
            config: ReplayConfig {
                operators: wiring.operators.clone(),
                screenshots: self.policy.config.evidence.screenshots,
                ..ReplayConfig::default()
            },
        };
        replayer
            .run(request)
            .await
            .map_err(|error| failed(format!("replay {run_id} refused: {}", chain(&error))))
    }

    /// The catalog's sign-on bound to `base_url`, for `run_capability` remedies.
    pub(super) fn remedies(&self, base_url: &str) -> Result<CapabilityList, StageFailure> {
        let sign_on =
            PreparedCapability::bind(self.reference(SIGN_ON)?, None, Some(base_url), None)
                .map_err(|error| failed(format!("binding {SIGN_ON}: {error}")))?;
        Ok(CapabilityList::new(vec![sign_on]))
    }

    /// The process environment's secrets with the fixture's operator on top.
    fn secrets(&self, redactor: Redactor) -> SecretResolver {
        fixture_operator().into_iter().fold(
            SecretResolver::new(
                self.policy.config.secrets.env_prefix.clone(),
                cua_evidence::process_environment(),
                redactor,
            ),
            |secrets, (name, value)| secrets.with_override(name, value),
        )
    }

    /// The process environment with the fixture's operator as the policy's secret variables,
    /// for the components that read secrets from an environment (evals, MCP tool calls).
    pub(super) fn environment_with_operator(&self) -> BTreeMap<String, String> {
        let prefix = &self.policy.config.secrets.env_prefix;
        let mut environment = cua_evidence::process_environment();
        for (name, value) in fixture_operator() {
            environment.insert(cua_evidence::env_var(prefix, name.as_str()), value);
        }
        environment
    }
}

/// What a replay is wired with beyond the demo's defaults.
#[derive(Default)]
pub(super) struct Wiring<'a> {
    /// A policy other than the demo's.
    pub(super) policy: Option<&'a cua_policy::PolicyEngine>,
    /// The structured-api and native-cli operators (none by default).
    pub(super) operators: cua_replay::Operators,
    /// Secrets on top of the environment's and the fixture operator's.
    pub(super) secrets: Vec<(SecretName, String)>,
}

/// How one replay is wired to the session it runs on.
pub(super) struct Supervision<'a> {
    pub(super) surface: &'a ChromiumSurface,
    pub(super) bus: &'a EvidenceBus,
    pub(super) escalations: &'a dyn EscalationSink,
    pub(super) lease: Arc<Mutex<Lease>>,
}

/// The fixture's own operator, as the two secrets the sign-on capability types. They are the
/// in-process fixture's published test credentials, not anyone's secret.
pub(super) fn fixture_operator() -> Vec<(SecretName, String)> {
    [
        ("corebank.operator_id", memberdesk::OPERATOR_ID),
        ("corebank.operator_password", memberdesk::OPERATOR_PASSWORD),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((SecretName::parse(name).ok()?, value.to_owned())))
    .collect()
}

/// Inputs from pairs.
pub(super) fn inputs(pairs: &[(&str, &str)]) -> BTreeMap<String, Value> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), Value::from(*value)))
        .collect()
}

/// How many model calls a run's trace records.
pub(super) fn llm_calls(run_dir: &Path) -> Result<usize, StageFailure> {
    let trace = cua_evidence::read_trace(run_dir)
        .map_err(|error| failed(format!("reading {}: {error}", run_dir.display())))?;
    Ok(trace
        .iter()
        .filter(|line| matches!(line.event, Event::LlmCall(_)))
        .count())
}

/// A value as plain text (strings without quotes).
pub(super) fn plain(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => "-".to_owned(),
    }
}

/// The outputs of a run as `name=value`, in the capability's order.
pub(super) fn outputs_line(capability: &Capability, report: &ReplayReport) -> String {
    capability
        .outputs
        .iter()
        .map(|output| {
            format!(
                "{}={}",
                output.name,
                plain(report.result.outputs.get(output.name.as_str()))
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The strategy mix of a run, `semantic_exact 2, structural_anchor 3`.
pub(super) fn strategy_mix(report: &ReplayReport) -> String {
    let mix: Vec<String> = report
        .result
        .strategy_mix
        .iter()
        .map(|(strategy, count)| format!("{} {count}", strategy.as_str()))
        .collect();
    if mix.is_empty() {
        "none".to_owned()
    } else {
        mix.join(", ")
    }
}

/// What a report says in one phrase: `SUCCESS`, `business_outcome member_not_found`, …
pub(super) fn describe(report: &ReplayReport) -> String {
    let result = &report.result;
    match (&result.outcome, &result.error) {
        (Some(outcome), _) => format!("{} {}", result.status.as_str(), outcome.code),
        (None, Some(error)) => format!(
            "{} {}: {}",
            result.status.as_str(),
            error.code.as_str(),
            error.message
        ),
        (None, None) => result.status.as_str().to_owned(),
    }
}

fn tenant_parts<'t>(
    tenant: Option<&'t Tenant>,
    name: &str,
) -> Result<(&'t RunningFixture, &'t ChromiumSurface), StageFailure> {
    let tenant =
        tenant.ok_or_else(|| failed(format!("the {name} fixture is not running (stage 1)")))?;
    let surface = tenant
        .surface
        .as_deref()
        .ok_or_else(|| failed(format!("no browser drives the {name} fixture")))?;
    Ok((&tenant.fixture, surface))
}
