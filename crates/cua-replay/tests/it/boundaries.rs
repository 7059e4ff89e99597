//! Architecture invariant: replay can reach no model client, no HTTP client and no concrete
//! surface. Read from `cargo metadata`, over normal and build dependencies (dev-dependencies
//! such as the fixture app are not part of what replay links).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Crates replay must never reach: the discovery agent, the browser driver, model clients and
/// HTTP clients (and the CDP stack under the driver).
const FORBIDDEN: &[&str] = &[
    "cua-agent",
    "cua-chromium",
    // The concrete HTTP and process operators are injected, never linked.
    "cua-operators",
    "async-openai",
    "reqwest",
    "hyper",
    "hyper-util",
    "h2",
    "ureq",
    "isahc",
    "surf",
    "curl",
    "attohttpc",
    "minreq",
    "awc",
    "chromiumoxide",
    "async-tungstenite",
    "tungstenite",
];

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Package names reachable from the workspace package `root` over normal and build edges.
fn closure(metadata: &Value, root: &str) -> BTreeSet<String> {
    let names: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|package| {
            (
                package["id"].as_str().unwrap(),
                package["name"].as_str().unwrap(),
            )
        })
        .collect();
    let nodes: BTreeMap<&str, &Value> = metadata["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| (node["id"].as_str().unwrap(), node))
        .collect();
    let start = names
        .iter()
        .find(|(id, name)| **name == root && nodes.contains_key(*id))
        .map(|(id, _)| *id)
        .unwrap_or_else(|| panic!("{root} is not in the workspace"));
    let mut seen = BTreeSet::from([start]);
    let mut queue = vec![start];
    while let Some(id) = queue.pop() {
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let linked = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|kind| kind["kind"].as_str() != Some("dev"));
            let dep_id = dep["pkg"].as_str().unwrap();
            if linked && seen.insert(dep_id) {
                queue.push(dep_id);
            }
        }
    }
    seen.into_iter().map(|id| names[id].to_owned()).collect()
}

#[test]
fn replay_reaches_no_model_http_or_browser_crate() {
    let metadata = metadata();
    let reachable = closure(&metadata, "cua-replay");
    // The closure is real: it holds what replay is built on.
    for expected in [
        "cua-target",
        "cua-policy",
        "cua-evidence",
        "cua-surface",
        "tokio",
    ] {
        assert!(
            reachable.contains(expected),
            "{expected} missing from {reachable:?}"
        );
    }
    let found: Vec<&&str> = FORBIDDEN
        .iter()
        .filter(|name| reachable.contains(**name))
        .collect();
    assert!(found.is_empty(), "cua-replay can reach {found:?}");
    // And the detector detects: the fixture app (a dev-dependency here) does reach hyper, and
    // the operators the binary injects reach an HTTP client, while the model client stays in
    // discovery alone.
    assert!(closure(&metadata, "memberdesk").contains("hyper"));
    let operators = closure(&metadata, "cua-operators");
    assert!(operators.contains("reqwest"), "{operators:?}");
    assert!(!operators.contains("async-openai"), "{operators:?}");
    assert!(!operators.contains("cua-agent"), "{operators:?}");
}

#[test]
fn eval_reaches_no_model_http_or_browser_crate() {
    // The evaluator runs capabilities through replay with the surface and operators injected by
    // the binary, so it is held to replay's boundary.
    let metadata = metadata();
    let reachable = closure(&metadata, "cua-eval");
    assert!(reachable.contains("cua-replay"), "{reachable:?}");
    let found: Vec<&&str> = FORBIDDEN
        .iter()
        .filter(|name| reachable.contains(**name))
        .collect();
    assert!(found.is_empty(), "cua-eval can reach {found:?}");
}
