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
mod init;
mod manual;
mod mcp;
mod policy;
mod probe;

mod record;
mod replay;
mod route;

mod schema;
mod seal;
mod serve;
mod show;
#[cfg(feature = "fixture")]
mod supervised;
mod telemetry;
mod validate;

use std::process::ExitCode;

use crate::cli::{BatchCommand, CatalogCommand, Cli, Command, EvidenceCommand, RouteCommand};
use crate::error::CliError;
use crate::output::{self, Exit};

/// Runs the parsed command line. A command returns its exit status or its failure, and the
/// failure is printed here, once.
pub(crate) fn run(cli: Cli) -> ExitCode {
    let name = name(&cli.command);
    // `cua mcp`'s stdout is the protocol: its failures go to stderr only.
    let format = match cli.command {
        Command::Mcp(_) => crate::cli::Format::Text,
        _ => cli.format,
    };
    let result: Result<Exit, CliError> = match cli.command {
        Command::Evidence(EvidenceCommand::Verify(args)) => evidence::verify(format, &args),
        Command::Evidence(EvidenceCommand::Keygen(args)) => evidence::keygen(format, &args),
        Command::Show(args) => show::run(format, &args),
        Command::Replay(args) => replay::run(format, &args),
        Command::Batch(BatchCommand::Submit(args)) => replay::queue::submit(format, &args),
        Command::Batch(BatchCommand::Status(args)) => replay::queue::status(format, &args),
        Command::Batch(BatchCommand::Results(args)) => replay::queue::results(format, &args),
        Command::Worker(args) => replay::queue::worker(format, &args),
        Command::Init(args) => init::run(format, &args),
        Command::Validate(args) => validate::run(format, &args),
        Command::Seal(args) => seal::run(format, &args),
        Command::Schema(args) => Ok(schema::run(format, &args)),
        Command::Completions(args) => manual::completions(&args),
        Command::Man(args) => manual::man(format, &args),
        Command::Catalog(args) => catalog::run(format, &args),
        Command::Version => {
            let version = env!("CARGO_PKG_VERSION");
            output::emit(format, "version", Some(&version), None, || {
                format!("cua {version}\n")
            });
            Ok(Exit::Success)
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
        Command::Route(RouteCommand::Explain(args)) => route::explain(format, &args),
    };
    result
        .unwrap_or_else(|error| output::fail(format, name, &error))
        .into()
}

/// A capability by file path, `id@version`, or `id` (its latest version in the catalog), the
/// reference resolved as every command resolves one and the document read and checked as
/// every command reads one (a tampered or invalid one refused with its help).
pub(crate) fn load_capability(
    reference: &str,
    catalog: &cua_catalog::Catalog,
) -> Result<cua_artifact::Capability, CliError> {
    let as_file = std::path::Path::new(reference);
    let path = if as_file.is_file() {
        as_file.to_path_buf()
    } else {
        let resolved = catalog
            .resolve(reference)
            .map_err(|error| CliError::from(&error))?;
        catalog
            .entry(&resolved)
            .map_err(|error| CliError::from(&error))?
            .path
    };
    let text = cua_fs::read_to_string_bounded(&path, crate::limits::DOCUMENT)
        .map_err(|error| CliError::unread(&path, &error))?;
    cua_artifact::Capability::from_yaml(&text)
        .map_err(|error| crate::error::invalid_document(&path, &error))
}

/// The command's name as its envelope carries it.
fn name(command: &Command) -> &'static str {
    match command {
        Command::Init(_) => "init",
        Command::Validate(_) => "validate",
        Command::Seal(_) => "seal",
        Command::Schema(_) => "schema",
        Command::Completions(_) => "completions",
        Command::Man(_) => "man",
        Command::Catalog(args) => match args.command {
            CatalogCommand::List => "catalog list",
            CatalogCommand::Show(_) => "catalog show",
            CatalogCommand::Approve(_) => "catalog approve",
            CatalogCommand::Revoke(_) => "catalog revoke",
            CatalogCommand::Search(_) => "catalog search",
        },
        Command::Replay(_) => "replay",
        Command::Batch(BatchCommand::Submit(_)) => "batch submit",
        Command::Batch(BatchCommand::Status(_)) => "batch status",
        Command::Batch(BatchCommand::Results(_)) => "batch results",
        Command::Worker(_) => "worker",
        Command::Evidence(EvidenceCommand::Verify(_)) => "evidence verify",
        Command::Evidence(EvidenceCommand::Keygen(_)) => "evidence keygen",
        Command::Show(_) => "show",
        Command::Version => "version",
        #[cfg(feature = "fixture")]
        Command::Fixture(_) => "fixture serve",
        Command::Discover(_) => "discover",
        Command::Compile(_) => "compile",
        Command::Eval(_) => "eval",
        #[cfg(feature = "fixture")]
        Command::Demo(_) => "demo",
        Command::Codegen(_) => "codegen",
        Command::Probe(_) => "probe",
        Command::Console(_) => "console",
        Command::Record(_) => "record",
        Command::Mcp(_) => "mcp",
        Command::Serve(_) => "serve",
        Command::Route(RouteCommand::Explain(_)) => "route explain",
    }
}
