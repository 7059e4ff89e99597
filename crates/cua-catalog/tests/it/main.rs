//! Integration tests of the catalog: integrity states, approval pinning and voiding,
//! `--from-eval` criteria, tenant carry-over, and search ranking, typos, filters and
//! determinism. Every test works on a temporary copy of the fixture catalog.

#![allow(clippy::unwrap_used, reason = "tests unwrap what they just set up")]

mod approvals;
mod evaluations;
mod integrity;
mod search;
mod tenants;

use std::path::{Path, PathBuf};

use cua_artifact::CapabilityRef;
use cua_catalog::{ApproveRequest, Catalog, CatalogConfig, CatalogEntry};
use tempfile::TempDir;

/// The time every decision in these tests is made at.
const AT: &str = "2026-10-01T09:00:00.000000Z";

const SAVINGS: &str = "corebank.member.savings_balance@1.0.0";
const TRANSFER: &str = "corebank.member.transfer_funds@1.0.0";

/// A temporary repository layout holding a copy of the fixture capabilities.
struct Fixture {
    root: TempDir,
    catalog: Catalog,
}

impl Fixture {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let config = CatalogConfig::rooted_at(root.path());
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        copy_tree(&fixtures.join("capabilities"), &config.capabilities);
        copy_tree(&fixtures.join("tenants"), &config.tenants);
        Self {
            root,
            catalog: Catalog::new(config),
        }
    }

    fn config(&self) -> &CatalogConfig {
        self.catalog.config()
    }

    fn capability_path(&self, reference: &str) -> PathBuf {
        self.config().capabilities.join(format!("{reference}.yaml"))
    }

    fn read(&self, reference: &str) -> String {
        std::fs::read_to_string(self.capability_path(reference)).unwrap()
    }

    fn write(&self, reference: &str, text: &str) {
        std::fs::write(self.capability_path(reference), text).unwrap();
    }

    /// Replaces `from` with `to` in the artifact, leaving the declared hash as it was.
    fn edit(&self, reference: &str, from: &str, to: &str) {
        let text = self.read(reference);
        assert!(text.contains(from), "{reference} does not contain {from:?}");
        self.write(reference, &text.replacen(from, to, 1));
    }

    /// Replaces `from` with `to` and seals the result again: a reviewed edit.
    fn edit_and_reseal(&self, reference: &str, from: &str, to: &str) {
        self.edit(reference, from, to);
        let sealed = cua_artifact::seal_source(reference, &self.read(reference)).unwrap();
        self.write(reference, &sealed.text);
    }

    fn entry(&self, reference: &str) -> CatalogEntry {
        self.catalog.entry(&reference_of(reference)).unwrap()
    }

    fn approve(&self, reference: &str, from_eval: bool) -> Result<(), cua_catalog::CatalogError> {
        self.catalog
            .approve(&ApproveRequest {
                reference: reference_of(reference),
                by: "aditya".to_owned(),
                at: AT.to_owned(),
                notes: None,
                from_eval,
                tenant: None,
            })
            .map(|_| ())
    }

    /// Replaces the temporary root in text with `ROOT`.
    fn clean(&self, text: &str) -> String {
        text.replace(&self.root.path().display().to_string(), "ROOT")
    }
}

fn reference_of(text: &str) -> CapabilityRef {
    CapabilityRef::parse(text).unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for item in std::fs::read_dir(from).unwrap() {
        let item = item.unwrap();
        if item.file_type().unwrap().is_dir() {
            copy_tree(&item.path(), &to.join(item.file_name()));
        } else {
            std::fs::copy(item.path(), to.join(item.file_name())).unwrap();
        }
    }
}
