//! Bounded reads: a regular file of at most a known size, or a refusal naming both.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

use crate::error::FsError;

/// How much cua reads of one kind of file, and what that kind is called in a refusal. Each
/// caller defines its limits as constants, with why they are what they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// The most bytes read; a larger file is refused unread.
    pub bytes: u64,
    /// What the file is, for the refusal: `a YAML document`, `a batch's rows`, ….
    pub what: &'static str,
}

/// Reads the regular file at `path` (which may pass through symbolic links: the user named
/// it), refusing a directory, a device, a FIFO or a socket at once (the open does not block on
/// a FIFO), and a file over `limit`, checked before reading and again while reading.
pub fn read_bounded(path: &Path, limit: Limit) -> Result<Vec<u8>, FsError> {
    let fd = rustix::fs::open(path, read_flags(), Mode::empty())
        .map_err(|source| FsError::io("read", path, source))?;
    read_open(&File::from(fd), path, limit)
}

/// [`read_bounded`], as UTF-8 text.
pub fn read_to_string_bounded(path: &Path, limit: Limit) -> Result<String, FsError> {
    utf8(read_bounded(path, limit)?, path)
}

/// [`read_to_string_bounded`] for a file whose content decides what cua does (a project file
/// that names the policy): it must be a regular file, not a symbolic link, owned by the current
/// user or by root, and writable by no one else (see [`trusted`]). Anything else is refused,
/// never skipped: another local user who planted or may rewrite it would choose cua's settings.
pub fn read_trusted(path: &Path, limit: Limit) -> Result<String, FsError> {
    let fd = rustix::fs::open(path, read_flags() | OFlags::NOFOLLOW, Mode::empty()).map_err(
        |errno| {
            if errno == rustix::io::Errno::LOOP {
                FsError::Symlink {
                    path: path.to_path_buf(),
                }
            } else {
                FsError::io("read", path, errno)
            }
        },
    )?;
    let stat = rustix::fs::fstat(&fd).map_err(|source| FsError::io("inspect", path, source))?;
    let me = Reader {
        user: rustix::process::geteuid().as_raw(),
        group: rustix::process::getegid().as_raw(),
    };
    trusted(&stat, me, path)?;
    utf8(read_open(&File::from(fd), path, limit)?, path)
}

/// Who reads a trusted file: the effective user and group.
#[derive(Debug, Clone, Copy)]
struct Reader {
    user: u32,
    group: u32,
}

