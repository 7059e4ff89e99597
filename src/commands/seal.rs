//! `cua seal FILE`: write a capability's content hash into its file. Only the `content_hash`
//! value changes; comments and layout stay. The file is replaced atomically (temporary file in
//! the same directory, then rename), and an invalid document is refused untouched.

use std::io::Write;
use std::path::Path;

use cua_artifact::{Diagnostic, DiagnosticCode, seal_source};
use serde::Serialize;

use crate::cli::{Format, SealArgs};
use crate::commands::validate::render_diagnostics;
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
    let outcome = std::fs::read_to_string(&args.file)
        .map_err(|error| {
            vec![Diagnostic::about_file(
                DiagnosticCode::YamlSyntax,
                format!("cannot read the file: {error}"),
                "pass a readable UTF-8 capability file",
                &name,
            )]
        })
        .and_then(|text| seal_source(&name, &text));
    let (exit, error) = match outcome {
        Ok(sealed) => {
            report.content_hash = Some(sealed.hash.to_string());
            report.previous = Some(sealed.previous.as_str());
            report.changed = sealed.changed();
            match if sealed.changed() {
                write_atomically(&args.file, &sealed.text)
            } else {
                Ok(())
            } {
                Ok(()) => (Exit::Success, None),
                Err(error) => (
                    Exit::Failed,
                    Some(EnvelopeError {
                        code: "write_failed".to_owned(),
                        message: format!("cannot write {name}: {error}"),
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

/// Writes next to the target, flushes, then renames over it: a crash leaves the old file or the
/// new one, never half of each.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let directory = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = directory.join(format!(".{file_name}.seal-{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}
