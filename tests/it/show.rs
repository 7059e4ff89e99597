//! `cua show` and the console's run page, read in real Chromium with Playwright Test: a
//! successful replay and one that needed a human (with its failure screenshot), each written
//! as one page and opened from disk, and the same runs on the console's run page. And the
//! screenshot of every dispatched step's last screen the policy keeps for them. And a smoke test
//! of the console's front end (`crates/cua-console/assets/`): its scripts parse, and every
//! section renders from its navigation without a script error.

#![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

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
    all_passed(&outcomes, 4);
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
    let line = crate::first_line(&mut console);
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

/// A run's record, or null when it has none.
pub(crate) fn run_record(run: &std::path::Path) -> Value {
    std::fs::read_to_string(run.join("run_record.json"))
        .ok()
        .and_then(|record| serde_json::from_str(&record).ok())
        .unwrap_or_default()
}

/// Writes `run` as one page with `cua show` into `pages` and returns it as an
/// [`EVERY_RUN_SPEC`] page called `name`, with the run's id and recorded status.
pub(crate) fn shown_page(run: &std::path::Path, name: &str, pages: &std::path::Path) -> Value {
    let id = run.file_name().unwrap().to_string_lossy().into_owned();
    let page = pages.join(format!("{}-{id}.html", name.replace(['/', ' '], "_")));
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("show")
        .arg(run)
        .arg("--out")
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cua show {}: {output:?}",
        run.display()
    );
    serde_json::json!({
        "name": name,
        "url": format!("file://{}", page.display()),
        "run": id,
        "status": run_record(run)["result"]["status"],
    })
}

