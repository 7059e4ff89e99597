//! The reviewer's additions to the discovered draft (`review.yaml`): what they are, and how they
//! are applied, re-validated and resealed. The compiler invents no outcomes and no recovery; a
//! reviewer who knows the application adds them, and the result is a new content hash.

use cua_artifact::{ActionKind, Capability, NodeQuery, Outcome, Predicate, RecoveryRule};
use serde::Deserialize;

/// The additions, as the reviewer wrote them.
pub(super) const REVIEW_YAML: &str = include_str!("review.yaml");

/// What a reviewer adds to a draft before sealing it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReviewAdditions {
    pub(super) outcomes: Vec<Outcome>,
    pub(super) recovery: Vec<RecoveryRule>,
    /// Actions the recovery needs that the draft's policy does not list yet.
    pub(super) allowed_actions: Vec<ActionKind>,
    /// Roles for the node queries the compiler left without one (the labels beside the values
    /// it read): a query without a role matches any node of that name, and has no role-based
    /// locator in a generated Playwright spec.
    #[serde(default)]
    pub(super) query_roles: Vec<QueryRole>,
    pub(super) review_notes: String,
}

/// Every role-less node query naming `name` gets `role`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct QueryRole {
    pub(super) name: String,
    pub(super) role: String,
}

impl ReviewAdditions {
    /// Reads the additions from strict YAML.
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        cua_artifact::yaml::from_yaml(text).map_err(|error| error.to_string())
    }

    /// The draft with these additions, validated and sealed. The draft's own sentence that it
    /// declares no outcomes and no recovery is no longer true, so it goes.
    pub(super) fn apply(&self, draft: &Capability) -> Result<Capability, String> {
        let mut reviewed = draft.clone();
        for step in &mut reviewed.steps {
            for predicate in [&mut step.precondition, &mut step.postcondition]
                .into_iter()
                .flatten()
            {
                self.give_roles(predicate);
            }
        }
        self.give_roles(&mut reviewed.checkpoint);
        reviewed.outcomes.extend(self.outcomes.iter().cloned());
        reviewed.recovery.extend(self.recovery.iter().cloned());
        for action in &self.allowed_actions {
            if !reviewed.policy.allowed_actions.contains(action) {
                reviewed.policy.allowed_actions.push(*action);
            }
        }
        reviewed.description = reviewed
            .description
            .replace(
                " It declares no outcomes and no recovery yet; see provenance.notes.",
                "",
            )
            .trim_end()
            .to_owned();
        reviewed.provenance.review_notes = Some(self.review_notes.trim().to_owned());
        reviewed.content_hash = None;
        let reviewed = reviewed.sealed();
        let problems = reviewed.validate();
        if !problems.is_empty() {
            return Err(format!(
                "the reviewed capability is invalid: {}",
                cua_artifact::ArtifactError::Invalid(problems)
            ));
        }
        Ok(reviewed)
    }
}

impl ReviewAdditions {
    /// Gives the reviewer's roles to the role-less queries of `predicate`.
    fn give_roles(&self, predicate: &mut Predicate) {
        match predicate {
            Predicate::NodeExists { query, .. }
            | Predicate::NodeAbsent { query }
            | Predicate::NodeHasValue { query, .. }
            | Predicate::MoneyPresent { query, .. } => self.give_role(query),
            Predicate::AllOf { of } | Predicate::AnyOf { of } => {
                for inner in of {
                    self.give_roles(inner);
                }
            }
            Predicate::Not { of } => self.give_roles(of),
            Predicate::TextPresent { .. }
            | Predicate::TextAbsent { .. }
            | Predicate::UrlMatches { .. }
            | Predicate::HttpStatusIn { .. } => {}
        }
    }

    fn give_role(&self, query: &mut NodeQuery) {
        if query.role.is_some() {
            return;
        }
        let given = self
            .query_roles
            .iter()
            .find(|given| query.name.as_deref() == Some(given.name.as_str()));
        if let Some(given) = given {
            query.role = Some(given.role.clone());
        }
    }
}

/// How many node queries of `capability` have no role.
pub(super) fn roleless_queries(capability: &Capability) -> usize {
    fn count(predicate: &Predicate) -> usize {
        match predicate {
            Predicate::NodeExists { query, .. }
            | Predicate::NodeAbsent { query }
            | Predicate::NodeHasValue { query, .. } => usize::from(query.role.is_none()),
            other => other.children().into_iter().map(count).sum(),
        }
    }
    capability
        .steps
        .iter()
        .flat_map(|step| [&step.precondition, &step.postcondition])
        .flatten()
        .chain(std::iter::once(&capability.checkpoint))
        .map(count)
        .sum()
}

/// The reviewed capability as a file: a header saying where it came from, then the document.
pub(super) fn reviewed_file(reviewed: &Capability, draft_hash: &str) -> Result<String, String> {
    let body = reviewed.to_yaml().map_err(|error| error.to_string())?;
    Ok(format!(
        "# Reviewed by `cua demo`: the discovered draft (sealed as {draft_hash}) with the reviewer's\n\
         # additions from review.yaml (outcomes, recovery), validated and resealed.\n{body}"
    ))
}
