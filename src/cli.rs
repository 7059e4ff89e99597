//! The clap definition of every `cua` command. Parsing only: no logic lives here, beyond
//! falling back to the project's path for a path flag not given.

use clap::{Parser, Subcommand, ValueEnum};

use crate::error::CliError;
use crate::project::{self, DefaultPath};

/// cua: compile a computer-use run once into an immutable capability, then replay it
/// deterministically with zero model calls.
#[derive(Debug, Parser)]
#[command(name = "cua", version, about, long_about = None)]
pub(crate) struct Cli {
    /// Output format: human-readable text, or one JSON envelope on stdout.
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// More diagnostics on stderr (`-v` info, `-vv` debug, `-vvv` trace); `RUST_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
    /// Only errors on stderr.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub(crate) quiet: bool,

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
    /// Make a project in DIR (default: here): `cua.toml`, a policy, the documents' JSON
    /// Schemas, a sealed sample capability with the sign-on it needs, an eval suite, a tenants
    /// directory and a `.gitignore` for evidence. Every command run inside a project takes its
    /// default paths from its `cua.toml`. Exits 0, 2 when DIR is a project already or holds
    /// one of the files (nothing is written), 1 when a file cannot be written.
    Init(InitArgs),
    /// Check documents: strict YAML, every rule, and a capability's content hash. Reports every
    /// problem in every file; exits 2 if any document is invalid.
    Validate(ValidateArgs),
    /// Write a capability's content hash into its file, keeping comments and layout.
    Seal(SealArgs),
    /// Print the JSON Schema of a document kind (editors validate YAML with it).
    Schema(SchemaArgs),
    /// Print a shell completion script: `cua completions bash > /etc/bash_completion.d/cua`,
    /// or `source <(cua completions bash)`; zsh, fish, elvish and PowerShell too.
    Completions(CompletionsArgs),
    /// Write the man pages, `cua.1` and one per subcommand (`cua-replay.1`, …), into DIR
    /// (`make man` writes them to target/man).
    Man(ManArgs),
    /// The capability catalog: list, show, approve, revoke and search capabilities. Exits 0 on
    /// success, 1 when a review criterion refuses, 2 for a usage error or a missing, invalid or
    /// tampered document.
    Catalog(CatalogArgs),

