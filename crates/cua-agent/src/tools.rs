//! The closed action space the model may use, as tool definitions, and the parsing of a tool
//! call into an [`AgentAction`]. Anything else a model sends is refused before it reaches the
//! chokepoint.
//!
//! A target is given in one of two ways, and the model is told both:
//!
//! - `{"ref": "n42"}`: a node ref from the current outline. The loop synthesizes a semantic
//!   descriptor for that node (`cua_target::synthesize`, verified by resolving it back) and
//!   resolves the descriptor like any other; the ref itself never leaves the turn it was shown in.
//! - `{"role": "button", "name": "Search", "anchor": {"relation": "row_of", "text": "…"},
//!   "frame": "content", "ordinal": 0}`: a descriptor the model writes itself, resolved on the
//!   ladder.

use cua_artifact::{
    ActionKind, Anchor, AnchorRelation, Hints, Identifier, MatchMode, NameMatch, NodeScope,
    SecretName, TargetDescriptor,
};
use serde_json::{Value, json};

use crate::llm::ToolSpec;

/// One parsed tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentAction {
    /// Look again; optionally unfold a folded table by its ref.
    Observe {
        expand: Option<String>,
    },
    Click {
        target: TargetSpec,
    },
    Type {
        target: TargetSpec,
        text: TypedValue,
    },
    Select {
        target: TargetSpec,
        option: String,
    },
    PressKey {
        key: String,
        target: Option<TargetSpec>,
    },
    Navigate {
        url: String,
    },
    /// Read a value off the screen into a named output.
    Extract {
        target: TargetSpec,
        into: Identifier,
    },
    /// The model is done: it reached the goal, or it gives up.
    Finish {
        summary: String,
        gave_up: bool,
    },
}

impl AgentAction {
    /// The tool's name: an acting tool is named by its action kind's wire name, which is what
    /// the trace records and the compiler reads back.
    pub fn tool(&self) -> &'static str {
        match self {
            Self::Observe { .. } => "observe",
            Self::Click { .. } => ActionKind::Click.as_str(),
            Self::Type { .. } => ActionKind::Type.as_str(),
            Self::Select { .. } => ActionKind::Select.as_str(),
            Self::PressKey { .. } => ActionKind::PressKey.as_str(),
            Self::Navigate { .. } => ActionKind::Navigate.as_str(),
            Self::Extract { .. } => ActionKind::Extract.as_str(),
            Self::Finish { .. } => "finish",
        }
    }
}

/// Whether discovery's model is given a tool for steps of `kind` (named by the kind's wire
/// name), or why not. Exhaustive, so a new kind is decided here before it compiles.
pub fn tool_for(kind: ActionKind) -> Result<&'static str, &'static str> {
    match kind {
        ActionKind::Click
        | ActionKind::Type
        | ActionKind::Select
        | ActionKind::PressKey
        | ActionKind::Navigate
        | ActionKind::Extract => Ok(kind.as_str()),
        ActionKind::Reload => Err("a reload is a recovery remedy a reviewer declares"),
        ActionKind::Scroll => {
            Err("the model reads the whole page's tree; scrolling shows it nothing")
        }
        ActionKind::WaitFor => Err("the compiler derives waits from what each step changed"),
        ActionKind::Assert => {
            Err("postconditions and the goal checkpoint are compiled from the run")
        }
        ActionKind::RawInput => Err("an operator's gesture, human-only by policy"),
        ActionKind::Http | ActionKind::Command => {
            Err("an operator step names a declared service or program; a reviewer writes it")
        }
        ActionKind::Screenshot | ActionKind::ClickAt => {
            Err("the visual route is explicit and reviewed; a model never acts by pixels")
        }
    }
}

/// How the model named a control.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetSpec {
    /// A node ref from the outline the model was shown.
    Ref(String),
    /// A descriptor the model wrote.
    Described(Box<TargetDescriptor>),
}

/// What the model asked to type. Placeholders are bound only at dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypedValue {
    Literal(String),
    /// `{$secret: name}`: the secret resolver supplies the value at dispatch.
    Secret(SecretName),
    /// `{$input: name}`: a sensitive input of the run, never shown to the model.
    Input(Identifier),
}

impl TypedValue {
    /// Reads `{$secret: name}` and `{$input: name}` placeholders; anything else is literal.
    pub fn parse(text: &str) -> Self {
        let trimmed = text.trim();
        let placeholder = trimmed
            .strip_prefix('{')
            .and_then(|rest| rest.strip_suffix('}'))
            .and_then(|inner| inner.split_once(':'))
            .map(|(key, name)| (key.trim(), name.trim().trim_matches(['"', '\''])));
        match placeholder {
            Some(("$secret", name)) => SecretName::parse(name)
                .map_or_else(|_| Self::Literal(text.to_owned()), Self::Secret),
            Some(("$input", name)) => {
                Identifier::parse(name).map_or_else(|_| Self::Literal(text.to_owned()), Self::Input)
            }
            _ => Self::Literal(text.to_owned()),
        }
    }

