//! `cua validate PATH...`: check every document in the files, directories and patterns given,
//! report every problem, exit 2 if any is invalid.
//!
//! A tenant binding is checked by applying it to its base capability, and an eval suite
//! against the capability it evaluates, found by the catalog convention:
//! `<root>/capabilities/<id>@<version>.yaml`, where the document lives at
//! `<root>/<dir>/<…>/<file>.yaml` (or, failing that, in the project's catalog).

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
    let files: Vec<FileReport> = args
        .files
        .iter()
        .flat_map(|given| match expand(given) {
            Ok(paths) => paths.iter().map(|path| check_file(path)).collect(),
            Err(report) => vec![*report],
        })
        .collect();
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

/// The documents a path names: a file as it is, every document under a directory, or what a
/// pattern matches, sorted. A path that names none is an invalid entry of its own, never
/// skipped: `cua validate 'capabilites/*.yaml'` must not pass by checking nothing.
fn expand(given: &Path) -> Result<Vec<PathBuf>, Box<FileReport>> {
    let name = given.display().to_string();
    let none = |message: String, help: String| {
        let mut report = FileReport::empty(&name);
        report.diagnostics.push(Diagnostic::about_file(
            DiagnosticCode::Unreadable,
            message,
            help,
            &name,
        ));
        Box::new(report)
    };
    let is_pattern = name.contains(['*', '?', '[']);
    if given.is_dir() {
        let mut found = Vec::new();
        documents_under(given, &mut found);
        found.sort();
        if found.is_empty() {
            return Err(none(
                format!("{name} holds no document"),
                "a document is a *.yaml or *.yml file, an *.evaluation.json or a run_record.json"
                    .to_owned(),
            ));
        }
        return Ok(found);
    }
    if !is_pattern || given.exists() {
        return Ok(vec![given.to_path_buf()]);
    }
    let matched = glob::glob(&name).map_err(|error| {
        none(
            format!("`{name}` is not a valid pattern: {error}"),
            "use `*`, `?`, `**` and `[…]` as a shell does".to_owned(),
        )
    })?;
    let mut found: Vec<PathBuf> = matched
        .flatten()
        .flat_map(|path| {
            if path.is_dir() {
                let mut under = Vec::new();
                documents_under(&path, &mut under);
                under
            } else {
                vec![path]
            }
        })
        .collect();
    found.sort();
    found.dedup();
    if found.is_empty() {
        return Err(none(
            format!("`{name}` matches no file"),
            "check the pattern; a relative one is taken from the current directory".to_owned(),
        ));
    }
    Ok(found)
}

