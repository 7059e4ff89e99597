//! The eval suite document (`cua.eval_suite/v1`): which capability, for which tenant, against
//! which application, the inputs with their known truth, and how often each is repeated.
//!
//! ```yaml
//! schema: cua.eval_suite/v1
//! name: replay_stability
//! capability: corebank.member.savings_balance@1.0.0
//! fixture: first-valley            # or `base_url: http://…` for an application already running
//! setup:
//!   - capability: corebank.auth.sign_on@1.0.0
//! repeats: 5
//! cases:
//!   - inputs: {member_id: "12345"}
//!     expect:
//!       outputs: {savings_balance: "4210.55", account_status: Active}
//!   - inputs: {member_id: "99999"}
//!     expect: {outcome: member_not_found}
//! ```
//!
//! Strict like every other document: unknown keys are refused at every depth;
//! [`EvalSuite::validate`] reports what needs no capability, and [`EvalSuite::check`] every
//! problem against the capability in one pass (an input the capability does not declare, an
//! output or outcome it cannot return).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diagnostic::{DiagnosticCode, Problem};
use crate::document::EvalSuiteSchema;
use crate::source_map::DocPath;
use crate::{Capability, CapabilityRef, Origin, TenantId};

/// One eval suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "cua eval suite (cua.eval_suite/v1)")]
pub struct EvalSuite {
    pub schema: EvalSuiteSchema,
    /// The reports are written as `<name>.md`, `<name>.json`, `<name>.html` and
    /// `<name>.evaluation.json`.
    pub name: SuiteName,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The capability evaluated, pinned to a version of the catalog.
    pub capability: CapabilityRef,
    /// The tenant whose binding (`tenants/<tenant>/<capability id>.yaml`) is applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<TenantId>,
    /// The fixture variant `cua eval` serves for this suite (`first-valley`, `northgate-fcu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixture: Option<String>,
    /// An application that is already running, instead of a fixture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<Origin>,
    /// Capabilities replayed once before the measured runs and never scored, so that every
    /// measured run starts from the same application state (a signed-in session).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<SetupRun>,
    /// How many times every case runs. Two or more is what shows determinism.
    pub repeats: u32,
    pub cases: Vec<Case>,
}

/// A suite name: lowercase letters, digits, `_` and `-`, starting with a letter or digit, at
/// most 64 characters (it names files).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SuiteName(String);

impl SuiteName {
    /// Checks a suite name.
    pub fn parse(text: &str) -> Result<Self, String> {
        let valid = !text.is_empty()
            && text.len() <= 64
            && text
                .chars()
                .next()
                .is_some_and(|first| first.is_ascii_lowercase() || first.is_ascii_digit())
            && text.chars().all(|character| {
                character.is_ascii_lowercase()
                    || character.is_ascii_digit()
                    || character == '_'
                    || character == '-'
            });
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(format!(
                "`{text}` is not a suite name: lowercase letters, digits, `_` and `-`, starting with a letter or digit, at most 64 characters"
            ))
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SuiteName {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        Self::parse(&text)
    }
}

impl From<SuiteName> for String {
    fn from(name: SuiteName) -> Self {
        name.0
    }
}

impl JsonSchema for SuiteName {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("SuiteName")
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^[a-z0-9][a-z0-9_-]{0,63}$",
            "description": "A suite name: lowercase letters, digits, `_` and `-`, starting with a letter or digit, at most 64 characters (it names files)."
        })
    }
}

impl fmt::Display for SuiteName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// A capability replayed before the measured runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetupRun {
    pub capability: CapabilityRef,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, InputValue>,
}

/// One row of inputs and the truth a correct run returns for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// A short name for reports; by default the inputs, `member_id=12345`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub inputs: BTreeMap<String, InputValue>,
    pub expect: Truth,
    /// When present, before every run of the case the application is reset to its seeded
    /// state and exactly these faults are armed, for every request (a fixture's faults, by
    /// name: `lookalike_account`, `quoted_refusals`, …; empty arms none). Hostile variants of
    /// a page are cases like any other, and each run starts from the same data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<Vec<String>>,
}

