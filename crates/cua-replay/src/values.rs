//! A run's values: validated inputs and extracted outputs, as text. Validation happens before
//! the surface is touched; nothing is trimmed, coerced or normalized into validity.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use cua_artifact::{Capability, Identifier, InputSpec, ValueExpr, ValueType};
use cua_target::Bindings;
use regex::Regex;
use serde_json::Value;

/// The inputs and outputs of one run. Secrets are not here: they are resolved at the dispatch
/// that types them and nowhere else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunValues {
    inputs: BTreeMap<Identifier, String>,
    outputs: BTreeMap<Identifier, String>,
}

impl RunValues {
    /// The validated inputs.
    pub fn inputs(&self) -> &BTreeMap<Identifier, String> {
        &self.inputs
    }

    /// The outputs extracted so far.
    pub fn outputs(&self) -> &BTreeMap<Identifier, String> {
        &self.outputs
    }

    pub(crate) fn set_output(&mut self, name: Identifier, value: String) {
        self.outputs.insert(name, value);
    }
}

impl Bindings for RunValues {
    fn input(&self, name: &Identifier) -> Option<&str> {
        self.inputs.get(name).map(String::as_str)
    }

    fn output(&self, name: &Identifier) -> Option<&str> {
        self.outputs.get(name).map(String::as_str)
    }
}

/// `inputs` with the capability's idempotency-key input (`idempotency_key: true`) set to `key`
/// when the caller gave none; unchanged for a capability without one.
pub fn with_idempotency_key(
    capability: &Capability,
    mut inputs: BTreeMap<String, Value>,
    key: &str,
) -> BTreeMap<String, Value> {
    if let Some(input) = capability.inputs.iter().find(|input| input.idempotency_key) {
        inputs
            .entry(input.name.to_string())
            .or_insert_with(|| Value::from(key));
    }
    inputs
}

/// The value `inputs` give the capability's idempotency-key input, if it has one.
pub fn idempotency_value(
    capability: &Capability,
    inputs: &BTreeMap<String, Value>,
) -> Option<String> {
    let input = capability
        .inputs
        .iter()
        .find(|input| input.idempotency_key)?;
    inputs
        .get(input.name.as_str())
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Why the supplied inputs do not fit the capability. The message never repeats the value: it
/// may be sensitive, or crafted to look like something else in a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputProblem {
    pub input: String,
    pub message: String,
    /// For a name the capability does not take, the declared input nearest it.
    pub closest: Option<String>,
}

/// Validates supplied inputs against the capability's specs: no unknown names, every required
/// input present (or defaulted), the JSON type right for the declared type, enum members
/// exact, and the whole text matching the pattern. Every problem is reported.
pub fn validate_inputs(
    capability: &Capability,
    supplied: &BTreeMap<String, Value>,
) -> Result<RunValues, Vec<InputProblem>> {
    let mut problems = Vec::new();
    for name in supplied.keys() {
        if capability.input(name).is_none() {
            let declared: Vec<&str> = capability
                .inputs
                .iter()
                .map(|input| input.name.as_str())
                .collect();
            let closest = cua_artifact::suggest::closest(name, declared.iter().copied());
            let guess = closest
                .map(|closest| format!("did you mean `{closest}`? "))
                .unwrap_or_default();
            problems.push(InputProblem {
                input: name.clone(),
                closest: closest.map(str::to_owned),
                message: format!(
                    "`{name}` is not an input of {}; {guess}its inputs are: {}",
                    capability.reference(),
                    if declared.is_empty() {
                        "none".to_owned()
                    } else {
                        declared.join(", ")
                    }
                ),
            });
        }
    }
    let mut values = RunValues::default();
    for spec in &capability.inputs {
        let text = match supplied.get(spec.name.as_str()) {
            Some(value) => match text_of(spec, value) {
                Ok(text) => text,
                Err(message) => {
                    problems.push(problem(spec, message));
                    continue;
                }
            },
            None => match spec.default.as_ref().and_then(ValueExpr::literal_text) {
                Some(default) => default,
                None if spec.required => {
                    problems.push(problem(spec, "is required and was not given".to_owned()));
                    continue;
                }
                None => continue,
            },
        };
        if let Err(message) = check_text(spec, &text) {
            problems.push(problem(spec, message));
            continue;
        }
        values.inputs.insert(spec.name.clone(), text);
    }
    if problems.is_empty() {
        Ok(values)
    } else {
        Err(problems)
    }
}

fn problem(spec: &InputSpec, message: String) -> InputProblem {
    InputProblem {
        input: spec.name.to_string(),
        message: format!("input `{}` {message}", spec.name),
        closest: None,
    }
}

/// The text of a supplied JSON value for the declared type. A string is taken as given; a
/// JSON number or boolean is accepted only where the declared type is one.
fn text_of(spec: &InputSpec, value: &Value) -> Result<String, String> {
    let expected = spec.value_type.as_str();
    match (spec.value_type, value) {
        (_, Value::String(text)) => Ok(text.clone()),
        (ValueType::Integer, Value::Number(number)) if number.is_i64() || number.is_u64() => {
            Ok(number.to_string())
        }
        (ValueType::Number, Value::Number(number)) => Ok(number.to_string()),
        (ValueType::Boolean, Value::Bool(flag)) => Ok(flag.to_string()),
        (_, other) => Err(format!(
            "must be a {expected}, not a JSON {}",
            json_kind(other)
        )),
    }
}

