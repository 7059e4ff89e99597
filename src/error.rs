//! The binary's one error type: a closed [`ErrorCode`] (its wire name and its exit status come
//! from one table) and a message. Commands return [`CliError`]; `commands::run` prints it once.
//!
//! A run's own failure (a business outcome, `target_not_found`, …) is not a `CliError`: it is
//! the run's result, with the run's closed `FailureCode`, and the command reports it as data.

use std::fmt;

use cua_catalog::CatalogError;
use cua_chromium::LaunchError;
use serde::Serialize;

use crate::output::{EnvelopeError, Exit};

/// Declares [`ErrorCode`] from one table: variant, wire name, exit status, and the sentence
/// README.md's table gives for it.
macro_rules! error_codes {
    ($($(#[$meta:meta])* $variant:ident => $wire:literal, $exit:ident, $doc:literal;)+) => {
        /// Every code a failing command reports in its envelope, and nothing else.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum ErrorCode {
            $(#[doc = $doc] $(#[$meta])* $variant,)+
        }

        impl ErrorCode {
            /// Every code, in the order README.md lists them.
            #[cfg(test)]
            pub(crate) const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)+];

            /// The stable snake_case name the envelope carries.
            pub(crate) fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $wire,)+
                }
            }

            /// What the code means, as README.md's table says it.
            #[cfg(test)]
            pub(crate) fn meaning(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $doc,)+
                }
            }

            /// The process status a command that fails with this code exits with.
            pub(crate) fn exit(self) -> Exit {
                match self {
                    $(ErrorCode::$variant => Exit::$exit,)+
                }
            }
        }
    };
}

