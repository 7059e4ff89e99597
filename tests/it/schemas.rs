//! Every committed document, and the documents cua writes (a new project, an approval, a run's
//! record), validates against the JSON Schema of its kind under an independent validator: ajv, in strict mode (which also refuses a
//! schema with an unknown keyword or format), with every error collected.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::codegen::repository;

/// Compiles every schema, then validates every document against its kind's; prints one JSON
/// object: the kinds compiled, the documents valid, and every failure.
const CHECK: &str = r#"
const Ajv = require('ajv');
const fs = require('fs');
const input = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const ajv = new Ajv({ strict: true, allErrors: true });
const out = { compiled: [], valid: 0, failures: [] };
const validators = {};
for (const [kind, schema] of Object.entries(input.schemas)) {
  try {
    validators[kind] = ajv.compile(schema);
    out.compiled.push(kind);
  } catch (error) {
    out.failures.push({ document: 'schemas/' + kind + '.schema.json', errors: String(error.message) });
  }
}
for (const document of input.documents) {
  const validate = validators[document.kind];
  if (!validate) continue;
  if (validate(document.value)) out.valid += 1;
  else out.failures.push({ document: document.name, errors: ajv.errorsText(validate.errors, { separator: '\n' }) });
}
console.log(JSON.stringify(out));
"#;

/// The YAML and JSON files of the repository that are not ignored (tracked, or new and not
/// yet added), leaving out insta snapshots and the deliberately invalid documents of the
/// loader's own tests: what a clean clone holds, whatever a local `make demo` left.
fn repository_files(root: &Path) -> Vec<PathBuf> {
    let listed = Command::new("git")
        .args([
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "-z",
        ])
        .current_dir(root)
        .output()
        .expect("git lists the repository's files");
    assert!(listed.status.success(), "{listed:?}");
    listed
        .stdout
        .split(|byte| *byte == 0)
        .filter(|name| !name.is_empty())
        .map(|name| root.join(String::from_utf8_lossy(name).as_ref()))
        .filter(|path| {
            let text = path.to_string_lossy();
            (text.ends_with(".yaml") || text.ends_with(".yml") || text.ends_with(".json"))
                && !text.contains("/snapshots/")
                && !text.contains("/tests/it/invalid/")
                && path.is_file()
        })
        .collect()
}

/// The YAML and JSON files under `directory` (a project cua wrote).
fn documents(directory: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(directory).expect("a directory").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            documents(&path, found);
        } else if name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json") {
            found.push(path);
        }
    }
}

/// The document's kind and its value as JSON, when it is a cua document.
fn as_document(path: &Path) -> Option<(cua_artifact::DocumentKind, Value)> {
    let text = std::fs::read_to_string(path).ok()?;
    let value: Value = if path
        .extension()
        .is_some_and(|extension| extension == "json")
    {
        serde_json::from_str(&text).ok()?
    } else {
        cua_artifact::yaml::from_yaml(&text).ok()?
    };
    let kind = cua_artifact::DocumentKind::from_schema_literal(value["schema"].as_str()?)?;
    Some((kind, value))
}

#[test]
fn every_document_validates_against_its_schema_under_ajv_strict() {
    let root = repository();
    let ajv = root.join("target/playwright-ci/node_modules/ajv/package.json");
    assert!(
        ajv.is_file(),
        "this test needs ajv in target/playwright-ci: run `make deps-node`"
    );
    let mut paths = repository_files(&root);
    // What a new project starts with is a document cua writes: it must validate too.
    let project = tempfile::tempdir().unwrap();
    let init = Command::new(env!("CARGO_BIN_EXE_cua"))
        .arg("init")
        .arg(project.path())
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    let approve = Command::new(env!("CARGO_BIN_EXE_cua"))
        .current_dir(project.path())
        .args([
            "catalog",
            "approve",
            "corebank.member.savings_balance@1.0.0",
            "--by",
            "reviewer",
        ])
        .output()
        .unwrap();
    assert!(approve.status.success(), "{approve:?}");
    documents(project.path(), &mut paths);
    // And the record a run writes, from a real replay.
    let scene = crate::replay::Scene::new();
    let (code, stdout, stderr) = scene.replay(
        &[
            "corebank.member.savings_balance@1.0.0",
            "--input",
            "member_id=12345",
            "--run-id",
            "schema-run",
        ],
        &[],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    paths.push(scene.evidence().join("schema-run/run_record.json"));

    // Every YAML document a project holds, and every one cua wrote, starts with the modeline
    // that leads an editor to its kind's schema (the loader's own test inputs need none).
    let mut unlinked = Vec::new();
    for path in &paths {
        let Some((kind, _)) = as_document(path) else {
            continue;
        };
        let inside = path.strip_prefix(&root).ok();
        let test_input = inside.is_some_and(|inside| {
            inside.starts_with("crates")
                || inside.starts_with("tests")
                || inside.starts_with("target")
        });
        if test_input
            || path
                .extension()
                .is_some_and(|extension| extension == "json")
        {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let linked = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("# yaml-language-server: $schema="))
            .map(|relative| path.parent().unwrap().join(relative))
            .is_some_and(|schema| {
                schema.is_file()
                    && schema.ends_with(kind.schema_path())
                    && std::fs::read_to_string(&schema).unwrap() == kind.json_schema_text()
            });
        if !linked {
            unlinked.push(path.display().to_string());
        }
    }
    assert!(
        unlinked.is_empty(),
        "no modeline to the kind's schema: {unlinked:#?}"
    );

    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    let documents: Vec<Value> = paths
        .iter()
        .filter_map(|path| {
            let (kind, value) = as_document(path)?;
            *kinds.entry(kind.name()).or_default() += 1;
            Some(serde_json::json!({
                "name": path.strip_prefix(&root).unwrap_or(path).display().to_string(),
                "kind": kind.name(),
                "value": value,
            }))
        })
        .collect();
    // Every kind is represented, so a schema no document exercises cannot rot unseen.
    for kind in cua_artifact::DocumentKind::ALL {
        assert!(
            kinds.contains_key(kind.name()),
            "no committed {kind} document: {kinds:?}"
        );
    }
    let schemas: serde_json::Map<String, Value> = cua_artifact::DocumentKind::ALL
        .iter()
        .map(|kind| {
            let path = root.join(format!("schemas/{}.schema.json", kind.name()));
            let text = std::fs::read_to_string(&path).unwrap();
            (kind.name().to_owned(), serde_json::from_str(&text).unwrap())
        })
        .collect();

    let work = tempfile::Builder::new()
        .prefix("ajv-")
        .tempdir_in(root.join("target/playwright-ci"))
        .unwrap();
    let input = work.path().join("input.json");
    std::fs::write(
        &input,
        serde_json::to_vec(&serde_json::json!({ "schemas": schemas, "documents": documents }))
            .unwrap(),
    )
    .unwrap();
    let script = work.path().join("check.js");
    std::fs::write(&script, CHECK).unwrap();
    let output = Command::new("node")
        .arg(&script)
        .arg(&input)
        .output()
        .expect("node runs (make deps-node)");
    assert!(output.status.success(), "{output:?}");
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        result["failures"],
        serde_json::json!([]),
        "ajv refuses: {result:#}"
    );
    assert_eq!(
        result["compiled"].as_array().map(Vec::len),
        Some(cua_artifact::DocumentKind::ALL.len())
    );
    assert_eq!(
        result["valid"].as_u64(),
        Some(documents.len() as u64),
        "{kinds:?}"
    );
    assert!(documents.len() >= 50, "{kinds:?}");
}