    /// Replay a sealed capability against the live application, with zero model calls. Exits
    /// 0 on success or a business outcome, 1 failed, 2 usage error or invalid/tampered
    /// document, 3 needs a human, 69 surface or target unavailable.
    Replay(Box<ReplayArgs>),
    /// A batch on a PostgreSQL queue, replayed by `cua worker`s on any number of machines:
    /// submit it, follow it, read its results. Exits 0, 2 for a usage error or a refused
    /// submission, 69 when the queue cannot be reached.
    #[command(subcommand)]
    Batch(BatchCommand),
    /// Claim jobs from a PostgreSQL queue and replay them, under a lease that a heartbeat
    /// renews and a fencing epoch, until the queue is drained (--drain) or a signal stops it.
    /// Exits 0, 2 for a usage error, 69 when the queue or the browser is unavailable, 130/143
    /// on a signal (its row is given back and decided again from its intents).
    Worker(Box<WorkerArgs>),
    /// Inspect the evidence runs leave behind.
    #[command(subcommand)]
    Evidence(EvidenceCommand),
    /// Write one run's evidence as one self-contained page to read offline in any browser: the
    /// step timeline; per step how its target was resolved, the policy's decision, the dispatch
    /// and its effect verdict; the snapshots before and after (searchable) and screenshots;
    /// waits, recovery, outputs, lease epochs and who acted; and the chain's verification.
    /// Exits 0, 1 when the page cannot be written or the evidence read, 2 when the path is not a
    /// run directory or --out is inside it.
    Show(ShowArgs),
    /// Print the cua version.
    Version,
    /// Run the MemberDesk fixture app that tests, demos and evals drive.
    #[cfg(feature = "fixture")]
    #[command(subcommand)]
    Fixture(FixtureCommand),
    /// Drive the live UI to a goal with a model, record the trace, and compile a draft
    /// capability from it. Needs CUA_LLM_BASE_URL and CUA_LLM_MODEL, or --scripted.
    Discover(DiscoverArgs),
    /// Compile a discovery (or recording) run into a draft capability file.
    Compile(CompileArgs),
    /// Run eval suites (every `evals/*.yaml` by default) against the MemberDesk fixture in
    /// Chromium and write Markdown, JSON and HTML reports and the evaluation `catalog approve
    /// --from-eval` reads. Exits 0 when no suite shows a wrong action or an unauthorized
    /// dispatch, 1 when one does, 2 for an invalid suite, 69 without Chromium.
    Eval(EvalArgs),
    /// The whole story in one run against in-process MemberDesk fixtures and Chromium:
    /// discovery, the compiled draft, review, replays with outcomes, recovery, refusals, a
    /// second tenant, the irreversible gate, a batch, a human handoff, approval from an
    /// evaluation, a typed MCP tool, codegen and the operators beside the browser. One line of
    /// evidence per stage; exits 0 only when every stage holds (1 otherwise, 69 without
    /// Chromium).
    #[cfg(feature = "fixture")]
    Demo(DemoArgs),
    /// Write a capability as a runnable Playwright Test file (TypeScript). Exits 0 when
    /// written, 1 when a step cannot be expressed (every refusal is listed), 2 for a usage
    /// error or an invalid document.
    Codegen(CodegenArgs),
    /// Resolve every step's target against the snapshots a run recorded, without touching a
    /// live system. Exits 0 when every target is unique and undrifted, 1 when one is drifted,
    /// ambiguous or missing, 2 for a usage error.
    Probe(ProbeArgs),
    /// Serve the operator console: the intervention queue, the live session (take control,
    /// confirm, hand back), runs and their evidence, capabilities, read-only settings. With
    /// --capability, start the fixture and run that capability supervised.
    Console(Box<ConsoleArgs>),
    /// Record a task by demonstration in the console; `cua compile` turns the trace into a
    /// draft capability.
    Record(Box<RecordArgs>),
    /// Serve every approved capability as an MCP tool on stdin/stdout (logs on stderr). An
    /// irreversible capability also gets a `<tool>__plan` tool whose approval its run needs.
    Mcp(Box<McpArgs>),
    /// Serve the same tools over streamable HTTP at `/mcp`, on loopback unless --allow-remote.
    /// Every request needs an operator's bearer token (printed at start, or from --operators).
    /// Stops on Ctrl-C.
    Serve(Box<ServeArgs>),
    /// Explain how each step of a capability is routed (operator, provider, physical action,
    /// recovery), without opening any provider.
    #[command(subcommand)]
    Route(RouteCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum BatchCommand {
    /// Record a batch: the sealed capability's hash, its overlay, the approval it is
    /// submitted under, and one job per row (a row that is no row is finished at once).
    Submit(Box<BatchSubmitArgs>),
    /// Counts by state and status, throughput, rows in doubt, failures with their codes, rows
    /// per worker.
    Status(BatchQueryArgs),
    /// The finished rows' result lines in row order, one JSON object per line, each with the
    /// worker and epoch it came from.
    Results(BatchQueryArgs),
}

/// The queue a batch command or a worker uses.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct QueueUrl {
    /// The queue: a PostgreSQL URL, postgres://user:password@host:port/database. Prefer the
    /// environment variable: a command line is visible to every user of the machine.
    #[arg(
        long = "queue",
        value_name = "URL",
        env = "CUA_QUEUE_URL",
        hide_env_values = true
    )]
    pub(crate) url: String,
}

#[derive(Debug, clap::Args)]
pub(crate) struct BatchSubmitArgs {
    /// The capability: a file, `id@version` in the catalog, or an `id` (its latest version).
    #[arg(value_name = "CAPABILITY")]
    pub(crate) capability: String,
    /// One JSON object of inputs per line.
    #[arg(long = "inputs", value_name = "ROWS.jsonl")]
    pub(crate) rows: std::path::PathBuf,
    #[command(flatten)]
    pub(crate) bind: BindArgs,
    /// The batch id; `batch-<rows file stem>-<time and process>` by default.
    #[arg(long, value_name = "ID")]
    pub(crate) id: Option<String>,
    #[command(flatten)]
    pub(crate) queue: QueueUrl,
    #[command(flatten)]
    pub(crate) policy: PolicyFile,
    #[command(flatten)]
    pub(crate) paths: CatalogPaths,
}

