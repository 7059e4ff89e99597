//! Warnings: what a capability may say but a reviewer should not accept without a reason.
//! A warning never makes a document invalid; `cua validate` prints it with its help line.
//!
//! - `cua::unscoped_detector`: an outcome or recovery rule detects text anywhere on the page.
//!   Help text that quotes the message ("any number not listed answers No records found") then
//!   fires it, and a run that found the member reports that it did not.
//! - `cua::literal_identity_key`: an identity check compares its key column with a literal
//!   rather than with an input or an output of the run. The row a run acts on should be the one
//!   the caller named; a literal recorded at compile time names the recorded row, whoever the
//!   caller is.

use crate::capability::Capability;
use crate::diagnostic::{DiagnosticCode, Problem};
use crate::predicate::Predicate;
use crate::source_map::DocPath;
use crate::value::ValueExpr;

/// Every warning about a capability, in document order.
pub fn lint_capability(capability: &Capability) -> Vec<Problem> {
    let mut problems = Vec::new();
    let root = DocPath::root();
    // The application versions the capability was written against: a range `semver` cannot
    // read is a promise nobody can check. A warning, not a refusal: the field describes the
    // application and decides nothing at replay, and sealed capabilities predate the check.
    if let Some(range) = &capability.surface.app.version_range
        && let Err(reason) = crate::VersionRange::parse(range)
    {
        problems.push(Problem::new(
            DiagnosticCode::InvalidValue,
            root.key("surface").key("app").key("version_range"),
            reason,
            "write comparators with their operators, such as `>=4.2 <5` (or `>=4.2, <5`); each \
             version is MAJOR[.MINOR[.PATCH]]",
        ));
    }
    for (index, step) in capability.steps.iter().enumerate() {
        let Some(target) = step.action.target() else {
            continue;
        };
        let Some(identity) = &target.identity else {
            continue;
        };
        if !matches!(identity.equals, ValueExpr::Input(_) | ValueExpr::Output(_)) {
            problems.push(Problem::new(
                DiagnosticCode::LiteralIdentityKey,
                root.key("steps")
                    .index(index)
                    .key("action")
                    .key("target")
                    .key("identity")
                    .key("equals"),
                format!(
                    "step `{}` keys its row by a fixed value, not by an input",
                    step.id
                ),
                "key the row by the input that names it, e.g. `identity: {column: Account, \
                 equals: {$input: account}}`, so the run acts on the row the caller asked for",
            ));
        }
    }
    for (index, outcome) in capability.outcomes.iter().enumerate() {
        unscoped(
            &mut problems,
            &root.key("outcomes").index(index).key("detect"),
            &outcome.detect,
            &format!("outcome `{}`", outcome.code),
        );
    }
    for (index, rule) in capability.recovery.iter().enumerate() {
        unscoped(
            &mut problems,
            &root.key("recovery").index(index).key("detect"),
            &rule.detect,
            &format!("recovery rule `{}`", rule.id),
        );
    }
    problems
}

/// Reports every `text_present` a detector would fire on, wherever the text sits. A
/// `text_present` under `not` only makes the detector narrower, so it is not reported.
fn unscoped(problems: &mut Vec<Problem>, path: &DocPath, predicate: &Predicate, owner: &str) {
    match predicate {
        Predicate::TextPresent { value } => {
            let text = match value {
                ValueExpr::String(text) => format!(" {text:?}"),
                _ => String::new(),
            };
            problems.push(Problem::new(
                DiagnosticCode::UnscopedDetector,
                path.clone(),
                format!("{owner} detects the text{text} anywhere on the page"),
                "scope it: a node whose whole name is the message (`node_exists` with \
                 `query: {name: …}`), a role such as `alert` or `status`, or a region; help text \
                 that quotes the message would otherwise fire it",
            ));
        }
        Predicate::AllOf { of } | Predicate::AnyOf { of } => {
            for (index, inner) in of.iter().enumerate() {
                unscoped(problems, &path.key("of").index(index), inner, owner);
            }
        }
        _ => {}
    }
}
