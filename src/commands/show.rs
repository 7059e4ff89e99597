//! `cua show RUN_DIR [--out FILE]`: one run's evidence as one self-contained page.

use std::path::PathBuf;

use cua_fs::FileMode;
use serde::Serialize;

use crate::cli::{Format, ShowArgs};
use crate::error::{CliError, ErrorCode};
use crate::output::{Exit, emit};

/// Writes the page and says where it is.
pub(crate) fn run(format: Format, args: &ShowArgs) -> Result<Exit, CliError> {
    #[derive(Serialize)]
    struct Written {
        page: String,
        url: String,
        run_dir: String,
    }
    if !args.run_dir.join(cua_evidence::TRACE_FILE).is_file() {
        return Err(CliError::new(
            ErrorCode::NotARunDir,
            format!(
                "{} is not a run directory: it holds no {} (pass <evidence root>/<run id>, such \
                 as a path `cua replay` printed)",
                args.run_dir.display(),
                cua_evidence::TRACE_FILE
            ),
        ));
    }
    // Evidence is redacted when written; a screenshot is checked again for the policy's
    // secrets by the run that kept it, so the page takes every one the trace names.
    let run_dir = args.run_dir.canonicalize().map_err(|error| {
        CliError::new(
            ErrorCode::ReadFailed,
            format!("cannot read {}: {error}", args.run_dir.display()),
        )
    })?;
    let out = match &args.out {
        Some(out) => out.clone(),
        None => {
            let name = run_dir.file_name().map_or_else(
                || "run".to_owned(),
                |name| name.to_string_lossy().into_owned(),
            );
            // Run from inside the run, the page goes beside it, never into it.
            let here = std::env::current_dir().unwrap_or_default();
            match run_dir.parent() {
                Some(parent) if here.starts_with(&run_dir) => parent.join(format!("{name}.html")),
                _ => PathBuf::from(format!("{name}.html")),
            }
        }
    };
    // A file in the run directory is one its run_end does not name: verification would call
    // the run tampered with from then on.
    let parent = match out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if parent
        .canonicalize()
        .is_ok_and(|parent| parent.starts_with(&run_dir))
    {
        return Err(CliError::new(
            ErrorCode::Usage,
            format!(
                "--out {} is inside the run directory, whose files verification checks: write \
                 the page elsewhere",
                out.display()
            ),
        ));
    }
    let page = cua_console::show::render(&args.run_dir, &|_| false)
        .map_err(|error| CliError::new(ErrorCode::EvidenceUnreadable, error.to_string()))?;
    cua_fs::write_atomic(&out, page.as_bytes(), FileMode::Private).map_err(|error| {
        CliError::new(
            ErrorCode::WriteFailed,
            format!("cannot write {}: {error}", out.display()),
        )
    })?;
    let absolute = std::path::absolute(&out).unwrap_or_else(|_| out.clone());
    let written = Written {
        page: out.display().to_string(),
        url: format!("file://{}", absolute.display()),
        run_dir: args.run_dir.display().to_string(),
    };
    emit(format, "show", Some(&written), None, || {
        format!("wrote {}\nopen {}\n", written.page, written.url)
    });
    Ok(Exit::Success)
}