/// Every document under `directory`: YAML files that are cua's, evaluations and run records;
/// hidden entries, build output and symbolic links left alone. A directory or entry that cannot
/// be read is listed as it is, so it is reported as unreadable, never passed over.
fn documents_under(directory: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(directory) else {
        found.push(directory.to_path_buf());
        return;
    };
    let in_document_directory = directory.components().any(|part| {
        matches!(
            part.as_os_str().to_str(),
            Some("capabilities" | "tenants" | "evals")
        )
    });
    for entry in entries {
        let Ok(entry) = entry else {
            found.push(directory.to_path_buf());
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        // Hidden entries and what build tools leave (a cargo `target/` marks itself with
        // CACHEDIR.TAG; `node_modules/`) hold no document of the project.
        if name.starts_with('.')
            || name == "node_modules"
            || (name == "target" && path.join("CACHEDIR.TAG").is_file())
        {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            found.push(path);
            continue;
        };
        if kind.is_dir() {
            documents_under(&path, found);
        } else if kind.is_file()
            && (name.ends_with(".evaluation.json")
                || name == "run_record.json"
                || ((name.ends_with(".yaml") || name.ends_with(".yml"))
                    && (in_document_directory || names_a_schema(&path))))
        {
            found.push(path);
        }
    }
}

/// A document that cannot be read: the nearest name beside it for one that is not there.
pub(crate) fn unreadable(path: &Path, error: &cua_fs::FsError, what: &str) -> Diagnostic {
    let help = match crate::error::nearest_sibling(path).filter(|_| error.is_not_found()) {
        Some(near) => format!("did you mean `{}`?", near.display()),
        None => format!("pass a readable UTF-8 {what}, a regular file of at most 1 MiB"),
    };
    Diagnostic::about_file(
        DiagnosticCode::Unreadable,
        format!("cannot read the file: {error}"),
        help,
        &path.display().to_string(),
    )
}

/// Whether a YAML file found in a directory says it is cua's: a `schema` key naming a `cua.`
/// kind, or a modeline to a schema. A project also holds YAML that is not cua's (a CI workflow,
/// a compose file), which is left alone; one under `capabilities/`, `tenants/` or `evals/` is
/// always checked, so a document that lost its `schema:` line is still caught there.
fn names_a_schema(path: &Path) -> bool {
    cua_fs::read_to_string_bounded(path, limits::DOCUMENT).map_or(true, |text| {
        text.lines().any(|line| {
            let line = line.trim_start_matches('\u{feff}').trim();
            let key = line.trim_start_matches(['"', '\'']);
            (key.starts_with("schema") && line.contains("cua."))
                || (line.starts_with("# yaml-language-server:") && line.contains(".schema.json"))
        })
    })
}

impl FileReport {
    fn empty(name: &str) -> Self {
        Self {
            file: name.to_owned(),
            kind: None,
            valid: false,
            capability: None,
            seal: None,
            content_hash: None,
            effective_hash: None,
            diagnostics: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

fn check_file(path: &Path) -> FileReport {
    let name = path.display().to_string();
    let mut report = FileReport::empty(&name);
    let text = match cua_fs::read_to_string_bounded(path, limits::DOCUMENT) {
        Ok(text) => text,
        Err(error) => {
            report
                .diagnostics
                .push(unreadable(path, &error, "YAML file"));
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
    if let (Some(Document::EvalSuite(suite)), true) =
        (&checked.document, report.diagnostics.is_empty())
    {
        report
            .diagnostics
            .extend(check_suite(path, &name, &text, suite));
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
        Some(Document::EvalSuite(suite)) => {
            report.capability = Some(suite.capability.to_string());
        }
        Some(Document::Policy(_)) | None => {}
    }
}

/// A capability `document` (at `path`) names, checked: found beside the directory the
/// document is in (`<root>/capabilities/`, for `<root>/<dir>/…/<file>`), then in the
/// project's catalog. Not found or not valid is a problem placed at the document's
/// `capability:` key, with the base's own diagnostics.
fn named_capability(
    path: &Path,
    name: &str,
    text: &str,
    reference: &cua_artifact::CapabilityRef,
) -> Result<Capability, Vec<Diagnostic>> {
    let file_name = reference.file_name();
    let place =
        |problem: Problem| Diagnostic::place(vec![problem], name, text, &SourceMap::build(text));
    let project_catalog = crate::project::or_default(None, crate::project::DefaultPath::Catalog);
    let candidates: Vec<PathBuf> = path
        .ancestors()
        .skip(2)
        .take(2)
        .map(|root| root.join("capabilities").join(&file_name))
        .chain(project_catalog.ok().map(|catalog| catalog.join(&file_name)))
        .collect();
    let Some((base_path, base_text)) = candidates.iter().find_map(|candidate| {
        cua_fs::read_to_string_bounded(candidate, limits::DOCUMENT)
            .ok()
            .map(|text| (candidate, text))
    }) else {
        return Err(place(Problem::new(
            DiagnosticCode::BaseNotFound,
            DocPath::root().key("capability"),
            format!("capability {reference} not found"),
            format!(
                "expected it at {}",
                candidates
                    .iter()
                    .map(|candidate| candidate.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        )));
    };
    let base_name = base_path.display().to_string();
    let base_checked = check_source(&base_name, &base_text);
    match base_checked.document {
        Some(Document::Capability(base)) if base_checked.diagnostics.is_empty() => Ok(*base),
        _ => {
            let mut diagnostics = base_checked.diagnostics;
            diagnostics.extend(place(Problem::new(
                DiagnosticCode::BaseNotSealed,
                DocPath::root().key("capability"),
                format!("capability {reference} at {base_name} is not valid"),
                "fix and seal the capability first",
            )));
            Err(diagnostics)
        }
    }
}

/// Finds the binding's base capability, checks it, and applies the binding to it.
fn bind(
    path: &Path,
    name: &str,
    text: &str,
    binding: &TenantBinding,
) -> Result<Capability, Vec<Diagnostic>> {
    let base = named_capability(path, name, text, &binding.capability)?;
    check_binding(name, text, binding, &base)
}

/// An eval suite against the capability it evaluates: inputs it declares, outputs it returns,
/// outcomes it declares.
fn check_suite(
    path: &Path,
    name: &str,
    text: &str,
    suite: &cua_artifact::EvalSuite,
) -> Vec<Diagnostic> {
    let capability = match named_capability(path, name, text, &suite.capability) {
        Ok(capability) => capability,
        Err(diagnostics) => return diagnostics,
    };
    let problems = suite
        .check(&capability)
        .into_iter()
        .map(|message| {
            Problem::new(
                DiagnosticCode::InvalidValue,
                DocPath::root().key("cases"),
                message,
                format!("a case may name only what {} declares", suite.capability),
            )
        })
        .collect();
    Diagnostic::place(problems, name, text, &SourceMap::build(text))
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
