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
mod js_regex;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use cua_artifact::{
    Action, ActionKind, AnchorRelation, Capability, CapabilityRef, IdentityCheck, MatchMode,
    NodeQuery, NodeScope, Predicate, RecoveryScope, Remedy, ResolutionStrategy, RiskTier,
    ScrollDirection, Step, TargetDescriptor, Template, TemplatePart, TemplateRef, TenantId,
    ValueExpr, ValueType, WaitCondition,
};
use cua_evidence::{DEFAULT_ENV_PREFIX, env_var};

use crate::error::CompileError;

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

/// The runtime helpers a spec may need; each is written only when used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Helper {
    BaseUrl,
    Input,
    Secret,
    Squash,
    Folded,
    ExactName,
    FoldedPart,
    PageText,
    ValuesOf,
    ValueOf,
    CellUnder,
    ReadMoney,
    MoneyIn,
    KeyedRecord,
    InRegion,
    InRegionAll,
    UrlValue,
    RegexText,
    AdjacentTo,
    Click,
    ByRole,
    Named,
    Records,
    OwnText,
    TextRun,
}

impl Helper {
    fn requires(self) -> &'static [Helper] {
        match self {
            Self::PageText | Self::CellUnder | Self::ReadMoney => &[Self::Squash],
            Self::ValuesOf => &[Self::Squash, Self::ValueOf],
            Self::MoneyIn => &[Self::ReadMoney],
            Self::KeyedRecord => &[Self::Squash, Self::ByRole],
            Self::InRegion | Self::AdjacentTo => &[Self::InRegionAll],
            Self::ExactName => &[Self::Squash, Self::RegexText],
            _ => &[],
        }
    }

    /// The Playwright types its source names.
    fn types(self) -> &'static [&'static str] {
        match self {
            Self::PageText => &["Page"],
            Self::ValuesOf | Self::ValueOf | Self::MoneyIn => &["Locator"],
            Self::InRegion | Self::InRegionAll => &["Locator"],
            Self::AdjacentTo | Self::Click | Self::OwnText | Self::TextRun => &["Locator"],
            Self::ByRole | Self::Named | Self::Records => &["Page", "FrameLocator", "Locator"],
            Self::KeyedRecord | Self::CellUnder => &["Page", "FrameLocator", "Locator"],
            _ => &[],
        }
    }

    fn source(self) -> &'static str {
        match self {
            Self::BaseUrl => HELPER_BASE_URL,
            Self::Input => HELPER_INPUT,
            Self::Secret => HELPER_SECRET,
            Self::Squash => HELPER_SQUASH,
            Self::Folded => HELPER_FOLDED,
            Self::ExactName => HELPER_EXACT_NAME,
            Self::FoldedPart => HELPER_FOLDED_PART,
            Self::PageText => HELPER_PAGE_TEXT,
            Self::ValuesOf => HELPER_VALUES_OF,
            Self::ValueOf => HELPER_VALUE_OF,
            Self::CellUnder => HELPER_CELL_UNDER,
            Self::ReadMoney => HELPER_READ_MONEY,
            Self::MoneyIn => HELPER_MONEY_IN,
            Self::KeyedRecord => HELPER_KEYED_RECORD,
            Self::InRegion => HELPER_IN_REGION,
            Self::InRegionAll => HELPER_IN_REGION_ALL,
            Self::UrlValue => HELPER_URL_VALUE,
            Self::RegexText => HELPER_REGEX_TEXT,
            Self::AdjacentTo => HELPER_ADJACENT_TO,
            Self::Click => HELPER_CLICK,
            Self::ByRole => HELPER_BY_ROLE,
            Self::Named => HELPER_NAMED,
            Self::Records => HELPER_RECORDS,
            Self::OwnText => HELPER_OWN_TEXT,
            Self::TextRun => HELPER_TEXT_RUN,
        }
    }
}

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

    /// Writes the functions of the recovery rules that translate and returns their names;
    /// the others are listed as not translated.
    fn recoveries(&mut self, capability: &Capability) -> Vec<String> {
        let mut names = Vec::new();
        for rule in &capability.recovery {
            let watches_first_step = rule.scope == RecoveryScope::AnyStep
                || capability
                    .steps
                    .first()
                    .is_some_and(|first| rule.steps.contains(&first.id));
            if !watches_first_step {
                self.not_translated.push(format!(
                    "recovery {}: it does not watch the first step, the one place a test checks it",
                    rule.id
                ));
                continue;
            }
            // A remedy capability that does not translate leaves the rule out, not the spec.
            let refusals_before = self.refusals.len();
            let functions_before = self.functions.len();
            let remedies_before = self.remedy_functions.clone();
            let mut body = Body::default();
            let detector = self.bool_expression(&rule.detect, ValueScope::Remedy, &mut body);
            let detector = match detector {
                Ok(detector) => detector,
                Err(reason) => {
                    self.not_translated
                        .push(format!("recovery {}: its detector: {reason}", rule.id));
                    continue;
                }
            };
            let mut remedies = Vec::new();
            let mut skipped = None;
            for remedy in &rule.remedy {
                match self.remedy(remedy) {
                    Ok(line) => remedies.push(line),
                    Err(reason) => {
                        skipped = Some(reason);
                        break;
                    }
                }
            }
            if let Some(reason) = skipped {
                self.not_translated
                    .push(format!("recovery {}: {reason}", rule.id));
                continue;
            }
            if self.refusals.len() > refusals_before {
                let reasons: Vec<String> = self
                    .refusals
                    .drain(refusals_before..)
                    .map(|refusal| refusal.to_string())
                    .collect();
                self.functions.truncate(functions_before);
                self.remedy_functions = remedies_before;
                self.not_translated.push(format!(
                    "recovery {}: its remedy does not translate: {}",
                    rule.id,
                    reasons.join("; ")
                ));
                continue;
            }
            let name = format!("recover_{}", identifier(rule.id.as_str()));
            let mut function = Vec::new();
            let summary = if rule.description.is_empty() {
                String::new()
            } else {
                format!(": {}", comment_text(&rule.description))
            };
            function.push(format!(
                "// Recovery `{}`{summary} Checked once, right after the entrypoint.",
                rule.id
            ));
            function.push(format!(
                "async function {name}(page: Page): Promise<void> {{"
            ));
            function.extend(self.frame_declarations(&body));
            function.push(layout(1, &format!("if (!({detector})) {{")));
            function.push("    return;".to_owned());
            function.push("  }".to_owned());
            for remedy in remedies {
                function.push(layout(1, &remedy));
            }
            function.push("}".to_owned());
            self.functions.push(function.join("\n"));
            names.push(name);
        }
        names
    }

    /// One remedy as a statement.
    fn remedy(&mut self, remedy: &Remedy) -> Result<String, String> {
        match remedy {
            Remedy::RunCapability(run) => {
                if !run.inputs.is_empty() {
                    return Err(format!(
                        "the remedy runs {} with inputs, which a test cannot bind",
                        run.capability
                    ));
                }
                let name = self.remedy_function(&run.capability)?;
                Ok(format!("await {name}(page);"))
            }
            Remedy::Action(Action::Reload {}) => Ok("await page.reload();".to_owned()),
            Remedy::Action(Action::Navigate { url }) => Ok(format!(
                "await page.goto({});",
                self.url_expression(url, ValueScope::Remedy)?
            )),
            Remedy::Action(action) => Err(format!(
                "the remedy `{}` is not translated",
                action.kind().as_str()
            )),
        }
    }

    /// The function that runs a remedy capability's steps and checkpoint on the current
    /// screen, written once.
    fn remedy_function(&mut self, reference: &CapabilityRef) -> Result<String, String> {
        if let Some(name) = self.remedy_functions.get(reference) {
            return Ok(name.clone());
        }
        let Some(capability) = self.config.remedies.get(reference).cloned() else {
            return Err(format!(
                "the remedy runs {reference}, which was not supplied to codegen"
            ));
        };
        if capability.inputs.iter().any(|input| input.required) {
            return Err(format!(
                "the remedy runs {reference}, which takes inputs a test cannot bind"
            ));
        }
        let name = format!("run_{}", identifier(capability.id.as_str()));
        self.remedy_functions
            .insert(reference.clone(), name.clone());
        let mut body = Body::default();
        if extracts(&capability) {
            body.line(1, "const outputs: Record<string, string> = {};");
        }
        for step in &capability.steps {
            self.step(&mut body, step, ValueScope::Remedy, Some(reference));
        }
        match self.expect_lines(&capability.checkpoint, None, ValueScope::Remedy, &mut body) {
            Ok(lines) => {
                for line in lines {
                    body.line(1, line);
                }
            }
            Err(reason) => self.refuse(format!("{reference}: checkpoint"), reason),
        }
        let mut function = vec![
            format!(
                "// {reference}: {} (a remedy, run on the current screen; content hash {}).",
                comment_text(&capability.title),
                capability
                    .content_hash
                    .as_ref()
                    .map_or("none: a draft", |hash| hash.as_str())
            ),
            format!("async function {name}(page: Page): Promise<void> {{"),
        ];
        function.extend(self.frame_declarations(&body));
        function.extend(body.lines);
        function.push("}".to_owned());
        self.functions.push(function.join("\n"));
        Ok(name)
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

    /// Appends the statements that build `target` (its identity check included) to `lines`.
    fn target_statements(
        &mut self,
        descriptor: &TargetDescriptor,
        scope: ValueScope,
        body: &mut Body,
        lines: &mut Vec<String>,
    ) -> Result<(), String> {
        let code = self.target(descriptor, scope, body)?;
        lines.extend(code.lines);
        lines.push(format!("const target = {};", code.locator));
        Ok(())
    }

    /// A target as a locator, with its identity check when it has one.
    ///
    /// A name and an anchor narrow each other (the named candidates standing where the anchor
    /// says); the anchor alone decides only without a name, since a test never takes replay's
    /// fallback for a renamed control. A target with an identity check is found inside the one
    /// record whose key holds the key (`.nth(i)` inside it, counted in its region, when it has
    /// an ordinal).
    fn target(
        &mut self,
        descriptor: &TargetDescriptor,
        scope: ValueScope,
        body: &mut Body,
    ) -> Result<TargetCode, String> {
        if descriptor.recorded_strategy == Some(ResolutionStrategy::Vision) {
            return Err(
                "the target was recorded by vision, which has no locator (replay refuses it too)"
                    .to_owned(),
            );
        }
        if descriptor.ordinal.is_some() && descriptor.identity.is_none() {
            return Err(
                "an ordinal without an identity check: `.nth(i)` alone would act on whatever sits \
                 at that position"
                    .to_owned(),
            );
        }
        // A target's region is checked on the element itself (`inRegion`); the frame scopes
        // the locator.
        let root = self.scope_expression(descriptor.scope.as_ref(), body);
        let name = descriptor
            .name
            .as_ref()
            .map(|name| self.name_spec(name.match_mode, &name.value, scope))
            .transpose()?;

        // `rows`: the rows the target sits in, when it is found through a row; `inside`: the
        // target relative to its row (or to the root). A name and an anchor are both
        // constraints, as in replay: the named nodes standing where the anchor says.
        let mut lines = Vec::new();
        let candidates = self.by_role(&descriptor.role, name.as_ref())?;
        let (rows, inside) = match &descriptor.anchor {
            None => {
                let rows = descriptor
                    .identity
                    .as_ref()
                    .map(|_| self.innermost_records(&root, &on("page", &candidates)));
                (rows, candidates)
            }
            Some(anchor) => {
                let label = self.name_spec(anchor.match_mode, &anchor.text, scope)?;
                lines.push(format!("const anchorName = {};", label.value));
                match anchor.relation {
                    AnchorRelation::AdjacentTo | AnchorRelation::BesideLabel
                        if descriptor.identity.is_none() =>
                    {
                        // Beside its label anywhere, not only in a table: the sibling after it.
                        // (A visual label is the one just before its control: the same pair
                        // read from the label's side.)
                        let anchors = self.named(&root, "anchorName");
                        lines.push(format!("const anchors = {anchors};"));
                        self.use_helper(Helper::AdjacentTo);
                        let what = format!("{} adjacent_to {:?}", descriptor.role, anchor.text);
                        let region = descriptor
                            .scope
                            .as_ref()
                            .and_then(|scope| scope.region.as_deref())
                            .map_or_else(|| "null".to_owned(), ts_string);
                        lines.push(format!(
                            "const adjacent = await adjacentTo(anchors, anchorName, {}, {region}, {});",
                            on(&root, &candidates),
                            ts_string(&what)
                        ));
                        // Found already: a template that names no base.
                        (None, "adjacent".to_owned())
                    }
                    AnchorRelation::RowOf
                    | AnchorRelation::AdjacentTo
                    | AnchorRelation::BesideLabel => {
                        let rows = innermost_rows(&root, &self.named("page", "anchorName"));
                        let mut inside = candidates;
                        if descriptor.role == "cell" {
                            // The label is a cell of the same row; the target is another cell.
                            inside
                                .push_str(&format!("{BREAK}.filter({{ hasNotText: anchorName }})"));
                        }
                        (Some(rows), inside)
                    }
                    AnchorRelation::LabelledBy => {
                        if descriptor.identity.is_some() {
                            return Err(
                                "an identity check on a target found by its label: the label names \
                                 no row to check"
                                    .to_owned(),
                            );
                        }
                        (
                            None,
                            format!("{candidates}.and(page.getByLabel(anchorName))"),
                        )
                    }
                    AnchorRelation::WithinSection => {
                        return Err(format!(
                            "the anchor `within_section {:?}` depends on whether the anchor is a \
                             heading or a table cell on the live page; Playwright has no \
                             role-based locator for \"the nodes after a heading\"",
                            anchor.text
                        ));
                    }
                }
            }
        };

        let region = descriptor
            .scope
            .as_ref()
            .and_then(|scope| scope.region.as_ref());
        let locator = match (&descriptor.identity, rows) {
            (Some(identity), Some(rows)) => {
                lines.push(format!(
                    "const record = {};",
                    self.keyed_record(&root, &rows, identity, scope)?
                ));
                match (descriptor.ordinal, region) {
                    // The n-th run of text of the record, as replay counts text nodes (the
                    // element holding it stands for it).
                    // The n-th run of text of the record, counted as replay counts text nodes
                    // (`textRun`); the element holding it stands for it in an action.
                    (Some(ordinal), None)
                        if descriptor.role == "text"
                            && name.is_none()
                            && descriptor.anchor.is_none() =>
                    {
                        self.use_helper(Helper::TextRun);
                        lines.push(format!("const run = await textRun(record, {ordinal});"));
                        "run.holder".to_owned()
                    }
                    (Some(_), _) if descriptor.role == "text" => {
                        return Err(
                            "a run of text counted by position within a region, among named runs \
                             or beside an anchor: Playwright finds elements, not runs of text"
                                .to_owned(),
                        );
                    }
                    // Replay counts the ordinal among the candidates in the region.
                    (Some(ordinal), Some(region)) => {
                        self.use_helper(Helper::InRegionAll);
                        lines.push(format!(
                            "const inRegionCandidates = await inRegionAll({}, {});",
                            on("record", &inside),
                            ts_string(region)
                        ));
                        lines.push(format!(
                            "expect(inRegionCandidates.length, {}).toBeGreaterThan({ordinal});",
                            ts_string(&format!("candidate #{ordinal} in region {region}"))
                        ));
                        format!("inRegionCandidates[{ordinal}]")
                    }
                    (Some(ordinal), None) => format!("{}.nth({ordinal})", on("record", &inside)),
                    (None, _) => on("record", &inside),
                }
            }
            (_, Some(rows)) => on(&rows, &inside),
            (_, None) => on(&root, &inside),
        };
        let counted_in_region = descriptor.identity.is_some() && descriptor.ordinal.is_some();
        let locator = match region {
            Some(region) if !counted_in_region => {
                self.use_helper(Helper::InRegion);
                lines.push(format!(
                    "const regional = await inRegion({locator}, {});",
                    ts_string(region)
                ));
                "regional".to_owned()
            }
            _ => locator,
        };
        Ok(TargetCode { lines, locator })
    }

    /// How a locator finds `role` named by `name`: a template where
    /// [`BASE`] stands for that locator (`␂.getByRole(…)`, `byRole(␂, …)`). Fill it with [`on`].
    fn by_role(&mut self, role: &str, name: Option<&NameSpec>) -> Result<String, String> {
        let option = name.map_or_else(String::new, NameSpec::option);
        Ok(match role_locator(role)? {
            RoleLocator::Aria(role) => format!("{BASE}.getByRole({}{option})", ts_string(role)),
            RoleLocator::Aliased(role) => {
                self.use_helper(Helper::ByRole);
                format!("byRole({BASE}, {}{option})", ts_string(role))
            }
            // `.and()` matches its argument in the receiver's own document: `page.` is only
            // its spelling there (a frame locator is refused inside it).
            RoleLocator::Field(kind) => format!(
                "{BASE}.getByRole('textbox'{option}){BREAK}.and(page.locator({}))",
                ts_string(&format!("input[type=\"{kind}\"]"))
            ),
            RoleLocator::Text => match name {
                Some(name) => format!("{BASE}.getByText({})", name.value),
                None => format!("{BASE}{TEXT_RUNS}"),
            },
        })
    }

    /// The nodes of `root` whose name matches `name` (an argument of `getByText`), whatever
    /// their role: cua's query without a role.
    fn named(&mut self, root: &str, name: &str) -> String {
        self.use_helper(Helper::Named);
        format!("named({root}, {name})")
    }

    /// The innermost records of `root` (rows, list items, articles, definitions) that hold a
    /// node matching `inner` (a `page`-rooted locator, queried inside each): the record an
    /// identity check reads its key on.
    fn innermost_records(&mut self, root: &str, inner: &str) -> String {
        self.use_helper(Helper::Records);
        innermost(&format!("records({root})"), "records(page)", inner)
    }

    /// The identity check as the one record of `rows` whose key holds the key: replay keys a
    /// target by its record and refuses a key that two records hold, and so does the spec.
    fn keyed_record(
        &mut self,
        root: &str,
        rows: &str,
        identity: &IdentityCheck,
        scope: ValueScope,
    ) -> Result<String, String> {
        self.use_helper(Helper::KeyedRecord);
        let column = match &identity.column {
            Some(column) => {
                self.use_helper(Helper::CellUnder);
                ts_string(column)
            }
            None => "null".to_owned(),
        };
        let what = match &identity.column {
            Some(column) => format!("the {column:?} cell"),
            None => "the record's key".to_owned(),
        };
        let expected = self.value(&identity.equals, scope, false)?;
        let holds = match identity.match_mode {
            MatchMode::Exact => {
                self.use_helper(Helper::ExactName);
                format!("(text) => exactName({expected}).test(text)")
            }
            MatchMode::Normalized => {
                self.use_helper(Helper::Folded);
                format!("(text) => folded({expected}).test(text)")
            }
            MatchMode::Contains => {
                format!("(text) => text.toLowerCase().includes(squash({expected}).toLowerCase())")
            }
            MatchMode::Regex => match &identity.equals {
                ValueExpr::String(pattern) => {
                    format!("(text) => {}.test(text)", js_regex_literal(pattern)?)
                }
                _ => {
                    return Err(
                        "a regex identity check whose pattern is not a literal cannot be \
                         translated before it is known"
                            .to_owned(),
                    );
                }
            },
        };
        Ok(format!(
            "await keyedRecord(page, {root}, {rows}, {column}, {holds}, {})",
            ts_string(&what)
        ))
    }

    /// How a name (or an anchor's text) is matched, by match mode. Its values are bound as
    /// replay binds them: as text, and escaped in a regex ([`Self::bound_regex`]).
    fn name_spec(
        &mut self,
        mode: MatchMode,
        text: &str,
        scope: ValueScope,
    ) -> Result<NameSpec, String> {
        if mode == MatchMode::Exact && text.trim().is_empty() {
            return Err(
                "an unnamed control (`name: {value: \"\", match: exact}`) has no role-and-name \
                 locator; find it through its label's row (`anchor: {relation: row_of, …}`)"
                    .to_owned(),
            );
        }
        let value = match mode {
            MatchMode::Exact => {
                self.use_helper(Helper::ExactName);
                format!("exactName({})", self.text_expression(text, scope)?)
            }
            MatchMode::Normalized => {
                self.use_helper(Helper::Folded);
                format!("folded({})", self.text_expression(text, scope)?)
            }
            MatchMode::Contains => self.text_expression(text, scope)?,
            MatchMode::Regex if text.contains("{$") => {
                let template = Template::parse(text)
                    .map_err(|problem| format!("the name {text:?}: {problem}"))?;
                self.bound_regex(&template, scope)?
            }
            MatchMode::Regex => js_regex_literal(text)?,
        };
        Ok(NameSpec { value })
    }

    /// A regex built from a run's values as a `RegExp` expression: the literal parts translated
    /// as any pattern is, each value escaped at run time (`regexText`), as replay binds it.
    fn bound_regex(&mut self, template: &Template, scope: ValueScope) -> Result<String, String> {
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
        self.use_helper(Helper::RegexText);
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

    /// The locator of a predicate's node query, and the region its nodes must be in.
    fn query_locator(
        &mut self,
        query: &NodeQuery,
        scope: ValueScope,
        body: &mut Body,
    ) -> Result<QueryCode, String> {
        let root = self.scope_expression(query.scope.as_ref(), body);
        // Each name condition as the argument of `getByText` and its kin (a `RegExp`).
        let mut names = Vec::new();
        if let Some(name) = &query.name {
            self.use_helper(Helper::Folded);
            names.push(format!("folded({})", self.text_expression(name, scope)?));
        }
        if let Some(part) = &query.name_contains {
            self.use_helper(Helper::FoldedPart);
            names.push(format!(
                "foldedPart({})",
                self.text_expression(part, scope)?
            ));
        }
        if let Some(pattern) = &query.name_matches {
            names.push(js_regex_literal(pattern)?);
        }
        let mut found = Vec::new();
        match &query.role {
            Some(role) => {
                if names.is_empty() {
                    found.push(on(&root, &self.by_role(role, None)?));
                }
                for name in names {
                    let name = NameSpec { value: name };
                    found.push(on(&root, &self.by_role(role, Some(&name))?));
                }
            }
            None => {
                if names.is_empty() {
                    return Err(
                        "a node query with neither a role nor a name selects every node; \
                                Playwright has no locator for that"
                            .to_owned(),
                    );
                }
                for name in &names {
                    found.push(self.named(&root, name));
                }
            }
        }
        let mut found = found.into_iter();
        let mut locator = found.next().unwrap_or_default();
        for more in found {
            locator.push_str(&format!("{BREAK}.and({more})"));
        }
        let region = query.scope.as_ref().and_then(|scope| scope.region.clone());
        if region.is_some() {
            self.use_helper(Helper::InRegionAll);
        }
        Ok(QueryCode { locator, region })
    }

    /// A text that may hold a run's values as a TypeScript string expression: the literal
    /// parts and the values concatenated, as replay binds them.
    fn text_expression(&mut self, text: &str, scope: ValueScope) -> Result<String, String> {
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
    fn expect_lines(
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
                        let nth = if *min_count <= 1 {
                            ".first()".to_owned()
                        } else {
                            format!(".nth({})", min_count - 1)
                        };
                        vec![format!(
                            "await expect({}{nth}).toBeVisible({});",
                            query.locator,
                            with("")
                        )]
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
                self.use_helper(Helper::ValuesOf);
                vec![format!(
                    "await expect.poll(async () => valuesOf(await {}){}).toContain(squash({value}));",
                    nodes(&query),
                    with(", ")
                )]
            }
            Predicate::TextPresent { value } | Predicate::TextAbsent { value } => {
                let value = self.value(value, scope, false)?;
                self.use_helper(Helper::PageText);
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
    fn money_expression(
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
        self.use_helper(Helper::MoneyIn);
        Ok(format!("moneyIn({}, {value})", query.locator))
    }

    /// A predicate as a boolean expression read once (for `any_of`, `not` and detectors).
    fn bool_expression(
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
                self.use_helper(Helper::ValuesOf);
                format!(
                    "(await valuesOf(await {})).includes(squash({value}))",
                    nodes(&query)
                )
            }
            Predicate::TextPresent { value } | Predicate::TextAbsent { value } => {
                let value = self.value(value, scope, false)?;
                self.use_helper(Helper::PageText);
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
    fn value(
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
            ValueExpr::Secret(name) if secrets => {
                self.use_helper(Helper::Secret);
                Ok(format!(
                    "secret({})",
                    ts_string(&env_var(DEFAULT_ENV_PREFIX, name.as_str()))
                ))
            }
            ValueExpr::Secret(name) => Err(format!(
                "secret `{name}` would be compared with screen text; secrets are only typed"
            )),
            literal => Ok(ts_string(&literal.literal_text().unwrap_or_default())),
        }
    }

    /// `page`, or the identifier of the scope's frame (declared at the top of the function).
    /// A region is not a locator: callers check it on the elements found.
    fn scope_expression(&mut self, scope: Option<&NodeScope>, body: &mut Body) -> String {
        let Some(frame) = scope.and_then(|scope| scope.frame.as_ref()) else {
            return "page".to_owned();
        };
        body.frames.insert(frame.clone());
        self.frame_ident(frame)
    }

    fn frame_ident(&mut self, frame: &str) -> String {
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

    fn frame_declarations(&mut self, body: &Body) -> Vec<String> {
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

    /// A URL with `{base_url}` as a concatenation with `baseUrl()`; other placeholders refuse.
    fn url_expression(&mut self, url: &str, scope: ValueScope) -> Result<String, String> {
        let template =
            Template::parse(url).map_err(|problem| format!("the URL {url:?}: {problem}"))?;
        let mut parts = Vec::new();
        for part in template.parts() {
            match part {
                TemplatePart::Text(text) => {
                    for (position, piece) in text.split("{base_url}").enumerate() {
                        if position > 0 {
                            self.use_helper(Helper::BaseUrl);
                            parts.push("baseUrl()".to_owned());
                        }
                        if let Some(placeholder) = cua_artifact::tenant_placeholder(piece) {
                            return Err(format!(
                                "the URL {url:?} holds the placeholder {{{placeholder}}}, unbound here"
                            ));
                        }
                        if !piece.is_empty() {
                            parts.push(ts_string(piece));
                        }
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
                    self.use_helper(Helper::UrlValue);
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
    fn output_shapes(&mut self, capability: &Capability, body: &mut Body) {
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

    fn use_helper(&mut self, helper: Helper) {
        self.helpers.insert(helper);
        for required in helper.requires() {
            self.helpers.insert(*required);
        }
    }

    /// The whole file: header, imports, the test, then functions and helpers.
    fn file(&mut self, capability: &Capability, title: &str, body: Body) -> String {
        let reference = capability.reference();
        let hash = capability
            .content_hash
            .as_ref()
            .map_or("none (an unsealed draft)", |hash| hash.as_str());
        let mut out = Vec::new();
        let tenant = self
            .config
            .tenant
            .as_ref()
            .map_or_else(String::new, |tenant| format!(" for tenant {tenant}"));
        out.push(format!(
            "// Generated by `cua codegen` from {reference}{tenant} at content hash {hash}."
        ));
        out.push("// Do not edit: regenerate it from the capability.".to_owned());
        out.push("//".to_owned());
        out.push(format!("// {}", comment_text(&capability.title)));
        out.push("//".to_owned());
        out.push(format!(
            "// Run: {BASE_URL_ENV}=<application URL> npx playwright test <this file>"
        ));
        out.push(format!(
            "// Inputs come from {INPUT_ENV_PREFIX}<NAME> (default: the artifact's example), \
             secrets only from {DEFAULT_ENV_PREFIX}<NAME>."
        ));
        out.push("// Targets are role-within-scope locators; CSS hints are never used.".to_owned());
        if !self.not_translated.is_empty() {
            out.push("//".to_owned());
            out.push("// Not translated (replay handles these):".to_owned());
            for line in &self.not_translated {
                out.push(format!("// - {}", comment_text(line)));
            }
        }
        out.push(String::new());
        let mut types: BTreeSet<&str> = self
            .helpers
            .iter()
            .flat_map(|helper| helper.types().iter().copied())
            .collect();
        if !self.functions.is_empty() {
            types.insert("Page");
        }
        let mut imports = vec!["test".to_owned(), "expect".to_owned()];
        // In the order Playwright's own examples import them.
        for name in ["FrameLocator", "Locator", "Page"] {
            if types.contains(name) {
                imports.push(format!("type {name}"));
            }
        }
        out.push(format!(
            "import {{ {} }} from '@playwright/test';",
            imports.join(", ")
        ));
        out.push(String::new());
        out.push(format!(
            "test({}, async ({{ page }}) => {{",
            ts_string(title)
        ));
        out.extend(self.frame_declarations(&body));
        out.extend(body.lines);
        out.push("});".to_owned());
        for function in &self.functions {
            out.push(String::new());
            out.push(function.clone());
        }
        for helper in &self.helpers {
            out.push(String::new());
            out.push(helper.source().trim_end().to_owned());
        }
        let mut text: String = out.join("\n").chars().filter(|&c| c != BREAK).collect();
        text.push('\n');
        text
    }
}

/// The elements a translated query finds, as a promise of a `Locator[]`: those in its region
/// when it has one.
fn nodes(query: &QueryCode) -> String {
    match &query.region {
        Some(region) => format!("inRegionAll({}, {})", query.locator, ts_string(region)),
        None => format!("{}.all()", query.locator),
    }
}

/// How many elements a translated query finds, awaited.
fn count(query: &QueryCode) -> String {
    match &query.region {
        Some(_) => format!("(await {}).length", nodes(query)),
        None => format!("(await {}.count())", query.locator),
    }
}

/// The innermost table rows of `root` that hold a node matching `inner` (a `page.`-rooted
/// locator, queried inside each row). Layout tables nest rows inside rows; the innermost row
/// is the one a label and its control share.
fn innermost_rows(root: &str, inner: &str) -> String {
    innermost(
        &format!("{root}{BREAK}.getByRole('row')"),
        "page.getByRole('row')",
        inner,
    )
}

/// The elements of `outer` that hold a node matching `inner` and hold no element of `nested`
/// (the same kind, `page.`-rooted) that holds one too.
fn innermost(outer: &str, nested: &str, inner: &str) -> String {
    format!(
        "{outer}{BREAK}.filter({{ has: {inner} }}){BREAK}.filter({{ hasNot: {nested}.filter({{ has: {inner} }}) }})"
    )
}

/// One statement at `indent`: on one line when it fits, else one chained call per line.
fn layout(indent: usize, text: &str) -> String {
    let pad = "  ".repeat(indent);
    let flat: String = text.chars().filter(|&c| c != BREAK).collect();
    if pad.len() + flat.chars().count() <= MAX_LINE || !text.contains(BREAK) {
        return format!("{pad}{flat}");
    }
    let continuation = format!("\n{pad}  ");
    format!("{pad}{}", text.replace(BREAK, &continuation))
}

/// How Playwright finds the nodes of one of cua's roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RoleLocator<'r> {
    /// An ARIA role `getByRole` knows, and cua means only it.
    Aria(&'r str),
    /// A role cua's snapshot gives several ARIA roles (`byRole`): a `textbox` is also a
    /// `searchbox`, a `cell` also a header cell, a `table` also a `grid`, a `combobox` also a
    /// `listbox`.
    Aliased(&'r str),
    /// A native date or time field (`date`, `time`, `datetime`): Playwright calls each a
    /// textbox, so its input type tells it from a text field.
    Field(&'static str),
    /// A run of text (`text`): the element whose text it is.
    Text,
}

/// The Playwright locator for a cua role, or why there is none.
fn role_locator(role: &str) -> Result<RoleLocator<'_>, String> {
    match role {
        "cell" | "table" | "textbox" | "combobox" => Ok(RoleLocator::Aliased(role)),
        "date" => Ok(RoleLocator::Field("date")),
        "time" => Ok(RoleLocator::Field("time")),
        "datetime" => Ok(RoleLocator::Field("datetime-local")),
        "text" => Ok(RoleLocator::Text),
        _ if PLAYWRIGHT_ROLES.contains(&role) => Ok(RoleLocator::Aria(role)),
        _ => Err(format!(
            "the role `{role}` is neither an ARIA role Playwright's getByRole knows nor one of \
             cua's own roles with a Playwright locator (date, time, datetime, text)"
        )),
    }
}

/// Stands, in a locator template, for the locator it is found from. [`on`] puts it in.
const BASE: char = '\u{2}';

/// The locator `template` describes, found from `base`.
fn on(base: &str, template: &str) -> String {
    template.replace(BASE, base)
}

/// The first of the private-use characters values stand in as while a bound regex is translated.
const PLACEHOLDER_BASE: u32 = 0xE000;

/// Whether `c` is one of the placeholders of [`SpecWriter::bound_regex`].
fn is_placeholder(c: char) -> bool {
    (PLACEHOLDER_BASE..=0xF8FF).contains(&u32::from(c))
}

/// The elements holding a text run of their own: the `text` nodes of cua's snapshot.
const TEXT_RUNS: &str = ".locator('xpath=.//*[text()[normalize-space()]]')";

/// Whether any step extracts an output (and so writes to `outputs`).
fn extracts(capability: &Capability) -> bool {
    capability
        .steps
        .iter()
        .any(|step| matches!(step.action, Action::Extract { .. }))
}

/// A TypeScript identifier fragment: ASCII letters, digits and `_`.
fn identifier(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

const HELPER_BASE_URL: &str = r#"/** The application's URL from `CUA_BASE_URL`, without a trailing slash. */
function baseUrl(): string {
  const url = process.env.CUA_BASE_URL;
  if (!url) {
    throw new Error('CUA_BASE_URL is not set: give the URL of the application under test');
  }
  return url.replace(/\/+$/, '');
}
"#;

const HELPER_INPUT: &str = r#"/** An input from `variable`, else the artifact's example; checked as replay checks it. */
function input(variable: string, example?: string, pattern?: RegExp, allowed?: string[]): string {
  const value = process.env[variable] ?? example;
  if (value === undefined) {
    throw new Error(`${variable} is not set and the artifact gives no example`);
  }
  if (pattern !== undefined && !pattern.test(value)) {
    throw new Error(`${variable}=${JSON.stringify(value)} does not match ${pattern}`);
  }
  if (allowed !== undefined && !allowed.includes(value)) {
    throw new Error(`${variable}=${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
  }
  return value;
}
"#;

const HELPER_SECRET: &str = r#"/** A secret from `variable`: secrets are never written into a spec. */
function secret(variable: string): string {
  const value = process.env[variable];
  if (!value) {
    throw new Error(`${variable} is not set: secrets come only from the environment`);
  }
  return value;
}
"#;

const HELPER_SQUASH: &str = r#"/** Whitespace squashed, as cua compares text. */
function squash(text: string): string {
  return text.replace(/\s+/gu, ' ').trim();
}
"#;

const HELPER_FOLDED: &str = r#"/** cua's `normalized` match: the same letters and digits, ignoring case, spacing and punctuation. */
function folded(text: string): RegExp {
  const gap = '[^\\p{Alphabetic}\\p{N}]*';
  const words = text.match(/[\p{Alphabetic}\p{N}]+/gu) ?? [];
  if (words.length === 0) throw new Error(`${JSON.stringify(text)} has no letters or digits to match, so it names nothing`);
  return new RegExp(`^${gap}${words.join(gap)}${gap}$`, 'iu');
}
"#;

const HELPER_EXACT_NAME: &str = r#"/** cua's `exact` match: the same name once whitespace is squashed and a trailing label colon or required marker dropped; case counts. */
function exactName(text: string): RegExp {
  const name = squash(text).replace(/[\s:*]+$/u, '');
  if (name === '') throw new Error(`${JSON.stringify(text)} is empty once squashed, so it names nothing`);
  return new RegExp(`^${regexText(name)}[\\s:*]*$`, 'u');
}
"#;

const HELPER_FOLDED_PART: &str = r#"/** cua's `name_contains`: the letters and digits of `text` in order, ignoring case and punctuation. */
function foldedPart(text: string): RegExp {
  const gap = '[^\\p{Alphabetic}\\p{N}]*';
  const words = text.match(/[\p{Alphabetic}\p{N}]+/gu) ?? [];
  if (words.length === 0) throw new Error(`${JSON.stringify(text)} has no letters or digits to match, so it names nothing`);
  return new RegExp(words.join(gap), 'iu');
}
"#;

const HELPER_PAGE_TEXT: &str = r#"/** The text of every frame, squashed and lower-cased: what cua's text_present searches. */
async function pageText(page: Page): Promise<string> {
  const texts = await Promise.all(
    page.frames().map((frame) => frame.evaluate(() => document.body?.innerText ?? '').catch(() => '')),
  );
  return squash(texts.join(' ')).toLowerCase();
}
"#;

const HELPER_VALUES_OF: &str = r#"/** The values of `controls`, squashed: what cua's node_has_value compares. */
async function valuesOf(controls: Locator[]): Promise<string[]> {
  return Promise.all(controls.map(async (control) => squash(await valueOf(control))));
}
"#;

const HELPER_VALUE_OF: &str = r#"/** A control's value as cua reads it: a select's chosen option by its text, a field's text. */
async function valueOf(control: Locator): Promise<string> {
  return control.evaluate((element) => {
    if (element instanceof HTMLSelectElement) return element.selectedOptions[0]?.text ?? '';
    return element instanceof HTMLInputElement || element instanceof HTMLTextAreaElement ? element.value : '';
  });
}
"#;

const HELPER_READ_MONEY: &str = r#"/** cua's money reading: `$4,210.55` is 4210.55 whatever the sign and grouping; null when the text is not an amount. */
function readMoney(text: string): string | null {
  const match = /^(\()?(-)?\$?(-)?((?:[0-9]{1,3}(?:,[0-9]{3})+)|[0-9]+)(?:\.([0-9]+))?(\))?$/u.exec(squash(text));
  if (!match) return null;
  const [, open, minus, innerMinus, whole, fraction, close] = match;
  if (Boolean(open) !== Boolean(close) || (open && (minus || innerMinus)) || (minus && innerMinus)) return null;
  const digits = whole.replace(/,/gu, '').replace(/^0+/u, '') || '0';
  const cents = (fraction ?? '').replace(/0+$/u, '');
  const sign = (open || minus || innerMinus) && (digits !== '0' || cents !== '') ? '-' : '';
  return cents ? `${sign}${digits}.${cents}` : `${sign}${digits}`;
}
"#;

const HELPER_MONEY_IN: &str = r#"/** Whether a node `locator` matches reads, as a whole, as `amount`: what cua's money_present checks. */
async function moneyIn(locator: Locator, amount: string): Promise<boolean> {
  const wanted = readMoney(amount);
  const looksLikeMoney = (text: string) => /\$/u.test(text) || /\.[0-9]{2}\)?$/u.test(squash(text));
  return wanted !== null && (await locator.allInnerTexts()).some((text) => looksLikeMoney(text) && readMoney(text) === wanted);
}
"#;

const HELPER_URL_VALUE: &str = r#"/** A value as cua binds it into a URL: every character but RFC 3986's unreserved ones percent-encoded, and never a `.` or `..` segment. */
function urlValue(value: string): string {
  if (value === '.' || value === '..') {
    throw new Error(`the value ${JSON.stringify(value)} would be a path segment the browser resolves away`);
  }
  return encodeURIComponent(value).replace(/[!'()*]/gu, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
"#;

const HELPER_IN_REGION: &str = r#"/** The one element of `candidates` in `region`; a same-named control in another region is not a candidate. */
async function inRegion(candidates: Locator, region: string): Promise<Locator> {
  const inside = await inRegionAll(candidates, region);
  expect(inside.length, `exactly one candidate in region ${region}`).toBe(1);
  return inside[0];
}
"#;

const HELPER_IN_REGION_ALL: &str = r#"/**
 * The elements of `candidates` in `region`, as cua's snapshot infers regions: the innermost
 * landmark around an element (`main`, `nav`, the page's `header` and `footer`, `aside`, `search`,
 * a labelled `section` or `role="region"`) opens a region named by its label or else its role,
 * and the last shown heading before the element inside that same landmark names it instead.
 */
async function inRegionAll(candidates: Locator, region: string): Promise<Locator[]> {
  const inside: Locator[] = [];
  for (const candidate of await candidates.all()) {
    const found = await candidate.evaluate((element) => {
      const slug = (text: string): string => {
        let out = '';
        for (const c of text.toLowerCase()) {
          if (/[\p{L}\p{N}]/u.test(c)) out += c;
          else if (out && !out.endsWith('_')) out += '_';
        }
        return out.replace(/_+$/u, '');
      };
      const squashed = (text: string | null): string => (text ?? '').replace(/\s+/gu, ' ').trim();
      const label = (node: Element): string => {
        const ids = node.getAttribute('aria-labelledby');
        if (ids) {
          const texts = ids.split(/\s+/u).map((id) => node.ownerDocument.getElementById(id)?.textContent ?? '');
          return squashed(texts.join(' '));
        }
        return squashed(node.getAttribute('aria-label') ?? node.getAttribute('title'));
      };
      const landmarks = ['main', 'navigation', 'banner', 'contentinfo', 'complementary', 'region', 'search'];
      const sectioning = 'article, aside, main, nav, section';
      const landmark = (node: Element): string | null => {
        let role = (node.getAttribute('role') ?? '').trim().split(/\s+/u)[0];
        if (!role) {
          const scoped = node.parentElement?.closest(sectioning) != null;
          role = ({
            main: 'main',
            nav: 'navigation',
            search: 'search',
            aside: scoped && !label(node) ? '' : 'complementary',
            header: scoped ? '' : 'banner',
            footer: scoped ? '' : 'contentinfo',
            section: 'region',
          } as Record<string, string>)[node.localName] ?? '';
        }
        if (!landmarks.includes(role)) return null;
        const name = label(node);
        if (name) return slug(name);
        return role === 'region' ? null : role;
      };
      const scopeOf = (node: Element): Element | null => {
        for (let at = node.parentElement; at; at = at.parentElement) {
          if (landmark(at) !== null) return at;
        }
        return null;
      };
      const own = landmark(element);
      if (own !== null) return own;
      const scope = scopeOf(element);
      let last: string | null = null;
      const root = scope ?? element.ownerDocument.documentElement;
      for (const heading of root.querySelectorAll('h1, h2, h3, h4, h5, h6, [role="heading"]')) {
        const before = heading === element || (heading.compareDocumentPosition(element) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0;
        if (!before) break;
        const shown = heading.checkVisibility({ visibilityProperty: true }) && heading.closest('[aria-hidden="true"]') === null;
        if (!shown || scopeOf(heading) !== scope) continue;
        const name = label(heading) || squashed(heading.textContent);
        if (name) last = slug(name);
      }
      return last ?? (scope === null ? null : landmark(scope));
    });
    if (found === region) inside.push(candidate);
  }
  return inside;
}
"#;

const HELPER_REGEX_TEXT: &str = r#"/** A run's value inside a regex, matched as literal text: cua binds values into patterns escaped. */
function regexText(value: string): string {
  return value.replace(/[\\^$.*+?()[\]{}|/]/gu, '\\$&');
}
"#;

const HELPER_BY_ROLE: &str = r#"/** cua's roles that stand for several ARIA roles: a textbox is also a searchbox, a cell also a header cell, a table also a grid, a combobox also a listbox. */
function byRole(
  scope: Page | FrameLocator | Locator,
  role: 'cell' | 'table' | 'textbox' | 'combobox',
  options?: Parameters<Page['getByRole']>[1],
): Locator {
  const roles: Record<string, Parameters<Page['getByRole']>[0][]> = {
    cell: ['cell', 'gridcell', 'columnheader', 'rowheader'],
    table: ['table', 'grid'],
    textbox: ['textbox', 'searchbox'],
    combobox: ['combobox', 'listbox'],
  };
  return roles[role].map((one) => scope.getByRole(one, options)).reduce((all, one) => all.or(one));
}
"#;

const HELPER_NAMED: &str = r#"/** The nodes `name` names whatever their role, as cua's queries without a role find them: by their text, label, title or alternative text. */
function named(scope: Page | FrameLocator | Locator, name: string | RegExp): Locator {
  return scope.getByText(name).or(scope.getByLabel(name)).or(scope.getByTitle(name)).or(scope.getByAltText(name));
}
"#;

const HELPER_CLICK: &str = r#"/**
 * cua's click: a control kept off screen until it is focused (a row action shown on hover) is
 * focused first, as a keyboard user reaches it; then clicked where it shows.
 */
async function click(target: Locator): Promise<void> {
  // Scrolled and measured in one call: a form the page re-renders may replace the element
  // between two calls, and `click()` below finds it again.
  const shown = await target.evaluate((element) => {
    element.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    const box = element.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && box.right > 0 && box.bottom > 0 && box.left < innerWidth && box.top < innerHeight;
  });
  if (!shown) await target.focus();
  await target.click();
}
"#;

const HELPER_ADJACENT_TO: &str = r#"/**
 * cua's `adjacent_to`: the one shown candidate inside the first sibling after an anchor that is,
 * or holds, a candidate (in `region`, when the target has one). An anchor is an element
 * `anchors` finds or a bare run of text `name` matches; a run of text alone in a cell stands
 * for its cell. The accessibility tree leaves wrappers out (a `div`, a `span`), so after the
 * last sibling inside a wrapper the search goes on after the wrapper, and never further.
 */
async function adjacentTo(
  anchors: Locator,
  name: string | RegExp,
  candidates: Locator,
  region: string | null,
  what: string,
): Promise<Locator> {
  const shown = candidates.filter({ visible: true });
  await expect(shown.first(), `a candidate for ${what}`).toBeVisible();
  const all = region === null ? await shown.all() : await inRegionAll(shown, region);
  expect(all.length, `a candidate for ${what} in region ${region}`).toBeGreaterThan(0);
  const handles = await Promise.all(all.map((candidate) => candidate.elementHandle()));
  const named = await anchors.filter({ visible: true }).elementHandles();
  const hits = await all[0].evaluate((_, { named, name, handles }) => {
    const squash = (text: string): string => text.replace(/\s+/gu, ' ').trim();
    const matches = (text: string): boolean =>
      typeof name === 'string' ? squash(text).toLowerCase().includes(squash(name).toLowerCase()) : name.test(squash(text));
    const wrapper = (node: Node): boolean => {
      if (!(node instanceof Element)) return false;
      const role = node.getAttribute('role');
      if (role !== null) return ['generic', 'none', 'presentation'].includes(role.trim());
      const unnamed = !node.hasAttribute('aria-label') && !node.hasAttribute('aria-labelledby');
      return ['div', 'span', 'b', 'i', 'u', 's', 'small', 'font', 'center'].includes(node.localName)
        || (unnamed && ['section', 'form'].includes(node.localName));
    };
    const starts: Node[] = [...named];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      if (node.parentElement?.checkVisibility({ visibilityProperty: true }) && matches(node.textContent ?? '')) starts.push(node);
    }
    // A label's value may be empty, its element dropped from the accessibility tree: then
    // another label ends the search, as in replay.
    const label = (node: Node): boolean => /:$/u.test(squash(node.textContent ?? '').replace(/[\s*]+$/u, ''));
    const found = new Set<number>();
    for (const start of starts) {
      const labelled = label(start);
      let at: Node | null = start;
      search: while (at !== null) {
        for (let sibling = at.nextSibling; sibling !== null; sibling = sibling.nextSibling) {
          if (labelled && label(sibling)) break search;
          const inside = handles.flatMap((node, index) =>
            node !== null && sibling.contains(node) && !node.contains(start) ? [index] : [],
          );
          if (inside.length > 0) {
            for (const index of inside) found.add(index);
            break search;
          }
        }
        const parent: Node | null = at.parentNode;
        const cell = at === start && parent instanceof Element && ['td', 'th'].includes(parent.localName);
        at = parent !== null && (wrapper(parent) || cell) ? parent : null;
      }
    }
    return [...found];
  }, { named, name, handles });
  expect(hits.length, `exactly one ${what}`).toBe(1);
  return all[hits[0]];
}
"#;

const HELPER_KEYED_RECORD: &str = r#"/**
 * The one record of `records` whose key `holds` the key: cua's identity check, which keys a target
 * by its record and refuses a key two records hold. A row's key is the cell under `column` (or
 * its first cell); a definition's, its term; a list item's or an article's, its own first
 * heading or run of text.
 */
async function keyedRecord(
  page: Page,
  scope: Page | FrameLocator,
  records: Locator,
  column: string | null,
  holds: (text: string) => boolean,
  what: string,
): Promise<Locator> {
  const keyed: Locator[] = [];
  for (const record of await records.all()) {
    const row = await record.evaluate((element) => element.localName === 'tr' || element.getAttribute('role') === 'row');
    let key: string | null = null;
    if (row) {
      const cell = column === null ? byRole(record, 'cell').first() : await cellUnder(page, scope, record, column);
      key = await cell.innerText();
    } else if (column === null) {
      key = await record.evaluate((element) => {
        const is = (node: Element, tag: string, role: string) => node.localName === tag || node.getAttribute('role') === role;
        if (is(element, 'dd', 'definition')) {
          let term = element.previousElementSibling;
          while (term !== null && !is(term, 'dt', 'term')) term = term.previousElementSibling;
          return term === null ? null : (term as HTMLElement).innerText;
        }
        // Its own first heading or run of text, whichever comes first: never one inside a nested
        // record, a hidden element or an aria-hidden one.
        const nested = 'tr, li, article, dd, [role="row"], [role="listitem"], [role="article"], [role="definition"]';
        const walker = element.ownerDocument.createTreeWalker(element, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
          acceptNode: (node) =>
            node instanceof Element &&
            node !== element &&
            (node.matches(nested) || !node.checkVisibility({ visibilityProperty: true }) || node.getAttribute('aria-hidden') === 'true')
              ? NodeFilter.FILTER_REJECT
              : NodeFilter.FILTER_ACCEPT,
        });
        for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
          if (node instanceof Element && node.matches('h1, h2, h3, h4, h5, h6, [role="heading"]')) return (node as HTMLElement).innerText;
          if (node.nodeType === Node.TEXT_NODE && (node.textContent ?? '').trim() !== '') return node.textContent;
        }
        return null;
      });
    }
    if (key !== null && holds(squash(key))) keyed.push(record);
  }
  expect(keyed.length, `identity: exactly one record holds the key in ${what}`).toBe(1);
  return keyed[0];
}
"#;

const HELPER_OWN_TEXT: &str = r#"/** A run of text as cua reads it: the element's own text, without its children's. */
async function ownText(element: Locator): Promise<string> {
  return element.evaluate((node) =>
    [...node.childNodes].filter((child) => child.nodeType === Node.TEXT_NODE).map((child) => child.textContent ?? '').join(' '),
  );
}
"#;

const HELPER_TEXT_RUN: &str = r#"/**
 * The `n`-th run of text of `record` as cua's snapshot counts them: shown, not in a `<select>`,
 * a script or an aria-hidden element, and not blank once squashed. Its text, and the element
 * holding it.
 */
async function textRun(record: Locator, n: number): Promise<{ text: string; holder: Locator }> {
  const found = await record.evaluate((element, n) => {
    const walker = element.ownerDocument.createTreeWalker(element, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
      acceptNode: (node) =>
        node instanceof Element &&
        (node.matches('select, script, style, template') ||
          !node.checkVisibility({ visibilityProperty: true }) ||
          node.getAttribute('aria-hidden') === 'true')
          ? NodeFilter.FILTER_REJECT
          : NodeFilter.FILTER_ACCEPT,
    });
    let seen = 0;
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      if (node.nodeType !== Node.TEXT_NODE) continue;
      const text = (node.textContent ?? '').replace(/\s+/gu, ' ').trim();
      if (text === '') continue;
      if (seen === n) {
        const holder = node.parentElement;
        const path: number[] = [];
        for (let at = holder; at !== null && at !== element; at = at.parentElement) {
          path.unshift([...(at.parentElement?.children ?? [])].indexOf(at) + 1);
        }
        return { text, path };
      }
      seen += 1;
    }
    return null;
  }, n);
  expect(found, `run of text #${n} of its record`).not.toBeNull();
  const steps = found!.path.map((position) => `*[${position}]`).join('/');
  return { text: found!.text, holder: steps === '' ? record : record.locator(`xpath=./${steps}`) };
}
"#;

const HELPER_RECORDS: &str = r#"/** cua's records, the entries an identity check keys: table rows, list items, articles, definitions. */
function records(scope: Page | FrameLocator | Locator): Locator {
  return scope.getByRole('row').or(scope.getByRole('listitem')).or(scope.getByRole('article')).or(scope.getByRole('definition'));
}
"#;

const HELPER_CELL_UNDER: &str = r#"/**
 * The cell of `row` under the column headed `column`: the key cell of cua's identity check. The
 * header row is the one row of `scope` with that column header.
 */
async function cellUnder(page: Page, scope: Page | FrameLocator, row: Locator, column: string): Promise<Locator> {
  const header = scope
    .getByRole('row')
    .filter({ has: page.getByRole('columnheader', { name: column, exact: true }) })
    .filter({ hasNot: page.getByRole('row') });
  await expect(header, `one header row with a "${column}" column`).toHaveCount(1);
  const headers = (await header.getByRole('columnheader').allInnerTexts()).map(squash);
  const index = headers.indexOf(squash(column));
  expect(index, `column "${column}" among ${JSON.stringify(headers)}`).toBeGreaterThanOrEqual(0);
  return row.getByRole('cell').nth(index);
}
"#;
