//! `cua show` and the console's run page, read in real Chromium with Playwright Test: a
//! successful replay and one that needed a human (with its failure screenshot), each written
//! as one page and opened from disk, and the same runs on the console's run page. And the
//! screenshot of every dispatched step's last screen the policy keeps for them.

#![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::codegen::{one_at_a_time, playwright_ci, run_playwright};
use crate::replay::Scene;

/// The checks a person makes of each page, as a Playwright spec: it renders without a script
/// error, names the run and its status in wire names, lists steps whose detail shows how the
/// target was resolved and what the policy decided, searches a snapshot, and shows the failure
/// screenshot where there is one; a dispatched step's detail shows its screenshot.
const SPEC: &str = r#"import { test, expect } from '@playwright/test';
const pages = JSON.parse(process.env.SHOW_PAGES || '[]');
for (const page of pages) {
  test(page.name, async ({ page: tab }) => {
    const errors: string[] = [];
    tab.on('pageerror', (error) => errors.push(String(error)));
    await tab.goto(page.url);
    if (page.url.startsWith('file:')) await expect(tab).toHaveTitle('cua run ' + page.run);
    const view = tab.locator('.cua-show');
    await expect(view.getByRole('heading', { level: 1 })).toHaveText('Run ' + page.run);
    await expect(view.locator('[data-status]')).toHaveAttribute('data-status', page.status);
    await expect(view.locator('[data-chain]')).toHaveAttribute('data-chain', 'intact');
    const steps = view.getByRole('list', { name: 'Steps' }).getByRole('button');
    expect(await steps.count()).toBeGreaterThan(2);
    await steps.filter({ hasText: /\b(click|fill|type_text)\b/ }).first().click();
    const detail = view.getByRole('region', { name: 'Step detail' });
    await expect(detail.locator('[data-event="resolve"]').first()).toContainText('Rung used');
    await expect(detail.locator('[data-event="authorize"]').first()).toContainText('granted');
    const search = detail.getByRole('searchbox').first();
    await search.fill('button');
    await expect(detail.locator('[data-matches]').first()).toContainText('nodes match');
    // The step dispatched, so the policy kept a picture of its last screen.
    await expect(detail.getByRole('img').first()).toBeVisible();
    if (page.screenshot) {
      await expect(view.getByRole('img').first()).toBeVisible();
    }
    expect(errors).toEqual([]);
  });
}
"#;

