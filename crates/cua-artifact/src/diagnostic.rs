//! Findings about a document: [`Problem`] is what a rule reports (a stable code, a document path,
//! a message and a help line); [`Diagnostic`] is a problem placed in a file, with line, column
//! and span, ready for miette to render. Rendering with colours and boxes is the binary's job;
//! [`Diagnostic::render_plain`] is the plain form for logs and snapshots.

use std::fmt;
use std::sync::Arc;

use miette::{LabeledSpan, NamedSource, SourceCode};
use serde::Serialize;
use serde::ser::SerializeStruct;

use crate::source_map::{DocPath, SourceLocation, SourceMap};

/// The stable codes of every rule. Tooling matches on these; never rename one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DiagnosticCode {
    // Reading the text.
    /// A path that names no readable document: missing, unreadable, a pattern matching none.
    Unreadable,
    DocumentTooLarge,
    YamlLimit,
    YamlSyntax,
    DuplicateKey,
    UnknownKey,
    MissingKey,
    InvalidValue,
    UnknownDocument,
    // Capability rules.
    UndeclaredInput,
    UndeclaredOutput,
    OutputBeforeExtract,
    OutputSourceMismatch,
    UnknownStep,
    DuplicateId,
    InvalidRegex,
    CssOutsideHints,
    RawInputInArtifact,
    UndeclaredRisk,
    UnverifiedIrreversible,
    OrdinalWithoutIdentity,
    SecretInPredicate,
    SecretMisplaced,
    WaitUntilMismatch,
    AttemptsOutOfRange,
    RecoveryScopeMismatch,
    SelfRemedy,
    ActionOutsidePolicy,
    StepBudgetExceeded,
    InvalidInputSpec,
    EmptyList,
    ExplicitRouteRequired,
    ObservationReused,
    ObservationStale,
    ReconcileRequired,
    ReconcileInvalid,
    UnboundPlaceholder,
    Tampered,
    // Capability warnings: reported, never invalidating.
    UnscopedDetector,
    LiteralIdentityKey,
    // Tenant bindings.
    OverlayCapabilityMismatch,
    OverlayUnknownStep,
    OverlayTargetWithoutTarget,
    OverlayWidensPolicy,
    BaseNotFound,
    BaseNotSealed,
    // Policy, approval, evaluation and run record documents.
    HumanOnlyActionAllowed,
    DispositionInvalid,
    CountsInconsistent,
    ResultInconsistent,
}

impl DiagnosticCode {
    /// The stable code, `cua::<name>`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unreadable => "cua::unreadable",
            Self::DocumentTooLarge => "cua::document_too_large",
            Self::YamlLimit => "cua::yaml_limit",
            Self::YamlSyntax => "cua::yaml_syntax",
            Self::DuplicateKey => "cua::duplicate_key",
            Self::UnknownKey => "cua::unknown_key",
            Self::MissingKey => "cua::missing_key",
            Self::InvalidValue => "cua::invalid_value",
            Self::UnknownDocument => "cua::unknown_document",
            Self::UndeclaredInput => "cua::undeclared_input",
            Self::UndeclaredOutput => "cua::undeclared_output",
            Self::OutputBeforeExtract => "cua::output_before_extract",
            Self::OutputSourceMismatch => "cua::output_source_mismatch",
            Self::UnknownStep => "cua::unknown_step",
            Self::DuplicateId => "cua::duplicate_id",
            Self::InvalidRegex => "cua::invalid_regex",
            Self::CssOutsideHints => "cua::css_outside_hints",
            Self::RawInputInArtifact => "cua::raw_input_in_artifact",
            Self::UndeclaredRisk => "cua::undeclared_risk",
            Self::UnverifiedIrreversible => "cua::unverified_irreversible",
            Self::OrdinalWithoutIdentity => "cua::ordinal_without_identity",
            Self::SecretInPredicate => "cua::secret_in_predicate",
            Self::SecretMisplaced => "cua::secret_misplaced",
            Self::WaitUntilMismatch => "cua::wait_until_mismatch",
            Self::AttemptsOutOfRange => "cua::attempts_out_of_range",
            Self::RecoveryScopeMismatch => "cua::recovery_scope_mismatch",
            Self::SelfRemedy => "cua::self_remedy",
            Self::ActionOutsidePolicy => "cua::action_outside_policy",
            Self::StepBudgetExceeded => "cua::step_budget_exceeded",
            Self::InvalidInputSpec => "cua::invalid_input_spec",
            Self::EmptyList => "cua::empty_list",
            Self::ExplicitRouteRequired => "cua::explicit_route_required",
            Self::ObservationReused => "cua::observation_reused",
            Self::ObservationStale => "cua::observation_stale",
            Self::ReconcileRequired => "cua::reconcile_required",
            Self::ReconcileInvalid => "cua::reconcile_invalid",
            Self::UnboundPlaceholder => "cua::unbound_placeholder",
            Self::Tampered => "cua::tampered",
            Self::UnscopedDetector => "cua::unscoped_detector",
            Self::LiteralIdentityKey => "cua::literal_identity_key",
            Self::OverlayCapabilityMismatch => "cua::overlay_capability_mismatch",
            Self::OverlayUnknownStep => "cua::overlay_unknown_step",
            Self::OverlayTargetWithoutTarget => "cua::overlay_target_without_target",
            Self::OverlayWidensPolicy => "cua::overlay_widens_policy",
            Self::BaseNotFound => "cua::base_not_found",
            Self::BaseNotSealed => "cua::base_not_sealed",
            Self::HumanOnlyActionAllowed => "cua::human_only_action_allowed",
            Self::DispositionInvalid => "cua::disposition_invalid",
            Self::CountsInconsistent => "cua::counts_inconsistent",
            Self::ResultInconsistent => "cua::result_inconsistent",
        }
    }
}

