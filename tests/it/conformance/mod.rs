//! The conformance suite: capabilities for two real third-party apps we did not write,
//! WordPress (with MariaDB) and Redmine (with SQLite), installed from Debian's packages and
//! started with their own seeded data by `conformance/apps.sh up` (which `make test` runs).
//!
//! Every test replays a sealed capability from `conformance/<app>/capabilities/` with the `cua`
//! binary against the live app, and reads the truth from the app's own database, never from
//! what the run said. An app that is not running fails the test with the command that starts it.

mod redmine;
mod wordpress;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

/// `conformance/apps.env`, the one place the ports and credentials are written down.
fn settings() -> BTreeMap<String, String> {
    let path = root().join("conformance/apps.env");
    let text = std::fs::read_to_string(&path).expect("conformance/apps.env is readable");
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (key, value) = line.split_once('=').expect("KEY=VALUE lines");
            (key.to_owned(), value.to_owned())
        })
        .collect()
}

fn setting(key: &str) -> String {
    settings()
        .remove(key)
        .unwrap_or_else(|| panic!("conformance/apps.env sets {key}"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One conformance app: where it answers, its catalog, and the secrets its sign-in reads.
struct App {
    name: &'static str,
    base_url: String,
    catalog: PathBuf,
    secrets: Vec<(String, String)>,
    scratch: TempDir,
}

impl App {
    /// The app, checked to answer on its port; a test against an app that is down fails here.
    fn new(
        name: &'static str,
        port_key: &str,
        health_path: &str,
        secrets: Vec<(String, String)>,
    ) -> Self {
        let port: u16 = setting(port_key).parse().expect("a port");
        let base_url = format!("http://127.0.0.1:{port}");
        let status = http_status(port, health_path);
        assert_eq!(
            status,
            Ok(200),
            "{name} does not answer at {base_url}{health_path}: start the conformance apps with \
             `conformance/apps.sh up` (`make test` does)"
        );
        Self {
            name,
            base_url,
            catalog: root().join("conformance").join(name).join("capabilities"),
            secrets,
            scratch: tempfile::tempdir().expect("a scratch directory"),
        }
    }

    /// A copy of the app's catalog in the scratch directory with `reference` approved by a
    /// reviewer through `cua catalog approve`, pinned to its content hash, for the runs that
    /// go through [`App::replay_approved`].
    fn approve(&mut self, reference: &str) {
        let approved = self.scratch.path().join("approved-catalog");
        std::fs::create_dir_all(&approved).expect("a catalog copy");
        for entry in std::fs::read_dir(&self.catalog).expect("the catalog") {
            let path = entry.expect("an entry").path();
            std::fs::copy(&path, approved.join(path.file_name().expect("a name")))
                .expect("copying the catalog");
        }
        let output = Command::new(env!("CARGO_BIN_EXE_cua"))
            .current_dir(root())
            .args([
                "catalog",
                "approve",
                reference,
                "--by",
                "conformance-reviewer",
            ])
            .arg("--catalog")
            .arg(&approved)
            .output()
            .expect("the cua binary runs");
        assert!(
            output.status.success(),
            "approving {reference}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        self.catalog = approved;
    }

    /// Writes `yaml` as the capability `file_name` in the scratch directory and seals it with
    /// `cua seal`; the path to replay.
    fn sealed_draft(&self, file_name: &str, yaml: &str) -> String {
        let draft = self.scratch.path().join(file_name);
        std::fs::write(&draft, yaml).expect("the draft is written");
        let sealed = Command::new(env!("CARGO_BIN_EXE_cua"))
            .arg("seal")
            .arg(&draft)
            .output()
            .expect("cua seal runs");
        assert!(
            sealed.status.success(),
            "{}",
            String::from_utf8_lossy(&sealed.stderr)
        );
        draft.display().to_string()
    }

    /// `cua replay <capability> --format json` with the inputs given; the envelope and the
    /// exit code.
    fn replay(&self, reference: &str, inputs: &[(&str, &str)]) -> Replay {
        self.replay_with(reference, inputs, &[])
    }

    /// [`App::replay`] with the caller's opt-in to irreversible steps.
    fn replay_irreversible(&self, reference: &str, inputs: &[(&str, &str)]) -> Replay {
        self.run(reference, inputs, &[], &["--allow-irreversible"])
    }

    /// [`App::replay`] with environment variables set (a secret overridden, say).
    fn replay_with(
        &self,
        reference: &str,
        inputs: &[(&str, &str)],
        env: &[(&str, &str)],
    ) -> Replay {
        self.run(reference, inputs, env, &[])
    }

    fn run(
        &self,
        reference: &str,
        inputs: &[(&str, &str)],
        env: &[(&str, &str)],
        flags: &[&str],
    ) -> Replay {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cua"));
        command
            .current_dir(root())
            .args([
                "replay",
                reference,
                "--format",
                "json",
                "--base-url",
                &self.base_url,
            ])
            .arg("--catalog")
            .arg(&self.catalog)
            .arg("--evidence-dir")
            .arg(self.scratch.path().join("runs"))
            .args(flags)
            .env("NO_COLOR", "1");
        for (name, value) in inputs {
            command.arg("--input").arg(format!("{name}={value}"));
        }
        for (name, value) in &self.secrets {
            command.env(name, value);
        }
        for (name, value) in env {
            command.env(name, value);
        }
        let output = command.output().expect("the cua binary runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let envelope: Value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
            panic!(
                "{}: `cua replay {reference}` printed no JSON envelope ({error}); stdout: {stdout}; stderr: {}",
                self.name,
                String::from_utf8_lossy(&output.stderr)
            )
        });
        Replay {
            code: output.status.code().expect("an exit code"),
            envelope,
        }
    }
}

/// The app's sign-in succeeds with the stored credentials and, with `password_env` set to a
/// wrong password, answers the business outcome `invalid_credentials`.
fn sign_in_and_refusal(app: &App, reference: &str, password_env: &str) {
    app.replay(reference, &[]).succeeded();
    let rejected = app.replay_with(reference, &[], &[(password_env, "not-the-password")]);
    assert_eq!(
        (rejected.code, rejected.status(), rejected.outcome()),
        (0, "business_outcome", "invalid_credentials"),
        "{:#}",
        rejected.envelope
    );
}

/// One replay's exit code and JSON envelope.
struct Replay {
    code: i32,
    envelope: Value,
}

impl Replay {
    fn result(&self) -> &Value {
        &self.envelope["data"]["result"]
    }

    fn status(&self) -> &str {
        self.result()["status"]
            .as_str()
            .unwrap_or_else(|| panic!("the envelope has no result status: {}", self.envelope))
    }

    fn output(&self, name: &str) -> &str {
        self.result()["outputs"][name]
            .as_str()
            .unwrap_or_else(|| panic!("no output {name}: {}", self.envelope))
    }

    fn outcome(&self) -> &str {
        self.result()["outcome"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("no business outcome: {}", self.envelope))
    }

    /// Fails with the whole envelope unless the run succeeded.
    fn succeeded(&self) -> &Self {
        assert_eq!(
            (self.code, self.status()),
            (0, "success"),
            "the run did not succeed: {:#}",
            self.envelope
        );
        self
    }
}

/// The HTTP status of `GET path` on loopback, or why there is none (three tries: a PHP
/// built-in server whose workers are all busy may drop a connection).
fn http_status(port: u16, path: &str) -> Result<u16, String> {
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    let mut last = String::new();
    for attempt in 0..3 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(500));
        }
        match http_request(port, &request) {
            Ok(status) => return Ok(status),
            Err(error) => last = error,
        }
    }
    Err(last)
}

