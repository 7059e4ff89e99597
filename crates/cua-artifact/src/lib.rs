//! Every cua document type: capability, tenant binding, approval, evaluation, run record and
//! policy file; their strict YAML codec, canonical content hash and validation diagnostics.
//!
//! Reading a capability for execution is one call, [`Capability::from_yaml`]: strict YAML, every
//! rule, and the hash (a draft passes, a tampered text is refused). Tools that show a reviewer
//! what is wrong use [`check_source`], which returns every finding as a [`Diagnostic`] placed in
//! the text.
//!
//! Architecture invariant: this crate does no I/O beyond parsing the bytes it is handed, reads
//! no clock and draws no randomness.

mod approval;
mod capability;
mod check;
mod diagnostic;
mod document;
mod error;
mod eval_suite;
mod hash;
mod identifiers;
mod lint;
mod policy;
mod predicate;
mod prepared;
mod run_record;
mod source_map;
pub mod suggest;
mod target;
mod template;
mod tenant;
mod validate;
mod value;
mod vocabulary;
pub mod yaml;

pub use approval::{ApprovalScope, ApprovalState, CapabilityApproval, CapabilityEvaluation};
pub use capability::{
    Action, AppIdentity, Backoff, Capability, CapabilityPolicy, CommandCall, DiscoveredBy,
    DriverCapability, Entrypoint, Escalation, EscalationPolicy, HttpCall, HttpMethod, InputSpec,
    Outcome, OutputSource, OutputSpec, Provenance, ROUTE_NAMES, RawInputKind, Reconcile,
    RecoveryRule, RecoveryScope, Remedy, RunCapability, RunCapabilityTag, ScrollDirection, Step,
    Surface, SurfaceKind, Transform, WaitCondition, WaitPolicy,
};
pub use check::{
    Checked, Document, SealedText, check_binding, check_source, check_source_with, seal_source,
};
pub use diagnostic::{Diagnostic, DiagnosticCode, Problem, render_plain};
pub use document::{
    ApprovalSchema, CapabilitySchema, DocumentKind, EvalSuiteSchema, EvaluationSchema,
    PolicySchema, RunRecordSchema, TenantBindingSchema,
};
pub use error::{ArtifactError, YamlError, YamlErrorKind};
pub use eval_suite::{Case, EvalSuite, InputValue, Sensitive, SetupRun, SuiteName, Truth};
pub use hash::{SealState, canonical_json};
pub use identifiers::{
    CapabilityId, CapabilityRef, ContentHash, Identifier, InputName, Origin, OutputName,
    SecretName, SemVer, StepId, TenantId, VersionRange,
};
pub use lint::lint_capability;
pub use policy::{
    ActionRules, Allowlist, Budgets, CommandRules, DeclaredCommand, Disposition, DispositionTable,
    Dispositions, EvidenceRules, PolicyConfig, Redaction, RedactionRule, ReplayGates, RiskLexicon,
    RiskRules, Screenshots, SecretSource,
};
pub use predicate::{NodeQuery, NodeScope, Predicate};
pub use prepared::{INVOCATION_TENANT, PreparedCapability, TenantOverlay};
pub use run_record::{
    FailureDetail, InterventionRef, OutcomeResult, ResolutionDebug, ResolutionRecord, RouteFailure,
    RouteTrace, RunKind, RunRecord, RunResult, StepRecord,
};
pub use source_map::{DocPath, SourceLocation, SourceMap, SourceNode};
pub use target::{
    Anchor, AnchorRelation, Hints, IdentityCheck, MatchMode, NameMatch, TargetDescriptor,
};
pub use template::{Template, TemplatePart, TemplateRef, json_pointer_problem, tenant_placeholder};
pub use tenant::{PolicyNarrowing, StepOverride, TargetOverride, TenantBinding};
pub use validate::{ValidationConfig, looks_like_css, validate_capability};
pub use value::{ValueExpr, ValueType};
pub use vocabulary::{
    ActionKind, Actor, EffectVerdict, FailureCode, ObservationClass, ResolutionStrategy, RiskTier,
    RunStatus,
};

