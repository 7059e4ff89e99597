//! `cua seal FILE`: write a capability's content hash into its file. Only the `content_hash`
//! value changes; comments and layout stay. The file is replaced atomically (temporary file in
//! the same directory, created exclusively, then rename; see `cua-fs`), a file that is a symbolic
//! link is refused, and an invalid document is refused untouched.

use cua_artifact::{Diagnostic, seal_source};
use cua_fs::FileMode;
use serde::Serialize;

use crate::cli::{Format, SealArgs};
use crate::commands::validate::render_diagnostics;
use crate::error::{CliError, ErrorCode};
use crate::limits;
use crate::output::{self, Exit, emit};

#[derive(Debug, Serialize)]
struct SealReport {
    file: String,
    content_hash: Option<String>,
    /// The state before sealing: draft, sealed or tampered.
    previous: Option<&'static str>,
    changed: bool,
    diagnostics: Vec<Diagnostic>,
}

/// Seals one file.
pub(crate) fn run(format: Format, args: &SealArgs) -> Result<Exit, CliError> {
    let name = args.file.display().to_string();
    let mut report = SealReport {
        file: name.clone(),
        content_hash: None,
        previous: None,
        changed: false,
        diagnostics: Vec::new(),
    };
    let outcome = cua_fs::read_to_string_bounded(&args.file, limits::DOCUMENT)
        .map_err(|error| {
            vec![super::validate::unreadable(
                &args.file,
                &error,
                "capability file",
            )]
        })
        .and_then(|text| seal_source(&name, &text));
    let error = match outcome {
        Ok(sealed) => {
            report.content_hash = Some(sealed.hash.to_string());
            report.previous = Some(sealed.previous.as_str());
            report.changed = sealed.changed();
            // A link at the file is refused, not replaced: the seal belongs in the file it
            // names, which the user should seal by its own path.
            match if sealed.changed() {
                cua_fs::write_atomic(&args.file, sealed.text.as_bytes(), FileMode::Readable)
            } else {
                Ok(())
            } {
                Ok(()) => None,
                Err(error) => {
                    let refused = CliError::unwritten(&error, ErrorCode::WriteFailed);
                    Some(CliError::new(
                        refused.code(),
                        format!("nothing was written: {error}"),
                    ))
                }
            }
        }
        Err(diagnostics) => {
            report.diagnostics = diagnostics;
            let problems: Vec<&cua_artifact::Diagnostic> = report.diagnostics.iter().collect();
            Some(
                CliError::new(
                    ErrorCode::InvalidDocument,
                    format!("{name} is not a valid capability; nothing was written"),
                )
                .with_help(crate::error::diagnostics_help(&problems)),
            )
        }
    };
    if format == Format::Text {
        eprint!("{}", render_diagnostics(&report.diagnostics));
    }
    if let Some(error) = error {
        return Ok(output::fail_with(format, "seal", Some(&report), &error));
    }
    emit(format, "seal", Some(&report), None, || {
        let hash = report.content_hash.as_deref().unwrap_or_default();
        if report.changed {
            format!("sealed   {name} {hash}\n")
        } else {
            format!("unchanged {name} {hash} (already sealed)\n")
        }
    });
    Ok(Exit::Success)
}
