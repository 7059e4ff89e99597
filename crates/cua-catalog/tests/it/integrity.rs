//! Integrity on temporary copies: sealed, layout-only edits, draft, one byte of meaning edited
//! (TAMPERED, listed and refused by `load`), and files that are not capabilities at all.

use std::fmt::Write as _;

use cua_catalog::{CatalogEntry, Integrity};

use crate::{Fixture, SAVINGS, reference_of};

/// One state of the savings capability's file, made by `setup`.
struct Case {
    name: &'static str,
    setup: fn(&Fixture),
}

const CASES: [Case; 7] = [
    Case {
        name: "as sealed",
        setup: |_| {},
    },
    Case {
        name: "a comment added and a key reordered",
        setup: |fixture| {
            fixture.edit(
                SAVINGS,
                "schema: cua.capability/v1\nid: corebank.member.savings_balance\n",
                "# Reviewed again.\nid: corebank.member.savings_balance\nschema: cua.capability/v1\n",
            );
        },
    },
    Case {
        name: "the hash removed",
        setup: |fixture| {
            let text = fixture.read(SAVINGS);
            let kept: Vec<&str> = text
                .lines()
                .filter(|line| !line.starts_with("content_hash:"))
                .collect();
            fixture.write(SAVINGS, &kept.join("\n"));
        },
    },
    Case {
        name: "one byte of meaning edited (max_steps 12 to 13)",
        setup: |fixture| fixture.edit(SAVINGS, "max_steps: 12", "max_steps: 13"),
    },
    Case {
        name: "one byte of the title edited",
        setup: |fixture| fixture.edit(SAVINGS, "title: Look up", "title: Look Up"),
    },
    Case {
        name: "not YAML",
        setup: |fixture| fixture.write(SAVINGS, "schema: [cua.capability/v1\n"),
    },
    Case {
        name: "a rule broken",
        setup: |fixture| {
            fixture.edit(
                SAVINGS,
                "allowed_actions: [navigate, type, click, extract, reload, wait_for, assert]",
                "allowed_actions: [navigate, type, click, reload, wait_for, assert]",
            );
        },
    },
];

fn describe(entry: &CatalogEntry, fixture: &Fixture) -> String {
    let detail = match &entry.integrity {
        Integrity::Sealed { content_hash } => content_hash.to_string(),
        Integrity::Draft { computed } => format!("computed {computed}"),
        Integrity::Tampered { declared, computed } => {
            format!("declared {declared}, computed {computed}")
        }
        Integrity::Invalid { reason } => fixture.clean(reason),
    };
    format!(
        "{} | {} | {detail}",
        entry.display_name(),
        entry.integrity.label()
    )
}

#[test]
fn integrity_states() {
    let mut out = String::new();
    for case in CASES {
        let fixture = Fixture::new();
        (case.setup)(&fixture);
        let listing = fixture.catalog.list().unwrap();
        assert_eq!(listing.len(), 4, "{}: every file is listed", case.name);
        let entry = listing
            .iter()
            .find(|entry| entry.display_name() == SAVINGS)
            .unwrap();
        let loaded = match fixture.catalog.load(&reference_of(SAVINGS)) {
            Ok(capability) => format!("loads ({})", capability.reference()),
            Err(error) => format!(
                "refused [{}]: {}",
                error.code(),
                fixture.clean(&error.to_string())
            ),
        };
        writeln!(
            out,
            "{}\n  {}\n  load: {loaded}",
            case.name,
            describe(entry, &fixture)
        )
        .unwrap();
    }
    insta::assert_snapshot!(out);
}

#[test]
fn bad_files_are_listed_not_fatal() {
    let fixture = Fixture::new();
    let capabilities = &fixture.config().capabilities;
    // Content of 1.0.0 under a 2.0.0 name.
    std::fs::write(
        capabilities.join("corebank.member.savings_balance@2.0.0.yaml"),
        fixture.read(SAVINGS),
    )
    .unwrap();
    std::fs::write(capabilities.join("notes.yaml"), "just: notes\n").unwrap();
    // Neither an approval, an evaluation nor a temporary file is an artifact.
    std::fs::write(capabilities.join(".half-written.yaml.tmp-1"), "x").unwrap();
    std::fs::write(capabilities.join("README.md"), "# catalog\n").unwrap();

    let listing = fixture.catalog.list().unwrap();
    let mut out = String::new();
    for entry in &listing {
        writeln!(out, "{}", describe(entry, &fixture)).unwrap();
    }
    insta::assert_snapshot!(out);
}

#[test]
fn a_missing_reference_is_not_found_and_a_bare_id_means_the_highest_version() {
    let fixture = Fixture::new();
    let error = fixture
        .catalog
        .load(&reference_of("corebank.member.close_account@1.0.0"))
        .unwrap_err();
    assert_eq!(error.code(), "not_found");
    assert!(!error.is_refusal());

    let text = fixture
        .read(SAVINGS)
        .replace("version: 1.0.0", "version: 1.2.0");
    let sealed = cua_artifact::seal_source("1.2.0", &text).unwrap();
    std::fs::write(
        fixture
            .config()
            .capabilities
            .join("corebank.member.savings_balance@1.2.0.yaml"),
        sealed.text,
    )
    .unwrap();
    let resolved = fixture
        .catalog
        .resolve("corebank.member.savings_balance")
        .unwrap();
    assert_eq!(
        resolved.to_string(),
        "corebank.member.savings_balance@1.2.0"
    );
    assert_eq!(
        fixture.catalog.resolve("not a ref").unwrap_err().code(),
        "invalid_reference"
    );
    assert_eq!(
        fixture
            .catalog
            .resolve("corebank.member.nothing")
            .unwrap_err()
            .code(),
        "not_found"
    );
}
