//! A fixture, a browser and a replay harness, and a model that answers one canned tool call.
//! Tests never skip: a missing Chromium fails them with the install step.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use cua_agent::{AgentError, CallMeta, LlmPort, ModelReply, ModelRequest, ToolCall, Usage};
use cua_artifact::{Actor, Capability, PolicyConfig, TenantBinding};
use cua_assist::{AssistOutcome, AssistRequest, Assistant};
use cua_chromium::{ChromiumConfig, ChromiumSurface, LaunchError};
use cua_evidence::{EvidenceBus, Redactor, RunId, SecretResolver, SystemClock};
use cua_policy::{Lease, PolicyEngine};
use cua_replay::{
    CapabilityList, PreparedCapability, RecordedEscalations, ReplayConfig, ReplayReport, Replayer,
    RunRequest, TokioClock,
};
use memberdesk::{FixtureConfig, RunningFixture, Variant};
use serde_json::Value;

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A catalog capability.
pub(crate) fn capability(reference: &str) -> Capability {
    let text =
        std::fs::read_to_string(root().join(format!("capabilities/{reference}.yaml"))).unwrap();
    Capability::from_yaml(&text).unwrap()
}

/// Inputs from pairs.
pub(crate) fn inputs(pairs: &[(&str, &str)]) -> BTreeMap<String, Value> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), Value::from(*value)))
        .collect()
}

/// A model that answers every request with one tool call, and counts the requests.
pub(crate) struct Canned {
    pub(crate) tool: String,
    pub(crate) arguments: Value,
    /// When set, the target is the ref of the cell right of the cell with this label in the
    /// screen the request shows (the only way to name a node by ref without seeing it first).
    pub(crate) beside: Option<String>,
    pub(crate) calls: AtomicU32,
    pub(crate) requests: Mutex<Vec<ModelRequest>>,
}

