//! The candidate overlay: the run's binding with a target override for the stuck step, and its
//! precondition relabelled where it names the recorded label.

use std::collections::BTreeMap;

use cua_artifact::{
    Predicate, Step, StepOverride, TargetDescriptor, TargetOverride, TenantBinding,
    TenantBindingSchema, TenantId,
};
use cua_replay::INVOCATION_TENANT;
use serde_json::Value;

use super::AssistRequest;

/// The candidate: the run's binding (less the invocation's vars) with a target override for
/// the step, and the relabelled precondition when there is one.
pub(super) fn candidate_binding(
    request: &AssistRequest<'_>,
    step: &Step,
    descriptor: &TargetDescriptor,
    precondition: Option<Predicate>,
) -> TenantBinding {
    let capability = &request.prepared.capability;
    let mut binding = match &request.prepared.overlay {
        Some(overlay) => overlay.binding.clone(),
        None => TenantBinding {
            schema: TenantBindingSchema::default(),
            capability: capability.reference(),
            tenant: request
                .tenant
                .cloned()
                .or_else(|| TenantId::parse(INVOCATION_TENANT).ok())
                .unwrap_or_else(|| {
                    TenantId::parse("candidate").expect("`candidate` is a valid tenant id")
                }),
            description: String::new(),
            vars: BTreeMap::new(),
            overrides: BTreeMap::new(),
            recovery_extra: Vec::new(),
            checkpoint: None,
            policy: None,
        },
    };
    binding
        .vars
        .retain(|name, _| !request.invocation_vars.contains(&name.as_str()));
    let note = format!(
        "Candidate from assisted replay of run {}: step `{}` retargeted to {}.",
        request.failed.result.run_id,
        step.id,
        descriptor.describe()
    );
    binding.description = if binding.description.is_empty() {
        note
    } else {
        format!("{} {note}", binding.description)
    };
    let existing = binding.overrides.remove(&step.id).unwrap_or_default();
    binding.overrides.insert(
        step.id.clone(),
        StepOverride {
            target: Some(TargetOverride {
                role: None,
                name: descriptor.name.clone(),
                scope: descriptor.scope.clone(),
                anchor: descriptor.anchor.clone(),
                ordinal: descriptor.ordinal,
                identity: descriptor.identity.clone(),
                hints: Some(descriptor.hints.clone()),
                recorded_strategy: descriptor.recorded_strategy,
            }),
            precondition: precondition.or(existing.precondition),
            ..existing
        },
    );
    binding
}

/// The precondition with the recorded label replaced by the proposed one, wherever a query
/// names it exactly (`name`, `name_contains`, a text value). `None` when nothing changed.
pub(super) fn relabel(
    predicate: &Predicate,
    recorded: &TargetDescriptor,
    proposed: &TargetDescriptor,
) -> Option<Predicate> {
    let mut renames = Vec::new();
    if let (Some(old), Some(new)) = (&recorded.anchor, &proposed.anchor)
        && old.text != new.text
    {
        renames.push((old.text.clone(), new.text.clone()));
    }
    if let (Some(old), Some(new)) = (&recorded.name, &proposed.name)
        && old.value != new.value
    {
        renames.push((old.value.clone(), new.value.clone()));
    }
    let mut value = serde_json::to_value(predicate).ok()?;
    let mut changed = false;
    rename_labels(&mut value, &renames, &mut changed);
    if !changed {
        return None;
    }
    serde_json::from_value(value).ok()
}

pub(super) fn rename_labels(value: &mut Value, renames: &[(String, String)], changed: &mut bool) {
    match value {
        Value::Object(object) => {
            for (key, child) in object.iter_mut() {
                if matches!(key.as_str(), "name" | "name_contains" | "value" | "text")
                    && let Value::String(text) = child
                    && let Some((_, new)) = renames.iter().find(|(old, _)| old == text)
                {
                    *text = new.clone();
                    *changed = true;
                } else {
                    rename_labels(child, renames, changed);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rename_labels(item, renames, changed);
            }
        }
        _ => {}
    }
}
