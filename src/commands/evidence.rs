//! `cua evidence verify RUN_DIR`: checks a run directory's hash chain, the files its trace
//! names and its run record. Exit 0 when everything committed verifies (a killed run verifies as
//! a prefix), 1 when the evidence is broken or unreadable, 2 when the path is not a run
//! directory.

use cua_evidence::EvidenceError;

use crate::cli::{EvidenceVerifyArgs, Format};
use crate::output::{EnvelopeError, Exit, emit};

/// Verifies one run directory.
pub(crate) fn verify(format: Format, args: &EvidenceVerifyArgs) -> Exit {
    let run_dir = args.run_dir.display().to_string();
    let report = match cua_evidence::verify(&args.run_dir) {
        Ok(report) => report,
        Err(error) => {
            let (exit, code) = match error {
                EvidenceError::NotARunDir { .. } => (Exit::Usage, "not_a_run_dir"),
                _ => (Exit::Failed, "evidence_unreadable"),
            };
            let error = EnvelopeError {
                code: code.to_owned(),
                message: error.to_string(),
            };
            if format == Format::Text {
                eprintln!("error: {}", error.message);
            }
            emit::<()>(format, "evidence verify", None, Some(&error), String::new);
            return exit;
        }
    };
    let error = report.broken.as_ref().map(|broken| EnvelopeError {
        code: "evidence_broken".to_owned(),
        message: broken.message.clone(),
    });
    emit(
        format,
        "evidence verify",
        Some(&report),
        error.as_ref(),
        || format!("{run_dir}: {}\n", report.summary()),
    );
    if report.is_intact() {
        Exit::Success
    } else {
        Exit::Failed
    }
}
