//! The reviewer's additions to the discovered draft (`review.yaml`): what they are, and how they
//! are applied, re-validated and resealed. The compiler invents no outcomes and no recovery; a
//! reviewer who knows the application adds them, and the result is a new content hash.

use cua_artifact::{ActionKind, Capability, Outcome, RecoveryRule};
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
    pub(super) review_notes: String,
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

/// The reviewed capability as a file: a header saying where it came from, then the document.
pub(super) fn reviewed_file(reviewed: &Capability, draft_hash: &str) -> Result<String, String> {
    let body = reviewed.to_yaml().map_err(|error| error.to_string())?;
    Ok(format!(
        "# Reviewed by `cua demo`: the discovered draft (sealed as {draft_hash}) with the reviewer's\n\
         # additions from review.yaml (outcomes, recovery), validated and resealed.\n{body}"
    ))
}
