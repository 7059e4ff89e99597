//! The `cua` command line: parse arguments, wire concrete adapters, call library crates, map
//! results to exit codes. Everything with logic lives in a library crate.

mod cli;
mod commands;
mod limits;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    commands::run(args)
}
