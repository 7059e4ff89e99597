//! The one error type of the crate.

use std::path::PathBuf;

/// Why a file was not read or written. Every variant names the path; the refusals (everything
/// but [`FsError::Io`]) also say what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error(
        "{} is a symbolic link, and cua neither writes through nor serves from a link: remove it, \
         or name the real path instead",
        path.display()
    )]
    Symlink { path: PathBuf },

    #[error("{} is {kind}, not a regular file{}", path.display(), read_note(*.limit))]
    NotRegular {
        path: PathBuf,
        /// `a directory`, `a FIFO`, `a character device`, …
        kind: &'static str,
        /// The read limit, when the file was to be read.
        limit: Option<u64>,
    },

    #[error("{} is not a directory (it is {kind})", path.display())]
    NotADirectory { path: PathBuf, kind: &'static str },

    #[error(
        "{} is over the {limit}-byte limit for {what} ({size} bytes or more): cua does not read it",
        path.display()
    )]
    TooLarge {
        path: PathBuf,
        limit: u64,
        size: u64,
        what: &'static str,
    },

    #[error(
        "{} belongs to another user (uid {owner}), who could have planted it: remove it, or use \
         another name",
        path.display()
    )]
    NotOwned { path: PathBuf, owner: u32 },

    #[error(
        "{} may be changed by other users (mode {mode:o}), and what it says decides what cua \
         does: make it writable by its owner only (chmod go-w)",
        path.display()
    )]
    WritableByOthers { path: PathBuf, mode: u32 },

    #[error("{} already exists and is never overwritten", path.display())]
    Exists { path: PathBuf },

    #[error("{} is not UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf },

    #[error("`{name}` is not a plain file name: {reason}")]
    InvalidName { name: String, reason: &'static str },

    /// The cause is part of the message, not a `source`: callers print one line, and a
    /// chain of sources would say it twice.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl FsError {
    /// Whether cua refused what it found at the path (a link, a device, an oversized or foreign
    /// file, a bad name), rather than failing to do the I/O: the caller reports a refusal as a
    /// usage error, since the user must change the path or what is at it.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, Self::Io { .. })
    }

    /// Whether the path did not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }

    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: impl Into<std::io::Error>,
    ) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source: source.into(),
        }
    }
}

fn read_note(limit: Option<u64>) -> String {
    match limit {
        Some(limit) => format!(": cua reads only regular files, of at most {limit} bytes here"),
        None => String::new(),
    }
}
