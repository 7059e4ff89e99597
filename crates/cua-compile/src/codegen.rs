//! Codegen: a capability as a runnable Playwright Test file (TypeScript).
//!
//! [`render_playwright`] writes one `test()` that does what replay does, in Playwright's terms:
//!
//! - **Targets** become role-within-scope locators that resolve as replay does: the frame of
//!   `scope.frame` through `page.frameLocator('frame[name="…"]')`, then `getByRole(role, { name })`
//!   (`byRole` for cua's aliased roles, `getByText` for a run of text, a textbox of its input
//!   type for a date field). Names match by cua's rules (`exactName`, `folded`, a part, a
//!   regex; a run's values escaped into a regex at run time). A name and an anchor narrow each
//!   other; `row_of` is the innermost row holding the anchor, `adjacent_to` the first sibling
//!   after it that holds a candidate (`adjacentTo`, also for `beside_label`), `labelled_by`
//!   `getByLabel`. An `identity` check keys the target: the one record (row, list item,
//!   article, definition) whose key holds the key (a key two records hold fails the test, as
//!   replay refuses it), and an `ordinal` is `.nth(i)` inside that record, counted in its
//!   region. CSS hints are never written: they are an unverified cache of replay's, and a test that
//!   followed one would pass on a control that only looks right. A region is checked on each
//!   candidate element (`inRegionAll`: its innermost landmark, then the last heading inside it),
//!   as cua's snapshot infers it.
//! - **Preconditions, postconditions, waits, assertions and the checkpoint** become `expect`s
//!   (`toBeVisible`, `toHaveCount(0)`, polled values and page text, `toHaveURL`); a step's
//!   wait timeout bounds its postcondition. Playwright's strict mode refuses a locator that
//!   matches several elements, as replay refuses an ambiguous target.
//! - **Outputs** are asserted by shape (money, date, number, non-empty text), never by value:
//!   values belong to the application's data.
//! - **Inputs** come from `CUA_INPUT_<NAME>` (default: the artifact's example, checked against
//!   the input's pattern); **secrets** only from `CUA_SECRET_<NAME>`; the application's URL from
//!   `CUA_BASE_URL`.
//! - A **recovery rule** whose detector and remedies translate (a sign-on capability run on
//!   the sign-on screen) is checked once, right after the entrypoint; the others and the
//!   outcomes are listed in the header as not translated.
//!
//! Every interpolated text goes through an escaper ([`ts_string`], [`comment_text`],
//! [`css_string`], [`js_regex_literal`]). What cannot be expressed faithfully (a `raw_input`,
//! a `within_section` anchor, an `http_status_in` check, money read in a region, a value inside
//! a regex character class, a regex the JavaScript engine reads differently, an irreversible
//! step without
//! [`CodegenConfig::allow_irreversible`]) is refused, every refusal at once, naming the step
//! and why ([`CompileError::Unexpressible`]).

mod escape;
mod expect;
mod file;
mod helpers;
mod js_regex;
mod locator;
mod recovery;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use cua_artifact::{
    Action, ActionKind, Capability, CapabilityRef, RiskTier, ScrollDirection, Step, TenantId,
    ValueExpr, WaitCondition,
};
use cua_evidence::env_var;

use crate::error::CompileError;
use file::{extracts, layout};
use helpers::Helper;

pub use escape::{comment_text, css_string, ts_string};
pub use js_regex::js_regex_literal;

/// The prefix of the environment variables inputs are read from: `CUA_INPUT_MEMBER_ID`.
pub const INPUT_ENV_PREFIX: &str = "CUA_INPUT_";

/// The environment variable holding the application's URL.
pub const BASE_URL_ENV: &str = "CUA_BASE_URL";

/// How a spec is generated. Passed explicitly.
#[derive(Debug, Clone, Default)]
pub struct CodegenConfig {
    /// The tenant whose binding was applied, named in the header.
    pub tenant: Option<TenantId>,
    /// Whether irreversible steps may be written. Off by default: the test would perform the
    /// step on every run, outside the approval gate replay enforces.
    pub allow_irreversible: bool,
    /// The capabilities recovery remedies run (`run_capability`), by reference.
    pub remedies: BTreeMap<CapabilityRef, Capability>,
}

/// A generated spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedSpec {
    /// The TypeScript file.
    pub text: String,
    /// How many of the capability's steps it performs.
    pub steps: usize,
    /// What the header lists as not translated, one line each.
    pub not_translated: Vec<String>,
}

