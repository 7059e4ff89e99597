//! Path-traversal-safe evidence serving: a run id that is a valid run id, a relative path of
//! plain components, and a canonical path that stays inside the canonical run directory (so a
//! symlink pointing out is refused too).

use std::path::{Component, Path, PathBuf};

use crate::error::ConsoleError;

/// The file `relative` of run `run_id` under `root`, checked. Refused: an invalid run id, an
/// empty or absolute path, `.` or `..` components, hidden files, backslashes or NULs, and any
/// path whose canonical form leaves the run directory.
pub fn evidence_file(root: &Path, run_id: &str, relative: &str) -> Result<PathBuf, ConsoleError> {
    let refuse = |reason: &str| ConsoleError::BadRequest {
        reason: format!("refused evidence path: {reason}"),
    };
    cua_evidence::RunId::parse(run_id).map_err(|_| refuse("not a run id"))?;
    if relative.is_empty() || relative.len() > 512 {
        return Err(refuse("empty or too long"));
    }
    if relative.contains(['\\', '\0', ':']) {
        return Err(refuse("backslash, colon or NUL"));
    }
    let path = Path::new(relative);
    if path.is_absolute() || relative.starts_with('/') {
        return Err(refuse("absolute"));
    }
    for component in path.components() {
        match component {
            Component::Normal(part) => {
                let part = part.to_str().ok_or_else(|| refuse("not UTF-8"))?;
                let plain = !part.starts_with('.')
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
                if !plain {
                    return Err(refuse("a component is not a plain file name"));
                }
            }
            _ => return Err(refuse("`.`, `..` or a root")),
        }
    }
    // Components the parser drops (`a//b`, `a/./b`) are refused as well.
    if relative
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err(refuse("`.`, `..` or an empty component"));
    }
    let not_found = || ConsoleError::NotFound {
        what: "evidence file",
        id: format!("{run_id}/{relative}"),
    };
    let run_dir = root.join(run_id).canonicalize().map_err(|_| not_found())?;
    let file = run_dir.join(path).canonicalize().map_err(|_| not_found())?;
    if !file.starts_with(&run_dir) {
        return Err(refuse("it leaves the run directory"));
    }
    if !file.is_file() {
        return Err(not_found());
    }
    Ok(file)
}

/// The content type served for an evidence file.
pub(crate) fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|ext| ext.to_str()) {
        Some("json") => "application/json",
        Some("jsonl") => "application/x-ndjson",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("txt" | "log") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn only_plain_paths_inside_the_run_are_served() {
        let root = tempfile::tempdir().unwrap();
        let run = root.path().join("run-1");
        std::fs::create_dir_all(run.join("snapshots")).unwrap();
        std::fs::write(run.join("trace.jsonl"), "{}\n").unwrap();
        std::fs::write(run.join("snapshots/0001-a.json"), "{}").unwrap();
        std::fs::write(root.path().join("secret.txt"), "canary").unwrap();
        std::os::unix::fs::symlink(root.path().join("secret.txt"), run.join("link.txt")).unwrap();
        let check = |run_id: &str, path: &str| evidence_file(root.path(), run_id, path).map(|_| ());
        assert!(check("run-1", "trace.jsonl").is_ok());
        assert!(check("run-1", "snapshots/0001-a.json").is_ok());
        for (run_id, path) in [
            ("run-1", "../secret.txt"),
            ("run-1", "snapshots/../../secret.txt"),
            ("run-1", "/etc/passwd"),
            ("run-1", "./trace.jsonl"),
            ("run-1", "snapshots//0001-a.json"),
            ("run-1", ".hidden"),
            ("run-1", "..\\secret.txt"),
            ("run-1", "link.txt"),
            ("..", "secret.txt"),
            ("run-1/..", "secret.txt"),
            ("run-1", ""),
        ] {
            let refused = check(run_id, path).unwrap_err();
            assert!(
                matches!(refused, ConsoleError::BadRequest { .. }),
                "{run_id} {path}: {refused}"
            );
        }
        assert!(matches!(
            check("run-1", "missing.json"),
            Err(ConsoleError::NotFound { .. })
        ));
    }
}