/// Checks the text against the declared type, the enum list and the pattern.
fn check_text(spec: &InputSpec, text: &str) -> Result<(), String> {
    static INTEGER: LazyLock<Regex> = LazyLock::new(|| regex("^-?[0-9]+$"));
    static NUMBER: LazyLock<Regex> = LazyLock::new(|| regex("^-?[0-9]+(\\.[0-9]+)?$"));
    static MONEY: LazyLock<Regex> = LazyLock::new(|| regex("^-?[0-9]+(\\.[0-9]{1,2})?$"));
    let length = text.chars().count();
    let shape = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!(
                "must be {what} (got {length} character(s) that are not)"
            ))
        }
    };
    match spec.value_type {
        ValueType::String => Ok(()),
        ValueType::Integer => shape(INTEGER.is_match(text), "an integer in ASCII digits"),
        ValueType::Number => shape(NUMBER.is_match(text), "a decimal number in ASCII digits"),
        ValueType::Boolean => shape(matches!(text, "true" | "false"), "`true` or `false`"),
        ValueType::Money => shape(
            MONEY.is_match(text),
            "an amount such as 100.00 (ASCII digits, at most two decimals)",
        ),
        ValueType::Date => shape(is_iso_date(text), "a date as YYYY-MM-DD"),
        ValueType::Enum => {
            if spec.allowed.iter().any(|allowed| allowed == text) {
                Ok(())
            } else {
                Err(format!("must be one of: {}", spec.allowed.join(", ")))
            }
        }
    }?;
    if let Some(pattern) = spec.anchored_pattern() {
        let compiled = Regex::new(&pattern)
            .map_err(|_| format!("has a pattern that does not compile: {pattern}"))?;
        if !compiled.is_match(text) {
            return Err(format!(
                "does not match its pattern {} ({length} character(s) given)",
                spec.pattern.as_deref().unwrap_or_default()
            ));
        }
    }
    Ok(())
}

/// `YYYY-MM-DD`, a real calendar date.
pub(crate) fn is_iso_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        let digits = &text[range];
        digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())
            .flatten()
    };
    match (number(0..4), number(5..7), number(8..10)) {
        (Some(year), Some(month), Some(day)) => is_calendar_date(year, month, day),
        _ => false,
    }
}

pub(crate) fn is_calendar_date(year: u32, month: u32, day: u32) -> bool {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("the built-in input shapes are valid regexes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capability() -> Capability {
        let yaml = r#"
schema: cua.capability/v1
id: corebank.member.savings_balance
version: 1.0.0
title: t
description: d
surface: {kind: legacy_web, app: {vendor: v, product: p}}
entrypoint: {url: "http://127.0.0.1/"}
inputs:
  - {name: member_id, pattern: "[0-9]{4,10}"}
  - {name: amount, type: money, required: false}
  - {name: kind, type: enum, enum: [savings, checking], default: savings}
steps:
  - id: look
    action: {type: assert, that: {assert: text_present, value: x}}
checkpoint: {assert: text_present, value: x}
policy: {allowed_domains: [], allowed_actions: [assert]}
"#;
        Capability::from_yaml(yaml).unwrap()
    }

    fn check(supplied: Value, expect: Result<&[(&str, &str)], &[&str]>) {
        let supplied: BTreeMap<String, Value> = serde_json::from_value(supplied).unwrap();
        let got = validate_inputs(&capability(), &supplied);
        match (got, expect) {
            (Ok(values), Ok(expected)) => {
                let got: Vec<(&str, &str)> = values
                    .inputs()
                    .iter()
                    .map(|(name, value)| (name.as_str(), value.as_str()))
                    .collect();
                assert_eq!(got, expected);
            }
            (Err(problems), Err(expected)) => {
                let got: Vec<&str> = problems.iter().map(|p| p.input.as_str()).collect();
                assert_eq!(got, expected, "{problems:?}");
            }
            (got, expect) => panic!("got {got:?}, expected {expect:?}"),
        }
    }

    #[test]
    fn inputs_are_validated_never_trimmed_or_coerced() {
        check(
            serde_json::json!({"member_id": "12345"}),
            Ok(&[("kind", "savings"), ("member_id", "12345")]),
        );
        check(
            serde_json::json!({"member_id": "1234567890", "amount": "25.5", "kind": "checking"}),
            Ok(&[
                ("amount", "25.5"),
                ("kind", "checking"),
                ("member_id", "1234567890"),
            ]),
        );
        for bad in [
            "123",
            "12345678901",
            "",
            " 12345",
            "12345 ",
            "١٢٣٤٥",
            "1'; DROP TABLE members; --",
            "<script>alert(1)</script>",
        ] {
            check(serde_json::json!({ "member_id": bad }), Err(&["member_id"]));
        }
        check(serde_json::json!({"member_id": 12345}), Err(&["member_id"]));
        check(serde_json::json!({}), Err(&["member_id"]));
        check(
            serde_json::json!({"member_id": "12345", "amount": "$1,000.00", "kind": "Savings"}),
            Err(&["amount", "kind"]),
        );
        check(
            serde_json::json!({"member_id": "12345", "nickname": "x"}),
            Err(&["nickname"]),
        );
    }

    #[test]
    fn problems_never_repeat_the_value() {
        let supplied: BTreeMap<String, Value> =
            serde_json::from_value(serde_json::json!({"member_id": "<script>alert(1)</script>"}))
                .unwrap();
        let problems = validate_inputs(&capability(), &supplied).unwrap_err();
        assert!(
            problems.iter().all(|p| !p.message.contains("script")),
            "{problems:?}"
        );
    }

    #[test]
    fn iso_dates_are_calendar_dates() {
        assert!(is_iso_date("2026-09-11"));
        assert!(is_iso_date("2024-02-29"));
        assert!(!is_iso_date("2026-02-29"));
        assert!(!is_iso_date("2026-9-11"));
        assert!(!is_iso_date("09/11/2026"));
    }
}
