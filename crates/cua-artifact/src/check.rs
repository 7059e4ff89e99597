//! Checking and sealing document *texts*: what `cua validate` and `cua seal` do, minus the file
//! system. A text goes through strict YAML, its type, every rule and (for a capability) the
//! content hash, and every finding comes back as a [`Diagnostic`] placed in the text.

use crate::approval::{CapabilityApproval, CapabilityEvaluation};
use crate::capability::Capability;
use crate::diagnostic::{Diagnostic, DiagnosticCode, Problem};
use crate::document::DocumentKind;
use crate::error::{ArtifactError, YamlError, YamlErrorKind};
use crate::hash::SealState;
use crate::identifiers::ContentHash;
use crate::lint::lint_capability;
use crate::policy::PolicyConfig;
use crate::run_record::RunRecord;
use crate::source_map::{DocPath, SourceMap};
use crate::tenant::TenantBinding;
use crate::validate::{ValidationConfig, validate_capability};
use crate::yaml::{MAX_DOCUMENT_BYTES, from_yaml};

/// Any document, parsed.
#[derive(Debug, Clone)]
pub enum Document {
    Capability(Box<Capability>),
    TenantBinding(Box<TenantBinding>),
    Approval(Box<CapabilityApproval>),
    Evaluation(Box<CapabilityEvaluation>),
    RunRecord(Box<RunRecord>),
    Policy(Box<PolicyConfig>),
    EvalSuite(Box<crate::EvalSuite>),
}

impl Document {
    /// Its kind.
    pub fn kind(&self) -> DocumentKind {
        match self {
            Self::Capability(_) => DocumentKind::Capability,
            Self::TenantBinding(_) => DocumentKind::TenantBinding,
            Self::Approval(_) => DocumentKind::Approval,
            Self::Evaluation(_) => DocumentKind::Evaluation,
            Self::RunRecord(_) => DocumentKind::RunRecord,
            Self::Policy(_) => DocumentKind::Policy,
            Self::EvalSuite(_) => DocumentKind::EvalSuite,
        }
    }
}

/// The result of checking one text.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The kind its `schema:` names, when it names one.
    pub kind: Option<DocumentKind>,
    /// The document, when it parsed (it may still break rules).
    pub document: Option<Document>,
    /// Every finding; empty means valid.
    pub diagnostics: Vec<Diagnostic>,
    /// What a reviewer should see but does not make the document invalid
    /// ([`crate::lint_capability`]).
    pub warnings: Vec<Diagnostic>,
    /// For a capability: draft, sealed or tampered.
    pub seal: Option<SealState>,
}

impl Checked {
    /// Whether the text is a valid document.
    pub fn is_valid(&self) -> bool {
        self.document.is_some() && self.diagnostics.is_empty()
    }
}

/// Checks a text of any document kind; the kind comes from its `schema:` field.
pub fn check_source(file: &str, text: &str) -> Checked {
    check_source_with(file, text, &ValidationConfig::default())
}

