//! `cua catalog list|show|approve|revoke|search` on a temporary catalog: text and JSON output,
//! and exit codes 0 (done), 1 (refused by a criterion) and 2 (usage, missing, invalid or
//! tampered).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

const SAVINGS: &str = "corebank.member.savings_balance@1.0.0";
const TRANSFER: &str = "corebank.member.transfer_funds@1.0.0";

/// A temporary project with a copy of the catalog crate's fixtures, its catalog in `catalog/`
/// (tenants and evaluations where a project keeps them).
struct Scratch {
    root: TempDir,
}

impl Scratch {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("a temporary directory");
        let fixtures =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/cua-catalog/tests/fixtures");
        copy_tree(&fixtures.join("capabilities"), &root.path().join("catalog"));
        copy_tree(&fixtures.join("tenants"), &root.path().join("tenants"));
        std::fs::write(
            root.path().join("cua.toml"),
            "[paths]\ncatalog = \"catalog\"\n",
        )
        .expect("the project file is written");
        Self { root }
    }

    fn catalog(&self) -> PathBuf {
        self.root.path().join("catalog")
    }

    fn capability(&self, reference: &str) -> PathBuf {
        self.catalog().join(format!("{reference}.yaml"))
    }

    /// Runs `cua catalog ARGS --catalog <scratch>/catalog` from the scratch root; returns the
    /// exit code, stdout and stderr with the root replaced by `ROOT` and decision times by
    /// `<now>`.
    fn cua(&self, args: &[&str]) -> (i32, String, String) {
        let catalog = self.catalog().display().to_string();
        let mut command = Command::new(env!("CARGO_BIN_EXE_cua"));
        command.arg("catalog").args(args);
        if !args.contains(&"--catalog") {
            command.args(["--catalog", catalog.as_str()]);
        }
        let output = command
            .current_dir(self.root.path())
            .env("NO_COLOR", "1")
            .env_remove("CUA_CATALOG")
            .output()
            .expect("the cua binary runs");
        let clean = |bytes: &[u8]| {
            let text = String::from_utf8_lossy(bytes)
                .replace(&self.root.path().display().to_string(), "ROOT");
            mask_timestamps(&text)
        };
        (
            output.status.code().expect("an exit code"),
            clean(&output.stdout),
            clean(&output.stderr),
        )
    }

    /// Runs with `--format json` and returns the exit code and the envelope, pretty-printed.
    fn json(&self, args: &[&str]) -> (i32, String) {
        let mut with_format = vec!["--format", "json"];
        with_format.extend_from_slice(args);
        let (code, stdout, stderr) = self.cua(&with_format);
        assert_eq!(stderr, "", "JSON mode writes nothing to stderr");
        let envelope: serde_json::Value =
            serde_json::from_str(&stdout).expect("stdout is one JSON envelope");
        (
            code,
            serde_json::to_string_pretty(&envelope).expect("serializable"),
        )
    }

    fn edit(&self, reference: &str, from: &str, to: &str) {
        let path = self.capability(reference);
        let text = std::fs::read_to_string(&path).expect("readable");
        assert!(text.contains(from));
        std::fs::write(&path, text.replacen(from, to, 1)).expect("writable");
    }

    fn write_evaluation(&self, directory: &Path, changes: &[(&str, serde_json::Value)]) {
        let hash = std::fs::read_to_string(self.capability(SAVINGS))
            .expect("readable")
            .lines()
            .find_map(|line| line.strip_prefix("content_hash: ").map(str::to_owned))
            .expect("the fixture is sealed");
        let mut evaluation = serde_json::json!({
            "schema": "cua.capability_evaluation/v1",
            "capability": SAVINGS,
            "content_hash": hash,
            "suite": "savings-balance",
            "runs": 20, "successes": 17, "business_outcomes": 3, "needs_human": 0,
            "failures": 0, "wrong_actions": 0, "ambiguity_refusals": 0,
            "determinism_holds": true, "mean_drift": 0.0, "fallback_rate": 0.0,
            "unauthorized_dispatches": 0,
        });
        for (key, value) in changes {
            evaluation[*key] = value.clone();
        }
        std::fs::create_dir_all(directory).expect("creatable");
        std::fs::write(
            directory.join("savings-balance.evaluation.json"),
            evaluation.to_string(),
        )
        .expect("writable");
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("creatable");
    for item in std::fs::read_dir(from).expect("readable") {
        let item = item.expect("readable");
        if item.file_type().expect("a file type").is_dir() {
            copy_tree(&item.path(), &to.join(item.file_name()));
        } else {
            std::fs::copy(item.path(), to.join(item.file_name())).expect("copyable");
        }
    }
}