    /// The value as the evidence records it: the literal, or the placeholder (never a secret's
    /// or a sensitive input's value).
    pub fn evidence(&self) -> Value {
        match self {
            Self::Literal(text) => Value::from(text.as_str()),
            Self::Secret(name) => json!({ "$secret": name.as_str() }),
            Self::Input(name) => json!({ "$input": name.as_str() }),
        }
    }
}

/// The tool definitions offered on every turn.
pub fn tool_specs() -> Vec<ToolSpec> {
    let why = json!({
        "type": "string",
        "description": "One short sentence: why this action moves toward the goal."
    });
    let target = target_schema();
    let spec = |name: &str, description: &str, properties: Value, required: &[&str]| ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters: json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }),
    };
    vec![
        spec(
            "observe",
            "Look at the current screen again. Pass `expand` with a table's ref to unfold rows \
             the outline folded.",
            json!({ "expand": { "type": "string", "description": "A table ref such as n17." }, "why": why }),
            &[],
        ),
        spec(
            "click",
            "Click a control (button, link, checkbox).",
            json!({ "target": target, "why": why }),
            &["target"],
        ),
        spec(
            "type",
            "Type text into a textbox, replacing what it holds. For a credential, type the \
             placeholder `{$secret: name}`; for a sensitive input, `{$input: name}`. Their \
             values are filled in outside the model and never shown.",
            json!({ "target": target, "text": { "type": "string" }, "why": why }),
            &["target", "text"],
        ),
        spec(
            "select",
            "Choose an option of a combobox by the option's visible text.",
            json!({ "target": target, "option": { "type": "string" }, "why": why }),
            &["target", "option"],
        ),
        spec(
            "press_key",
            "Press one key (Enter, Tab, Escape), optionally on a control.",
            json!({ "key": { "type": "string" }, "target": target, "why": why }),
            &["key"],
        ),
        spec(
            "navigate",
            "Open a URL. Only URLs the policy allows are followed.",
            json!({ "url": { "type": "string" }, "why": why }),
            &["url"],
        ),
        spec(
            "extract",
            "Read the value a goal asks for off the screen into a named output.",
            json!({
                "target": target,
                "into": {
                    "type": "string",
                    "description": "The output's name in snake_case, e.g. savings_balance."
                },
                "why": why
            }),
            &["target", "into"],
        ),
        spec(
            "finish",
            "Stop: the goal is reached (every value it asks for is extracted), or it cannot be \
             reached (gave_up true).",
            json!({
                "summary": { "type": "string" },
                "gave_up": { "type": "boolean" }
            }),
            &["summary"],
        ),
    ]
}

fn target_schema() -> Value {
    json!({
        "type": "object",
        "description": "Either `ref` (a node ref from the current outline, e.g. n42) or a \
                        description: `role` with `name` and/or `anchor`, optionally `frame` and \
                        `ordinal` (zero-based, document order) when several controls match.",
        "properties": {
            "ref": { "type": "string" },
            "role": { "type": "string" },
            "name": { "type": "string" },
            "anchor": {
                "type": "object",
                "properties": {
                    "relation": { "type": "string", "enum": ["row_of", "adjacent_to", "within_section", "labelled_by", "beside_label"] },
                    "text": { "type": "string" }
                },
                "required": ["relation", "text"]
            },
            "frame": { "type": "string" },
            "ordinal": { "type": "integer", "minimum": 0 }
        }
    })
}

/// Parses one tool call. The error is the text answered to the model.
pub fn parse(name: &str, arguments: &str) -> Result<(AgentAction, String), String> {
    let arguments: Value = if arguments.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(arguments)
            .map_err(|error| format!("the arguments are not JSON: {error}"))?
    };
    let why = text(&arguments, "why").unwrap_or_default();
    let action = match name {
        "observe" => AgentAction::Observe {
            expand: text(&arguments, "expand"),
        },
        "click" => AgentAction::Click {
            target: target(&arguments)?,
        },
        "type" => AgentAction::Type {
            target: target(&arguments)?,
            text: TypedValue::parse(&required(&arguments, "text")?),
        },
        "select" => AgentAction::Select {
            target: target(&arguments)?,
            option: required(&arguments, "option")?,
        },
        "press_key" => AgentAction::PressKey {
            key: required(&arguments, "key")?,
            target: match arguments.get("target") {
                Some(Value::Null) | None => None,
                Some(_) => Some(target(&arguments)?),
            },
        },
        "navigate" => AgentAction::Navigate {
            url: required(&arguments, "url")?,
        },
        "extract" => {
            let into = required(&arguments, "into")?;
            AgentAction::Extract {
                target: target(&arguments)?,
                into: Identifier::parse(&into).map_err(|error| format!("`into`: {error}"))?,
            }
        }
        "finish" => AgentAction::Finish {
            summary: text(&arguments, "summary").unwrap_or_default(),
            gave_up: arguments
                .get("gave_up")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        },
        other => {
            return Err(format!(
                "`{other}` is not an available tool; the tools are observe, click, type, select, \
                 press_key, navigate, extract and finish"
            ));
        }
    };
    Ok((action, why))
}

