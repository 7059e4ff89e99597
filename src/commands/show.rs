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
    let page = cua_console::show::render(&args.run_dir, &|_| false)
        .map_err(|error| CliError::new(ErrorCode::NotARunDir, error.to_string()))?;
    let out = match &args.out {
        Some(out) => out.clone(),
        None => {
            let name = args
                .run_dir
                .canonicalize()
                .ok()
                .and_then(|dir| {
                    dir.file_name()
                        .map(|name| name.to_string_lossy().into_owned())
                })
                .unwrap_or_else(|| "run".to_owned());
            PathBuf::from(format!("{name}.html"))
        }
    };
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
