//! The clap definition of every `cua` command. Parsing only: no logic lives here.

use clap::{Parser, Subcommand, ValueEnum};

/// cua: compile a computer-use run once into an immutable capability, then replay it
/// deterministically with zero model calls.
#[derive(Debug, Parser)]
#[command(name = "cua", version, about, long_about = None)]
pub(crate) struct Cli {
    /// Output format: human-readable text, or one JSON envelope on stdout.
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Print the cua version.
    Version,
}
