//! `cua validate`, `cua seal` and `cua schema` on real files: the reference artifacts, broken
//! copies of them in a temporary directory, and every document kind's schema.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root; commands run from here so relative paths in output are stable.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the binary from the repository root without colour; returns the exit code, stdout and
/// stderr with `scratch` replaced by `SCRATCH`.
fn cua(args: &[&str], scratch: Option<&Path>) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the cua binary runs");
    let clean = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        match scratch {
            Some(scratch) => text.replace(&scratch.display().to_string(), "SCRATCH"),
            None => text,
        }
    };
    (
        output.status.code().expect("an exit code"),
        clean(&output.stdout),
        clean(&output.stderr),
    )
}

/// A copy of a reference capability in a fresh directory, edited by `edit`.
fn scratch_copy(file_name: &str, edit: impl Fn(String) -> String) -> (tempfile::TempDir, PathBuf) {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let text = std::fs::read_to_string(root().join("capabilities").join(file_name))
        .expect("the reference exists");
    let path = directory.path().join(file_name);
    std::fs::write(&path, edit(text)).expect("writable");
    (directory, path)
}

#[test]
fn validate_accepts_every_reference_document() {
    let (code, stdout, stderr) = cua(
        &[
            "validate",
            "capabilities/corebank.auth.sign_on@1.0.0.yaml",
            "capabilities/corebank.member.open_subaccount@1.0.0.yaml",
            "capabilities/corebank.member.savings_balance@1.0.0.yaml",
            "capabilities/corebank.member.transfer_funds@1.0.0.yaml",
            "tenants/northgate-fcu/corebank.member.savings_balance.yaml",
            "tenants/northgate-fcu/corebank.member.transfer_funds.yaml",
            "config/policy.yaml",
        ],
        None,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr, "");
    insta::assert_snapshot!(stdout);
}

#[test]
fn validate_reports_every_problem_in_every_file_and_exits_2() {
    let (scratch, broken) = scratch_copy("corebank.member.transfer_funds@1.0.0.yaml", |text| {
        text.replace("    risk: irreversible\n", "    risk: safe\n")
            .replacen(
                "value: {$input: member_id}",
                "value: {$input: member_number}",
                1,
            )
            .replace(
                "      transform: money\n",
                "      transform: money\n      tranform: money\n",
            )
    });
    let also_broken = scratch.path().join("second.yaml");
    std::fs::write(
        &also_broken,
        "schema: cua.capability/v1\ntitle: [unclosed\n",
    )
    .expect("writable");
    let broken = broken.display().to_string();
    let second = also_broken.display().to_string();
    // The unknown key stops the parse of the first file; fix it and every rule reports at once.
    let (code, stdout, stderr) = cua(&["validate", &broken, &second], Some(scratch.path()));
    assert_eq!(code, 2);
    insta::assert_snapshot!("validate_parse_errors_stdout", stdout);
    insta::assert_snapshot!("validate_parse_errors_stderr", stderr);

    let text = std::fs::read_to_string(&broken)
        .expect("readable")
        .replace("      tranform: money\n", "");
    std::fs::write(&broken, text).expect("writable");
    let (code, stdout, stderr) = cua(&["validate", &broken], Some(scratch.path()));
    assert_eq!(code, 2);
    insta::assert_snapshot!("validate_rule_errors_stdout", stdout);
    insta::assert_snapshot!("validate_rule_errors_stderr", stderr);
}

#[test]
fn validate_speaks_json_when_asked() {
    let (scratch, broken) = scratch_copy("corebank.member.savings_balance@1.0.0.yaml", |text| {
        text.replace("max_steps: 12", "max_steps: 13")
    });
    let (code, stdout, stderr) = cua(
        &[
            "--format",
            "json",
            "validate",
            &broken.display().to_string(),
        ],
        Some(scratch.path()),
    );
    assert_eq!(code, 2);
    assert_eq!(stderr, "", "JSON mode keeps diagnostics in the envelope");
    let mut envelope: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON envelope");
    envelope["meta"] = serde_json::json!("META");
    insta::assert_json_snapshot!(envelope);
}

#[test]
fn seal_writes_the_hash_in_place_keeping_comments_and_refuses_invalid_documents() {
    let (scratch, path) = scratch_copy("corebank.member.savings_balance@1.0.0.yaml", |text| {
        let start = text.find("content_hash: blake3:").expect("sealed");
        format!("{}content_hash: \"\"\n", &text[..start]).replace("max_steps: 12", "max_steps: 11")
    });
    let file = path.display().to_string();
    let (code, stdout, stderr) = cua(&["seal", &file], Some(scratch.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with("sealed   SCRATCH/corebank.member.savings_balance@1.0.0.yaml blake3:"),
        "{stdout}"
    );
    let sealed = std::fs::read_to_string(&path).expect("readable");
    assert!(
        sealed.contains("# Reference capability: look up a member's savings balance"),
        "comments survive"
    );
    assert!(sealed.contains("max_steps: 11"));
    let (code, stdout, _) = cua(&["validate", &file], Some(scratch.path()));
    assert_eq!(code, 0);
    assert!(stdout.contains(" sealed blake3:"), "{stdout}");
    // Sealing again changes nothing.
    let (code, stdout, _) = cua(&["seal", &file], Some(scratch.path()));
    assert_eq!(code, 0);
    assert!(stdout.starts_with("unchanged"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&path).expect("readable"), sealed);
    // An invalid document is refused and left untouched.
    let invalid = sealed.replace("into: savings_balance", "into: savings");
    std::fs::write(&path, &invalid).expect("writable");
    let (code, _, stderr) = cua(&["seal", &file], Some(scratch.path()));
    assert_eq!(code, 2);
    assert!(stderr.contains("cua::undeclared_output"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&path).expect("readable"), invalid);
    // No temporary file is left behind.
    let leftovers: Vec<String> = std::fs::read_dir(scratch.path())
        .expect("listable")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.starts_with('.'))
        .collect();
    assert_eq!(leftovers, Vec::<String>::new());
}

