//! `cua replay` end to end: the binary against the MemberDesk fixture (served by this test
//! process) in Debian's Chromium. Output is snapshotted with only volatile parts masked
//! (durations, temporary paths, the fixture's port); content hashes are never masked.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use tempfile::TempDir;

/// The fixture, served on a background runtime, and a scratch directory for evidence.
pub(crate) struct Scene {
    runtime: tokio::runtime::Runtime,
    fixture: Option<memberdesk::RunningFixture>,
    pub(crate) scratch: TempDir,
}

impl Scene {
    pub(crate) fn new() -> Self {
        Self::with_variant(memberdesk::Variant::FirstValley)
    }

    /// The fixture as one tenant's skin of it serves.
    pub(crate) fn with_variant(variant: memberdesk::Variant) -> Self {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let fixture = runtime
            .block_on(memberdesk::serve(memberdesk::FixtureConfig::loopback(
                variant,
            )))
            .expect("the fixture serves");
        Self {
            runtime,
            fixture: Some(fixture),
            scratch: tempfile::tempdir().expect("a scratch directory"),
        }
    }

    pub(crate) fn fixture(&self) -> &memberdesk::RunningFixture {
        self.fixture.as_ref().expect("the fixture runs until drop")
    }

    pub(crate) fn base_url(&self) -> String {
        self.fixture().base_url()
    }

    pub(crate) fn evidence(&self) -> PathBuf {
        self.scratch.path().join("evidence")
    }

    /// Runs `cua replay ARGS` from the repository root with the operator's credentials as
    /// secrets; returns the exit code, stdout and stderr with volatile parts masked.
    pub(crate) fn replay(&self, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
        let (code, stdout, stderr) = self.replay_raw(args, env);
        (code, self.mask(&stdout), self.mask(&stderr))
    }

    pub(crate) fn replay_raw(&self, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
        let mut command = self.replay_command(args);
        for (key, value) in env {
            command.env(key, value);
        }
        let output = command.output().expect("the cua binary runs");
        (
            output.status.code().expect("an exit code"),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// `cua replay ARGS` from the repository root, against this scene's fixture and evidence
    /// directory (unless ARGS name their own), with the operator's credentials as secrets.
    pub(crate) fn replay_command<S: AsRef<str>>(&self, args: &[S]) -> Command {
        let evidence = self.evidence().display().to_string();
        let base_url = self.base_url();
        let names = |flag: &str| args.iter().any(|arg| arg.as_ref() == flag);
        let mut command = self.cua_command();
        command.arg("replay").args(args.iter().map(AsRef::as_ref));
        if !names("--evidence-dir") {
            command.args(["--evidence-dir", evidence.as_str()]);
        }
        if !names("--base-url") {
            command.args(["--base-url", base_url.as_str()]);
        }
        command
    }

    /// `cua` from the repository root, with the operator's credentials as secrets and no
    /// arguments yet.
    pub(crate) fn cua_command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cua"));
        command
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NO_COLOR", "1")
            .envs(crate::OPERATOR_SECRETS);
        // A collector the caller's environment names must not receive the tests' runs.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("OTEL_") {
                command.env_remove(name);
            }
        }
        command
    }

    pub(crate) fn mask(&self, text: &str) -> String {
        let text = text
            .replace(&self.scratch.path().display().to_string(), "SCRATCH")
            .replace(env!("CARGO_MANIFEST_DIR"), "REPO")
            .replace(&self.base_url(), "BASE_URL");
        mask_durations(&text)
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        if let Some(fixture) = self.fixture.take() {
            let _ = self.runtime.block_on(fixture.shutdown());
        }
    }
}

/// `in 1234ms` → `in <ms>ms`, `"duration_ms":12` → `"duration_ms":"<ms>"` (still JSON).
fn mask_durations(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(position) = rest.find(|c: char| c.is_ascii_digit()) {
        let (before, from_digits) = rest.split_at(position);
        let digits = from_digits
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(from_digits.len());
        let (number, after) = from_digits.split_at(digits);
        out.push_str(before);
        let in_text = before.ends_with(" in ") && after.starts_with("ms");
        let in_json = before.ends_with("\"duration_ms\": ") || before.ends_with("\"duration_ms\":");
        out.push_str(if in_text {
            "<ms>"
        } else if in_json {
            "\"<ms>\""
        } else {
            number
        });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A loopback server that counts every connection made to it, standing in for a model
/// endpoint: replay must never call it.
struct CountingEndpoint {
    url: String,
    connections: Arc<AtomicUsize>,
}

impl CountingEndpoint {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let url = format!("http://{}/v1", listener.local_addr().expect("an address"));
        let connections = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&connections);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                counter.fetch_add(1, Ordering::SeqCst);
                if let Ok(mut stream) = stream {
                    let mut buffer = [0_u8; 1024];
                    let _ = stream.read(&mut buffer);
                    let _ = stream.write_all(
                        b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n",
                    );
                }
            }
        });
        Self { url, connections }
    }
}