/// [`check_source`] with explicit validation settings.
pub fn check_source_with(file: &str, text: &str, config: &ValidationConfig) -> Checked {
    let mut checked = Checked {
        kind: None,
        document: None,
        diagnostics: Vec::new(),
        warnings: Vec::new(),
        seal: None,
    };
    if text.len() > MAX_DOCUMENT_BYTES {
        checked.diagnostics.push(Diagnostic::about_file(
            DiagnosticCode::DocumentTooLarge,
            format!(
                "the file is {} bytes, above the {MAX_DOCUMENT_BYTES}-byte limit",
                text.len()
            ),
            "a document is a few kilobytes of YAML; this is not one",
            file,
        ));
        return checked;
    }
    let map = SourceMap::build(text);
    let schema_path = DocPath::root().key("schema");
    let Some(kind) = map
        .get(&schema_path)
        .and_then(|node| node.scalar.as_deref())
        .and_then(DocumentKind::from_schema_literal)
    else {
        // A text that is not YAML at all is better reported as such than as "no schema".
        if let Err(error) = from_yaml::<serde_json::Value>(text) {
            checked
                .diagnostics
                .push(yaml_diagnostic(&error, file, text));
            return checked;
        }
        let literals: Vec<&str> = DocumentKind::ALL
            .iter()
            .map(|kind| kind.schema_literal())
            .collect();
        let found = map.get(&schema_path).and_then(|node| node.scalar.clone());
        checked.diagnostics.push(
            Diagnostic::place(
                vec![Problem::new(
                    DiagnosticCode::UnknownDocument,
                    schema_path,
                    match found {
                        Some(found) => format!("`schema: {found}` is not a cua document kind"),
                        None => "the document has no `schema:` field".to_owned(),
                    },
                    format!(
                        "start the document with one of: schema: {}",
                        literals.join(" | ")
                    ),
                )],
                file,
                text,
                &map,
            )
            .remove(0),
        );
        return checked;
    };
    checked.kind = Some(kind);
    let parsed = match kind {
        DocumentKind::Capability => from_yaml::<Capability>(text).map(|capability| {
            let mut problems = validate_capability(&capability, config);
            let seal = capability.seal_state();
            if let SealState::Tampered { declared, computed } = &seal {
                problems.push(tampered_problem(&capability, declared, computed));
            }
            checked.seal = Some(seal);
            checked.warnings = Diagnostic::place(lint_capability(&capability), file, text, &map);
            (Document::Capability(Box::new(capability)), problems)
        }),
        DocumentKind::TenantBinding => from_yaml::<TenantBinding>(text)
            .map(|binding| (Document::TenantBinding(Box::new(binding)), Vec::new())),
        DocumentKind::Approval => from_yaml::<CapabilityApproval>(text).map(|approval| {
            let problems = approval.validate();
            (Document::Approval(Box::new(approval)), problems)
        }),
        DocumentKind::Evaluation => from_yaml::<CapabilityEvaluation>(text).map(|evaluation| {
            let problems = evaluation.validate();
            (Document::Evaluation(Box::new(evaluation)), problems)
        }),
        DocumentKind::RunRecord => from_yaml::<RunRecord>(text).map(|record| {
            let problems = record.validate();
            (Document::RunRecord(Box::new(record)), problems)
        }),
        DocumentKind::Policy => from_yaml::<PolicyConfig>(text).map(|policy| {
            let problems = policy.validate();
            (Document::Policy(Box::new(policy)), problems)
        }),
        DocumentKind::EvalSuite => from_yaml::<crate::EvalSuite>(text).map(|suite| {
            let problems = suite.validate();
            (Document::EvalSuite(Box::new(suite)), problems)
        }),
    };
    match parsed {
        Ok((document, problems)) => {
            checked.diagnostics = Diagnostic::place(problems, file, text, &map);
            checked.document = Some(document);
        }
        Err(error) => checked
            .diagnostics
            .push(yaml_diagnostic(&error, file, text)),
    }
    checked
}

/// Applies a parsed tenant binding (from `file`/`text`) to its base and reports every problem,
/// placed in the binding's text where it belongs to the binding.
pub fn check_binding(
    file: &str,
    text: &str,
    binding: &TenantBinding,
    base: &Capability,
) -> Result<Capability, Vec<Diagnostic>> {
    let map = SourceMap::build(text);
    let problems = match binding.apply(base) {
        Ok(effective) => return Ok(effective),
        Err(ArtifactError::Invalid(problems)) => problems,
        Err(ArtifactError::BindingMismatch {
            binding: named,
            base: found,
        }) => vec![Problem::new(
            DiagnosticCode::OverlayCapabilityMismatch,
            DocPath::root().key("capability"),
            format!("the binding is for {named} but was applied to {found}"),
            "bind the capability version the overlay was written against",
        )],
        Err(ArtifactError::BaseNotSealed { reference }) => vec![Problem::new(
            DiagnosticCode::BaseNotSealed,
            DocPath::root().key("capability"),
            format!("the base capability {reference} is a draft"),
            format!(
                "seal it first: cua seal capabilities/{}",
                reference.file_name()
            ),
        )],
        Err(ArtifactError::Tampered {
            reference,
            declared,
            computed,
        }) => vec![Problem::new(
            DiagnosticCode::Tampered,
            DocPath::root().key("capability"),
            format!(
                "the base capability {reference} is tampered: declared {declared}, computed {computed}"
            ),
            "a tampered capability is never bound; restore it or reseal it after review",
        )],
        Err(other) => vec![Problem::new(
            DiagnosticCode::InvalidValue,
            DocPath::root(),
            other.to_string(),
            "fix the binding so it applies to its base",
        )],
    };
    // Problems of the effective capability have paths into it, not into the binding: point
    // them at the binding's root rather than at an unrelated node that happens to share a path.
    let problems = problems
        .into_iter()
        .map(|problem| {
            if problem.message.starts_with("effective: ") && map.get(&problem.path).is_none() {
                Problem {
                    message: format!("{} (at {})", problem.message, problem.path),
                    path: DocPath::root(),
                    ..problem
                }
            } else {
                problem
            }
        })
        .collect();
    Err(Diagnostic::place(problems, file, text, &map))
}

/// A capability text with its hash written in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedText {
    pub text: String,
    pub hash: ContentHash,
    /// The state before sealing.
    pub previous: SealState,
}

impl SealedText {
    /// Whether sealing changed the text.
    pub fn changed(&self) -> bool {
        !matches!(&self.previous, SealState::Sealed(hash) if *hash == self.hash)
    }
}

