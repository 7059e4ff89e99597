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
    /// Check documents: strict YAML, every rule, and a capability's content hash. Reports every
    /// problem in every file; exits 2 if any document is invalid.
    Validate(ValidateArgs),
    /// Write a capability's content hash into its file, keeping comments and layout.
    Seal(SealArgs),
    /// Print the JSON Schema of a document kind (editors validate YAML with it).
    Schema(SchemaArgs),

    /// Inspect the evidence runs leave behind.
    #[command(subcommand)]
    Evidence(EvidenceCommand),
    /// Print the cua version.
    Version,
    /// Run the MemberDesk fixture app that tests, demos and evals drive.
    #[command(subcommand)]
    Fixture(FixtureCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum FixtureCommand {
    /// Serve MemberDesk until Ctrl-C, printing its base URL on stdout.
    Serve(FixtureServeArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct FixtureServeArgs {
    /// Which tenant to render as: first-valley or northgate-fcu.
    #[arg(long, default_value = "first-valley")]
    pub(crate) variant: memberdesk::Variant,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 8811)]
    pub(crate) port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub(crate) host: std::net::IpAddr,
}

#[derive(Debug, Subcommand)]
pub(crate) enum EvidenceCommand {
    /// Verify a run directory: the hash chain of trace.jsonl, the snapshots and screenshots it
    /// names, and run_record.json. Exits 0 when intact (a killed run verifies as a prefix), 1
    /// when broken, 2 when the path is not a run directory.
    Verify(EvidenceVerifyArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct EvidenceVerifyArgs {
    /// The run directory, `<evidence root>/<run id>`.
    #[arg(value_name = "RUN_DIR")]
    pub(crate) run_dir: std::path::PathBuf,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ValidateArgs {
    /// Document files: capabilities, tenant bindings, approvals, evaluations, run records,
    /// policy files. The kind comes from each file's `schema:` field.
    #[arg(required = true, value_name = "FILE")]
    pub(crate) files: Vec<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct SealArgs {
    /// The capability file to seal in place.
    #[arg(value_name = "FILE")]
    pub(crate) file: std::path::PathBuf,
}

#[derive(Debug, clap::Args)]
pub(crate) struct SchemaArgs {
    /// The document kind.
    #[arg(value_enum, value_name = "DOCUMENT")]
    pub(crate) document: SchemaDocument,
}

/// The document kinds `cua schema` knows, by their short names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SchemaDocument {
    Capability,
    #[value(name = "tenant_binding")]
    TenantBinding,
    Approval,
    Evaluation,
    #[value(name = "run_record")]
    RunRecord,
    Policy,
}
