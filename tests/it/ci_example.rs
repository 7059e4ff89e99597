//! The example CI workflow (`examples/ci/github-actions.yml`) does what it says: every `cua`
//! line in its steps, run in order in a new project, succeeds, and leaves the JUnit report and
//! the Playwright project (spec, fixtures, setup, config) the later steps read.

use std::process::Command;

use serde_json::Value;

#[test]
fn every_cua_line_of_the_example_workflow_runs_in_a_new_project() {
    let root = crate::codegen::repository();
    let text = std::fs::read_to_string(root.join("examples/ci/github-actions.yml"))
        .expect("the example workflow");
    let workflow: Value = cua_artifact::yaml::from_yaml(&text).expect("the workflow is YAML");
    let lines: Vec<String> = workflow["jobs"]
        .as_object()
        .expect("jobs")
        .values()
        .flat_map(|job| job["steps"].as_array().cloned().unwrap_or_default())
        .filter_map(|step| step["run"].as_str().map(str::to_owned))
        .flat_map(|run| {
            run.lines()
                .map(str::trim)
                .filter(|line| line.starts_with("cua "))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        lines.iter().any(|line| line.starts_with("cua validate"))
            && lines.iter().any(|line| line.starts_with("cua eval"))
            && lines.iter().any(|line| line.starts_with("cua codegen")),
        "{lines:?}"
    );

    let project = tempfile::tempdir().expect("a scratch directory");
    let init = Command::new(env!("CARGO_BIN_EXE_cua"))
        .arg("init")
        .arg(project.path())
        .output()
        .expect("cua runs");
    assert!(init.status.success(), "{init:?}");
    for line in &lines {
        let words: Vec<&str> = line.split_whitespace().skip(1).collect();
        let output = Command::new(env!("CARGO_BIN_EXE_cua"))
            .args(&words)
            .current_dir(project.path())
            .env("NO_COLOR", "1")
            .env_remove("CUA_LLM_BASE_URL")
            .env_remove("CUA_LLM_MODEL")
            .envs(crate::OPERATOR_SECRETS)
            .output()
            .expect("cua runs");
        assert!(
            output.status.success(),
            "`{line}` failed: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let cases = crate::junit::cases(&project.path().join("reports/eval.xml"));
    assert!(!cases.is_empty());
    assert!(
        cases.iter().all(|case| case.outcome == "passed"),
        "{cases:#?}"
    );
    for file in [
        "savings_balance.spec.ts",
        "cua.fixtures.ts",
        "corebank.auth.sign_on@1.0.0.setup.ts",
        "playwright.config.ts",
    ] {
        assert!(project.path().join("tests").join(file).is_file(), "{file}");
    }
}
