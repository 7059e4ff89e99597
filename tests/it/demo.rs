//! `cua demo` end to end: the real binary against in-process MemberDesk fixtures and real
//! Chromium. Every stage line must say `ok` and the exit code must be 0; the stage names are
//! snapshotted (the timings and hashes are not); what the stages claim is checked again on
//! disk: the handoff's trace, the approval from the evaluation, the tool call's run, the spec.

use std::path::Path;
use std::process::Command;

fn cua(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("CUA_LLM_BASE_URL")
        .env_remove("CUA_LLM_MODEL")
        .env_remove("CUA_POLICY_FILE")
        .output()
        .expect("the cua binary runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The catalog's bytes, to prove the demo never writes there.
fn catalog_bytes() -> Vec<(String, Vec<u8>)> {
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&catalog)
        .expect("the catalog is readable")
        .map(|entry| {
            let path = entry.expect("a directory entry").path();
            let bytes = std::fs::read(&path).expect("a catalog file is readable");
            (path.display().to_string(), bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn the_demo_tells_the_whole_story_and_every_stage_holds() {
    let work = tempfile::tempdir().expect("a temporary directory");
    let out = work.path().join("demo");
    let out_arg = out.display().to_string();
    let before = catalog_bytes();
    // Stage 16 runs the generated spec with @playwright/test: one Playwright user at a time.
    let _playwright = crate::codegen::one_at_a_time();
    crate::codegen::playwright_ci();
    let (code, stdout, stderr) = cua(&["demo", "--out", &out_arg]);
    let transcript = stdout.clone();
    assert_eq!(
        code, 0,
        "the demo failed (it drives real Chromium: apt-get install -y chromium)\n{stdout}\n{stderr}"
    );
    let stages: Vec<(&str, &str)> = stdout
        .lines()
        .filter_map(|line| {
            let (number, rest) = line.trim_start().split_once("  ")?;
            number.parse::<u32>().ok()?;
            let rest = rest.trim_start();
            let status_at = rest.find("  ok  ").or_else(|| rest.find(" FAIL "))?;
            Some((rest[..status_at].trim_end(), rest[status_at..].trim_start()))
        })
        .collect();
    for (name, rest) in &stages {
        assert!(
            rest.starts_with("ok  "),
            "stage {name} did not hold: {rest}"
        );
    }
    let names: Vec<&str> = stages.iter().map(|(name, _)| *name).collect();
    insta::assert_snapshot!("demo_stage_names", names.join("\n"));
    assert!(
        stdout.contains(&format!(
            "demo passed: {} of {} stages held",
            names.len(),
            names.len()
        )),
        "{stdout}"
    );

    // What the stages claim is on disk, under the demo directory only.
    let reviewed = out.join("catalog/memberdesk.discovered.savings_balance@0.1.0.yaml");
    let text = std::fs::read_to_string(&reviewed).expect("the reviewed capability was written");
    let capability = cua_artifact::Capability::from_yaml(&text).expect("it is valid and sealed");
    assert!(capability.content_hash.is_some());
    assert_eq!(capability.outcomes.len(), 1);
    assert!(
        out.join("catalog/corebank.member.transfer_funds@1.0.0.approval.yaml")
            .is_file()
    );
    assert!(
        out.join("drafts/memberdesk.discovered.savings_balance@0.1.0.yaml")
            .is_file()
    );
    let run_dirs = |dir: &Path| {
        std::fs::read_dir(dir)
            .expect("a runs directory exists")
            .filter(|entry| {
                entry
                    .as_ref()
                    .is_ok_and(|entry| entry.path().join(cua_evidence::TRACE_FILE).is_file())
            })
            .count()
    };
    assert!(run_dirs(&out.join("runs")) >= 10);
    assert_eq!(
        run_dirs(&out.join("batch/runs")),
        50,
        "one run per batch row"
    );
    let replayed = out.join("runs/s05-member-67890").display().to_string();
    let (code, stdout, _) = cua(&["evidence", "verify", &replayed]);
    assert_eq!(code, 0, "the replay's evidence verifies: {stdout}");

    // The handoff: one trace, both actors, epochs 1 to 5, the intervention resolved on disk.
    let handoff = out.join("runs/s13-human-handoff");
    let (code, stdout, _) = cua(&["evidence", "verify", &handoff.display().to_string()]);
    assert_eq!(code, 0, "the handoff's evidence verifies: {stdout}");
    let trace = cua_evidence::read_trace(&handoff).expect("the handoff trace reads");
    let leases: Vec<(&str, u64)> = trace
        .iter()
        .filter_map(|line| match &line.event {
            cua_evidence::Event::Lease(lease) => {
                Some((lease.transition.as_str(), line.lease_epoch))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        leases,
        [
            ("escalated", 2),
            ("claimed", 3),
            ("released", 4),
            ("resumed", 5)
        ]
    );
    let actors: std::collections::BTreeSet<&str> = trace
        .iter()
        .filter(|line| matches!(&line.event, cua_evidence::Event::Dispatch(d) if !d.refused))
        .map(|line| line.actor.as_str())
        .collect();
    assert_eq!(
        actors,
        std::collections::BTreeSet::from(["automation", "human"])
    );
    let intervention: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            out.join("runs/interventions/s13-human-handoff/int-s13-human-handoff-1.json"),
        )
        .expect("the intervention is persisted"),
    )
    .expect("the intervention is JSON");
    assert_eq!(intervention["state"], "resolved", "{intervention}");
    assert_eq!(intervention["operator"], "demo-operator", "{intervention}");

    // The reviewer's approval rests on the evaluation, pinned to the reviewed hash.
    assert!(
        out.join("evals/demo_reviewed_stability.evaluation.json")
            .is_file()
    );
    let approval = std::fs::read_to_string(
        out.join("catalog/memberdesk.discovered.savings_balance@0.1.0.approval.yaml"),
    )
    .expect("the reviewed capability's approval was written");
    let hash = capability
        .content_hash
        .as_ref()
        .expect("sealed")
        .to_string();
    assert!(approval.contains(&hash), "{approval}");
    assert!(approval.contains("unattended_replay: true"), "{approval}");

    // One MCP tool call ran (the refused transfer ran nothing).
    assert_eq!(run_dirs(&out.join("mcp/runs")), 1, "one run per tool call");

    // The Playwright spec passed under Playwright Test: the stage line says so, and Playwright's
    // own report (written by the run the stage started) counts one passed test and no failure.
    let codegen_line = transcript
        .lines()
        .find(|line| line.contains("codegen Playwright spec"))
        .expect("the codegen stage printed its line");
    assert!(
        codegen_line.contains("passed under @playwright/test"),
        "{codegen_line}"
    );
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/playwright-ci/demo-spec/results.json"),
        )
        .expect("Playwright wrote its results"),
    )
    .expect("JSON results");
    assert_eq!(
        (
            results["stats"]["expected"].as_u64(),
            results["stats"]["unexpected"].as_u64()
        ),
        // The setup that signs on once, then the spec.
        (Some(2), Some(0)),
        "{results}"
    );

    // The Playwright spec: role locators, never a CSS hint.
    let spec = std::fs::read_to_string(
        out.join("codegen/memberdesk.discovered.savings_balance@0.1.0.spec.ts"),
    )
    .expect("the spec was written");
    assert!(spec.contains("getByRole("), "{spec}");
    assert!(
        spec.contains(&hash),
        "the spec names the hash it was generated from"
    );
    for step in &capability.steps {
        if let Some(css) = step
            .action
            .target()
            .and_then(|target| target.hints.css.as_ref())
        {
            assert!(
                !spec.contains(css.as_str()),
                "the spec uses the CSS hint {css}"
            );
        }
    }
    // One planner across operators: the visual click's route and verdict are in its record,
    // and the screenshot it claimed is evidence beside it.
    let signed = out.join("runs/s17-sign-card");
    let (code, stdout, _) = cua(&["evidence", "verify", &signed.display().to_string()]);
    assert_eq!(code, 0, "the signature run's evidence verifies: {stdout}");
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(signed.join("run_record.json")).expect("a run record"),
    )
    .expect("JSON");
    let sign = record["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|step| step["step_id"] == "sign")
        .expect("the sign step was dispatched");
    assert_eq!(
        (sign["route"]["provider"].as_str(), sign["effect"].as_str()),
        (Some("visual"), Some("confirmed")),
        "{sign}"
    );
    assert!(
        signed
            .join("screenshots")
            .read_dir()
            .is_ok_and(
                |mut entries| entries.any(|entry| entry.is_ok_and(|entry| entry
                    .file_name()
                    .to_string_lossy()
                    .ends_with("-look-observation.png")))
            )
    );
    assert_eq!(
        before,
        catalog_bytes(),
        "the reference catalog is untouched"
    );

    every_run_shows(&out);
}

/// Every run the demo left, of every kind (replays, batch rows, the discovery, the handoff,
/// the evaluation's runs, the tool call's), written by `cua show` and opened from disk, and
/// every run of the main evidence root on the console's run page, in Playwright.
fn every_run_shows(out: &Path) {
    fn run_dirs(directory: &Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(directory)
            .expect("a demo directory")
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                if path.join("trace.jsonl").is_file() {
                    found.push(path);
                } else {
                    run_dirs(&path, found);
                }
            }
        }
    }
    let mut runs = Vec::new();
    run_dirs(out, &mut runs);
    runs.sort();
    let install = crate::codegen::playwright_ci();
    let specs = tempfile::Builder::new()
        .prefix("demo-show-")
        .tempdir_in(&install)
        .expect("a spec directory");
    let mut pages = Vec::new();
    // What the runs are: their kind, their status, and whether a person took one over.
    let mut kinds = std::collections::BTreeSet::new();
    for run in &runs {
        let record = crate::show::run_record(run);
        for kind in [&record["kind"], &record["result"]["status"]] {
            if let Some(kind) = kind.as_str() {
                kinds.insert(kind.to_owned());
            }
        }
        if record["lease_transitions"]
            .as_array()
            .is_some_and(|transitions| !transitions.is_empty())
        {
            kinds.insert("handed over".to_owned());
        }
        let name = format!("show {}", run.strip_prefix(out).expect("inside").display());
        pages.push(crate::show::shown_page(run, &name, specs.path()));
    }
    for kind in [
        "discovery",
        "replay",
        "success",
        "business_outcome",
        "failed",
        "needs_human",
        "handed over",
    ] {
        assert!(
            kinds.contains(kind),
            "the demo leaves a {kind} run: {kinds:?} ({} runs)",
            runs.len()
        );
    }
    let root = out.join("runs");
    let (mut console, open) = crate::show::console_over(&root);
    for run in runs
        .iter()
        .filter(|run| run.parent() == Some(root.as_path()))
    {
        let id = run
            .file_name()
            .expect("a run id")
            .to_string_lossy()
            .into_owned();
        pages.push(serde_json::json!({
            "name": format!("console {id}"),
            "url": format!("{open}&go=/runs/{id}"),
            "run": id,
            "status": crate::show::run_record(run)["result"]["status"],
        }));
    }
    crate::show::every_page_renders(&install, specs.path(), &pages);
    let _ = console.kill();
    let _ = console.wait();
}

#[test]
fn the_demo_refuses_a_directory_that_is_not_its_own() {
    let work = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(work.path().join("keep.txt"), "not the demo's").expect("written");
    let out = work.path().display().to_string();
    let (code, stdout, stderr) = cua(&["demo", "--out", &out]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("is not a demo directory"), "{stderr}");
    assert!(work.path().join("keep.txt").is_file());
}

#[test]
fn without_chromium_the_demo_stops_with_69_naming_the_install_step() {
    let work = tempfile::tempdir().expect("a temporary directory");
    let out = work.path().join("demo").display().to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(["demo", "--out", &out])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CUA_CHROMIUM", work.path().join("no-such-chromium"))
        .output()
        .expect("the cua binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(69), "{stdout}");
    assert!(stdout.contains(" 1  fixture app up"), "{stdout}");
    assert!(stdout.contains("FAIL"), "{stdout}");
    assert!(stdout.contains("apt-get install -y chromium"), "{stdout}");
    assert!(
        !stdout.contains(" 2  discovery"),
        "the demo stops at once: {stdout}"
    );
}
