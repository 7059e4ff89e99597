//! The architecture, enforced rather than hoped: each crate's workspace dependencies are the
//! ones its layer allows, the pure crates link no async runtime, network or browser crate and
//! read no clock, environment or file, and the source keeps its house rules (a module doc on
//! every file, no history in comments, every crate in the crate map and the architecture).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Each workspace crate and the workspace crates it may depend on (normal and build edges).
/// Adding an edge is a design decision: make it here, where a reviewer sees it.
const LAYERS: &[(&str, &[&str])] = &[
    // Layer 0: no workspace dependencies.
    ("cua-fs", &[]),
    ("cua-access", &[]),
    ("cua-snapshot", &[]),
    ("cua-artifact", &[]),
    ("memberdesk", &[]),
    // Layer 1: documents and pure decisions; the evidence and the catalog on disk.
    ("cua-target", &["cua-artifact", "cua-snapshot"]),
    ("cua-policy", &["cua-artifact", "cua-snapshot"]),
    ("cua-route", &["cua-artifact"]),
    ("cua-evidence", &["cua-artifact", "cua-fs", "cua-snapshot"]),
    ("cua-catalog", &["cua-artifact", "cua-fs"]),
    // Layer 2: the ports, the compiler and the batch queue.
    ("cua-surface", &["cua-policy", "cua-snapshot"]),
    ("cua-queue", &["cua-evidence"]),
    ("cua-otel", &["cua-artifact", "cua-evidence"]),
    (
        "cua-compile",
        &[
            "cua-artifact",
            "cua-evidence",
            "cua-fs",
            "cua-snapshot",
            "cua-target",
        ],
    ),
    // Layer 3: the chokepoint, and the concrete adapters behind the ports.
    (
        "cua-gate",
        &[
            "cua-artifact",
            "cua-evidence",
            "cua-policy",
            "cua-snapshot",
            "cua-surface",
        ],
    ),
    (
        "cua-chromium",
        &["cua-policy", "cua-snapshot", "cua-surface"],
    ),
    ("cua-operators", &["cua-policy", "cua-surface"]),
    // Layer 4: the two loops that drive a surface through the gate.
    (
        "cua-replay",
        &[
            "cua-artifact",
            "cua-catalog",
            "cua-evidence",
            "cua-gate",
            "cua-policy",
            "cua-route",
            "cua-snapshot",
            "cua-surface",
            "cua-target",
        ],
    ),
    (
        "cua-agent",
        &[
            "cua-artifact",
            "cua-evidence",
            "cua-gate",
            "cua-policy",
            "cua-snapshot",
            "cua-surface",
            "cua-target",
        ],
    ),
    // Layer 5: what is built on replay.
    (
        "cua-eval",
        &[
            "cua-artifact",
            "cua-evidence",
            "cua-fs",
            "cua-policy",
            "cua-replay",
            "cua-surface",
        ],
    ),
    (
        "cua-mcp",
        &[
            "cua-access",
            "cua-artifact",
            "cua-catalog",
            "cua-evidence",
            "cua-policy",
            "cua-replay",
            "cua-snapshot",
            "cua-surface",
        ],
    ),
    (
        "cua-console",
        &[
            "cua-access",
            "cua-artifact",
            "cua-evidence",
            "cua-fs",
            "cua-gate",
            "cua-policy",
            "cua-replay",
            "cua-snapshot",
            "cua-surface",
            "cua-target",
        ],
    ),
    (
        "cua-assist",
        &[
            "cua-agent",
            "cua-artifact",
            "cua-evidence",
            "cua-fs",
            "cua-gate",
            "cua-policy",
            "cua-replay",
            "cua-snapshot",
            "cua-surface",
            "cua-target",
        ],
    ),
];

/// Crates that decide without touching the world: no I/O, no clock, no async.
const PURE: &[&str] = &[
    "cua-artifact",
    "cua-snapshot",
    "cua-target",
    "cua-policy",
    "cua-route",
];

