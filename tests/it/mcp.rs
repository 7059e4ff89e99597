//! `cua mcp` and `cua serve` driven by the official Python MCP SDK (`tests/mcp/client.py`), a
//! client we did not write, against the MemberDesk fixture (served by this test process) in
//! Debian's Chromium. The catalog is a temporary copy with the savings-balance and
//! transfer-funds capabilities approved (pinned to their hashes); the others stay unapproved.
//! `cua serve` is also attacked with curl by another local user who has no token.
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
                    tenant: None,
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

    /// Starts `cua serve` on a free loopback port with `extra` arguments, and reads where it
    /// listens and the token it generated (none with `--operators`) from its stdout.
    fn serve(&self, extra: &[&str]) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cua"))
            .arg("serve")
            .args(["--bind", "127.0.0.1:0"])
            .args(extra)
            .args(self.server_args())
            .current_dir(repository())
            .envs(crate::OPERATOR_SECRETS)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cua serve starts");
        let lines = announcement(&mut child, 2);
        let server = StopOnDrop(child);
        let url = lines[0]
            .strip_prefix("cua serve listening on ")
            .unwrap_or_else(|| panic!("cua serve did not say where it listens: {lines:?}"))
            .to_owned();
        let token = match lines[1].strip_prefix("token: ") {
            Some(token) => Some(token.to_owned()),
            None => {
                assert_eq!(lines[1], "tokens: the operators file", "{lines:?}");
                None
            }
        };
        Served {
            _server: server,
            url,
            token,
        }
    }

    /// Runs the Python client (with `token` as `CUA_SERVE_TOKEN`) and returns its report;
    /// panics with the report when a check failed.
    fn client(&self, args: &[String], token: Option<&str>) -> Value {
        let mut command = Command::new(python());
        if let Some(token) = token {
            command.env("CUA_SERVE_TOKEN", token);
        }
        let output = command
            .arg(repository().join("tests/mcp/client.py"))
            .args(args)
            .current_dir(repository())
            .env("NO_COLOR", "1")
            .envs(crate::OPERATOR_SECRETS)
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
    let report = scene.client(&args, None);
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
        "progress is notified step by step during the call, always increasing",
    ] {
        assert!(checks.contains(&needle), "{needle:?} was not checked");
    }
    scene.assert_nothing_moved();
    // Every call that ran left a run directory.
    let runs = std::fs::read_dir(scene.scratch.path().join("evidence"))
        .expect("evidence was written")
        .filter(|entry| entry.as_ref().is_ok_and(|entry| entry.path().is_dir()))
        .count();
    assert_eq!(runs, 2, "one run directory per call that ran");
}

#[test]
fn the_python_sdk_reads_over_streamable_http_with_the_printed_token() {
    let scene = Scene::new();
    let served = scene.serve(&[]);
    let token = served
        .token
        .clone()
        .expect("cua serve prints the token it generated");
    assert_eq!(token.len(), 48, "{token}");
    let report = scene.client(
        &["http".to_owned(), "--url".to_owned(), served.url.clone()],
        Some(&token),
    );
    drop(served);
    assert_eq!(report["mode"], "http");
    scene.assert_nothing_moved();
    // The call ran and left evidence, and no byte of it holds the token.
    let evidence = scene.scratch.path().join("evidence");
    let mut files = Vec::new();
    collect_files(&evidence, &mut files);
    assert!(!files.is_empty(), "the read call left no evidence");
    for file in files {
        let bytes = std::fs::read(&file).expect("an evidence file");
        assert!(
            !bytes
                .windows(token.len())
                .any(|window| window == token.as_bytes()),
            "{} holds the bearer token",
            file.display()
        );
    }
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
        stderr.contains(
            "error: 0.0.0.0:0 is not a loopback address: pass --allow-remote to serve the MCP \
             tool server beyond this machine"
        ),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "it announced nothing");
}

#[test]
fn mcp_and_serve_refuse_a_base_url_that_is_not_an_origin_before_starting() {
    for command in ["mcp", "serve"] {
        let output = Command::new(env!("CARGO_BIN_EXE_cua"))
            .args([command, "--base-url", "http://127.0.0.1:8811/admin?next=/"])
            .current_dir(repository())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("cua runs");
        assert_eq!(output.status.code(), Some(2), "cua {command}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(
                "invalid origin `http://127.0.0.1:8811/admin?next=/`: must be a scheme, a host \
                 and an optional port with nothing after (found `/`)"
            ),
            "cua {command}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "cua {command} served nothing");
    }
}

