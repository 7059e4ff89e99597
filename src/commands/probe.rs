//! `cua probe <ref|file> --snapshots RUN_DIR [--tenant T]`: resolve every step's target against
//! the snapshots a run recorded, without touching a live system. Exit 0 when every target is
//! unique and undrifted, 1 when one is drifted, ambiguous or missing, 2 for a usage error (an
//! unknown capability, a directory without snapshots).

use cua_compile::probe::{load_snapshots, probe};

use crate::cli::{Format, ProbeArgs};
use crate::commands::codegen::{Failure, load};
use crate::output::{EnvelopeError, Exit, emit};

/// Runs `cua probe`.
pub(crate) fn run(format: Format, args: &ProbeArgs) -> Exit {
    let loaded = match load(
        &args.capability,
        args.tenant.as_deref(),
        &args.paths.catalog,
        &args.paths.tenants,
    ) {
        Ok(loaded) => loaded,
        Err(failure) => return failure.report(format, "probe"),
    };
    let run = match load_snapshots(&args.snapshots) {
        Ok(run) => run,
        Err(error) => {
            return Failure::new(Exit::Usage, "no_snapshots", error.to_string())
                .report(format, "probe");
        }
    };
    let report = probe(&loaded.capability, &run);
    let clean = report.is_clean();
    let error = (!clean).then(|| EnvelopeError {
        code: "probe_found_drift".to_owned(),
        message: format!(
            "{} drifted, {} ambiguous, {} missing, {} not reached",
            report.summary.drifted,
            report.summary.ambiguous,
            report.summary.missing,
            report.summary.not_reached
        ),
    });
    emit(format, "probe", Some(&report), error.as_ref(), || {
        let mut text = report.render_text();
        if let Some(tenant) = &loaded.tenant {
            text.insert_str(0, &format!("tenant {tenant}: "));
        }
        text
    });
    if clean { Exit::Success } else { Exit::Failed }
}