/// Opens every page with [`EVERY_RUN_SPEC`] in Playwright Test from `specs` (a directory
/// under `install`), and fails on any page that does not render as the spec says.
pub(crate) fn every_page_renders(
    install: &std::path::Path,
    specs: &std::path::Path,
    pages: &[Value],
) {
    std::fs::write(specs.join("every.spec.ts"), EVERY_RUN_SPEC).unwrap();
    let listed = serde_json::to_string(pages).unwrap();
    let outcomes = run_playwright(install, specs, "", &[("SHOW_PAGES", &listed)]);
    assert_eq!(outcomes.len(), pages.len(), "{outcomes:#?}");
    let failed: Vec<_> = outcomes.iter().filter(|outcome| !outcome.passed).collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

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

/// A large page: `count` cells under one document, a few levels deep.
fn grid(count: usize) -> cua_snapshot::UiSnapshot {
    use cua_snapshot::{NodeId, NodeScope, UiNode, UiSnapshot};
    let nodes = (0..count)
        .map(|index| UiNode {
            id: NodeId::new(format!("content:/document[0]/cell[{index}]")),
            role: if index == 0 { "document" } else { "cell" }.into(),
            name: format!("Cell {index}"),
            value: None,
            states: vec![],
            bounds: None,
            scope: NodeScope {
                frame: Some("content".into()),
                region: None,
            },
            depth: u32::try_from(index % 6).unwrap(),
            parent: (index > 0).then_some(0),
            children: vec![],
            css_hint: None,
            labels: Vec::new(),
        })
        .collect();
    UiSnapshot {
        url: "http://127.0.0.1:8811/grid".into(),
        title: "Grid".into(),
        http_status: Some(200),
        nodes,
    }
}

/// A run as large as a back-office grid makes one: 240 dispatched steps, each observing a page
/// of 12,000 nodes (every 40th written in full). Its page opens in Chromium with no script
/// error, lists every step, draws the first 1,500 rows of a snapshot and says so, and finds a
/// node far past them by search. Past the page's embedding limit (here lowered to one
/// snapshot's worth), a snapshot is named as left out, with why, and the page still opens.
#[test]
fn a_large_run_shows_whole_within_its_caps() {
    use cua_artifact::{
        ActionKind, Actor, CapabilityRef, ContentHash, EffectVerdict, Identifier, RiskTier,
        RunKind, RunStatus,
    };
    use cua_evidence::{Authorize, Dispatch, Effect, Observe, RunEnd, RunId, RunStart};
    const STEPS: usize = 240;
    const NODES: usize = 12_000;
    let _one_at_a_time = one_at_a_time();
    let install = playwright_ci();
    let scratch = tempfile::tempdir().unwrap();
    let bus = cua_evidence::EvidenceBus::create(
        scratch.path(),
        RunId::parse("large-run").unwrap(),
        std::sync::Arc::new(cua_evidence::SystemClock),
        cua_evidence::Redactor::new(Vec::<(String, String)>::new()).unwrap(),
    )
    .unwrap();
    let automation = Actor::Automation;
    bus.emit(
        automation,
        0,
        RunStart {
            kind: RunKind::Replay,
            capability: Some(CapabilityRef::parse("test.grid.large_run@1.0.0").unwrap()),
            content_hash: Some(ContentHash::of_bytes(b"test.grid.large_run@1.0.0")),
            sealed_hash: None,
            bound_by: None,
            tenant: None,
            inputs: std::collections::BTreeMap::new(),
            goal: None,
            target_url: None,
            model: None,
            scripted_model: None,
            resolver_config_hash: None,
        },
    )
    .unwrap();
    let page = grid(NODES);
    for index in 0..STEPS {
        let step = Identifier::parse(&format!("step_{index:03}")).unwrap();
        let decision = format!("dec-{:06}", index + 1);
        let node = cua_snapshot::NodeId::new(format!("content:/document[0]/cell[{}]", index + 1));
        let written = (index % 40 == 0).then(|| {
            bus.write_snapshot(&format!("step-{index:03}"), &page)
                .unwrap()
        });
        bus.emit(automation, 0, Observe::of(&page, written))
            .unwrap();
        bus.emit(
            automation,
            1,
            Authorize {
                step: Some(step.clone()),
                decision_id: decision.clone(),
                granted: true,
                action_type: ActionKind::Click,
                risk: RiskTier::Safe,
                signals: vec![],
                reason: "safe (default)".into(),
                denial: None,
                approval: None,
                node_id: Some(node.clone()),
            },
        )
        .unwrap();
        bus.emit(
            automation,
            1,
            Dispatch {
                step: Some(step.clone()),
                decision_id: decision.clone(),
                action_type: ActionKind::Click,
                node_id: Some(node),
                refused: false,
                ok: true,
                navigated: false,
                http_status: None,
                duration_ms: 3,
                message: String::new(),
                reason: None,
                expected_epoch: None,
            },
        )
        .unwrap();
        bus.emit(
            automation,
            1,
            Effect {
                step,
                verdict: EffectVerdict::Confirmed,
                reason: "the postcondition was observed on a fresh snapshot".into(),
                decision_id: Some(decision),
                route: None,
                undispatched: None,
                screenshot_ref: None,
                screenshot_digest: None,
            },
        )
        .unwrap();
    }
    bus.emit(
        automation,
        1,
        RunEnd {
            effect: Some(EffectVerdict::Confirmed),
            steps_executed: Some(u32::try_from(STEPS).unwrap()),
            steps_total: Some(u32::try_from(STEPS).unwrap()),
            ..RunEnd::with_status(RunStatus::Success)
        },
    )
    .unwrap();
    bus.finish().unwrap();
    let run_dir = scratch.path().join("large-run");
    assert_eq!(crate::replay::verify(&run_dir).0, 0, "a well-formed run");

    let specs = tempfile::Builder::new()
        .prefix("show-large-")
        .tempdir_in(&install)
        .unwrap();
    let out = specs.path().join("large-run.html");
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(["--format", "json", "show"])
        .arg(&run_dir)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let written: Value = serde_json::from_slice(&output.stdout).unwrap();
    let url = written["data"]["url"].as_str().unwrap().to_owned();
    let one_snapshot = std::fs::read_dir(run_dir.join("snapshots"))
        .unwrap()
        .flatten()
        .map(|entry| entry.metadata().unwrap().len())
        .max()
        .unwrap();
    let limited = cua_console::show::document_within(
        &run_dir,
        &|_| false,
        usize::try_from(one_snapshot).unwrap() + 1024,
    )
    .unwrap();
    assert_eq!(limited["snapshots"].as_object().unwrap().len(), 1);
    let left_out = limited["left_out"].as_object().unwrap();
    assert_eq!(left_out.len(), STEPS / 40 - 1, "{left_out:?}");
    assert!(
        left_out
            .values()
            .all(|why| why.as_str().unwrap().contains("size limit")),
        "{left_out:?}"
    );
    let limited_page = specs.path().join("limited.html");
    std::fs::write(&limited_page, cua_console::show::page_of(&limited)).unwrap();
    std::fs::write(
        specs.path().join("large.spec.ts"),
        format!(
            r#"import {{ test, expect }} from '@playwright/test';
test('a large run', async ({{ page: tab }}) => {{
  const errors: string[] = [];
  tab.on('pageerror', (error) => errors.push(String(error)));
  await tab.goto('{url}');
  const view = tab.locator('.cua-show');
  await expect(view.getByRole('heading', {{ level: 1 }})).toHaveText('Run large-run');
  const steps = view.getByRole('list', {{ name: 'Steps' }}).getByRole('button');
  await expect(steps).toHaveCount({STEPS});
  await steps.filter({{ hasText: 'step_200' }}).first().click();
  const detail = view.getByRole('region', {{ name: 'Step detail' }});
  const tree = detail.getByRole('tree').first();
  await expect(tree.getByRole('treeitem')).toHaveCount(1500);
  await expect(detail.locator('[data-matches]').first()).toHaveText('{NODES} nodes · showing the first 1500');
  await detail.getByRole('searchbox').first().fill('"Cell 11999"');
  await expect(detail.locator('[data-matches]').first()).toHaveText('1 of {NODES} nodes match');
  await expect(tree.getByRole('treeitem')).toHaveCount(1);
  expect(errors).toEqual([]);
}});
test('a run past the page limit', async ({{ page: tab }}) => {{
  const errors: string[] = [];
  tab.on('pageerror', (error) => errors.push(String(error)));
  await tab.goto('file://{limited}');
  const view = tab.locator('.cua-show');
  await expect(view.getByRole('heading', {{ level: 1 }})).toHaveText('Run large-run');
  await view.getByRole('list', {{ name: 'Steps' }}).getByRole('button').filter({{ hasText: 'step_200' }}).first().click();
  await expect(view.getByRole('region', {{ name: 'Step detail' }})).toContainText("the page's size limit was reached");
  expect(errors).toEqual([]);
}});
"#,
            limited = limited_page.display()
        ),
    )
    .unwrap();
    let outcomes = run_playwright(&install, specs.path(), "", &[]);
    assert_eq!(outcomes.len(), 2, "{outcomes:#?}");
    assert!(
        outcomes.iter().all(|outcome| outcome.passed),
        "{outcomes:#?}"
    );
}

/// The console's sections, each reached from its navigation: it renders with no script error
/// and no error shown, and asks for no token once opened with one.
const CONSOLE_SPEC: &str = r#"import { test, expect } from '@playwright/test';
const open = process.env.CONSOLE_OPEN || '';
for (const section of ['Queue', 'Runs', 'Capabilities', 'Settings']) {
  test(`console ${section}`, async ({ page }) => {
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(open);
    await expect(page.getByRole('heading', { name: 'Access token required' })).toHaveCount(0);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: section }).click();
    await expect(page).toHaveURL(new RegExp(`#/${section.toLowerCase()}$`));
    await expect(page.locator('#main')).not.toBeEmpty();
    await expect(page.locator('#main').getByRole('heading').first()).toBeVisible();
    await expect(page.getByRole('alert')).toHaveCount(0);
    expect(errors).toEqual([]);
  });
}
"#;