/// One part of a capability that has no Playwright equivalent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Where: ``step `read_balance` (target)``, `checkpoint`, ``input `member_id` ``.
    pub place: String,
    /// Why, in one sentence.
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.place, self.reason)
    }
}

/// Writes `capability` as a Playwright Test file, or refuses with every part that cannot be
/// expressed.
pub fn render_playwright(
    capability: &Capability,
    config: &CodegenConfig,
) -> Result<GeneratedSpec, CompileError> {
    let mut writer = SpecWriter::new(config);
    let spec = writer.spec(capability);
    if writer.refusals.is_empty() {
        Ok(spec)
    } else {
        Err(CompileError::Unexpressible {
            capability: capability.reference().to_string(),
            refusals: writer.refusals,
        })
    }
}

/// Why a step of `kind` has no faithful Playwright translation, or `None` when it has one.
/// Exhaustive, so a new kind is decided here before it compiles.
pub fn refusal(kind: ActionKind) -> Option<String> {
    match kind {
        ActionKind::Click
        | ActionKind::Type
        | ActionKind::Select
        | ActionKind::PressKey
        | ActionKind::Navigate
        | ActionKind::Reload
        | ActionKind::Scroll
        | ActionKind::WaitFor
        | ActionKind::Extract
        | ActionKind::Assert => None,
        ActionKind::RawInput => Some(
            "raw_input is an operator's pointer or key gesture at coordinates; it has no \
             semantic target a test could find again"
                .to_owned(),
        ),
        ActionKind::Http | ActionKind::Command => Some(format!(
            "a `{}` step runs through its own operator, not the browser; a Playwright page test \
             cannot express it faithfully",
            kind.as_str()
        )),
        ActionKind::Screenshot | ActionKind::ClickAt => Some(format!(
            "a `{}` step acts by pixels under a single-use, 30-second observation ref bound to \
             its page and run; a Playwright test would click the coordinates with none of those \
             checks",
            kind.as_str()
        )),
    }
}

/// The roles Playwright's `getByRole` knows, minus the ones cua uses for structure only
/// (`document`, `generic`, `none`, `presentation`), which no test should target.
const PLAYWRIGHT_ROLES: &[&str] = &[
    "alert",
    "alertdialog",
    "application",
    "article",
    "banner",
    "blockquote",
    "button",
    "caption",
    "cell",
    "checkbox",
    "code",
    "columnheader",
    "combobox",
    "complementary",
    "contentinfo",
    "definition",
    "deletion",
    "dialog",
    "directory",
    "emphasis",
    "feed",
    "figure",
    "form",
    "grid",
    "gridcell",
    "group",
    "heading",
    "img",
    "insertion",
    "link",
    "list",
    "listbox",
    "listitem",
    "log",
    "main",
    "marquee",
    "math",
    "meter",
    "menu",
    "menubar",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "navigation",
    "note",
    "option",
    "paragraph",
    "progressbar",
    "radio",
    "radiogroup",
    "region",
    "row",
    "rowgroup",
    "rowheader",
    "scrollbar",
    "search",
    "searchbox",
    "separator",
    "slider",
    "spinbutton",
    "status",
    "strong",
    "subscript",
    "superscript",
    "switch",
    "tab",
    "table",
    "tablist",
    "tabpanel",
    "term",
    "textbox",
    "time",
    "timer",
    "toolbar",
    "tooltip",
    "tree",
    "treegrid",
    "treeitem",
];

/// Marks a place in a locator chain where a long statement breaks onto the next line. Artifact
/// text can never hold it: every escaper writes control characters as escapes.
const BREAK: char = '\u{1}';

/// Statements longer than this are laid out one chained call per line.
const MAX_LINE: usize = 100;

/// Roles whose extracted text is the control's value rather than its text.
const VALUE_ROLES: [&str; 5] = ["textbox", "searchbox", "combobox", "spinbutton", "slider"];

/// The shape regexes outputs are asserted with (JavaScript literals).
const MONEY_SHAPE: &str = r"/^-?\$[0-9,]+\.[0-9]{2}$/";

const DATE_SHAPE: &str = r"/^(?:[0-9]{2}\/[0-9]{2}\/[0-9]{4}|[0-9]{4}-[0-9]{2}-[0-9]{2})$/";

const INTEGER_SHAPE: &str = r"/^-?[0-9][0-9,]*$/";

const NUMBER_SHAPE: &str = r"/^-?[0-9][0-9,]*(?:\.[0-9]+)?$/";

