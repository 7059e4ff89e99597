//! The optional OpenTelemetry export the commands that run a capability share: the collector is
//! read from the standard `OTEL_EXPORTER_OTLP_*` variables before anything starts, and a
//! finished run's spans are sent once it has ended.

use std::path::Path;

use cua_otel::{OtelError, OtlpConfig};

use crate::error::CliError;

/// The collector the environment names, or `None` (export off). A setting cua cannot use is a
/// usage error now, before a browser or a model starts, not a surprise after the run.
pub(crate) fn otlp() -> Result<Option<OtlpConfig>, CliError> {
    OtlpConfig::from_env(|name| std::env::var(name).ok())
        .map_err(|error| CliError::usage(error.to_string()))
}

/// Sends a finished run's spans to the collector, from its trace as written, every text through
/// `redact` once more (the run's final redactor knows values read late in the run). A run that
/// happened stays as it ended whatever the collector does: a failed export is a warning, and
/// after one the process tries no more.
pub(crate) async fn export_run(
    otlp: &OtlpConfig,
    run_dir: &Path,
    redact: &(dyn Fn(&str) -> String + Sync),
) {
    let exported = match cua_evidence::read_trace(run_dir) {
        Ok(lines) => cua_otel::export(otlp, &lines, redact).await.map(|_| ()),
        Err(error) => Err(OtelError::Export {
            endpoint: otlp.shown_endpoint(),
            reason: format!("the trace cannot be read: {error}"),
        }),
    };
    if let Err(error) = exported {
        eprintln!(
            "cua: warning: {error} (the run itself is unaffected; its evidence is in {})",
            run_dir.display()
        );
    }
}
