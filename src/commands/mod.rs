//! One module per verb: turn parsed arguments into settings, call a library crate, map the
//! result to an exit code.

mod catalog;
mod console;
mod evidence;

mod codegen;
mod compile;
#[cfg(feature = "fixture")]
mod demo;
mod discover;
mod eval;
#[cfg(feature = "fixture")]
mod fixture;
mod mcp;
mod probe;

mod record;
mod replay;
mod route;

mod schema;
mod seal;
mod serve;
#[cfg(feature = "fixture")]
mod supervised;
mod validate;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::output::{self, Exit};

/// Runs the parsed command line.
pub(crate) fn run(cli: Cli) -> ExitCode {
    let format = cli.format;
    let exit = match cli.command {
        Command::Evidence(crate::cli::EvidenceCommand::Verify(args)) => {
            evidence::verify(format, &args)
        }
        Command::Evidence(crate::cli::EvidenceCommand::Keygen(args)) => {
            evidence::keygen(format, &args)
        }
        Command::Replay(args) => replay::run(format, &args),
        Command::Validate(args) => validate::run(format, &args),
        Command::Seal(args) => seal::run(format, &args),
        Command::Schema(args) => schema::run(format, &args),
        Command::Catalog(args) => catalog::run(format, &args),
        Command::Version => {
            let version = env!("CARGO_PKG_VERSION");
            output::emit(format, "version", Some(&version), None, || {
                format!("cua {version}\n")
            });
            Exit::Success
        }
        #[cfg(feature = "fixture")]
        Command::Fixture(crate::cli::FixtureCommand::Serve(args)) => fixture::serve(format, &args),
        Command::Console(args) => console::run(format, &args),
        Command::Record(args) => record::run(format, &args),
        Command::Discover(args) => discover::run(format, &args),
        Command::Compile(args) => compile::run(format, &args),
        Command::Eval(args) => eval::run(format, &args),
        Command::Mcp(args) => mcp::run(&args),
        Command::Serve(args) => serve::run(format, &args),
        #[cfg(feature = "fixture")]
        Command::Demo(args) => demo::run(format, &args),
        Command::Codegen(args) => codegen::run(format, &args),
        Command::Probe(args) => probe::run(format, &args),
        Command::Route(crate::cli::RouteCommand::Explain(args)) => route::explain(format, &args),
    };
    exit.into()
}

/// The exit and code of evidence a command could not start: an evidence root or run directory
/// refused for what is at its path (a link, another user's directory) is the user's to fix
/// (exit 2); anything else failed (exit 1).
pub(crate) fn evidence_failure(error: &cua_evidence::EvidenceError) -> (Exit, &'static str) {
    match error {
        cua_evidence::EvidenceError::File(file) if file.is_refusal() => {
            (Exit::Usage, "refused_path")
        }
        cua_evidence::EvidenceError::InvalidRedactionRule { .. } => {
            (Exit::Usage, "invalid_document")
        }
        _ => (Exit::Failed, "evidence_unwritable"),
    }
}

/// An error and its sources on one line, `outer: cause: root`.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