const BOOLEAN_SHAPE: &str = r"/^(?:true|false|yes|no)$/i";

/// The body of one generated function: its lines, and the frames it looks into.
#[derive(Debug, Default)]
struct Body {
    lines: Vec<String>,
    frames: BTreeSet<String>,
}

impl Body {
    fn line(&mut self, indent: usize, text: impl AsRef<str>) {
        self.lines.push(layout(indent, text.as_ref()));
    }

    fn blank(&mut self) {
        self.lines.push(String::new());
    }
}

/// What a translated node query is: its locator, and the region (as cua's snapshot infers it)
/// its nodes must be in, which no locator can say.
struct QueryCode {
    locator: String,
    region: Option<String>,
}

/// What a translated target is: the statements that build it, and its locator.
struct TargetCode {
    lines: Vec<String>,
    locator: String,
}

/// How a name is matched: the `name` of `getByRole`, and the same match for element text.
struct NameSpec {
    /// `exactName(…)`, `folded(…)`, a string (a case-insensitive part), or a `RegExp`.
    value: String,
}

impl NameSpec {
    /// `, { name: … }` for `getByRole`.
    fn option(&self) -> String {
        format!(", {{ name: {} }}", self.value)
    }
}

/// Where the values of a function come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueScope {
    /// The test itself: `INPUTS` and `outputs` exist.
    Test,
    /// A remedy capability without inputs: only literals, secrets and its own outputs.
    Remedy,
}

struct SpecWriter<'c> {
    config: &'c CodegenConfig,
    helpers: BTreeSet<Helper>,
    refusals: Vec<Refusal>,
    not_translated: Vec<String>,
    /// Frame name → the identifier of its `FrameLocator`.
    frame_idents: BTreeMap<String, String>,
    /// Functions written for recovery rules and remedy capabilities, in order.
    functions: Vec<String>,
    /// Remedy capabilities already written, by reference.
    remedy_functions: BTreeMap<CapabilityRef, String>,
}

impl<'c> SpecWriter<'c> {
    fn new(config: &'c CodegenConfig) -> Self {
        Self {
            config,
            helpers: BTreeSet::new(),
            refusals: Vec::new(),
            not_translated: Vec::new(),
            frame_idents: BTreeMap::new(),
            functions: Vec::new(),
            remedy_functions: BTreeMap::new(),
        }
    }

    fn refuse(&mut self, place: impl Into<String>, reason: impl Into<String>) {
        self.refusals.push(Refusal {
            place: place.into(),
            reason: reason.into(),
        });
    }

    fn spec(&mut self, capability: &Capability) -> GeneratedSpec {
        let reference = capability.reference();
        let mut body = Body::default();

        let inputs = self.inputs(capability);
        if !inputs.is_empty() {
            self.use_helper(Helper::Input);
            body.line(1, "const INPUTS = {");
            for line in inputs {
                body.line(2, line);
            }
            body.line(1, "};");
        }
        if extracts(capability) {
            body.line(1, "const outputs: Record<string, string> = {};");
        }
        body.blank();

        match self.url_expression(&capability.entrypoint.url, ValueScope::Test) {
            Ok(url) => body.line(1, format!("await page.goto({url});")),
            Err(reason) => self.refuse("entrypoint", reason),
        }
        let recoveries = self.recoveries(capability);
        for function in &recoveries {
            body.line(1, format!("await {function}(page);"));
        }

        for step in &capability.steps {
            body.blank();
            self.step(&mut body, step, ValueScope::Test, None);
        }

        body.blank();
        body.line(1, "// The checkpoint: what success looks like.");
        match self.expect_lines(&capability.checkpoint, None, ValueScope::Test, &mut body) {
            Ok(lines) => {
                for line in lines {
                    body.line(1, line);
                }
            }
            Err(reason) => self.refuse("checkpoint", reason),
        }
        self.output_shapes(capability, &mut body);

        for outcome in &capability.outcomes {
            self.not_translated.push(format!(
                "outcome {}: a business answer replay reports; this test runs the example inputs and expects success",
                outcome.code
            ));
        }

        let title = match &self.config.tenant {
            Some(tenant) => format!("{reference} for {tenant}"),
            None => reference.to_string(),
        };
        let text = self.file(capability, &title, body);
        GeneratedSpec {
            text,
            steps: capability.steps.len(),
            not_translated: self.not_translated.clone(),
        }
    }