#[test]
fn a_binding_without_its_base_is_refused() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let binding = directory.path().join("binding.yaml");
    std::fs::write(&binding, "schema: cua.tenant_binding/v1\ncapability: corebank.member.savings_balance@9.0.0\ntenant: northgate-fcu\n").expect("writable");
    let (code, _, stderr) = cua(
        &["validate", &binding.display().to_string()],
        Some(directory.path()),
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("cua::base_not_found"), "{stderr}");
}

#[test]
fn schema_prints_the_committed_schemas() {
    for document in [
        "capability",
        "tenant_binding",
        "approval",
        "evaluation",
        "run_record",
        "policy",
    ] {
        let (code, stdout, stderr) = cua(&["schema", document], None);
        assert_eq!(code, 0, "{stderr}");
        let committed = std::fs::read_to_string(
            root()
                .join("schemas")
                .join(format!("{document}.schema.json")),
        )
        .expect("committed");
        assert_eq!(stdout, committed, "{document}");
    }
    let (code, _, stderr) = cua(&["schema", "nonsense"], None);
    assert_eq!(code, 2, "{stderr}");
    let (code, stdout, _) = cua(&["--format", "json", "schema", "policy"], None);
    assert_eq!(code, 0);
    let envelope: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON envelope");
    assert_eq!(envelope["ok"], true);
    assert_eq!(envelope["data"]["title"], "cua policy (cua.policy/v1)");
}

/// Directories and patterns: every document under a directory (a CI workflow beside them is
/// not cua's and is left alone), a quoted pattern expanded by cua, one that matches nothing a
/// problem rather than a pass, and an eval suite checked against the capability it evaluates.
#[test]
fn validate_takes_directories_and_patterns_and_checks_suites_against_their_capability() {
    let (code, stdout, stderr) = cua(
        &[
            "--format",
            "json",
            "validate",
            "capabilities",
            "tenants/*/*.yaml",
            "evals",
            "config",
        ],
        None,
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("an envelope");
    let kinds: Vec<String> = report["data"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|file| {
            format!(
                "{} {}",
                file["kind"].as_str().unwrap_or("-"),
                file["file"].as_str().unwrap_or("-")
            )
        })
        .collect();
    insta::assert_snapshot!(kinds.join("\n"));

    let (code, stdout, _) = cua(
        &["--format", "json", "validate", "capabilites/*.yaml"],
        None,
    );
    assert_eq!(code, 2, "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("an envelope");
    let problem = &report["data"]["files"][0]["diagnostics"][0];
    assert_eq!(problem["code"], "cua::unreadable", "{report}");
    assert!(
        problem["message"]
            .as_str()
            .is_some_and(|message| message.contains("matches no file")),
        "{report}"
    );

    let scratch = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir_all(scratch.path().join("capabilities")).expect("a directory");
    std::fs::create_dir_all(scratch.path().join("evals")).expect("a directory");
    std::fs::copy(
        root().join("capabilities/corebank.member.savings_balance@1.0.0.yaml"),
        scratch
            .path()
            .join("capabilities/corebank.member.savings_balance@1.0.0.yaml"),
    )
    .expect("a copy");
    std::fs::write(
        scratch.path().join("workflow.yml"),
        "name: ci\non: [push]\njobs: {}\n",
    )
    .expect("a workflow");
    let suite = std::fs::read_to_string(root().join("evals/replay_stability.yaml"))
        .expect("a suite")
        .replace("savings_balance: \"4210.55\"", "balance: \"4210.55\"");
    std::fs::write(scratch.path().join("evals/suite.yaml"), suite).expect("a suite");
    let directory = scratch.path().display().to_string();
    let (code, stdout, stderr) = cua(&["validate", &directory], Some(scratch.path()));
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(!stdout.contains("workflow.yml"), "{stdout}");
    assert!(
        stdout.contains("ok       SCRATCH/capabilities/corebank.member.savings_balance@1.0.0.yaml")
            && stdout.contains("invalid  SCRATCH/evals/suite.yaml  eval_suite"),
        "{stdout}"
    );
    assert!(stderr.contains("returns no output `balance`"), "{stderr}");
}

/// An application version range is read by `semver`: one it cannot read, or a bare version
/// npm and Cargo read differently, is a placed warning (the field decides nothing at replay, so
/// a sealed capability that predates the check still loads).
#[test]
fn validate_warns_of_a_version_range_semver_cannot_read() {
    for (range, said) in [
        (
            "4.2 or newer",
            "`4.2 or newer` has a version with no operator",
        ),
        (">=four", "`>=four` is not a version range"),
    ] {
        let (scratch, path) = scratch_copy("corebank.member.savings_balance@1.0.0.yaml", |text| {
            text.replace(
                "version_range: \">=4.2 <5\"",
                &format!("version_range: \"{range}\""),
            )
        });
        let file = path.display().to_string();
        let (code, stdout, stderr) = cua(&["seal", &file], Some(scratch.path()));
        assert_eq!(code, 0, "a warning never stops a seal: {stdout}\n{stderr}");
        let (code, stdout, stderr) = cua(&["validate", &file], Some(scratch.path()));
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        assert!(stdout.contains("(1 warning(s))"), "{stdout}");
        assert!(
            stderr.contains(said)
                && stderr.contains("surface.app.version_range")
                && stderr.contains(">=4.2 <5"),
            "{stderr}"
        );
    }
}
