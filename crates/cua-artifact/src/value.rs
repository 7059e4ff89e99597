//! Values in documents: a literal, or a reference bound at the last moment to a run's input, a
//! secret, or an output already extracted.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::identifiers::{Identifier, SecretName};

/// A value: a literal string, integer, number or boolean, or `{$input: name}`,
/// `{$secret: name}`, `{$output: name}`. References are resolved when the step runs; a secret is
/// resolved only at dispatch and never appears in a predicate, a result or evidence.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueExpr {
    String(String),
    Integer(i64),
    Number(f64),
    Boolean(bool),
    Input(Identifier),
    Secret(SecretName),
    Output(Identifier),
}

impl ValueExpr {
    /// The input this value reads, if it reads one.
    pub fn input(&self) -> Option<&Identifier> {
        match self {
            Self::Input(name) => Some(name),
            _ => None,
        }
    }

    /// The secret this value reads, if it reads one.
    pub fn secret(&self) -> Option<&SecretName> {
        match self {
            Self::Secret(name) => Some(name),
            _ => None,
        }
    }

    /// The output this value reads, if it reads one.
    pub fn output(&self) -> Option<&Identifier> {
        match self {
            Self::Output(name) => Some(name),
            _ => None,
        }
    }

    /// Whether this is a literal rather than a reference.
    pub fn is_literal(&self) -> bool {
        matches!(
            self,
            Self::String(_) | Self::Integer(_) | Self::Number(_) | Self::Boolean(_)
        )
    }

    /// The literal as text, the way it is typed into a control or compared with one.
    pub fn literal_text(&self) -> Option<String> {
        match self {
            Self::String(text) => Some(text.clone()),
            Self::Integer(number) => Some(number.to_string()),
            Self::Number(number) => Some(number.to_string()),
            Self::Boolean(flag) => Some(flag.to_string()),
            Self::Input(_) | Self::Secret(_) | Self::Output(_) => None,
        }
    }
}

impl fmt::Display for ValueExpr {
    /// A short rendering for diagnostics and descriptions; a secret shows its name only.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::String(text) => write!(formatter, "{text:?}"),
            Self::Integer(number) => write!(formatter, "{number}"),
            Self::Number(number) => write!(formatter, "{number}"),
            Self::Boolean(flag) => write!(formatter, "{flag}"),
            Self::Input(name) => write!(formatter, "{{$input: {name}}}"),
            Self::Secret(name) => write!(formatter, "{{$secret: {name}}}"),
            Self::Output(name) => write!(formatter, "{{$output: {name}}}"),
        }
    }
}

impl From<&str> for ValueExpr {
    fn from(text: &str) -> Self {
        Self::String(text.to_owned())
    }
}

impl Serialize for ValueExpr {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let reference = |serializer: S, key: &str, name: &str| {
            let mut map = serializer.serialize_map(Some(1))?;
            map.serialize_entry(key, name)?;
            map.end()
        };
        match self {
            Self::String(text) => serializer.serialize_str(text),
            Self::Integer(number) => serializer.serialize_i64(*number),
            Self::Number(number) => serializer.serialize_f64(*number),
            Self::Boolean(flag) => serializer.serialize_bool(*flag),
            Self::Input(name) => reference(serializer, "$input", name.as_str()),
            Self::Secret(name) => reference(serializer, "$secret", name.as_str()),
            Self::Output(name) => reference(serializer, "$output", name.as_str()),
        }
    }
}

impl<'de> Deserialize<'de> for ValueExpr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueExprVisitor)
    }
}

struct ValueExprVisitor;

impl<'de> Visitor<'de> for ValueExprVisitor {
    type Value = ValueExpr;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string, number or boolean, or one of {$input: name}, {$secret: name}, {$output: name}")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<ValueExpr, E> {
        Ok(ValueExpr::Boolean(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<ValueExpr, E> {
        Ok(ValueExpr::Integer(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<ValueExpr, E> {
        i64::try_from(value)
            .map(ValueExpr::Integer)
            .map_err(|_| E::custom(format!("integer {value} is out of range")))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<ValueExpr, E> {
        if value.is_finite() {
            Ok(ValueExpr::Number(value))
        } else {
            Err(E::custom("a number must be finite"))
        }
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<ValueExpr, E> {
        Ok(ValueExpr::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<ValueExpr, E> {
        Ok(ValueExpr::String(value))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ValueExpr, A::Error> {
        let Some(key) = map.next_key::<Cow<'de, str>>()? else {
            return Err(de::Error::custom(
                "an empty mapping is not a value; use {$input: name}, {$secret: name} or {$output: name}",
            ));
        };
        let name = map.next_value::<Cow<'de, str>>()?;
        let value = match key.as_ref() {
            "$input" => ValueExpr::Input(Identifier::parse(&name).map_err(de::Error::custom)?),
            "$secret" => ValueExpr::Secret(SecretName::parse(&name).map_err(de::Error::custom)?),
            "$output" => ValueExpr::Output(Identifier::parse(&name).map_err(de::Error::custom)?),
            other => {
                return Err(de::Error::custom(format!(
                    "unknown reference `{other}`; a value mapping is one of {{$input: name}}, \
                     {{$secret: name}}, {{$output: name}}"
                )));
            }
        };
        if let Some(extra) = map.next_key::<Cow<'de, str>>()? {
            return Err(de::Error::custom(format!(
                "unexpected key `{extra}`: a reference has exactly one key"
            )));
        }
        Ok(value)
    }
}

impl JsonSchema for ValueExpr {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("ValueExpr")
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        let reference = |key: &str, pattern: &str| {
            serde_json::json!({
                "type": "object",
                "properties": { key: { "type": "string", "pattern": pattern } },
                "required": [key],
                "additionalProperties": false,
            })
        };
        json_schema!({
            "description": "a literal, or a reference resolved when the step runs",
            "anyOf": [
                { "type": "string" },
                { "type": "integer" },
                { "type": "number" },
                { "type": "boolean" },
                reference("$input", "^[a-z][a-z0-9_]{0,63}$"),
                reference("$secret", "^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$"),
                reference("$output", "^[a-z][a-z0-9_]{0,63}$"),
            ],
        })
    }
}

/// The declared type of an input or output. `money` and `date` travel as strings with a format;
/// `enum` is a string restricted to the input's `enum` list.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ValueType {
    #[default]
    String,
    Integer,
    Number,
    Boolean,
    Money,
    Date,
    Enum,
}

impl ValueType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
            Self::Money => "money",
            Self::Date => "date",
            Self::Enum => "enum",
        }
    }

    /// The JSON Schema an agent sees for a value of this type.
    pub fn json_schema(self) -> serde_json::Value {
        match self {
            Self::String | Self::Enum => serde_json::json!({ "type": "string" }),
            Self::Integer => serde_json::json!({ "type": "integer" }),
            Self::Number => serde_json::json!({ "type": "number" }),
            Self::Boolean => serde_json::json!({ "type": "boolean" }),
            Self::Money => serde_json::json!({ "type": "string", "format": "money" }),
            Self::Date => serde_json::json!({ "type": "string", "format": "date" }),
        }
    }
}
