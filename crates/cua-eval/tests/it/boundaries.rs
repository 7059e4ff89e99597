//! Architecture invariant: the eval crate names no browser and no model. Read from `cargo
//! metadata` over normal and build dependencies; the surface is injected by the binary.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

const FORBIDDEN: &[&str] = &[
    "cua-agent",
    "cua-chromium",
    "async-openai",
    "chromiumoxide",
    "reqwest",
];

#[test]
fn cua_eval_reaches_neither_the_browser_nor_the_model() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
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
        .find(|(id, name)| **name == "cua-eval" && nodes.contains_key(*id))
        .map(|(id, _)| *id)
        .unwrap();
    let mut seen = BTreeSet::from([start]);
    let mut queue = vec![start];
    while let Some(id) = queue.pop() {
        for dependency in nodes[id]["deps"].as_array().unwrap() {
            let linked = dependency["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|kind| kind["kind"].as_str() != Some("dev"));
            let target = dependency["pkg"].as_str().unwrap();
            if linked && seen.insert(target) {
                queue.push(target);
            }
        }
    }
    let reached: BTreeSet<&str> = seen.iter().map(|id| names[id]).collect();
    assert!(
        reached.contains("cua-replay"),
        "the closure was read: {reached:?}"
    );
    let leaked: Vec<&&str> = FORBIDDEN
        .iter()
        .filter(|name| reached.contains(**name))
        .collect();
    assert!(leaked.is_empty(), "cua-eval reaches {leaked:?}");
}