/// Whether a file with `stat` may decide what `me` runs: owned by `me` or by root, writable by
/// no other user, and group-writable only when its group is `me`'s own (Debian gives every
/// user a group of their own and a umask of 002, so a clone's files are often 0664).
fn trusted(stat: &rustix::fs::Stat, me: Reader, path: &Path) -> Result<(), FsError> {
    let owner = stat.st_uid;
    if owner != me.user && owner != 0 {
        return Err(FsError::NotOwned {
            path: path.to_path_buf(),
            owner,
        });
    }
    let mode = stat.st_mode & 0o7777;
    if mode & 0o002 != 0 || (mode & 0o020 != 0 && stat.st_gid != me.group) {
        return Err(FsError::WritableByOthers {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// The flags of every open for reading: never blocking on a FIFO, never becoming the
/// controlling terminal, closed across `exec`.
pub(crate) fn read_flags() -> OFlags {
    OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY
}

/// Reads an open file (`path` names it in a refusal) from where it stands, checking first that
/// it is a regular file within `limit`.
pub fn read_open(file: &File, path: &Path, limit: Limit) -> Result<Vec<u8>, FsError> {
    let size = regular_size(file, path, Some(limit.bytes))?;
    let too_large = |size: u64| FsError::TooLarge {
        path: path.to_path_buf(),
        limit: limit.bytes,
        size,
        what: limit.what,
    };
    if size > limit.bytes {
        return Err(too_large(size));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // One byte past the limit tells a file that grew since `fstat` from one that fits.
    file.take(limit.bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| FsError::io("read", path, source))?;
    let read = bytes.len() as u64;
    if read > limit.bytes {
        return Err(too_large(read));
    }
    Ok(bytes)
}

/// The size of an open regular file, or the refusal of anything else.
pub(crate) fn regular_size(file: &File, path: &Path, limit: Option<u64>) -> Result<u64, FsError> {
    let stat = rustix::fs::fstat(file).map_err(|source| FsError::io("inspect", path, source))?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        return Err(FsError::NotRegular {
            path: path.to_path_buf(),
            kind: describe(kind),
            limit,
        });
    }
    Ok(u64::try_from(stat.st_size).unwrap_or(0))
}

pub(crate) fn utf8(bytes: Vec<u8>, path: &Path) -> Result<String, FsError> {
    String::from_utf8(bytes).map_err(|_| FsError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

/// A kind of file, as a refusal names it.
pub(crate) fn describe(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "a file of unknown kind",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    const SMALL: Limit = Limit {
        bytes: 8,
        what: "a test file",
    };

    #[test]
    fn a_regular_file_within_the_limit_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eight");
        std::fs::write(&path, b"12345678").unwrap();
        assert_eq!(read_bounded(&path, SMALL).unwrap(), b"12345678");
        assert_eq!(read_to_string_bounded(&path, SMALL).unwrap(), "12345678");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_naming_it_and_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nine");
        std::fs::write(&path, b"123456789").unwrap();
        let refused = read_bounded(&path, SMALL).unwrap_err();
        let message = refused.to_string();
        assert!(
            matches!(refused, FsError::TooLarge { size: 9, .. }),
            "{message}"
        );
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(
            message.contains("8-byte limit for a test file"),
            "{message}"
        );
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        for (path, kind) in [
            (Path::new("/dev/zero"), "a character device"),
            (fifo.as_path(), "a FIFO"),
            (dir.path(), "a directory"),
        ] {
            let refused = read_bounded(path, SMALL).unwrap_err();
            let message = refused.to_string();
            assert!(message.contains(kind), "{message}");
            assert!(message.contains("at most 8 bytes"), "{message}");
            assert!(refused.is_refusal());
        }
    }

    /// Every owner and mode a trusted file may or may not have, for a reader who is uid 1000 in
    /// group 1000.
    #[test]
    fn trust_needs_our_or_roots_file_writable_by_no_one_else() {
        let me = Reader {
            user: 1000,
            group: 1000,
        };
        let stat = |uid: u32, gid: u32, mode: u32| {
            // A real stat, its owner, group and mode then set to the case's.
            let mut stat = rustix::fs::stat("/").expect("the root directory");
            stat.st_uid = uid;
            stat.st_gid = gid;
            stat.st_mode = 0o100_000 | mode;
            stat
        };
        let path = Path::new("cua.toml");
        let cases = [
            (1000, 1000, 0o644, true),
            (0, 0, 0o644, true),
            (1000, 1000, 0o664, true),
            (1000, 50, 0o664, false),
            (1000, 1000, 0o646, false),
            (1000, 1000, 0o666, false),
            (1001, 1000, 0o644, false),
            (1001, 1001, 0o600, false),
        ];
        for (uid, gid, mode, expected) in cases {
            let verdict = trusted(&stat(uid, gid, mode), me, path);
            assert_eq!(
                verdict.is_ok(),
                expected,
                "uid {uid} gid {gid} mode {mode:o}: {verdict:?}"
            );
        }
        assert!(matches!(
            trusted(&stat(1001, 1000, 0o644), me, path),
            Err(FsError::NotOwned { owner: 1001, .. })
        ));
    }

    #[test]
    fn a_trusted_file_is_ours_unlinked_and_writable_by_us_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings");
        std::fs::write(&path, b"ok").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(read_trusted(&path, SMALL).unwrap(), "ok");

        for mode in [0o646, 0o666] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let refused = read_trusted(&path, SMALL).unwrap_err();
            assert!(
                matches!(refused, FsError::WritableByOthers { mode: m, .. } if m == mode),
                "{refused}"
            );
            assert!(refused.to_string().contains("chmod go-w"), "{refused}");
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();

        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(matches!(
            read_trusted(&link, SMALL),
            Err(FsError::Symlink { .. })
        ));
        assert!(matches!(
            read_trusted(dir.path(), SMALL),
            Err(FsError::NotRegular { .. })
        ));
    }

    #[test]
    fn text_that_is_not_utf8_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latin1");
        std::fs::write(&path, b"caf\xe9").unwrap();
        assert!(matches!(
            read_to_string_bounded(&path, SMALL),
            Err(FsError::NotUtf8 { .. })
        ));
    }
}