error_codes! {
    Usage => "usage", Usage, "The command line is wrong: a flag, an argument or a combination.";
    NotFound => "not_found", Usage, "No capability by that name in the catalog.";
    InvalidReference => "invalid_reference", Usage, "A capability reference that is not `id` or `id@version`.";
    InvalidDocument => "invalid_document", Usage, "A document that does not load or validate.";
    Tampered => "tampered", Usage, "A sealed document whose content does not match its hash.";
    Unsealed => "unsealed", Usage, "A catalog document that has no content hash.";
    InvalidTenant => "invalid_tenant", Usage, "A tenant name or overlay that is not valid.";
    NoBinding => "no_binding", Usage, "The tenant has no binding of the capability.";
    InvalidPolicy => "invalid_policy", Usage, "The policy file does not load.";
    InvalidTrace => "invalid_trace", Usage, "A run directory that does not hold a compilable trace.";
    UnknownStep => "unknown_step", Usage, "A step the capability does not have.";
    InvalidPlatform => "invalid_platform", Usage, "A platform the route planner does not know.";
    InvalidSecretName => "invalid_secret_name", Usage, "A secret name that is not an environment variable name.";
    InvalidModelConfig => "invalid_model_config", Usage, "The model's environment settings are malformed.";
    ModelNotConfigured => "model_not_configured", Usage, "Discovery needs a model and none is configured.";
    MissingSecret => "missing_secret", Usage, "A secret the capability names is not in the environment.";
    InvalidInput => "invalid_input", Usage, "An input the capability does not take, or a value that breaks its input's spec.";
    RefusedPath => "refused_path", Usage, "A path refused for what is at it: a link, another user's directory.";
    ReadFailed => "read_failed", Usage, "A file or directory that cannot be read.";
    NoProject => "no_project", Usage, "A command needs a default path and the current directory is in no project (`cua init` makes one).";
    InvalidProject => "invalid_project", Usage, "The project file, `cua.toml`, does not load.";
    ProjectExists => "project_exists", Usage, "`cua init` into a directory that is a project already.";
    NotARunDir => "not_a_run_dir", Usage, "A directory that is not a run's evidence.";
    NoSnapshots => "no_snapshots", Usage, "A run without the snapshots a probe compares.";
    NoReviewer => "no_reviewer", Usage, "A review decision without `--by`.";
    NothingToRevoke => "nothing_to_revoke", Usage, "No approval is recorded to revoke.";
    Refused => "refused", Usage, "The capability is refused before anything runs: by the policy, or as tampered, a draft, or with an unbound placeholder.";
    #[cfg_attr(all(not(feature = "fixture"), not(test)), expect(dead_code, reason = "only the demo reports it"))]
    DemoDirectory => "demo_directory", Usage, "The demo's output directory holds something else.";
    BatchLocked => "batch_locked", Usage, "Another process holds the batch's state.";
    BatchExists => "batch_exists", Usage, "A batch by that id is in the queue already.";
    NoBatch => "no_batch", Usage, "No batch by that id in the queue.";
    KeyUnwritable => "key_unwritable", Usage, "The signing key cannot be written where asked.";
    BadKey => "bad_key", Usage, "A public key that cannot be read.";
    NoEvaluation => "no_evaluation", Failed, "No evaluation at this exact content backs the approval.";
    EvaluationFailed => "evaluation_failed", Failed, "An evaluation at this content fails a criterion.";
    DraftExists => "draft_exists", Failed, "A draft would overwrite an existing file.";
    WriteFailed => "write_failed", Failed, "A file could not be written.";
    EvidenceUnwritable => "evidence_unwritable", Failed, "The run's evidence cannot be written.";
    EvidenceUnreadable => "evidence_unreadable", Failed, "A run's evidence cannot be read.";
    EvidenceBroken => "evidence_broken", Failed, "A run's evidence chain does not verify.";
    QueueRefused => "queue_refused", Failed, "The batch queue's database refused an operation.";
    CompileFailed => "compile_failed", Failed, "A trace does not compile into a capability.";
    GoalNotMet => "goal_not_met", Failed, "Discovery, or the trace given to compile, did not reach its goal: nothing was compiled.";
    RecordingUnfinished => "recording_unfinished", Failed, "The recording was stopped before it was finished; its trace does not compile.";
    Unexpressible => "unexpressible", Failed, "Codegen cannot express a step as a Playwright spec.";
    CodegenFailed => "codegen_failed", Failed, "Codegen failed for another reason.";
    DiscoveryFailed => "discovery_failed", Failed, "Discovery could not run to its end: the model or the surface failed.";
    AssistFailed => "assist_failed", Failed, "The assisted recovery could not run.";
    EvalFailed => "eval_failed", Failed, "An evaluation could not run.";
    RowsUnsuccessful => "rows_unsuccessful", Failed, "A batch in which a row did not succeed (its last envelope; the batch exits with its worst row's status).";
    WrongActionOrUnauthorizedDispatch => "wrong_action_or_unauthorized_dispatch", Failed, "An evaluation saw a wrong action or a dispatch without authorization.";
    ProbeFoundDrift => "probe_found_drift", Failed, "A probe found a target that no longer resolves as recorded.";
    RouteUnavailable => "route_unavailable", Failed, "No operator on this platform can perform a step.";
    #[cfg_attr(all(not(feature = "fixture"), not(test)), expect(dead_code, reason = "only the demo reports it"))]
    StageFailed => "stage_failed", Failed, "A demo stage failed.";
    SessionFailed => "session_failed", Failed, "The console could not open the supervised session.";
    NavigationFailed => "navigation_failed", Failed, "The recording's first navigation was refused or failed.";
    BindFailed => "bind_failed", Failed, "The server cannot listen on the address.";
    NoToken => "no_token", Failed, "No access token could be generated.";
    Internal => "internal", Failed, "A part of cua itself could not run (its async runtime, a loopback server, a transport).";
    SurfaceUnavailable => "surface_unavailable", Unavailable, "The browser or the application cannot be reached.";
    ChromiumMissing => "chromium_missing", Unavailable, "Chromium is not installed (`make deps`).";
    FixtureUnavailable => "fixture_unavailable", Unavailable, "The MemberDesk fixture cannot start.";
    QueueUnavailable => "queue_unavailable", Unavailable, "The batch queue's database cannot be reached.";
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl ErrorCode {
    /// This code with `message`, as the envelope carries it.
    pub(crate) fn envelope(self, message: impl Into<String>) -> EnvelopeError {
        EnvelopeError::new(self.as_str(), message)
    }
}

/// A command that stopped before or instead of doing its work: what went wrong, and when
/// there is one, a help line saying what to do about it.
#[derive(Debug, Clone)]
pub(crate) struct CliError {
    code: ErrorCode,
    message: String,
    help: Option<String>,
}

impl CliError {
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            help: None,
        }
    }

    /// This error as found in `place` (a file): `<place>: <message>`.
    pub(crate) fn located(mut self, place: &dyn fmt::Display) -> Self {
        self.message = format!("{place}: {}", self.message);
        self
    }

    /// This error with a line saying what to do about it.
    pub(crate) fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// A usage error.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Usage, message)
    }

    /// A library error with its whole chain of causes as the message.
    pub(crate) fn chained(code: ErrorCode, error: &dyn std::error::Error) -> Self {
        Self::new(code, chain(error))
    }

    /// A file that could not be written: refused for what is at its path (a link, another
    /// user's directory) is the user's to fix; any other failure is `otherwise`.
    pub(crate) fn unwritten(error: &cua_fs::FsError, otherwise: ErrorCode) -> Self {
        let code = if error.is_refusal() {
            ErrorCode::RefusedPath
        } else {
            otherwise
        };
        Self::new(code, error.to_string())
    }

    /// A file that could not be read. One that is not there gets the nearest name beside it
    /// as its help (a misspelt suite or document); anything else says what is wrong with it.
    pub(crate) fn unread(path: &std::path::Path, error: &cua_fs::FsError) -> Self {
        let read = Self::new(ErrorCode::ReadFailed, error.to_string());
        if !error.is_not_found() {
            return read;
        }
        match nearest_sibling(path) {
            Some(near) => read.with_help(format!("did you mean `{}`?", near.display())),
            None => read.with_help(format!(
                "no file by that name in {}; a relative path is taken from the current directory",
                directory_of(path).display()
            )),
        }
    }

    pub(crate) fn code(&self) -> ErrorCode {
        self.code
    }

    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn help(&self) -> Option<&str> {
        self.help.as_deref()
    }

    pub(crate) fn exit(&self) -> Exit {
        self.code.exit()
    }

    /// The error as the envelope carries it.
    pub(crate) fn envelope(&self) -> EnvelopeError {
        EnvelopeError {
            help: self.help.clone(),
            ..self.code.envelope(self.message.clone())
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} ({})", self.message, self.code)
    }
}