/// A scalar input value, as the capability's inputs take them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum InputValue {
    Text(String),
    Integer(i64),
    Number(f64),
    Boolean(bool),
}

impl InputValue {
    /// The value as the replayer takes it.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Text(text) => Value::from(text.as_str()),
            Self::Integer(number) => Value::from(*number),
            Self::Number(number) => Value::from(*number),
            Self::Boolean(flag) => Value::from(*flag),
        }
    }

    /// The value as text, for labels.
    pub fn as_text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Integer(number) => number.to_string(),
            Self::Number(number) => number.to_string(),
            Self::Boolean(flag) => flag.to_string(),
        }
    }
}

/// What a correct run returns: these output values (only the outputs named are compared), or
/// this business outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Truth {
    Outputs(BTreeMap<String, String>),
    Outcome(String),
}

/// The inputs and outputs a capability declares sensitive: eval shows their values only by
/// shape (`<redacted:string[5]>`), in every report, label and message, as the evidence does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sensitive(BTreeSet<String>);

impl Sensitive {
    /// The names `capability` declares sensitive.
    pub fn of(capability: &Capability) -> Self {
        Self::new(capability.sensitive_names())
    }

    /// These names.
    pub fn new<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self(names.into_iter().map(Into::into).collect())
    }

    /// Whether values under `name` are masked.
    pub fn covers(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    /// `value` as it may be shown under `name`.
    pub fn text(&self, name: &str, value: &str) -> String {
        if self.covers(name) {
            format!("<redacted:string[{}]>", value.chars().count())
        } else {
            value.to_owned()
        }
    }

    /// A JSON value as it may be shown under `name`.
    pub fn value(&self, name: &str, value: &Value) -> Value {
        if !self.covers(name) {
            return value.clone();
        }
        let text = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        Value::String(self.text(name, &text))
    }

    /// A map of values as it may be shown.
    pub fn values(&self, values: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
        values
            .iter()
            .map(|(name, value)| (name.clone(), self.value(name, value)))
            .collect()
    }
}

impl Truth {
    /// One line: `savings_balance=4210.55, account_status=Active` or `outcome member_not_found`,
    /// sensitive values masked.
    pub fn describe(&self, sensitive: &Sensitive) -> String {
        match self {
            Self::Outputs(outputs) => outputs
                .iter()
                .map(|(name, value)| format!("{name}={}", sensitive.text(name, value)))
                .collect::<Vec<_>>()
                .join(", "),
            Self::Outcome(code) => format!("outcome {code}"),
        }
    }
}

impl Case {
    /// The case's label, or its inputs as `name=value` pairs, sensitive values masked.
    pub fn label(&self, sensitive: &Sensitive) -> String {
        self.label.clone().unwrap_or_else(|| {
            let inputs = self
                .inputs
                .iter()
                .map(|(name, value)| format!("{name}={}", sensitive.text(name, &value.as_text())))
                .collect::<Vec<_>>()
                .join(", ");
            match self.faults.as_deref() {
                Some([]) => format!("{inputs}, no faults"),
                Some(faults) => format!("{inputs}, faults {}", faults.join("+")),
                None => inputs,
            }
        })
    }

    /// The inputs as the replayer takes them.
    pub fn json_inputs(&self) -> BTreeMap<String, Value> {
        self.inputs
            .iter()
            .map(|(name, value)| (name.clone(), value.to_json()))
            .collect()
    }
}

impl EvalSuite {
    /// Parses a suite from strict YAML and checks what can be checked without the capability
    /// ([`EvalSuite::validate`]).
    pub fn from_yaml(text: &str) -> Result<Self, crate::ArtifactError> {
        let suite: Self = crate::yaml::from_yaml(text)?;
        let problems = suite.validate();
        if problems.is_empty() {
            Ok(suite)
        } else {
            Err(crate::ArtifactError::Invalid(problems))
        }
    }

