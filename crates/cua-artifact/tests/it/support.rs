//! Shared fixtures: the workspace's reference artifacts and a minimal valid capability.

use std::path::{Path, PathBuf};

use cua_artifact::Capability;

/// The repository root.
pub(crate) fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The text of a file under the repository root.
pub(crate) fn read(relative: &str) -> String {
    let path = workspace_root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The reference capabilities, by file name.
pub(crate) const REFERENCE_CAPABILITIES: [&str; 4] = [
    "corebank.auth.sign_on@1.0.0.yaml",
    "corebank.member.open_subaccount@1.0.0.yaml",
    "corebank.member.savings_balance@1.0.0.yaml",
    "corebank.member.transfer_funds@1.0.0.yaml",
];

/// The Northgate overlays, by file name.
pub(crate) const NORTHGATE_BINDINGS: [&str; 3] = [
    "corebank.member.open_subaccount.yaml",
    "corebank.member.savings_balance.yaml",
    "corebank.member.transfer_funds.yaml",
];

/// A reference capability's text.
pub(crate) fn reference_text(file_name: &str) -> String {
    read(&format!("capabilities/{file_name}"))
}

/// A reference capability, loaded for use (rules and hash checked).
pub(crate) fn reference(file_name: &str) -> Capability {
    Capability::from_yaml(&reference_text(file_name))
        .unwrap_or_else(|error| panic!("{file_name}: {error}"))
}

/// A small capability that breaks no rule; tests change one thing in it.
pub(crate) const MINIMAL: &str = r#"schema: cua.capability/v1
id: acme.member.lookup
version: 1.0.0
title: Look up a member
description: Reads a member's balance.
surface: {kind: web, app: {vendor: acme, product: Desk}}
entrypoint: {url: "{base_url}/"}
inputs:
  - {name: member_id, pattern: "^[0-9]{4,10}$"}
outputs:
  - {name: balance, type: money, source: {step: read_balance}}
steps:
  - id: enter_member_id
    action:
      type: type
      value: {$input: member_id}
      target: {role: textbox, name: {value: Member Number}}
  - id: submit_search
    action:
      type: click
      target: {role: button, name: {value: Search}}
    wait: {for: navigation, timeout_ms: 8000}
  - id: read_balance
    action:
      type: extract
      into: balance
      target: {role: cell, anchor: {relation: adjacent_to, text: Balance}}
checkpoint: {assert: text_present, value: Balance}
policy:
  allowed_domains: ["{base_url}"]
  allowed_actions: [navigate, type, click, extract, reload]
"#;

/// `MINIMAL` with `old` replaced by `new` (exactly once).
pub(crate) fn minimal_with(old: &str, new: &str) -> String {
    assert_eq!(
        MINIMAL.matches(old).count(),
        1,
        "{old:?} must occur once in MINIMAL"
    );
    MINIMAL.replace(old, new)
}

/// The `.yaml` fixtures of `tests/it/<directory>`, sorted, with the directory's path.
pub(crate) fn yaml_fixtures(directory: &str) -> (PathBuf, Vec<String>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it")
        .join(directory);
    let mut names: Vec<String> = std::fs::read_dir(&path)
        .unwrap_or_else(|error| panic!("the {directory}/ fixtures exist: {error}"))
        .map(|entry| {
            entry
                .expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    names.sort();
    (path, names)
}
