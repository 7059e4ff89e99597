//! String templates for operator steps: literal text with `{$input: name}`, `{$output: name}`
//! and `{$secret: name}` references, bound at the dispatch (an `http` step's URL and headers).
//! Tenant vars such as `{base_url}` are substituted earlier, by the binding, and are plain text
//! here.

use crate::identifiers::{Identifier, SecretName};

/// The first tenant placeholder (`{base_url}`, `{name}`) left in a text: a `{` followed by a
/// lowercase identifier and `}`. References (`{$input: …}`) are not placeholders.
pub fn tenant_placeholder(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        if let Some(end) = after.find('}') {
            let name = &after[..end];
            let identifier = name
                .chars()
                .next()
                .is_some_and(|first| first.is_ascii_lowercase() || first == '_')
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if identifier {
                return Some(name);
            }
        }
        rest = after;
    }
    None
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<TemplatePart>,
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplatePart {
    Text(String),
    Ref(TemplateRef),
}

/// A reference inside a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateRef {
    Input(Identifier),
    Output(Identifier),
    Secret(SecretName),
}

impl Template {
    /// Parses `text`; the error names the first malformed reference.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("{$") {
            if start > 0 {
                parts.push(TemplatePart::Text(rest[..start].to_owned()));
            }
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| format!("`{}` is not closed with `}}`", &rest[start..]))?;
            let inner = &after[..end];
            let (kind, name) = inner.split_once(':').ok_or_else(|| {
                format!("`{{${inner}}}` must read `{{$input: name}}`, `{{$output: name}}` or `{{$secret: name}}`")
            })?;
            let name = name.trim();
            let reference = match kind.trim() {
                "input" => {
                    TemplateRef::Input(Identifier::parse(name).map_err(|error| error.to_string())?)
                }
                "output" => {
                    TemplateRef::Output(Identifier::parse(name).map_err(|error| error.to_string())?)
                }
                "secret" => {
                    TemplateRef::Secret(SecretName::parse(name).map_err(|error| error.to_string())?)
                }
                other => {
                    return Err(format!(
                        "`{{${other}: …}}` is not a reference; use $input, $output or $secret"
                    ));
                }
            };
            parts.push(TemplatePart::Ref(reference));
            rest = &after[end + 1..];
        }
        if !rest.is_empty() {
            parts.push(TemplatePart::Text(rest.to_owned()));
        }
        Ok(Template { parts })
    }

    /// The pieces, in order.
    pub fn parts(&self) -> &[TemplatePart] {
        &self.parts
    }

    /// The references, in order.
    pub fn references(&self) -> impl Iterator<Item = &TemplateRef> {
        self.parts.iter().filter_map(|part| match part {
            TemplatePart::Ref(reference) => Some(reference),
            TemplatePart::Text(_) => None,
        })
    }

    /// The literal text before the first reference: for a URL, what fixes its origin.
    pub fn literal_prefix(&self) -> &str {
        match self.parts.first() {
            Some(TemplatePart::Text(text)) => text,
            _ => "",
        }
    }
}

/// Why `pointer` is not a JSON pointer (RFC 6901), or `None` when it is one.
pub fn json_pointer_problem(pointer: &str) -> Option<String> {
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Some(format!("JSON pointer {pointer:?} must start with `/`"));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Some(format!(
                "JSON pointer {pointer:?} has a `~` not followed by 0 or 1"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_placeholders_are_found_and_references_are_not() {
        assert_eq!(tenant_placeholder("{base_url}/"), Some("base_url"));
        assert_eq!(tenant_placeholder("http://127.0.0.1:8811/"), None);
        assert_eq!(
            tenant_placeholder("{base_url}/w/{$input: page}"),
            Some("base_url")
        );
        assert_eq!(
            tenant_placeholder("http://h/w/{$input: page}?q={x-y}"),
            None
        );
        assert_eq!(
            tenant_placeholder("http://h/{$input: page}/{tenant_path}"),
            Some("tenant_path")
        );
    }

    fn check(text: &str, expect: &str) {
        let actual = match Template::parse(text) {
            Ok(template) => template
                .parts()
                .iter()
                .map(|part| match part {
                    TemplatePart::Text(text) => format!("text {text:?}"),
                    TemplatePart::Ref(TemplateRef::Input(name)) => format!("input {name}"),
                    TemplatePart::Ref(TemplateRef::Output(name)) => format!("output {name}"),
                    TemplatePart::Ref(TemplateRef::Secret(name)) => format!("secret {name}"),
                })
                .collect::<Vec<_>>()
                .join(" | "),
            Err(error) => format!("error: {error}"),
        };
        assert_eq!(actual, expect, "{text}");
    }

    #[test]
    fn parses_references_between_text() {
        check("", "");
        check("plain", r#"text "plain""#);
        check(
            "{base_url}/api/members/{$input: member_id}",
            r#"text "{base_url}/api/members/" | input member_id"#,
        );
        check(
            "Bearer {$secret:md.api_token}",
            r#"text "Bearer " | secret md.api_token"#,
        );
        check(
            "{$output: a}-{$input: b}",
            r#"output a | text "-" | input b"#,
        );
        check("{$input: a", "error: `{$input: a` is not closed with `}`");
        check(
            "{$nope: a}",
            "error: `{$nope: …}` is not a reference; use $input, $output or $secret",
        );
        check(
            "{$input}",
            "error: `{$input}` must read `{$input: name}`, `{$output: name}` or `{$secret: name}`",
        );
    }

    #[test]
    fn checks_json_pointers() {
        assert_eq!(json_pointer_problem(""), None);
        assert_eq!(json_pointer_problem("/accounts/0/balance"), None);
        assert_eq!(json_pointer_problem("/a~1b~0c"), None);
        assert!(json_pointer_problem("accounts").is_some());
        assert!(json_pointer_problem("/a~2").is_some());
    }
}