/// What a pure crate may not link, however indirectly.
const NOT_IN_PURE: &[&str] = &[
    "tokio",
    "futures",
    "futures-util",
    "async-openai",
    "reqwest",
    "hyper",
    "axum",
    "rmcp",
    "chromiumoxide",
    "tungstenite",
];

/// What a pure crate's source may not call: the clock, the environment, the file system and
/// randomness come in through parameters.
const NOT_IN_PURE_SOURCE: &[&str] = &[
    "SystemTime::now",
    "Instant::now",
    "std::env",
    "std::fs",
    "std::net",
    "env::var",
    "fs::read",
    "fs::write",
    "File::open",
    "File::create",
    "getrandom",
    "thread_rng",
];

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(repository())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

/// Workspace package name → its direct workspace dependencies over normal and build edges.
fn workspace_edges(metadata: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let packages = metadata["packages"].as_array().expect("packages");
    let names: BTreeSet<&str> = packages
        .iter()
        .filter(|package| members.contains(package["id"].as_str().unwrap_or_default()))
        .filter_map(|package| package["name"].as_str())
        .collect();
    packages
        .iter()
        .filter(|package| members.contains(package["id"].as_str().unwrap_or_default()))
        .map(|package| {
            let deps = package["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|dep| dep["kind"].as_str() != Some("dev"))
                .filter_map(|dep| dep["name"].as_str())
                .filter(|name| names.contains(name))
                .map(str::to_owned)
                .collect();
            (
                package["name"].as_str().unwrap_or_default().to_owned(),
                deps,
            )
        })
        .collect()
}

/// Package names `root` links over normal and build edges, with the features `root` itself
/// enables (`cargo metadata`'s graph unifies the whole workspace's features, and would charge a
/// crate with what another one turns on).
fn linked(root: &str) -> BTreeSet<String> {
    linked_with(root, &[])
}

/// [`linked`] with more `cargo tree` arguments (feature selection).
fn linked_with(root: &str, extra: &[&str]) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["tree", "-p", root, "-e", "normal,build", "--prefix", "none"])
        .args(["--format", "{p}"])
        .args(extra)
        .current_dir(repository())
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// External crates only their wrappers may name directly (cargo-deny's `wrappers`, read from
/// `deny.toml`, the one list): everything else reaches them through the wrapper's types, so the
/// wrapper is the one place their API and their failure modes are handled.
fn wrapped() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(repository().join("deny.toml")).expect("deny.toml");
    let deny: toml::Table = toml::from_str(&text).expect("deny.toml is TOML");
    deny["bans"]["deny"]
        .as_array()
        .expect("bans.deny")
        .iter()
        .filter(|entry| entry.get("wrappers").is_some())
        .map(|entry| {
            let name = entry["name"].as_str().expect("a name").to_owned();
            let wrappers = entry["wrappers"]
                .as_array()
                .expect("wrappers")
                .iter()
                .filter_map(|wrapper| wrapper.as_str().map(str::to_owned))
                .collect();
            (name, wrappers)
        })
        .collect()
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

/// The source files of the product: every crate's `src` and the binary's.
fn product_sources() -> Vec<PathBuf> {
    let root = repository();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    for crate_dir in crate_dirs() {
        rust_files(&crate_dir.join("src"), &mut files);
    }
    files.sort();
    files
}

fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repository().join("crates"))
        .expect("crates/")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    dirs
}

