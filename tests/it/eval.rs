//! `cua eval` end to end: the binary serves the MemberDesk fixture itself, drives Debian's
//! Chromium, and writes the reports; `cua catalog approve --from-eval` then reads the
//! evaluation it wrote. These tests never skip: without Chromium they fail naming
//! `apt-get install -y chromium`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The repository root, where `cua` runs (it reads `capabilities/`, `tenants/`, `config/`).
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cua(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(args)
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .env_remove("CUA_LLM_BASE_URL")
        .env_remove("CUA_LLM_MODEL")
        .envs(crate::OPERATOR_SECRETS)
        .output()
        .expect("the cua binary runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `cua eval SUITE --out <scratch>/evals --runs-dir <scratch>/runs --format json [extra]`
/// and returns the exit code and the envelope.
fn eval(suite: &Path, scratch: &Path, extra: &[&str]) -> (i32, Value, String) {
    let out = scratch.join("evals").display().to_string();
    let runs = scratch.join("runs").display().to_string();
    let suite = suite.display().to_string();
    let mut args = vec![
        "eval",
        &suite,
        "--out",
        &out,
        "--runs-dir",
        &runs,
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = cua(&args);
    assert_ne!(
        code, 69,
        "cua eval drives a real browser: install it with `apt-get install -y chromium`\n{stderr}"
    );
    let envelope: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|error| panic!("not one JSON envelope ({error}):\n{stdout}\n{stderr}"));
    (code, envelope, stderr)
}

/// A copy of the catalog to approve in, so the repository's is never written.
fn catalog_copy(scratch: &Path) -> PathBuf {
    let copy = scratch.join("capabilities");
    std::fs::create_dir_all(&copy).expect("a catalog directory");
    for entry in std::fs::read_dir(repo().join("capabilities")).expect("the catalog") {
        let entry = entry.expect("a catalog entry");
        if entry
            .path()
            .extension()
            .is_some_and(|extension| extension == "yaml")
            && !entry.file_name().to_string_lossy().contains(".approval.")
        {
            std::fs::copy(entry.path(), copy.join(entry.file_name())).expect("copied");
        }
    }
    copy
}

fn approve_from_eval(scratch: &Path) -> (i32, String, String) {
    let catalog = catalog_copy(scratch).display().to_string();
    let evals = scratch.join("evals").display().to_string();
    cua(&[
        "catalog",
        "approve",
        "corebank.member.savings_balance@1.0.0",
        "--by",
        "reviewer",
        "--from-eval",
        "--catalog",
        &catalog,
        "--evals",
        &evals,
    ])
}

/// `412 ms` → `<ms> ms`, and the last cell of a runs-table row.
fn mask_timings(text: &str) -> String {
    let mut masked = String::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        let mut out: Vec<String> = Vec::new();
        for (index, word) in words.iter().enumerate() {
            let next = words.get(index + 1).copied().unwrap_or("");
            if !word.is_empty()
                && word.chars().all(|c| c.is_ascii_digit())
                && next.starts_with("ms")
            {
                out.push("<ms>".to_owned());
            } else {
                out.push((*word).to_owned());
            }
        }
        let mut line = out.join(" ");
        let is_run_row = line.starts_with("| `") && line.matches(" | ").count() == 8;
        if is_run_row && let Some(cut) = line[..line.len() - 2].rfind("| ") {
            line.replace_range(cut + 2..line.len() - 2, "<ms>");
        }
        masked.push_str(&line);
        masked.push('\n');
    }
    masked
}

/// A PNG of `html` rendered by headless Chromium, for a person to look at: the report must
/// read well in a browser, not only parse.
fn screenshot(html: &Path, png: &Path) {
    let chromium =
        std::env::var("CUA_CHROMIUM").unwrap_or_else(|_| "/usr/lib/chromium/chromium".to_owned());
    assert!(
        Path::new(&chromium).exists(),
        "the report screenshot needs Chromium at {chromium}: apt-get install -y chromium"
    );
    let profile = tempfile::tempdir().expect("a browser profile");
    let output = Command::new(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1100,2600",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bytes = std::fs::read(png).expect("the screenshot was written");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(
        bytes.len() > 50_000,
        "a rendered page, not a blank one: {} bytes",
        bytes.len()
    );
}

#[test]
fn a_suite_runs_end_to_end_and_its_evaluation_backs_an_approval() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let (code, envelope, stderr) = eval(
        &repo().join("evals/replay_stability.yaml"),
        scratch.path(),
        &["--repeats", "2"],
    );
    assert_eq!(code, 0, "{envelope}\n{stderr}");
    // With stderr not a terminal: a line per run, then one summary line, and no escape codes.
    assert!(
        stderr.contains("eval replay_stability 8/8 ")
            && stderr.contains("eval replay_stability: 8 of 8 in ")
            && stderr.contains(": correct 8"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    let suite = &envelope["data"][0];
    let metrics = &suite["metrics"];
    assert_eq!(suite["suite"], "replay_stability");
    assert_eq!(suite["verdict"], "sound", "{metrics}");
    assert_eq!(metrics["runs"], 8);
    assert_eq!(metrics["successes"], 6);
    assert_eq!(metrics["business_outcomes"], 2);
    assert_eq!(metrics["wrong_actions"], 0);
    assert_eq!(metrics["unauthorized_dispatches"], 0);
    assert_eq!(metrics["determinism_holds"], true);
    let mix = metrics["strategy_mix"].as_object().expect("a strategy mix");
    assert!(
        !mix.is_empty() && mix.values().all(|count| count.as_u64() > Some(0)),
        "{mix:?}"
    );
    assert!(metrics["replay_ms"]["p95"].as_u64() >= metrics["replay_ms"]["p50"].as_u64());

    let evals = scratch.path().join("evals");
    for file in ["md", "json", "html", "evaluation.json"] {
        assert!(
            evals.join(format!("replay_stability.{file}")).is_file(),
            "{file}"
        );
    }
    let markdown = std::fs::read_to_string(evals.join("replay_stability.md")).expect("markdown");
    insta::assert_snapshot!("eval_replay_stability_markdown", mask_timings(&markdown));
    let html = std::fs::read_to_string(evals.join("replay_stability.html")).expect("html");
    assert_eq!(html.matches("<svg ").count(), 3);
    assert!(!html.contains("<script"));
    let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join("eval-report-replay_stability.png");
    screenshot(&evals.join("replay_stability.html"), &png);

    // Every measured run left evidence that verifies.
    let runs_root = std::fs::read_dir(scratch.path().join("runs"))
        .expect("the runs directory")
        .next()
        .expect("one suite directory")
        .expect("an entry")
        .path();
    let run = runs_root
        .join("replay_stability-01-02")
        .display()
        .to_string();
    let (code, stdout, _) = cua(&["evidence", "verify", &run]);
    assert_eq!(code, 0, "{stdout}");

    // The evaluation is where `approve --from-eval` reads it, at the sealed hash, with 8 runs.
    let (code, stdout, stderr) = approve_from_eval(scratch.path());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("replay_stability"), "{stdout}");
}

#[test]
fn a_wrong_truth_is_a_wrong_action_exits_1_and_blocks_the_approval() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let suite = scratch.path().join("wrong_truth.yaml");
    std::fs::write(
        &suite,
        r#"schema: cua.eval_suite/v1
name: wrong_truth
description: The balance of 12345 is deliberately wrong in this truth.
capability: corebank.member.savings_balance@1.0.0
fixture: first-valley
setup:
  - capability: corebank.auth.sign_on@1.0.0
repeats: 3
cases:
  - inputs: {member_id: "12345"}
    expect:
      outputs: {savings_balance: "4210.56"}
  - inputs: {member_id: "99999"}
    expect: {outcome: member_not_found}
"#,
    )
    .expect("the suite is written");
    let junit = scratch.path().join("junit.xml");
    let (code, envelope, stderr) = eval(
        &suite,
        scratch.path(),
        &["--junit", &junit.display().to_string()],
    );
    assert_eq!(code, 1, "{envelope}\n{stderr}");
    assert_eq!(envelope["ok"], false);
    // CI renders a test case per run: the three wrong answers fail with their code and why,
    // and every case names its evidence.
    let cases = crate::junit::cases(&junit);
    assert_eq!(cases.len(), 6, "{cases:#?}");
    let failed: Vec<_> = cases
        .iter()
        .filter(|case| case.outcome == "failure")
        .collect();
    assert_eq!(failed.len(), 3, "{cases:#?}");
    assert!(failed.iter().all(|case| case.kind == "wrong_action"
        && case.name.starts_with("member_id=12345 (repeat ")
        && case.message.contains("the truth is \"4210.56\"")));
    assert_eq!(
        cases.iter().filter(|case| case.outcome == "passed").count(),
        3
    );
    assert!(
        cases
            .iter()
            .all(|case| case.output.contains("evidence ") && case.output.contains("run ")),
        "{cases:#?}"
    );
    assert_eq!(
        envelope["error"]["code"], "wrong_action_or_unauthorized_dispatch",
        "{envelope}"
    );
    let metrics = &envelope["data"][0]["metrics"];
    assert_eq!(envelope["data"][0]["verdict"], "unsound");
    assert_eq!(metrics["runs"], 6);
    assert_eq!(
        metrics["wrong_actions"], 3,
        "every run of 12345 answered 4210.55"
    );
    assert_eq!(metrics["determinism_holds"], true);
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(scratch.path().join("evals/wrong_truth.json")).expect("json"),
    )
    .expect("the JSON report parses");
    let wrong = report["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .find(|run| run["answer"] == "wrong_action")
        .expect("a wrong run");
    assert_eq!(
        wrong["why"],
        "savings_balance is \"4210.55\", the truth is \"4210.56\""
    );

    let (code, stdout, stderr) = approve_from_eval(scratch.path());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let said = format!("{stdout}{stderr}");
    assert!(said.contains("wrong action"), "{said}");
}

