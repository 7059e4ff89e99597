//! The document family and its `schema:` discriminators. Every document names its exact kind
//! and version in its first field, so a file read out of context says what it is.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Declares a single-valued enum that serializes as one exact schema literal.
macro_rules! schema_tag {
    ($(#[$meta:meta])* $name:ident, $literal:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        pub enum $name {
            #[default]
            #[serde(rename = $literal)]
            V1,
        }

        impl $name {
            /// The exact literal on the wire.
            pub const LITERAL: &'static str = $literal;
        }
    };
}

schema_tag!(
    /// `schema: cua.capability/v1`
    CapabilitySchema,
    "cua.capability/v1"
);
schema_tag!(
    /// `schema: cua.tenant_binding/v1`
    TenantBindingSchema,
    "cua.tenant_binding/v1"
);
schema_tag!(
    /// `schema: cua.capability_approval/v1`
    ApprovalSchema,
    "cua.capability_approval/v1"
);
schema_tag!(
    /// `schema: cua.capability_evaluation/v1`
    EvaluationSchema,
    "cua.capability_evaluation/v1"
);
schema_tag!(
    /// `schema: cua.run_record/v1`
    RunRecordSchema,
    "cua.run_record/v1"
);
schema_tag!(
    /// `schema: cua.policy/v1`
    PolicySchema,
    "cua.policy/v1"
);
schema_tag!(
    /// `schema: cua.eval_suite/v1`
    EvalSuiteSchema,
    "cua.eval_suite/v1"
);

/// The kinds of document cua reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DocumentKind {
    Capability,
    TenantBinding,
    Approval,
    Evaluation,
    RunRecord,
    Policy,
    EvalSuite,
}

impl DocumentKind {
    /// Every kind.
    pub const ALL: [DocumentKind; 7] = [
        Self::Capability,
        Self::TenantBinding,
        Self::Approval,
        Self::Evaluation,
        Self::RunRecord,
        Self::Policy,
        Self::EvalSuite,
    ];

    /// The short name used on the command line and for `schemas/<name>.schema.json`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Capability => "capability",
            Self::TenantBinding => "tenant_binding",
            Self::Approval => "approval",
            Self::Evaluation => "evaluation",
            Self::RunRecord => "run_record",
            Self::Policy => "policy",
            Self::EvalSuite => "eval_suite",
        }
    }

    /// The `schema:` literal documents of this kind carry.
    pub fn schema_literal(self) -> &'static str {
        match self {
            Self::Capability => CapabilitySchema::LITERAL,
            Self::TenantBinding => TenantBindingSchema::LITERAL,
            Self::Approval => ApprovalSchema::LITERAL,
            Self::Evaluation => EvaluationSchema::LITERAL,
            Self::RunRecord => RunRecordSchema::LITERAL,
            Self::Policy => PolicySchema::LITERAL,
            Self::EvalSuite => EvalSuiteSchema::LITERAL,
        }
    }

    /// The kind a `schema:` literal names.
    pub fn from_schema_literal(literal: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.schema_literal() == literal)
    }

    /// The kind with this short name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Where a project keeps this kind's JSON Schema, from its root:
    /// `schemas/<name>.schema.json`.
    pub fn schema_path(self) -> String {
        format!("schemas/{}.schema.json", self.name())
    }

    /// The `$id` of this kind's JSON Schema: a URN that names the document version, since
    /// the schema is served from no address of ours (editors find it through the modeline's
    /// relative path).
    pub fn schema_id(self) -> String {
        format!("urn:cua:schema:{}", self.schema_literal())
    }

    /// The JSON Schema of this document kind (draft-07, which yaml-language-server reads), as
    /// pretty JSON with a trailing newline: exactly the text committed under `schemas/`.
    pub fn json_schema_text(self) -> String {
        let generator = schemars::generate::SchemaSettings::draft07().into_generator();
        let schema = match self {
            Self::Capability => generator.into_root_schema_for::<crate::Capability>(),
            Self::TenantBinding => generator.into_root_schema_for::<crate::TenantBinding>(),
            Self::Approval => generator.into_root_schema_for::<crate::CapabilityApproval>(),
            Self::Evaluation => generator.into_root_schema_for::<crate::CapabilityEvaluation>(),
            Self::RunRecord => generator.into_root_schema_for::<crate::RunRecord>(),
            Self::Policy => generator.into_root_schema_for::<crate::PolicyConfig>(),
            Self::EvalSuite => generator.into_root_schema_for::<crate::EvalSuite>(),
        };
        let mut schema = schema;
        if let Some(object) = schema.as_object_mut() {
            object.values_mut().for_each(strict_formats);
        }
        schema.insert("$id".to_owned(), serde_json::Value::from(self.schema_id()));
        let mut text = serde_json::to_string_pretty(&schema)
            .expect("a JSON Schema is plain JSON and always serializes");
        text.push('\n');
        text
    }
}

