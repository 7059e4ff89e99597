//! The `expect`s a condition becomes, and the value expressions inside them: text, money, booleans,
//! bound regexes, URLs and output shapes.

use cua_artifact::{
    Capability, NodeQuery, Predicate, Template, TemplatePart, TemplateRef, ValueExpr, ValueType,
};
use cua_evidence::{DEFAULT_ENV_PREFIX, env_var};

use super::js_regex;
use super::locator::{count, nodes};
use super::{
    BOOLEAN_SHAPE, Body, DATE_SHAPE, INTEGER_SHAPE, MONEY_SHAPE, NUMBER_SHAPE, SpecWriter,
    ValueScope, js_regex_literal, ts_string,
};

impl SpecWriter<'_> {
    /// A regex built from a run's values as a `RegExp` expression: the literal parts translated
    /// as any pattern is, each value escaped at run time (`regexText`), as replay binds it.
    pub(super) fn bound_regex(
        &mut self,
        template: &Template,
        scope: ValueScope,
    ) -> Result<String, String> {
        // Each value stands in the pattern as a private-use character while it is translated;
        // the translation is then cut at those characters.
        let mut pattern = String::new();
        let mut values = Vec::new();
        for part in template.parts() {
            let value = match part {
                // A private-use character of the pattern's own is caught below, as a stand-in
                // too many.
                TemplatePart::Text(literal) => {
                    pattern.push_str(literal);
                    continue;
                }
                TemplatePart::Ref(TemplateRef::Secret(_)) => {
                    return Err("a secret is never compared with the screen".to_owned());
                }
                TemplatePart::Ref(TemplateRef::Input(name)) => ValueExpr::Input(name.clone()),
                TemplatePart::Ref(TemplateRef::Output(name)) => ValueExpr::Output(name.clone()),
            };
            let slot = u32::try_from(values.len())
                .ok()
                .and_then(|n| char::from_u32(PLACEHOLDER_BASE + n))
                .filter(|&c| is_placeholder(c))
                .ok_or_else(|| "the pattern uses too many values".to_owned())?;
            pattern.push(slot);
            values.push((slot, self.value(&value, scope, false)?));
        }
        let found = js_regex::stand_ins(&pattern, is_placeholder)?;
        if found.in_a_class {
            return Err(
                "a value inside a character class has no meaning as literal text".to_owned(),
            );
        }
        // Each value stands exactly once; another private-use character (an escape such as
        // `\x{E000}`) would be taken for one.
        if found.literals != values.len() {
            return Err(
                "the pattern holds a private-use character, which the translation reserves"
                    .to_owned(),
            );
        }
        let mut rest = js_regex::js_regex_source(&pattern)?;
        let mut parts = Vec::new();
        for (slot, value) in values {
            let rendered = js_regex::js_regex_source(&slot.to_string())?;
            let Some((before, after)) = rest.split_once(&rendered) else {
                return Err(format!(
                    "the pattern {pattern:?} has no JavaScript translation that keeps its values \
                     literal"
                ));
            };
            if !before.is_empty() {
                parts.push(ts_string(before));
            }
            parts.push(format!("regexText({value})"));
            rest = after.to_owned();
        }
        if !rest.is_empty() {
            parts.push(ts_string(&rest));
        }
        Ok(format!("new RegExp({}, 'u')", parts.join(" + ")))
    }

    /// A text that may hold a run's values as a TypeScript string expression: the literal
    /// parts and the values concatenated, as replay binds them.
    pub(super) fn text_expression(
        &mut self,
        text: &str,
        scope: ValueScope,
    ) -> Result<String, String> {
        if !text.contains("{$") {
            return Ok(ts_string(text));
        }
        let template =
            Template::parse(text).map_err(|problem| format!("the name {text:?}: {problem}"))?;
        let mut parts = Vec::new();
        for part in template.parts() {
            match part {
                TemplatePart::Text(literal) => parts.push(ts_string(literal)),
                TemplatePart::Ref(TemplateRef::Secret(_)) => {
                    return Err("a secret is never compared with the screen".to_owned());
                }
                TemplatePart::Ref(TemplateRef::Input(name)) => {
                    parts.push(self.value(&ValueExpr::Input(name.clone()), scope, false)?);
                }
                TemplatePart::Ref(TemplateRef::Output(name)) => {
                    parts.push(self.value(&ValueExpr::Output(name.clone()), scope, false)?);
                }
            }
        }
        Ok(parts.join(" + "))
    }

    /// A predicate as `expect` statements; `timeout` bounds each (a step's wait).
    pub(super) fn expect_lines(
        &mut self,
        predicate: &Predicate,
        timeout: Option<u32>,
        scope: ValueScope,
        body: &mut Body,
    ) -> Result<Vec<String>, String> {
        let options = timeout.map_or_else(String::new, |ms| format!("{{ timeout: {ms} }}"));
        let with = |prefix: &str| {
            if options.is_empty() {
                String::new()
            } else {
                format!("{prefix}{options}")
            }
        };
        Ok(match predicate {
            Predicate::NodeExists { query, min_count } => {
                let query = self.query_locator(query, scope, body)?;
                match &query.region {
                    None => {
                        // cua counts only nodes a person can see (a hidden one is not in the
                        // accessibility tree): so does the spec, before it picks one.
                        if *min_count <= 1 {
                            vec![format!(
                                "await expect({}.filter({{ visible: true }})).not.toHaveCount(0{});",
                                query.locator,
                                with(", ")
                            )]
                        } else {
                            vec![format!(
                                "await expect({}.filter({{ visible: true }}).nth({})).toBeVisible({});",
                                query.locator,
                                min_count - 1,
                                with("")
                            )]
                        }
                    }
                    Some(_) => vec![format!(
                        "await expect.poll(async () => (await {}).length{}).toBeGreaterThanOrEqual({min_count});",
                        nodes(&query),
                        with(", ")
                    )],
                }
            }
            Predicate::NodeAbsent { query } => {
                let query = self.query_locator(query, scope, body)?;
                match &query.region {
                    None => vec![format!(
                        "await expect({}).toHaveCount(0{});",
                        query.locator,
                        with(", ")
                    )],
                    Some(_) => vec![format!(
                        "await expect.poll(async () => (await {}).length{}).toBe(0);",
                        nodes(&query),
                        with(", ")
                    )],
                }
            }
            Predicate::NodeHasValue { query, value } => {
                // Any node the query finds holding the value, as replay checks it.
                let query = self.query_locator(query, scope, body)?;
                let value = self.value(value, scope, false)?;
                vec![format!(
                    "await expect.poll(async () => valuesOf(await {}){}).toContain(squash({value}));",
                    nodes(&query),
                    with(", ")
                )]
            }
            Predicate::TextPresent { value } | Predicate::TextAbsent { value } => {
                let value = self.value(value, scope, false)?;
                let not = if matches!(predicate, Predicate::TextAbsent { .. }) {
                    ".not"
                } else {
                    ""
                };
                vec![format!(
                    "await expect.poll(() => pageText(page){}){not}.toContain(squash({value}).toLowerCase());",
                    with(", ")
                )]
            }
            Predicate::MoneyPresent { value, query } => {
                let expression = self.money_expression(value, query, scope, body)?;
                vec![format!(
                    "await expect.poll(() => {expression}{}).toBe(true);",
                    with(", ")
                )]
            }
            Predicate::UrlMatches { pattern } => {
                vec![format!(
                    "await expect(page).toHaveURL({}{});",
                    js_regex_literal(pattern)?,
                    with(", ")
                )]
            }
            Predicate::HttpStatusIn { codes } => {
                return Err(format!(
                    "http_status_in {codes:?} reads the status of the last navigation, which a \
                     Playwright assertion cannot see"
                ));
            }
            Predicate::AllOf { of } => {
                let mut lines = Vec::new();
                for child in of {
                    lines.extend(self.expect_lines(child, timeout, scope, body)?);
                }
                lines
            }
            Predicate::AnyOf { .. } | Predicate::Not { .. } => {
                let expression = self.bool_expression(predicate, scope, body)?;
                vec![format!(
                    "await expect.poll(async () => {expression}{}).toBe(true);",
                    with(", ")
                )]
            }
        })
    }

    /// `money_present` as a promise of a boolean.
    pub(super) fn money_expression(
        &mut self,
        value: &ValueExpr,
        query: &NodeQuery,
        scope: ValueScope,
        body: &mut Body,
    ) -> Result<String, String> {
        let query = self.query_locator(query, scope, body)?;
        if let Some(region) = &query.region {
            return Err(format!(
                "money_present in the region `{region}`: the spec's money reading takes a \
                 locator, and a region is checked on elements"
            ));
        }
        let value = self.value(value, scope, false)?;
        Ok(format!("moneyIn({}, {value})", query.locator))
    }

    /// A predicate as a boolean expression read once (for `any_of`, `not` and detectors).
    pub(super) fn bool_expression(
        &mut self,
        predicate: &Predicate,
        scope: ValueScope,
        body: &mut Body,
    ) -> Result<String, String> {
        Ok(match predicate {
            Predicate::NodeExists { query, min_count } => {
                let query = self.query_locator(query, scope, body)?;
                format!("{} >= {min_count}", count(&query))
            }
            Predicate::NodeAbsent { query } => {
                let query = self.query_locator(query, scope, body)?;
                format!("{} === 0", count(&query))
            }
            Predicate::NodeHasValue { query, value } => {
                let query = self.query_locator(query, scope, body)?;
                let value = self.value(value, scope, false)?;
                format!(
                    "(await valuesOf(await {})).includes(squash({value}))",
                    nodes(&query)
                )
            }
            Predicate::TextPresent { value } | Predicate::TextAbsent { value } => {
                let value = self.value(value, scope, false)?;
                let not = if matches!(predicate, Predicate::TextAbsent { .. }) {
                    "!"
                } else {
                    ""
                };
                format!("{not}(await pageText(page)).includes(squash({value}).toLowerCase())")
            }
            Predicate::MoneyPresent { value, query } => {
                format!(
                    "(await {})",
                    self.money_expression(value, query, scope, body)?
                )
            }
            Predicate::UrlMatches { pattern } => {
                format!("{}.test(page.url())", js_regex_literal(pattern)?)
            }
            Predicate::HttpStatusIn { codes } => {
                return Err(format!(
                    "http_status_in {codes:?} reads the status of the last navigation, which a \
                     Playwright test cannot see"
                ));
            }
            Predicate::AllOf { of } | Predicate::AnyOf { of } => {
                let joiner = if matches!(predicate, Predicate::AllOf { .. }) {
                    " && "
                } else {
                    " || "
                };
                if of.is_empty() {
                    return Ok(if joiner == " && " { "true" } else { "false" }.to_owned());
                }
                let mut parts = Vec::new();
                for child in of {
                    parts.push(self.bool_expression(child, scope, body)?);
                }
                format!("({})", parts.join(joiner))
            }
            Predicate::Not { of } => format!("!({})", self.bool_expression(of, scope, body)?),
        })
    }

    /// A value as a TypeScript expression. Secrets only where `secrets` (typed into a control).
    pub(super) fn value(
        &mut self,
        value: &ValueExpr,
        scope: ValueScope,
        secrets: bool,
    ) -> Result<String, String> {
        match value {
            ValueExpr::Input(name) => match scope {
                ValueScope::Test => Ok(format!("INPUTS.{name}")),
                ValueScope::Remedy => Err(format!(
                    "the value reads input `{name}`, which a remedy capability is not given"
                )),
            },
            ValueExpr::Output(name) => Ok(format!("outputs.{name}")),
            ValueExpr::Secret(name) if secrets => Ok(format!(
                "secret({})",
                ts_string(&env_var(DEFAULT_ENV_PREFIX, name.as_str()))
            )),
            ValueExpr::Secret(name) => Err(format!(
                "secret `{name}` would be compared with screen text; secrets are only typed"
            )),
            literal => Ok(ts_string(&literal.literal_text().unwrap_or_default())),
        }
    }

    /// A URL, relative to the project's `baseURL` when it starts with `{base_url}`; a
    /// `{base_url}` anywhere else, and any other placeholder, refuses.
    pub(super) fn url_expression(
        &mut self,
        url: &str,
        scope: ValueScope,
    ) -> Result<String, String> {
        let template =
            Template::parse(url).map_err(|problem| format!("the URL {url:?}: {problem}"))?;
        let mut parts = Vec::new();
        let count = template.parts().len();
        for (index, part) in template.parts().iter().enumerate() {
            let last = index + 1 == count;
            match part {
                TemplatePart::Text(text) => {
                    for (position, piece) in text.split("{base_url}").enumerate() {
                        if let Some(placeholder) = cua_artifact::tenant_placeholder(piece) {
                            return Err(format!(
                                "the URL {url:?} holds the placeholder {{{placeholder}}}, unbound here"
                            ));
                        }
                        if position == 0 {
                            if !piece.is_empty() {
                                parts.push(ts_string(piece));
                            }
                            continue;
                        }
                        // Relative to the project's baseURL, which the fixtures end with `/`.
                        if position > 1 || !parts.is_empty() {
                            return Err(format!(
                                "the URL {url:?} holds {{base_url}} after its start, where a \
                                 Playwright baseURL cannot stand"
                            ));
                        }
                        // `{base_url}:8080/x` or `{base_url}x` would change the host or the
                        // last segment, which a relative URL cannot say.
                        // Nothing after it but a value (`{base_url}{$input: x}`) is the same.
                        if !((piece.is_empty() && last) || piece.starts_with(['/', '?', '#'])) {
                            return Err(format!(
                                "the URL {url:?} continues {{base_url}} with {piece:?}, not a \
                                 path, query or fragment"
                            ));
                        }
                        parts.push(ts_string(&format!("./{}", piece.trim_start_matches('/'))));
                    }
                }
                TemplatePart::Ref(TemplateRef::Secret(_)) => {
                    return Err("a secret is never placed in a URL".to_owned());
                }
                TemplatePart::Ref(reference) => {
                    let value = match reference {
                        TemplateRef::Input(name) => ValueExpr::Input(name.clone()),
                        TemplateRef::Output(name) => ValueExpr::Output(name.clone()),
                        TemplateRef::Secret(name) => ValueExpr::Secret(name.clone()),
                    };
                    // As replay binds it: percent-encoded, so it fills one segment or value.
                    parts.push(format!("urlValue({})", self.value(&value, scope, false)?));
                }
            }
        }
        if parts.is_empty() {
            return Err("the URL is empty".to_owned());
        }
        Ok(parts.join(" + "))
    }

    /// The outputs' shape assertions, and their values as test annotations.
    pub(super) fn output_shapes(&mut self, capability: &Capability, body: &mut Body) {
        if capability.outputs.is_empty() {
            return;
        }
        body.blank();
        body.line(
            1,
            "// Outputs, asserted by shape: their values are the application's data.",
        );
        for output in &capability.outputs {
            let name = &output.name;
            let message = ts_string(&format!("{name} ({})", output.value_type.as_str()));
            let assertion = match output.value_type {
                ValueType::Money => format!("toMatch({MONEY_SHAPE})"),
                ValueType::Date => format!("toMatch({DATE_SHAPE})"),
                ValueType::Integer => format!("toMatch({INTEGER_SHAPE})"),
                ValueType::Number => format!("toMatch({NUMBER_SHAPE})"),
                ValueType::Boolean => format!("toMatch({BOOLEAN_SHAPE})"),
                ValueType::String | ValueType::Enum => "toMatch(/\\S/)".to_owned(),
            };
            body.line(1, format!("expect(outputs.{name}, {message}).{assertion};"));
        }
        for output in capability.outputs.iter().filter(|output| !output.sensitive) {
            body.line(
                1,
                format!(
                    "test.info().annotations.push({{ type: 'output', description: {} + outputs.{} }});",
                    ts_string(&format!("{}=", output.name)),
                    output.name
                ),
            );
        }
    }
}

/// The first of the private-use characters values stand in as while a bound regex is translated.
pub(super) const PLACEHOLDER_BASE: u32 = 0xE000;

/// Whether `c` is one of the placeholders of [`SpecWriter::bound_regex`].
pub(super) fn is_placeholder(c: char) -> bool {
    (PLACEHOLDER_BASE..=0xF8FF).contains(&u32::from(c))
}
