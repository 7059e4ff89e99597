//! `cua validate FILE...`: check every file, report every problem, exit 2 if any is invalid.
//!
//! A tenant binding is checked by applying it to its base capability, found by the catalog
//! convention: `<root>/capabilities/<id>@<version>.yaml`, where the binding lives at
//! `<root>/tenants/<tenant>/<file>.yaml` (or, failing that, under the working directory).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use cua_artifact::{
    Capability, Checked, Diagnostic, DiagnosticCode, DocPath, Document, DocumentKind, Problem,
    SealState, SourceMap, TenantBinding, check_binding, check_source,
};
use serde::Serialize;

use crate::cli::{Format, ValidateArgs};
use crate::error::{CliError, ErrorCode};
use crate::limits;
use crate::output::{Exit, emit};

/// What `--format json` reports per file.
#[derive(Debug, Serialize)]
struct FileReport {
    file: String,
    kind: Option<&'static str>,
    valid: bool,
    /// `id@version` of a capability, or of the capability a binding or approval names.
    capability: Option<String>,
    /// draft, sealed or tampered, for a capability.
    seal: Option<&'static str>,
    content_hash: Option<String>,
    /// For a tenant binding: the hash of the effective capability it yields.
    effective_hash: Option<String>,
    diagnostics: Vec<Diagnostic>,
    /// What a reviewer should see; warnings never make a file invalid.
    warnings: Vec<Diagnostic>,
}

#[derive(Debug, Serialize)]
struct Report {
    valid: bool,
    files: Vec<FileReport>,
}

/// Checks every file; diagnostics go to stderr (text) or into the envelope (JSON).
pub(crate) fn run(format: Format, args: &ValidateArgs) -> Result<Exit, CliError> {
    let files: Vec<FileReport> = args.files.iter().map(|path| check_file(path)).collect();
    let invalid = files.iter().filter(|file| !file.valid).count();
    let report = Report {
        valid: invalid == 0,
        files,
    };
    if format == Format::Text {
        let diagnostics: Vec<&Diagnostic> = report
            .files
            .iter()
            .flat_map(|file| file.diagnostics.iter().chain(&file.warnings))
            .collect();
        eprint!("{}", render_diagnostics(diagnostics));
    }
    let error = (invalid > 0).then(|| {
        let problems: Vec<&Diagnostic> = report
            .files
            .iter()
            .flat_map(|file| &file.diagnostics)
            .collect();
        crate::error::CliError::new(
            ErrorCode::InvalidDocument,
            format!("{invalid} of {} document(s) invalid", report.files.len()),
        )
        .with_help(crate::error::diagnostics_help(&problems))
        .envelope()
    });
    emit(format, "validate", Some(&report), error.as_ref(), || {
        summary(&report)
    });
    Ok(if invalid == 0 {
        Exit::Success
    } else {
        ErrorCode::InvalidDocument.exit()
    })
}

fn check_file(path: &Path) -> FileReport {
    let name = path.display().to_string();
    let mut report = FileReport {
        file: name.clone(),
        kind: None,
        valid: false,
        capability: None,
        seal: None,
        content_hash: None,
        effective_hash: None,
        diagnostics: Vec::new(),
        warnings: Vec::new(),
    };
    let text = match cua_fs::read_to_string_bounded(path, limits::DOCUMENT) {
        Ok(text) => text,
        Err(error) => {
            report.diagnostics.push(Diagnostic::about_file(
                DiagnosticCode::YamlSyntax,
                format!("cannot read the file: {error}"),
                "pass a readable UTF-8 YAML file, a regular file of at most 1 MiB",
                &name,
            ));
            return report;
        }
    };
    let checked = check_source(&name, &text);
    report.kind = checked.kind.map(DocumentKind::name);
    describe(&mut report, &checked);
    report.diagnostics = checked.diagnostics;
    report.warnings = checked.warnings;
    if let (Some(Document::TenantBinding(binding)), true) =
        (&checked.document, report.diagnostics.is_empty())
    {
        match bind(path, &name, &text, binding) {
            Ok(effective) => report.effective_hash = effective.content_hash.map(|h| h.to_string()),
            Err(diagnostics) => report.diagnostics.extend(diagnostics),
        }
    }
    report.valid = checked.document.is_some() && report.diagnostics.is_empty();
    report
}