#[test]
fn every_console_section_renders_from_its_navigation_without_a_script_error() {
    // The front end's files parse as JavaScript before any browser loads them.
    let assets = crate::codegen::repository().join("crates/cua-console/assets");
    for script in ["console.js", "show.js"] {
        let checked = Command::new("node")
            .arg("--check")
            .arg(assets.join(script))
            .output()
            .expect("node runs");
        assert!(
            checked.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&checked.stderr)
        );
    }
    let _one_at_a_time = one_at_a_time();
    let install = playwright_ci();
    let specs = tempfile::Builder::new()
        .prefix("console-")
        .tempdir_in(&install)
        .unwrap();
    let evidence = tempfile::tempdir().unwrap();
    let (mut console, open) = console_over(evidence.path());
    std::fs::write(specs.path().join("console.spec.ts"), CONSOLE_SPEC).unwrap();
    let outcomes = run_playwright(&install, specs.path(), "", &[("CONSOLE_OPEN", &open)]);
    let _ = console.kill();
    let _ = console.wait();
    all_passed(&outcomes, 4);
}

/// Every one of `count` Playwright tests ran and passed.
fn all_passed(outcomes: &[crate::codegen::Outcome], count: usize) {
    assert_eq!(outcomes.len(), count, "{outcomes:#?}");
    assert!(
        outcomes.iter().all(|outcome| outcome.passed),
        "{outcomes:#?}"
    );
}