#[test]
fn a_run_shows_as_one_page_and_on_the_consoles_run_page() {
    let _one_at_a_time = one_at_a_time();
    let install = playwright_ci();
    let scene = Scene::new();
    let (code, stdout, stderr) = scene.replay(
        &[
            "corebank.member.savings_balance@1.0.0",
            "--input",
            "member_id=12345",
            "--run-id",
            "show-success",
        ],
        &[],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let (code, stdout, stderr) = crate::replay::needs_human(&scene, "show-needs-human");
    assert_eq!(code, 3, "{stdout}\n{stderr}");

    let specs = tempfile::Builder::new()
        .prefix("show-")
        .tempdir_in(&install)
        .unwrap();
    let mut pages = Vec::new();
    for (run, status, screenshot) in [
        ("show-success", "success", true),
        ("show-needs-human", "needs_human", true),
    ] {
        let out = specs.path().join(format!("{run}.html"));
        let output = Command::new(env!("CARGO_BIN_EXE_cua"))
            .args(["--format", "json", "show"])
            .arg(scene.evidence().join(run))
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let written: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(written["ok"], true, "{written}");
        let url = written["data"]["url"].as_str().unwrap().to_owned();
        assert!(url.starts_with("file:///"), "{url}");
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(!html.contains("<script src"), "one self-contained file");
        pages.push(serde_json::json!({
            "name": format!("page {run}"), "url": url, "run": run, "status": status,
            "screenshot": screenshot,
        }));
    }

    // Never into the run directory: a file its run_end does not name would break its chain.
    let run_dir = scene.evidence().join("show-success");
    let inside = Command::new(env!("CARGO_BIN_EXE_cua"))
        .arg("show")
        .arg(&run_dir)
        .arg("--out")
        .arg(run_dir.join("page.html"))
        .output()
        .unwrap();
    assert_eq!(inside.status.code(), Some(2), "{inside:?}");
    assert!(
        String::from_utf8_lossy(&inside.stderr).contains("inside the run directory"),
        "{inside:?}"
    );
    let beside = Command::new(env!("CARGO_BIN_EXE_cua"))
        .arg("show")
        .arg(".")
        .current_dir(&run_dir)
        .output()
        .unwrap();
    assert!(beside.status.success(), "{beside:?}");
    assert!(scene.evidence().join("show-success.html").is_file());
    assert_eq!(
        crate::replay::verify(&run_dir).0,
        0,
        "the run still verifies"
    );

    // The console over the same evidence, its run page reached through the runs list.
    let (mut console, open) = console_over(&scene.evidence());
    for (run, status, screenshot) in [
        ("show-success", "success", true),
        ("show-needs-human", "needs_human", true),
    ] {
        pages.push(serde_json::json!({
            "name": format!("console {run}"),
            "url": format!("{open}&go=/runs/{run}"),
            "run": run, "status": status, "screenshot": screenshot,
        }));
    }
    std::fs::write(specs.path().join("show.spec.ts"), SPEC).unwrap();
    let pages = serde_json::to_string(&pages).unwrap();
    let outcomes = run_playwright(&install, specs.path(), "", &[("SHOW_PAGES", &pages)]);
    let _ = console.kill();
    let _ = console.wait();
    assert_eq!(outcomes.len(), 4, "{outcomes:#?}");
    assert!(
        outcomes.iter().all(|outcome| outcome.passed),
        "{outcomes:#?}"
    );
}

/// `cua console` over the evidence root `evidence`, on a free loopback port: the process and
/// the URL that opens it with its token (append `&go=/runs/<run id>` for a run's page).
pub(crate) fn console_over(evidence: &std::path::Path) -> (std::process::Child, String) {
    let mut console = Command::new(env!("CARGO_BIN_EXE_cua"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--format", "json", "console", "--bind", "127.0.0.1:0"])
        .arg("--evidence-dir")
        .arg(evidence)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(console.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready: Value =
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line:?}"));
    let open = ready["data"]["open"].as_str().unwrap().to_owned();
    (console, open)
}

/// The checks made of every run the demo leaves, on its `cua show` page and on the console's
/// run page: it renders with no script error, names the run, shows its status by wire name
/// and an intact chain.
pub(crate) const EVERY_RUN_SPEC: &str = r#"import { test, expect } from '@playwright/test';
const pages = JSON.parse(process.env.SHOW_PAGES || '[]');
for (const page of pages) {
  test(page.name, async ({ page: tab }) => {
    const errors: string[] = [];
    tab.on('pageerror', (error) => errors.push(String(error)));
    await tab.goto(page.url);
    const view = tab.locator('.cua-show');
    await expect(view.getByRole('heading', { level: 1 })).toHaveText('Run ' + page.run);
    await expect(view.locator('[data-status]')).toHaveAttribute('data-status', page.status ? page.status : /^[a-z_]+$/);
    await expect(view.locator('[data-chain]')).toHaveAttribute('data-chain', 'intact');
    expect(errors).toEqual([]);
  });
}
"#;

/// The effects of a run's trace: (step, dispatched, screenshot_ref).
fn effects_of(run_dir: &std::path::Path) -> Vec<(String, bool, Option<String>)> {
    std::fs::read_to_string(run_dir.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["event"] == "effect")
        .map(|line| {
            (
                line["step"].as_str().unwrap().to_owned(),
                line.get("undispatched").is_none(),
                line["screenshot_ref"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// Under `evidence.screenshots: every_dispatched_step` (the repository's policy) each step
/// that dispatched names a screenshot of its last screen in its `effect`, the file is in the
/// run and in its chain, and the run record carries it; a step that dispatched nothing has
/// none. Under `on_failure` a successful run keeps none.
#[test]
fn every_dispatched_step_keeps_a_screenshot_of_its_last_screen_when_the_policy_says_so() {
    let scene = Scene::new();
    let args = |run: &'static str| {
        [
            "corebank.member.savings_balance@1.0.0",
            "--input",
            "member_id=12345",
            "--run-id",
            run,
        ]
    };
    let (code, stdout, stderr) = scene.replay(&args("every-step"), &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let run_dir = scene.evidence().join("every-step");
    let effects = effects_of(&run_dir);
    let steps: Vec<&str> = effects
        .iter()
        .filter(|(_, dispatched, _)| *dispatched)
        .map(|(step, _, _)| step.as_str())
        .collect();
    assert!(
        steps.contains(&"enter_member_id") && steps.contains(&"submit_search"),
        "{effects:?}"
    );
    for (step, dispatched, screenshot) in &effects {
        if step == "entrypoint" {
            continue;
        }
        match (dispatched, screenshot) {
            (true, Some(name)) => {
                assert!(name.starts_with("screenshots/"), "{name}");
                assert!(name.contains(step.as_str()), "{name} names {step}");
                let png = std::fs::read(run_dir.join(name)).unwrap();
                assert!(png.starts_with(b"\x89PNG"), "{name} is a PNG");
            }
            (false, None) => {}
            other => panic!("step {step}: {other:?}"),
        }
    }
    assert_eq!(
        crate::replay::verify(&run_dir).0,
        0,
        "the chain covers them"
    );
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run_record.json")).unwrap())
            .unwrap();
    let submit = record["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["step_id"] == "submit_search")
        .unwrap();
    assert!(
        submit["screenshot_ref"]
            .as_str()
            .is_some_and(|name| name.contains("submit_search")),
        "{submit}"
    );

    let policy = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/policy.yaml"),
    )
    .unwrap()
    .replace(
        "screenshots: every_dispatched_step",
        "screenshots: on_failure",
    );
    assert!(policy.contains("screenshots: on_failure"));
    let policy_file = scene.scratch.path().join("on-failure.yaml");
    std::fs::write(&policy_file, policy).unwrap();
    let policy_arg = policy_file.display().to_string();
    let mut quiet = args("on-failure").to_vec();
    quiet.extend(["--policy", policy_arg.as_str()]);
    let (code, stdout, stderr) = scene.replay(&quiet, &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let run_dir = scene.evidence().join("on-failure");
    let quiet_effects = effects_of(&run_dir);
    assert!(
        quiet_effects.iter().all(|(_, _, shot)| shot.is_none()),
        "{quiet_effects:?}"
    );
    assert!(!run_dir.join("screenshots").exists());
}
