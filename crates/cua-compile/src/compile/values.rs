//! Typed values: a placeholder the run typed stays one; a literal the goal names becomes an
//! input.

use cua_artifact::{Identifier, InputSpec, SecretName, ValueExpr};
use serde_json::Value;

use crate::shape::infer_pattern;

use super::Compiler;
use super::notes::{contains_token, quoted, snake};

impl Compiler {
    /// A typed value: a placeholder stays one; a literal seen in the goal becomes an input.
    pub(super) fn typed_value(&mut self, value: Option<&Value>, label: &str) -> ValueExpr {
        match value {
            Some(Value::Object(map)) => {
                if let Some(name) = map.get("$secret").and_then(Value::as_str)
                    && let Ok(name) = SecretName::parse(name)
                {
                    return ValueExpr::Secret(name);
                }
                if let Some(name) = map.get("$input").and_then(Value::as_str)
                    && let Ok(name) = Identifier::parse(name)
                {
                    if self.inputs.iter().all(|input| input.name != name) {
                        self.inputs.push(InputSpec {
                            name: name.clone(),
                            value_type: cua_artifact::ValueType::String,
                            required: true,
                            description: format!("Typed into {} by placeholder during discovery; sensitive, never shown to the model.", quoted(label)),
                            pattern: None,
                            allowed: Vec::new(),
                            default: None,
                            example: None,
                            sensitive: true,
                            idempotency_key: false,
                        });
                        self.notes.push(format!("Input `{name}` is sensitive and was never seen, so it has no pattern; add one."));
                    }
                    return ValueExpr::Input(name);
                }
                ValueExpr::String(Value::Object(map.clone()).to_string())
            }
            Some(Value::String(literal)) => {
                if let Some(existing) = self.inputs.iter().find(|input| {
                    input
                        .example
                        .as_ref()
                        .and_then(ValueExpr::literal_text)
                        .as_deref()
                        == Some(literal.as_str())
                }) {
                    return ValueExpr::Input(existing.name.clone());
                }
                if !literal.is_empty() && contains_token(&self.goal, literal) {
                    let mut name = snake(label);
                    if name.is_empty() || Identifier::parse(&name).is_err() {
                        name = format!("input_{}", self.inputs.len() + 1);
                    }
                    while self.inputs.iter().any(|input| input.name.as_str() == name) {
                        name.push_str("_2");
                    }
                    let name = Identifier::parse(&name).unwrap_or_else(|_| {
                        Identifier::parse("input").expect("`input` is an identifier")
                    });
                    let pattern = infer_pattern(literal);
                    self.notes.push(match &pattern {
                        Some(pattern) => format!("Input `{name}`: the pattern `{pattern}` was inferred from one example ({literal:?}); widen or narrow it to the real format."),
                        None => format!("Input `{name}` has no pattern (one free-text example); add one if the format is known."),
                    });
                    self.inputs.push(InputSpec {
                        name: name.clone(),
                        value_type: cua_artifact::ValueType::String,
                        required: true,
                        description: format!(
                            "Typed into {}; seen once in discovery's goal.",
                            quoted(label)
                        ),
                        pattern,
                        allowed: Vec::new(),
                        default: None,
                        example: Some(ValueExpr::String(literal.clone())),
                        sensitive: false,
                        idempotency_key: false,
                    });
                    return ValueExpr::Input(name);
                }
                self.notes.push(format!(
                    "A step types the literal {literal:?} into {}; it was not in the goal, so it stays a literal. Make it an input if it varies.",
                    quoted(label)
                ));
                ValueExpr::String(literal.clone())
            }
            _ => ValueExpr::String(String::new()),
        }
    }
}
