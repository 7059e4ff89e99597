//! The compiled discovery draft is a capability, not a recording: sealed as compiled, it replays
//! in real Chromium for members discovery never saw, and on the northgate-fcu tenant with the
//! overlay it needs (and fails closed there without it).

#![allow(clippy::unwrap_used, reason = "tests unwrap what they just built")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cua_agent::scripted::ScriptedServer;
use cua_agent::{Discovery, DiscoveryConfig, DiscoveryRequest, OpenAiAdapter, StopReason};
use cua_artifact::{
    Actor, Capability, FailureCode, PolicyConfig, ResolutionStrategy, RunStatus, SecretName,
    TenantBinding,
};
use cua_chromium::{ChromiumConfig, ChromiumSurface, LaunchError};
use cua_compile::{CompileConfig, compile, load_run};
use cua_evidence::{EvidenceBus, Redactor, RunId, SecretResolver, SystemClock};
use cua_policy::{Lease, PolicyEngine};
use cua_replay::{
    CapabilityList, PreparedCapability, RecordedEscalations, ReplayConfig, ReplayReport, Replayer,
    RunRequest, TokioClock,
};
use memberdesk::{FixtureConfig, RunningFixture, Variant};
use serde_json::Value;

const GOAL: &str = "Look up member 12345 and report their savings balance, the account status, and the as-of date.";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The repository's policy, its engine and the evidence root every run here writes under.
struct Rig {
    config: PolicyConfig,
    policy: PolicyEngine,
    evidence: tempfile::TempDir,
}

impl Rig {
    fn new() -> Self {
        let config = PolicyConfig::from_yaml(&read(&repo().join("config/policy.yaml"))).unwrap();
        Self {
            policy: PolicyEngine::from_config(&config).unwrap(),
            config,
            evidence: tempfile::tempdir().unwrap(),
        }
    }

    fn redactor(&self) -> Redactor {
        Redactor::from_policy(&self.config.redaction).unwrap()
    }

    /// The fixture's operator as the secrets the sign-on capability types.
    fn secrets(&self, redactor: Redactor) -> SecretResolver {
        SecretResolver::new("CUA_SECRET_", Vec::<(String, String)>::new(), redactor)
            .with_override(
                SecretName::parse("corebank.operator_id").unwrap(),
                memberdesk::OPERATOR_ID,
            )
            .with_override(
                SecretName::parse("corebank.operator_password").unwrap(),
                memberdesk::OPERATOR_PASSWORD,
            )
    }

    async fn launch(&self) -> ChromiumSurface {
        match ChromiumSurface::launch(ChromiumConfig::from_env(self.policy.allowlist().clone()))
            .await
        {
            Ok(surface) => surface,
            Err(error @ LaunchError::ChromiumMissing { .. }) => panic!(
                "this test drives a real browser: {error}. Install it with `apt-get install -y chromium`"
            ),
            Err(error) => panic!("launching Chromium failed: {error}"),
        }
    }

    /// Discovery through the scripted model, signed on by the sign-on capability first.
    async fn discover(&self, surface: &ChromiumSurface, fixture: &RunningFixture) -> PathBuf {
        let server = ScriptedServer::start().await.unwrap();
        let llm = OpenAiAdapter::new(server.model_config()).unwrap();
        let redactor = self.redactor();
        let bus = EvidenceBus::create(
            self.evidence.path(),
            RunId::parse("disc-draft").unwrap(),
            Arc::new(SystemClock),
            redactor.clone(),
        )
        .unwrap();
        let secrets = self.secrets(redactor);
        let discovery = Discovery {
            driver: surface,
            policy: &self.policy,
            bus: &bus,
            llm: &llm,
            secrets: &secrets,
            config: DiscoveryConfig::default(),
        };
        let mut request = DiscoveryRequest::new(GOAL, format!("{}/", fixture.base_url()));
        request.sign_in = Some(sign_on());
        let report = discovery.run(&request).await.unwrap();
        server.shutdown().await;
        assert_eq!(report.stop_reason, StopReason::GoalMet, "{report:#?}");
        bus.dir().to_path_buf()
    }

    async fn replay(
        &self,
        surface: &ChromiumSurface,
        run_id: &str,
        capability: PreparedCapability,
        inputs: BTreeMap<String, Value>,
    ) -> ReplayReport {
        let redactor = self.redactor();
        let bus = EvidenceBus::create(
            self.evidence.path(),
            RunId::parse(run_id).unwrap(),
            Arc::new(SystemClock),
            redactor.clone(),
        )
        .unwrap();
        let secrets = self.secrets(redactor);
        let replayer = Replayer {
            driver: surface,
            policy: &self.policy,
            bus: &bus,
            clock: &TokioClock::new(),
            secrets: &secrets,
            capabilities: &CapabilityList::default(),
            escalations: &RecordedEscalations::new(),
            lease: Arc::new(Mutex::new(Lease::new(Actor::Automation))),
            config: ReplayConfig::default(),
        };
        replayer
            .run(RunRequest::new(capability, inputs))
            .await
            .unwrap_or_else(|error| panic!("replay {run_id} refused: {error}"))
    }
}