#[test]
fn a_successful_replay_prints_outputs_verdicts_and_evidence_with_zero_model_calls() {
    let scene = Scene::new();
    let model = CountingEndpoint::start();
    let (code, stdout, stderr) = scene.replay(
        &[
            "corebank.member.savings_balance@1.0.0",
            "--input",
            "member_id=12345",
            "--run-id",
            "cli-success",
        ],
        &[
            ("CUA_LLM_BASE_URL", model.url.as_str()),
            ("CUA_LLM_MODEL", "counting-model"),
            ("CUA_LLM_API_KEY", "not-used"),
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    insta::assert_snapshot!("success_text", stdout);
    assert_eq!(model.connections.load(Ordering::SeqCst), 0);
    let run_dir = scene.evidence().join("cli-success");
    for file in ["trace.jsonl", "run_record.json"] {
        assert!(run_dir.join(file).is_file(), "{file}");
    }
    let (verified, verify_out, _) = verify(&run_dir);
    assert_eq!(verified, 0, "{verify_out}");
    // The run record lists every step stdout does, reads included, with the same strategies.
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run_dir.join("run_record.json")).expect("the run record"),
    )
    .expect("JSON");
    let recorded: Vec<(String, String)> = record["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|step| {
            (
                step["step_id"].as_str().expect("an id").to_owned(),
                step["action_type"].as_str().expect("an action").to_owned(),
            )
        })
        .collect();
    let printed: Vec<(String, String)> = stdout
        .lines()
        .skip_while(|line| *line != "steps")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let id = fields[0].rsplit('/').next().expect("a step id");
            (id.to_owned(), fields[1].to_owned())
        })
        .collect();
    assert_eq!(recorded, printed);
    let mix: Vec<String> = record["result"]["strategy_mix"]
        .as_object()
        .expect("a strategy mix")
        .iter()
        .map(|(strategy, count)| format!("{strategy} {count}"))
        .collect();
    assert!(
        stdout.contains(&format!("strategies         {}\n", mix.join(", "))),
        "{mix:?}\n{stdout}"
    );
}

