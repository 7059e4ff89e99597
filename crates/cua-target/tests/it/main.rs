//! Integration tests of cua-target: resolution rungs, identity checks, drift, predicates,
//! synthesis, and determinism, over snapshots written in a small text format (`dsl`).

#![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

mod determinism;
mod dsl;
mod fixtures;
mod identity;
mod predicate;
mod resolve;
mod synthesize;

use cua_artifact::{Identifier, TargetDescriptor};
use cua_snapshot::UiSnapshot;
use cua_target::{Bindings, BoundValues, Resolution, TargetError};

/// A descriptor from YAML (flow style keeps tests on one line).
pub fn target(yaml: &str) -> TargetDescriptor {
    cua_artifact::yaml::from_yaml(yaml)
        .unwrap_or_else(|error| panic!("bad descriptor {yaml}: {error}"))
}

/// Bindings with the given inputs.
pub fn inputs(pairs: &[(&str, &str)]) -> BoundValues {
    pairs
        .iter()
        .fold(BoundValues::new(), |bindings, (name, value)| {
            bindings.with_input(Identifier::parse(name).unwrap(), *value)
        })
}

/// One line per outcome: `strategy node-id [n candidates] [drifted] [identity verified]`, or
/// `error: …`.
pub fn render(outcome: &Result<Resolution, TargetError>) -> String {
    match outcome {
        Ok(resolution) => {
            let mut line = format!("{} {}", resolution.strategy.as_str(), resolution.node_id);
            if resolution.candidates_considered > 1 {
                line.push_str(&format!(
                    " ({} candidates)",
                    resolution.candidates_considered
                ));
            }
            if resolution.drifted {
                line.push_str(" drifted");
            }
            if resolution.identity_verified {
                line.push_str(" identity verified");
            }
            line
        }
        Err(error) => format!("error: {error}"),
    }
}

/// Resolves `descriptor` (YAML) on `page` and compares the rendered outcome.
#[track_caller]
pub fn check(page: &UiSnapshot, descriptor: &str, expect: &str) {
    check_with(page, descriptor, &BoundValues::new(), expect);
}

#[track_caller]
pub fn check_with(page: &UiSnapshot, descriptor: &str, bindings: &dyn Bindings, expect: &str) {
    let outcome = cua_target::resolve(page, &target(descriptor), bindings);
    assert_eq!(render(&outcome), expect, "descriptor: {descriptor}");
}
