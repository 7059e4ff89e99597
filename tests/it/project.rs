//! A project, anywhere: `cua init` scaffolds one, every command run inside it (at any depth)
//! takes its default paths from its `cua.toml`, a command outside any project says how to make
//! one, and a project file another local user could have written is refused.

#![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::replay::Scene;

/// `cua --format json ARGS` from `cwd`, with no path taken from the environment; returns the
/// exit code and the envelope.
fn cua_json(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, Value) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cua"));
    command
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("CUA_CATALOG")
        .env_remove("CUA_TENANTS")
        .env_remove("CUA_POLICY_FILE")
        .env_remove("CUA_EVIDENCE_DIR")
        .args(["--format", "json"])
        .args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let envelope = serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
        panic!(
            "cua {args:?} printed no envelope ({error}): {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap(), envelope)
}

fn init(directory: &Path) -> Value {
    let (code, envelope) = cua_json(Path::new("/"), &["init", directory.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{envelope}");
    envelope
}

fn files_below(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn init_writes_a_project_every_command_below_it_finds() {
    let scratch = tempfile::tempdir().unwrap();
    let project = scratch.path().join("desk");
    let envelope = init(&project);
    let written: Vec<&str> = envelope["data"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| file.as_str().unwrap())
        .collect();
    for expected in [
        "cua.toml",
        ".gitignore",
        "config/policy.yaml",
        "capabilities/corebank.member.savings_balance@1.0.0.yaml",
        "capabilities/corebank.auth.sign_on@1.0.0.yaml",
        "evals/replay_stability.yaml",
        "schemas/capability.schema.json",
        "tenants/README.md",
    ] {
        assert!(written.contains(&expected), "{expected} in {written:?}");
    }
    assert_eq!(
        files_below(&project).len(),
        written.len(),
        "exactly the files it lists"
    );
    // The project file is last, so an interrupted init is not yet a project.
    assert_eq!(written.last(), Some(&"cua.toml"));
    assert!(
        std::fs::read_to_string(project.join(".gitignore"))
            .unwrap()
            .contains("/evidence/")
    );
    // The sample's modeline points at a schema the project holds.
    let sample = std::fs::read_to_string(
        project.join("capabilities/corebank.member.savings_balance@1.0.0.yaml"),
    )
    .unwrap();
    assert!(
        sample.starts_with("# yaml-language-server: $schema=../schemas/capability.schema.json")
    );

    // Every document it wrote validates, sealed, from inside the project.
    let deep = project.join("work").join("today");
    std::fs::create_dir_all(&deep).unwrap();
    let (code, envelope) = cua_json(
        &project,
        &[
            "validate",
            "capabilities/corebank.member.savings_balance@1.0.0.yaml",
            "capabilities/corebank.auth.sign_on@1.0.0.yaml",
            "config/policy.yaml",
        ],
        &[],
    );
    assert_eq!(code, 0, "{envelope}");

    // Two directories down, the catalog is the project's.
    let (code, envelope) = cua_json(&deep, &["catalog", "list"], &[]);
    assert_eq!(code, 0, "{envelope}");
    let listed = envelope["data"].to_string();
    assert!(
        listed.contains("corebank.member.savings_balance@1.0.0"),
        "{listed}"
    );
    assert!(listed.contains("corebank.auth.sign_on@1.0.0"), "{listed}");

    // The route planner reads the project's catalog and policy from there too.
    let (code, envelope) = cua_json(
        &deep,
        &["route", "explain", "corebank.member.savings_balance"],
        &[],
    );
    assert_eq!(code, 0, "{envelope}");

    // A second init is refused, and changes nothing.
    let before = std::fs::read(project.join("cua.toml")).unwrap();
    let (code, envelope) = cua_json(&project, &["init"], &[]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["code"], "project_exists");
    assert_eq!(std::fs::read(project.join("cua.toml")).unwrap(), before);
}

#[test]
fn init_over_any_file_of_its_own_writes_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(scratch.path().join("config")).unwrap();
    std::fs::write(scratch.path().join("config/policy.yaml"), "mine\n").unwrap();
    let (code, envelope) = cua_json(scratch.path(), &["init"], &[]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["code"], "project_exists");
    let message = envelope["error"]["message"].as_str().unwrap();
    assert!(message.contains("config/policy.yaml"), "{message}");
    assert!(message.contains("nothing was written"), "{message}");
    assert_eq!(
        files_below(scratch.path()),
        vec![PathBuf::from("config/policy.yaml")]
    );
    assert_eq!(
        std::fs::read_to_string(scratch.path().join("config/policy.yaml")).unwrap(),
        "mine\n"
    );
}

#[test]
fn outside_any_project_a_default_path_is_an_error_that_says_how_to_make_one() {
    let scratch = tempfile::tempdir().unwrap();
    for args in [
        &["catalog", "list"][..],
        &[
            "replay",
            "corebank.member.savings_balance",
            "--input",
            "member_id=1",
        ][..],
        &["eval"][..],
        &["route", "explain", "corebank.member.savings_balance"][..],
    ] {
        let (code, envelope) = cua_json(scratch.path(), args, &[]);
        assert_eq!(code, 2, "{args:?}: {envelope}");
        assert_eq!(envelope["error"]["code"], "no_project", "{args:?}");
        let message = envelope["error"]["message"].as_str().unwrap();
        assert!(message.contains("no cua.toml"), "{message}");
        let help = envelope["error"]["help"].as_str().unwrap();
        assert!(help.contains("cua init"), "{help}");
    }
    // A path given on the command line needs no project, and what the invocation does not
    // read (tenant bindings, with no tenant) needs no default.
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities");
    let (code, envelope) = cua_json(
        scratch.path(),
        &["catalog", "list", "--catalog", catalog.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 0, "{envelope}");
    // A tenant's binding does.
    let (code, envelope) = cua_json(
        scratch.path(),
        &[
            "catalog",
            "show",
            "corebank.member.savings_balance",
            "--tenant",
            "northgate-fcu",
            "--catalog",
            catalog.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["code"], "no_project");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--tenants")
    );
}

/// An attacker who can write to a directory above the user's (`/tmp`, a shared drive) plants a
/// `cua.toml` that points the policy at their own file. cua refuses it, naming it, and does not
/// go on to a project further up or to no project.
#[test]
fn a_project_file_another_user_planted_above_is_refused() {
    let scratch = tempfile::tempdir().unwrap();
    let shared = scratch.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    cua_fs::testing::share(&shared);
    let planted = shared.join("cua.toml");
    cua_fs::testing::as_attacker(
        "sh",
        &[
            "-c",
            &format!(
                "printf '[paths]\\npolicy = \"/tmp/attacker-policy.yaml\"\\n' > '{}' && chmod 666 '{}'",
                planted.display(),
                planted.display()
            ),
        ],
    );
    let mine = shared.join("mine");
    std::fs::create_dir(&mine).unwrap();
    let (code, envelope) = cua_json(&mine, &["catalog", "list"], &[]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["code"], "refused_path");
    let message = envelope["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&planted.display().to_string()),
        "{message}"
    );
    let help = envelope["error"]["help"].as_str().unwrap();
    assert!(help.contains("policy"), "{help}");
}

/// The whole story of a new user: init, then from a directory inside the project replay the
/// sample against MemberDesk in Chromium; the run's evidence goes to the project's evidence
/// directory, and `cua show` reads it.
#[test]
fn a_new_project_replays_its_sample_from_anywhere_inside_it() {
    let scene = Scene::new();
    let project = scene.scratch.path().join("desk");
    init(&project);
    let inside = project.join("notes");
    std::fs::create_dir(&inside).unwrap();
    let base_url = scene.base_url();
    let (code, envelope) = cua_json(
        &inside,
        &[
            "replay",
            "corebank.member.savings_balance",
            "--input",
            "member_id=12345",
            "--base-url",
            &base_url,
            "--run-id",
            "first-run",
        ],
        &crate::OPERATOR_SECRETS,
    );
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["data"]["result"]["outputs"]["savings_balance"],
        "4210.55"
    );
    let run_dir = project.join("evidence/runs/first-run");
    assert!(
        run_dir.join("trace.jsonl").is_file(),
        "the run's evidence is in the project"
    );
    let (code, envelope) = cua_json(
        &inside,
        &["evidence", "verify", run_dir.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 0, "{envelope}");
    let page = scene.scratch.path().join("first-run.html");
    let (code, envelope) = cua_json(
        &inside,
        &[
            "show",
            run_dir.to_str().unwrap(),
            "--out",
            page.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{envelope}");
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .contains("first-run")
    );
}
