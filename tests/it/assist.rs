//! `cua replay --assist` end to end: Northgate's MemberDesk (served by this test) in Debian's
//! Chromium, the savings-balance capability without Northgate's overlay, and the scripted model
//! served over real HTTP on loopback, counting every request it gets.

use std::path::{Path, PathBuf};
use std::process::Command;

use cua_agent::scripted::ScriptedServer;
use serde_json::Value;

/// The fixture and the scripted model, on a runtime of their own, and a scratch directory
/// holding "northgate-fcu without its overlay": a binding that names the tenant and overrides
/// nothing.
struct Scene {
    runtime: tokio::runtime::Runtime,
    fixture: Option<memberdesk::RunningFixture>,
    model: Option<ScriptedServer>,
    scratch: tempfile::TempDir,
}

impl Scene {
    fn new() -> Self {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let fixture = runtime
            .block_on(memberdesk::serve(memberdesk::FixtureConfig::loopback(
                memberdesk::Variant::NorthgateFcu,
            )))
            .expect("the fixture serves");
        let model = runtime
            .block_on(ScriptedServer::start())
            .expect("the scripted model serves");
        let scratch = tempfile::tempdir().expect("a scratch directory");
        let tenant = scratch.path().join("tenants/northgate-fcu");
        std::fs::create_dir_all(&tenant).expect("a tenant directory");
        std::fs::write(
            tenant.join("corebank.member.savings_balance.yaml"),
            "schema: cua.tenant_binding/v1\n\
             capability: corebank.member.savings_balance@1.0.0\n\
             tenant: northgate-fcu\n\
             description: Northgate, onboarded without the overlay its relabelled summary needs.\n",
        )
        .expect("the bare binding is written");
        Self {
            runtime,
            fixture: Some(fixture),
            model: Some(model),
            scratch,
        }
    }

    fn model(&self) -> &ScriptedServer {
        self.model.as_ref().expect("the model serves until drop")
    }

    fn evidence(&self) -> PathBuf {
        self.scratch.path().join("evidence")
    }

    /// `cua replay` of the savings balance of `member` on Northgate without its overlay, as run
    /// `run_id`, with the scripted model configured; the exit code and the JSON envelope.
    fn replay(&self, member: &str, run_id: &str, extra: &[&str]) -> (i32, Value, String) {
        let base_url = self
            .fixture
            .as_ref()
            .expect("the fixture serves until drop")
            .base_url();
        let tenants = self.scratch.path().join("tenants").display().to_string();
        let evidence = self.evidence().display().to_string();
        let input = format!("member_id={member}");
        let output = Command::new(env!("CARGO_BIN_EXE_cua"))
            .args([
                "replay",
                "corebank.member.savings_balance@1.0.0",
                "--tenant",
                "northgate-fcu",
                "--tenants",
                &tenants,
                "--base-url",
                &base_url,
                "--input",
                &input,
                "--evidence-dir",
                &evidence,
                "--run-id",
                run_id,
                "--format",
                "json",
            ])
            .args(extra)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NO_COLOR", "1")
            .env("CUA_LLM_BASE_URL", self.model().base_url())
            .env("CUA_LLM_MODEL", cua_agent::SCRIPTED_MODEL_NAME)
            .envs(crate::OPERATOR_SECRETS)
            .output()
            .expect("the cua binary runs");
        let code = output.status.code().expect("an exit code");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_ne!(
            code, 69,
            "replay drives a real browser: install it with `apt-get install -y chromium`\n{stderr}"
        );
        let envelope = serde_json::from_str(&stdout)
            .unwrap_or_else(|error| panic!("not one JSON envelope ({error}):\n{stdout}\n{stderr}"));
        (code, envelope, stderr)
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        if let Some(fixture) = self.fixture.take() {
            let _ = self.runtime.block_on(fixture.shutdown());
        }
        if let Some(model) = self.model.take() {
            self.runtime.block_on(model.shutdown());
        }
    }
}

