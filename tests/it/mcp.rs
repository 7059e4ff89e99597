//! `cua mcp` and `cua serve` driven by the official Python MCP SDK (`tests/mcp/client.py`), a
//! client we did not write, against the MemberDesk fixture (served by this test process) in
//! Debian's Chromium. The catalog is a temporary copy with the savings-balance and
//! transfer-funds capabilities approved (pinned to their hashes); the others stay unapproved.
//!
//! Needs the SDK in `target/mcp-venv` (`make deps-python`) and Chromium; without either, the
//! tests fail naming the install step.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use cua_artifact::CapabilityRef;
use cua_catalog::{ApproveRequest, Catalog, CatalogConfig};
use serde_json::Value;
use tempfile::TempDir;

const APPROVED: [&str; 2] = [
    "corebank.member.savings_balance@1.0.0",
    "corebank.member.transfer_funds@1.0.0",
];

/// The fixture, a catalog copy with approvals, and a scratch directory for evidence.
struct Scene {
    runtime: tokio::runtime::Runtime,
    fixture: Option<memberdesk::RunningFixture>,
    scratch: TempDir,
}

impl Scene {
    fn new() -> Self {
        require_chromium();
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let fixture = runtime
            .block_on(memberdesk::serve(memberdesk::FixtureConfig::loopback(
                memberdesk::Variant::FirstValley,
            )))
            .expect("the fixture serves");
        let scratch = tempfile::tempdir().expect("a scratch directory");
        copy_yaml(
            &repository().join("capabilities"),
            &scratch.path().join("capabilities"),
        );
        copy_yaml(
            &repository().join("tenants"),
            &scratch.path().join("tenants"),
        );
        let catalog = Catalog::new(CatalogConfig::rooted_at(scratch.path()));
        for reference in APPROVED {
            catalog
                .approve(&ApproveRequest {
                    reference: CapabilityRef::parse(reference).expect("a reference"),
                    by: "reviewer".to_owned(),
                    at: "2026-11-30T00:00:00Z".to_owned(),
                    notes: Some("approved for the MCP end-to-end test".to_owned()),
                    from_eval: false,
                })
                .expect("the approval is recorded");
        }
        Self {
            runtime,
            fixture: Some(fixture),
            scratch,
        }
    }

    fn fixture(&self) -> &memberdesk::RunningFixture {
        self.fixture.as_ref().expect("the fixture runs until drop")
    }

    /// The server arguments after `mcp` or `serve`.
    fn server_args(&self) -> Vec<String> {
        let root = self.scratch.path();
        [
            "--catalog",
            &root.join("capabilities").display().to_string(),
            "--tenants",
            &root.join("tenants").display().to_string(),
            "--policy",
            &repository()
                .join("config/policy.yaml")
                .display()
                .to_string(),
            "--base-url",
            &self.fixture().base_url(),
            "--evidence-dir",
            &root.join("evidence").display().to_string(),
        ]
        .into_iter()
        .map(str::to_owned)
        .collect()
    }

    /// Runs the Python client and returns its report; panics with the report when a check
    /// failed.
    fn client(&self, args: &[String]) -> Value {
        let output = Command::new(python())
            .arg(repository().join("tests/mcp/client.py"))
            .args(args)
            .current_dir(repository())
            .env("NO_COLOR", "1")
            .env("CUA_SECRET_COREBANK_OPERATOR_ID", memberdesk::OPERATOR_ID)
            .env(
                "CUA_SECRET_COREBANK_OPERATOR_PASSWORD",
                memberdesk::OPERATOR_PASSWORD,
            )
            .output()
            .expect("the Python client starts");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
            panic!(
                "the client printed no report ({error}; {}):\n{stdout}\nstderr:\n{stderr}",
                output.status
            )
        });
        assert!(
            output.status.success() && report["ok"] == true,
            "the MCP client's checks failed:\n{report:#}\nstderr:\n{stderr}"
        );
        report
    }

    /// Nothing moved: the seeded balances hold and no transfer was posted.
    fn assert_nothing_moved(&self) {
        let handle = self.fixture().handle();
        assert_eq!(
            handle.transfers().len(),
            0,
            "a transfer was posted: {:?}",
            handle.transfers()
        );
        for (account, cents) in [("S-12345-01", 421_055), ("C-12345-02", 81_230)] {
            assert_eq!(
                handle.balance(account),
                Some(memberdesk::Money::from_cents(cents)),
                "{account}"
            );
        }
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        if let Some(fixture) = self.fixture.take() {
            let _ = self.runtime.block_on(fixture.shutdown());
        }
    }
}

