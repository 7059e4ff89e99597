//! Exit codes and the JSON envelope every command prints with `--format json`: the one place
//! a result or a failure is printed.

use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;

use crate::cli::Format;
use crate::error::CliError;

/// The JSON envelope's schema version; bump it when the envelope's shape changes.
pub(crate) const ENVELOPE_SCHEMA_VERSION: &str = "cua.envelope/v1";

/// Exit codes: the one place a command's outcome becomes a process status (README.md lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Success, or a declared business outcome.
    Success = 0,
    /// The run or command failed.
    Failed = 1,
    /// Usage error or invalid document.
    Usage = 2,
    /// The run stopped and needs a human.
    NeedsHuman = 3,
    /// A surface or target is unavailable (no browser, dead app).
    Unavailable = 69,
    /// Stopped by SIGINT (128 + 2): nothing more was dispatched.
    Interrupted = 130,
    /// Stopped by SIGTERM (128 + 15): nothing more was dispatched.
    Terminated = 143,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit as u8)
    }
}

/// An error the envelope carries: a stable code, a message, and when there is one a help line
/// saying what to do.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct EnvelopeError {
    pub(crate) code: String,
    pub(crate) message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) help: Option<String>,
}

impl EnvelopeError {
    /// An error with no help line: a run's own failure, whose message says what happened.
    pub(crate) fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            help: None,
        }
    }
}

#[derive(Serialize)]
struct Envelope<'a, T: Serialize> {
    ok: bool,
    schema_version: &'static str,
    command: &'a str,
    meta: serde_json::Value,
    data: Option<&'a T>,
    error: Option<&'a EnvelopeError>,
}

/// Prints a command's result: JSON envelope on stdout in JSON mode, otherwise the text the
/// caller rendered. A closed stdout (broken pipe) is not an error.
pub(crate) fn emit<T: Serialize>(
    format: Format,
    command: &str,
    data: Option<&T>,
    error: Option<&EnvelopeError>,
    text: impl FnOnce() -> String,
) {
    let rendered = match format {
        Format::Json => {
            let envelope = Envelope {
                ok: error.is_none(),
                schema_version: ENVELOPE_SCHEMA_VERSION,
                command,
                meta: serde_json::json!({ "cua_version": env!("CARGO_PKG_VERSION") }),
                data,
                error,
            };
            let mut line = serde_json::to_string(&envelope)
                .expect("the envelope holds only serializable values");
            line.push('\n');
            line
        }
        Format::Text => text(),
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(rendered.as_bytes());
    let _ = stdout.flush();
}

/// Prints a command's failure once: `error: …` on stderr in text, the envelope on stdout in
/// JSON. Returns the exit status its code means.
pub(crate) fn fail(format: Format, command: &str, error: &CliError) -> Exit {
    fail_with::<()>(format, command, None, error)
}

/// As [`fail`], with the data the command got as far as producing.
pub(crate) fn fail_with<T: Serialize>(
    format: Format,
    command: &str,
    data: Option<&T>,
    error: &CliError,
) -> Exit {
    report(format, command, data, Some(error), String::new)
}

/// Prints what a command produced and, when it failed, why: `error: …` on stderr and the
/// command's own text on stdout in text mode, one envelope in JSON. Returns the exit status:
/// the error's, or success.
pub(crate) fn report<T: Serialize>(
    format: Format,
    command: &str,
    data: Option<&T>,
    error: Option<&CliError>,
    text: impl FnOnce() -> String,
) -> Exit {
    if let Some(error) = error
        && format == Format::Text
    {
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "error: {}", error.message());
        if let Some(help) = error.help() {
            let _ = writeln!(stderr, "  help: {help}");
        }
    }
    let envelope = error.map(CliError::envelope);
    emit(format, command, data, envelope.as_ref(), text);
    error.map_or(Exit::Success, CliError::exit)
}