impl From<&CatalogError> for CliError {
    fn from(error: &CatalogError) -> Self {
        let code = match error {
            CatalogError::ReadDirectory { .. } | CatalogError::Read(_) => ErrorCode::ReadFailed,
            CatalogError::Write(file) if file.is_refusal() => ErrorCode::RefusedPath,
            CatalogError::Write(_) => ErrorCode::WriteFailed,
            CatalogError::InvalidReference { .. } => ErrorCode::InvalidReference,
            CatalogError::NotFound { .. } => ErrorCode::NotFound,
            CatalogError::Invalid { .. } => ErrorCode::InvalidDocument,
            CatalogError::Tampered { .. } => ErrorCode::Tampered,
            CatalogError::Unsealed { .. } => ErrorCode::Unsealed,
            CatalogError::NoReviewer => ErrorCode::NoReviewer,
            CatalogError::NoBinding { .. } => ErrorCode::NoBinding,
            CatalogError::NothingToRevoke { .. } => ErrorCode::NothingToRevoke,
            CatalogError::NoEvaluation { .. } => ErrorCode::NoEvaluation,
            CatalogError::EvaluationFailed { .. } => ErrorCode::EvaluationFailed,
        };
        let refused = Self::new(code, error.to_string());
        match error {
            CatalogError::NotFound {
                closest: Some(closest),
                ..
            }
            | CatalogError::InvalidReference {
                closest: Some(closest),
                ..
            } => refused.with_help(format!(
                "did you mean `{closest}`? (`cua catalog list` shows every capability)"
            )),
            CatalogError::NotFound { closest: None, .. } => {
                refused.with_help("`cua catalog list` shows every capability in the catalog")
            }
            CatalogError::InvalidReference { closest: None, .. } => refused.with_help(
                "a capability is named `id@version` (`vendor_product.domain.operation@1.0.0`), \
                 `id` for its newest version, or by its file's path",
            ),
            _ => refused,
        }
    }
}