    /// The `INPUTS` entries: `name: input('CUA_INPUT_NAME', example, /pattern/u, [allowed])`.
    fn inputs(&mut self, capability: &Capability) -> Vec<String> {
        let mut lines = Vec::new();
        for input in &capability.inputs {
            let variable = env_var(INPUT_ENV_PREFIX, input.name.as_str());
            // A sensitive input's example is not baked into a file that gets shared.
            let example = if input.sensitive {
                None
            } else {
                input
                    .example
                    .as_ref()
                    .or(input.default.as_ref())
                    .and_then(ValueExpr::literal_text)
            };
            let mut arguments = vec![
                ts_string(&variable),
                example.map_or_else(|| "undefined".to_owned(), |example| ts_string(&example)),
            ];
            match input
                .anchored_pattern()
                .map(|pattern| js_regex_literal(&pattern))
            {
                Some(Ok(literal)) => arguments.push(literal),
                Some(Err(reason)) => {
                    self.refuse(format!("input `{}` (pattern)", input.name), reason);
                }
                None => arguments.push("undefined".to_owned()),
            }
            if !input.allowed.is_empty() {
                let allowed: Vec<String> = input.allowed.iter().map(|v| ts_string(v)).collect();
                arguments.push(format!("[{}]", allowed.join(", ")));
            }
            while arguments
                .last()
                .is_some_and(|argument| argument == "undefined")
            {
                arguments.pop();
            }
            lines.push(format!("{}: input({}),", input.name, arguments.join(", ")));
        }
        lines
    }

    /// One step as a `test.step`: precondition, identity check, action, wait, postcondition.
    fn step(
        &mut self,
        body: &mut Body,
        step: &Step,
        scope: ValueScope,
        within: Option<&CapabilityRef>,
    ) {
        let place = |part: &str| match within {
            Some(reference) => format!("{reference}: step `{}` ({part})", step.id),
            None => format!("step `{}` ({part})", step.id),
        };
        let mut lines: Vec<String> = Vec::new();
        let mut failed = false;

        if step.risk == RiskTier::Irreversible && !self.config.allow_irreversible {
            self.refuse(
                place("risk"),
                "it is irreversible: a generated test would perform it on every run, outside the \
                 approval gate replay enforces (pass --allow-irreversible to generate it anyway)",
            );
            failed = true;
        }
        if let Some(precondition) = &step.precondition {
            match self.expect_lines(precondition, None, scope, body) {
                Ok(found) => lines.extend(found),
                Err(reason) => {
                    self.refuse(place("precondition"), reason);
                    failed = true;
                }
            }
        }
        match self.action(&step.action, scope, body) {
            Ok(found) => lines.extend(found),
            Err(reason) => {
                self.refuse(place("action"), reason);
                failed = true;
            }
        }
        let timeout = Some(step.wait.timeout_ms);
        if step.wait.condition == WaitCondition::Predicate
            && let Some(until) = &step.wait.until
        {
            match self.expect_lines(until, timeout, scope, body) {
                Ok(found) => lines.extend(found),
                Err(reason) => {
                    self.refuse(place("wait"), reason);
                    failed = true;
                }
            }
        }
        if let Some(postcondition) = &step.postcondition {
            match self.expect_lines(postcondition, timeout, scope, body) {
                Ok(found) => lines.extend(found),
                Err(reason) => {
                    self.refuse(place("postcondition"), reason);
                    failed = true;
                }
            }
        }
        if failed {
            return;
        }
        let mut comment = format!("// {}", step.id);
        if step.risk != RiskTier::Safe {
            comment.push_str(&format!(" ({})", step.risk.as_str()));
        }
        if !step.description.is_empty() {
            comment.push_str(&format!(": {}", comment_text(&step.description)));
        }
        body.line(1, comment);
        let title = match within {
            Some(reference) => format!("{reference} {}", step.id),
            None => step.id.to_string(),
        };
        body.line(
            1,
            format!("await test.step({}, async () => {{", ts_string(&title)),
        );
        for line in lines {
            body.line(2, line);
        }
        body.line(1, "});");
    }