/// Sends one raw HTTP request on loopback and returns the response's status.
fn http_request(port: u16, request: &str) -> Result<u16, String> {
    let mut stream =
        TcpStream::connect(("127.0.0.1", port)).map_err(|error| format!("connecting: {error}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .map_err(|error| error.to_string())?;
    stream
        .write_all(request.as_bytes())
        .map_err(|error| format!("sending: {error}"))?;
    let mut head = [0u8; 12];
    stream
        .read_exact(&mut head)
        .map_err(|error| format!("reading the status line: {error}"))?;
    let line = String::from_utf8_lossy(&head).into_owned();
    line.get(9..12)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP status line: {line:?}"))
}

/// Runs a query-printing command (`sqlite3`, `mariadb`) and returns its rows, tab-separated.
fn query(program: &str, args: &[&str], sql: &str) -> Vec<Vec<String>> {
    let output = Command::new(program)
        .args(args)
        .arg(sql)
        .output()
        .unwrap_or_else(|error| {
            panic!("{program} runs ({error}): conformance/apps.sh installs it")
        });
    assert!(
        output.status.success(),
        "{program} {sql:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| line.split('\t').map(str::to_owned).collect())
        .collect()
}

/// A name no earlier run used, so reruns against the same seeded app never collide.
fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_nanos();
    format!("{prefix} {:x}", nanos % 0xffff_ffff)
}

#[test]
fn every_conformance_capability_validates_and_is_sealed() {
    let files: Vec<PathBuf> = ["wordpress", "redmine"]
        .iter()
        .flat_map(|app| {
            let dir = root().join("conformance").join(app).join("capabilities");
            std::fs::read_dir(&dir)
                .map(|entries| {
                    entries
                        .map(|e| e.expect("an entry").path())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    assert!(files.len() >= 4, "conformance capabilities: {files:?}");
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .current_dir(root())
        .arg("validate")
        .args(&files)
        .output()
        .expect("the cua binary runs");
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable");
        assert!(
            text.contains("\ncontent_hash: blake3:"),
            "{} is not sealed",
            file.display()
        );
    }
}

#[test]
fn docs_examples_are_quoted_from_tested_capabilities() {
    let guide = std::fs::read_to_string(root().join("docs/authoring.md")).expect("the guide");
    let mut quoted = 0;
    for block in guide.split("```yaml\n").skip(1) {
        let block = block.split("```").next().expect("a closed block");
        let (first, body) = block.split_once('\n').expect("a block with a body");
        let path = first
            .strip_prefix("# ")
            .unwrap_or_else(|| panic!("an example starts with `# <file>`: {first:?}"));
        assert!(
            path.starts_with("conformance/"),
            "{path} is not a tested capability"
        );
        let file = std::fs::read_to_string(root().join(path))
            .unwrap_or_else(|error| panic!("{path}: {error}"));
        assert!(
            file.contains(body),
            "docs/authoring.md quotes {path}, which no longer holds:\n{body}"
        );
        quoted += 1;
    }
    assert!(quoted >= 8, "the guide's examples: {quoted}");
}

/// Runs `cua eval` on a suite written from the app's own database, and returns its evaluation.
fn evaluate(app: &App, suite_yaml: &str, name: &str) -> Value {
    let dir = app.scratch.path().join("eval");
    std::fs::create_dir_all(&dir).expect("an eval directory");
    let suite = dir.join(format!("{name}.yaml"));
    std::fs::write(&suite, suite_yaml).expect("the suite");
    let mut command = Command::new(env!("CARGO_BIN_EXE_cua"));
    command
        .current_dir(root())
        .arg("eval")
        .arg(&suite)
        .arg("--catalog")
        .arg(&app.catalog)
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--runs-dir")
        .arg(dir.join("runs"));
    for (key, value) in &app.secrets {
        command.env(key, value);
    }
    let output = command.output().expect("cua eval runs");
    assert!(
        output.status.success(),
        "cua eval {name}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let evaluation = dir.join("out").join(format!("{name}.evaluation.json"));
    serde_json::from_str(&std::fs::read_to_string(&evaluation).expect("the evaluation"))
        .expect("an evaluation")
}

/// A YAML scalar, quoted.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

/// One run of generated specs against a conformance app.
struct SpecRun<'s> {
    /// Generated (with `flags`) and run; each must pass.
    references: &'s [&'s str],
    /// Refused by codegen without flags (each reason is checked to be there).
    refused: &'s [&'s str],
    /// Passed to `cua codegen`, e.g. `--allow-irreversible`.
    flags: &'s [&'s str],
    /// The spec's inputs (`CUA_INPUT_…`).
    env: &'s [(&'s str, &'s str)],
}

/// `cua codegen` for each reference of `run` from the app's catalog into a fresh spec directory
/// inside the Playwright install, then `npx playwright test` against the live app; every spec
/// must pass. Returns each spec's outcome, with the outputs it read.
fn generated_specs_pass(app: &App, run: &SpecRun<'_>) -> Vec<crate::codegen::Outcome> {
    use crate::codegen::{one_at_a_time, outcome, playwright_ci, run_playwright};
    let _one_at_a_time = one_at_a_time();
    let install = playwright_ci();
    let specs = tempfile::Builder::new()
        .prefix("conformance-")
        .tempdir_in(&install)
        .expect("a spec directory inside the install");
    let codegen = |reference: &str, flags: &[&str], out: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_cua"))
            .current_dir(root())
            .args(["codegen", reference, "--catalog"])
            .arg(&app.catalog)
            .args(flags)
            .arg("--out")
            .arg(out)
            .output()
            .expect("cua codegen runs")
    };
    for reference in run.references {
        let out = specs.path().join(format!("{reference}.spec.ts"));
        let generated = codegen(reference, run.flags, &out);
        assert!(
            generated.status.success(),
            "codegen {reference}: {}",
            String::from_utf8_lossy(&generated.stderr)
        );
    }
    for reference in run.refused {
        let out = specs.path().join(format!("{reference}.refused.ts"));
        let generated = codegen(reference, &[], &out);
        assert_eq!(
            generated.status.code(),
            Some(1),
            "{reference} is refused, step by step"
        );
        assert!(
            String::from_utf8_lossy(&generated.stderr).contains("cannot be generated"),
            "{}",
            String::from_utf8_lossy(&generated.stderr)
        );
        assert!(!out.exists(), "nothing is written for a refused capability");
    }
    let mut env: Vec<(&str, &str)> = run.env.to_vec();
    for (name, value) in &app.secrets {
        env.push((name, value));
    }
    let outcomes = run_playwright(&install, specs.path(), &app.base_url, &env);
    for reference in run.references {
        let file = format!("{reference}.spec.ts");
        let result = outcome(&outcomes, &file);
        assert!(
            result.passed,
            "{file} failed under Playwright Test: {:#?}",
            result.errors
        );
    }
    outcomes
}

/// The outputs the spec generated from `reference` read.
fn spec_outputs<'o>(
    outcomes: &'o [crate::codegen::Outcome],
    reference: &str,
) -> &'o BTreeMap<String, String> {
    &crate::codegen::outcome(outcomes, &format!("{reference}.spec.ts")).outputs
}