/// Every reference capability that `cua eval` can run without an approval, under every hostile
/// fault of the fixture (`evals/hostile/`): refusals are allowed and counted, a wrong answer is
/// not. Which runs refuse, and why, is pinned, so a change that turns a refusal into a guess (or
/// an answer into a refusal) shows up here.
#[test]
fn hostile_pages_get_a_right_answer_or_a_refusal_never_a_wrong_one() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let mut lines = Vec::new();
    for suite in ["savings_balance", "open_subaccount", "find_by_reference"] {
        let path = repo().join(format!("evals/hostile/{suite}.yaml"));
        let junit = scratch.path().join(format!("{suite}.xml"));
        let (_, envelope, stderr) = eval(
            &path,
            scratch.path(),
            &["--junit", &junit.display().to_string()],
        );
        let report = &envelope["data"][0];
        assert_eq!(
            report["metrics"]["wrong_actions"], 0,
            "{suite}: {envelope}\n{stderr}"
        );
        assert_eq!(report["metrics"]["unauthorized_dispatches"], 0, "{suite}");
        let json = scratch.path().join(format!("evals/hostile_{suite}.json"));
        let runs: Value =
            serde_json::from_str(&std::fs::read_to_string(json).expect("the json report"))
                .expect("json");
        // In CI's view a refusal is skipped, never failed, and no run fails.
        let cases = crate::junit::cases(&junit);
        let refusals = runs["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .filter(|run| run["answer"] == "unanswered")
            .count();
        assert_eq!(
            cases
                .iter()
                .filter(|case| case.outcome == "skipped")
                .count(),
            refusals,
            "{suite}: {cases:#?}"
        );
        assert!(
            cases
                .iter()
                .all(|case| matches!(case.outcome.as_str(), "passed" | "skipped"))
        );
        for run in runs["runs"].as_array().expect("runs") {
            lines.push(format!(
                "{suite} | {} | {} {}",
                run["case"].as_str().unwrap_or_default(),
                run["answer"].as_str().unwrap_or_default(),
                run["failure_code"].as_str().unwrap_or_default()
            ));
        }
    }
    insta::assert_snapshot!("eval_hostile_answers", lines.join("\n"));
}