fn sign_on() -> Capability {
    Capability::from_yaml(&read(
        &repo().join("capabilities/corebank.auth.sign_on@1.0.0.yaml"),
    ))
    .unwrap()
}

fn member(name: &str, value: &str) -> BTreeMap<String, Value> {
    BTreeMap::from([(name.to_owned(), Value::from(value))])
}

fn outputs(report: &ReplayReport) -> Vec<(String, String)> {
    report
        .result
        .outputs
        .iter()
        .map(|(name, value)| (name.clone(), value.as_str().unwrap_or("?").to_owned()))
        .collect()
}

fn expected(balance: &str, status: &str) -> Vec<(String, String)> {
    [
        ("account_status", status),
        ("as_of", "2026-09-11"),
        ("savings_balance", balance),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compiled_draft_replays_for_unseen_members_and_on_northgate_with_its_overlay() {
    let rig = Rig::new();
    let first_valley = memberdesk::serve(FixtureConfig::loopback(Variant::FirstValley))
        .await
        .unwrap();
    let northgate = memberdesk::serve(FixtureConfig::loopback(Variant::NorthgateFcu))
        .await
        .unwrap();
    let surface = rig.launch().await;

    // Discovery sees member 12345 only; the draft is sealed exactly as compiled.
    let run_dir = rig.discover(&surface, &first_valley).await;
    let compiled = compile(
        &load_run(&run_dir).unwrap(),
        &CompileConfig::new("evidence/discovery/disc-draft/trace.jsonl"),
    )
    .unwrap();
    let draft = compiled.capability.clone().sealed();
    assert!(draft.outcomes.is_empty() && draft.recovery.is_empty());
    let input = draft.inputs[0].name.to_string();
    assert_eq!(input, "member_number");

    // Members discovery never saw, on the same (signed-on) browser.
    let bound = |base_url: &str| {
        PreparedCapability::bind(draft.clone(), None, Some(base_url), None).unwrap()
    };
    for (member_id, balance, status) in
        [("67890", "18730.00", "Active"), ("24680", "0.00", "Closed")]
    {
        let report = rig
            .replay(
                &surface,
                &format!("draft-{member_id}"),
                bound(&first_valley.base_url()),
                member(&input, member_id),
            )
            .await;
        assert_eq!(
            report.result.status,
            RunStatus::Success,
            "{member_id}: {:?} ({})",
            report.result.error,
            report.evidence_dir.display()
        );
        assert_eq!(outputs(&report), expected(balance, status), "{member_id}");
    }
    surface.close().await;

    // Northgate: its own browser, signed on by the sign-on capability.
    let surface = rig.launch().await;
    let sign_on =
        PreparedCapability::bind(sign_on(), None, Some(&northgate.base_url()), None).unwrap();
    let signed_on = rig
        .replay(&surface, "northgate-sign-on", sign_on, BTreeMap::new())
        .await;
    assert_eq!(signed_on.result.status, RunStatus::Success);

    // Without the overlay the draft's labels are not Northgate's: it fails closed.
    let report = rig
        .replay(
            &surface,
            "northgate-draft-bare",
            bound(&northgate.base_url()),
            member(&input, "67890"),
        )
        .await;
    assert_ne!(report.result.status, RunStatus::Success);
    let code = report.result.error.as_ref().map(|error| error.code);
    assert!(
        matches!(
            code,
            Some(FailureCode::UnexpectedState | FailureCode::TargetNotFound)
        ),
        "{:?}",
        report.result.error
    );

    // With the overlay it answers, and the draft's dead CSS hints are never what found a node.
    let binding = TenantBinding::from_yaml(&read(
        &repo().join("tests/it/tenants/northgate-fcu/memberdesk.discovered.savings_balance.yaml"),
    ))
    .unwrap();
    let hints: Vec<String> = draft
        .steps
        .iter()
        .filter_map(|step| step.action.target()?.hints.css.clone())
        .collect();
    assert!(!hints.is_empty(), "the draft records CSS hints");
    let prepared = PreparedCapability::bind(
        draft.clone(),
        Some(binding),
        Some(&northgate.base_url()),
        None,
    )
    .unwrap();
    let report = rig
        .replay(
            &surface,
            "northgate-draft-overlay",
            prepared,
            member(&input, "67890"),
        )
        .await;
    assert_eq!(
        report.result.status,
        RunStatus::Success,
        "{:?} ({})",
        report.result.error,
        report.evidence_dir.display()
    );
    assert_eq!(outputs(&report), expected("18730.00", "Active"));
    assert!(
        !report
            .result
            .strategy_mix
            .contains_key(&ResolutionStrategy::HintCached),
        "{:?}",
        report.result.strategy_mix
    );
    surface.close().await;
    first_valley.shutdown().await.unwrap();
    northgate.shutdown().await.unwrap();
}