impl Capability {
    /// Reads a capability for use: strict YAML, every rule, and the content hash. A draft (no
    /// hash) is accepted; a tampered one is refused naming the declared and computed hashes.
    pub fn from_yaml(text: &str) -> Result<Self, ArtifactError> {
        let capability: Capability = yaml::from_yaml(text)?;
        let problems = capability.validate();
        if !problems.is_empty() {
            return Err(ArtifactError::Invalid(problems));
        }
        capability.verify_hash()?;
        Ok(capability)
    }

    /// Writes the capability as readable block-style YAML.
    pub fn to_yaml(&self) -> Result<String, ArtifactError> {
        yaml::to_yaml(self)
    }
}

impl TenantBinding {
    /// Reads a binding from strict YAML.
    pub fn from_yaml(text: &str) -> Result<Self, ArtifactError> {
        Ok(yaml::from_yaml(text)?)
    }
}

impl PolicyConfig {
    /// Reads the policy file from strict YAML and checks it.
    pub fn from_yaml(text: &str) -> Result<Self, ArtifactError> {
        let policy: PolicyConfig = yaml::from_yaml(text)?;
        let problems = policy.validate();
        if !problems.is_empty() {
            return Err(ArtifactError::Invalid(problems));
        }
        Ok(policy)
    }
}

/// The first instant a document may carry, `0000-01-01T00:00:00Z`, in microseconds since the
/// Unix epoch.
pub const FIRST_INSTANT_MICROS: i64 = -62_167_219_200 * 1_000_000;
/// The last, `9999-12-30T22:00:00Z`: the last jiff represents (its range leaves room for any
/// offset within the year 9999).
pub const LAST_INSTANT_MICROS: i64 = 253_402_207_200 * 1_000_000;

/// Reads an RFC 3339 instant (`2026-09-30T22:07:14.687487Z`, or with a numeric offset, with 0
/// to 9 fraction digits) as microseconds since the Unix epoch, with jiff. What RFC 3339 does not
/// write is refused, though ISO 8601 or jiff would read it (a space for `T`, a leap second, an
/// hour-only time, a bracketed zone), as is precision finer than a microsecond (two instants
/// must never read as one) and an instant outside the years 0000 to 9999.
pub fn parse_instant(text: &str) -> Result<i64, String> {
    static SHAPE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let shape = SHAPE.get_or_init(|| {
        regex::Regex::new(
            r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$",
        )
        .expect("the RFC 3339 shape is a valid pattern")
    });
    if !shape.is_match(text) {
        return Err(format!(
            "`{text}` is not an RFC 3339 instant (YYYY-MM-DDTHH:MM:SS[.fraction] and Z or an offset)"
        ));
    }
    let instant: jiff::Timestamp = text
        .parse()
        .map_err(|error| format!("`{text}` is not an instant: {error}"))?;
    if instant.subsec_nanosecond() % 1_000 != 0 {
        return Err(format!("`{text}` is finer than a microsecond"));
    }
    let micros = instant.as_microsecond();
    if !(FIRST_INSTANT_MICROS..=LAST_INSTANT_MICROS).contains(&micros) {
        return Err(format!("`{text}` is outside the years 0000 to 9999"));
    }
    Ok(micros)
}

/// The problem with a document's timestamp at `path`, if `text` is not an instant
/// [`parse_instant`] reads.
pub(crate) fn timestamp_problem(path: DocPath, text: &str) -> Option<Problem> {
    let reason = parse_instant(text).err()?;
    Some(Problem::new(
        DiagnosticCode::InvalidValue,
        path,
        reason,
        "write the instant with its offset, such as 2026-09-30T22:07:14.687487Z",
    ))
}
