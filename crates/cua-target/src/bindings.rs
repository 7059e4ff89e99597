//! The values a predicate or identity check may read: inputs and outputs, never secrets.

use std::collections::BTreeMap;

use cua_artifact::{Identifier, Template, TemplatePart, TemplateRef, ValueExpr};

use crate::error::TargetError;

/// Where `{$input: …}` and `{$output: …}` are looked up.
///
/// There is deliberately no way to ask for a secret: predicates and identity checks compare
/// their values with screen text and are written to evidence with it, so a `{$secret: …}`
/// reaching them is refused by construction ([`TargetError::SecretRefused`]), whatever the
/// implementation of this trait.
pub trait Bindings {
    /// The run's value for an input, as text.
    fn input(&self, name: &Identifier) -> Option<&str>;
    /// The value an earlier step extracted, as text.
    fn output(&self, name: &Identifier) -> Option<&str>;
}

/// A plain set of bound inputs and outputs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoundValues {
    inputs: BTreeMap<Identifier, String>,
    outputs: BTreeMap<Identifier, String>,
}

impl BoundValues {
    /// No values: enough for predicates and descriptors made of literals.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an input.
    pub fn with_input(mut self, name: Identifier, value: impl Into<String>) -> Self {
        self.inputs.insert(name, value.into());
        self
    }

    /// Adds an output.
    pub fn with_output(mut self, name: Identifier, value: impl Into<String>) -> Self {
        self.outputs.insert(name, value.into());
        self
    }

    /// Records an output as a step extracts it.
    pub fn set_output(&mut self, name: Identifier, value: impl Into<String>) {
        self.outputs.insert(name, value.into());
    }
}

impl Bindings for BoundValues {
    fn input(&self, name: &Identifier) -> Option<&str> {
        self.inputs.get(name).map(String::as_str)
    }

    fn output(&self, name: &Identifier) -> Option<&str> {
        self.outputs.get(name).map(String::as_str)
    }
}

/// The text a value stands for. `context` names the place for the refusal message
/// ("a predicate", "an identity check").
pub(crate) fn bind_text<B: Bindings + ?Sized>(
    value: &ValueExpr,
    bindings: &B,
    context: &'static str,
) -> Result<String, TargetError> {
    match value {
        ValueExpr::Input(name) => bindings
            .input(name)
            .map(str::to_owned)
            .ok_or_else(|| TargetError::UnboundInput { name: name.clone() }),
        ValueExpr::Output(name) => bindings
            .output(name)
            .map(str::to_owned)
            .ok_or_else(|| TargetError::UnboundOutput { name: name.clone() }),
        ValueExpr::Secret(name) => Err(TargetError::SecretRefused {
            name: name.clone(),
            context,
        }),
        literal => Ok(literal.literal_text().unwrap_or_default()),
    }
}

/// Binds a target's name or anchor text: its `{$input: …}` and `{$output: …}` references are
/// replaced by their values, matched literally (escaped when the text is a regex). A secret is
/// refused: it would be compared with the screen.
pub(crate) fn bind_target_text<B: Bindings + ?Sized>(
    text: &str,
    bindings: &B,
    regex: bool,
) -> Result<String, TargetError> {
    if !text.contains("{$") {
        return Ok(text.to_owned());
    }
    let template = Template::parse(text).map_err(|message| TargetError::InvalidPattern {
        pattern: text.to_owned(),
        message,
    })?;
    let mut bound = String::new();
    for part in template.parts() {
        match part {
            TemplatePart::Text(literal) => bound.push_str(literal),
            TemplatePart::Ref(reference) => {
                let value = match reference {
                    TemplateRef::Input(name) => ValueExpr::Input(name.clone()),
                    TemplateRef::Output(name) => ValueExpr::Output(name.clone()),
                    TemplateRef::Secret(name) => ValueExpr::Secret(name.clone()),
                };
                let text = bind_text(&value, bindings, "a target's name or anchor")?;
                if regex {
                    bound.push_str(&regex::escape(&text));
                } else {
                    bound.push_str(&text);
                }
            }
        }
    }
    Ok(bound)
}

/// Binds a name (a target's, or a predicate query's) like [`bind_target_text`], and refuses one
/// that a value left empty: only a name written empty describes an unnamed control, and an empty
/// bound one would match any unnamed node (or, as a part, every node).
pub(crate) fn bind_name<B: Bindings + ?Sized>(
    template: &str,
    bindings: &B,
    regex: bool,
) -> Result<String, TargetError> {
    let bound = bind_target_text(template, bindings, regex)?;
    if template.contains("{$") && bound.trim().is_empty() {
        return Err(TargetError::EmptyBoundName {
            template: template.to_owned(),
        });
    }
    Ok(bound)
}

/// How a value reads in an explanation: the literal, or the reference and what it is bound to.
pub(crate) fn render_bound(value: &ValueExpr, bound: &str) -> String {
    if value.is_literal() {
        format!("{bound:?}")
    } else {
        format!("{bound:?} ({value})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> Identifier {
        Identifier::parse(text).expect("a valid identifier")
    }

    /// An output recorded as a step extracts it is what the next predicate reads, and a later
    /// extraction of the same name replaces it.
    #[test]
    fn an_extracted_output_is_read_back_and_replaced() {
        let mut values = BoundValues::new().with_input(id("member_id"), "12345");
        assert_eq!(values.output(&id("balance")), None);
        values.set_output(id("balance"), "$4,210.55");
        assert_eq!(values.output(&id("balance")), Some("$4,210.55"));
        values.set_output(id("balance"), "$4,200.00");
        assert_eq!(values.output(&id("balance")), Some("$4,200.00"));
        assert_eq!(values.input(&id("balance")), None, "outputs are not inputs");
        assert_eq!(values.input(&id("member_id")), Some("12345"));
    }
}
