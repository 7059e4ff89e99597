//! The files around the test: a spec's and a setup's header, imports, frame declarations,
//! functions and line layout.

use std::collections::BTreeSet;

use cua_artifact::{Action, Capability, NodeScope};
use cua_evidence::DEFAULT_ENV_PREFIX;

use super::helpers::{self, FIXTURES_FILE};
use super::{
    BREAK, Body, GENERATED_MARK, INPUT_ENV_PREFIX, MAX_LINE, SpecWriter, comment_text, css_string,
    ts_string,
};

impl SpecWriter<'_> {
    /// `page`, or the identifier of the scope's frame (declared at the top of the function).
    /// A region is not a locator: callers check it on the elements found.
    pub(super) fn scope_expression(
        &mut self,
        scope: Option<&NodeScope>,
        body: &mut Body,
    ) -> String {
        let Some(frame) = scope.and_then(|scope| scope.frame.as_ref()) else {
            return "page".to_owned();
        };
        body.frames.insert(frame.clone());
        self.frame_ident(frame)
    }

    pub(super) fn frame_ident(&mut self, frame: &str) -> String {
        if let Some(ident) = self.frame_idents.get(frame) {
            return ident.clone();
        }
        let base = format!("frame_{}", identifier(frame));
        let taken: BTreeSet<&String> = self.frame_idents.values().collect();
        let mut ident = base.clone();
        let mut suffix = 2;
        while taken.contains(&ident) {
            ident = format!("{base}_{suffix}");
            suffix += 1;
        }
        self.frame_idents.insert(frame.to_owned(), ident.clone());
        ident
    }

    pub(super) fn frame_declarations(&mut self, body: &Body) -> Vec<String> {
        body.frames
            .iter()
            .map(|frame| {
                let ident = self.frame_ident(frame);
                let selector = format!(
                    "frame[name={}], iframe[name={}]",
                    css_string(frame),
                    css_string(frame)
                );
                format!(
                    "  const {ident} = page.frameLocator({});",
                    ts_string(&selector)
                )
            })
            .collect()
    }

    /// The import lines: `test`, `expect`, `extra` names and the helpers `code` calls, from the
    /// fixtures file; the `Page` type when a function takes one. An unused import would fail a
    /// project that type-checks with `noUnusedLocals`.
    fn imports(&self, extra: &[&str], code: &str) -> Vec<String> {
        let mut names = vec!["test".to_owned(), "expect".to_owned()];
        names.extend(extra.iter().map(|name| (*name).to_owned()));
        let mut helpers: Vec<&str> = helpers::exported()
            .filter(|name| calls(code, name))
            .collect();
        helpers.sort_unstable();
        names.extend(helpers.into_iter().map(str::to_owned));
        let module = format!("'./{}'", FIXTURES_FILE.trim_end_matches(".ts"));
        let flat = format!("import {{ {} }} from {module};", names.join(", "));
        let mut out = if flat.chars().count() <= MAX_LINE {
            vec![flat]
        } else {
            let mut lines = vec!["import {".to_owned()];
            lines.extend(names.iter().map(|name| format!("  {name},")));
            lines.push(format!("}} from {module};"));
            lines
        };
        if !self.functions.is_empty() {
            out.push("import type { Page } from '@playwright/test';".to_owned());
        }
        out
    }

    /// The header every generated file starts with: where it comes from and how to run it.
    fn header(&self, capability: &Capability, what: &str) -> Vec<String> {
        let reference = capability.reference();
        let hash = capability
            .content_hash
            .as_ref()
            .map_or("none (an unsealed draft)", |hash| hash.as_str());
        let tenant = self
            .config
            .tenant
            .as_ref()
            .map_or_else(String::new, |tenant| format!(" for tenant {tenant}"));
        vec![
            format!("{GENERATED_MARK} from {reference}{tenant} at content hash {hash}."),
            "// Do not edit: regenerate it from the capability.".to_owned(),
            "//".to_owned(),
            format!("// {what}: {}", comment_text(&capability.title)),
            "//".to_owned(),
            "// Run: npx playwright test, with use.baseURL set to the application's URL (`cua \
             codegen --config` writes a playwright.config.ts that does)."
                .to_owned(),
            format!(
                "// Inputs come from {INPUT_ENV_PREFIX}<NAME> (default: the artifact's example), \
                 secrets only from {DEFAULT_ENV_PREFIX}<NAME>."
            ),
            "// Targets are role-within-scope locators; CSS hints are never used.".to_owned(),
        ]
    }

    /// The whole spec: header, imports, the test, then the functions it calls.
    pub(super) fn file(&mut self, capability: &Capability, title: &str, body: Body) -> String {
        let mut out = self.header(capability, "Test");
        if !self.not_translated.is_empty() {
            out.push("//".to_owned());
            out.push("// Not translated (replay handles these):".to_owned());
            for line in &self.not_translated {
                out.push(format!("// - {}", comment_text(line)));
            }
        }
        out.push(String::new());
        let mut test = vec![format!(
            "test({}, async ({{ page }}) => {{",
            ts_string(title)
        )];
        test.extend(self.frame_declarations(&body));
        test.extend(body.lines);
        test.push("});".to_owned());
        let mut session = Vec::new();
        if self.config.signed_out {
            session.push(
                "// A sign-on other capabilities recover with: it starts signed out, whatever \
                 session a setup saved."
                    .to_owned(),
            );
            session.push("test.use({ storageState: { cookies: [], origins: [] } });".to_owned());
            session.push(String::new());
        } else if let Some(sign_on) = self.sign_ons.first() {
            session.push(format!(
                "// The session the setup of {sign_on} saved; without one, the recovery signs on."
            ));
            session.push(format!(
                "test.use({{ signOn: {} }});",
                ts_string(&sign_on.to_string())
            ));
            session.push(String::new());
        }
        let code = format!(
            "{}\n{}\n{}",
            session.join("\n"),
            test.join("\n"),
            self.functions.join("\n")
        );
        out.extend(self.imports(&[], &code));
        out.push(String::new());
        out.extend(session);
        out.extend(test);
        self.finish(out)
    }

    /// A setup project's file: it signs on with `remedy` from its entrypoint, once, and saves
    /// the session where the fixtures' `storageState` finds it.
    pub(super) fn setup_file(&mut self, remedy: &Capability, function: &str, goto: &str) -> String {
        let mut out = self.header(remedy, "Setup");
        out.push(
            "// A setup project runs it once; the projects that depend on it start signed on."
                .to_owned(),
        );
        out.push(String::new());
        let test = [
            format!(
                "test({}, async ({{ page }}) => {{",
                ts_string(&format!("sign on: {}", remedy.reference()))
            ),
            format!("  await page.goto({goto});"),
            format!("  await {function}(page);"),
            format!(
                "  await page.context().storageState({{ path: sessionFile({}) }});",
                ts_string(&remedy.reference().to_string())
            ),
            "});".to_owned(),
        ];
        let code = format!("{}\n{}", test.join("\n"), self.functions.join("\n"));
        out.extend(self.imports(&[], &code));
        out.push(String::new());
        out.extend(test);
        self.finish(out)
    }

    /// The functions after the test, and the file's text.
    fn finish(&self, mut out: Vec<String>) -> String {
        for function in &self.functions {
            out.push(String::new());
            out.push(function.clone());
        }
        let mut text: String = out.join("\n").chars().filter(|&c| c != BREAK).collect();
        text.push('\n');
        text
    }
}