impl DiagnosticCode {
    /// Whether the rule reports a warning, which never makes a document invalid.
    pub fn is_warning(self) -> bool {
        matches!(self, Self::UnscopedDetector | Self::LiteralIdentityKey)
    }
}

impl fmt::Display for DiagnosticCode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl Serialize for DiagnosticCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// What a rule found, located by document path only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub code: DiagnosticCode,
    pub path: DocPath,
    pub message: String,
    pub help: String,
}

impl Problem {
    /// A problem at a path.
    pub fn new(
        code: DiagnosticCode,
        path: DocPath,
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> Self {
        Self {
            code,
            path,
            message: message.into(),
            help: help.into(),
        }
    }
}

/// A problem placed in a named source text.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub code: DiagnosticCode,
    pub message: String,
    pub help: String,
    /// The document path the rule reported; empty when the problem is about the whole text.
    pub path: DocPath,
    pub file: String,
    pub location: Option<SourceLocation>,
    source: Option<Arc<NamedSource<String>>>,
}

impl Diagnostic {
    /// Places problems in a source text, mapping each path to its line and column.
    pub fn place(
        problems: Vec<Problem>,
        file: &str,
        text: &str,
        map: &SourceMap,
    ) -> Vec<Diagnostic> {
        let source = Arc::new(NamedSource::new(file, text.to_owned()));
        problems
            .into_iter()
            .map(|problem| {
                let location = map.locate(&problem.path);
                Diagnostic {
                    code: problem.code,
                    message: problem.message,
                    help: problem.help,
                    path: problem.path,
                    file: file.to_owned(),
                    location,
                    source: Some(Arc::clone(&source)),
                }
            })
            .collect()
    }

    /// A diagnostic at an already known location and path (parser errors carry their own).
    pub fn at(
        code: DiagnosticCode,
        message: impl Into<String>,
        help: impl Into<String>,
        file: &str,
        text: &str,
        location: Option<SourceLocation>,
        path: Option<DocPath>,
    ) -> Diagnostic {
        let path = path.unwrap_or_default();
        Diagnostic {
            code,
            message: message.into(),
            help: help.into(),
            path,
            file: file.to_owned(),
            location,
            source: Some(Arc::new(NamedSource::new(file, text.to_owned()))),
        }
    }

    /// A diagnostic about a file as a whole, with no text to point into.
    pub fn about_file(
        code: DiagnosticCode,
        message: impl Into<String>,
        help: impl Into<String>,
        file: &str,
    ) -> Diagnostic {
        Diagnostic {
            code,
            message: message.into(),
            help: help.into(),
            path: DocPath::root(),
            file: file.to_owned(),
            location: None,
            source: None,
        }
    }

    /// `file:line:column`, or the file alone.
    pub fn position(&self) -> String {
        match self.location {
            Some(location) => format!("{}:{}:{}", self.file, location.line, location.column),
            None => self.file.clone(),
        }
    }

    /// A plain rendering: code, message, position and path, the source line with a caret
    /// underline, and the help line.
    pub fn render_plain(&self) -> String {
        let mut out = format!(
            "{}[{}]: {}\n  --> {}",
            if self.code.is_warning() {
                "warning"
            } else {
                "error"
            },
            self.code,
            self.message,
            self.position()
        );
        if !self.path.as_str().is_empty() {
            out.push_str(&format!(" ({})", self.path));
        }
        out.push('\n');
        if let (Some(location), Some(source)) = (self.location, &self.source) {
            let text = source.inner();
            let line_start = text[..location.offset.min(text.len())]
                .rfind('\n')
                .map_or(0, |i| i + 1);
            let line_end = text[line_start..]
                .find('\n')
                .map_or(text.len(), |i| line_start + i);
            let line = &text[line_start..line_end];
            let number = location.line.to_string();
            let gutter = " ".repeat(number.len());
            let column = text[line_start..location.offset.min(line_end)]
                .chars()
                .count();
            let width = text
                [location.offset.min(line_end)..(location.offset + location.length).min(line_end)]
                .chars()
                .count()
                .max(1);
            out.push_str(&format!(
                "{gutter} |\n{number} | {line}\n{gutter} | {}{}\n",
                " ".repeat(column),
                "^".repeat(width)
            ));
        }
        out.push_str(&format!("  = help: {}\n", self.help));
        out
    }
}

/// Renders many diagnostics in the plain form, separated by blank lines.
pub fn render_plain(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(Diagnostic::render_plain)
        .collect::<Vec<_>>()
        .join("\n")
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code.as_str()))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(if self.code.is_warning() {
            miette::Severity::Warning
        } else {
            miette::Severity::Error
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(&self.help))
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.source
            .as_deref()
            .map(|source| source as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let location = self.location?;
        self.source.as_ref()?;
        let label = if self.path.as_str().is_empty() {
            None
        } else {
            Some(self.path.to_string())
        };
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            label,
            (location.offset, location.length.max(1)),
        ))))
    }
}

impl Serialize for Diagnostic {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut record = serializer.serialize_struct("Diagnostic", 7)?;
        record.serialize_field("code", &self.code)?;
        record.serialize_field("message", &self.message)?;
        record.serialize_field("help", &self.help)?;
        record.serialize_field("file", &self.file)?;
        record.serialize_field("line", &self.location.map(|location| location.line))?;
        record.serialize_field("column", &self.location.map(|location| location.column))?;
        record.serialize_field("path", self.path.as_str())?;
        record.end()
    }
}