    /// Every problem of the suite against the capability it names: inputs the capability does
    /// not declare, outputs it does not return, outcomes it does not declare. Empty means the
    /// suite can run.
    pub fn check(&self, capability: &Capability) -> Vec<String> {
        let sensitive = Sensitive::of(capability);
        let mut problems = Vec::new();
        if capability.reference() != self.capability {
            problems.push(format!(
                "the suite evaluates {} but the capability given is {}",
                self.capability,
                capability.reference()
            ));
        }
        for (position, case) in self.cases.iter().enumerate() {
            let at = format!("cases[{position}] ({})", case.label(&sensitive));
            for name in case.inputs.keys() {
                if !capability
                    .inputs
                    .iter()
                    .any(|input| input.name.as_str() == name)
                {
                    problems.push(format!(
                        "{at}: {} has no input `{name}`",
                        capability.reference()
                    ));
                }
            }
            match &case.expect {
                Truth::Outputs(outputs) => {
                    if outputs.is_empty() {
                        problems.push(format!(
                            "{at}: `expect.outputs` names no output, so nothing would be compared"
                        ));
                    }
                    for name in outputs.keys() {
                        if capability.output(name).is_none() {
                            problems.push(format!(
                                "{at}: {} returns no output `{name}`",
                                capability.reference()
                            ));
                        }
                    }
                }
                Truth::Outcome(code) => {
                    if capability.outcome(code).is_none() {
                        problems.push(format!(
                            "{at}: {} declares no outcome `{code}`",
                            capability.reference()
                        ));
                    }
                }
            }
        }
        problems
    }

    /// The problems that need no capability: the target, repeats, cases and labels. Empty
    /// means the suite is well formed.
    pub fn validate(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        let root = DocPath::root();
        match (&self.fixture, &self.base_url) {
            (Some(_), Some(_)) => problems.push(Problem::new(
                DiagnosticCode::InvalidValue,
                root.key("base_url"),
                "give either `fixture` or `base_url`, not both",
                "`fixture` is a variant `cua eval` serves; `base_url` an application already running",
            )),
            (None, None) => problems.push(Problem::new(
                DiagnosticCode::MissingKey,
                root.clone(),
                "say what to run against: `fixture: <variant>` or `base_url: <url>`",
                "`fixture` is a variant `cua eval` serves; `base_url` an application already running",
            )),
            _ => {}
        }
        if self.repeats == 0 {
            problems.push(Problem::new(
                DiagnosticCode::InvalidValue,
                root.key("repeats"),
                "`repeats` must be at least 1",
                "repeat every case from 1 to 1000 times; two or more shows determinism",
            ));
        }
        if self.repeats > 1000 {
            problems.push(Problem::new(
                DiagnosticCode::InvalidValue,
                root.key("repeats"),
                format!("`repeats` is {}; at most 1000", self.repeats),
                "repeat every case from 1 to 1000 times; two or more shows determinism",
            ));
        }
        if self.cases.is_empty() {
            problems.push(Problem::new(
                DiagnosticCode::EmptyList,
                root.key("cases"),
                "`cases` is empty: there is nothing to evaluate",
                "add a case: its `inputs` and what it must `expect`",
            ));
        }
        // Compared in clear, named by position: before the capability is known, nothing
        // says which values are sensitive.
        let mut labels = BTreeMap::new();
        let clear = Sensitive::default();
        for (position, case) in self.cases.iter().enumerate() {
            if let Some(first) = labels.insert(case.label(&clear), position) {
                problems.push(Problem::new(
                    DiagnosticCode::DuplicateId,
                    root.key("cases").index(position),
                    format!("cases[{first}] and cases[{position}] have the same label"),
                    "give each case a distinct `label` or distinct inputs",
                ));
            }
        }
        problems
    }
}
