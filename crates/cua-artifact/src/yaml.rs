//! Strict YAML in and readable YAML out, for every document type.
//!
//! Strict means YAML 1.2 and nothing clever: only `true`/`false` are booleans (`on`, `yes`, `no`
//! stay strings), duplicate keys and YAML 1.1 merge keys (`<<`) are refused, unknown tags are
//! refused, exactly one document per text, and hard budgets on size, nesting and alias
//! expansion so that a hostile text (an alias bomb) is refused in microseconds instead of
//! exhausting memory. Unknown keys are refused by the document types themselves
//! (`deny_unknown_fields` at every depth).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_saphyr::{DuplicateKeyPolicy, Error as SaphyrError, MergeKeyPolicy, MessageFormatter};

use crate::error::{YamlError, YamlErrorKind};
use crate::source_map::{DocPath, SourceLocation, SourceMap};

/// The largest document text accepted, in bytes. A capability is a few kilobytes; anything near
/// this limit is not one.
pub const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

/// The most node events alias expansion may replay in one document. A real artifact replays
/// none or a handful; a billion-laughs text needs billions.
pub const MAX_ALIAS_REPLAYED_EVENTS: usize = 10_000;

/// Parses one document from strict YAML.
pub fn from_yaml<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(YamlError {
            kind: YamlErrorKind::TooLarge,
            message: format!(
                "document is {} bytes, above the {MAX_DOCUMENT_BYTES}-byte limit",
                text.len()
            ),
            location: None,
            path: None,
        });
    }
    // First as plain YAML, so that what is wrong with the text as YAML (syntax, a duplicate
    // key, an alias bomb) is reported as such even where the document type would have stopped
    // earlier at an unknown key. Then as the document type.
    serde_saphyr::from_str_with_options::<serde_json::Value>(text, strict_options())
        .map_err(|error| yaml_error(&error, text))?;
    serde_saphyr::from_str_with_options(text, strict_options())
        .map_err(|error| yaml_error(&error, text))
}

/// Writes a document as block-style YAML.
pub fn to_yaml<T: Serialize>(value: &T) -> Result<String, crate::ArtifactError> {
    serde_saphyr::to_string(value).map_err(crate::ArtifactError::serialize)
}

fn strict_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        strict_booleans: true,
        duplicate_keys: DuplicateKeyPolicy::Error,
        merge_keys: MergeKeyPolicy::Error,
        reject_unsupported_tags: true,
        with_snippet: false,
        budget: serde_saphyr::budget! {
            max_reader_input_bytes: Some(MAX_DOCUMENT_BYTES),
            max_documents: 1,
            max_depth: 48,
            max_events: 200_000,
            max_nodes: 100_000,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_total_scalar_bytes: MAX_DOCUMENT_BYTES,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: MAX_ALIAS_REPLAYED_EVENTS,
            max_replay_stack_depth: 16,
        },
    }
}

/// Turns a parser error into a [`YamlError`] with a stable kind, a message without location
/// noise, and the most precise location the text allows.
fn yaml_error(error: &SaphyrError, text: &str) -> YamlError {
    let inner = innermost(error);
    let kind = match inner {
        SaphyrError::DuplicateMappingKey { .. } => YamlErrorKind::DuplicateKey,
        SaphyrError::SerdeUnknownField { .. } => YamlErrorKind::UnknownKey,
        SaphyrError::SerdeMissingField { .. } => YamlErrorKind::MissingKey,
        SaphyrError::Budget { .. }
        | SaphyrError::AliasReplayCounterOverflow { .. }
        | SaphyrError::AliasReplayLimitExceeded { .. }
        | SaphyrError::AliasExpansionLimitExceeded { .. }
        | SaphyrError::AliasReplayStackDepthExceeded { .. } => YamlErrorKind::Limit,
        SaphyrError::SerdeInvalidType { .. }
        | SaphyrError::SerdeInvalidValue { .. }
        | SaphyrError::SerdeInvalidLength { .. }
        | SaphyrError::SerdeUnknownVariant { .. }
        | SaphyrError::InvalidBooleanStrict { .. }
        | SaphyrError::NullIntoString { .. }
        | SaphyrError::InvalidScalar { .. }
        | SaphyrError::NonFiniteFloat { .. } => YamlErrorKind::InvalidValue,
        // Errors raised through a buffered value (a remedy) arrive as plain messages.
        SaphyrError::Message { msg, .. } if msg.starts_with("unknown field `") => {
            YamlErrorKind::UnknownKey
        }
        SaphyrError::Message { msg, .. } if msg.starts_with("missing field `") => {
            YamlErrorKind::MissingKey
        }
        SaphyrError::Message { .. } => YamlErrorKind::InvalidValue,
        _ => YamlErrorKind::Syntax,
    };
    let mut message = serde_saphyr::UserMessageFormatter
        .format_message(inner)
        .into_owned();
    let several_documents = matches!(inner, SaphyrError::MultipleDocuments { .. })
        || matches!(
            inner,
            SaphyrError::Budget {
                breach: serde_saphyr::budget::BudgetBreach::Documents { .. },
                ..
            }
        );
    if matches!(
        inner,
        SaphyrError::AliasReplayLimitExceeded { .. }
            | SaphyrError::AliasExpansionLimitExceeded { .. }
            | SaphyrError::AliasReplayStackDepthExceeded { .. }
            | SaphyrError::AliasReplayCounterOverflow { .. }
    ) {
        message = format!(
            "alias expansion would replay more than {MAX_ALIAS_REPLAYED_EVENTS} nodes: refused as an alias bomb"
        );
    }
    let kind = if several_documents {
        message = "a document file holds exactly one YAML document".to_owned();
        YamlErrorKind::Syntax
    } else {
        kind
    };
    let location = error.location().map(|location| {
        let span = location.span();
        let offset = match span.byte_offset() {
            Some(offset) => usize::try_from(offset).unwrap_or(0),
            None => byte_offset(text, usize::try_from(span.offset()).unwrap_or(0)),
        };
        let length = span.byte_len().unwrap_or(span.len());
        SourceLocation {
            line: u32::try_from(location.line()).unwrap_or(u32::MAX),
            column: u32::try_from(location.column()).unwrap_or(u32::MAX),
            offset,
            length: usize::try_from(length).unwrap_or(0),
        }
    });
    let (location, path) = match location {
        Some(location) => {
            let (location, path) = refine(kind, inner, location, text);
            (Some(location), path)
        }
        None => (None, None),
    };
    YamlError {
        kind,
        message,
        location,
        path,
    }
}