/// A demonstration on a conformance app, scripted through the recorder's API as an operator
/// would give it: open `url`, sign in through the form the app shows, read one node.
struct Demonstration<'d> {
    url: String,
    goal: String,
    run_id: &'d str,
    /// The sign-in form's username textbox, password textbox and button, by name.
    sign_in: [&'d str; 3],
    user: String,
    password: String,
    /// A node that shows the page to read from has loaded.
    ready: (&'d str, &'d str),
    /// The node read, and the output it becomes.
    read: (&'d str, &'d str, &'d str),
}

impl Demonstration<'_> {
    /// Records it (asserting no model was asked), compiles the trace, seals the draft, and
    /// returns the draft's path and text; the password is checked to be nowhere in it.
    async fn record_and_seal(&self, app: &App) -> (PathBuf, String) {
        use crate::console::{
            center, find, finish_recording, has, read_trace, start_recording, wait_for, walk,
        };
        let evidence = app.scratch.path().join("recordings");
        let (child, api) = start_recording(&self.url, &self.goal, &evidence, self.run_id);
        let at = |snapshot: &cua_snapshot::UiSnapshot, role: &str, name: &str| {
            let (x, y) = center(find(snapshot, role, name));
            serde_json::json!({ "kind": "click", "x": x, "y": y })
        };
        let typed = |text: &str| serde_json::json!({ "kind": "text", "text": text });
        let [user_box, password_box, button] = self.sign_in;
        let form = wait_for("the sign-in form", Duration::from_secs(30), || async {
            let snapshot = api.snapshot_of("record-1").await;
            has(&snapshot, "button", button).then_some(snapshot)
        })
        .await;
        for gesture in [
            at(&form, "textbox", user_box),
            typed(&self.user),
            at(&form, "textbox", password_box),
            typed(&self.password),
            at(&form, "button", button),
        ] {
            api.gesture("record-1", gesture).await;
        }
        let (ready_role, ready_name) = self.ready;
        let page = wait_for("the page to read", Duration::from_secs(30), || async {
            let snapshot = api.snapshot_of("record-1").await;
            has(&snapshot, ready_role, ready_name).then_some(snapshot)
        })
        .await;
        let (role, name, into) = self.read;
        let (x, y) = center(find(&page, role, name));
        api.gesture(
            "record-1",
            serde_json::json!({ "kind": "extract", "x": x, "y": y, "into": into }),
        )
        .await;
        finish_recording(child, &api).await;

        let run_dir = evidence.join(self.run_id);
        assert!(
            read_trace(&run_dir)
                .iter()
                .all(|line| line["actor"] != "agent" && line["event"] != "llm_call"),
            "no model was asked"
        );
        let drafts = app.scratch.path().join("drafts");
        let cua = |args: &[&std::ffi::OsStr]| {
            let output = Command::new(env!("CARGO_BIN_EXE_cua"))
                .current_dir(root())
                .args(args)
                .output()
                .expect("cua runs");
            assert!(
                output.status.success(),
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        };
        cua(&[
            "compile".as_ref(),
            run_dir.as_os_str(),
            "--out".as_ref(),
            drafts.as_os_str(),
        ]);
        let draft = walk(&drafts).pop().expect("one draft");
        cua(&["seal".as_ref(), draft.as_os_str()]);
        let text = std::fs::read_to_string(&draft).expect("the draft");
        assert!(text.contains("{base_url}"), "{text}");
        assert!(!text.contains(&self.password), "{text}");
        (draft, text)
    }
}