#[test]
fn a_business_outcome_exits_zero_with_the_outcome_in_json() {
    let scene = Scene::new();
    let (code, stdout, stderr) = scene.replay(
        &[
            "corebank.member.savings_balance",
            "--input",
            "member_id=99999",
            "--run-id",
            "cli-outcome",
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let envelope: Value = serde_json::from_str(&stdout).expect("one JSON envelope");
    insta::assert_snapshot!(
        "outcome_json",
        serde_json::to_string_pretty(&envelope).expect("JSON prints")
    );
}

/// A savings lookup as `run_id` that meets a dialog nothing declares, every time it looks.
pub(crate) fn needs_human(scene: &Scene, run_id: &str) -> (i32, String, String) {
    scene.fixture().handle().arm(
        memberdesk::Fault::UndeclaredDialog,
        memberdesk::FaultCount::Times(3),
    );
    scene.replay(
        &[
            "corebank.member.savings_balance@1.0.0",
            "--input",
            "member_id=12345",
            "--run-id",
            run_id,
        ],
        &[],
    )
}

#[test]
fn a_screen_nothing_declares_needs_a_human_and_exits_three() {
    let scene = Scene::new();
    let (code, stdout, stderr) = needs_human(&scene, "cli-needs-human");
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    insta::assert_snapshot!("needs_human_text", stdout);
    let screenshots = scene.evidence().join("cli-needs-human/screenshots");
    assert!(
        std::fs::read_dir(&screenshots).is_ok_and(|mut entries| entries.next().is_some()),
        "a failure screenshot is kept"
    );
    // No console supervised the run, so its intervention is kept where `cua console` loads
    // interventions from: given up, not claimable, with the run's reason.
    let (kept, problems) = cua_console::intervention::load_all(&scene.evidence());
    assert!(problems.is_empty(), "{problems:?}");
    let [intervention] = kept.as_slice() else {
        panic!("one intervention, found {kept:?}");
    };
    assert_eq!(intervention.run_id, "cli-needs-human");
    assert_eq!(intervention.state, cua_console::InterventionState::GivenUp);
    assert!(!intervention.state.claimable());
    assert_eq!(intervention.failure_code, "unexpected_state");
    assert!(stdout.contains(&intervention.id), "{stdout}");
}

#[test]
fn invalid_inputs_are_refused_before_any_browser_starts() {
    let scene = Scene::new();
    let (code, stdout, stderr) = scene.replay(
        &[
            "corebank.member.savings_balance@1.0.0",
            "--input",
            "member_id=<script>alert(1)</script>",
            "--input",
            "membr_id=12345",
            "--run-id",
            "cli-invalid",
        ],
        &[],
    );
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    // Nothing ran, so nothing was recorded: no run directory, no browser.
    assert!(!scene.evidence().join("cli-invalid").exists());
    assert!(
        !stderr.contains("script"),
        "the value is never repeated: {stderr}"
    );
    insta::assert_snapshot!("invalid_input_text", scene.mask(&stderr));
}

#[test]
fn usage_errors_and_tampered_documents_exit_two_before_any_browser_starts() {
    let scene = Scene::new();
    let tampered = scene.scratch.path().join("tampered.yaml");
    let original = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("capabilities/corebank.member.savings_balance@1.0.0.yaml"),
    )
    .expect("the catalog capability");
    std::fs::write(
        &tampered,
        original.replace("Look up a member's savings balance", "Look up any balance"),
    )
    .expect("a scratch file");
    let tampered = tampered.display().to_string();
    let cases: [(&str, Vec<&str>); 6] = [
        (
            "duplicated input",
            vec![
                "corebank.member.savings_balance@1.0.0",
                "--input",
                "member_id=12345",
                "--input",
                "member_id=67890",
            ],
        ),
        (
            "malformed input",
            vec![
                "corebank.member.savings_balance@1.0.0",
                "--input",
                "member_id",
            ],
        ),
        (
            "unknown capability",
            vec!["corebank.member.no_such_thing@1.0.0"],
        ),
        ("tampered file", vec![tampered.as_str()]),
        (
            "unknown tenant binding",
            vec!["corebank.auth.sign_on@1.0.0", "--tenant", "northgate-fcu"],
        ),
        (
            "base url that is not an origin",
            vec![
                "corebank.member.savings_balance@1.0.0",
                "--base-url",
                "http://127.0.0.1:8811/search?x=1",
            ],
        ),
    ];
    let mut transcript = String::new();
    for (name, args) in cases {
        // A browser that cannot start proves none was needed: these fail before it.
        let (code, stdout, stderr) =
            scene.replay(&args, &[("CUA_CHROMIUM", "/nonexistent/chromium")]);
        transcript.push_str(&format!("== {name}: exit {code}\n{stdout}{stderr}"));
        assert_eq!(code, 2, "{name}: {stderr}");
    }
    insta::assert_snapshot!("usage_errors", transcript);
}

#[test]
fn a_missing_browser_exits_69_naming_the_install_step() {
    let scene = Scene::new();
    let (code, _, stderr) = scene.replay(
        &[
            "corebank.member.savings_balance@1.0.0",
            "--input",
            "member_id=12345",
        ],
        &[("CUA_CHROMIUM", "/nonexistent/chromium")],
    );
    assert_eq!(code, 69, "{stderr}");
    assert!(stderr.contains("apt-get install -y chromium"), "{stderr}");
}

/// A capability that signs on with the operator id as a *sensitive input* and the password as
/// a *secret*: neither may appear in any byte written under the run directory, nor on stdout
/// or stderr.
#[test]
fn canary_secrets_and_sensitive_inputs_never_leave_the_process() {
    let scene = Scene::new();
    let sign_on = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities/corebank.auth.sign_on@1.0.0.yaml"),
    )
    .expect("the catalog capability");
    let mut yaml: String = sign_on
        .lines()
        .filter(|line| !line.starts_with("content_hash:"))
        .map(|line| format!("{line}\n"))
        .collect();
    yaml = yaml
        .replace("id: corebank.auth.sign_on", "id: test.auth.sign_on_with_input")
        .replace(
            "value: {$secret: corebank.operator_id}",
            "value: {$input: operator_id}",
        )
        .replace(
            "steps:\n",
            "inputs:\n  - {name: operator_id, sensitive: true, pattern: '^[a-z0-9]{4,16}$'}\n\nsteps:\n",
        );
    let draft = cua_artifact::Capability::from_yaml(&yaml).expect("a valid draft");
    let sealed = draft.sealed().to_yaml().expect("it serializes");
    let file = scene.scratch.path().join("sign_on_with_input.yaml");
    std::fs::write(&file, sealed).expect("a scratch file");
    let file = file.display().to_string();
    let (code, stdout, stderr) = scene.replay_raw(
        &[
            file.as_str(),
            "--input",
            &format!("operator_id={}", memberdesk::OPERATOR_ID),
            "--run-id",
            "cli-canary",
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let canaries = [memberdesk::OPERATOR_ID, memberdesk::OPERATOR_PASSWORD];
    for canary in canaries {
        assert!(!stdout.contains(canary), "stdout carries {canary:?}");
        assert!(!stderr.contains(canary), "stderr carries {canary:?}");
    }
    let run_dir = scene.evidence().join("cli-canary");
    let mut files = 0;
    for path in walk(&run_dir) {
        files += 1;
        let bytes = std::fs::read(&path).expect("a readable evidence file");
        for canary in canaries {
            assert!(
                !contains(&bytes, canary.as_bytes()),
                "{} carries {canary:?}",
                path.display()
            );
        }
    }
    assert!(files >= 4, "the sweep saw the trace, record and snapshots");
    // The masking is real: the trace shows the input was there, by shape.
    let trace = std::fs::read_to_string(run_dir.join("trace.jsonl")).expect("the trace");
    assert!(trace.contains("<redacted:string[8]>"), "{trace}");
}

/// The savings-balance capability with its member number a *sensitive input* and the balance a
/// *sensitive output*, sealed into the scene's scratch catalog.
fn sensitive_savings_balance(scene: &Scene) -> PathBuf {
    let original = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("capabilities/corebank.member.savings_balance@1.0.0.yaml"),
    )
    .expect("the catalog capability");
    let yaml: String = original
        .lines()
        .filter(|line| !line.starts_with("content_hash:"))
        .map(|line| format!("{line}\n"))
        .collect::<String>()
        .replace(
            "id: corebank.member.savings_balance",
            "id: test.member.sensitive_balance",
        )
        .replace(
            "    required: true\n    description: The member number",
            "    required: true\n    sensitive: true\n    description: The member number",
        )
        .replace(
            "    type: money\n",
            "    type: money\n    sensitive: true\n",
        );
    let draft = cua_artifact::Capability::from_yaml(&yaml).expect("a valid draft");
    let catalog = scene.scratch.path().join("catalog");
    std::fs::create_dir_all(&catalog).expect("a scratch catalog");
    let file = catalog.join("test.member.sensitive_balance@1.0.0.yaml");
    std::fs::write(&file, draft.sealed().to_yaml().expect("it serializes")).expect("written");
    file
}

/// Every sink a replay writes to, swept for a sensitive input and a sensitive output: text
/// and JSON output, a batch's lines and state file, and (below) eval's reports.
#[test]
fn sensitive_inputs_and_outputs_are_masked_in_every_sink() {
    let scene = Scene::new();
    let file = sensitive_savings_balance(&scene).display().to_string();
    // Member 67890's balance is 18730.00 in the fixture's seeded data.
    let canaries = ["67890", "24680", "18730.00", "18730"];
    let mut swept = Vec::new();
    for format in ["text", "json"] {
        let run_id = format!("sensitive-{format}");
        let (code, stdout, stderr) = scene.replay_raw(
            &[
                file.as_str(),
                "--input",
                "member_id=67890",
                "--run-id",
                &run_id,
                "--format",
                format,
            ],
            &[],
        );
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        swept.push((format!("replay --format {format} stdout"), stdout.clone()));
        swept.push((format!("replay --format {format} stderr"), stderr));
        // Masked, not dropped: the caller sees the output was there, by shape.
        assert!(stdout.contains("<redacted:"), "{stdout}");
    }
    // The balance is on screen a step before it is read and so known to the painter: while a
    // sensitive output is unread, no step screenshot is kept, and the trace says why.
    let trace = std::fs::read_to_string(scene.evidence().join("sensitive-text/trace.jsonl"))
        .expect("the trace");
    assert!(
        trace.contains("step capture: screenshot withheld"),
        "the withheld captures are noted"
    );
    assert!(!trace.contains("screenshots/"), "no screenshot is named");
    assert!(
        !scene.evidence().join("sensitive-text/screenshots").exists(),
        "no screenshot was kept"
    );
    let rows = scene.scratch.path().join("rows.jsonl");
    std::fs::write(
        &rows,
        "{\"member_id\": \"67890\"}\n{\"member_id\": \"6789\"}\n",
    )
    .expect("a rows file");
    let rows = rows.display().to_string();
    let (_, stdout, stderr) = scene.replay_raw(
        &[
            file.as_str(),
            "--inputs",
            rows.as_str(),
            "--run-id",
            "sensitive-batch",
        ],
        &[],
    );
    swept.push(("batch stdout".to_owned(), stdout.clone()));
    swept.push(("batch stderr".to_owned(), stderr));
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    for entry in std::fs::read_dir(scene.evidence())
        .expect("the evidence root")
        .flatten()
    {
        let path = entry.path();
        if path.is_file() {
            let text = std::fs::read_to_string(&path).expect("a readable file");
            swept.push((path.display().to_string(), text));
        }
    }
    assert!(
        swept.iter().any(|(name, _)| name.ends_with(".batch.jsonl")),
        "the batch wrote its state file"
    );
    // Eval: one right and one wrong case, so the reports show a truth and a wrong answer.
    let catalog = scene.scratch.path().join("catalog");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities/corebank.auth.sign_on@1.0.0.yaml"),
        catalog.join("corebank.auth.sign_on@1.0.0.yaml"),
    )
    .expect("the sign-on capability copied");
    let suite = scene.scratch.path().join("sensitive.yaml");
    std::fs::write(
        &suite,
        "schema: cua.eval_suite/v1\nname: sensitive\ndescription: masking\n\
         capability: test.member.sensitive_balance@1.0.0\nfixture: first-valley\n\
         setup:\n  - capability: corebank.auth.sign_on@1.0.0\nrepeats: 1\ncases:\n\
         \x20 - inputs: {member_id: \"67890\"}\n\
         \x20   expect: {outputs: {savings_balance: \"18730.00\"}}\n\
         \x20 - inputs: {member_id: \"24680\"}\n\
         \x20   expect: {outputs: {savings_balance: \"18730.00\"}}\n",
    )
    .expect("a suite");
    let out = scene.scratch.path().join("eval-out");
    let runs = scene.scratch.path().join("eval-runs");
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .arg("eval")
        .arg(&suite)
        .arg("--catalog")
        .arg(&catalog)
        .arg("--out")
        .arg(&out)
        .arg("--runs-dir")
        .arg(&runs)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .envs(crate::OPERATOR_SECRETS)
        .output()
        .expect("cua eval runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    // The second case is answered wrong on purpose: the suite is unsound, exit 1.
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    swept.push(("eval stdout".to_owned(), stdout));
    swept.push(("eval stderr".to_owned(), stderr));
    let reports: Vec<PathBuf> = walk(&out);
    assert!(
        reports.len() >= 4,
        "markdown, JSON, HTML and evaluation: {reports:?}"
    );
    // (The runs' evidence is swept by `canary_secrets_and_sensitive_inputs_never_leave_the_process`;
    // its snapshots show what the screen showed, other members' numbers included.)
    for path in reports {
        let bytes = std::fs::read(&path).expect("a readable file");
        swept.push((
            path.display().to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
    }
    assert!(
        swept.iter().any(|(sink, text)| sink.ends_with(".md")
            && text.contains(r"member_id=\<redacted:string\[5\]\>")),
        "the eval report names its cases by the inputs' shape"
    );
    for (sink, text) in &swept {
        for canary in canaries {
            assert!(!text.contains(canary), "{sink} carries {canary:?}:\n{text}");
        }
    }
}

/// `cua evidence keygen`, a replay that signs its ledger line with `CUA_EVIDENCE_KEY`, and
/// `cua evidence verify --public-key`: the right key verifies, another key does not, a key
/// that cannot be read stops the run before the browser starts.
#[test]
fn a_signed_run_verifies_with_its_installation_key_only() {
    let scene = Scene::new();
    let cua = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_cua"))
            .args(args)
            .output()
            .expect("the cua binary runs");
        (
            output.status.code().expect("an exit code"),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let keys = scene.scratch.path().join("keys");
    let other = scene.scratch.path().join("other-keys");
    for dir in [&keys, &other] {
        let (code, stdout, stderr) =
            cua(&["evidence", "keygen", "--out", &dir.display().to_string()]);
        assert_eq!(code, 0, "{stdout}{stderr}");
    }
    let (code, _, stderr) = cua(&["evidence", "keygen", "--out", &keys.display().to_string()]);
    assert_eq!(code, 2, "an existing key is never overwritten: {stderr}");
    let private = keys.join("evidence.key").display().to_string();
    let (code, stdout, stderr) = scene.replay(
        &[
            "corebank.member.savings_balance@1.0.0",
            "--input",
            "member_id=12345",
            "--run-id",
            "signed-run",
        ],
        &[("CUA_EVIDENCE_KEY", private.as_str())],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let run_dir = scene.evidence().join("signed-run").display().to_string();
    let public = keys.join("evidence.pub").display().to_string();
    let (code, stdout, stderr) = cua(&["evidence", "verify", &run_dir, "--public-key", &public]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("signature verified"), "{stdout}");
    let wrong = other.join("evidence.pub").display().to_string();
    let (code, stdout, _) = cua(&["evidence", "verify", &run_dir, "--public-key", &wrong]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("signature"), "{stdout}");
    let (code, _, stderr) = scene.replay(
        &[
            "corebank.member.savings_balance@1.0.0",
            "--input",
            "member_id=12345",
            "--run-id",
            "unreadable-key",
        ],
        &[("CUA_EVIDENCE_KEY", "/dev/zero")],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("CUA_EVIDENCE_KEY"), "{stderr}");
    assert!(
        !scene.evidence().join("unreadable-key").exists(),
        "refused before the run started"
    );
}

/// Issue #14: Northgate's overlay renames the transfer's confirm, so the base's approval does
/// not carry over. `catalog approve --tenant` takes the tenant's own approval, pinned to what the
/// policy re-derives, and `replay --tenant` finds it; revoked, the transfer is refused again.
#[test]
fn a_tenant_approval_taken_with_catalog_approve_lets_that_tenants_transfer_run() {
    let scene = Scene::with_variant(memberdesk::Variant::NorthgateFcu);
    let repository = Path::new(env!("CARGO_MANIFEST_DIR"));
    let catalog = scene.scratch.path().join("catalog");
    let tenants = scene.scratch.path().join("tenants");
    crate::mcp::copy_yaml(&repository.join("capabilities"), &catalog);
    crate::mcp::copy_yaml(&repository.join("tenants"), &tenants);
    let (catalog_arg, tenants_arg) = (catalog.display().to_string(), tenants.display().to_string());
    let transfer = |run_id: &str, reference: &str| {
        scene.replay(
            &[
                "corebank.member.transfer_funds@1.0.0",
                "--tenant",
                "northgate-fcu",
                "--catalog",
                &catalog_arg,
                "--tenants",
                &tenants_arg,
                "--allow-irreversible",
                "--run-id",
                run_id,
                "--input",
                "member_id=12345",
                "--input",
                "from_account=S-12345-01",
                "--input",
                "to_account=C-12345-02",
                "--input",
                "amount=12.34",
                "--input",
                &format!("client_reference={reference}"),
            ],
            &[],
        )
    };
    let decide = |verb: &str, tenant: Option<&str>, by: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_cua"))
            .args([
                "catalog",
                verb,
                "corebank.member.transfer_funds@1.0.0",
                "--by",
                by,
            ])
            .args(
                tenant
                    .map(|tenant| ["--tenant", tenant])
                    .into_iter()
                    .flatten(),
            )
            .args(["--catalog", &catalog_arg, "--tenants", &tenants_arg])
            .env_remove("CUA_CATALOG")
            .output()
            .expect("the cua binary runs");
        (
            output.status.code().expect("an exit code"),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };

    // The base approved: it does not carry through an overlay that renames the confirm.
    let (code, stdout, stderr) = decide("approve", None, "base-reviewer");
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, stdout, stderr) = transfer("northgate-unapproved", "NG-REF-1");
    assert_eq!(
        code, 1,
        "refused without the tenant's approval: {stdout}{stderr}"
    );
    assert!(
        format!("{stdout}{stderr}").contains("policy_denied"),
        "{stdout}{stderr}"
    );
    assert!(scene.fixture().handle().transfers().is_empty());

    let (code, stdout, stderr) = decide("approve", Some("northgate-fcu"), "northgate-reviewer");
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        tenants
            .join("northgate-fcu/corebank.member.transfer_funds@1.0.0.approval.yaml")
            .is_file()
    );
    let (code, stdout, stderr) = transfer("northgate-approved", "NG-REF-2");
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(scene.fixture().handle().transfers().len(), 1);

    let (code, stdout, stderr) = decide("revoke", Some("northgate-fcu"), "northgate-reviewer");
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, stdout, stderr) = transfer("northgate-revoked", "NG-REF-3");
    assert_eq!(code, 1, "refused once revoked: {stdout}{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("policy_denied"),
        "{stdout}{stderr}"
    );
    assert_eq!(scene.fixture().handle().transfers().len(), 1);
}

/// A secret the flow needs (here, the sign-on remedy's password) that the environment does not
/// hold is a usage error naming the variable, before any browser starts or evidence is written,
/// never an `internal` failure halfway through the flow.
#[test]
fn a_missing_secret_is_refused_before_the_browser_starts_naming_its_variable() {
    let scene = Scene::new();
    for batch in [false, true] {
        let rows = scene.scratch.path().join("rows.jsonl");
        std::fs::write(&rows, "{\"member_id\": \"12345\"}\n").expect("a rows file");
        let mut args = vec![
            "--format",
            "json",
            "corebank.member.savings_balance@1.0.0",
            "--run-id",
            "no-secret",
        ];
        let rows_arg = rows.display().to_string();
        if batch {
            args.extend(["--inputs", rows_arg.as_str()]);
        } else {
            args.extend(["--input", "member_id=12345"]);
        }
        let output = scene
            .replay_command(&args)
            .env_remove("CUA_SECRET_COREBANK_OPERATOR_PASSWORD")
            .output()
            .expect("the cua binary runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(2), "batch {batch}: {stdout}");
        let envelope: Value = serde_json::from_str(&stdout).expect("one JSON envelope");
        assert_eq!(envelope["error"]["code"], "missing_secret", "{envelope}");
        let message = envelope["error"]["message"].as_str().expect("a message");
        assert!(
            message.contains("CUA_SECRET_COREBANK_OPERATOR_PASSWORD")
                && message.contains("corebank.auth.sign_on@1.0.0"),
            "{message}"
        );
        assert!(
            !scene.evidence().exists(),
            "nothing was started: no evidence was written"
        );
    }
}

#[test]
fn a_batch_prints_one_line_per_row_in_order_and_resumes_without_rerunning() {
    let scene = Scene::new();
    let rows = scene.scratch.path().join("rows.jsonl");
    std::fs::write(
        &rows,
        concat!(
            "{\"member_id\": \"12345\"}\n",
            "{\"member_id\": \"99999\"}\n",
            "\n",
            "{\"member_id\": \"123\"}\n",
            "not json\n",
            "{\"member_id\": \"67890\"}\n",
        ),
    )
    .expect("a rows file");
    let rows = rows.display().to_string();
    let args = [
        "corebank.member.savings_balance@1.0.0",
        "--inputs",
        rows.as_str(),
        "--concurrency",
        "2",
        "--run-id",
        "cli-batch",
    ];
    let (code, stdout, stderr) = scene.replay(&args, &[]);
    assert_eq!(
        code, 1,
        "a failed row makes the batch exit 1\n{stdout}\n{stderr}"
    );
    let summary = |stdout: &str| -> Vec<String> {
        stdout
            .lines()
            .map(|line| {
                let line: Value = serde_json::from_str(line).expect("a JSON line per row");
                format!(
                    "row {} {} exit {} {}",
                    line["row"],
                    line["status"].as_str().unwrap_or_default(),
                    line["exit_code"],
                    line["result"]["outputs"]["savings_balance"]
                        .as_str()
                        .or(line["result"]["outcome"]["code"].as_str())
                        .or(line["result"]["error"]["code"].as_str())
                        .or(line["error"].as_str().map(|_| "invalid"))
                        .unwrap_or_default()
                )
            })
            .collect()
    };
    let first = summary(&stdout);
    assert_eq!(
        first,
        [
            "row 1 success exit 0 4210.55",
            "row 2 business_outcome exit 0 member_not_found",
            "row 4 failed exit 1 input_validation_failed",
            "row 5 invalid_row exit 2 invalid",
            "row 6 success exit 0 18730.00",
        ]
    );
    let runs = |scene: &Scene| {
        std::fs::read_dir(scene.evidence())
            .expect("the evidence root")
            .flatten()
            .filter(|entry| entry.path().is_dir())
            .count()
    };
    assert_eq!(runs(&scene), 4);
    // Resuming a finished batch runs nothing and prints the same lines; with --junit, a test
    // case per row for CI: the failed row fails with its code, the invalid row is an error.
    let junit = scene.scratch.path().join("batch.xml");
    let junit_path = junit.display().to_string();
    let mut resume = args.to_vec();
    resume.push("--resume");
    let mut with_junit = resume.clone();
    with_junit.extend(["--junit", junit_path.as_str()]);
    let (code, again, _) = scene.replay(&with_junit, &[]);
    assert_eq!(code, 1);
    assert_eq!(again, stdout);
    assert_eq!(runs(&scene), 4);
    let cases: Vec<String> = crate::junit::cases(&junit)
        .iter()
        .map(|case| format!("{} {} {}", case.name, case.outcome, case.kind))
        .collect();
    assert_eq!(
        cases,
        [
            "row 1 passed ",
            "row 2 passed ",
            "row 4 failure input_validation_failed",
            "row 5 error invalid_row",
            "row 6 passed ",
        ]
    );
    // Progress is for a person: with stderr not a terminal, a plain line per row and a
    // one-line summary, no bar, no escape codes; stdout holds only the rows' lines.
    assert!(
        stderr.contains("batch: 5 of 5 in ")
            && stderr.contains(": business_outcome 1, failed 1, invalid_row 1, success 2"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    // With --format json the rows' lines are followed by one envelope summing the batch.
    let mut json = vec!["--format", "json"];
    json.extend(&resume);
    let (code, lines, _) = scene.replay(&json, &[]);
    assert_eq!(code, 1);
    let (envelope, rows) = lines.trim_end().rsplit_once('\n').map_or_else(
        || panic!("row lines and an envelope: {lines}"),
        |(rows, envelope)| (envelope.to_owned(), rows.to_owned()),
    );
    assert_eq!(format!("{rows}\n"), stdout, "the same row lines");
    let envelope: Value = serde_json::from_str(&envelope).expect("an envelope");
    assert_eq!(envelope["ok"], false, "{envelope}");
    assert_eq!(envelope["command"], "replay");
    assert_eq!(envelope["data"]["batch"], "cli-batch");
    assert_eq!(envelope["data"]["done"], 5);
    assert_eq!(envelope["data"]["statuses"]["success"], 2);
    assert_eq!(envelope["error"]["code"], "rows_unsuccessful");
}

pub(crate) fn verify(run_dir: &Path) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(["evidence", "verify"])
        .arg(run_dir)
        .output()
        .expect("the cua binary runs");
    (
        output.status.code().expect("an exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("a readable directory")
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The binary wires both operators: the mixed capability (an `http` read, UI steps, a
/// `command`, an `http` creation) replays from a fresh browser (signing on through its declared
/// remedy) under a policy file that declares the command by a path relative to itself.
#[test]
fn a_capability_mixing_http_ui_and_command_steps_replays_with_per_step_verdicts() {
    let scene = Scene::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let capability = scene.scratch.path().join("account_review.yaml");
    std::fs::copy(
        root.join("tests/fixtures/operators/corebank.member.account_review@1.0.0.yaml"),
        &capability,
    )
    .expect("the fixture capability copies");
    let sealed = Command::new(env!("CARGO_BIN_EXE_cua"))
        .arg("seal")
        .arg(&capability)
        .current_dir(root)
        .output()
        .expect("cua seal runs");
    assert!(sealed.status.success(), "{sealed:?}");
    // A policy beside a copy of the tool, naming it relative to itself.
    let config = scene.scratch.path().join("config");
    std::fs::create_dir_all(config.join("tools")).expect("a config directory");
    std::fs::copy(
        root.join("tests/fixtures/operators/member-risk"),
        config.join("tools/member-risk"),
    )
    .expect("the tool copies");
    let mut policy =
        std::fs::read_to_string(root.join("config/policy.yaml")).expect("the policy reads");
    policy
        .push_str("\ncommands:\n  allowed:\n    - {name: member-risk, path: tools/member-risk}\n");
    let policy_file = config.join("policy.yaml");
    std::fs::write(&policy_file, policy).expect("the policy writes");

    let capability = capability.display().to_string();
    let policy_file = policy_file.display().to_string();
    let (code, stdout, stderr) = scene.replay_raw(
        &[
            capability.as_str(),
            "--policy",
            policy_file.as_str(),
            "--input",
            "member_id=12345",
            "--input",
            "note=Reviewed by the CLI",
            "--format",
            "json",
        ],
        &[("CUA_SECRET_COREBANK_API_TOKEN", "md-api-token")],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let envelope: Value = serde_json::from_str(&stdout).expect("one JSON envelope");
    let outputs = &envelope["data"]["result"]["outputs"];
    assert_eq!(outputs["member_name"], "Ada Lovelace", "{envelope:#}");
    assert_eq!(outputs["risk_band"], "medium", "{envelope:#}");
    assert_eq!(outputs["note_id"], "NT-000001", "{envelope:#}");
    assert_eq!(
        scene.fixture().handle().note_texts("12345"),
        vec!["Reviewed by the CLI".to_owned()]
    );
    let text = stdout.clone();
    for (step, verdict) in [
        ("read_member", "not_applicable"),
        ("score_balance", "not_applicable"),
        ("add_note", "confirmed"),
    ] {
        let found = envelope["data"]["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|entry| entry["step"] == step && entry["verdict"] == verdict);
        assert!(found, "{step} {verdict} in {text}");
    }
    assert!(!stdout.contains("md-api-token") && !stderr.contains("md-api-token"));
}
