//! The project a command works in: the nearest directory, from the current one upwards, that
//! holds a `cua.toml`. Every path a command defaults (the catalog, the tenants, the policy, the
//! eval suites, the evidence) is relative to that directory, so `cua` works the same from any
//! directory inside a project. A path given on the command line or in an environment variable
//! is the user's, relative to the current directory as usual.
//!
//! The project file decides which policy runs, so it is read only when it is a regular file
//! owned by the current user (or root) and writable by its owner only: a `cua.toml` another
//! local user planted above the current directory (in `/tmp`, say) is refused, never skipped.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;

use crate::error::{CliError, ErrorCode};

/// The project file's name.
pub(crate) const FILE: &str = "cua.toml";

/// A project file is a handful of lines.
const FILE_LIMIT: cua_fs::Limit = cua_fs::Limit {
    bytes: 64 * 1024,
    what: "a project file",
};

/// A path a command falls back to when neither its flag nor its environment variable names
/// one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DefaultPath {
    /// The capability catalog (`[paths] catalog`).
    Catalog,
    /// Tenant bindings (`[paths] tenants`).
    Tenants,
    /// The policy file (`[paths] policy`).
    Policy,
    /// Eval suites (`[paths] evals`).
    Suites,
    /// Run directories (`<evidence>/runs`).
    Runs,
    /// Eval reports and evaluations (`<evidence>/evals`).
    Evaluations,
    /// The runs an eval makes (`<evidence>/eval-runs`).
    EvalRuns,
    /// Discovery runs (`<evidence>/discovery`).
    Discovery,
    /// The demo's output (`<evidence>/demo`).
    #[cfg_attr(
        all(not(feature = "fixture"), not(test)),
        expect(dead_code, reason = "only the demo uses it")
    )]
    Demo,
}

impl DefaultPath {
    /// What the path is, for an error that cannot find it.
    fn what(self) -> &'static str {
        match self {
            Self::Catalog => "the capability catalog (--catalog)",
            Self::Tenants => "the tenant bindings (--tenants)",
            Self::Policy => "the policy file (--policy)",
            Self::Suites => "the eval suites",
            Self::Runs => "the evidence directory (--evidence-dir)",
            Self::Evaluations => "the evaluations directory",
            Self::EvalRuns => "the eval runs directory (--runs-dir)",
            Self::Discovery => "the discovery evidence directory (--evidence)",
            Self::Demo => "the demo's output directory (--out)",
        }
    }
}

/// `cua.toml`. Every key is optional; an unknown key is an error naming the keys there are.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    #[serde(default)]
    paths: Paths,
}

/// `[paths]`: each relative to the project's directory (or absolute).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Paths {
    pub(crate) catalog: PathBuf,
    pub(crate) tenants: PathBuf,
    pub(crate) policy: PathBuf,
    pub(crate) evals: PathBuf,
    pub(crate) evidence: PathBuf,
}

impl Default for Paths {
    fn default() -> Self {
        Self {
            catalog: "capabilities".into(),
            tenants: "tenants".into(),
            policy: "config/policy.yaml".into(),
            evals: "evals".into(),
            evidence: "evidence".into(),
        }
    }
}

/// A project: its directory and the paths its file sets.
#[derive(Debug, Clone)]
pub(crate) struct Project {
    root: PathBuf,
    paths: Paths,
}

impl Project {
    /// The project `start` is in: the nearest directory from `start` upwards holding a
    /// `cua.toml`, or `None` when there is none up to the root.
    pub(crate) fn find(start: &Path) -> Result<Option<Self>, CliError> {
        for directory in start.ancestors() {
            let file = directory.join(FILE);
            match std::fs::symlink_metadata(&file) {
                Ok(_) => return Self::read(directory, &file).map(Some),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    return Err(CliError::new(
                        ErrorCode::ReadFailed,
                        format!("cannot look for {}: {error}", file.display()),
                    ));
                }
            }
        }
        Ok(None)
    }

    fn read(root: &Path, file: &Path) -> Result<Self, CliError> {
        let text = cua_fs::read_trusted(file, FILE_LIMIT).map_err(|error| {
            CliError::unwritten(&error, ErrorCode::ReadFailed).with_help(format!(
                "a project file decides which policy and catalog cua uses; if {} is not yours, \
                 run cua from a directory outside it, or give every path on the command line",
                root.display()
            ))
        })?;
        let manifest: Manifest = toml::from_str(&text).map_err(|error| {
            CliError::new(
                ErrorCode::InvalidProject,
                format!("{}: {}", file.display(), one_line(&error.to_string())),
            )
            .with_help(format!(
                "a project file has one table, [paths], with the keys {}",
                PATH_KEYS.join(", ")
            ))
        })?;
        Ok(Self {
            root: root.to_path_buf(),
            paths: manifest.paths,
        })
    }

    /// Where `default` is in this project.
    pub(crate) fn path(&self, default: DefaultPath) -> PathBuf {
        let paths = &self.paths;
        let evidence = || self.root.join(&paths.evidence);
        match default {
            DefaultPath::Catalog => self.root.join(&paths.catalog),
            DefaultPath::Tenants => self.root.join(&paths.tenants),
            DefaultPath::Policy => self.root.join(&paths.policy),
            DefaultPath::Suites => self.root.join(&paths.evals),
            DefaultPath::Runs => evidence().join("runs"),
            DefaultPath::Evaluations => evidence().join("evals"),
            DefaultPath::EvalRuns => evidence().join("eval-runs"),
            DefaultPath::Discovery => evidence().join("discovery"),
            DefaultPath::Demo => evidence().join("demo"),
        }
    }
}

