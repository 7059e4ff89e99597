//! The capability rules beyond types. Every rule runs on every document and every finding is
//! reported, so one run of `cua validate` shows a reviewer everything wrong at once.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use regex::Regex;

use crate::capability::{
    Action, Capability, CommandCall, HttpCall, RecoveryScope, Remedy, Step, WaitCondition,
    WaitPolicy,
};
use crate::diagnostic::{DiagnosticCode, Problem};
use crate::policy::RiskLexicon;
use crate::predicate::{NodeQuery, NodeScope, Predicate};
use crate::source_map::DocPath;
use crate::target::{MatchMode, TargetDescriptor};
use crate::template::{Template, TemplatePart, TemplateRef, json_pointer_problem};
use crate::value::{ValueExpr, ValueType};
use crate::vocabulary::RiskTier;

/// What the rules need from outside the document.
#[derive(Debug, Clone, Default)]
pub struct ValidationConfig {
    /// The words that make a control elevated or irreversible; the same lexicon the policy
    /// engine classifies with, so that what validates is what policy will permit.
    pub lexicon: RiskLexicon,
}

impl Capability {
    /// Checks every rule with the built-in lexicon; empty means valid.
    pub fn validate(&self) -> Vec<Problem> {
        validate_capability(self, &ValidationConfig::default())
    }
}

/// Checks every rule; empty means valid.
pub fn validate_capability(capability: &Capability, config: &ValidationConfig) -> Vec<Problem> {
    let extracted_at = capability
        .steps
        .iter()
        .enumerate()
        .flat_map(|(index, step)| {
            step.action
                .writes_outputs()
                .into_iter()
                .map(move |into| (into.as_str(), index))
        })
        .fold(HashMap::new(), |mut first, (name, index)| {
            first.entry(name).or_insert(index);
            first
        });
    let mut checker = Checker {
        capability,
        config,
        extracted_at,
        problems: Vec::new(),
    };
    checker.run();
    checker.problems
}

/// Where a value sits decides whether a secret may appear there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SecretUse {
    /// Typed or selected into a control, or handed to a remedy capability.
    Allowed,
    /// Inside a predicate or identity check: evaluated against screen text, logged with it.
    Predicate,
    /// Anywhere else (outcome returns, input defaults): it would leave the process.
    Misplaced,
}

struct Checker<'a> {
    capability: &'a Capability,
    config: &'a ValidationConfig,
    /// The first step that extracts each output.
    extracted_at: HashMap<&'a str, usize>,
    problems: Vec<Problem>,
}

impl<'a> Checker<'a> {
    fn run(&mut self) {
        let root = DocPath::root();
        self.unique_ids();
        self.inputs(&root);
        self.outputs(&root);
        if self.capability.steps.is_empty() {
            self.report(
                DiagnosticCode::EmptyList,
                root.key("steps"),
                "the capability has no steps",
                "a capability does at least one thing; add the steps it takes",
            );
        }
        // The entrypoint is bound before any step has run: inputs only.
        self.url(
            &root.key("entrypoint").key("url"),
            &self.capability.entrypoint.url,
            Some(0),
        );
        for (index, step) in self.capability.steps.iter().enumerate() {
            self.step(&root.key("steps").index(index), index, step);
        }
        self.placeholders(&root);
        self.predicate(&root.key("checkpoint"), &self.capability.checkpoint, None);
        for (index, outcome) in self.capability.outcomes.iter().enumerate() {
            let path = root.key("outcomes").index(index);
            self.predicate(&path.key("detect"), &outcome.detect, None);
            for (name, value) in &outcome.returns {
                self.value(
                    &path.key("returns").key(name.as_str()),
                    value,
                    SecretUse::Misplaced,
                    None,
                );
            }
        }
        self.recovery(&root);
        self.budgets(&root);
    }

    /// A `{$…}` reference is read only where a template is: a URL (`entrypoint.url`, a
    /// `navigate`'s or an `http` call's), an `http` header, a target's name and anchor text, and
    /// a predicate query's `name` and `name_contains`. Anywhere else it
    /// is literal text that would be typed, matched or sent as it stands, so it is an error,
    /// never a surprise at replay. Free text (titles, descriptions, notes) is not checked.
    fn placeholders(&mut self, root: &DocPath) {
        let Ok(value) = serde_json::to_value(self.capability) else {
            return;
        };
        let mut found = Vec::new();
        literal_references(&value, root, &mut found);
        for (path, text) in found {
            self.report(
                DiagnosticCode::UnboundPlaceholder,
                path,
                format!("{text:?} holds a reference where none is bound; it would be used as literal text"),
                "write a value as a mapping, `value: {$input: name}` (unquoted in YAML), or move the \
                 reference into a URL or an http header, where templates are read",
            );
        }
    }

    fn unique_ids(&mut self) {
        let capability = self.capability;
        self.unique(
            "input",
            "inputs",
            "name",
            capability.inputs.iter().map(|input| input.name.as_str()),
        );
        self.unique(
            "output",
            "outputs",
            "name",
            capability.outputs.iter().map(|output| output.name.as_str()),
        );
        self.unique(
            "step",
            "steps",
            "id",
            capability.steps.iter().map(|step| step.id.as_str()),
        );
        self.unique(
            "outcome",
            "outcomes",
            "code",
            capability
                .outcomes
                .iter()
                .map(|outcome| outcome.code.as_str()),
        );
        self.unique(
            "recovery rule",
            "recovery",
            "id",
            capability.recovery.iter().map(|rule| rule.id.as_str()),
        );
    }

