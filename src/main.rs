//! The `cua` command line: parse arguments, wire concrete adapters, call library crates, map
//! results to exit codes. Everything with logic lives in a library crate.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the binary is the one place that prints: results on stdout, failures on stderr"
)]

mod cli;
mod commands;
mod fixture_app;
mod limits;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    diagnostics(args.verbose, args.quiet);
    commands::run(args)
}

/// Libraries' diagnostics (`tracing` events) on stderr: warnings and errors by default, more
/// with `-v`, only errors with `-q`; `RUST_LOG` (e.g. `cua_console=debug`) overrides both.
fn diagnostics(verbose: u8, quiet: bool) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(true)
        .without_time()
        .init();
}
