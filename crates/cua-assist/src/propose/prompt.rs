//! What the model is shown and may answer: the brief of the stuck step and its target, and the
//! tools it may call (a node for the step's own action, or give up).

use cua_agent::ToolSpec;
use cua_artifact::{Capability, Step, TargetDescriptor};
use serde_json::json;

use crate::eligibility::Stuck;

/// What the model is told about its task.
pub(super) const SYSTEM_PROMPT: &str = "You help a deterministic replay that stopped at one step. The step's target, as the \
capability describes it, is not on the screen as described: the application may have relabelled, renamed or \
moved it. Propose the node on the current screen this step should act on, with exactly one tool call: the step's \
own action (click, type, select or extract) with {\"target\": {\"ref\": \"nN\"}} naming a node of the screen below, \
or give_up when no node is clearly the one. You never navigate and you never choose values: the step's values are \
bound by the executor. The policy judges your proposal; a refused proposal is not performed. An accepted proposal \
becomes a candidate overlay a person reviews; the capability itself is never changed.";

/// The brief: the capability, the step, its target as recorded, and why it stopped.
pub(super) fn brief(capability: &Capability, step: &Step, stuck: &Stuck) -> String {
    let target = step.action.target().map(target_line).unwrap_or_default();
    format!(
        "{}\nCapability: {} ({})\nStep: {} ({})\nAction: {}\nTarget: {target}\nStopped with: {}: {}",
        cua_agent::scripted::ASSIST_MARKER,
        capability.reference(),
        capability.title,
        step.id,
        step.description,
        stuck.action.as_str(),
        stuck.code.as_str(),
        stuck.message,
    )
}

/// `role cell; anchor adjacent_to "Savings Balance"; scope frame content`.
pub(super) fn target_line(target: &TargetDescriptor) -> String {
    let mut parts = vec![format!("role {}", target.role)];
    if let Some(name) = &target.name {
        parts.push(format!(
            "name {}",
            serde_json::to_string(&name.value).unwrap_or_default()
        ));
    }
    if let Some(anchor) = &target.anchor {
        parts.push(format!(
            "anchor {} {}",
            anchor.relation.as_str(),
            serde_json::to_string(&anchor.text).unwrap_or_default()
        ));
    }
    if let Some(scope) = &target.scope {
        if let Some(frame) = &scope.frame {
            parts.push(format!("scope frame {frame}"));
        }
        if let Some(region) = &scope.region {
            parts.push(format!("region {region}"));
        }
    }
    parts.join("; ")
}

/// The tools an assist offers: the four retargetable actions and `give_up`.
pub(super) fn tools() -> Vec<ToolSpec> {
    let target = json!({
        "type": "object",
        "properties": { "ref": { "type": "string", "description": "A node ref from the current screen, e.g. n42." } },
        "required": ["ref"],
        "additionalProperties": false,
    });
    let why = json!({ "type": "string", "description": "One short sentence: why this node is the step's target." });
    let action = |name: &str, description: &str| ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters: json!({
            "type": "object",
            "properties": { "target": target, "why": why },
            "required": ["target"],
            "additionalProperties": false,
        }),
    };
    vec![
        action("click", "Propose the node the step's click acts on."),
        action("type", "Propose the field the step types its value into."),
        action("select", "Propose the list the step selects its value in."),
        action("extract", "Propose the node the step reads its value from."),
        ToolSpec {
            name: "give_up".to_owned(),
            description: "No node on the screen is clearly the step's target.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": { "reason": { "type": "string" } },
                "required": ["reason"],
                "additionalProperties": false,
            }),
        },
    ]
}