fn cua(args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the cua binary runs");
    (
        output.status.code().expect("an exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn sealed_artifact() -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("capabilities/corebank.member.savings_balance@1.0.0.yaml"),
    )
    .expect("the sealed artifact")
}

#[test]
fn a_plain_replay_makes_no_model_call_and_an_assist_only_follows_a_target_failure() {
    let scene = Scene::new();
    let (code, envelope, stderr) = scene.replay("12345", "plain", &[]);
    assert_eq!(code, 3, "{envelope}\n{stderr}");
    assert_eq!(envelope["error"]["code"], "unexpected_state");
    assert_eq!(
        scene.model().requests().len(),
        0,
        "a plain replay makes zero model calls, even with a model configured"
    );
    // A business outcome is an answer, not a stuck step: --assist makes no call either.
    let (code, envelope, stderr) = scene.replay("99999", "outcome", &["--assist"]);
    assert_eq!(code, 0, "{envelope}\n{stderr}");
    assert_eq!(
        envelope["data"]["run"]["result"]["status"],
        "business_outcome"
    );
    assert!(
        envelope["data"]["not_attempted"]
            .as_str()
            .is_some_and(|why| why.contains("business outcome")),
        "{envelope}"
    );
    assert_eq!(scene.model().requests().len(), 0);
}

#[test]
fn an_assist_proposes_the_relabelled_target_and_the_run_continues_deterministically() {
    let scene = Scene::new();
    let before = sealed_artifact();
    let (code, envelope, stderr) = scene.replay("12345", "assisted", &["--assist"]);
    let data = &envelope["data"];

    // The deterministic run stops on Northgate's relabelled "Savings Bal.".
    let run = &data["run"]["result"];
    assert_eq!(run["status"], "needs_human", "{envelope}\n{stderr}");
    assert_eq!(run["error"]["code"], "unexpected_state");
    assert_eq!(run["error"]["step_id"], "read_balance");

    // One model call proposed the value cell beside the new label.
    let requests = scene.model().requests();
    assert_eq!(requests.len(), 1, "exactly one model call");
    assert!(requests[0].contains("Assisted recovery of one step."));
    assert!(
        !requests[0].contains(memberdesk::OPERATOR_PASSWORD),
        "no secret reaches the model"
    );
    let assist = &data["assist"];
    assert_eq!(assist["model_calls"], 1);
    assert_eq!(assist["scripted"], true);
    assert_eq!(assist["tool"], "extract");
    assert_eq!(assist["decision"]["decision"], "accepted", "{assist}");
    assert_eq!(
        assist["decision"]["target"]["anchor"]["text"], "Savings Bal.",
        "{assist}"
    );

    // The run continued from that step with the candidate overlay: the balance is read, and the
    // next relabelled label ("Acct Status") stops it again; one assist per run.
    let continued = &data["continued"]["result"];
    assert_eq!(
        continued["outputs"]["savings_balance"], "4210.55",
        "{continued}"
    );
    assert_eq!(continued["error"]["step_id"], "read_status", "{continued}");
    assert_eq!(continued["status"], "needs_human");
    assert_eq!(code, 3);

    // The candidate overlay is a valid tenant binding, for the tenant, without the invocation's
    // base URL; the sealed artifact is untouched.
    let candidate = PathBuf::from(
        assist["decision"]["path"]
            .as_str()
            .expect("the candidate's path"),
    );
    let (code, stdout) = cua(&["validate", &candidate.display().to_string()]);
    assert_eq!(code, 0, "{stdout}");
    let binding = cua_artifact::TenantBinding::from_yaml(
        &std::fs::read_to_string(&candidate).expect("the candidate"),
    )
    .expect("a tenant binding");
    assert_eq!(binding.tenant.as_str(), "northgate-fcu");
    assert!(binding.vars.is_empty(), "{:?}", binding.vars);
    let read_balance =
        &binding.overrides[&cua_artifact::StepId::parse("read_balance").expect("an id")];
    let anchor = read_balance
        .target
        .as_ref()
        .and_then(|target| target.anchor.as_ref())
        .expect("a target override");
    assert_eq!(anchor.text, "Savings Bal.");
    assert!(
        read_balance.precondition.is_some(),
        "the precondition is relabelled too"
    );
    assert_eq!(sealed_artifact(), before, "the artifact is never rewritten");

    // The evidence that motivated it: the screen the model saw, its one call, the proposal.
    let assist_dir = scene.evidence().join("assisted-assist");
    let proposal: Value = serde_json::from_str(
        &std::fs::read_to_string(assist_dir.join("assist.json")).expect("assist.json"),
    )
    .expect("assist.json parses");
    assert_eq!(proposal["step"], "read_balance");
    assert_eq!(proposal["failed_run"], "assisted");
    let screen = proposal["snapshot_ref"]
        .as_str()
        .expect("the screen the model saw");
    assert!(assist_dir.join(screen).is_file(), "{screen}");
    let trace = std::fs::read_to_string(assist_dir.join("trace.jsonl")).expect("the trace");
    assert!(
        trace.contains("\"purpose\":\"assisted_recovery\""),
        "{trace}"
    );
    assert!(trace.contains("\"snapshot_ref\":\"snapshots/"), "{trace}");
    for run in ["assisted", "assisted-assist", "assisted-continued"] {
        let dir = scene.evidence().join(run).display().to_string();
        let (code, stdout) = cua(&["evidence", "verify", &dir]);
        assert_eq!(code, 0, "{run}: {stdout}");
    }

    // A person reads all three in `cua show`, in a real browser: the stopped run, the assist
    // (the screen the model saw, its one call) and the continuation.
    let _one_at_a_time = crate::codegen::one_at_a_time();
    let install = crate::codegen::playwright_ci();
    let specs = tempfile::Builder::new()
        .prefix("assist-show-")
        .tempdir_in(&install)
        .expect("a spec directory");
    let pages: Vec<Value> = ["assisted", "assisted-assist", "assisted-continued"]
        .iter()
        .map(|run| {
            crate::show::shown_page(
                &scene.evidence().join(run),
                &format!("show {run}"),
                specs.path(),
            )
        })
        .collect();
    crate::show::every_page_renders(&install, specs.path(), &pages);
}
