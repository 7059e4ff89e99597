//! `cua seal FILE`: write a capability's content hash into its file. Only the `content_hash`
//! value changes; comments and layout stay. The file is replaced atomically (temporary file in
//! the same directory, created exclusively, then rename; see `cua-fs`), a file that is a symbolic
//! link is refused, and an invalid document is refused untouched.

use cua_artifact::{Diagnostic, DiagnosticCode, seal_source};
use cua_fs::FileMode;
use serde::Serialize;

use crate::cli::{Format, SealArgs};
use crate::commands::validate::render_diagnostics;
use crate::limits;
use crate::output::{EnvelopeError, Exit, emit};

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
pub(crate) fn run(format: Format, args: &SealArgs) -> Exit {
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
            vec![Diagnostic::about_file(
                DiagnosticCode::YamlSyntax,
                format!("cannot read the file: {error}"),
                "pass a readable UTF-8 capability file, a regular file of at most 1 MiB",
                &name,
            )]
        })
        .and_then(|text| seal_source(&name, &text));
    let (exit, error) = match outcome {
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
                Ok(()) => (Exit::Success, None),
                Err(error) if error.is_refusal() => (
                    Exit::Usage,
                    Some(EnvelopeError {
                        code: "refused_path".to_owned(),
                        message: format!("nothing was written: {error}"),
                    }),
                ),
                Err(error) => (
                    Exit::Failed,
                    Some(EnvelopeError {
                        code: "write_failed".to_owned(),
                        message: error.to_string(),
                    }),
                ),
            }
        }
        Err(diagnostics) => {
            report.diagnostics = diagnostics;
            (
                Exit::Usage,
                Some(EnvelopeError {
                    code: "invalid_document".to_owned(),
                    message: format!("{name} is not a valid capability; nothing was written"),
                }),
            )
        }
    };
    if format == Format::Text {
        eprint!("{}", render_diagnostics(&report.diagnostics));
        if let Some(error) = &error {
            eprintln!("error: {}", error.message);
        }
    }
    emit(format, "seal", Some(&report), error.as_ref(), || {
        match (&report.content_hash, report.changed) {
            (Some(hash), true) => format!("sealed   {name} {hash}\n"),
            (Some(hash), false) => format!("unchanged {name} {hash} (already sealed)\n"),
            (None, _) => String::new(),
        }
    });
    exit
}