fn relative(path: &Path) -> String {
    path.strip_prefix(repository())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn each_crate_depends_only_on_what_its_layer_allows() {
    let metadata = metadata();
    let edges = workspace_edges(&metadata);
    let allowed: BTreeMap<&str, BTreeSet<&str>> = LAYERS
        .iter()
        .map(|(name, deps)| (*name, deps.iter().copied().collect()))
        .collect();
    let mut problems = Vec::new();
    for (name, deps) in &edges {
        if name == "cua" {
            continue;
        }
        let Some(allowed) = allowed.get(name.as_str()) else {
            problems.push(format!("{name} has no row in LAYERS"));
            continue;
        };
        for dep in deps {
            if !allowed.contains(dep.as_str()) {
                problems.push(format!(
                    "{name} depends on {dep}, which its layer does not allow"
                ));
            }
        }
    }
    for name in allowed.keys() {
        if !edges.contains_key(*name) {
            problems.push(format!(
                "LAYERS names {name}, which is not a workspace crate"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The detector detects: the binary depends on crates no library row allows.
    assert!(edges["cua"].contains("cua-chromium"), "{:?}", edges["cua"]);
}

#[test]
fn wrapped_crates_are_named_only_by_their_wrappers() {
    let metadata = metadata();
    let wrapped = wrapped();
    assert!(!wrapped.is_empty(), "deny.toml names no wrapped crate");
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for package in metadata["packages"].as_array().expect("packages") {
        if !members.contains(package["id"].as_str().unwrap_or_default()) {
            continue;
        }
        let name = package["name"].as_str().unwrap_or_default();
        for dep in package["dependencies"].as_array().expect("dependencies") {
            if dep["kind"].as_str() == Some("dev") {
                continue;
            }
            let dep = dep["name"].as_str().unwrap_or_default();
            if let Some((_, wrappers)) = wrapped.iter().find(|(wrapped, _)| wrapped == dep) {
                seen.insert(dep);
                if !wrappers.iter().any(|wrapper| wrapper == name) {
                    problems.push(format!(
                        "{name} names {dep} directly; only {wrappers:?} may"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The detector detects: every wrapped crate is named by its wrapper.
    for (wrapped, _) in &wrapped {
        assert!(
            seen.contains(wrapped.as_str()),
            "no workspace crate names {wrapped}"
        );
    }
}

#[test]
fn pure_crates_link_no_runtime_network_or_browser_and_read_no_clock() {
    let mut problems = Vec::new();
    for name in PURE {
        let reachable = linked(name);
        for forbidden in NOT_IN_PURE {
            if reachable.contains(*forbidden) {
                problems.push(format!("{name} links {forbidden}"));
            }
        }
        let mut files = Vec::new();
        rust_files(
            &repository().join("crates").join(name).join("src"),
            &mut files,
        );
        assert!(!files.is_empty(), "{name} has no sources");
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a readable source file");
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                for call in NOT_IN_PURE_SOURCE {
                    if code.contains(call) {
                        problems.push(format!(
                            "{}:{}: a pure crate calls `{call}`",
                            relative(&file),
                            number + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The detector detects: replay, which is not pure, links tokio.
    assert!(linked("cua-replay").contains("tokio"));
}

#[test]
fn the_product_build_links_no_fixture_app() {
    let product = linked_with("cua", &["--no-default-features"]);
    assert!(product.contains("cua-replay"), "{product:?}");
    assert!(
        !product.contains("memberdesk"),
        "the product links the fixture app"
    );
    // The development build, which `make demo` and the tests use, does.
    assert!(linked("cua").contains("memberdesk"));
}

#[test]
fn every_source_file_says_what_it_holds_and_no_comment_tells_history() {
    let history = history_phrases();
    let mut problems = Vec::new();
    let files = product_sources();
    assert!(files.len() > 150, "found only {} source files", files.len());
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a readable source file");
        if !text.starts_with("//!") {
            problems.push(format!(
                "{}: does not start with a `//!` module doc",
                relative(file)
            ));
        }
        for (number, line) in text.lines().enumerate() {
            let Some(comment) = line.trim_start().strip_prefix("//") else {
                continue;
            };
            let lower = comment.to_ascii_lowercase();
            let names_an_issue = lower.match_indices("issue ").any(|(at, found)| {
                lower[at + found.len()..].starts_with(|c: char| c.is_ascii_digit())
            });
            let phrase = history
                .iter()
                .find(|phrase| lower.contains(*phrase))
                .copied()
                .or(names_an_issue.then_some("issue N"));
            if let Some(phrase) = phrase {
                problems.push(format!(
                    "{}:{}: a comment tells history (`{phrase}`): say why the code is as it is",
                    relative(file),
                    number + 1
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn only_the_gate_turns_a_request_into_a_decision() {
    // The policy engine decides; only cua-gate asks it to, so every decision is recorded,
    // intent-written and lease-checked the same way. The policy crate's own code and the
    // benchmarks that time the engine are the exceptions.
    let mut problems = Vec::new();
    let mut files = Vec::new();
    rust_files(&repository().join("src"), &mut files);
    for dir in crate_dirs() {
        let name = dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned());
        if matches!(name.as_deref(), Some("cua-gate" | "cua-policy")) {
            continue;
        }
        rust_files(&dir.join("src"), &mut files);
    }
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a readable source file");
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if code.contains(".authorize(") || code.contains(".authorize_with(") {
                problems.push(format!(
                    "{}:{}: asks the policy engine directly; pass cua_gate::Gate instead",
                    relative(file),
                    number + 1
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The detector detects: the gate itself asks.
    let gate = std::fs::read_to_string(repository().join("crates/cua-gate/src/lib.rs"))
        .expect("the gate's source");
    assert!(gate.contains(".authorize_with("));
}

/// Phrases that narrate how code got here rather than why it is so.
fn history_phrases() -> Vec<&'static str> {
    vec![
        "as an additive",
        "later issues",
        "added by the",
        "added for the console",
    ]
}

#[test]
fn every_crate_is_in_the_crate_map_and_the_architecture() {
    let readme =
        std::fs::read_to_string(repository().join("crates/README.md")).expect("crates/README.md");
    let architecture =
        std::fs::read_to_string(repository().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut problems = Vec::new();
    for dir in crate_dirs() {
        let name = dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !readme.contains(&format!("| `{name}` |")) {
            problems.push(format!("crates/README.md has no row for {name}"));
        }
        if !architecture.contains(&format!("### `{name}`")) {
            problems.push(format!("ARCHITECTURE.md has no section for {name}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A mutant left out of mutation testing is a claim a reviewer must be able to challenge:
/// every `exclude_re` entry in `.cargo/mutants.toml` has its reason on the line above it, and
/// every file `examine_globs` names exists (a renamed file would silently leave the run).
#[test]
fn every_excluded_mutant_says_why_and_every_examined_file_exists() {
    let path = repository().join(".cargo/mutants.toml");
    let text = std::fs::read_to_string(&path).expect(".cargo/mutants.toml");
    let config: toml::Table = toml::from_str(&text).expect("mutants.toml is TOML");
    let mut problems = Vec::new();
    for glob in config["examine_globs"].as_array().expect("examine_globs") {
        let glob = glob.as_str().expect("a glob");
        let exists = match glob.strip_suffix("*.rs") {
            Some(dir) => repository().join(dir).is_dir(),
            None => repository().join(glob).is_file(),
        };
        if !exists {
            problems.push(format!("examine_globs names {glob}, which is not there"));
        }
    }
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|line| line.starts_with("exclude_re"))
        .expect("an exclude_re list");
    let mut reason = false;
    for line in &lines[start + 1..] {
        let line = line.trim();
        if line == "]" {
            break;
        }
        if line.starts_with('#') {
            reason = line.trim_start_matches('#').trim().len() >= 10;
        } else if line.starts_with('"') {
            if !reason {
                problems.push(format!("{line} has no reason on the line above it"));
            }
            reason = false;
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The licence the manifest declares is the one the repository ships, in full.
#[test]
fn the_license_file_is_the_license_the_manifest_names() {
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(repository().join("Cargo.toml")).unwrap()).unwrap();
    assert_eq!(
        manifest["workspace"]["package"]["license"].as_str(),
        Some("Apache-2.0")
    );
    let license = std::fs::read_to_string(repository().join("LICENSE")).unwrap();
    assert!(
        license.contains("Apache License"),
        "LICENSE names its licence"
    );
    assert!(
        license.contains("Version 2.0, January 2004"),
        "LICENSE is 2.0"
    );
    assert!(
        license.contains("END OF TERMS AND CONDITIONS"),
        "LICENSE is the whole text"
    );
}