#[derive(Debug, clap::Args)]
pub(crate) struct BatchQueryArgs {
    /// The batch id `cua batch submit` printed.
    #[arg(value_name = "BATCH")]
    pub(crate) batch: String,
    #[command(flatten)]
    pub(crate) queue: QueueUrl,
}

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct WorkerArgs {
    #[command(flatten)]
    pub(crate) queue: QueueUrl,
    /// How many rows this worker replays at once, each in its own browser.
    #[arg(long, default_value_t = 1)]
    pub(crate) concurrency: usize,
    /// Claim only this batch's jobs.
    #[arg(long, value_name = "BATCH")]
    pub(crate) batch: Option<String>,
    /// Exit once every row (of --batch, or of every batch) is finished, instead of waiting
    /// for more. A row running under another worker's lease is waited for, since this worker
    /// may have to take it over.
    #[arg(long)]
    pub(crate) drain: bool,
    /// The name this worker's claims, attempts and intents are recorded under;
    /// `<host>-<pid>` by default.
    #[arg(long, value_name = "NAME")]
    pub(crate) worker_id: Option<String>,
    /// How long a claim holds its row without a heartbeat; the heartbeat renews it every third
    /// of that.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub(crate) lease_seconds: u64,
    /// How long after another worker's lease ran out this worker may take its row: room for
    /// an action that was already on its way when that worker's heartbeat gave up.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub(crate) grace_seconds: u64,
    #[command(flatten)]
    pub(crate) policy: PolicyFile,
    /// Where run directories are written: a path every worker shares, so any of them can read
    /// another's traces.
    #[command(flatten)]
    pub(crate) evidence: RunsDir,
    #[command(flatten)]
    pub(crate) paths: CatalogPaths,
}