    fn unique<'n>(
        &mut self,
        what: &str,
        list: &str,
        field: &str,
        names: impl Iterator<Item = &'n str>,
    ) {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for (index, name) in names.enumerate() {
            if let Some(first) = seen.get(name) {
                self.report(
                    DiagnosticCode::DuplicateId,
                    DocPath::root().key(list).index(index).key(field),
                    format!("{what} `{name}` is declared twice (first at {list}[{first}])"),
                    format!("give every {what} a distinct {field}"),
                );
            } else {
                seen.insert(name, index);
            }
        }
    }

    fn inputs(&mut self, root: &DocPath) {
        let mut idempotency_key: Option<&str> = None;
        for (index, input) in self.capability.inputs.iter().enumerate() {
            let path = root.key("inputs").index(index);
            if input.idempotency_key {
                if let Some(first) = idempotency_key {
                    self.report(
                        DiagnosticCode::InvalidInputSpec,
                        path.key("idempotency_key"),
                        format!(
                            "inputs `{first}` and `{}` both carry the idempotency key",
                            input.name
                        ),
                        "a run has one idempotency key: mark one input",
                    );
                }
                idempotency_key.get_or_insert(input.name.as_str());
                if input.value_type != ValueType::String || input.sensitive {
                    self.report(
                        DiagnosticCode::InvalidInputSpec,
                        path.key("idempotency_key"),
                        format!(
                            "input `{}` carries the idempotency key but is not a plain string",
                            input.name
                        ),
                        "an idempotency key is a non-sensitive `type: string` input (the engine \
                         fills it with letters, digits and dashes)",
                    );
                }
            }
            let pattern = input.pattern.as_ref().and_then(|pattern| {
                self.regex(&path.key("pattern"), pattern)
                    .and_then(|_| Regex::new(&format!("^(?:{pattern})$")).ok())
            });
            match (input.value_type, input.allowed.is_empty()) {
                (ValueType::Enum, true) => self.report(
                    DiagnosticCode::InvalidInputSpec,
                    path.key("type"),
                    format!("input `{}` is an enum with no `enum` values", input.name),
                    "list the allowed values under `enum`",
                ),
                (ValueType::Enum, false) | (_, true) => {}
                (other, false) => self.report(
                    DiagnosticCode::InvalidInputSpec,
                    path.key("enum"),
                    format!(
                        "input `{}` lists `enum` values but has type {}",
                        input.name,
                        other.as_str()
                    ),
                    "set `type: enum`, or drop the `enum` list",
                ),
            }
            for (field, value) in [("default", &input.default), ("example", &input.example)] {
                let Some(value) = value else { continue };
                let field_path = path.key(field);
                let Some(text) = value.literal_text() else {
                    self.value(&field_path, value, SecretUse::Misplaced, None);
                    self.report(
                        DiagnosticCode::InvalidInputSpec,
                        field_path,
                        format!(
                            "the {field} of input `{}` is a reference, not a literal",
                            input.name
                        ),
                        format!("write the {field} as a literal value"),
                    );
                    continue;
                };
                if pattern
                    .as_ref()
                    .is_some_and(|pattern| !pattern.is_match(&text))
                {
                    self.report(
                        DiagnosticCode::InvalidInputSpec,
                        field_path.clone(),
                        format!(
                            "the {field} {value} of input `{}` does not match its pattern",
                            input.name
                        ),
                        format!(
                            "make the {field} match `{}` (the whole value must match)",
                            input.pattern.as_deref().unwrap_or_default()
                        ),
                    );
                }
                if !input.allowed.is_empty() && !input.allowed.contains(&text) {
                    self.report(
                        DiagnosticCode::InvalidInputSpec,
                        field_path,
                        format!(
                            "the {field} {value} of input `{}` is not one of its `enum` values",
                            input.name
                        ),
                        format!("use one of: {}", input.allowed.join(", ")),
                    );
                }
            }
        }
    }

    fn outputs(&mut self, root: &DocPath) {
        for (index, output) in self.capability.outputs.iter().enumerate() {
            let path = root.key("outputs").index(index).key("source").key("step");
            match self.capability.step(output.source.step.as_str()) {
                None => self.report(
                    DiagnosticCode::UnknownStep,
                    path,
                    format!(
                        "output `{}` names source step `{}`, which does not exist",
                        output.name, output.source.step
                    ),
                    format!(
                        "name the extract step that produces it; steps are: {}",
                        self.step_ids()
                    ),
                ),
                Some(step) => {
                    let extracts_it = step.action.writes_outputs().contains(&&output.name);
                    if !extracts_it {
                        self.report(
                            DiagnosticCode::OutputSourceMismatch,
                            path,
                            format!(
                                "output `{}` names source step `{}`, which does not extract into it",
                                output.name, output.source.step
                            ),
                            format!("point `source.step` at the step with `type: extract, into: {}` (or the http or command step that extracts it)", output.name),
                        );
                    }
                }
            }
        }
    }

    fn step(&mut self, path: &DocPath, index: usize, step: &'a Step) {
        self.action(&path.key("action"), &step.action, Some(index));
        if let Some(precondition) = &step.precondition {
            self.predicate(&path.key("precondition"), precondition, Some(index));
        }
        if let Some(postcondition) = &step.postcondition {
            self.predicate(&path.key("postcondition"), postcondition, Some(index));
        }
        self.wait(&path.key("wait"), &step.wait, index);
        self.declared_risk(path, step);
        self.visual(path, index, step);
        self.reconcile(path, index, step);
    }

    /// An irreversible step declares how to find out, after a crash between its write-ahead
    /// intent and its verdict, whether it happened; the reconciliation reads only inputs and
    /// literals (the outputs of a run that died are gone, and a secret never leaves its step).
    fn reconcile(&mut self, path: &DocPath, index: usize, step: &'a Step) {
        let Some(reconcile) = &step.reconcile else {
            if step.risk == RiskTier::Irreversible {
                self.report(
                    DiagnosticCode::ReconcileRequired,
                    path.key("risk"),
                    format!("irreversible step `{}` declares no `reconcile`", step.id),
                    "a run killed between this step's dispatch and its verdict leaves the mutation \
                     in doubt, and it is never dispatched again blindly: name a read-only \
                     capability under `reconcile` (`capability`, `inputs`, `not_done`) that \
                     answers whether it happened, e.g. by looking up the client reference the \
                     step passed (an input with `idempotency_key: true`)",
                );
            }
            return;
        };
        let path = path.key("reconcile");
        if reconcile.capability.id() == &self.capability.id {
            self.report(
                DiagnosticCode::ReconcileInvalid,
                path.key("capability"),
                format!("step `{}` reconciles through its own capability", step.id),
                "name a separate read-only capability that looks the effect up",
            );
        }
        if reconcile.not_done.is_empty() {
            self.report(
                DiagnosticCode::EmptyList,
                path.key("not_done"),
                format!(
                    "the reconciliation of step `{}` names no `not_done` outcome",
                    step.id
                ),
                "list the reconciling capability's business outcome(s) that mean the mutation \
                 did not happen; without one a reconciliation can never allow a retry",
            );
        }
        for (name, value) in &reconcile.inputs {
            let value_path = path.key("inputs").key(name.as_str());
            match value {
                ValueExpr::Output(_) | ValueExpr::Secret(_) => self.report(
                    DiagnosticCode::ReconcileInvalid,
                    value_path,
                    format!(
                        "the reconciliation of step `{}` passes {} as `{name}`",
                        step.id,
                        if value.secret().is_some() {
                            "a secret"
                        } else {
                            "an output"
                        }
                    ),
                    "pass `{$input: …}` or a literal: a reconciliation runs after the run that \
                     extracted outputs may be gone, and secrets are never passed on",
                ),
                _ => self.value(&value_path, value, SecretUse::Misplaced, Some(index)),
            }
        }
    }

    /// A `screenshot` or `click_at` names its route explicitly (visual routes are never
    /// implicit), and a `click_at` claims the observation of an earlier `screenshot` that no
    /// other `click_at` claims: a ref is single-use.
    fn visual(&mut self, path: &DocPath, index: usize, step: &'a Step) {
        if let Some(via) = &step.via
            && !crate::capability::ROUTE_NAMES.contains(&via.as_str())
        {
            self.report(
                DiagnosticCode::InvalidValue,
                path.key("via"),
                format!("`via: {via}` names no route"),
                format!("use one of: {}", crate::capability::ROUTE_NAMES.join(", ")),
            );
        }
        if !matches!(step.action, Action::Screenshot {} | Action::ClickAt { .. }) {
            return;
        }
        if step.via.is_none() {
            self.report(
                DiagnosticCode::ExplicitRouteRequired,
                path.key("via"),
                format!(
                    "step `{}` is a `{}` step with no explicit route",
                    step.id,
                    step.action.kind().as_str()
                ),
                "add `via: visual`; pixels and coordinates are never chosen implicitly",
            );
        }
        let Action::ClickAt { observation, .. } = &step.action else {
            return;
        };
        let at = path.key("action").key("observation");
        let earlier = self.capability.steps[..index]
            .iter()
            .find(|candidate| candidate.id == *observation);
        match earlier {
            Some(source) if matches!(source.action, Action::Screenshot {}) => {}
            Some(_) => self.report(
                DiagnosticCode::UnknownStep,
                at,
                format!("`click_at` claims the observation of step `{observation}`, which is not a `screenshot` step"),
                "name an earlier `screenshot` step; only a screenshot issues an observation ref",
            ),
            None => self.report(
                DiagnosticCode::UnknownStep,
                at,
                format!("`click_at` claims the observation of step `{observation}`, which is not an earlier step"),
                "take the screenshot in an earlier step and name it here",
            ),
        }
        // Between the screenshot and the click only reads may run: anything else changes the
        // screen the coordinates were read from (replay refuses such a claim anyway).
        if let Some(start) = self.capability.steps[..index]
            .iter()
            .position(|candidate| candidate.id == *observation)
            && let Some(actor) = self.capability.steps[start + 1..index]
                .iter()
                .find(|between| {
                    !matches!(
                        between.action,
                        Action::Assert { .. }
                            | Action::Extract { .. }
                            | Action::WaitFor { .. }
                            | Action::Screenshot {}
                    )
                })
        {
            self.report(
                DiagnosticCode::ObservationStale,
                path.key("action").key("observation"),
                format!(
                    "step `{}` (`{}`) acts between the screenshot `{observation}` and this click",
                    actor.id,
                    actor.action.kind().as_str()
                ),
                "take the screenshot right before the click; only reads may run in between",
            );
        }
        let claimed_before = self.capability.steps[..index].iter().any(|other| {
            matches!(&other.action, Action::ClickAt { observation: claimed, .. } if claimed == observation)
        });
        if claimed_before {
            self.report(
                DiagnosticCode::ObservationReused,
                path.key("action").key("observation"),
                format!("the observation of step `{observation}` is claimed by an earlier `click_at`"),
                "an observation ref is single-use: take a new screenshot before each coordinate click",
            );
        }
    }

    fn action(&mut self, path: &DocPath, action: &Action, step: Option<usize>) {
        let kind = action.kind();
        if kind.is_human_only() {
            self.report(
                DiagnosticCode::RawInputInArtifact,
                path.key("type"),
                "a `raw_input` action is in an artifact",
                "raw input exists only for a human operator's console; describe the control \
                 semantically with click, type or select instead",
            );
        } else if !self.capability.policy.allowed_actions.contains(&kind) {
            self.report(
                DiagnosticCode::ActionOutsidePolicy,
                path.key("type"),
                format!(
                    "action `{}` is not in this capability's `policy.allowed_actions`",
                    kind.as_str()
                ),
                format!(
                    "add `{}` to policy.allowed_actions, or do not use it",
                    kind.as_str()
                ),
            );
        }
        if let Some(target) = action.target() {
            self.target(&path.key("target"), target, step);
        }
        match action {
            Action::Type { value, .. } | Action::Select { value, .. } => {
                self.value(&path.key("value"), value, SecretUse::Allowed, step);
            }
            Action::Extract { into, .. } => {
                if self.capability.output(into.as_str()).is_none() {
                    self.report(
                        DiagnosticCode::UndeclaredOutput,
                        path.key("into"),
                        format!("extract into `{into}`, which is not a declared output"),
                        format!(
                            "declare `{into}` under `outputs`{}",
                            declared_list(self.capability.outputs.iter().map(|o| o.name.as_str()))
                        ),
                    );
                }
            }
            Action::WaitFor { until, .. } => self.predicate(&path.key("until"), until, step),
            Action::Assert { that } => self.predicate(&path.key("that"), that, step),
            Action::Http(call) => self.http(path, call, step),
            Action::Command(call) => self.command(path, call, step),
            Action::Navigate { url } => self.url(&path.key("url"), url, step),
            Action::Click { .. }
            | Action::PressKey { .. }
            | Action::Reload {}
            | Action::Scroll { .. }
            | Action::RawInput { .. }
            | Action::Screenshot {}
            | Action::ClickAt { .. } => {}
        }
    }

    /// A URL template (an `http` call's, a `navigate`'s, the entrypoint's): references only
    /// after a fixed origin, never a secret (URLs are recorded in evidence).
    fn url(&mut self, path: &DocPath, url: &str, step: Option<usize>) {
        match Template::parse(url) {
            Err(problem) => self.report(
                DiagnosticCode::InvalidValue,
                path.clone(),
                format!("the url is not a template: {problem}"),
                "write references as `{$input: name}` or `{$output: name}`",
            ),
            Ok(template) => {
                let prefix = template.literal_prefix();
                // The origin ends at the first `/` after it: a value before that could choose
                // the host (`{base_url}{$input: x}` with `.evil.example`).
                let fixed_origin = template.references().next().is_none()
                    || prefix.starts_with("{base_url}/")
                    || ["http://", "https://"].iter().any(|scheme| {
                        prefix
                            .strip_prefix(scheme)
                            .and_then(|rest| rest.split_once('/'))
                            .is_some_and(|(host, _)| !host.is_empty())
                    });
                if !fixed_origin {
                    self.report(
                        DiagnosticCode::InvalidValue,
                        path.clone(),
                        format!("the url {url:?} does not fix its origin before its first reference"),
                        "start it with `{base_url}/` (or a literal `http://host/`): a bound value may fill a path or a query, never choose the server",
                    );
                }
                self.template(path, &template, SecretUse::Misplaced, step);
                for reference in template.references() {
                    // A secret is already reported as misplaced by `template`.
                    let sensitive = !matches!(reference, TemplateRef::Secret(_))
                        && self.capability.is_sensitive_reference(reference);
                    if sensitive {
                        self.report(
                            DiagnosticCode::SecretMisplaced,
                            path.clone(),
                            "a sensitive value is placed in a URL, which evidence and logs record",
                            "send it in an http body or header, or type it into a control",
                        );
                    }
                }
            }
        }
    }

    fn http(&mut self, path: &DocPath, call: &HttpCall, step: Option<usize>) {
        self.url(&path.key("url"), &call.url, step);
        for (name, value) in &call.headers {
            let header_path = path.key("headers").key(name);
            let valid_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte));
            if !valid_name {
                self.report(
                    DiagnosticCode::InvalidValue,
                    header_path.clone(),
                    format!("{name:?} is not an HTTP header name"),
                    "use a token such as `authorization` or `x-request-id`",
                );
            }
            match Template::parse(value) {
                Ok(template) => self.template(&header_path, &template, SecretUse::Allowed, step),
                Err(problem) => self.report(
                    DiagnosticCode::InvalidValue,
                    header_path,
                    format!("header `{name}` is not a template: {problem}"),
                    "write references as `{$secret: name}`, `{$input: name}` or `{$output: name}`",
                ),
            }
        }
        if let Some(body) = &call.body {
            for (name, value) in body {
                self.value(&path.key("body").key(name), value, SecretUse::Allowed, step);
            }
        }
        if call.expect_status.is_empty() {
            self.report(
                DiagnosticCode::EmptyList,
                path.key("expect_status"),
                "`expect_status` is empty, so no response could succeed",
                "list the statuses that mean success, e.g. [200] or [201]",
            );
        }
        for (index, status) in call.expect_status.iter().enumerate() {
            if !(100..=599).contains(status) {
                self.report(
                    DiagnosticCode::InvalidValue,
                    path.key("expect_status").index(index),
                    format!("{status} is not an HTTP status"),
                    "statuses are 100 to 599",
                );
            }
        }
        self.extractions(&path.key("extract"), &call.extract);
    }

    fn command(&mut self, path: &DocPath, call: &CommandCall, step: Option<usize>) {
        let plain = !call.executable.is_empty()
            && call
                .executable
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !plain {
            self.report(
                DiagnosticCode::InvalidValue,
                path.key("executable"),
                format!(
                    "executable {:?} is not a declared command name",
                    call.executable
                ),
                "name an entry of the policy's `commands.allowed`; a step never names a path",
            );
        }
        for (index, value) in call.args.iter().enumerate() {
            if value.secret().is_some() {
                self.report(
                    DiagnosticCode::SecretMisplaced,
                    path.key("args").index(index),
                    "a secret is passed on a command line",
                    "every process on the host can read another's argv; a command may not take a secret",
                );
            } else {
                self.value(
                    &path.key("args").index(index),
                    value,
                    SecretUse::Allowed,
                    step,
                );
            }
        }
        if call.expect_exit.is_empty() {
            self.report(
                DiagnosticCode::EmptyList,
                path.key("expect_exit"),
                "`expect_exit` is empty, so no run could succeed",
                "list the exit codes that mean success, e.g. [0]",
            );
        }
        self.extractions(&path.key("extract"), &call.extract);
    }

    fn template(
        &mut self,
        path: &DocPath,
        template: &Template,
        secrets: SecretUse,
        step: Option<usize>,
    ) {
        for reference in template.references() {
            let value = match reference {
                TemplateRef::Input(name) => ValueExpr::Input(name.clone()),
                TemplateRef::Output(name) => ValueExpr::Output(name.clone()),
                TemplateRef::Secret(name) => ValueExpr::Secret(name.clone()),
            };
            self.value(path, &value, secrets, step);
        }
    }

    fn extractions(
        &mut self,
        path: &DocPath,
        extract: &std::collections::BTreeMap<crate::identifiers::OutputName, String>,
    ) {
        for (name, pointer) in extract {
            let entry = path.key(name.as_str());
            if self.capability.output(name.as_str()).is_none() {
                self.report(
                    DiagnosticCode::UndeclaredOutput,
                    entry.clone(),
                    format!("extract into `{name}`, which is not a declared output"),
                    format!(
                        "declare `{name}` under `outputs`{}",
                        declared_list(self.capability.outputs.iter().map(|o| o.name.as_str()))
                    ),
                );
            }
            if let Some(problem) = json_pointer_problem(pointer) {
                self.report(
                    DiagnosticCode::InvalidValue,
                    entry,
                    problem,
                    "a JSON pointer reads `/accounts/0/balance` (RFC 6901)",
                );
            }
        }
    }

    fn wait(&mut self, path: &DocPath, wait: &WaitPolicy, step: usize) {
        match (wait.condition, &wait.until) {
            (WaitCondition::Predicate, None) => self.report(
                DiagnosticCode::WaitUntilMismatch,
                path.key("for"),
                "`wait: {for: predicate}` has no `until`",
                "say what to wait for with `until: <predicate>`, or wait for snapshot_stable or navigation",
            ),
            (WaitCondition::Predicate, Some(until)) => self.predicate(&path.key("until"), until, Some(step)),
            (_, Some(_)) => self.report(
                DiagnosticCode::WaitUntilMismatch,
                path.key("until"),
                "`until` is given but the wait is not `for: predicate`",
                "set `for: predicate`, or drop `until`",
            ),
            (_, None) => {}
        }
    }

    fn declared_risk(&mut self, path: &DocPath, step: &Step) {
        if step.risk == RiskTier::Irreversible && step.postcondition.is_none() {
            self.report(
                DiagnosticCode::UnverifiedIrreversible,
                path.key("risk"),
                format!("irreversible step `{}` has no postcondition", step.id),
                "declare the observable effect (a confirmation number, a changed balance) so the \
                 effect is confirmed, never assumed from a dispatch",
            );
        }
        if step.action.kind().is_read_only() {
            return;
        }
        if let Some(message) = step.action.accepts_confirm() {
            self.confirm_risk(path, step, message);
        }
        let Some(target) = step.action.target() else {
            return;
        };
        let Some(name) = target
            .name
            .as_ref()
            .filter(|name| name.match_mode != MatchMode::Regex)
        else {
            return;
        };
        let Some((tier, phrase)) = self.config.lexicon.classify(&target.role, &name.value) else {
            return;
        };
        if step.risk < tier {
            self.report(
                DiagnosticCode::UndeclaredRisk,
                path.key("action").key("target").key("name").key("value"),
                format!(
                    "{} {:?} reads as {} (lexicon: {phrase:?}) but step `{}` declares risk {}",
                    target.role,
                    name.value,
                    tier.as_str(),
                    step.id,
                    step.risk.as_str()
                ),
                format!(
                    "declare `risk: {}` on the step; policy classifies by the control's name and \
                     refuses what the artifact did not declare",
                    tier.as_str()
                ),
            );
        }
    }

    /// A click that accepts a `confirm()`: the message is a literal the page must show, and
    /// saying OK to it is at least elevated, more when the lexicon reads it so (the same rule
    /// the policy applies at dispatch).
    fn confirm_risk(&mut self, path: &DocPath, step: &Step, message: &str) {
        let at = path.key("action").key("accept_confirm");
        if message.trim().is_empty() || message.contains("{$") {
            self.report(
                DiagnosticCode::InvalidValue,
                at,
                format!(
                    "step `{}` accepts a confirm() with no literal message",
                    step.id
                ),
                "write the dialog's message exactly as the page shows it; only a confirm with \
                 that message is answered OK",
            );
            return;
        }
        let (tier, why) = match self.config.lexicon.classify("button", message) {
            Some((tier, phrase)) if tier > RiskTier::Elevated => {
                (tier, format!("the lexicon reads {phrase:?} in it"))
            }
            _ => (
                RiskTier::Elevated,
                "answering OK to a confirm() is never safe".to_owned(),
            ),
        };
        if step.risk < tier {
            self.report(
                DiagnosticCode::UndeclaredRisk,
                at,
                format!(
                    "step `{}` accepts the confirm() {message:?}, which is {} ({why}), but declares risk {}",
                    step.id,
                    tier.as_str(),
                    step.risk.as_str()
                ),
                format!(
                    "declare `risk: {}` on the step; policy classifies the dialog's message and \
                     refuses what the artifact did not declare",
                    tier.as_str()
                ),
            );
        }
    }

    fn recovery(&mut self, root: &DocPath) {
        for (index, rule) in self.capability.recovery.iter().enumerate() {
            let path = root.key("recovery").index(index);
            self.predicate(&path.key("detect"), &rule.detect, None);
            if rule.remedy.is_empty() {
                self.report(
                    DiagnosticCode::EmptyList,
                    path.key("remedy"),
                    format!("recovery rule `{}` has no remedy", rule.id),
                    "list at least one remedy action, or remove the rule",
                );
            }
            for (position, remedy) in rule.remedy.iter().enumerate() {
                let remedy_path = path.key("remedy").index(position);
                match remedy {
                    Remedy::Action(action) => self.action(&remedy_path, action, None),
                    Remedy::RunCapability(run) => {
                        if run.capability.id() == &self.capability.id {
                            self.report(
                                DiagnosticCode::SelfRemedy,
                                remedy_path.key("capability"),
                                format!("recovery rule `{}` runs this capability as its own remedy", rule.id),
                                "a remedy must be a different capability (re-authentication, for one)",
                            );
                        }
                        for (name, value) in &run.inputs {
                            self.value(
                                &remedy_path.key("inputs").key(name.as_str()),
                                value,
                                SecretUse::Allowed,
                                None,
                            );
                        }
                    }
                }
            }
            if !(1..=10).contains(&rule.max_attempts) {
                self.report(
                    DiagnosticCode::AttemptsOutOfRange,
                    path.key("max_attempts"),
                    format!("recovery rule `{}` allows {} attempts", rule.id, rule.max_attempts),
                    "max_attempts is 1 to 10: recovery is bounded, and a rule that never runs is not a rule",
                );
            }
            match (rule.scope, rule.steps.is_empty()) {
                (RecoveryScope::NamedSteps, true) => self.report(
                    DiagnosticCode::RecoveryScopeMismatch,
                    path.key("scope"),
                    format!(
                        "recovery rule `{}` has `scope: named_steps` but names no steps",
                        rule.id
                    ),
                    "list the step ids under `steps`, or use `scope: any_step`",
                ),
                (RecoveryScope::AnyStep, false) => self.report(
                    DiagnosticCode::RecoveryScopeMismatch,
                    path.key("steps"),
                    format!(
                        "recovery rule `{}` names steps but has `scope: any_step`",
                        rule.id
                    ),
                    "set `scope: named_steps`, or drop `steps`",
                ),
                _ => {}
            }
            for (position, step) in rule.steps.iter().enumerate() {
                if self.capability.step(step.as_str()).is_none() {
                    self.report(
                        DiagnosticCode::UnknownStep,
                        path.key("steps").index(position),
                        format!(
                            "recovery rule `{}` names step `{step}`, which does not exist",
                            rule.id
                        ),
                        format!("steps are: {}", self.step_ids()),
                    );
                }
            }
        }
    }

    fn budgets(&mut self, root: &DocPath) {
        let steps = self.capability.steps.len();
        let max_steps = self.capability.policy.max_steps;
        if u32::try_from(steps).map_or(true, |steps| steps > max_steps) {
            self.report(
                DiagnosticCode::StepBudgetExceeded,
                root.key("policy").key("max_steps"),
                format!("the capability has {steps} steps but `policy.max_steps` is {max_steps}"),
                "raise policy.max_steps (within the global budget) or split the capability",
            );
        }
    }

    fn target(&mut self, path: &DocPath, target: &TargetDescriptor, step: Option<usize>) {
        self.role(&path.key("role"), &target.role);
        if let Some(name) = &target.name {
            self.target_text(
                &path.key("name").key("value"),
                &name.value,
                name.match_mode,
                step,
            );
            if is_blank(&name.value)
                && matches!(name.match_mode, MatchMode::Normalized | MatchMode::Contains)
            {
                self.report(
                    DiagnosticCode::InvalidValue,
                    path.key("name").key("value"),
                    format!("an empty name with `match: {}` matches nothing", name.match_mode.as_str()),
                    "an unnamed control is `name: {value: \"\", match: exact}` (the node has no accessible \
                     name); better still, find it through its label with `anchor: {relation: row_of, text: …}`",
                );
            }
        }
        if let Some(anchor) = &target.anchor
            && is_blank(&anchor.text)
        {
            self.report(
                DiagnosticCode::InvalidValue,
                path.key("anchor").key("text"),
                "an anchor with empty text anchors nothing",
                "name the text the target sits beside, e.g. `anchor: {relation: row_of, text: Amount}`",
            );
        }
        if let Some(anchor) = &target.anchor {
            self.target_text(
                &path.key("anchor").key("text"),
                &anchor.text,
                anchor.match_mode,
                step,
            );
        }
        if let Some(scope) = &target.scope {
            self.scope(&path.key("scope"), scope);
        }
        if target.ordinal.is_some() && target.identity.is_none() {
            self.report(
                DiagnosticCode::OrdinalWithoutIdentity,
                path.key("ordinal"),
                format!(
                    "the target `{}` is chosen by position but has no identity check",
                    target.describe()
                ),
                "add `identity: {column: <key column header>, equals: {$input: <key input>}}` so \
                 replay refuses a row that belongs to someone else",
            );
        }
        if let Some(identity) = &target.identity {
            let identity_path = path.key("identity");
            if let Some(column) = &identity.column {
                self.css(&identity_path.key("column"), column);
            }
            self.value(
                &identity_path.key("equals"),
                &identity.equals,
                SecretUse::Predicate,
                step,
            );
            if let Some(text) = identity
                .equals
                .literal_text()
                .filter(|_| identity.match_mode == MatchMode::Regex)
            {
                self.regex(&identity_path.key("equals"), &text);
            }
        }
    }

    fn role(&mut self, path: &DocPath, role: &str) {
        if looks_like_css(role) {
            self.css(path, role);
        } else if !is_role_name(role) {
            self.report(
                DiagnosticCode::InvalidValue,
                path.clone(),
                format!("role {role:?} is not a role name"),
                "use a lowercase accessibility role such as textbox, button, link, cell, combobox",
            );
        }
    }

    /// A target's name or anchor text: a template whose references (inputs and outputs, never
    /// a secret, which would be compared with the screen) are bound literally at resolution.
    fn target_text(&mut self, path: &DocPath, text: &str, mode: MatchMode, step: Option<usize>) {
        let template = match Template::parse(text) {
            Ok(template) => template,
            Err(problem) => {
                self.report(
                    DiagnosticCode::InvalidValue,
                    path.clone(),
                    format!("the text is not a template: {problem}"),
                    "write references as `{$input: name}` or `{$output: name}`",
                );
                return;
            }
        };
        self.template(path, &template, SecretUse::Predicate, step);
        // A bound value is matched literally (escaped in a regex), so any value stands for it.
        let literal: String = template
            .parts()
            .iter()
            .map(|part| match part {
                TemplatePart::Text(text) => text.as_str(),
                TemplatePart::Ref(_) => "x",
            })
            .collect();
        self.text_match(path, &literal, mode);
    }

    fn text_match(&mut self, path: &DocPath, text: &str, mode: MatchMode) {
        if mode == MatchMode::Regex {
            self.regex(path, text);
        } else {
            self.css(path, text);
        }
    }

    fn scope(&mut self, path: &DocPath, scope: &NodeScope) {
        if let Some(frame) = &scope.frame {
            self.css(&path.key("frame"), frame);
        }
        if let Some(region) = &scope.region {
            self.css(&path.key("region"), region);
        }
    }

    fn query(&mut self, path: &DocPath, query: &NodeQuery, step: Option<usize>) {
        if let Some(role) = &query.role {
            self.role(&path.key("role"), role);
        }
        // A query's name may use the run's values, bound literally when it is evaluated.
        if let Some(name) = &query.name {
            self.target_text(&path.key("name"), name, MatchMode::Exact, step);
        }
        if let Some(name) = &query.name_contains {
            self.target_text(&path.key("name_contains"), name, MatchMode::Contains, step);
        }
        if let Some(pattern) = &query.name_matches {
            self.regex(&path.key("name_matches"), pattern);
        }
        if let Some(scope) = &query.scope {
            self.scope(&path.key("scope"), scope);
        }
    }

    fn predicate(&mut self, path: &DocPath, predicate: &Predicate, step: Option<usize>) {
        match predicate {
            Predicate::NodeExists { query, .. } | Predicate::NodeAbsent { query } => {
                self.query(&path.key("query"), query, step)
            }
            Predicate::NodeHasValue { query, value } => {
                self.query(&path.key("query"), query, step);
                self.value(&path.key("value"), value, SecretUse::Predicate, step);
            }
            Predicate::TextPresent { value } | Predicate::TextAbsent { value } => {
                self.value(&path.key("value"), value, SecretUse::Predicate, step);
            }
            Predicate::MoneyPresent { value, query } => {
                self.query(&path.key("query"), query, step);
                self.value(&path.key("value"), value, SecretUse::Predicate, step);
            }
            Predicate::UrlMatches { pattern } => {
                self.regex(&path.key("pattern"), pattern);
            }
            Predicate::HttpStatusIn { codes } => {
                if codes.is_empty() {
                    self.report(
                        DiagnosticCode::EmptyList,
                        path.key("codes"),
                        "`http_status_in` lists no status codes",
                        "list the HTTP statuses to match, e.g. [502, 503, 504]",
                    );
                }
                for (index, code) in codes.iter().enumerate() {
                    if !(100..=599).contains(code) {
                        self.report(
                            DiagnosticCode::InvalidValue,
                            path.key("codes").index(index),
                            format!("{code} is not an HTTP status"),
                            "HTTP statuses are 100 to 599",
                        );
                    }
                }
            }
            Predicate::AllOf { of } | Predicate::AnyOf { of } => {
                if of.is_empty() {
                    self.report(
                        DiagnosticCode::EmptyList,
                        path.key("of"),
                        format!("`{}` combines no predicates", predicate.kind()),
                        "an empty all_of always holds and an empty any_of never does; list what you mean",
                    );
                }
                for (index, inner) in of.iter().enumerate() {
                    self.predicate(&path.key("of").index(index), inner, step);
                }
            }
            Predicate::Not { of } => self.predicate(&path.key("of"), of, step),
        }
    }

    fn value(
        &mut self,
        path: &DocPath,
        value: &ValueExpr,
        secrets: SecretUse,
        step: Option<usize>,
    ) {
        match value {
            ValueExpr::Input(name) => {
                if self.capability.input(name.as_str()).is_none() {
                    self.report(
                        DiagnosticCode::UndeclaredInput,
                        path.key("$input"),
                        format!("`$input: {name}` names no declared input"),
                        format!("declare `{name}` under `inputs`{}", declared_list(self.capability.inputs.iter().map(|i| i.name.as_str()))),
                    );
                }
            }
            ValueExpr::Output(name) => {
                if self.capability.output(name.as_str()).is_none() {
                    self.report(
                        DiagnosticCode::UndeclaredOutput,
                        path.key("$output"),
                        format!("`$output: {name}` names no declared output"),
                        format!("declare `{name}` under `outputs`{}", declared_list(self.capability.outputs.iter().map(|o| o.name.as_str()))),
                    );
                } else if let Some(step) = step {
                    let extracted = self.extracted_at.get(name.as_str()).copied();
                    if extracted.is_none_or(|extracted| extracted >= step) {
                        self.report(
                            DiagnosticCode::OutputBeforeExtract,
                            path.key("$output"),
                            format!("`$output: {name}` is used before any step extracts it"),
                            "an output can be read only by steps after the extract that fills it",
                        );
                    }
                }
            }
            ValueExpr::Secret(name) => match secrets {
                SecretUse::Allowed => {}
                SecretUse::Predicate => self.report(
                    DiagnosticCode::SecretInPredicate,
                    path.key("$secret"),
                    format!("secret `{name}` is used in a predicate"),
                    "predicates compare against screen text and are logged with it; a secret is \
                     resolved only when typed into a control",
                ),
                SecretUse::Misplaced => self.report(
                    DiagnosticCode::SecretMisplaced,
                    path.key("$secret"),
                    format!("secret `{name}` is used where its value would leave the process"),
                    "secrets may only be typed or selected into a control, sent in an http header or body, or passed to a remedy capability",
                ),
            },
            ValueExpr::String(_) | ValueExpr::Integer(_) | ValueExpr::Number(_) | ValueExpr::Boolean(_) => {}
        }
    }

    fn regex(&mut self, path: &DocPath, pattern: &str) -> Option<Regex> {
        match Regex::new(pattern) {
            Ok(regex) => Some(regex),
            Err(error) => {
                let reason = error
                    .to_string()
                    .lines()
                    .last()
                    .unwrap_or_default()
                    .trim()
                    .to_owned();
                self.report(
                    DiagnosticCode::InvalidRegex,
                    path.clone(),
                    format!("the regex {pattern:?} does not compile: {}", reason.trim_start_matches("error: ")),
                    "regexes use the Rust `regex` crate's syntax (no look-around, no backreferences)",
                );
                None
            }
        }
    }

    fn css(&mut self, path: &DocPath, text: &str) {
        if looks_like_css(text) {
            self.report(
                DiagnosticCode::CssOutsideHints,
                path.clone(),
                format!("{text:?} looks like a CSS selector"),
                "describe the control by role, accessible name, anchor and scope; CSS may appear \
                 only under `hints.css`, an unverified cache",
            );
        }
    }

    fn step_ids(&self) -> String {
        self.capability
            .steps
            .iter()
            .map(|step| step.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn report(
        &mut self,
        code: DiagnosticCode,
        path: DocPath,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        self.problems.push(Problem::new(code, path, message, help));
    }
}

/// Whether a name is empty once whitespace and a trailing `:` or `*` are dropped, as the
/// resolver normalizes names.
fn is_blank(text: &str) -> bool {
    text.trim().trim_end_matches([':', '*']).trim().is_empty()
}

/// Keys whose strings are templates, and keys whose strings are free text.
const TEMPLATE_KEYS: [&str; 2] = ["url", "headers"];
const FREE_TEXT_KEYS: [&str; 5] = ["title", "description", "notes", "review_notes", "summary"];

/// Every string under `value`, outside template and free-text keys, that holds `{$`. A target's
/// `name.value` and `anchor.text` are templates too.
fn literal_references(
    value: &serde_json::Value,
    path: &DocPath,
    found: &mut Vec<(DocPath, String)>,
) {
    literal_references_under(value, path, None, found);
}

fn literal_references_under(
    value: &serde_json::Value,
    path: &DocPath,
    parent: Option<&str>,
    found: &mut Vec<(DocPath, String)>,
) {
    match value {
        serde_json::Value::String(text) if text.contains("{$") => {
            found.push((path.clone(), text.clone()));
        }
        serde_json::Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                literal_references_under(item, &path.index(index), parent, found);
            }
        }
        serde_json::Value::Object(object) => {
            for (key, item) in object {
                let target_text = matches!(
                    (parent, key.as_str()),
                    (Some("name"), "value")
                        | (Some("anchor"), "text")
                        | (Some("query"), "name" | "name_contains")
                );
                if target_text
                    || TEMPLATE_KEYS.contains(&key.as_str())
                    || FREE_TEXT_KEYS.contains(&key.as_str())
                {
                    continue;
                }
                literal_references_under(item, &path.key(key), Some(key), found);
            }
        }
        _ => {}
    }
}