#[test]
fn the_python_sdk_lists_reads_gets_an_outcome_and_is_refused_over_stdio() {
    let scene = Scene::new();
    let mut args = vec!["stdio".to_owned(), "--".to_owned()];
    args.push(env!("CARGO_BIN_EXE_cua").to_owned());
    args.push("mcp".to_owned());
    args.extend(scene.server_args());
    let report = scene.client(&args);
    let checks: Vec<&str> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|check| check["check"].as_str())
        .collect();
    for needle in [
        "savings balance of 12345 is 4210.55",
        "member 99999 is the business outcome member_not_found, not an error",
        "a transfer without a plan approval is a tool error that says why",
    ] {
        assert!(checks.contains(&needle), "{needle:?} was not checked");
    }
    scene.assert_nothing_moved();
    // Every call that ran left a run directory.
    let runs = std::fs::read_dir(scene.scratch.path().join("evidence"))
        .expect("evidence was written")
        .count();
    assert_eq!(runs, 2, "one run directory per call that ran");
}

#[test]
fn the_python_sdk_reads_over_streamable_http() {
    let scene = Scene::new();
    let mut server = Command::new(env!("CARGO_BIN_EXE_cua"))
        .arg("serve")
        .args(["--bind", "127.0.0.1:0"])
        .args(scene.server_args())
        .current_dir(repository())
        .env("CUA_SECRET_COREBANK_OPERATOR_ID", memberdesk::OPERATOR_ID)
        .env(
            "CUA_SECRET_COREBANK_OPERATOR_PASSWORD",
            memberdesk::OPERATOR_PASSWORD,
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cua serve starts");
    let url = listening_url(&mut server);
    let server = StopOnDrop(server);
    let report = scene.client(&["http".to_owned(), "--url".to_owned(), url]);
    drop(server);
    assert_eq!(report["mode"], "http");
    scene.assert_nothing_moved();
}

#[test]
fn serve_refuses_a_non_loopback_address_unless_allowed() {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args([
            "serve",
            "--bind",
            "0.0.0.0:0",
            "--base-url",
            "http://127.0.0.1:1",
        ])
        .current_dir(repository())
        .output()
        .expect("cua serve runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("refusing to listen on 0.0.0.0:0: it is not a loopback address"),
        "{stderr}"
    );
}

/// The `cua serve` this test started, stopped however the test ends.
struct StopOnDrop(Child);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads `cua serve`'s stderr until it says where it listens.
fn listening_url(server: &mut Child) -> String {
    let stderr = server.stderr.take().expect("stderr is piped");
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    loop {
        match received.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => {
                if let Some(url) = line.strip_prefix("cua serve: listening on ") {
                    return url.trim().to_owned();
                }
                seen.push(line);
            }
            Err(error) => panic!("cua serve did not say where it listens ({error}):\n{seen:#?}"),
        }
    }
}

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python with the MCP SDK: `CUA_MCP_PYTHON`, or the project-local venv.
fn python() -> PathBuf {
    let python = std::env::var_os("CUA_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository().join("target/mcp-venv/bin/python"));
    let ready = Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        ready,
        "the official Python MCP SDK is missing at {}: run `make deps-python` (python3 -m venv \
         target/mcp-venv && target/mcp-venv/bin/pip install mcp)",
        python.display()
    );
    python
}

fn require_chromium() {
    let chromium = std::env::var_os("CUA_CHROMIUM")
        .filter(|path| !path.is_empty())
        .map_or_else(
            || PathBuf::from("/usr/lib/chromium/chromium"),
            PathBuf::from,
        );
    assert!(
        chromium.is_file(),
        "Chromium is missing at {}: apt-get install -y chromium",
        chromium.display()
    );
}

fn copy_yaml(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a directory");
    for entry in std::fs::read_dir(from).expect("a readable directory") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().expect("a type").is_dir() {
            copy_yaml(&entry.path(), &target);
        } else if name.ends_with(".yaml") && !name.ends_with(".approval.yaml") {
            std::fs::copy(entry.path(), target).expect("a copy");
        }
    }
}
