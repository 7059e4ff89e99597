//! `cua init [DIR]`: a project to start from. It writes the project file, a policy, the
//! JSON Schemas the documents' modelines point at, a sealed sample capability (the MemberDesk
//! savings lookup, with the sign-on its recovery runs), an eval suite, a tenants directory and
//! a `.gitignore` that keeps evidence out of version control.
//!
//! Nothing is overwritten: every file is checked first, and when any is already there nothing
//! is written at all.

use std::path::{Path, PathBuf};

use cua_artifact::DocumentKind;
use cua_fs::{Dir, FileMode, FsError};
use serde::Serialize;

use crate::cli::{Format, InitArgs};
use crate::error::{CliError, ErrorCode};
use crate::output::{Exit, emit};
use crate::project;

/// The project file `cua init` writes: every key at its default, each said what it is for.
const PROJECT_FILE: &str = r#"# A cua project. Every cua command run in this directory or below it finds this file and takes
# its default paths from it, relative to this directory. A flag or its environment variable
# (--catalog or CUA_CATALOG, --policy or CUA_POLICY_FILE, ...) still names a path for one command.
[paths]
# Sealed capabilities and their approvals.
catalog = "capabilities"
# Tenant bindings: tenants/<tenant>/<capability id>.yaml.
tenants = "tenants"
# The safety policy every action passes.
policy = "config/policy.yaml"
# The eval suites `cua eval` runs when none is named.
evals = "evals"
# Runs, evaluations and discovery: what cua saw and did. Kept out of version control.
evidence = "evidence"
"#;

const GITIGNORE: &str =
    "# What runs saw and did: private to this machine, never committed.\n/evidence/\n";

const TENANTS_README: &str = "\
# Tenant bindings

One directory per tenant, one file per capability it binds:
`tenants/<tenant>/<capability id>.yaml` (`schema: cua.tenant_binding/v1`). A binding sets the
tenant's base URL and renames what the tenant's skin calls differently; `cua replay CAPABILITY
--tenant <tenant>` applies it. Schema: `../schemas/tenant_binding.schema.json`.
";

/// The sample files, as the repository keeps them (so they stay sealed and valid: the tests
/// validate the repository's copies).
const SAMPLES: &[(&str, &str)] = &[
    (
        "config/policy.yaml",
        include_str!("../../config/policy.yaml"),
    ),
    (
        "capabilities/corebank.member.savings_balance@1.0.0.yaml",
        include_str!("../../capabilities/corebank.member.savings_balance@1.0.0.yaml"),
    ),
    (
        "capabilities/corebank.auth.sign_on@1.0.0.yaml",
        include_str!("../../capabilities/corebank.auth.sign_on@1.0.0.yaml"),
    ),
    (
        "evals/replay_stability.yaml",
        include_str!("../../evals/replay_stability.yaml"),
    ),
];

#[derive(Serialize)]
struct Initialized {
    project: String,
    files: Vec<String>,
}

/// Writes the project into `DIR` (default: the current directory).
pub(crate) fn run(format: Format, args: &InitArgs) -> Result<Exit, CliError> {
    let root = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let files = files();
    if root.join(project::FILE).symlink_metadata().is_ok() {
        return Err(CliError::new(
            ErrorCode::ProjectExists,
            format!(
                "{} is a cua project already (it holds {})",
                root.display(),
                project::FILE
            ),
        )
        .with_help("edit its cua.toml, or give `cua init` another directory"));
    }
    let taken: Vec<String> = files
        .iter()
        .filter(|(relative, _)| root.join(relative).symlink_metadata().is_ok())
        .map(|(relative, _)| relative.clone())
        .collect();
    if !taken.is_empty() {
        return Err(CliError::new(
            ErrorCode::ProjectExists,
            format!(
                "{} already holds {}: nothing was written",
                root.display(),
                taken.join(", ")
            ),
        )
        .with_help("run `cua init` into an empty directory, or move those files away first"));
    }
    let written = write_all(&root, &files).map_err(|error| {
        CliError::unwritten(&error, ErrorCode::WriteFailed).with_help(
            "check that the directory is yours and writable; files written before the failure \
             are listed above it",
        )
    })?;
    let shown = root.canonicalize().unwrap_or_else(|_| root.clone());
    let result = Initialized {
        project: shown.display().to_string(),
        files: written,
    };
    emit(format, "init", Some(&result), None, || text(&result));
    Ok(Exit::Success)
}

/// Every file of a new project, by its path in the project.
fn files() -> Vec<(String, String)> {
    let mut files = vec![
        (project::FILE.to_owned(), PROJECT_FILE.to_owned()),
        (".gitignore".to_owned(), GITIGNORE.to_owned()),
        ("tenants/README.md".to_owned(), TENANTS_README.to_owned()),
    ];
    files.extend(
        SAMPLES
            .iter()
            .map(|(path, text)| ((*path).to_owned(), (*text).to_owned())),
    );
    files.extend(
        DocumentKind::ALL
            .iter()
            .map(|kind| (kind.schema_path(), kind.json_schema_text())),
    );
    files
}

/// Writes every file, each new (never over one that appeared meanwhile), the project file last
/// so that a directory interrupted half-way is not yet a project.
fn write_all(root: &Path, files: &[(String, String)]) -> Result<Vec<String>, FsError> {
    let root = Dir::create_all(root, FileMode::Readable)?;
    let mut written = Vec::new();
    let (last, rest): (Vec<_>, Vec<_>) = files
        .iter()
        .partition(|(relative, _)| relative == project::FILE);
    for (relative, text) in rest.into_iter().chain(last) {
        let (directory, name) = match relative.rsplit_once('/') {
            Some((directory, name)) => (Some(directory), name),
            None => (None, relative.as_str()),
        };
        let parent = match directory {
            Some(directory) => root.ensure_dir(directory, FileMode::Readable)?,
            None => Dir::open(root.path())?,
        };
        parent.write_new(name, text.as_bytes(), FileMode::Readable)?;
        written.push(relative.clone());
    }
    Ok(written)
}

fn text(result: &Initialized) -> String {
    format!(
        "A cua project in {}: {} files.\n\n\
         Next:\n  \
         cua validate capabilities/*.yaml      check and seal-verify the sample capability\n  \
         cua fixture serve &                   start MemberDesk, the app the sample drives\n  \
         export CUA_SECRET_COREBANK_OPERATOR_ID=teller01 \
         CUA_SECRET_COREBANK_OPERATOR_PASSWORD=not-a-real-password\n  \
         cua replay corebank.member.savings_balance --input member_id=12345 \
         --base-url http://127.0.0.1:8811\n  \
         cua show evidence/runs/<run id>       read the run as one page\n\n\
         Every command in this directory or below finds cua.toml and takes its paths from it.\n",
        result.project,
        result.files.len()
    )
}