#[test]
fn serve_and_console_take_the_same_access_flags() {
    // The two flags' lines of `--help`, spacing normalized (clap aligns columns per command).
    let help = |command: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_cua"))
            .args([command, "--help"])
            .env("NO_COLOR", "1")
            .output()
            .expect("cua runs");
        assert!(output.status.success(), "cua {command} --help");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|line| line.starts_with("--allow-remote") || line.starts_with("--operators"))
            .collect::<Vec<_>>()
    };
    let serve = help("serve");
    assert_eq!(serve.len(), 2, "{serve:#?}");
    assert!(serve[1].starts_with("--operators <FILE>"), "{serve:#?}");
    assert_eq!(serve, help("console"));
    // The old name of the flag is gone, not an alias.
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(["serve", "--allow-non-loopback"])
        .output()
        .expect("cua runs");
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn serve_refuses_a_malformed_operators_file() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let operators = scratch.path().join("operators");
    std::fs::write(&operators, "# who may call\nada: short\n").expect("the file is written");
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(["serve", "--bind", "127.0.0.1:0", "--operators"])
        .arg(&operators)
        .current_dir(repository())
        .output()
        .expect("cua serve runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "error: {}: the token of ada must be at least 24 characters without spaces",
            operators.display()
        )),
        "{stderr}"
    );
}

/// A `cua serve` this test started, stopped however the test ends.
struct Served {
    _server: StopOnDrop,
    url: String,
    /// The token it generated and printed; `None` with `--operators`.
    token: Option<String>,
}

/// The `cua serve` this test started, stopped however the test ends.
struct StopOnDrop(Child);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first `count` lines `cua serve` prints on stdout once it listens.
fn announcement(server: &mut Child, count: usize) -> Vec<String> {
    let stdout = server.stdout.take().expect("stdout is piped");
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    while seen.len() < count {
        match received.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => seen.push(line),
            Err(error) => panic!("cua serve did not announce itself ({error}):\n{seen:#?}"),
        }
    }
    seen
}

fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable directory") {
        let entry = entry.expect("an entry");
        if entry.file_type().expect("a type").is_dir() {
            collect_files(&entry.path(), files);
        } else {
            files.push(entry.path());
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

/// Copies the YAML documents under `from` (directories included, approvals left out) to `to`.
pub(crate) fn copy_yaml(from: &Path, to: &Path) {
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

/// The attack: an MCP session opened with curl, the tools listed, a plan approval requested for
/// the transfer and, when one came back, the transfer run with it. Prints `@@ <step> <status>`
/// after every answer, and the uid it ran as.
const ATTACK: &str = r#"
url=$1
printf '@@ uid %s\n' "$(id -u)"
post() {
  curl -sS --max-time 170 -D - -o - -w "\n@@ $1 %{http_code}\n" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    ${session:+-H "Mcp-Session-Id: $session"} --data "$2" "$url" 2>&1
}
session=
answer=$(post initialize '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"attacker","version":"0"}}}')
printf '%s\n' "$answer"
session=$(printf '%s\n' "$answer" | tr -d '\r' | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *//p' | head -n 1)
post initialized '{"jsonrpc":"2.0","method":"notifications/initialized"}'
post tools/list '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
answer=$(post plan '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"corebank_member_transfer_funds__plan","arguments":{"member_id":"12345","from_account":"S-12345-01","to_account":"C-12345-02","amount":"100.00"}}}')
printf '%s\n' "$answer"
approval=$(printf '%s\n' "$answer" | grep -o '"approval_token":"[^"]*"' | head -n 1 | cut -d '"' -f 4)
printf '@@ approval %s\n' "${approval:-none}"
post transfer '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"corebank_member_transfer_funds","arguments":{"member_id":"12345","from_account":"S-12345-01","to_account":"C-12345-02","amount":"100.00","approval_token":"'"$approval"'"}}}'
"#;

/// Runs [`ATTACK`] against `url` as another local user: as `nobody` when this test runs as root
/// (as CI does), else as this user; either way with an empty environment and without the
/// token. Returns the uid it ran as and everything it printed.
fn attack(url: &str) -> (String, String) {
    let root = uid_of(None) == "0";
    let mut command = if root {
        let mut command = Command::new("setpriv");
        command.args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "bash",
        ]);
        command
    } else {
        Command::new("bash")
    };
    let output = command
        .args(["-c", ATTACK, "attack", url])
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .current_dir("/")
        .output()
        .expect("the attack starts (setpriv, bash and curl are installed)");
    let expected_uid = if root {
        uid_of(Some("nobody"))
    } else {
        uid_of(None)
    };
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        printed.contains(&format!("@@ uid {expected_uid}\n")),
        "the attack did not run as uid {expected_uid}:\n{printed}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (expected_uid, printed)
}

/// The uid of `user`, or of this process.
fn uid_of(user: Option<&str>) -> String {
    let output = Command::new("id")
        .arg("-u")
        .args(user)
        .output()
        .expect("id runs");
    assert!(output.status.success(), "id -u {user:?} failed");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn another_local_user_without_the_token_is_refused_and_gets_no_plan() {
    let scene = Scene::new();
    let operators = scene.scratch.path().join("operators");
    std::fs::write(&operators, format!("owner: {OWNER_TOKEN}\n")).expect("the file is written");
    let served = scene.serve(&["--operators", &operators.display().to_string()]);
    assert_eq!(
        served.token, None,
        "the tokens of an operators file are not printed"
    );
    let (uid, printed) = attack(&served.url);
    let answers: Vec<&str> = printed
        .lines()
        .filter(|line| line.starts_with("@@ "))
        .collect();
    for step in [
        "initialize",
        "initialized",
        "tools/list",
        "plan",
        "transfer",
    ] {
        assert!(
            answers.contains(&format!("@@ {step} 401").as_str()),
            "uid {uid}'s {step} was not refused with 401: {answers:#?}\n{printed}"
        );
    }
    assert!(
        answers.contains(&"@@ approval none"),
        "uid {uid} obtained a plan approval: {answers:#?}"
    );
    assert!(
        printed.contains("\"reason\":\"missing_token\""),
        "the refusal names what is missing:\n{printed}"
    );
    // The same server answers its owner, whose token is in the operators file.
    assert_eq!(owner_initializes(&served.url), "200");
    drop(served);
    scene.assert_nothing_moved();
}

/// A token of the test's operators file.
const OWNER_TOKEN: &str = "owner-token-0123456789abcdefghij";

/// The status of an `initialize` the owner sends with the token (given to curl on stdin, not
/// on its command line, where other users could read it).
fn owner_initializes(url: &str) -> String {
    let mut curl = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "60"])
        .args(["-H", "@-"])
        .args(["-H", "Content-Type: application/json"])
        .args(["-H", "Accept: application/json, text/event-stream"])
        .args(["--data", r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"owner","version":"0"}}}"#])
        .arg(url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl starts");
    {
        use std::io::Write as _;
        let mut stdin = curl.stdin.take().expect("stdin is piped");
        writeln!(stdin, "Authorization: Bearer {OWNER_TOKEN}").expect("curl reads the header");
    }
    let output = curl.wait_with_output().expect("curl runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A client that cancels a call (the Python SDK's `notifications/cancelled`, sent when the
/// caller abandons the request at its first progress notification) stops its run before the
/// next dispatch: the run's evidence ends `interrupted`, short of its last step, and the session
/// goes on. Every protected page is slowed, so the run is still going when the cancel arrives.
#[test]
fn a_cancelled_call_stops_its_run_at_the_next_step_boundary() {
    let scene = Scene::new();
    scene.fixture().handle().arm(
        memberdesk::Fault::SlowPage,
        memberdesk::FaultCount::Indefinite,
    );
    let mut args = vec!["cancel".to_owned(), "--".to_owned()];
    args.push(env!("CARGO_BIN_EXE_cua").to_owned());
    args.push("mcp".to_owned());
    args.extend(scene.server_args());
    scene.client(&args, None);
    let mut records = Vec::new();
    collect_files(&scene.scratch.path().join("evidence"), &mut records);
    let records: Vec<Value> = records
        .iter()
        .filter(|path| path.ends_with("run_record.json"))
        .map(|path| {
            serde_json::from_str(&std::fs::read_to_string(path).expect("a run record"))
                .expect("JSON")
        })
        .collect();
    let [record] = records.as_slice() else {
        panic!("one run: {records:#?}");
    };
    let result = &record["result"];
    assert_eq!(result["error"]["code"], "interrupted", "{record:#}");
    assert!(
        result["steps_executed"].as_u64() < result["steps_total"].as_u64(),
        "{record:#}"
    );
    scene.assert_nothing_moved();
}

/// An approval revoked (its file moved away) and restored while a client is connected: the
/// server announces each change with `notifications/tools/list_changed`, and the list follows.
#[test]
fn a_changed_approval_is_announced_to_a_connected_client() {
    let scene = Scene::new();
    let approval = scene
        .scratch
        .path()
        .join("capabilities/corebank.member.savings_balance@1.0.0.approval.yaml");
    assert!(approval.is_file(), "{}", approval.display());
    let mut args = vec![
        "list-changed".to_owned(),
        "--approval".to_owned(),
        approval.display().to_string(),
        "--".to_owned(),
    ];
    args.push(env!("CARGO_BIN_EXE_cua").to_owned());
    args.push("mcp".to_owned());
    args.extend(scene.server_args());
    scene.client(&args, None);
    assert!(approval.is_file(), "the approval is back");
}