/// The `format`s JSON Schema draft-07 defines. Any other (the integer widths and `double`
/// schemars writes) is dropped: strict validators such as ajv refuse an unknown format; an
/// integer width becomes the bounds it means.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Drops every non-standard `format` keyword, at any depth, writing an integer width as the
/// `minimum` and `maximum` it means (schemars writes only the minimum of an unsigned one).
fn strict_formats(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(object) => {
            let format = object
                .get("format")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned);
            if let Some(format) =
                format.filter(|format| !STANDARD_FORMATS.contains(&format.as_str()))
            {
                object.remove("format");
                let bounds: Option<(serde_json::Value, serde_json::Value)> = match format.as_str() {
                    "uint8" => Some((0.into(), u8::MAX.into())),
                    "uint16" => Some((0.into(), u16::MAX.into())),
                    "uint32" => Some((0.into(), u32::MAX.into())),
                    "uint64" | "uint" => Some((0.into(), u64::MAX.into())),
                    "int8" => Some((i8::MIN.into(), i8::MAX.into())),
                    "int16" => Some((i16::MIN.into(), i16::MAX.into())),
                    "int32" => Some((i32::MIN.into(), i32::MAX.into())),
                    "int64" | "int" => Some((i64::MIN.into(), i64::MAX.into())),
                    _ => None,
                };
                if let Some((minimum, maximum)) = bounds {
                    object.entry("minimum").or_insert(minimum);
                    object.entry("maximum").or_insert(maximum);
                }
            }
            object.values_mut().for_each(strict_formats);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strict_formats),
        _ => {}
    }
}

impl fmt::Display for DocumentKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every integer width schemars may write becomes its bounds, at any depth, and any other
    /// non-standard format is dropped while a standard one stays.
    #[test]
    fn integer_widths_become_bounds_and_only_standard_formats_stay() {
        let widths = [
            ("uint8", serde_json::json!(0), serde_json::json!(255)),
            ("uint16", serde_json::json!(0), serde_json::json!(65_535)),
            (
                "uint32",
                serde_json::json!(0),
                serde_json::json!(4_294_967_295_u64),
            ),
            ("uint64", serde_json::json!(0), serde_json::json!(u64::MAX)),
            ("uint", serde_json::json!(0), serde_json::json!(u64::MAX)),
            ("int8", serde_json::json!(-128), serde_json::json!(127)),
            (
                "int16",
                serde_json::json!(-32_768),
                serde_json::json!(32_767),
            ),
            (
                "int32",
                serde_json::json!(i32::MIN),
                serde_json::json!(i32::MAX),
            ),
            (
                "int64",
                serde_json::json!(i64::MIN),
                serde_json::json!(i64::MAX),
            ),
            (
                "int",
                serde_json::json!(i64::MIN),
                serde_json::json!(i64::MAX),
            ),
        ];
        for (format, minimum, maximum) in widths {
            let mut schema = serde_json::json!({
                "properties": {"n": {"type": "integer", "format": format}}
            });
            strict_formats(&mut schema);
            assert_eq!(
                schema["properties"]["n"],
                serde_json::json!({"type": "integer", "minimum": minimum, "maximum": maximum}),
                "{format}"
            );
        }
        let mut schema = serde_json::json!({
            "items": [{"format": "double"}, {"format": "date-time"}],
            "properties": {"format": {"type": "string"}}
        });
        strict_formats(&mut schema);
        assert_eq!(
            schema,
            serde_json::json!({
                "items": [{}, {"format": "date-time"}],
                "properties": {"format": {"type": "string"}}
            })
        );
        // A bound already written is kept.
        let mut schema = serde_json::json!({"format": "uint8", "minimum": 1});
        strict_formats(&mut schema);
        assert_eq!(schema, serde_json::json!({"minimum": 1, "maximum": 255}));
    }
}