    /// The statements of an action (with its target's identity check first).
    fn action(
        &mut self,
        action: &Action,
        scope: ValueScope,
        body: &mut Body,
    ) -> Result<Vec<String>, String> {
        let mut lines = Vec::new();
        match action {
            Action::Click {
                target,
                accept_confirm,
            } => {
                self.target_statements(target, scope, body, &mut lines)?;
                // Playwright dismisses dialogs nobody listens for. This click must raise one
                // confirm() with exactly the declared message, answered OK, as replay requires;
                // no dialog, or another one, fails the test.
                if let Some(message) = accept_confirm {
                    self.use_helper(Helper::Squash);
                    lines.push(
                        "const dialog = page.waitForEvent('dialog', { timeout: 10000 });"
                            .to_owned(),
                    );
                    self.use_helper(Helper::Click);
                    lines.push("const clicked = click(target);".to_owned());
                    lines.push("const confirm = await dialog;".to_owned());
                    lines.push("expect(confirm.type()).toBe('confirm');".to_owned());
                    lines.push(format!(
                        "expect(squash(confirm.message())).toBe({});",
                        ts_string(&cua_snapshot::squash_whitespace(message))
                    ));
                    lines.push("await confirm.accept();".to_owned());
                    lines.push("await clicked;".to_owned());
                } else {
                    self.use_helper(Helper::Click);
                    lines.push("await click(target);".to_owned());
                }
            }
            Action::Type {
                target,
                value,
                clear_first,
            } => {
                let value = self.value(value, scope, true)?;
                self.target_statements(target, scope, body, &mut lines)?;
                if *clear_first {
                    lines.push(format!("await target.fill({value});"));
                } else {
                    lines.push("await target.press('End');".to_owned());
                    lines.push(format!("await target.pressSequentially({value});"));
                }
            }
            Action::Select { target, value } => {
                let value = self.value(value, scope, true)?;
                self.target_statements(target, scope, body, &mut lines)?;
                lines.push(format!("await target.selectOption({value});"));
            }
            Action::PressKey { key, target } => match target {
                Some(target) => {
                    self.target_statements(target, scope, body, &mut lines)?;
                    lines.push(format!("await target.press({});", ts_string(key)));
                }
                None => lines.push(format!("await page.keyboard.press({});", ts_string(key))),
            },
            Action::Navigate { url } => {
                lines.push(format!(
                    "await page.goto({});",
                    self.url_expression(url, scope)?
                ));
            }
            Action::Reload {} => lines.push("await page.reload();".to_owned()),
            Action::Scroll {
                direction,
                target,
                amount,
            } => {
                let distance = i64::from(amount.unwrap_or(300));
                match (direction, target) {
                    (ScrollDirection::IntoView, Some(target)) => {
                        self.target_statements(target, scope, body, &mut lines)?;
                        lines.push("await target.scrollIntoViewIfNeeded();".to_owned());
                    }
                    (ScrollDirection::IntoView, None) => {
                        return Err("scroll into view needs a target".to_owned());
                    }
                    (direction, target) => {
                        if let Some(target) = target {
                            self.target_statements(target, scope, body, &mut lines)?;
                            lines.push("await target.hover();".to_owned());
                        }
                        let delta = if *direction == ScrollDirection::Up {
                            -distance
                        } else {
                            distance
                        };
                        lines.push(format!("await page.mouse.wheel(0, {delta});"));
                    }
                }
            }
            Action::WaitFor { until, timeout_ms } => {
                lines.extend(self.expect_lines(until, Some(*timeout_ms), scope, body)?);
            }
            Action::Extract { target, into, .. } => {
                // Replay extracts a control's value, or else its text.
                let read = if VALUE_ROLES.contains(&target.role.as_str()) {
                    self.use_helper(Helper::ValueOf);
                    "valueOf(target)"
                } else if target.role == "text"
                    && target.ordinal.is_some()
                    && target.identity.is_some()
                {
                    // The run itself, as `textRun` found it.
                    "Promise.resolve(run.text)"
                } else if target.role == "text" {
                    // A run of text: the element's own text, not its children's.
                    self.use_helper(Helper::OwnText);
                    "ownText(target)"
                } else {
                    "target.innerText()"
                };
                self.target_statements(target, scope, body, &mut lines)?;
                self.use_helper(Helper::Squash);
                lines.push(format!("outputs.{into} = squash(await {read});"));
            }
            Action::Assert { that } => {
                lines.extend(self.expect_lines(that, None, scope, body)?);
            }
            Action::RawInput { .. }
            | Action::Http(_)
            | Action::Command(_)
            | Action::Screenshot {}
            | Action::ClickAt { .. } => {
                let kind = action.kind();
                return Err(refusal(kind).unwrap_or_else(|| {
                    format!("a `{}` step has no Playwright equivalent", kind.as_str())
                }));
            }
        }
        Ok(lines)
    }
}
