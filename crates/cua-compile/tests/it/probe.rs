//! Probe against runs Chromium recorded from MemberDesk: the reference savings_balance on the
//! base tenant, on Northgate without its overlay (drift found before a replay fails) and with
//! it; a run without that record reaches nothing; drifted and ambiguous answers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cua_artifact::{
    Action, ActionKind, Actor, Capability, NameMatch, RunKind, TargetDescriptor, TenantBinding,
    ValueExpr,
};
use cua_chromium::{ChromiumConfig, ChromiumSurface, LaunchError};
use cua_compile::probe::{ProbeStatus, load_snapshots, probe};
use cua_evidence::{EvidenceBus, FixedClock, Observe, Redactor, RunId, RunStart, Timestamp};
use cua_policy::{
    ActionRequest, Allowlist, AuthorizationContext, BrowserAction, Lease, PolicyEngine,
    PolicyRules, ResolvedTarget, SurfaceAction,
};
use cua_snapshot::UiSnapshot;
use cua_surface::{SurfaceDriver, WaitOutcome};
use cua_target::{BoundValues, resolve};
use memberdesk::{FixtureConfig, Variant};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn capability(reference: &str) -> Capability {
    let path = repository()
        .join("capabilities")
        .join(format!("{reference}.yaml"));
    Capability::from_yaml(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn northgate(base: &Capability) -> Capability {
    let path = repository()
        .join("tenants/northgate-fcu")
        .join(format!("{}.yaml", base.id));
    TenantBinding::from_yaml(&std::fs::read_to_string(path).unwrap())
        .unwrap()
        .apply(base)
        .unwrap()
}

/// Drives MemberDesk in Chromium through a capability's steps, the way replay labels its
/// observations: each step's screen is recorded as `<step id>-before`.
struct Recorder {
    surface: ChromiumSurface,
    engine: PolicyEngine,
    lease: Lease,
    bindings: BoundValues,
    secrets: BTreeMap<String, String>,
}

impl Recorder {
    async fn launch(entry: &str) -> Self {
        let allowlist = Allowlist::new(&[entry.to_owned()], &[]).unwrap();
        let surface =
            match ChromiumSurface::launch(ChromiumConfig::from_env(allowlist.clone())).await {
                Ok(surface) => surface,
                Err(error @ LaunchError::ChromiumMissing { .. }) => {
                    panic!("these tests need Chromium: {error} (apt-get install -y chromium)")
                }
                Err(error) => panic!("launching Chromium failed: {error}"),
            };
        let engine = PolicyEngine::new(PolicyRules {
            allowlist,
            allowed_actions: ActionKind::ALL.into_iter().collect(),
            human_only: BTreeSet::new(),
        });
        let bindings = BoundValues::new().with_input(
            cua_artifact::Identifier::parse("member_id").unwrap(),
            "12345",
        );
        let secrets = BTreeMap::from([
            ("corebank.operator_id".to_owned(), "teller01".to_owned()),
            (
                "corebank.operator_password".to_owned(),
                "not-a-real-password".to_owned(),
            ),
        ]);
        Self {
            surface,
            engine,
            lease: Lease::new(Actor::Human),
            bindings,
            secrets,
        }
    }

    async fn act(&self, action: SurfaceAction, on: Option<(&UiSnapshot, usize)>) {
        let target = on.map(|(snapshot, index)| {
            let node = &snapshot.nodes[index];
            ResolvedTarget {
                node_id: node.id.clone(),
                role: node.role.clone(),
                name: node.name.clone(),
            }
        });
        let request = ActionRequest {
            actor: Actor::Human,
            epoch: self.lease.epoch,
            action,
            target,
            declared_risk: None,
        };
        let context = AuthorizationContext {
            confirmed: true,
            ..AuthorizationContext::default()
        };
        let authorized = self
            .engine
            .authorize_with(&self.lease, request, &context)
            .unwrap();
        self.surface
            .dispatch(authorized.into_browser().expect("a browser action"))
            .await
            .unwrap();
    }

    fn text(&self, value: &ValueExpr) -> String {
        match value {
            ValueExpr::Secret(name) => self.secrets[name.as_str()].clone(),
            ValueExpr::Input(_) => "12345".to_owned(),
            literal => literal.literal_text().unwrap(),
        }
    }

    /// Performs every step of `capability`; records each step's screen when `bus` is given.
    async fn drive(&self, capability: &Capability, bus: Option<&EvidenceBus>) {
        for step in &capability.steps {
            let target = step.action.target().cloned();
            let bindings = self.bindings.clone();
            let ready = move |snapshot: &UiSnapshot| {
                target
                    .as_ref()
                    .is_none_or(|target| resolve(snapshot, target, &bindings).is_ok())
            };
            let snapshot = match self
                .surface
                .wait_until(ready, Duration::from_secs(10))
                .await
                .unwrap()
            {
                WaitOutcome::Met(snapshot) => *snapshot,
                WaitOutcome::TimedOut(snapshot) => panic!(
                    "step {} never became ready; last page {}",
                    step.id, snapshot.url
                ),
            };
            if let Some(bus) = bus {
                let written = bus
                    .write_snapshot(&format!("{}-before", step.id), &snapshot)
                    .unwrap();
                bus.emit(Actor::System, 0, Observe::of(&snapshot, Some(written)))
                    .unwrap();
            }
            let node = step
                .action
                .target()
                .map(|target| resolve(&snapshot, target, &self.bindings).unwrap().node);
            let action = match &step.action {
                Action::Click { .. } => SurfaceAction::Browser(BrowserAction::Click),
                Action::Type {
                    value, clear_first, ..
                } => SurfaceAction::Browser(BrowserAction::Type {
                    text: self.text(value),
                    clear_first: *clear_first,
                }),
                Action::Select { value, .. } => SurfaceAction::Browser(BrowserAction::Select {
                    value: self.text(value),
                }),
                _ => continue,
            };
            self.act(action, node.map(|node| (&snapshot, node))).await;
        }
    }
}

/// Signs on, then drives `driving` through MemberDesk `variant`, recording its screens into a
/// run directory under `root`.
async fn record(variant: Variant, driving: &Capability, root: &Path) -> PathBuf {
    let fixture = memberdesk::serve(FixtureConfig::loopback(variant))
        .await
        .unwrap();
    let entry = fixture.addr().to_string();
    let recorder = Recorder::launch(&entry).await;
    let redactor = Redactor::new(Vec::<(String, String)>::new()).unwrap();
    let clock = Arc::new(FixedClock(
        Timestamp::parse("2026-09-11T09:00:00.000000Z").unwrap(),
    ));
    let bus = EvidenceBus::create(
        root,
        RunId::parse(&format!("probe-{}", variant.name())).unwrap(),
        clock,
        redactor,
    )
    .unwrap();
    bus.emit(
        Actor::System,
        0,
        RunStart {
            kind: RunKind::Replay,
            capability: Some(driving.reference()),
            content_hash: driving.content_hash.clone(),
            sealed_hash: None,
            bound_by: None,
            tenant: None,
            inputs: BTreeMap::from([("member_id".to_owned(), "12345".into())]),
            goal: None,
            target_url: None,
            model: None,
            scripted_model: None,
            resolver_config_hash: None,
        },
    )
    .unwrap();
    recorder
        .act(
            SurfaceAction::Browser(BrowserAction::Navigate {
                url: format!("{}/", fixture.base_url()),
            }),
            None,
        )
        .await;
    recorder
        .drive(&capability("corebank.auth.sign_on@1.0.0"), None)
        .await;
    recorder.drive(driving, Some(&bus)).await;
    recorder.surface.close().await;
    bus.dir().to_path_buf()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_finds_drift_in_recorded_runs_before_a_replay_does() {
    let root = tempfile::tempdir().unwrap();
    let base = capability("corebank.member.savings_balance@1.0.0");
    let overlaid = northgate(&base);
    let base_run = record(Variant::FirstValley, &base, root.path()).await;
    let northgate_run = record(Variant::NorthgateFcu, &overlaid, root.path()).await;

    // The base tenant: every step resolves on its recorded rung.
    let run = load_snapshots(&base_run).unwrap();
    let report = probe(&base, &run);
    assert!(report.is_clean(), "{}", report.render_text());
    // These runs record no resolutions (the recorder acts without resolving), so each step is
    // checked on the snapshot labelled `<step>-before`; a real replay's trace says where each
    // step was resolved (`tests/it/probe.rs` at the repository root checks that).
    assert!(run.resolved_on.is_empty());
    insta::assert_snapshot!("probe_base_tenant", report.render_text());

    // Northgate without its overlay: the relabelled summary is missing before any replay.
    let run = load_snapshots(&northgate_run).unwrap();
    let report = probe(&base, &run);
    assert!(!report.is_clean());
    let status = |step: &str| {
        report
            .steps
            .iter()
            .find(|probed| probed.step == step)
            .unwrap()
            .status
    };
    assert_eq!(status("read_balance"), ProbeStatus::Missing);
    assert_eq!(status("read_status"), ProbeStatus::Missing);
    assert_eq!(status("enter_member_id"), ProbeStatus::Unique);
    insta::assert_snapshot!("probe_northgate_without_overlay", report.render_text());
    insta::assert_json_snapshot!("probe_northgate_without_overlay_json", report);

    // With the overlay, the same screens resolve.
    let report = probe(&overlaid, &run);
    assert!(report.is_clean(), "{}", report.render_text());
    insta::assert_snapshot!("probe_northgate_with_overlay", report.render_text());

    // A weaker rung than recorded is drift; several candidates are ambiguity.
    let mut drifting = base.clone();
    let enter = drifting.steps[0].action.target_mut().unwrap();
    enter.name = Some(NameMatch {
        value: "Member No.".to_owned(),
        match_mode: cua_artifact::MatchMode::Exact,
    });
    let read = drifting.steps[2].action.target_mut().unwrap();
    *read = TargetDescriptor {
        scope: read.scope.clone(),
        ..TargetDescriptor::role("cell")
    };
    let report = probe(&drifting, &load_snapshots(&base_run).unwrap());
    assert_eq!(report.steps[0].status, ProbeStatus::Drifted);
    assert_eq!(report.steps[2].status, ProbeStatus::Ambiguous);
    insta::assert_snapshot!("probe_drifted_and_ambiguous", report.render_text());

    // A run that recorded no resolution and labelled its screens differently (discovery's
    // `observe`): no step is tried against a screen the run did not resolve it on.
    let relabelled = root.path().join("relabelled");
    std::fs::create_dir_all(relabelled.join("snapshots")).unwrap();
    for (number, recorded) in run.snapshots.iter().enumerate() {
        let name = format!("{:04}-observe.json", number + 1);
        std::fs::write(
            relabelled.join("snapshots").join(name),
            recorded.snapshot.to_json_bytes(),
        )
        .unwrap();
    }
    let report = probe(&overlaid, &load_snapshots(&relabelled).unwrap());
    assert!(!report.is_clean(), "{}", report.render_text());
    assert!(
        report.steps.iter().all(|probed| matches!(
            probed.status,
            ProbeStatus::NotReached | ProbeStatus::NoTarget
        )),
        "{}",
        report.render_text()
    );
    insta::assert_snapshot!("probe_relabelled_run_reaches_nothing", report.render_text());
}

#[test]
fn a_directory_without_snapshots_is_refused() {
    let empty = tempfile::tempdir().unwrap();
    let error = load_snapshots(empty.path()).unwrap_err().to_string();
    assert!(
        error.contains("is not a run directory with snapshots"),
        "{error}"
    );
}