fn text(arguments: &Value, key: &str) -> Option<String> {
    arguments
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

fn required(arguments: &Value, key: &str) -> Result<String, String> {
    arguments
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("`{key}` is required and must be a string"))
}

fn target(arguments: &Value) -> Result<TargetSpec, String> {
    let target = arguments
        .get("target")
        .filter(|target| target.is_object())
        .ok_or("`target` is required: give `ref` or `role` with `name` or `anchor`")?;
    if let Some(reference) = text(target, "ref") {
        return Ok(TargetSpec::Ref(reference));
    }
    let role = text(target, "role")
        .ok_or("the target needs `ref`, or a `role` with `name` and/or `anchor`")?;
    let name = text(target, "name").map(|value| NameMatch {
        value,
        match_mode: MatchMode::Exact,
    });
    let anchor = match target.get("anchor") {
        None | Some(Value::Null) => None,
        Some(anchor) => {
            let relation = match text(anchor, "relation").as_deref() {
                Some("row_of") => AnchorRelation::RowOf,
                Some("adjacent_to") => AnchorRelation::AdjacentTo,
                Some("within_section") => AnchorRelation::WithinSection,
                Some("labelled_by") => AnchorRelation::LabelledBy,
                Some("beside_label") => AnchorRelation::BesideLabel,
                other => {
                    return Err(format!(
                        "anchor relation {other:?} is not one of row_of, adjacent_to, \
                         within_section, labelled_by, beside_label"
                    ));
                }
            };
            Some(Anchor {
                relation,
                text: text(anchor, "text").ok_or("the anchor needs `text`")?,
                match_mode: MatchMode::Normalized,
            })
        }
    };
    if name.is_none() && anchor.is_none() && target.get("ordinal").is_none() {
        return Err("the target needs `name`, `anchor` or `ordinal` besides its role".to_owned());
    }
    let ordinal = match target.get("ordinal") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|ordinal| u32::try_from(ordinal).ok())
                .ok_or("`ordinal` must be a non-negative integer")?,
        ),
    };
    Ok(TargetSpec::Described(Box::new(TargetDescriptor {
        role: role.to_ascii_lowercase(),
        name,
        scope: text(target, "frame").map(|frame| NodeScope {
            frame: Some(frame),
            region: None,
        }),
        anchor,
        ordinal,
        identity: None,
        hints: Hints::default(),
        recorded_strategy: None,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_recognised_and_everything_else_is_literal() {
        assert_eq!(
            TypedValue::parse("{$secret: corebank.operator_password}"),
            TypedValue::Secret(SecretName::parse("corebank.operator_password").unwrap())
        );
        assert_eq!(
            TypedValue::parse(" {$input: member_id} "),
            TypedValue::Input(Identifier::parse("member_id").unwrap())
        );
        assert_eq!(
            TypedValue::parse("12345"),
            TypedValue::Literal("12345".into())
        );
        assert_eq!(
            TypedValue::parse("{$secret: Not A Name}"),
            TypedValue::Literal("{$secret: Not A Name}".into())
        );
    }

    #[test]
    fn tool_calls_parse_into_the_closed_action_space() {
        let (action, why) = parse(
            "click",
            r#"{"target": {"role": "button", "name": "Search", "frame": "content"}, "why": "submit"}"#,
        )
        .unwrap();
        assert_eq!(why, "submit");
        let AgentAction::Click {
            target: TargetSpec::Described(descriptor),
        } = action
        else {
            panic!("expected a described click, got {action:?}");
        };
        assert_eq!(
            descriptor.describe(),
            "button named exact \"Search\" in frame content"
        );
        assert!(matches!(
            parse(
                "extract",
                r#"{"target": {"ref": "n12"}, "into": "savings_balance"}"#
            ),
            Ok((
                AgentAction::Extract {
                    target: TargetSpec::Ref(_),
                    ..
                },
                _
            ))
        ));
        assert!(
            parse("delete_everything", "{}")
                .unwrap_err()
                .contains("not an available tool")
        );
        assert!(
            parse("click", "{}")
                .unwrap_err()
                .contains("`target` is required")
        );
        assert!(
            parse(
                "extract",
                r#"{"target": {"ref": "n1"}, "into": "Bad Name"}"#
            )
            .is_err()
        );
        assert!(parse("click", "not json").unwrap_err().contains("not JSON"));
    }
}