fn describe(report: &mut FileReport, checked: &Checked) {
    match &checked.document {
        Some(Document::Capability(capability)) => {
            report.capability = Some(capability.reference().to_string());
            report.seal = checked.seal.as_ref().map(SealState::as_str);
            report.content_hash = match &checked.seal {
                Some(SealState::Sealed(hash)) => Some(hash.to_string()),
                _ => Some(capability.compute_hash().to_string()),
            };
        }
        Some(Document::TenantBinding(binding)) => {
            report.capability = Some(binding.capability.to_string());
        }
        Some(Document::Approval(approval)) => {
            report.capability = Some(approval.capability.to_string());
            report.content_hash = Some(approval.content_hash.to_string());
        }
        Some(Document::Evaluation(evaluation)) => {
            report.capability = Some(evaluation.capability.to_string());
            report.content_hash = Some(evaluation.content_hash.to_string());
        }
        Some(Document::RunRecord(record)) => {
            report.capability = record.capability.as_ref().map(ToString::to_string);
        }
        Some(Document::Policy(_)) | None => {}
    }
}

/// Finds the binding's base capability, checks it, and applies the binding to it.
fn bind(
    path: &Path,
    name: &str,
    text: &str,
    binding: &TenantBinding,
) -> Result<Capability, Vec<Diagnostic>> {
    let file_name = binding.capability.file_name();
    let root = path.parent().and_then(Path::parent).and_then(Path::parent);
    // Beside the tenants directory the binding is in, then in the current project's catalog.
    let project_catalog = crate::project::or_default(None, crate::project::DefaultPath::Catalog);
    let candidates: Vec<PathBuf> = root
        .map(|root| root.join("capabilities").join(&file_name))
        .into_iter()
        .chain(project_catalog.ok().map(|catalog| catalog.join(&file_name)))
        .collect();
    let Some((base_path, base_text)) = candidates.iter().find_map(|candidate| {
        cua_fs::read_to_string_bounded(candidate, limits::DOCUMENT)
            .ok()
            .map(|text| (candidate, text))
    }) else {
        let problem = Problem::new(
            DiagnosticCode::BaseNotFound,
            DocPath::root().key("capability"),
            format!("base capability {} not found", binding.capability),
            format!("expected it at {}", candidates[0].display()),
        );
        return Err(Diagnostic::place(
            vec![problem],
            name,
            text,
            &SourceMap::build(text),
        ));
    };
    let base_name = base_path.display().to_string();
    let base_checked = check_source(&base_name, &base_text);
    match base_checked.document {
        Some(Document::Capability(base)) if base_checked.diagnostics.is_empty() => {
            check_binding(name, text, binding, &base)
        }
        _ => {
            let mut diagnostics = base_checked.diagnostics;
            let problem = Problem::new(
                DiagnosticCode::BaseNotSealed,
                DocPath::root().key("capability"),
                format!(
                    "base capability {} at {base_name} is not valid",
                    binding.capability
                ),
                "fix and seal the base capability first",
            );
            diagnostics.extend(Diagnostic::place(
                vec![problem],
                name,
                text,
                &SourceMap::build(text),
            ));
            Err(diagnostics)
        }
    }
}

fn summary(report: &Report) -> String {
    let mut out = String::new();
    for file in &report.files {
        let status = if file.valid { "ok" } else { "invalid" };
        let mut line = format!("{status:<8} {}", file.file);
        if let Some(kind) = file.kind {
            line.push_str(&format!("  {kind}"));
        }
        if let Some(capability) = &file.capability {
            line.push_str(&format!(" {capability}"));
        }
        if let Some(seal) = file.seal {
            line.push_str(&format!(" {seal}"));
        }
        if let Some(hash) = file.effective_hash.as_ref().or(file.content_hash.as_ref()) {
            line.push_str(&format!(" {hash}"));
        }
        if !file.valid {
            line.push_str(&format!(" ({} problem(s))", file.diagnostics.len()));
        }
        if !file.warnings.is_empty() {
            line.push_str(&format!(" ({} warning(s))", file.warnings.len()));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Renders diagnostics for a terminal with miette: colour only on a terminal and without
/// `NO_COLOR`.
pub(crate) fn render_diagnostics<'a>(
    diagnostics: impl IntoIterator<Item = &'a Diagnostic>,
) -> String {
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let theme = if colour {
        miette::GraphicalTheme::unicode()
    } else {
        miette::GraphicalTheme::unicode_nocolor()
    };
    let handler = miette::GraphicalReportHandler::new_themed(theme).with_width(100);
    let mut out = String::new();
    for diagnostic in diagnostics {
        let mut rendered = String::new();
        if handler.render_report(&mut rendered, diagnostic).is_err() {
            rendered = diagnostic.render_plain();
        }
        out.push_str(&rendered);
        out.push('\n');
    }
    out
}