/// `; declared: a, b` or nothing.
fn declared_list<'n>(names: impl Iterator<Item = &'n str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        String::new()
    } else {
        format!(" (declared: {})", names.join(", "))
    }
}

/// `textbox`, `menuitem`, `columnheader`: a lowercase word, underscores allowed.
fn is_role_name(role: &str) -> bool {
    !role.is_empty() && role.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

/// Whether a text reads as a CSS selector (or an XPath) rather than as words on a screen:
/// `#id`, `.class`, `tag.class`, `[attr=…]`, `tag > tag`, `:nth-child(…)`, `//tag`.
pub fn looks_like_css(text: &str) -> bool {
    static CSS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r#"(?x)
            ^\s*[.\#][A-Za-z_-][\w-]*
            | \[\s*@?[A-Za-z_][\w-]*\s*[~|^$*]?=
            | (?:^|[\s>+~(])(?:input|button|select|option|textarea|form|label|table|tbody|thead|tr|td|th|div|span|iframe|frame|frameset|body|nav|section|ul|ol|img)
              (?:[.\#\[:][A-Za-z_@-]|\s*[>+~]\s*[A-Za-z.\#\[])
            | :(?:nth-child|nth-of-type|first-child|last-child|first-of-type|last-of-type|has|contains)\b
            | ^\s*//[A-Za-z*]
            "#,
        )
        .expect("the CSS detector is a valid regex")
    });
    CSS.is_match(text)
}

#[cfg(test)]
mod tests {
    use super::looks_like_css;

    #[test]
    fn css_detector() {
        for css in [
            "#memno",
            ".frmfld",
            "input[name=\"memno\"]",
            "input[name=memno]",
            "[data-testid=x]",
            "td.label",
            "table > tr",
            "div span > input",
            "tr:nth-child(2)",
            "//input[@name='x']",
            "button#go",
        ] {
            assert!(looks_like_css(css), "{css}");
        }
        for words in [
            "Member Number",
            "Savings Bal.",
            "Acct. Status",
            "Member #",
            "#1 Choice",
            "Transfer Funds",
            "S-12345-01 Savings",
            "^\\$[0-9,]+\\.[0-9]{2}$",
            "Home > Accounts",
            "Search",
            "No records found",
            "[a-z]+",
        ] {
            assert!(!looks_like_css(words), "{words}");
        }
    }
}