/// Alias and snippet wrappers carry the original error inside.
fn innermost(error: &SaphyrError) -> &SaphyrError {
    match error.without_snippet() {
        SaphyrError::AliasError { error, .. } => innermost(error),
        other => other,
    }
}

/// Serde buffers internally tagged enums (actions, predicates), so an error inside one is
/// reported at the enum's start. Search that subtree for the key or value the error names, and
/// work out the document path of what was found. A missing key is reported on the mapping that
/// lacks it.
fn refine(
    kind: YamlErrorKind,
    error: &SaphyrError,
    location: SourceLocation,
    text: &str,
) -> (SourceLocation, Option<DocPath>) {
    let map = SourceMap::build(text);
    let Some(origin) = map.at_offset(location.offset) else {
        return (location, None);
    };
    let origin_path: DocPath = origin.path.clone();
    let found = match (kind, error) {
        (YamlErrorKind::UnknownKey, SaphyrError::SerdeUnknownField { field, .. }) => map
            .find_under(&origin_path, |node| {
                node.path
                    .parent()
                    .is_some_and(|parent| parent.key(field) == node.path)
            })
            .and_then(|node| node.key.map(|key| (key, node.path.clone()))),
        (YamlErrorKind::InvalidValue, SaphyrError::SerdeInvalidType { unexpected, .. })
        | (YamlErrorKind::InvalidValue, SaphyrError::SerdeInvalidValue { unexpected, .. })
        | (
            YamlErrorKind::InvalidValue,
            SaphyrError::SerdeUnknownVariant {
                variant: unexpected,
                ..
            },
        ) => {
            let wanted = quoted_value(unexpected)
                .unwrap_or(unexpected.as_str())
                .to_owned();
            map.find_under(&origin_path, |node| {
                node.scalar.as_deref() == Some(wanted.as_str())
            })
            .map(|node| (node.value, node.path.clone()))
        }
        (YamlErrorKind::UnknownKey, SaphyrError::Message { msg, .. }) => {
            backticked(msg).and_then(|field| {
                map.find_under(&origin_path, |node| {
                    node.path
                        .parent()
                        .is_some_and(|parent| parent.key(field) == node.path)
                })
                .and_then(|node| node.key.map(|key| (key, node.path.clone())))
            })
        }
        (YamlErrorKind::InvalidValue, SaphyrError::Message { msg, .. }) => backticked(msg)
            .and_then(|wanted| {
                map.find_under(&origin_path, |node| node.scalar.as_deref() == Some(wanted))
                    .map(|node| (node.value, node.path.clone()))
            }),
        (YamlErrorKind::MissingKey, _) => {
            // The parser stops at the last key it read; the key is missing from its parent.
            let parent = origin_path.parent().unwrap_or_default();
            let location = map
                .get(&parent)
                .map_or(location, |node| node.key.unwrap_or(node.value));
            Some((location, parent))
        }
        _ => None,
    };
    match found {
        Some((location, path)) => (location, Some(path)),
        None => (location, Some(origin_path)),
    }
}

/// `string "x"` → `x`.
fn quoted_value(text: &str) -> Option<&str> {
    let start = text.find('"')?;
    let end = text.rfind('"')?;
    (end > start).then(|| &text[start + 1..end])
}

/// The first `` `x` `` in a message.
fn backticked(text: &str) -> Option<&str> {
    let start = text.find('`')? + 1;
    let end = start + text[start..].find('`')?;
    Some(&text[start..end])
}

/// The parser reports offsets in characters; spans need bytes.
fn byte_offset(text: &str, char_offset: usize) -> usize {
    if text.is_ascii() {
        return char_offset.min(text.len());
    }
    text.char_indices()
        .nth(char_offset)
        .map_or(text.len(), |(byte, _)| byte)
}