/// Replaces every `YYYY-MM-DDTHH:MM:SS.ffffffZ` with `<now>`: decision times come from the
/// system clock.
fn mask_timestamps(text: &str) -> String {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd.ddddddZ";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut position = 0;
    while position < bytes.len() {
        let candidate = &bytes[position..];
        let matches = candidate.len() >= SHAPE.len()
            && SHAPE
                .iter()
                .zip(candidate)
                .all(|(shape, byte)| match shape {
                    b'd' => byte.is_ascii_digit(),
                    other => other == byte,
                });
        if matches {
            out.push_str("<now>");
            position += SHAPE.len();
        } else {
            let character = text[position..].chars().next().expect("inside the text");
            out.push(character);
            position += character.len_utf8();
        }
    }
    out
}

fn transcript(runs: &[(&str, (i32, String, String))]) -> String {
    let mut out = String::new();
    for (command, (code, stdout, stderr)) in runs {
        writeln!(out, "$ cua catalog {command}\nexit {code}").expect("a string");
        if !stdout.is_empty() {
            writeln!(out, "--- stdout\n{stdout}").expect("a string");
        }
        if !stderr.is_empty() {
            writeln!(out, "--- stderr\n{stderr}").expect("a string");
        }
    }
    out
}

#[test]
fn list_shows_integrity_and_approval_state() {
    let scratch = Scratch::new();
    let approved = scratch.cua(&["approve", SAVINGS, "--by", "aditya"]);
    assert_eq!(approved.0, 0, "{approved:?}");
    // One byte of meaning edited: TAMPERED. And a draft, with its hash line removed.
    scratch.edit(TRANSFER, "max_steps: 14", "max_steps: 15");
    let sign_on = scratch.capability("corebank.auth.sign_on@1.0.0");
    let text = std::fs::read_to_string(&sign_on).expect("readable");
    let draft: Vec<&str> = text
        .lines()
        .filter(|line| !line.starts_with("content_hash:"))
        .collect();
    std::fs::write(&sign_on, draft.join("\n")).expect("writable");
    std::fs::write(scratch.catalog().join("notes.yaml"), "not: a capability\n").expect("ok");

    let list = scratch.cua(&["list"]);
    assert_eq!(list.0, 0);
    insta::assert_snapshot!("list_text", transcript(&[("list", list)]));
    let (code, json) = scratch.json(&["list"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("list_json", json);
}

#[test]
fn approve_and_revoke() {
    let scratch = Scratch::new();
    let evals = scratch.root.path().join("evals");
    let mut runs = Vec::new();
    runs.push(("approve (no --by)", scratch.cua(&["approve", SAVINGS])));
    runs.push((
        "approve SAVINGS --by aditya --from-eval (no evaluation)",
        scratch.cua(&["approve", SAVINGS, "--by", "aditya", "--from-eval"]),
    ));
    scratch.write_evaluation(&evals, &[("determinism_holds", serde_json::Value::Null)]);
    runs.push((
        "approve SAVINGS --by aditya --from-eval --evals evals (determinism not shown)",
        scratch.cua(&[
            "approve",
            SAVINGS,
            "--by",
            "aditya",
            "--from-eval",
            "--evals",
            "evals",
        ]),
    ));
    scratch.write_evaluation(&evals, &[]);
    runs.push((
        "approve corebank.member.savings_balance --by aditya --from-eval --evals evals",
        scratch.cua(&[
            "approve",
            "corebank.member.savings_balance",
            "--by",
            "aditya",
            "--from-eval",
            "--evals",
            "evals",
        ]),
    ));
    runs.push((
        "revoke SAVINGS --by maria --notes 'wrong balance reported'",
        scratch.cua(&[
            "revoke",
            SAVINGS,
            "--by",
            "maria",
            "--notes",
            "wrong balance reported",
        ]),
    ));
    runs.push((
        "revoke TRANSFER --by maria (nothing to revoke)",
        scratch.cua(&["revoke", TRANSFER, "--by", "maria"]),
    ));
    scratch.edit(TRANSFER, "max_steps: 14", "max_steps: 15");
    runs.push((
        "approve TRANSFER --by aditya (tampered)",
        scratch.cua(&["approve", TRANSFER, "--by", "aditya"]),
    ));
    runs.push((
        "approve corebank.member.close_account@1.0.0 --by aditya (not found)",
        scratch.cua(&[
            "approve",
            "corebank.member.close_account@1.0.0",
            "--by",
            "aditya",
        ]),
    ));
    let codes: Vec<i32> = runs.iter().map(|(_, run)| run.0).collect();
    assert_eq!(codes, [2, 1, 1, 0, 0, 2, 2, 2]);
    insta::assert_snapshot!(transcript(&runs));
}

#[test]
fn a_refusal_in_json_names_the_failed_criteria() {
    let scratch = Scratch::new();
    let evals = scratch.root.path().join("evidence/evals");
    scratch.write_evaluation(
        &evals,
        &[
            ("runs", serde_json::json!(4)),
            ("successes", serde_json::json!(1)),
        ],
    );
    let (code, json) = scratch.json(&["approve", SAVINGS, "--by", "aditya", "--from-eval"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!(json);
}

#[test]
fn show_and_tool_schema() {
    let scratch = Scratch::new();
    assert_eq!(scratch.cua(&["approve", SAVINGS, "--by", "aditya"]).0, 0);
    let runs = [
        (
            "show SAVINGS --tenant first-valley",
            scratch.cua(&["show", SAVINGS, "--tenant", "first-valley"]),
        ),
        (
            "show SAVINGS --tenant northgate-fcu",
            scratch.cua(&["show", SAVINGS, "--tenant", "northgate-fcu"]),
        ),
        (
            "show SAVINGS --tool-schema",
            scratch.cua(&["show", SAVINGS, "--tool-schema"]),
        ),
    ];
    for (command, run) in &runs {
        assert_eq!(run.0, 0, "{command}: {run:?}");
    }
    insta::assert_snapshot!(transcript(&runs));

    scratch.edit(SAVINGS, "max_steps: 12", "max_steps: 13");
    let tampered = [
        ("show SAVINGS (tampered)", scratch.cua(&["show", SAVINGS])),
        (
            "show SAVINGS --tool-schema (tampered)",
            scratch.cua(&["show", SAVINGS, "--tool-schema"]),
        ),
    ];
    for (command, run) in &tampered {
        assert_eq!(run.0, 2, "{command}: {run:?}");
    }
    insta::assert_snapshot!("show_tampered", transcript(&tampered));
}

#[test]
fn search_explains_its_ranking() {
    let scratch = Scratch::new();
    assert_eq!(scratch.cua(&["approve", SAVINGS, "--by", "aditya"]).0, 0);
    let runs = [
        (
            "search 'look up a member's savings balnce' --top 2",
            scratch.cua(&["search", "look up a member's savings balnce", "--top", "2"]),
        ),
        (
            "search 'move money between accounts' --max-risk elevated",
            scratch.cua(&[
                "search",
                "move money between accounts",
                "--max-risk",
                "elevated",
            ]),
        ),
        (
            "search 'member' --approved --surface legacy_web",
            scratch.cua(&["search", "member", "--approved", "--surface", "legacy_web"]),
        ),
        ("search 'zebra'", scratch.cua(&["search", "zebra"])),
    ];
    for (command, run) in &runs {
        assert_eq!(run.0, 0, "{command}: {run:?}");
    }
    insta::assert_snapshot!(transcript(&runs));
    let (code, json) = scratch.json(&["search", "trasnfer funds", "--top", "1"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("search_json", json);
}

#[test]
fn usage_errors_exit_2() {
    let scratch = Scratch::new();
    let missing = scratch.root.path().join("nowhere").display().to_string();
    let runs = [
        (
            "list --catalog ROOT/nowhere",
            scratch.cua(&["list", "--catalog", missing.as_str()]),
        ),
        ("show not-a-ref", scratch.cua(&["show", "not-a-ref"])),
        (
            "show SAVINGS --tenant Not_A_Tenant",
            scratch.cua(&["show", SAVINGS, "--tenant", "Not_A_Tenant"]),
        ),
        (
            "search balance --max-risk reckless",
            scratch.cua(&["search", "balance", "--max-risk", "reckless"]),
        ),
    ];
    let codes: Vec<i32> = runs.iter().map(|(_, run)| run.0).collect();
    assert_eq!(codes, [2, 2, 2, 2]);
    insta::assert_snapshot!(transcript(&runs));
}
