//! OpenTelemetry export, end to end: a replay against the fixture in Chromium with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` set sends its spans over OTLP/HTTP to a local receiver
//! (`tests/otel/receiver.py`) that decodes them with the official `opentelemetry-proto`
//! package, independent of cua's encoder. The spans nest run → step → resolve / authorize /
//! dispatch / verify and carry no secret the run typed (that export is off without an endpoint
//! is a unit test of `cua-otel`); a discovery's model calls are `chat` spans with the GenAI
//! conventions. A protocol cua does not speak is refused before the browser starts; a collector that is
//! not there leaves the run as it ended, with a warning.

#![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::replay::Scene;

/// The receiver, stopped when dropped, and the file it appends each export to.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Receiver {
    fn start(dir: &Path) -> Self {
        let python = crate::codegen::repository().join("target/mcp-venv/bin/python");
        let ready = Command::new(&python)
            .args(["-c", "import opentelemetry.proto"])
            .output()
            .is_ok_and(|output| output.status.success());
        assert!(
            ready,
            "opentelemetry-proto is missing from target/mcp-venv: run `make deps-python`"
        );
        let out = dir.join("received.jsonl");
        let mut child = Command::new(python)
            .arg(crate::codegen::repository().join("tests/otel/receiver.py"))
            .arg(&out)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let port = crate::first_line(&mut child).trim().parse().unwrap();
        Self { child, port, out }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every export received so far.
    fn received(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_replay_exports_its_steps_as_nested_spans_without_a_secret() {
    let scene = Scene::new();
    let receiver = Receiver::start(scene.scratch.path());
    let endpoint = receiver.endpoint();
    let args = [
        "corebank.member.savings_balance@1.0.0",
        "--input",
        "member_id=12345",
        "--run-id",
        "otel-savings",
    ];

    let (code, stdout, stderr) = scene.replay(
        &args,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_SERVICE_NAME", "cua-under-test"),
        ],
    );
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    let received = receiver.received();
    assert_eq!(received.len(), 1, "one export per run");
    let export = &received[0];
    assert_eq!(export["services"], serde_json::json!(["cua-under-test"]));
    let spans = export["spans"].as_array().unwrap();
    let by_id: BTreeMap<&str, &Value> = spans
        .iter()
        .map(|span| (span["span_id"].as_str().unwrap(), span))
        .collect();
    assert_eq!(by_id.len(), spans.len(), "span ids are unique");
    let trace_ids: std::collections::BTreeSet<&str> = spans
        .iter()
        .map(|span| span["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(trace_ids.len(), 1, "one trace per run");

    let root = spans
        .iter()
        .find(|span| span["parent"] == "")
        .expect("a root span");
    assert_eq!(root["name"], "run corebank.member.savings_balance@1.0.0");
    assert_eq!(root["attributes"]["cua.run.status"], "success");
    assert_eq!(root["attributes"]["cua.run_id"], "otel-savings");
    assert_eq!(root["status"], 1, "OK");
    let parent_name = |span: &Value| -> String {
        by_id
            .get(span["parent"].as_str().unwrap())
            .map(|parent| parent["name"].as_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    // The capability's steps, each under the run, in the order they ran.
    let steps: Vec<&str> = spans
        .iter()
        .filter(|span| span["name"].as_str().unwrap().starts_with("step "))
        .map(|span| span["name"].as_str().unwrap())
        .collect();
    for step in [
        "step enter_member_id",
        "step submit_search",
        "step read_balance",
    ] {
        assert!(steps.contains(&step), "{step} among {steps:?}");
    }
    for span in spans
        .iter()
        .filter(|span| span["name"].as_str().unwrap().starts_with("step "))
    {
        assert_eq!(parent_name(span), root["name"].as_str().unwrap());
    }
    // Under the step that types the member number: resolve, authorize, dispatch, verify.
    let under_entry: Vec<&str> = spans
        .iter()
        .filter(|span| parent_name(span) == "step enter_member_id")
        .map(|span| span["name"].as_str().unwrap())
        .collect();
    for name in ["resolve", "authorize", "dispatch", "verify"] {
        assert!(under_entry.contains(&name), "{name} among {under_entry:?}");
    }
    let resolve = spans
        .iter()
        .find(|span| span["name"] == "resolve" && parent_name(span) == "step enter_member_id")
        .unwrap();
    assert_eq!(resolve["attributes"]["cua.resolved"], true);
    assert!(resolve["attributes"]["cua.strategy"].is_string());
    for span in spans {
        assert!(
            span["start"].as_u64().unwrap() <= span["end"].as_u64().unwrap(),
            "{span}"
        );
    }
    // The sign-on typed the operator's credentials in this run (its remedy's steps are spans
    // too): the trace holds them masked, and so does every byte sent.
    assert!(steps.contains(&"step enter_password"), "{steps:?}");
    let raw = export["raw"].as_str().unwrap();
    for (_, secret) in crate::OPERATOR_SECRETS {
        let hex: String = secret.bytes().map(|byte| format!("{byte:02x}")).collect();
        assert!(!raw.contains(&hex), "a secret reached the collector");
    }
}

#[test]
fn a_protocol_cua_does_not_speak_is_refused_and_a_missing_collector_only_warns() {
    let scene = Scene::new();
    let (code, _, stderr) = scene.replay(
        &[
            "corebank.member.savings_balance@1.0.0",
            "--input",
            "member_id=12345",
        ],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL=\"grpc\"") && stderr.contains("http/protobuf"),
        "{stderr}"
    );
    assert!(!scene.evidence().exists(), "nothing ran");

    // Port 9 (discard) has no collector: the run succeeds and says its spans were not sent.
    let (code, stdout, stderr) = scene.replay(
        &[
            "corebank.member.savings_balance@1.0.0",
            "--input",
            "member_id=12345",
        ],
        &[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://127.0.0.1:9/v1/traces",
        )],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stderr.contains("cua: warning: the trace was not exported to http://127.0.0.1:9/v1/traces"),
        "{stderr}"
    );
}

#[test]
fn a_discovery_exports_its_model_calls_with_the_gen_ai_conventions() {
    let scene = Scene::new();
    let receiver = Receiver::start(scene.scratch.path());
    let repository = crate::codegen::repository();
    let output = scene
        .cua_command()
        .current_dir(scene.scratch.path())
        .env_remove("CUA_LLM_BASE_URL")
        .env_remove("CUA_LLM_MODEL")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .args(["discover", "--scripted", "--goal"])
        .arg("Look up member 12345 and report their savings balance, the account status, and the as-of date.")
        .arg("--target")
        .arg(format!("{}/", scene.base_url()))
        .arg("--sign-in-with")
        .arg(repository.join("capabilities/corebank.auth.sign_on@1.0.0.yaml"))
        .arg("--policy")
        .arg(repository.join("config/policy.yaml"))
        .args(["--out", "drafts", "--evidence", "evidence"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let received = receiver.received();
    assert_eq!(received.len(), 1, "one export per run");
    let spans = received[0]["spans"].as_array().unwrap();
    let chats: Vec<&Value> = spans
        .iter()
        .filter(|span| span["attributes"]["gen_ai.operation.name"] == "chat")
        .collect();
    assert!(!chats.is_empty(), "no model call among {spans:#?}");
    for chat in chats {
        let model = chat["attributes"]["gen_ai.request.model"].as_str().unwrap();
        assert_eq!(chat["name"].as_str().unwrap(), format!("chat {model}"));
        assert!(
            chat["attributes"]["gen_ai.provider.name"].is_string(),
            "{chat}"
        );
        assert!(
            chat["attributes"]["gen_ai.usage.input_tokens"].is_i64(),
            "{chat}"
        );
        assert!(
            chat["attributes"]["gen_ai.usage.output_tokens"].is_i64(),
            "{chat}"
        );
        assert_eq!(chat["kind"], 3, "a model call is a client span");
    }
}
