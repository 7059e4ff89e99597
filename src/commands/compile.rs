//! `cua compile TRACE [--out DIR]`: a discovery (or recording) run becomes a draft capability
//! file, `<out>/<id>@<version>.yaml`. An existing file is never overwritten.

use std::path::{Path, PathBuf};

use cua_artifact::DocumentKind;
use cua_compile::{CompileConfig, CompileError, Compiled, compile, load_run};
use cua_fs::{Dir, FileMode};
use serde::Serialize;

use crate::cli::{CompileArgs, Format};
use crate::error::{CliError, ErrorCode};
use crate::output::{self, Exit};
use crate::project::{self, DefaultPath};

/// What `cua compile` and `cua discover` report about a written draft.
#[derive(Debug, Serialize)]
pub(crate) struct DraftSummary {
    pub(crate) path: String,
    pub(crate) reference: String,
    /// The content hash the draft will have once sealed: the same trace gives the same hash.
    pub(crate) content_hash: String,
    pub(crate) inputs: Vec<String>,
    pub(crate) outputs: Vec<String>,
    pub(crate) steps: usize,
    pub(crate) warnings: Vec<String>,
}

pub(crate) fn run(format: Format, args: &CompileArgs) -> Result<Exit, CliError> {
    let run_dir = if args.trace.is_file() {
        args.trace
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    } else {
        args.trace.clone()
    };
    let transcript = run_dir.join(cua_evidence::TRACE_FILE);
    let drafts = project::or_default(args.out.as_deref(), DefaultPath::Catalog)?;
    let summary = compile_run(&run_dir, &transcript.display().to_string(), &drafts)?;
    output::emit(format, "compile", Some(&summary), None, || render(&summary));
    Ok(Exit::Success)
}

/// Compiles the run in `run_dir` and writes the draft under `out`.
pub(crate) fn compile_run(
    run_dir: &Path,
    transcript_ref: &str,
    out: &Path,
) -> Result<DraftSummary, CliError> {
    let recorded =
        load_run(run_dir).map_err(|error| CliError::chained(ErrorCode::InvalidTrace, &error))?;
    let compiled =
        compile(&recorded, &CompileConfig::new(transcript_ref)).map_err(|error| match error {
            CompileError::GoalNotMet { .. } => {
                CliError::new(ErrorCode::GoalNotMet, error.to_string())
            }
            other => CliError::chained(ErrorCode::CompileFailed, &other),
        })?;
    write_draft(&compiled, out)
}

/// Writes a compiled draft as `<out>/<id>@<version>.yaml`, refusing to overwrite.
pub(crate) fn write_draft(compiled: &Compiled, out: &Path) -> Result<DraftSummary, CliError> {
    let capability = &compiled.capability;
    let reference = capability.reference();
    let path = out.join(reference.file_name());
    let refused = |error: cua_fs::FsError| match error {
        cua_fs::FsError::Exists { .. } => CliError::new(
            ErrorCode::DraftExists,
            format!(
                "{} already exists; a draft never overwrites a catalog file (pass another --out)",
                path.display()
            ),
        ),
        error => CliError::unwritten(&error, ErrorCode::WriteFailed),
    };
    // Written whole, once, and never through a link at `--out` or at the draft's name. In a
    // project, the first line points the reviewer's editor at the capability schema.
    let text = match cua_fs::schema_modeline(&path, &DocumentKind::Capability.schema_path()) {
        Some(modeline) => format!("{modeline}{}", compiled.yaml),
        None => compiled.yaml.clone(),
    };
    Dir::create_all(out, FileMode::Readable)
        .and_then(|directory| {
            directory.write_new(&reference.file_name(), text.as_bytes(), FileMode::Readable)
        })
        .map_err(refused)?;
    Ok(DraftSummary {
        path: path.display().to_string(),
        reference: reference.to_string(),
        content_hash: capability.compute_hash().to_string(),
        inputs: capability
            .inputs
            .iter()
            .map(|input| match &input.pattern {
                Some(pattern) => {
                    format!("{} ({}, {pattern})", input.name, input.value_type.as_str())
                }
                None => format!("{} ({})", input.name, input.value_type.as_str()),
            })
            .collect(),
        outputs: capability
            .outputs
            .iter()
            .map(|output| format!("{} ({})", output.name, output.value_type.as_str()))
            .collect(),
        steps: capability.steps.len(),
        warnings: compiled.warnings.clone(),
    })
}

pub(crate) fn render(summary: &DraftSummary) -> String {
    let mut text = format!(
        "wrote {} ({}, {} steps)\n  inputs : {}\n  outputs: {}\n  hash once sealed: {}\n",
        summary.path,
        summary.reference,
        summary.steps,
        join(&summary.inputs),
        join(&summary.outputs),
        summary.content_hash,
    );
    for warning in &summary.warnings {
        text.push_str(&format!("  warning: {warning}\n"));
    }
    text.push_str("This is a DRAFT: it declares no outcomes and no recovery. Review provenance.notes, then seal it.\n");
    text
}

fn join(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}
