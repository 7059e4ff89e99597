//! `cua probe <ref|file> --snapshots RUN_DIR [--tenant T]`: resolve every step's target against
//! the snapshots a run recorded, without touching a live system. Exit 0 when every target is
//! unique and undrifted, 1 when one is drifted, ambiguous or missing, 2 for a usage error (an
//! unknown capability, a directory without snapshots).

use cua_compile::probe::{load_snapshots, probe};

use crate::cli::{Format, ProbeArgs};
use crate::commands::codegen::load;
use crate::error::{CliError, ErrorCode};
use crate::output::{Exit, emit};

/// Runs `cua probe`.
pub(crate) fn run(format: Format, args: &ProbeArgs) -> Result<Exit, CliError> {
    let loaded = load(
        &args.capability,
        args.tenant.as_deref(),
        &args.paths.catalog()?,
        &args.paths.tenants_for(args.tenant.as_deref())?,
    )?;
    let run = load_snapshots(&args.snapshots)
        .map_err(|error| CliError::new(ErrorCode::NoSnapshots, error.to_string()))?;
    let report = probe(&loaded.capability, &run);
    let clean = report.is_clean();
    let error = (!clean).then(|| {
        ErrorCode::ProbeFoundDrift.envelope(format!(
            "{} drifted, {} ambiguous, {} missing, {} not reached",
            report.summary.drifted,
            report.summary.ambiguous,
            report.summary.missing,
            report.summary.not_reached
        ))
    });
    emit(format, "probe", Some(&report), error.as_ref(), || {
        let mut text = report.render_text();
        if let Some(tenant) = &loaded.tenant {
            text.insert_str(0, &format!("tenant {tenant}: "));
        }
        text
    });
    Ok(if clean {
        Exit::Success
    } else {
        ErrorCode::ProbeFoundDrift.exit()
    })
}
