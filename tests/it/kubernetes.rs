//! The Indexed Job in `deploy/kubernetes/` runs, for every completion index, the very script its
//! manifest holds: run here for each index against MemberDesk, the shards partition the rows
//! exactly (every row once, by exactly the shard the index names).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::replay::Scene;

#[test]
fn the_indexed_job_shards_partition_the_rows_exactly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("deploy/kubernetes/replay-indexed-job.yaml"))
        .expect("the manifest");
    let job: Value = cua_artifact::yaml::from_yaml(&manifest).expect("the manifest is YAML");
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    let completions = job["spec"]["completions"].as_u64().expect("completions");
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["command"], serde_json::json!(["/bin/sh", "-c"]));
    let script = container["args"][0].as_str().expect("the script");
    let env: BTreeMap<&str, &str> = container["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(|var| Some((var["name"].as_str()?, var["value"].as_str()?)))
        .collect();
    assert_eq!(
        env.get("CUA_SHARDS").copied(),
        Some(completions.to_string().as_str()),
        "CUA_SHARDS must equal completions"
    );
    assert_eq!(
        env.get("CUA_CAPABILITY").copied(),
        Some("corebank.member.savings_balance@1.0.0")
    );

    let scene = Scene::new();
    let rows = scene.scratch.path().join("rows.jsonl");
    let count = 5_u64;
    std::fs::write(&rows, "{\"member_id\": \"12345\"}\n".repeat(5)).expect("rows");
    let bin = Path::new(env!("CARGO_BIN_EXE_cua"))
        .parent()
        .expect("the binary's directory")
        .display()
        .to_string();
    let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
    let mut owner: BTreeMap<u64, u64> = BTreeMap::new();
    for index in 0..completions {
        let mut command = scene.cua_command();
        // The manifest's environment, with the paths this machine has in place of the
        // volumes' and the fixture in place of the service.
        command
            .envs(env.iter())
            .env("PATH", &path)
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .env("CUA_ROWS", &rows)
            .env("CUA_BASE_URL", scene.base_url())
            .env("CUA_CATALOG", root.join("capabilities"))
            .env("CUA_TENANTS", root.join("tenants"))
            .env("CUA_POLICY_FILE", root.join("config/policy.yaml"))
            .env("CUA_EVIDENCE_DIR", scene.evidence())
            .stdin(Stdio::null());
        let mut shell = std::process::Command::new("/bin/sh");
        shell.arg("-c").arg(script);
        let output = command_as(command, shell)
            .output()
            .expect("the script runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "index {index}: {stderr}");
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let line: Value = serde_json::from_str(line).expect("a result line");
            assert_eq!(line["status"], "success", "index {index}: {line}");
            let row = line["row"].as_u64().expect("a row number");
            assert_eq!((row - 1) % completions, index, "row {row} in shard {index}");
            assert_eq!(owner.insert(row, index), None, "row {row} ran twice");
        }
    }
    assert_eq!(
        owner.keys().copied().collect::<Vec<u64>>(),
        (1..=count).collect::<Vec<u64>>(),
        "every row in exactly one shard"
    );
}

/// `shell` with the environment and working directory `template` was given.
fn command_as(
    template: std::process::Command,
    mut shell: std::process::Command,
) -> std::process::Command {
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => shell.env(key, value),
            None => shell.env_remove(key),
        };
    }
    if let Some(dir) = template.get_current_dir() {
        shell.current_dir(dir);
    }
    shell.stdin(Stdio::null());
    shell
}

/// The worker Deployment's command is one `cua` accepts: run as the manifest runs it (its
/// `$(POD_NAME)` expanded, its plain environment), against an empty queue, it drains at once.
#[test]
fn the_worker_deployment_runs_a_worker_cua_accepts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("deploy/kubernetes/worker-deployment.yaml"))
        .expect("the manifest");
    let deployment: Value = cua_artifact::yaml::from_yaml(&manifest).expect("the manifest is YAML");
    assert_eq!(deployment["kind"], "Deployment");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let command: Vec<String> = container["command"]
        .as_array()
        .expect("a command")
        .iter()
        .map(|part| {
            part.as_str()
                .expect("a string")
                .replace("$(POD_NAME)", "cua-worker-7d4b9-x2kq")
        })
        .collect();
    assert_eq!(command[..2], ["cua", "worker"]);
    let env = container["env"].as_array().expect("env");
    let queue_from_secret = env
        .iter()
        .any(|var| var["name"] == "CUA_QUEUE_URL" && var["valueFrom"]["secretKeyRef"].is_object());
    assert!(queue_from_secret, "the queue's URL comes from a Secret");
    let database = cua_queue::testing::TestDatabase::create();
    let scene = Scene::new();
    let mut run = scene.cua_command();
    for var in env {
        if let (Some(name), Some(value)) = (var["name"].as_str(), var["value"].as_str()) {
            run.env(name, value);
        }
    }
    let output = run
        .args(&command[1..])
        .arg("--drain")
        .env("CUA_QUEUE_URL", &database.url)
        .env("CUA_CATALOG", root.join("capabilities"))
        .env("CUA_TENANTS", root.join("tenants"))
        .env("CUA_POLICY_FILE", root.join("config/policy.yaml"))
        .env("CUA_EVIDENCE_DIR", scene.evidence())
        .output()
        .expect("the worker runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("cua worker cua-worker-7d4b9-x2kq: 0 rows finished (none)"),
        "{stderr}"
    );
}