impl Canned {
    pub(crate) fn new(tool: &str, arguments: Value) -> Self {
        Self {
            tool: tool.to_owned(),
            arguments,
            beside: None,
            calls: AtomicU32::new(0),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// A model that proposes `tool` on the cell beside `label`, by its ref.
    pub(crate) fn beside(tool: &str, label: &str) -> Self {
        Self {
            beside: Some(label.to_owned()),
            ..Self::new(tool, Value::Null)
        }
    }

    pub(crate) fn calls(&self) -> u32 {
        self.calls.load(Ordering::Relaxed)
    }
}

impl LlmPort for Canned {
    fn model(&self) -> &str {
        "canned"
    }

    fn scripted(&self) -> bool {
        true
    }

    fn complete(
        &self,
        request: &ModelRequest,
    ) -> impl Future<Output = Result<ModelReply, AgentError>> + Send {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.requests.lock().unwrap().push(request.clone());
        let arguments = match &self.beside {
            None => self.arguments.clone(),
            Some(label) => {
                let screen = request
                    .messages
                    .iter()
                    .filter_map(|message| match message {
                        cua_agent::Message::User(text) => Some(text.as_str()),
                        _ => None,
                    })
                    .next_back()
                    .unwrap_or_default();
                let marker = format!("cell {label:?} | ");
                let reference = screen
                    .split_once(&marker)
                    .and_then(|(_, after)| after.split(' ').next())
                    .unwrap_or("n0");
                serde_json::json!({ "target": { "ref": reference } })
            }
        };
        let reply = ModelReply {
            content: Some(format!("I propose {}.", self.tool)),
            tool_calls: vec![ToolCall {
                id: "call_1".to_owned(),
                name: self.tool.clone(),
                arguments: arguments.to_string(),
            }],
            usage: Usage::default(),
            meta: CallMeta {
                model: "canned".to_owned(),
                provider: "canned".to_owned(),
                request_id: None,
                latency_ms: 0,
                scripted: true,
            },
        };
        std::future::ready(Ok(reply))
    }
}

/// One fixture, one browser, the repository's policy, an evidence directory.
pub(crate) struct Scene {
    pub(crate) fixture: RunningFixture,
    pub(crate) surface: ChromiumSurface,
    pub(crate) policy_config: PolicyConfig,
    pub(crate) policy: PolicyEngine,
    pub(crate) evidence: tempfile::TempDir,
    runs: AtomicU32,
}

impl Scene {
    /// Serves MemberDesk as `variant`, launches Chromium, signs on.
    pub(crate) async fn start(variant: Variant) -> Self {
        let text = std::fs::read_to_string(root().join("config/policy.yaml")).unwrap();
        let policy_config = PolicyConfig::from_yaml(&text).unwrap();
        let policy = PolicyEngine::from_config(&policy_config).unwrap();
        let fixture = memberdesk::serve(FixtureConfig::loopback(variant))
            .await
            .unwrap();
        let surface = match ChromiumSurface::launch(ChromiumConfig::from_env(
            policy.allowlist().clone(),
        ))
        .await
        {
            Ok(surface) => surface,
            Err(error @ LaunchError::ChromiumMissing { .. }) => panic!(
                "assist tests drive a real browser: {error}. Install it with `apt-get install -y chromium`"
            ),
            Err(error) => panic!("launching Chromium failed: {error}"),
        };
        let scene = Self {
            fixture,
            surface,
            policy_config,
            policy,
            evidence: tempfile::Builder::new()
                .prefix("cua-assist-evidence-")
                .disable_cleanup(std::env::var_os("CUA_TEST_KEEP_EVIDENCE").is_some())
                .tempdir()
                .unwrap(),
            runs: AtomicU32::new(0),
        };
        let sign_on = scene.prepared(capability("corebank.auth.sign_on@1.0.0"), None);
        let report = scene.replay(&sign_on, &inputs(&[])).await;
        assert_eq!(
            report.result.status,
            cua_artifact::RunStatus::Success,
            "{:?}",
            report.result
        );
        scene
    }

    /// `capability` bound to the fixture (and to `binding`, when given).
    pub(crate) fn prepared(
        &self,
        capability: Capability,
        binding: Option<TenantBinding>,
    ) -> PreparedCapability {
        PreparedCapability::bind(capability, binding, Some(&self.fixture.base_url()), None).unwrap()
    }

    /// One deterministic replay into a fresh run directory.
    pub(crate) async fn replay(
        &self,
        prepared: &PreparedCapability,
        inputs: &BTreeMap<String, Value>,
    ) -> ReplayReport {
        let bus = self.bus("run");
        let secrets = SecretResolver::new(
            "CUA_SECRET_",
            BTreeMap::from([
                (
                    "CUA_SECRET_COREBANK_OPERATOR_ID".to_owned(),
                    memberdesk::OPERATOR_ID.to_owned(),
                ),
                (
                    "CUA_SECRET_COREBANK_OPERATOR_PASSWORD".to_owned(),
                    memberdesk::OPERATOR_PASSWORD.to_owned(),
                ),
            ]),
            bus.redactor().clone(),
        );
        let clock = TokioClock::new();
        let escalations = RecordedEscalations::new();
        let loader = CapabilityList::default();
        let replayer = Replayer {
            driver: &self.surface,
            policy: &self.policy,
            bus: &bus,
            clock: &clock,
            secrets: &secrets,
            capabilities: &loader,
            escalations: &escalations,
            lease: Arc::new(Mutex::new(Lease::new(Actor::Automation))),
            config: ReplayConfig::default(),
        };
        replayer
            .run(RunRequest::new(prepared.clone(), inputs.clone()))
            .await
            .unwrap()
    }

    /// Asks `model` to assist the stopped `report`.
    pub(crate) async fn assist(
        &self,
        prepared: &PreparedCapability,
        report: &ReplayReport,
        inputs: &BTreeMap<String, Value>,
        model: &Canned,
    ) -> AssistOutcome {
        let stuck = cua_assist::assistable(&prepared.capability, report).unwrap();
        let bus = self.bus("assist");
        let assistant = Assistant {
            driver: &self.surface,
            policy: &self.policy,
            llm: model,
            bus: &bus,
        };
        assistant
            .propose(&AssistRequest {
                prepared,
                failed: report,
                stuck: &stuck,
                inputs,
                tenant: None,
                invocation_vars: &["base_url"],
            })
            .await
            .unwrap()
    }

    fn bus(&self, kind: &str) -> EvidenceBus {
        let number = self.runs.fetch_add(1, Ordering::Relaxed) + 1;
        EvidenceBus::create(
            self.evidence.path(),
            RunId::parse(&format!("{kind}-{number}")).unwrap(),
            Arc::new(SystemClock),
            Redactor::from_policy(&self.policy_config.redaction).unwrap(),
        )
        .unwrap()
    }
}

/// The transfers the fixture has recorded (`GET /_control/state`).
pub(crate) fn transfers(scene: &Scene) -> usize {
    scene.fixture.handle().transfers().len()
}
