//! What every replay test needs: the repository's policy and capabilities, an evidence root,
//! and a harness that wires a `Replayer` around any surface.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use cua_artifact::{Actor, Capability, CapabilityApproval, PolicyConfig, TenantBinding};
use cua_evidence::{EvidenceBus, Redactor, RunId, SecretResolver, SteppingClock, Timestamp};
use cua_policy::{Lease, PolicyEngine};
use cua_replay::{
    CapabilityList, CapabilityLoader, ManualClock, PreparedCapability, RecordedEscalations,
    ReplayConfig, ReplayError, ReplayReport, Replayer, RunRequest,
};
use cua_surface::SurfaceDriver;
use serde_json::Value;

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The repository's policy file.
pub(crate) fn policy_config() -> PolicyConfig {
    let text = std::fs::read_to_string(root().join("config/policy.yaml")).unwrap();
    PolicyConfig::from_yaml(&text).unwrap()
}

/// A sealed capability from the catalog, by file stem (`corebank.member.savings_balance@1.0.0`).
pub(crate) fn capability(reference: &str) -> Capability {
    let text =
        std::fs::read_to_string(root().join(format!("capabilities/{reference}.yaml"))).unwrap();
    Capability::from_yaml(&text).unwrap()
}

/// A tenant's binding of a capability id.
pub(crate) fn binding(tenant: &str, id: &str) -> TenantBinding {
    let text = std::fs::read_to_string(root().join(format!("tenants/{tenant}/{id}.yaml"))).unwrap();
    TenantBinding::from_yaml(&text).unwrap()
}

/// A catalog capability bound to `base_url` (and a tenant's overlay).
pub(crate) fn prepared(
    reference: &str,
    tenant: Option<&str>,
    base_url: &str,
    approval: Option<CapabilityApproval>,
) -> PreparedCapability {
    let base = capability(reference);
    let binding = tenant.map(|tenant| binding(tenant, base.id.as_str()));
    PreparedCapability::bind(base, binding, Some(base_url), approval).unwrap()
}

/// Inputs from pairs.
pub(crate) fn inputs(pairs: &[(&str, &str)]) -> BTreeMap<String, Value> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), Value::from(*value)))
        .collect()
}

/// Everything a `Replayer` borrows, owned.
pub(crate) struct Harness {
    pub(crate) policy: PolicyEngine,
    pub(crate) policy_config: PolicyConfig,
    pub(crate) evidence: tempfile::TempDir,
    pub(crate) secrets: BTreeMap<String, String>,
    pub(crate) loader: Box<dyn CapabilityLoader>,
    pub(crate) escalations: RecordedEscalations,
    pub(crate) lease: Arc<Mutex<Lease>>,
    pub(crate) config: ReplayConfig,
    runs: AtomicU32,
}

impl Harness {
    /// The repository's policy, the operator's credentials as secrets, no remedies.
    pub(crate) fn new() -> Self {
        let policy_config = policy_config();
        Self {
            policy: PolicyEngine::from_config(&policy_config).unwrap(),
            policy_config,
            // `CUA_TEST_KEEP_EVIDENCE=1` keeps every run directory for inspection.
            evidence: tempfile::Builder::new()
                .prefix("cua-replay-evidence-")
                .disable_cleanup(std::env::var_os("CUA_TEST_KEEP_EVIDENCE").is_some())
                .tempdir()
                .unwrap(),
            secrets: BTreeMap::from([
                (
                    "CUA_SECRET_COREBANK_OPERATOR_ID".to_owned(),
                    memberdesk::OPERATOR_ID.to_owned(),
                ),
                (
                    "CUA_SECRET_COREBANK_OPERATOR_PASSWORD".to_owned(),
                    memberdesk::OPERATOR_PASSWORD.to_owned(),
                ),
            ]),
            loader: Box::new(CapabilityList::default()),
            escalations: RecordedEscalations::new(),
            lease: Arc::new(Mutex::new(Lease::new(Actor::Automation))),
            config: ReplayConfig {
                backoff_base: std::time::Duration::from_millis(20),
                ..ReplayConfig::default()
            },
            runs: AtomicU32::new(0),
        }
    }

    /// Runs one replay with a fresh bus (`run-N`) whose trace times step deterministically.
    pub(crate) async fn run<D: SurfaceDriver>(
        &self,
        driver: &D,
        request: RunRequest,
    ) -> (Result<ReplayReport, ReplayError>, PathBuf) {
        // Manual time: backoff returns at once, so decisions never depend on machine speed.
        self.run_with_clock(driver, request, &ManualClock::new())
            .await
    }

    /// [`Harness::run`] on a clock the caller holds.
    pub(crate) async fn run_with_clock<D: SurfaceDriver>(
        &self,
        driver: &D,
        request: RunRequest,
        clock: &dyn cua_replay::RunClock,
    ) -> (Result<ReplayReport, ReplayError>, PathBuf) {
        let number = self.runs.fetch_add(1, Ordering::Relaxed) + 1;
        let run_id = RunId::parse(&format!("run-{number}")).unwrap();
        let redactor = Redactor::from_policy(&self.policy_config.redaction).unwrap();
        let bus = EvidenceBus::create(
            self.evidence.path(),
            run_id,
            Arc::new(SteppingClock::new(Timestamp::UNIX_EPOCH, 1_000)),
            redactor.clone(),
        )
        .unwrap();
        let secrets = SecretResolver::new("CUA_SECRET_", self.secrets.clone(), redactor);
        let replayer = Replayer {
            driver,
            policy: &self.policy,
            bus: &bus,
            clock,
            secrets: &secrets,
            capabilities: self.loader.as_ref(),
            escalations: &self.escalations,
            lease: Arc::clone(&self.lease),
            config: self.config.clone(),
        };
        let result = replayer.run(request).await;
        (result, bus.dir().to_path_buf())
    }
}

/// The events of a run's trace, by name, in order.
pub(crate) fn events(run_dir: &Path) -> Vec<String> {
    cua_evidence::read_trace(run_dir)
        .unwrap()
        .into_iter()
        .map(|line| line.event.name().to_owned())
        .collect()
}