/// Whether `code` calls the function `name`: `name(` not preceded by an identifier character,
/// outside comment lines (a step's description may say `input(s)`). Strings are not skipped: a
/// regex literal may hold a quote, and an import too many is better than one missing.
fn calls(code: &str, name: &str) -> bool {
    let code: String = code
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let call = format!("{name}(");
    code.match_indices(&call).any(|(at, _)| {
        !code[..at]
            .chars()
            .next_back()
            .is_some_and(|before| before.is_ascii_alphanumeric() || before == '_' || before == '.')
    })
}

/// One statement at `indent`: on one line when it fits, else one chained call per line.
pub(super) fn layout(indent: usize, text: &str) -> String {
    let pad = "  ".repeat(indent);
    let flat: String = text.chars().filter(|&c| c != BREAK).collect();
    if pad.len() + flat.chars().count() <= MAX_LINE || !text.contains(BREAK) {
        return format!("{pad}{flat}");
    }
    let continuation = format!("\n{pad}  ");
    format!("{pad}{}", text.replace(BREAK, &continuation))
}

/// Whether any step extracts an output (and so writes to `outputs`).
pub(super) fn extracts(capability: &Capability) -> bool {
    capability
        .steps
        .iter()
        .any(|step| matches!(step.action, Action::Extract { .. }))
}

/// A TypeScript identifier fragment: ASCII letters, digits and `_`.
pub(super) fn identifier(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::calls;

    #[test]
    fn a_call_is_a_name_then_a_parenthesis_after_no_identifier_character() {
        assert!(calls("await named(page, x)", "named"));
        assert!(calls("(named(page))", "named"));
        assert!(!calls("await unnamed(page)", "named"));
        assert!(!calls("page.named(x)", "named"));
        assert!(!calls("const named = 1;", "named"));
        assert!(!calls("  // enter: type the input(s)", "input"));
        assert!(calls(
            "await expect(byRole(page, 'x', { name: /it's/u })).toHaveCount(0)",
            "byRole"
        ));
    }
}
