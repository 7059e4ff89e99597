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

/// The problem with a document's timestamp at `path`, if `text` is not an RFC 3339 instant
/// (`2026-09-30T22:07:14.687487Z`, any offset), as jiff reads one.
pub(crate) fn timestamp_problem(path: DocPath, text: &str) -> Option<Problem> {
    let error = text.parse::<jiff::Timestamp>().err()?;
    Some(Problem::new(
        DiagnosticCode::InvalidValue,
        path,
        format!("`{text}` is not an RFC 3339 instant: {error}"),
        "write the instant with its offset, such as 2026-09-30T22:07:14.687487Z",
    ))
}
