//! One name per concept on the command line: every command that reads the catalog, the tenant
//! bindings, the policy or an evidence directory takes the same flag for it, with the same
//! environment override, and the override is what the command reads.

use std::process::Command;

fn help(command: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(command)
        .arg("--help")
        .env("NO_COLOR", "1")
        .env("COLUMNS", "400")
        .output()
        .expect("cua runs");
    assert!(output.status.success(), "cua {command:?} --help");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_command_names_a_concept_one_way_with_its_environment_variable() {
    let concepts: [(&str, &str, &[&[&str]]); 4] = [
        (
            "--policy <FILE>",
            "[env: CUA_POLICY_FILE=",
            &[
                &["replay"],
                &["discover"],
                &["demo"],
                &["console"],
                &["record"],
                &["mcp"],
                &["serve"],
                &["eval"],
            ],
        ),
        (
            "--catalog <DIR>",
            "[env: CUA_CATALOG=",
            &[
                &["replay"],
                &["catalog"],
                &["demo"],
                &["console"],
                &["record"],
                &["codegen"],
                &["probe"],
                &["mcp"],
                &["serve"],
                &["eval"],
                &["route", "explain"],
            ],
        ),
        (
            "--tenants <DIR>",
            "[env: CUA_TENANTS=",
            &[
                &["replay"],
                &["catalog"],
                &["demo"],
                &["codegen"],
                &["probe"],
                &["mcp"],
                &["serve"],
                &["eval"],
                &["route", "explain"],
            ],
        ),
        (
            "--evidence-dir <DIR>",
            "[env: CUA_EVIDENCE_DIR=",
            &[&["replay"], &["console"], &["record"], &["mcp"], &["serve"]],
        ),
    ];
    let mut problems = Vec::new();
    for (flag, env, commands) in concepts {
        for command in commands {
            // The flag's entry: its line and, in clap's long layout, the lines below it up to
            // the next flag.
            let text = help(command);
            let mut lines = text.lines().skip_while(|line| !line.starts_with(flag));
            let Some(first) = lines.next() else {
                problems.push(format!("cua {command:?} has no {flag}"));
                continue;
            };
            let entry: Vec<&str> = std::iter::once(first)
                .chain(lines.take_while(|line| !line.starts_with('-')))
                .collect();
            if !entry.iter().any(|line| line.contains(env)) {
                problems.push(format!("cua {command:?}: `{first}` has no {env}"));
            }
        }
    }
    // Discovery and eval keep run directories of their own shape apart from replay's, so they
    // take the same flag without the replay root's variable.
    for command in [["discover"], ["eval"]] {
        let text = help(&command);
        let flag = text
            .lines()
            .find(|line| line.starts_with("--evidence-dir <DIR>"));
        match flag {
            Some(_) if !text.contains("CUA_EVIDENCE_DIR") => {}
            Some(_) => problems.push(format!("cua {command:?} reads CUA_EVIDENCE_DIR")),
            None => problems.push(format!("cua {command:?} has no --evidence-dir")),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_environment_override_is_what_the_command_reads() {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(["replay", "corebank.member.savings_balance@1.0.0"])
        .env("CUA_CATALOG", "/nonexistent/cua-catalog")
        .env("CUA_CHROMIUM", "/nonexistent/chromium")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cua runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/nonexistent/cua-catalog"), "{stderr}");
}

/// Runs `cua` as given, colours off.
fn raw(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("cua runs")
}

/// Runs `cua` with `--format json` in the repository root; returns the exit code and the
/// envelope on stdout.
fn envelope(args: &[&str]) -> (i32, serde_json::Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .arg("--format")
        .arg("json")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("cua runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let envelope = serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
        panic!(
            "cua {args:?} printed no envelope ({error}):\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap_or(-1), envelope)
}

#[test]
fn a_command_line_clap_refuses_still_gets_the_envelope_and_a_suggestion() {
    let (code, envelope) = envelope(&["replay", "corebank.member.savings_balance", "--inptu", "x"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["ok"], false);
    assert_eq!(envelope["error"]["code"], "usage");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("--inptu")),
        "the message names the flag: {envelope}"
    );
    assert!(
        envelope["error"]["help"]
            .as_str()
            .is_some_and(|help| help.contains("'--input'")),
        "the help names the nearest one: {envelope}"
    );
    // `cua mcp`'s stdout is the client's: a refused command line says so on stderr only.
    let output = raw(&["--format", "json", "mcp", "--bogus"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        output.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let output = raw(&["replay", "corebank.member.savings_balance", "--inptu", "x"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        output.stdout.is_empty(),
        "text mode keeps stdout for results"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("a similar argument exists: '--input'"),
        "{stderr}"
    );
}

/// A capability that is not in the catalog is one code and one exit, whichever command is
/// asked for it.
#[test]
fn an_unknown_capability_is_not_found_for_every_command_that_loads_one() {
    let missing = "corebank.member.savings_balanc";
    for args in [
        vec!["replay", missing, "--input", "member_id=1"],
        vec![
            "codegen",
            missing,
            "--out",
            "/nonexistent/never-written.spec.ts",
        ],
        vec!["route", "explain", missing],
        vec!["probe", missing, "--snapshots", "/nonexistent"],
        vec!["catalog", "show", missing],
    ] {
        let (code, envelope) = envelope(&args);
        assert_eq!(
            (code, envelope["error"]["code"].as_str()),
            (2, Some("not_found")),
            "cua {args:?}: {envelope}"
        );
    }
}

/// One situation, one code: a policy file that does not load is `invalid_policy` (exit 2) for
/// every command that reads one, and a malformed tenant name is `invalid_tenant`.
#[test]
fn the_same_mistake_gets_the_same_code_from_every_command() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let policy = scratch.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "schema_version: cua.policy/v1\nnot_a_field: true\n",
    )
    .expect("a policy file");
    let policy = policy.display().to_string();
    for args in [
        vec![
            "replay",
            "corebank.member.savings_balance",
            "--input",
            "member_id=1",
            "--policy",
            &policy,
        ],
        vec!["serve", "--policy", &policy],
        vec![
            "discover",
            "--scripted",
            "--goal",
            "g",
            "--target",
            "http://127.0.0.1:9/",
            "--policy",
            &policy,
        ],
    ] {
        let (code, envelope) = envelope(&args);
        assert_eq!(
            (code, envelope["error"]["code"].as_str()),
            (2, Some("invalid_policy")),
            "cua {args:?}: {envelope}"
        );
    }
    let (code, envelope) = envelope(&[
        "replay",
        "corebank.member.savings_balance",
        "--input",
        "member_id=1",
        "--tenant",
        "Not A Tenant",
    ]);
    assert_eq!(
        (code, envelope["error"]["code"].as_str()),
        (2, Some("invalid_tenant")),
        "{envelope}"
    );
}