impl From<LaunchError> for CliError {
    fn from(error: LaunchError) -> Self {
        let code = match error {
            LaunchError::ChromiumMissing { .. } => ErrorCode::ChromiumMissing,
            _ => ErrorCode::SurfaceUnavailable,
        };
        Self::new(code, error.to_string())
    }
}

impl From<&cua_evidence::EvidenceError> for CliError {
    /// Evidence a command could not start: a root or run directory refused for what is at its
    /// path is the user's to fix; anything else failed.
    fn from(error: &cua_evidence::EvidenceError) -> Self {
        let code = match error {
            cua_evidence::EvidenceError::File(file) if file.is_refusal() => ErrorCode::RefusedPath,
            cua_evidence::EvidenceError::InvalidRedactionRule { .. } => ErrorCode::InvalidDocument,
            _ => ErrorCode::EvidenceUnwritable,
        };
        Self::new(code, error.to_string())
    }
}

impl From<&cua_agent::AgentError> for CliError {
    /// A model the environment does not configure, configures with a value that cannot be
    /// used, or a discovery that could not run to its end.
    fn from(error: &cua_agent::AgentError) -> Self {
        use cua_agent::AgentError;
        let code = match error {
            AgentError::ModelNotConfigured { .. } => ErrorCode::ModelNotConfigured,
            AgentError::InvalidModelConfig { .. } | AgentError::HttpClient(_) => {
                ErrorCode::InvalidModelConfig
            }
            AgentError::ScriptedServer(_) => ErrorCode::Internal,
            AgentError::Evidence(_) => ErrorCode::EvidenceUnwritable,
            _ => ErrorCode::DiscoveryFailed,
        };
        Self::chained(code, error)
    }
}

/// A document at `path` that does not load: tampered, or invalid with a help line (the key
/// a misspelt one is nearest to, and where to see every problem).
pub(crate) fn invalid_document(
    path: &std::path::Path,
    error: &cua_artifact::ArtifactError,
) -> CliError {
    use cua_artifact::ArtifactError;
    let code = match error {
        ArtifactError::Tampered { .. } => ErrorCode::Tampered,
        _ => ErrorCode::InvalidDocument,
    };
    let refused = CliError::new(code, format!("{}: {error}", path.display()));
    let every = format!(
        "`cua validate {}` shows every problem with its place",
        path.display()
    );
    match error {
        ArtifactError::Yaml(yaml) => match yaml.suggestion() {
            Some(known) => refused.with_help(format!("did you mean `{known}`? ({every})")),
            None => refused.with_help(every),
        },
        ArtifactError::Invalid(_) => refused.with_help(every),
        ArtifactError::Tampered { .. } => refused.with_help(format!(
            "the content changed after sealing: review the change, then `cua seal {}` (a new \
             artifact, which needs its own approval)",
            path.display()
        )),
        _ => refused,
    }
}

/// The help line of a command that checked documents: the one problem's own help, or where
/// all of them are.
pub(crate) fn diagnostics_help(diagnostics: &[&cua_artifact::Diagnostic]) -> String {
    match diagnostics {
        [one] => one.help.clone(),
        many => format!(
            "each of the {} problems is listed with its place and help (on stderr, or in \
             `data` with --format json)",
            many.len()
        ),
    }
}

/// A tenant with no binding of `id`: where the binding was expected, and which tenants have
/// one, with a "did you mean" when the name given is close to one of them.
pub(crate) fn no_binding(
    catalog: &cua_catalog::Catalog,
    tenant: &cua_artifact::TenantId,
    id: &cua_artifact::CapabilityId,
) -> CliError {
    let expected = catalog.binding_path(tenant, id);
    let bound = catalog.tenants_binding(id);
    let refused = CliError::new(
        ErrorCode::NoBinding,
        format!(
            "tenant {tenant} has no binding of {id} (expected {})",
            expected.display()
        ),
    );
    let listed = bound.join(", ");
    match cua_artifact::suggest::closest(tenant.as_str(), bound.iter().map(String::as_str)) {
        Some(closest) => refused.with_help(format!(
            "did you mean `--tenant {closest}`? (tenants with a binding of {id}: {listed})"
        )),
        None if bound.is_empty() => refused.with_help(format!(
            "no tenant has a binding of {id}: run it without --tenant, or write {}",
            expected.display()
        )),
        None => refused.with_help(format!("tenants with a binding of {id}: {listed}")),
    }
}

