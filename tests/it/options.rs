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
