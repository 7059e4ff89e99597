//! The `cua` command line: parse arguments, wire concrete adapters, call library crates, map
//! results to exit codes. Everything with logic lives in a library crate.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the binary is the one place that prints: results on stdout, failures on stderr"
)]

mod cli;
mod commands;
mod error;
mod fixture_app;
mod junit;
mod limits;
mod output;
mod progress;
mod project;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(error) => return command_line_refused(&error),
    };
    diagnostics(args.verbose, args.quiet);
    commands::run(args)
}

/// A command line clap refuses: its message (with a "did you mean" when one is close) on
/// stderr, and with `--format json` the envelope too, so a script reading stdout still gets
/// one; exit 2. `--help` and `--version` print as usual and exit 0.
fn command_line_refused(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let _ = error.print();
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        return ExitCode::SUCCESS;
    }
    // Everything clap says before its usage line: the error, what it missed, its suggestion.
    let rendered = error.render().to_string();
    let message = rendered
        .lines()
        .take_while(|line| !line.starts_with("Usage:"))
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    // clap's "tip: a similar argument exists: '--input'" is the help line.
    let message = message.trim_start_matches("error: ");
    let refused = match message.split_once("; tip: ") {
        Some((message, tip)) => error::CliError::usage(message).with_help(tip),
        None => error::CliError::usage(message),
    };
    let format = if json_requested(std::env::args_os().skip(1)) {
        cli::Format::Json
    } else {
        // The message is already on stderr.
        return output::Exit::Usage.into();
    };
    output::fail(format, "cua", &refused).into()
}

/// Whether the raw arguments ask for `--format json`, read without clap (which refused them).
/// Never for `cua mcp`, whose stdout belongs to the MCP client.
fn json_requested(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    let mut previous_was_format = false;
    let mut json = false;
    let mut command = None;
    for arg in args {
        let arg = arg.to_string_lossy();
        if arg == "--" {
            break;
        }
        if arg == "--format=json" || (previous_was_format && arg == "json") {
            json = true;
        } else if command.is_none() && !previous_was_format && !arg.starts_with('-') {
            command = Some(arg.into_owned());
            previous_was_format = false;
            continue;
        }
        previous_was_format = arg == "--format";
    }
    json && command.as_deref() != Some("mcp")
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
    // Colour only for a person at a terminal, and never under NO_COLOR: a log file or CI gets
    // plain text.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .with_target(true)
        .without_time()
        .init();
}
