//! `cua console` end to end, in real Chromium, driving the console page itself with a second
//! headless Chromium: an armed `undeclared_dialog` escalates; the operator takes control with
//! a token, clicks through the dialog on the live view, wanders to the transfer review page
//! (whose irreversible button is not dispatched without confirmation), comes back, types the
//! member number and hands back; the run re-anchors and finishes with the right outputs under
//! epoch 5, and its trace shows epochs 1→5 and both actors. The live frames sent to the
//! browser are painted over a canary, and no console response carries it.

#![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use cua_artifact::{ActionKind, Actor};
use cua_chromium::{ChromiumConfig, ChromiumSurface, LaunchError};
use cua_policy::{
    ActionRequest, Allowlist, AuthorizationContext, BrowserAction, Lease, PolicyEngine,
    PolicyRules, RawInput, ResolvedTarget, SurfaceAction,
};
use cua_snapshot::{UiNode, UiSnapshot};
use cua_surface::{SurfaceDriver, SurfaceError};
use futures::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// A name the policy masks (a redaction rule added for the test); the search page's training
/// table shows "Ada Lovelace".
const CANARY: &str = "Lovelace";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_takes_over_drives_and_hands_back_through_the_console_page() {
    let chromium = std::env::var_os("CUA_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(cua_chromium::DEFAULT_EXECUTABLE));
    assert!(
        chromium.exists(),
        "this test needs Chromium at {}: apt-get install -y chromium",
        chromium.display()
    );
    let scratch = tempfile::tempdir().unwrap();
    let evidence = scratch.path().join("runs");
    let policy = canary_policy(scratch.path());
    let console = Console::start(&evidence, &policy);
    let api = Api {
        address: console.address,
        token: console.token.clone(),
    };

    // An intervention is waiting, with its context card.
    let card = wait_for("an open intervention", Duration::from_secs(90), || async {
        let cards = api.get("/api/interventions").await;
        cards
            .as_array()
            .and_then(|cards| cards.first())
            .filter(|card| card["state"] == "open")
            .cloned()
    })
    .await;
    assert_eq!(card["failure_code"], "unexpected_state");
    assert_eq!(card["stopped_at"], "enter_member_id");
    assert_eq!(card["capability"], "corebank.member.savings_balance@1.0.0");
    assert!(card["screenshot_ref"].as_str().is_some(), "{card}");

    // The operator opens the console with the token and takes control on the queue page.
    let operator = Operator::launch(console.address).await;
    operator.navigate(&console.open).await;
    operator.click_named("button", "Take control").await;
    wait_for("human control", Duration::from_secs(20), || async {
        let state = api.get("/api/state").await;
        (state["sessions"][0]["state"] == "human_control").then_some(())
    })
    .await;
    let view = operator.live_view().await;

    // The live frames: painted over the canary before they leave the process.
    let first = console.frame().await;
    assert!(first.width > 0 && first.height > 0, "frames flow");

    // Through the dialog on the live view.
    let supervised = api.snapshot().await;
    let continue_link = center(find(&supervised, "link", "Continue"));
    operator.click_page(&view, continue_link).await;
    wait_for("the search form", Duration::from_secs(20), || async {
        let snapshot = api.snapshot().await;
        has(&snapshot, "textbox", "Member Number").then_some(())
    })
    .await;

    // The search page shows the canary in the training table: a fresh frame has it painted.
    let snapshot = api.snapshot().await;
    let canary_cells: Vec<&UiNode> = snapshot
        .nodes
        .iter()
        .filter(|node| node.name.contains("<redacted:canary"))
        .collect();
    assert!(
        !canary_cells.is_empty(),
        "the training table names the canary (redacted)"
    );
    let frame = console
        .frame_where(|frame| frame.painted_regions >= canary_cells.len())
        .await;
    for cell in &canary_cells {
        frame.assert_painted(cell.bounds.unwrap());
    }

    // A detour to the transfer review page: the irreversible button needs confirmation.
    operator
        .click_page(&view, center(find(&snapshot, "textbox", "Member Number")))
        .await;
    operator.type_keys("12345").await;
    operator.key("Enter").await;
    let member = wait_for("the member record", Duration::from_secs(20), || async {
        let snapshot = api.snapshot().await;
        has(&snapshot, "link", "Transfer Funds").then_some(snapshot)
    })
    .await;
    operator
        .click_page(&view, center(find(&member, "link", "Transfer Funds")))
        .await;
    let form = wait_for("the transfer form", Duration::from_secs(20), || async {
        let snapshot = api.snapshot().await;
        has(&snapshot, "button", "Review Transfer").then_some(snapshot)
    })
    .await;
    // The amount field is the textbox in the row the "Amount" label cell starts.
    let label = form
        .nodes
        .iter()
        .position(|node| node.role == "cell" && node.name == "Amount")
        .expect("the amount label");
    let amount = form.nodes[label..]
        .iter()
        .find(|node| node.role == "textbox")
        .expect("the amount field");
    operator.click_page(&view, center(amount)).await;
    operator.type_keys("10.00").await;
    operator.key("Shift+Tab").await;
    operator.key("ArrowDown").await;
    // Let the text and keys land before the click.
    tokio::time::sleep(Duration::from_millis(800)).await;
    operator
        .click_page(&view, center(find(&form, "button", "Review Transfer")))
        .await;
    let review = wait_for("the review page", Duration::from_secs(20), || async {
        let snapshot = api.snapshot().await;
        has(&snapshot, "button", "Transfer Funds").then_some(snapshot)
    })
    .await;
    operator
        .click_page(&view, center(find(&review, "button", "Transfer Funds")))
        .await;
    let pending = wait_for(
        "the confirmation prompt",
        Duration::from_secs(20),
        || async {
            let state = api.get("/api/state").await;
            state["sessions"][0]["pending_confirmation"]
                .as_str()
                .map(str::to_owned)
        },
    )
    .await;
    assert_eq!(pending, "button \"Transfer Funds\"");
    let console_page = operator.observe().await;
    assert!(
        has(&console_page, "button", "Confirm"),
        "the page offers Confirm"
    );
    let fixture = console.fixture_state().await;
    assert_eq!(
        fixture["transfers"],
        Value::Array(Vec::new()),
        "nothing was transferred"
    );
    assert!(
        has(&api.snapshot().await, "button", "Transfer Funds"),
        "still on the review page"
    );

    // Back out without confirming, and start the search again.
    operator.click_named("button", "Cancel").await;
    let review = api.snapshot().await;
    operator
        .click_page(&view, center(find(&review, "link", "Cancel")))
        .await;
    let member = wait_for(
        "the member record again",
        Duration::from_secs(20),
        || async {
            let snapshot = api.snapshot().await;
            has(&snapshot, "link", "New Search").then_some(snapshot)
        },
    )
    .await;
    operator
        .click_page(&view, center(find(&member, "link", "New Search")))
        .await;
    let search = wait_for("the search form again", Duration::from_secs(20), || async {
        let snapshot = api.snapshot().await;
        has(&snapshot, "textbox", "Member Number").then_some(snapshot)
    })
    .await;
    operator
        .click_page(&view, center(find(&search, "textbox", "Member Number")))
        .await;
    operator.type_keys("12345").await;
    wait_for(
        "the typed member number",
        Duration::from_secs(10),
        || async {
            let snapshot = api.snapshot().await;
            snapshot
                .nodes
                .iter()
                .any(|node| {
                    node.role == "textbox"
                        && node.name == "Member Number"
                        && node.value.as_deref() == Some("12345")
                })
                .then_some(())
        },
    )
    .await;

    // Hand back: the run resumes by itself and finishes.
    operator.click_named("button", "Hand back").await;
    operator.click_named("button", "Yes, hand back").await;
    let run_dir = evidence.join("e2e-handoff");
    wait_for("the run to finish", Duration::from_secs(60), || async {
        run_dir.join("run_record.json").exists().then_some(())
    })
    .await;

    let trace = read_trace(&run_dir);
    let leases: Vec<(String, String, u64)> = trace
        .iter()
        .filter(|line| line["event"] == "lease")
        .map(|line| {
            (
                line["transition"].as_str().unwrap().to_owned(),
                line["actor"].as_str().unwrap().to_owned(),
                line["lease_epoch"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("escalated", "system", 2),
        ("claimed", "human", 3),
        ("released", "human", 4),
        ("resumed", "automation", 5),
    ];
    assert_eq!(
        leases,
        expected.map(|(t, a, e)| (t.to_owned(), a.to_owned(), e)),
    );
    let dispatchers: BTreeSet<(String, u64)> = trace
        .iter()
        .filter(|line| line["event"] == "dispatch" && line["refused"] != true)
        .map(|line| {
            (
                line["actor"].as_str().unwrap().to_owned(),
                line["lease_epoch"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        dispatchers,
        BTreeSet::from([
            ("automation".to_owned(), 1),
            ("human".to_owned(), 3),
            ("automation".to_owned(), 5)
        ])
    );
    // The transfer click was refused for confirmation and never dispatched.
    let refusal = trace
        .iter()
        .find(|line| line["event"] == "authorize" && line["denial"] == "needs_confirmation")
        .expect("a needs_confirmation refusal");
    assert_eq!(refusal["actor"], "human");
    assert_eq!(refusal["risk"], "irreversible");
    let refused_decision = refusal["decision_id"].as_str().unwrap();
    assert!(!trace.iter().any(|line| line["event"] == "dispatch"
        && line["decision_id"] == refused_decision
        && line["actor"] == "human"));
    let reanchor = trace
        .iter()
        .find(|line| line["note"] == "re-anchor after handoff")
        .expect("the re-anchor note");
    assert_eq!(reanchor["data"]["resume_index"], 1, "{reanchor}");
    assert_eq!(
        reanchor["data"]["skipped"],
        serde_json::json!(["enter_member_id"])
    );
    let end = trace.last().unwrap();
    assert_eq!(end["event"], "run_end");
    assert_eq!(end["status"], "success", "{end}");
    assert_eq!(end["lease_epoch"], 5);
    assert_eq!(end["outputs"]["savings_balance"], "4210.55");
    assert_eq!(end["outputs"]["account_status"], "Active");
    assert_eq!(end["outputs"]["as_of"], "2026-09-11");
    let record: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("run_record.json")).unwrap()).unwrap();
    let actors: BTreeSet<&str> = record["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["actor"].as_str().unwrap())
        .collect();
    assert_eq!(actors, BTreeSet::from(["automation", "human"]));
    assert!(
        record["human_actions"].as_u64().unwrap() >= 10,
        "{}",
        record["human_actions"]
    );
    let verified = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(["evidence", "verify"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );

    // No console response carries the canary; the evidence on disk does not either.
    let card = api.get("/api/interventions").await;
    let resolved = &card[0];
    assert_eq!(resolved["state"], "resolved");
    let mut paths = vec![
        "/api/state".to_owned(),
        "/api/interventions".to_owned(),
        "/api/runs".to_owned(),
        "/api/runs/e2e-handoff".to_owned(),
        "/api/settings".to_owned(),
        "/api/capabilities".to_owned(),
        "/api/sessions/live-1/snapshot".to_owned(),
    ];
    let detail = api.get("/api/runs/e2e-handoff").await;
    for file in detail["files"].as_array().unwrap() {
        paths.push(format!(
            "/api/runs/e2e-handoff/files/{}",
            file.as_str().unwrap()
        ));
    }
    for path in &paths {
        let (status, body) = api.raw_get(path).await;
        assert_eq!(status, 200, "{path}");
        assert!(
            !contains(&body, CANARY.as_bytes()),
            "{path} leaked the canary"
        );
    }
    operator.close().await;
    console.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demonstration_is_recorded_and_compiles_to_a_draft() {
    let chromium = std::env::var_os("CUA_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(cua_chromium::DEFAULT_EXECUTABLE));
    assert!(
        chromium.exists(),
        "this test needs Chromium at {}: apt-get install -y chromium",
        chromium.display()
    );
    let fixture = memberdesk::serve(memberdesk::FixtureConfig::loopback(
        memberdesk::Variant::FirstValley,
    ))
    .await
    .unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let evidence = scratch.path().join("runs");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (child, api) = start_recording(
        &format!("{}/", fixture.base_url()),
        "Look up the savings balance of member 12345",
        &evidence,
        "rec-1",
    );
    let at = |snapshot: &UiSnapshot, role: &str, name: &str| {
        let (x, y) = center(find(snapshot, role, name));
        serde_json::json!({ "kind": "click", "x": x, "y": y })
    };
    let text = |text: &str| serde_json::json!({ "kind": "text", "text": text });
    let login = wait_for("the sign-on form", Duration::from_secs(30), || async {
        let snapshot = api.snapshot_of("record-1").await;
        has(&snapshot, "textbox", "Operator ID").then_some(snapshot)
    })
    .await;
    api.gesture("record-1", at(&login, "textbox", "Operator ID"))
        .await;
    api.gesture("record-1", text(memberdesk::OPERATOR_ID)).await;
    api.gesture("record-1", at(&login, "textbox", "Password"))
        .await;
    api.gesture("record-1", text(memberdesk::OPERATOR_PASSWORD))
        .await;
    api.gesture("record-1", at(&login, "button", "Sign On"))
        .await;
    let search = wait_for("the search form", Duration::from_secs(30), || async {
        let snapshot = api.snapshot_of("record-1").await;
        has(&snapshot, "textbox", "Member Number").then_some(snapshot)
    })
    .await;
    api.gesture("record-1", at(&search, "textbox", "Member Number"))
        .await;
    api.gesture("record-1", text("12345")).await;
    api.gesture("record-1", at(&search, "button", "Search"))
        .await;
    let member = wait_for("the member record", Duration::from_secs(30), || async {
        let snapshot = api.snapshot_of("record-1").await;
        has(&snapshot, "cell", "Savings Balance").then_some(snapshot)
    })
    .await;
    let balance = member
        .nodes
        .iter()
        .rfind(|node| node.role == "cell" && node.name == "$4,210.55" && node.bounds.is_some())
        .expect("the summary's balance cell");
    let (x, y) = center(balance);
    api.gesture(
        "record-1",
        serde_json::json!({ "kind": "extract", "x": x, "y": y, "into": "savings_balance" }),
    )
    .await;
    finish_recording(child, &api).await;
    let run_dir = evidence.join("rec-1");
    let trace = read_trace(&run_dir);
    let tools: Vec<(&str, &str)> = trace
        .iter()
        .filter(|line| line["note"] == "agent_action")
        .map(|line| {
            (
                line["data"]["tool"].as_str().unwrap(),
                line["data"]["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("navigate", "dispatched"),
            ("click", "dispatched"),
            ("type", "dispatched"),
            ("click", "dispatched"),
            ("type", "dispatched"),
            ("click", "dispatched"),
            ("click", "dispatched"),
            ("type", "dispatched"),
            ("click", "dispatched"),
            ("extract", "extracted"),
        ]
    );
    assert!(
        trace
            .iter()
            .all(|line| line["actor"] != "agent" && line["event"] != "llm_call"),
        "no model"
    );
    // The password typed into the "Password" field became a secret reference, written nowhere.
    let password = trace
        .iter()
        .filter(|line| line["note"] == "agent_action" && line["data"]["tool"] == "type")
        .nth(1)
        .unwrap();
    assert_eq!(
        password["data"]["value"]["$secret"], "recorded.password",
        "{password}"
    );
    for entry in walk(&run_dir) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !contains(&bytes, memberdesk::OPERATOR_PASSWORD.as_bytes()),
            "{} holds the password",
            entry.display()
        );
    }
    let drafts = scratch.path().join("drafts");
    let compiled = Command::new(env!("CARGO_BIN_EXE_cua"))
        .current_dir(root)
        .arg("compile")
        .arg(&run_dir)
        .arg("--out")
        .arg(&drafts)
        .output()
        .unwrap();
    assert!(
        compiled.status.success(),
        "{}{}",
        String::from_utf8_lossy(&compiled.stdout),
        String::from_utf8_lossy(&compiled.stderr)
    );
    let draft_files = walk(&drafts);
    assert_eq!(draft_files.len(), 1, "{draft_files:?}");
    let draft = std::fs::read_to_string(&draft_files[0]).unwrap();
    assert!(draft.contains("savings_balance"), "{draft}");
    assert!(draft.contains("$secret"), "{draft}");
    assert!(draft.contains("{base_url}"), "{draft}");
    fixture.shutdown().await.unwrap();
}

/// Starts `cua record` on `target` and returns it with the console API of its recording
/// session (`record-1`), once it says where it listens.
pub(crate) fn start_recording(
    target: &str,
    goal: &str,
    evidence: &Path,
    run_id: &str,
) -> (Child, Api) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cua"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "--format",
            "json",
            "record",
            "--target",
            target,
            "--goal",
            goal,
            "--bind",
            "127.0.0.1:0",
            "--run-id",
            run_id,
        ])
        .arg("--evidence-dir")
        .arg(evidence)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let open = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "cua record ended before it was ready"
        );
        if let Some(open) = line.trim().strip_prefix("cua record: open ") {
            break open.to_owned();
        }
    };
    // Keep draining, so the recorder never blocks on a full pipe.
    std::thread::spawn(move || for _ in stderr.lines() {});
    let (base, token) = open.split_once("/#token=").unwrap();
    let api = Api {
        address: base.trim_start_matches("http://").parse().unwrap(),
        token: token.to_owned(),
    };
    (child, api)
}

/// Finishes the recording session and waits for `cua record` to exit successfully.
pub(crate) async fn finish_recording(mut child: Child, api: &Api) {
    let (status, finished) = api
        .post("/api/sessions/record-1/finish", &Value::Null)
        .await;
    assert_eq!(status, 200, "{finished}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "cua record did not exit after the recording finished"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(exit.success(), "{exit}");
}

/// Every file under `dir`.
pub(crate) fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
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

/// The repository's policy with one more redaction rule, for the canary.
fn canary_policy(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("config/policy.yaml")).unwrap();
    let marker = "  rules:\n";
    let at = text.find(marker).expect("the policy has redaction rules") + marker.len();
    let mut patched = text.clone();
    patched.insert_str(
        at,
        &format!("    - {{name: canary, pattern: '{CANARY}'}}\n"),
    );
    let path = dir.join("policy.yaml");
    std::fs::write(&path, patched).unwrap();
    path
}

/// The `cua console` process.
struct Console {
    child: Child,
    address: SocketAddr,
    token: String,
    open: String,
    fixture: String,
}

impl Console {
    fn start(evidence: &Path, policy: &Path) -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_cua"))
            .current_dir(root)
            .args([
                "--format",
                "json",
                "console",
                "--capability",
                "corebank.member.savings_balance@1.0.0",
                "--input",
                "member_id=12345",
                "--arm-fault",
                "undeclared_dialog",
                "--bind",
                "127.0.0.1:0",
                "--run-id",
                "e2e-handoff",
            ])
            .arg("--evidence-dir")
            .arg(evidence)
            .arg("--policy")
            .arg(policy)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let line = crate::first_line(&mut child);
        let ready: Value = serde_json::from_str(&line).unwrap_or_else(|error| {
            let status = child.wait().map(|status| status.to_string()).unwrap_or_default();
            panic!("cua console did not start ({status}; apt-get install -y chromium if Chromium is missing): {error}: {line:?}")
        });
        assert_eq!(ready["ok"], true, "{ready}");
        let data = &ready["data"];
        let url = data["url"].as_str().unwrap();
        Self {
            address: url.trim_start_matches("http://").parse().unwrap(),
            token: data["token"].as_str().unwrap().to_owned(),
            open: data["open"].as_str().unwrap().to_owned(),
            fixture: data["supervised"]["fixture"].as_str().unwrap().to_owned(),
            child,
        }
    }

    /// One frame from the live view's WebSocket, as the browser receives it.
    async fn frame(&self) -> Frame {
        self.frame_where(|_| true).await
    }

    async fn frame_where(&self, accept: impl Fn(&Frame) -> bool) -> Frame {
        let mut request = format!("ws://{}/ws/sessions/live-1", self.address)
            .into_client_request()
            .unwrap();
        let headers = request.headers_mut();
        headers.insert(
            "Origin",
            format!("http://{}", self.address).parse().unwrap(),
        );
        headers.insert(
            "Sec-WebSocket-Protocol",
            format!("cua-console, cua-token.{}", self.token)
                .parse()
                .unwrap(),
        );
        let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let message = tokio::time::timeout(remaining, socket.next())
                .await
                .expect("a live frame within 30 s")
                .unwrap()
                .unwrap();
            let text = message.into_text().unwrap();
            assert!(!text.contains(CANARY));
            let value: Value = serde_json::from_str(&text).unwrap();
            if value["type"] != "frame" {
                continue;
            }
            let jpeg = base64::engine::general_purpose::STANDARD
                .decode(value["jpeg"].as_str().unwrap())
                .unwrap();
            let (pixels, width, height) = cua_console::paint::decode_rgb(&jpeg).unwrap();
            let frame = Frame {
                pixels,
                width,
                height,
                page_width: value["page_width"].as_f64().unwrap(),
                page_height: value["page_height"].as_f64().unwrap(),
                painted_regions: value["painted_regions"].as_u64().unwrap() as usize,
            };
            if accept(&frame) {
                return frame;
            }
        }
    }

    async fn fixture_state(&self) -> Value {
        let address: SocketAddr = self.fixture.trim_start_matches("http://").parse().unwrap();
        let (_, body) = http_get(address, "/_control/state", &[]).await;
        serde_json::from_slice(body_of(&body)).unwrap()
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// A decoded live frame.
struct Frame {
    pixels: Vec<u8>,
    width: usize,
    height: usize,
    page_width: f64,
    page_height: f64,
    painted_regions: usize,
}

impl Frame {
    /// Every pixel inside the region (inset, in frame pixels) is black.
    fn assert_painted(&self, region: cua_snapshot::Bounds) {
        let sx = self.width as f64 / self.page_width;
        let sy = self.height as f64 / self.page_height;
        let (left, right) = (
            (region.x * sx) as usize + 2,
            ((region.x + region.width) * sx) as usize - 2,
        );
        let (top, bottom) = (
            (region.y * sy) as usize + 2,
            ((region.y + region.height) * sy) as usize - 2,
        );
        let mut brightest = 0;
        for y in top..bottom.min(self.height) {
            for x in left..right.min(self.width) {
                let at = (y * self.width + x) * 3;
                brightest = brightest.max(self.pixels[at..at + 3].iter().copied().max().unwrap());
            }
        }
        assert!(
            brightest < 48,
            "the canary region {region:?} shows through (brightest {brightest})"
        );
    }
}

/// The console's API, with the token.
pub(crate) struct Api {
    address: SocketAddr,
    token: String,
}

impl Api {
    pub(crate) async fn get(&self, path: &str) -> Value {
        let (status, body) = self.raw_get(path).await;
        assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap()
    }

    pub(crate) async fn raw_get(&self, path: &str) -> (u16, Vec<u8>) {
        let header = format!("X-Cua-Token: {}", self.token);
        let (status, response) = http_get(self.address, path, &[&header]).await;
        (status, body_of(&response).to_vec())
    }

    /// The supervised page, as the console shows it (redacted).
    pub(crate) async fn snapshot(&self) -> UiSnapshot {
        self.snapshot_of("live-1").await
    }

    pub(crate) async fn snapshot_of(&self, session: &str) -> UiSnapshot {
        serde_json::from_value(self.get(&format!("/api/sessions/{session}/snapshot")).await)
            .unwrap()
    }

    /// A POST with a JSON body (no Origin: not a browser).
    pub(crate) async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let body = body.to_string();
        let mut stream = tokio::net::TcpStream::connect(self.address).await.unwrap();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nX-Cua-Token: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.address,
            self.token,
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).await.unwrap();
        let status = String::from_utf8_lossy(&bytes[..bytes.len().min(16)])
            .split(' ')
            .nth(1)
            .and_then(|status| status.parse().ok())
            .unwrap_or(0);
        (
            status,
            serde_json::from_slice(body_of(&bytes)).unwrap_or(Value::Null),
        )
    }

    /// One gesture on a session; it must be dispatched (or read).
    pub(crate) async fn gesture(&self, session: &str, gesture: Value) {
        let (status, answer) = self
            .post(&format!("/api/sessions/{session}/gesture"), &gesture)
            .await;
        assert_eq!(status, 200, "{gesture}: {answer}");
        assert!(
            matches!(answer["outcome"].as_str(), Some("dispatched" | "extracted")),
            "{gesture}: {answer}"
        );
    }
}

async fn http_get(address: SocketAddr, path: &str, headers: &[&str]) -> (u16, Vec<u8>) {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).await.unwrap();
    let status = String::from_utf8_lossy(&bytes[..bytes.len().min(16)])
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or(0);
    (status, bytes)
}

/// The body of a raw response (chunked bodies are de-chunked).
fn body_of(response: &[u8]) -> &[u8] {
    let split = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map_or(response.len(), |at| at + 4);
    let head = String::from_utf8_lossy(&response[..split]).to_ascii_lowercase();
    let body = &response[split..];
    if head.contains("transfer-encoding: chunked") {
        // The body is small and tests read it once: leak the de-chunked copy.
        let mut out = Vec::new();
        let mut rest = body;
        while let Some(line_end) = rest.windows(2).position(|window| window == b"\r\n") {
            let size = usize::from_str_radix(String::from_utf8_lossy(&rest[..line_end]).trim(), 16)
                .unwrap_or(0);
            if size == 0 {
                break;
            }
            let start = line_end + 2;
            out.extend_from_slice(&rest[start..start + size]);
            rest = &rest[start + size + 2..];
        }
        return Box::leak(out.into_boxed_slice());
    }
    body
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The operator's browser, driving the console page as a person would: clicks and keys.
struct Operator {
    surface: ChromiumSurface,
    engine: PolicyEngine,
    lease: Lease,
}

/// Where the live view's image is on the console page.
struct LiveView {
    bounds: cua_snapshot::Bounds,
}

impl Operator {
    async fn launch(console: SocketAddr) -> Self {
        let allowlist = Allowlist::new(&[console.to_string()], &[]).unwrap();
        let surface =
            match ChromiumSurface::launch(ChromiumConfig::from_env(allowlist.clone())).await {
                Ok(surface) => surface,
                Err(error @ LaunchError::ChromiumMissing { .. }) => {
                    panic!("this test needs Chromium: {error} (apt-get install -y chromium)")
                }
                Err(error) => panic!("launching the operator's Chromium failed: {error}"),
            };
        let engine = PolicyEngine::new(PolicyRules {
            allowlist,
            allowed_actions: ActionKind::ALL.into_iter().collect(),
            human_only: BTreeSet::new(),
        });
        Self {
            surface,
            engine,
            lease: Lease::new(Actor::Human),
        }
    }

    async fn act(&self, action: SurfaceAction, target: Option<&UiNode>) {
        self.try_act(action, target).await.unwrap();
    }

    async fn try_act(
        &self,
        action: SurfaceAction,
        target: Option<&UiNode>,
    ) -> Result<cua_surface::DispatchReceipt, SurfaceError> {
        let request = ActionRequest {
            actor: Actor::Human,
            epoch: self.lease.epoch,
            action,
            target: target.map(|node| ResolvedTarget {
                node_id: node.id.clone(),
                role: node.role.clone(),
                name: node.name.clone(),
            }),
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
    }

    async fn navigate(&self, url: &str) {
        self.act(
            SurfaceAction::Browser(BrowserAction::Navigate {
                url: url.to_owned(),
            }),
            None,
        )
        .await;
    }

    async fn observe(&self) -> UiSnapshot {
        self.surface.observe().await.unwrap()
    }

    /// Clicks the console page's control `role` named `name`, once it is there.
    async fn click_named(&self, role: &str, name: &str) {
        let snapshot = wait_for(
            &format!("{role} {name:?} on the console page"),
            Duration::from_secs(20),
            || async {
                let snapshot = self.observe().await;
                has(&snapshot, role, name).then_some(snapshot)
            },
        )
        .await;
        let mut node = find(&snapshot, role, name).clone();
        // The console page re-renders as frames and queue updates arrive, so a button seen a
        // moment ago may have been replaced by an identical one; the driver refuses a node it
        // no longer has before sending any input. A person would look again and click again.
        for _ in 0..3 {
            match self
                .try_act(SurfaceAction::Browser(BrowserAction::Click), Some(&node))
                .await
            {
                Err(SurfaceError::NodeGone { .. }) => {
                    let snapshot = self.observe().await;
                    node = find(&snapshot, role, name).clone();
                }
                outcome => {
                    outcome.unwrap();
                    return;
                }
            }
        }
        panic!("{role} {name:?} kept being replaced before it could be clicked");
    }

    /// The live view's image on the console page.
    async fn live_view(&self) -> LiveView {
        let snapshot = wait_for("the live view", Duration::from_secs(20), || async {
            let snapshot = self.observe().await;
            snapshot
                .nodes
                .iter()
                .any(|node| node.name == "Live session" && node.bounds.is_some())
                .then_some(snapshot)
        })
        .await;
        let node = snapshot
            .nodes
            .iter()
            .find(|node| node.name == "Live session" && node.bounds.is_some())
            .unwrap();
        // Give the first frames a moment to arrive.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        LiveView {
            bounds: node.bounds.unwrap(),
        }
    }

    /// The live view's image where it is now.
    async fn live_view_now(&self) -> LiveView {
        let snapshot = self.observe().await;
        let node = snapshot
            .nodes
            .iter()
            .find(|node| node.name == "Live session" && node.bounds.is_some())
            .expect("the live view is on the console page");
        LiveView {
            bounds: node.bounds.unwrap(),
        }
    }

    /// Clicks the live view where the supervised page's point `(x, y)` is drawn: the frame
    /// (1280×800) is letterboxed into the 960×640 element.
    async fn click_page(&self, _first: &LiveView, (x, y): (f64, f64)) {
        // Read the element's place again: the console page may have scrolled.
        let view = self.live_view_now().await;
        let (page_width, page_height) = (1280.0, 800.0);
        let scale = (view.bounds.width / page_width).min(view.bounds.height / page_height);
        let left = (view.bounds.width - page_width * scale) / 2.0;
        let top = (view.bounds.height - page_height * scale) / 2.0;
        assert!(top > 1.0, "the live view is letterboxed vertically");
        let at = (
            view.bounds.x + left + x * scale,
            view.bounds.y + top + y * scale,
        );
        self.act(
            SurfaceAction::Browser(BrowserAction::RawInput(RawInput::MouseClick {
                x: at.0,
                y: at.1,
            })),
            None,
        )
        .await;
        // The console answers the gesture after dispatching it; let it land.
        tokio::time::sleep(Duration::from_millis(700)).await;
    }

    /// Types on the console page, key by key (the page forwards them).
    async fn type_keys(&self, text: &str) {
        for c in text.chars() {
            self.act(
                SurfaceAction::Browser(BrowserAction::RawInput(RawInput::Key {
                    key: c.to_string(),
                })),
                None,
            )
            .await;
        }
        tokio::time::sleep(Duration::from_millis(900)).await;
    }

    async fn key(&self, key: &str) {
        self.act(
            SurfaceAction::Browser(BrowserAction::RawInput(RawInput::Key {
                key: key.to_owned(),
            })),
            None,
        )
        .await;
        tokio::time::sleep(Duration::from_millis(900)).await;
    }

    async fn close(self) {
        self.surface.close().await;
    }
}

pub(crate) fn has(snapshot: &UiSnapshot, role: &str, name: &str) -> bool {
    snapshot
        .nodes
        .iter()
        .any(|node| node.role == role && node.name == name && node.bounds.is_some())
}

pub(crate) fn find<'s>(snapshot: &'s UiSnapshot, role: &str, name: &str) -> &'s UiNode {
    snapshot
        .nodes
        .iter()
        .find(|node| node.role == role && node.name == name && node.bounds.is_some())
        .unwrap_or_else(|| panic!("no {role} {name:?} on {}", snapshot.url))
}

pub(crate) fn center(node: &UiNode) -> (f64, f64) {
    let bounds = node.bounds.unwrap();
    (
        bounds.x + bounds.width / 2.0,
        bounds.y + bounds.height / 2.0,
    )
}

pub(crate) fn read_trace(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Polls `probe` until it answers, or fails naming what never happened.
pub(crate) async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, probe: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