/// The directory a path is in (`.` for a bare name).
fn directory_of(path: &std::path::Path) -> &std::path::Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => std::path::Path::new("."),
    }
}

/// The entry beside `path` whose name is nearest its name, for a path that is not there.
pub(crate) fn nearest_sibling(path: &std::path::Path) -> Option<std::path::PathBuf> {
    let siblings: Vec<String> = std::fs::read_dir(directory_of(path))
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let name = path.file_name()?.to_string_lossy().into_owned();
    cua_artifact::suggest::closest(&name, siblings.iter().map(String::as_str))
        .map(|closest| path.with_file_name(closest))
}

/// `--input`s that do not fit the capability's input specs, every problem in one message
/// (never the values: they may be sensitive), the nearest declared name offered for a
/// misspelt one.
pub(crate) fn invalid_inputs(
    capability: &cua_artifact::Capability,
    problems: &[cua_replay::InputProblem],
) -> CliError {
    let message = problems
        .iter()
        .map(|problem| problem.message.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let lists = format!(
        "`cua catalog show {}` lists its inputs; `--tool-schema` gives their types and patterns",
        capability.reference()
    );
    let help = match problems.iter().find_map(|problem| {
        problem
            .closest
            .as_ref()
            .map(|closest| (problem.input.as_str(), closest))
    }) {
        Some((given, closest)) => {
            format!("did you mean `--input {closest}=…` for `{given}`? ({lists})")
        }
        None => lists,
    };
    CliError::new(ErrorCode::InvalidInput, message).with_help(help)
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

/// The one multi-thread runtime a command's async work runs on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| CliError::new(ErrorCode::Internal, format!("no async runtime: {error}")))
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    /// README.md's table is the contract scripts read: every code with its exit status, and
    /// no code the binary cannot produce.
    #[test]
    fn readme_lists_every_error_code_with_its_exit() {
        let readme = include_str!("../README.md");
        let listed: Vec<&str> = readme
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|rest| rest.split_once("` |"))
            .filter(|(name, rest)| {
                !name.contains(' ') && rest.trim_start().starts_with(|c: char| c.is_ascii_digit())
            })
            .map(|(name, _)| name)
            .collect();
        for code in ErrorCode::ALL {
            let row = format!(
                "| `{}` | {} | {} |",
                code.as_str(),
                code.exit() as u8,
                code.meaning()
            );
            assert!(
                readme.contains(&row),
                "README.md lacks the row `{row}` for {code:?}"
            );
        }
        for name in listed {
            assert!(
                ErrorCode::ALL.iter().any(|code| code.as_str() == name),
                "README.md lists `{name}`, which no command reports"
            );
        }
    }

    /// The catalog names its own errors; the binary's closed code for each is the same name,
    /// so `cua catalog` and the library's callers never disagree.
    #[test]
    fn catalog_errors_keep_the_catalogs_names() {
        use cua_catalog::CatalogError;
        let errors = [
            CatalogError::NoReviewer,
            CatalogError::InvalidReference {
                text: "x".to_owned(),
                reason: "y".to_owned(),
                closest: None,
            },
            CatalogError::Invalid {
                path: "capabilities/x.yaml".into(),
                reason: "y".to_owned(),
            },
        ];
        for error in &errors {
            assert_eq!(super::CliError::from(error).code().as_str(), error.code());
        }
    }

    #[test]
    fn wire_names_are_unique_snake_case() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            let name = code.as_str();
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name}"
            );
            assert!(seen.insert(name), "{name} is listed twice");
        }
    }
}