/// The keys `[paths]` takes, for the help of an invalid project file.
const PATH_KEYS: &[&str] = &["catalog", "tenants", "policy", "evals", "evidence"];

/// toml's messages span lines (a source excerpt); the envelope's message is one line.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('|') && !line.starts_with("-->"))
        .filter(|line| !line.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join(": ")
}

/// The project of the current directory, found once per process.
pub(crate) fn current() -> Result<Option<&'static Project>, CliError> {
    static PROJECT: OnceLock<Result<Option<Project>, CliError>> = OnceLock::new();
    PROJECT
        .get_or_init(|| {
            let here = std::env::current_dir().map_err(|error| {
                CliError::new(
                    ErrorCode::ReadFailed,
                    format!("cannot tell the current directory: {error}"),
                )
            })?;
            Project::find(&here)
        })
        .as_ref()
        .map(Option::as_ref)
        .map_err(Clone::clone)
}

/// `given` when the command line or the environment named a path, otherwise `default` in the
/// current project; outside any project, an error saying how to make one.
pub(crate) fn or_default(given: Option<&Path>, default: DefaultPath) -> Result<PathBuf, CliError> {
    if let Some(given) = given {
        return Ok(given.to_path_buf());
    }
    match current()? {
        Some(project) => Ok(project.path(default)),
        None => Err(outside(default)),
    }
}

/// As [`or_default`], except that outside any project `fallback` stands in: for a path this
/// invocation reads nothing from, or one whose natural place is beside a path that was given.
pub(crate) fn or_default_or(
    given: Option<&Path>,
    default: DefaultPath,
    fallback: impl FnOnce() -> Result<PathBuf, CliError>,
) -> Result<PathBuf, CliError> {
    match or_default(given, default) {
        Err(error) if error.code() == ErrorCode::NoProject => fallback(),
        resolved => resolved,
    }
}

/// The error of a command that needs a default path outside any project.
fn outside(default: DefaultPath) -> CliError {
    let here = std::env::current_dir()
        .map_or_else(|_| "this directory".to_owned(), |d| d.display().to_string());
    CliError::new(
        ErrorCode::NoProject,
        format!(
            "{here} is not in a cua project (no {FILE} here or in any directory above), so {} \
             has no default",
            default.what()
        ),
    )
    .with_help(
        "run `cua init` to make a project here (or `cua init DIR`), cd into a project, or name \
         the path with its flag",
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn write(path: &Path, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }

    #[test]
    fn the_nearest_project_file_above_sets_every_default() {
        let outer = tempfile::tempdir().unwrap();
        write(&outer.path().join(FILE), "");
        let inner = outer.path().join("team");
        let deep = inner.join("a").join("b");
        std::fs::create_dir_all(&deep).unwrap();
        write(
            &inner.join(FILE),
            "[paths]\ncatalog = \"caps\"\nevidence = \"/var/cua\"\n",
        );

        let project = Project::find(&deep).unwrap().unwrap();
        assert_eq!(project.path(DefaultPath::Catalog), inner.join("caps"));
        assert_eq!(project.path(DefaultPath::Tenants), inner.join("tenants"));
        assert_eq!(
            project.path(DefaultPath::Policy),
            inner.join("config/policy.yaml")
        );
        assert_eq!(project.path(DefaultPath::Suites), inner.join("evals"));
        assert_eq!(project.path(DefaultPath::Runs), Path::new("/var/cua/runs"));
        assert_eq!(
            project.path(DefaultPath::EvalRuns),
            Path::new("/var/cua/eval-runs")
        );

        let top = Project::find(outer.path()).unwrap().unwrap();
        assert_eq!(
            top.path(DefaultPath::Demo),
            outer.path().join("evidence/demo")
        );
    }

    #[test]
    fn no_project_file_up_to_the_root_is_no_project() {
        // `/` itself holds no cua.toml on any machine these tests run on.
        assert!(Project::find(Path::new("/")).unwrap().is_none());
    }

    #[test]
    fn an_unknown_key_is_refused_naming_the_keys_there_are() {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join(FILE), "[paths]\ncatalgo = \"caps\"\n");
        let refused = Project::find(dir.path()).unwrap_err();
        assert_eq!(refused.code(), ErrorCode::InvalidProject);
        assert!(
            refused.message().contains("catalgo"),
            "{}",
            refused.message()
        );
        assert!(!refused.message().contains('\n'), "{}", refused.message());
        assert!(
            refused.help().unwrap().contains("catalog, tenants"),
            "{refused:?}"
        );
    }

    #[test]
    fn a_project_file_others_may_rewrite_is_refused_not_skipped() {
        use std::os::unix::fs::PermissionsExt;
        let outer = tempfile::tempdir().unwrap();
        write(&outer.path().join(FILE), "");
        let inner = outer.path().join("shared");
        std::fs::create_dir(&inner).unwrap();
        let file = inner.join(FILE);
        write(&file, "");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();

        let refused = Project::find(&inner).unwrap_err();
        assert_eq!(refused.code(), ErrorCode::RefusedPath);
        assert!(refused.message().contains("chmod go-w"), "{refused:?}");
        assert!(refused.help().unwrap().contains("policy"), "{refused:?}");
    }
}
