//! Evidence serving: only a regular file inside a run directory. The run id must be a run id,
//! the relative path plain components, and every component, the run directory included, is
//! opened without following a link, so a link planted in the evidence root or in a run (even
//! one pointing inside the root) is refused; a run directory another user made is refused too.

use std::path::{Component, Path};

use cua_fs::Dir;

use crate::error::ConsoleError;

/// An evidence file, read for serving.
#[derive(Debug)]
pub struct EvidenceFile {
    pub bytes: Vec<u8>,
    pub content_type: &'static str,
}

/// Reads the file `relative` of run `run_id` under `root`, checked. Refused: an invalid run id,
/// an empty or absolute path, `.` or `..` components, hidden files, backslashes or NULs, a run
/// directory that is a link or another user's, a link at any depth, anything but a regular
/// file, and a file over [`cua_evidence::MAX_EVIDENCE_FILE_BYTES`].
pub fn read_evidence_file(
    root: &Path,
    run_id: &str,
    relative: &str,
) -> Result<EvidenceFile, ConsoleError> {
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
    let run = open_run(root, run_id)?;
    match run.read(relative, cua_evidence::EVIDENCE_FILE_LIMIT) {
        Ok(bytes) => Ok(EvidenceFile {
            bytes,
            content_type: content_type(path),
        }),
        Err(error) if error.is_refusal() => Err(refuse(
            "not a regular file inside the run directory (a link, a directory, a device, or too large)",
        )),
        Err(_) => Err(not_found()),
    }
}

/// The run directory `run_id` under `root`, held open: a real directory of the console's own
/// user, never a link and never another user's, whatever its name says.
pub(crate) fn open_run(root: &Path, run_id: &str) -> Result<Dir, ConsoleError> {
    cua_evidence::RunId::parse(run_id).map_err(|_| ConsoleError::BadRequest {
        reason: "not a run id".to_owned(),
    })?;
    let not_found = || ConsoleError::NotFound {
        what: "run",
        id: run_id.to_owned(),
    };
    let refused = || ConsoleError::BadRequest {
        reason: format!("refused run `{run_id}`: not a run directory of this console's user"),
    };
    let run = Dir::open(root)
        .and_then(|root| root.open_dir(run_id))
        .map_err(|error| {
            if error.is_refusal() {
                refused()
            } else {
                not_found()
            }
        })?;
    run.check_owned().map_err(|_| refused())?;
    Ok(run)
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
        let check =
            |run_id: &str, path: &str| read_evidence_file(root.path(), run_id, path).map(|_| ());
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