/// Writes the content hash into a capability text, keeping every comment and the layout: only
/// the `content_hash` value changes (or a `content_hash:` line is appended). A tampered text is
/// resealed, because editing a sealed capability and sealing it again is the normal review loop;
/// an invalid one is refused.
pub fn seal_source(file: &str, text: &str) -> Result<SealedText, Vec<Diagnostic>> {
    let checked = check_source(file, text);
    let blocking: Vec<Diagnostic> = checked
        .diagnostics
        .into_iter()
        .filter(|diagnostic| diagnostic.code != DiagnosticCode::Tampered)
        .collect();
    let Some(Document::Capability(capability)) = checked.document else {
        if blocking.is_empty() {
            return Err(vec![Diagnostic::about_file(
                DiagnosticCode::UnknownDocument,
                format!(
                    "only capabilities are sealed; this is a {}",
                    checked.kind.map_or("document", DocumentKind::name)
                ),
                "approvals pin a capability's hash; bindings are resealed when applied",
                file,
            )]);
        }
        return Err(blocking);
    };
    if !blocking.is_empty() {
        return Err(blocking);
    }
    let hash = capability.compute_hash();
    let previous = capability.seal_state();
    let map = SourceMap::build(text);
    let sealed = match map.get(&DocPath::root().key("content_hash")) {
        Some(node) if node.value.length > 0 => {
            let start = node.value.offset;
            let end = start + node.value.length;
            format!("{}{}{}", &text[..start], hash, &text[end..])
        }
        Some(node) => {
            // `content_hash:` with nothing after it: write the hash right after the colon.
            let key_end = node
                .key
                .map_or(node.value.offset, |key| key.offset + key.length);
            let colon = text[key_end..]
                .find(':')
                .map_or(key_end, |at| key_end + at + 1);
            format!("{} {}{}", &text[..colon], hash, &text[colon..])
        }
        None => {
            let separator = if text.ends_with('\n') || text.is_empty() {
                ""
            } else {
                "\n"
            };
            format!("{text}{separator}content_hash: {hash}\n")
        }
    };
    // Prove the splice: the new text must parse to the same content, now sealed.
    let resealed = check_source(file, &sealed);
    match resealed.seal {
        Some(SealState::Sealed(ref got)) if *got == hash && resealed.diagnostics.is_empty() => {
            Ok(SealedText {
                text: sealed,
                hash,
                previous,
            })
        }
        _ => Err(vec![Diagnostic::about_file(
            DiagnosticCode::YamlSyntax,
            "could not write the hash into the text without changing its meaning",
            "write `content_hash: \"\"` as a top-level line and seal again",
            file,
        )]),
    }
}

fn tampered_problem(
    capability: &Capability,
    declared: &ContentHash,
    computed: &ContentHash,
) -> Problem {
    Problem::new(
        DiagnosticCode::Tampered,
        DocPath::root().key("content_hash"),
        format!(
            "content hash mismatch for {}: declared {declared}, computed {computed}",
            capability.reference()
        ),
        "the content changed after sealing; review the change, then `cua seal` it (which makes it a new artifact \
         that needs its own approval)",
    )
}

fn yaml_diagnostic(error: &YamlError, file: &str, text: &str) -> Diagnostic {
    let (code, help) = match error.kind {
        YamlErrorKind::TooLarge => (
            DiagnosticCode::DocumentTooLarge,
            "a document is a few kilobytes of YAML",
        ),
        YamlErrorKind::Limit => (
            DiagnosticCode::YamlLimit,
            "aliases, nesting and size are bounded; write the document out plainly instead of through anchors",
        ),
        YamlErrorKind::Syntax => (
            DiagnosticCode::YamlSyntax,
            "fix the YAML syntax; one document per file",
        ),
        YamlErrorKind::DuplicateKey => (
            DiagnosticCode::DuplicateKey,
            "remove one of the two entries; YAML keys are unique",
        ),
        YamlErrorKind::UnknownKey => (
            DiagnosticCode::UnknownKey,
            "remove the key or fix its spelling; unknown keys are refused at every depth so a typo never passes silently",
        ),
        YamlErrorKind::MissingKey => (DiagnosticCode::MissingKey, "add the required key"),
        YamlErrorKind::InvalidValue => (
            DiagnosticCode::InvalidValue,
            "fix the value; booleans are only true/false, and closed sets accept only their listed values",
        ),
    };
    let help = match error.suggestion() {
        Some(known) => format!("did you mean `{known}`? {help}"),
        None => help.to_owned(),
    };
    Diagnostic::at(
        code,
        error.message.clone(),
        help,
        file,
        text,
        error.location,
        error.path.clone(),
    )
}