#[derive(Debug, Subcommand)]
pub(crate) enum RouteCommand {
    /// Per step: the selection, every candidate with its feasibility reason, and the recovery
    /// policy. Exits 0 when every step has one route, 1 when one has none, 2 for a usage error.
    Explain(RouteExplainArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct RouteExplainArgs {
    /// The capability: a file, `id@version` in the catalog, or an `id` (its latest version).
    #[arg(value_name = "CAPABILITY")]
    pub(crate) capability: String,
    /// Explain only this step.
    #[arg(long, value_name = "STEP")]
    pub(crate) step: Option<String>,
    /// The platform to plan for (linux, macos, windows); the host's by default.
    #[arg(long)]
    pub(crate) platform: Option<String>,
    /// Apply `<tenants>/<TENANT>/<capability id>.yaml` first.
    #[arg(long)]
    pub(crate) tenant: Option<String>,
    #[command(flatten)]
    pub(crate) paths: CatalogPaths,
}

#[cfg(feature = "fixture")]
#[derive(Debug, Subcommand)]
pub(crate) enum FixtureCommand {
    /// Serve MemberDesk until Ctrl-C, printing its base URL on stdout.
    Serve(FixtureServeArgs),
}

#[cfg(feature = "fixture")]
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

#[derive(Debug, clap::Args)]
pub(crate) struct InitArgs {
    /// The project's directory, created when missing [default: the current directory].
    #[arg(value_name = "DIR")]
    pub(crate) dir: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ValidateArgs {
    /// Documents: capabilities, tenant bindings, approvals, evaluations, run records, policy
    /// files, eval suites (the kind comes from each file's `schema:` field). A directory means
    /// every `*.yaml`/`*.yml` with a top-level `schema:` key, `*.evaluation.json` and
    /// `run_record.json` under it (hidden entries, `target/` and `node_modules/` skipped); a
    /// quoted pattern such as 'tenants/*/*.yaml' is expanded by cua.
    #[arg(required = true, value_name = "PATH")]
    pub(crate) files: Vec<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct SealArgs {
    /// The capability file to seal in place.
    #[arg(value_name = "FILE")]
    pub(crate) file: std::path::PathBuf,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ManArgs {
    /// Where the pages go (made when missing).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: std::path::PathBuf,
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
    #[value(name = "eval_suite")]
    EvalSuite,
}

#[derive(Debug, Subcommand)]
pub(crate) enum EvidenceCommand {
    /// Verify a run directory: the hash chain of trace.jsonl, every file its run_end names
    /// (and nothing else), run_record.json, and the run's head in the evidence root's
    /// ledger.jsonl. Exits 0 when intact (a killed run verifies as a prefix), 1 when broken, 2
    /// when the path is not a run directory or the public key cannot be read.
    Verify(EvidenceVerifyArgs),
    /// Create the installation's ed25519 key pair: `evidence.key` (private, mode 0600) and
    /// `evidence.pub`. Runs started with CUA_EVIDENCE_KEY=<DIR>/evidence.key sign their line
    /// in the evidence root's ledger; `verify --public-key` checks the signatures.
    Keygen(EvidenceKeygenArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct EvidenceVerifyArgs {
    /// The run directory, `<evidence root>/<run id>`.
    #[arg(value_name = "RUN_DIR")]
    pub(crate) run_dir: std::path::PathBuf,
    /// The installation's public key (`evidence.pub`): the run's line in the evidence root's
    /// ledger must be signed by it, and every signature the ledger carries must verify.
    #[arg(long, value_name = "FILE")]
    pub(crate) public_key: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// The run directory, `<evidence root>/<run id>` (a batch row's, a discovery's, an
    /// assisted or handed-over run's alike).
    #[arg(value_name = "RUN_DIR")]
    pub(crate) run_dir: std::path::PathBuf,
    /// Where to write the page (default: `<run id>.html` in the current directory); an
    /// existing file there is replaced whole.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct EvidenceKeygenArgs {
    /// The directory to write `evidence.key` and `evidence.pub` into (created 0700 when
    /// missing); an existing key is never overwritten.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: std::path::PathBuf,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ReplayArgs {
    /// The capability: a file, `id@version` in the catalog, or an `id` (its latest version).
    #[arg(value_name = "CAPABILITY")]
    pub(crate) capability: String,
    /// An input as NAME=VALUE (repeatable). The value is taken exactly as given.
    #[arg(long = "input", value_name = "NAME=VALUE")]
    pub(crate) inputs: Vec<String>,
    /// Batch mode: one JSON object of inputs per line; one JSON result line per row on stdout.
    #[arg(long = "inputs", value_name = "ROWS.jsonl", conflicts_with = "inputs")]
    pub(crate) input_rows: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub(crate) bind: BindArgs,
    #[command(flatten)]
    pub(crate) policy: PolicyFile,
    #[command(flatten)]
    pub(crate) evidence: RunsDir,
    #[command(flatten)]
    pub(crate) paths: CatalogPaths,
    /// The run id (the evidence directory's name); in batch mode, the batch id.
    #[arg(long, value_name = "ID")]
    pub(crate) run_id: Option<String>,
    /// Batch: how many replays run at once.
    #[arg(long, default_value_t = 1, requires = "input_rows")]
    pub(crate) concurrency: usize,
    /// Batch: run only rows k, k+n, k+2n, … (1-based), as `k/n`.
    #[arg(long, value_name = "K/N", requires = "input_rows")]
    pub(crate) shard: Option<cua_replay::Shard>,
    /// Batch: continue an interrupted batch, skipping rows that finished.
    #[arg(long, requires = "input_rows")]
    pub(crate) resume: bool,
    /// With `--inputs`, also write JUnit XML to FILE: a test case per row (a row that did not
    /// succeed a failure with its code, an invalid row an error), each naming its evidence.
    #[arg(long, value_name = "FILE", requires = "input_rows")]
    pub(crate) junit: Option<std::path::PathBuf>,
    /// Batch: a page per worker in one browser, or a browser per worker.
    #[arg(long, value_enum, default_value_t = PoolKind::Pages, requires = "input_rows")]
    pub(crate) pool: PoolKind,
    /// When the run stops because a step's target is not found, ambiguous, or its precondition
    /// fails: one model call (CUA_LLM_BASE_URL, CUA_LLM_MODEL) proposes that step's target, the
    /// policy judges it as the agent, and the run continues deterministically with a candidate
    /// tenant overlay written for review. The artifact is never changed.
    #[arg(long, conflicts_with = "input_rows")]
    pub(crate) assist: bool,
}

/// How a replay binds its capability: the tenant's overlay, the base URL, the irreversible
/// opt-in and the approval. `cua replay` and `cua batch submit` take the same.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct BindArgs {
    /// Apply `tenants/<TENANT>/<capability id>.yaml` to the capability.
    #[arg(long)]
    pub(crate) tenant: Option<String>,
    /// Bind `{base_url}` to an origin (e.g. http://127.0.0.1:8811): scheme, host, optional
    /// port, nothing after.
    #[arg(long, value_name = "ORIGIN")]
    pub(crate) base_url: Option<cua_artifact::Origin>,
    /// Opt in to irreversible steps (an approval pinned to the content hash is needed too).
    #[arg(long)]
    pub(crate) allow_irreversible: bool,
    /// The approval file; by default, with --tenant, the tenant's own
    /// `<tenants>/<tenant>/<id>@<version>.approval.yaml` when it exists, else
    /// `<catalog>/<id>@<version>.approval.yaml` when that exists.
    #[arg(long, value_name = "FILE")]
    pub(crate) approval: Option<std::path::PathBuf>,
}

/// How a batch's browser pool is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PoolKind {
    /// One browser, one page per worker (pages share the browser's cookies).
    Pages,
    /// One browser per worker (nothing shared).
    Browsers,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CatalogArgs {
    /// The catalog directory: `<id>@<version>.yaml` artifacts and their approvals [default: the
    /// project's catalog, `capabilities`].
    #[arg(long, global = true, value_name = "DIR", env = "CUA_CATALOG")]
    pub(crate) catalog: Option<std::path::PathBuf>,
    /// Where evaluations (`<suite>.evaluation.json`) are read from, besides the catalog
    /// directory [default: the project's `evidence/evals`; outside a project, only the catalog
    /// directory].
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) evals: Option<std::path::PathBuf>,
    /// Tenant bindings, as `<DIR>/<tenant>/<id>.yaml` [default: the project's `tenants`].
    #[arg(long, global = true, value_name = "DIR", env = "CUA_TENANTS")]
    pub(crate) tenants: Option<std::path::PathBuf>,
    #[command(subcommand)]
    pub(crate) command: CatalogCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CatalogCommand {
    /// Every capability: reference, title, typed signature, outcome codes, integrity
    /// (sealed, draft, TAMPERED) and approval state.
    List,
    /// One capability in full: integrity, approval, evaluations, and (with --tenant) whether
    /// the approval carries to that tenant; or, with --tool-schema, the tool an agent sees.
    Show(CatalogShowArgs),
    /// Approve a sealed capability, pinned to its exact content hash.
    Approve(CatalogApproveArgs),
    /// Withdraw a capability's approval.
    Revoke(CatalogRevokeArgs),
    /// Find capabilities by intent, ranked and explained.
    Search(CatalogSearchArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct CatalogShowArgs {
    /// `id@version`, or an id for its highest version.
    #[arg(value_name = "REF")]
    pub(crate) reference: String,
    /// Print the agent tool definition (name, input and output JSON Schemas, outcomes).
    #[arg(long)]
    pub(crate) tool_schema: bool,
    /// Say whether the approval carries to this tenant's binding.
    #[arg(long, value_name = "TENANT")]
    pub(crate) tenant: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CatalogApproveArgs {
    /// `id@version`, or an id for its highest version.
    #[arg(value_name = "REF")]
    pub(crate) reference: String,
    /// Who approves.
    #[arg(long, value_name = "NAME")]
    pub(crate) by: String,
    /// What the reviewer checked.
    #[arg(long, value_name = "TEXT")]
    pub(crate) notes: Option<String>,
    /// Require an evaluation at this exact content hash with at least 5 runs, no wrong action,
    /// no unauthorized dispatch, stability of at least 95% and determinism holding; the
    /// approval then covers unattended replay. Exits 1 naming the failed criterion otherwise.
    #[arg(long)]
    pub(crate) from_eval: bool,
    /// Approve what this tenant's binding makes of the capability: pinned to the effective
    /// hash re-derived from the sealed base and the binding, scoped to the tenant, and written
    /// beside the binding as `<tenants>/<TENANT>/<id>@<version>.approval.yaml`, where
    /// `replay --tenant` and `mcp --tenant` find it. For a binding that changes more than vars,
    /// whose base approval does not carry over.
    #[arg(long, value_name = "TENANT")]
    pub(crate) tenant: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CatalogRevokeArgs {
    /// `id@version`, or an id for its highest version.
    #[arg(value_name = "REF")]
    pub(crate) reference: String,
    /// Who revokes.
    #[arg(long, value_name = "NAME")]
    pub(crate) by: String,
    /// Why.
    #[arg(long, value_name = "TEXT")]
    pub(crate) notes: Option<String>,
    /// Revoke this tenant's own approval (`approve --tenant`) rather than the base's.
    #[arg(long, value_name = "TENANT")]
    pub(crate) tenant: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CatalogSearchArgs {
    /// What the capability should do, in words.
    #[arg(value_name = "INTENT")]
    pub(crate) intent: String,
    /// Only capabilities whose riskiest step is at most this.
    #[arg(long, value_enum, value_name = "RISK")]
    pub(crate) max_risk: Option<RiskArg>,
    /// Only capabilities for this kind of surface.
    #[arg(long, value_enum, value_name = "KIND")]
    pub(crate) surface: Option<SurfaceArg>,
    /// Only capabilities whose current content is approved.
    #[arg(long)]
    pub(crate) approved: bool,
    /// How many results to show.
    #[arg(long, value_name = "K", default_value_t = 10)]
    pub(crate) top: usize,
}

/// A risk tier on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RiskArg {
    Safe,
    Elevated,
    Irreversible,
}

/// A surface kind on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SurfaceArg {
    Web,
    #[value(name = "legacy_web")]
    LegacyWeb,
    Desktop,
}

#[derive(Debug, clap::Args)]
pub(crate) struct DiscoverArgs {
    /// The goal in plain words, e.g. "Look up member 12345 and report their savings balance".
    #[arg(long)]
    pub(crate) goal: String,
    /// The URL discovery starts at.
    #[arg(long)]
    pub(crate) target: String,
    /// Where the draft capability is written [default: the project's catalog].
    #[arg(long)]
    pub(crate) out: Option<std::path::PathBuf>,
    /// A sign-in capability file run (through the same chokepoint) before the goal's steps.
    #[arg(long, value_name = "CAPABILITY")]
    pub(crate) sign_in_with: Option<std::path::PathBuf>,
    /// Use the built-in scripted model (a loopback server) instead of a configured one.
    #[arg(long)]
    pub(crate) scripted: bool,
    /// A credential the model may type by placeholder, `{$secret: NAME}` (repeatable).
    #[arg(long = "secret", value_name = "NAME")]
    pub(crate) secrets: Vec<String>,
    /// Tool calls the model may make.
    #[arg(long, default_value_t = 40)]
    pub(crate) max_steps: u32,
    #[command(flatten)]
    pub(crate) policy: PolicyFile,
    /// Where the discovery run's evidence directory is created [default: the project's
    /// `evidence/discovery`].
    #[arg(long = "evidence-dir", alias = "evidence", value_name = "DIR")]
    pub(crate) evidence: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CompileArgs {
    /// The run directory (or its trace.jsonl).
    #[arg(value_name = "TRACE")]
    pub(crate) trace: std::path::PathBuf,
    /// Where the draft capability is written [default: the project's catalog].
    #[arg(long)]
    pub(crate) out: Option<std::path::PathBuf>,
}

#[cfg(feature = "fixture")]
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// The demo directory: drafts, the demo catalog, approvals and every run's evidence. It is
    /// emptied first when it holds an earlier demo, and refused when it holds anything else
    /// [default: the project's `evidence/demo`].
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub(crate) policy: PolicyFile,
    #[command(flatten)]
    pub(crate) paths: CatalogPaths,
}

/// Who may use a server command: `console` and `serve` flatten it, so their flags cannot drift
/// apart.
#[derive(Debug, clap::Args)]
pub(crate) struct AccessArgs {
    /// Allow a non-loopback --bind (prints a warning). Every request still needs a token.
    #[arg(long)]
    pub(crate) allow_remote: bool,
    /// Operators and their tokens, one `name: token` per line; without it one token is
    /// generated and printed.
    #[arg(long, value_name = "FILE")]
    pub(crate) operators: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ConsoleArgs {
    /// Where to listen. Only loopback addresses unless --allow-remote.
    #[arg(long, default_value = "127.0.0.1:8700")]
    pub(crate) bind: std::net::SocketAddr,
    #[command(flatten)]
    pub(crate) access: AccessArgs,
    /// How long a claim holds the session without a gesture, in minutes.
    #[arg(long, default_value_t = 30)]
    pub(crate) hold_minutes: u64,
    #[cfg(feature = "fixture")]
    #[command(flatten)]
    pub(crate) supervised: SupervisedArgs,
    #[command(flatten)]
    pub(crate) policy: PolicyFile,
    #[command(flatten)]
    pub(crate) evidence: RunsDir,
    #[command(flatten)]
    pub(crate) paths: CatalogPaths,
}

/// A capability run supervised on an in-process MemberDesk fixture (`console --capability`).
#[cfg(feature = "fixture")]
#[derive(Debug, clap::Args)]
pub(crate) struct SupervisedArgs {
    /// Run this capability supervised on an in-process MemberDesk fixture.
    #[arg(long, value_name = "REF")]
    pub(crate) capability: Option<String>,
    /// An input of the supervised run (repeatable).
    #[arg(long = "input", value_name = "NAME=VALUE")]
    pub(crate) inputs: Vec<String>,
    /// Arm a fixture fault before the run (transient_load, session_timeout,
    /// undeclared_dialog, validation_error, slow_page, lookalike_row, lookalike_account,
    /// quoted_refusals, decoy_control, duplicate_summary_row).
    #[arg(long, value_name = "FAULT")]
    pub(crate) arm_fault: Option<String>,
    /// How many times the armed fault fires.
    #[arg(long, default_value_t = 1)]
    pub(crate) fault_count: u32,
    /// The fixture's tenant variant.
    #[arg(long, default_value = "first-valley")]
    pub(crate) variant: memberdesk::Variant,
    /// The supervised run's id (default: generated).
    #[arg(long)]
    pub(crate) run_id: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct RecordArgs {
    /// The page the demonstration starts on (must be on the policy's allowlist).
    #[arg(long, value_name = "URL")]
    pub(crate) target: String,
    /// What the demonstration achieves (the draft's goal).
    #[arg(long, default_value = "demonstrated by an operator")]
    pub(crate) goal: String,
    /// Where the console listens (loopback only).
    #[arg(long, default_value = "127.0.0.1:8701")]
    pub(crate) bind: std::net::SocketAddr,
    #[arg(long)]
    pub(crate) run_id: Option<String>,
    #[command(flatten)]
    pub(crate) policy: PolicyFile,
    #[command(flatten)]
    pub(crate) evidence: RunsDir,
    #[command(flatten)]
    pub(crate) paths: CatalogPaths,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CodegenArgs {
    /// The capability: a file, `id@version` in the catalog, or an `id` (its latest version).
    #[arg(value_name = "CAPABILITY")]
    pub(crate) capability: String,
    /// Where the spec is written (`*.spec.ts`).
    #[arg(long, value_name = "FILE")]
    pub(crate) out: std::path::PathBuf,
    /// Apply `<tenants>/<TENANT>/<capability id>.yaml` first.
    #[arg(long)]
    pub(crate) tenant: Option<String>,
    /// Write irreversible steps too: the test will perform them on every run, outside the
    /// approval gate replay enforces.
    #[arg(long)]
    pub(crate) allow_irreversible: bool,
    /// Also write a `playwright.config.ts` beside the spec when none is there: `baseURL` from
    /// `CUA_BASE_URL`, and a setup project that signs on once.
    #[arg(long)]
    pub(crate) config: bool,
    #[command(flatten)]
    pub(crate) paths: CatalogPaths,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ProbeArgs {
    /// The capability: a file, `id@version` in the catalog, or an `id` (its latest version).
    #[arg(value_name = "CAPABILITY")]
    pub(crate) capability: String,
    /// The run directory whose `snapshots/` are probed.
    #[arg(long, value_name = "RUN_DIR")]
    pub(crate) snapshots: std::path::PathBuf,
    /// Apply `<tenants>/<TENANT>/<capability id>.yaml` first.
    #[arg(long)]
    pub(crate) tenant: Option<String>,
    #[command(flatten)]
    pub(crate) paths: CatalogPaths,
}

#[derive(Debug, clap::Args)]
pub(crate) struct McpArgs {
    #[command(flatten)]
    pub(crate) paths: CatalogPaths,
    #[command(flatten)]
    pub(crate) policy: PolicyFile,
    /// Bind `{base_url}` to an origin (e.g. http://127.0.0.1:8811) through a substitution-only
    /// binding: scheme, host, optional port, nothing after.
    #[arg(long, value_name = "ORIGIN")]
    pub(crate) base_url: Option<cua_artifact::Origin>,
    /// Serve the capabilities as bound (and approved) for this tenant.
    #[arg(long)]
    pub(crate) tenant: Option<String>,
    #[command(flatten)]
    pub(crate) evidence: RunsDir,
    /// How long a plan approval of an irreversible capability stays valid, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub(crate) plan_ttl: u64,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub(crate) server: McpArgs,
    /// Where to listen; port 0 picks a free one (printed at start). Only loopback addresses
    /// unless --allow-remote.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8765")]
    pub(crate) bind: std::net::SocketAddr,
    #[command(flatten)]
    pub(crate) access: AccessArgs,
}

#[derive(Debug, clap::Args)]
pub(crate) struct EvalArgs {
    /// Suite files (`cua.eval_suite/v1`) [default: every `*.yaml` in the project's `evals`].
    #[arg(value_name = "SUITE")]
    pub(crate) suites: Vec<std::path::PathBuf>,
    /// Where the reports and evaluations are written [default: the project's `evidence/evals`].
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<std::path::PathBuf>,
    /// Where each suite's run directories go (`<DIR>/<suite>-<stamp>/<run id>`) [default: the
    /// project's `evidence/eval-runs`].
    #[arg(long = "evidence-dir", alias = "runs-dir", value_name = "DIR")]
    pub(crate) runs_dir: Option<std::path::PathBuf>,
    /// Also write JUnit XML to FILE: a test suite per eval suite, a test case per run (a wrong
    /// answer a failure, a refusal skipped), each naming its evidence directory.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<std::path::PathBuf>,
    /// Run every case this many times instead of the suite's `repeats`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) repeats: Option<u32>,
    #[command(flatten)]
    pub(crate) policy: PolicyFile,
    #[command(flatten)]
    pub(crate) paths: CatalogPaths,
}

/// Where the capability catalog and the tenant bindings are: one name and one environment
/// variable each, on every command that reads them.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CatalogPaths {
    /// The capability catalog: sealed capabilities and their approvals (also where remedy
    /// capabilities such as a sign-on are found) [default: the project's `capabilities`].
    #[arg(long, value_name = "DIR", env = "CUA_CATALOG")]
    pub(crate) catalog: Option<std::path::PathBuf>,
    /// Where tenant bindings live (`<DIR>/<tenant>/<capability id>.yaml`) [default: the
    /// project's `tenants`].
    #[arg(long, value_name = "DIR", env = "CUA_TENANTS")]
    pub(crate) tenants: Option<std::path::PathBuf>,
}

/// The policy file, on every command that decides actions.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct PolicyFile {
    /// The policy file [default: the project's `config/policy.yaml`].
    #[arg(long = "policy", value_name = "FILE", env = "CUA_POLICY_FILE")]
    pub(crate) file: Option<std::path::PathBuf>,
}

/// Where run directories are written, on every command that runs capabilities.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RunsDir {
    /// Where run directories are written [default: the project's `evidence/runs`].
    #[arg(long = "evidence-dir", value_name = "DIR", env = "CUA_EVIDENCE_DIR")]
    pub(crate) dir: Option<std::path::PathBuf>,
}

impl EvalArgs {
    /// Where reports and evaluations go: as given, or the project's.
    pub(crate) fn out(&self) -> Result<std::path::PathBuf, CliError> {
        project::or_default(self.out.as_deref(), DefaultPath::Evaluations)
    }

    /// Where suites' runs go: as given, or the project's.
    pub(crate) fn runs_dir(&self) -> Result<std::path::PathBuf, CliError> {
        project::or_default(self.runs_dir.as_deref(), DefaultPath::EvalRuns)
    }
}

impl CatalogPaths {
    /// The catalog directory: as given, or the project's.
    pub(crate) fn catalog(&self) -> Result<std::path::PathBuf, CliError> {
        project::or_default(self.catalog.as_deref(), DefaultPath::Catalog)
    }

    /// The tenants directory: as given, or the project's.
    pub(crate) fn tenants(&self) -> Result<std::path::PathBuf, CliError> {
        project::or_default(self.tenants.as_deref(), DefaultPath::Tenants)
    }

    /// The tenants directory for a command that binds `tenant`. With no tenant nothing reads
    /// a binding, so outside a project the catalog directory stands in rather than an error.
    pub(crate) fn tenants_for(&self, tenant: Option<&str>) -> Result<std::path::PathBuf, CliError> {
        if tenant.is_some() {
            return self.tenants();
        }
        project::or_default_or(self.tenants.as_deref(), DefaultPath::Tenants, || {
            self.catalog()
        })
    }

    /// These paths with the project's filled in, for work that outlives the current
    /// directory's lookup (a worker's slots).
    pub(crate) fn resolved(&self) -> Result<Self, CliError> {
        Ok(Self {
            catalog: Some(self.catalog()?),
            tenants: Some(self.tenants()?),
        })
    }

    /// The catalog these paths name for a command that binds `tenant`, its evaluations read
    /// from the catalog directory.
    pub(crate) fn config(
        &self,
        tenant: Option<&str>,
    ) -> Result<cua_catalog::CatalogConfig, CliError> {
        let catalog = self.catalog()?;
        Ok(cua_catalog::CatalogConfig {
            evaluations: catalog.clone(),
            capabilities: catalog,
            tenants: self.tenants_for(tenant)?,
        })
    }
}

impl PolicyFile {
    /// The policy file: as given, or the project's.
    pub(crate) fn file(&self) -> Result<std::path::PathBuf, CliError> {
        project::or_default(self.file.as_deref(), DefaultPath::Policy)
    }

    /// This file with the project's filled in.
    pub(crate) fn resolved(&self) -> Result<Self, CliError> {
        Ok(Self {
            file: Some(self.file()?),
        })
    }
}

impl RunsDir {
    /// Where run directories go: as given, or the project's.
    pub(crate) fn dir(&self) -> Result<std::path::PathBuf, CliError> {
        project::or_default(self.dir.as_deref(), DefaultPath::Runs)
    }

    /// This directory with the project's filled in.
    pub(crate) fn resolved(&self) -> Result<Self, CliError> {
        Ok(Self {
            dir: Some(self.dir()?),
        })
    }
}
