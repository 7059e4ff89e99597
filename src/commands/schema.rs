//! `cua schema <document>`: print the JSON Schema of a document kind. The committed copies under
//! `schemas/` are this output, and a test fails when they go stale.

use cua_artifact::DocumentKind;

use crate::cli::{Format, SchemaArgs, SchemaDocument};
use crate::output::{Exit, emit};

/// Prints the schema: the bare schema in text mode (so it can be redirected into a file), the
/// schema as `data` in JSON mode.
pub(crate) fn run(format: Format, args: &SchemaArgs) -> Exit {
    let kind = match args.document {
        SchemaDocument::Capability => DocumentKind::Capability,
        SchemaDocument::TenantBinding => DocumentKind::TenantBinding,
        SchemaDocument::Approval => DocumentKind::Approval,
        SchemaDocument::Evaluation => DocumentKind::Evaluation,
        SchemaDocument::RunRecord => DocumentKind::RunRecord,
        SchemaDocument::Policy => DocumentKind::Policy,
        SchemaDocument::EvalSuite => DocumentKind::EvalSuite,
    };
    let text = kind.json_schema_text();
    let schema: serde_json::Value =
        serde_json::from_str(&text).expect("a generated JSON Schema is valid JSON");
    emit(format, "schema", Some(&schema), None, || text);
    Exit::Success
}
