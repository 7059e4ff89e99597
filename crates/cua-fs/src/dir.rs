//! A directory held open by descriptor, and everything cua does inside one: open a child
//! directory or file without following a link, read it bounded, write a file whole through an
//! exclusive temporary file, append to a log.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::error::FsError;
use crate::name::check_name;
use crate::read::{Limit, describe, read_flags, read_open, regular_size};

/// Who may read what cua writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileMode {
    /// Files 0600, directories 0700: evidence, a batch's state, interventions, anything that
    /// holds what a run saw.
    Private,
    /// Files 0644, directories 0755 (less the umask): documents and reports meant to be read,
    /// reviewed and committed.
    Readable,
}

impl FileMode {
    fn file(self) -> Mode {
        match self {
            Self::Private => Mode::from_raw_mode(0o600),
            Self::Readable => Mode::from_raw_mode(0o644),
        }
    }

    fn directory(self) -> u32 {
        match self {
            Self::Private => 0o700,
            Self::Readable => 0o755,
        }
    }
}

/// Whether [`Dir::open_append`] may create the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Create {
    /// Create it; anything already there (a file, a link) is refused as existing.
    New,
    /// Open it if it is there (a regular file of ours), create it otherwise.
    IfMissing,
}

/// A directory, open. Everything below it is reached relative to this descriptor, one plain
/// component at a time, each opened with `O_NOFOLLOW`.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// Opens the directory at `path`. Its last component must not be a symbolic link (the
    /// components before it are the user's to choose).
    pub fn open(path: &Path) -> Result<Self, FsError> {
        let (path, last_is_name) = normalize(path);
        let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if last_is_name {
            flags |= OFlags::NOFOLLOW;
        }
        match rustix::fs::open(&path, flags, Mode::empty()) {
            Ok(fd) => Ok(Self { fd, path }),
            Err(errno) => Err(classify(rustix::fs::CWD, &path, &path, errno)),
        }
    }

    /// Opens the directory at `path`, creating it and any missing parents first (with
    /// `mode`'s directory bits). An existing directory is used as it is; a symbolic link in
    /// its place is refused.
    pub fn create_all(path: &Path, mode: FileMode) -> Result<Self, FsError> {
        match Self::open(path) {
            Err(error) if error.is_not_found() => {}
            opened => return opened,
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(mode.directory())
            .create(path)
            .map_err(|source| FsError::io("create", path, source))?;
        Self::open(path)
    }

    /// The directory's path, as it was named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the directory `name` inside this one; a link in its place is refused.
    pub fn open_dir(&self, name: &str) -> Result<Self, FsError> {
        check_name(name)?;
        let path = self.path.join(name);
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => Ok(Self { fd, path }),
            Err(errno) => Err(classify(&self.fd, name, &path, errno)),
        }
    }

    /// Creates the directory `name` inside this one and opens it. Anything already called
    /// `name` (a directory, a file, a link) is refused as [`FsError::Exists`].
    pub fn create_dir(&self, name: &str, mode: FileMode) -> Result<Self, FsError> {
        check_name(name)?;
        let path = self.path.join(name);
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode.directory())) {
            Ok(()) => self.open_dir(name),
            Err(Errno::EXIST) => Err(FsError::Exists { path }),
            Err(errno) => Err(FsError::io("create", path, errno)),
        }
    }

    /// Opens the directory `name` inside this one, creating it first when it is missing.
    pub fn ensure_dir(&self, name: &str, mode: FileMode) -> Result<Self, FsError> {
        match self.create_dir(name, mode) {
            Err(FsError::Exists { .. }) => self.open_dir(name),
            created => created,
        }
    }

    /// The names in this directory, sorted (`.` and `..` left out).
    pub fn entry_names(&self) -> Result<Vec<String>, FsError> {
        let entries = rustix::fs::Dir::read_from(&self.fd)
            .map_err(|errno| FsError::io("list", &self.path, errno))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|errno| FsError::io("list", &self.path, errno))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != "." && name != ".." {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Refuses this directory unless the current user owns it: another user who owns it could
    /// plant or read what cua puts in it.
    pub fn check_owned(&self) -> Result<(), FsError> {
        let stat = rustix::fs::fstat(&self.fd)
            .map_err(|errno| FsError::io("inspect", &self.path, errno))?;
        owned(stat.st_uid, &self.path)
    }

    /// Reads the regular file at `relative` (plain components joined by `/`) below this
    /// directory, bounded by `limit`. No component may be a symbolic link.
    pub fn read(&self, relative: &str, limit: Limit) -> Result<Vec<u8>, FsError> {
        let path = self.path.join(relative);
        let (parent, name) = self.walk(relative)?;
        let parent = parent.as_ref().unwrap_or(self);
        let flags = read_flags() | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(&parent.fd, name, flags, Mode::empty())
            .map_err(|errno| classify(&parent.fd, name, &path, errno))?;
        read_open(&File::from(fd), &path, limit)
    }

    /// Whether `relative` names a regular file below this directory, reached without a link.
    pub fn has_file(&self, relative: &str) -> bool {
        let Ok((parent, name)) = self.walk(relative) else {
            return false;
        };
        let parent = parent.as_ref().unwrap_or(self);
        rustix::fs::statat(&parent.fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile)
    }

    /// Writes `bytes` as the file `name`, replacing it whole or not at all: through a new
    /// temporary file in this directory (`O_EXCL | O_NOFOLLOW`, a random name), synced, then
    /// renamed over `name`, and the directory synced. A symbolic link or anything but a
    /// regular file called `name` is refused.
    pub fn write_atomic(&self, name: &str, bytes: &[u8], mode: FileMode) -> Result<(), FsError> {
        check_name(name)?;
        let path = self.path.join(name);
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => refuse_unless_regular(FileType::from_raw_mode(stat.st_mode), &path)?,
            Err(Errno::NOENT) => {}
            Err(errno) => return Err(FsError::io("inspect", path, errno)),
        }
        let temporary = self.write_temporary(bytes, mode)?;
        // A rename replaces whatever has the name by then, a link included, and never follows it.
        if let Err(errno) = rustix::fs::renameat(&self.fd, &temporary, &self.fd, name) {
            self.remove_quietly(&temporary);
            return Err(FsError::io("rename into", path, errno));
        }
        self.sync()
    }

    /// Writes `bytes` as the new file `name`, whole or not at all: through a temporary file
    /// linked under `name` once written and synced. Anything already called `name` (a file, a
    /// link) is refused, so nothing is ever overwritten.
    pub fn write_new(&self, name: &str, bytes: &[u8], mode: FileMode) -> Result<(), FsError> {
        check_name(name)?;
        let path = self.path.join(name);
        let temporary = self.write_temporary(bytes, mode)?;
        // `linkat` does not follow a link at the new name: it fails, as for any existing name.
        let linked = rustix::fs::linkat(&self.fd, &temporary, &self.fd, name, AtFlags::empty());
        self.remove_quietly(&temporary);
        match linked {
            Ok(()) => self.sync(),
            Err(Errno::EXIST) => Err(self.existing(name, path)),
            Err(errno) => Err(FsError::io("create", path, errno)),
        }
    }

    /// Opens the file `name` for appending (and reading), never through a link: with
    /// [`Create::New`] only if nothing has the name; with [`Create::IfMissing`] an existing one
    /// must be a regular file the current user owns.
    pub fn open_append(&self, name: &str, create: Create, mode: FileMode) -> Result<File, FsError> {
        check_name(name)?;
        let path = self.path.join(name);
        let mut flags = OFlags::RDWR
            | OFlags::APPEND
            | OFlags::CREATE
            | OFlags::NOFOLLOW
            | OFlags::CLOEXEC
            | OFlags::NONBLOCK
            | OFlags::NOCTTY;
        if create == Create::New {
            flags |= OFlags::EXCL;
        }
        let fd = match rustix::fs::openat(&self.fd, name, flags, mode.file()) {
            Ok(fd) => fd,
            Err(Errno::EXIST) => return Err(self.existing(name, path)),
            Err(errno) => return Err(classify(&self.fd, name, &path, errno)),
        };
        let file = File::from(fd);
        regular_size(&file, &path, None)?;
        let stat =
            rustix::fs::fstat(&file).map_err(|errno| FsError::io("inspect", &path, errno))?;
        owned(stat.st_uid, &path)?;
        Ok(file)
    }

    /// Makes the directory's entries durable. A file system that cannot sync a directory still
    /// holds the complete files.
    pub fn sync(&self) -> Result<(), FsError> {
        match rustix::fs::fsync(&self.fd) {
            Ok(()) | Err(Errno::INVAL) => Ok(()),
            Err(errno) => Err(FsError::io("sync", &self.path, errno)),
        }
    }

    /// Opens every directory of `relative` but the last component, which it returns (`None`
    /// when that directory is this one).
    fn walk<'a>(&self, relative: &'a str) -> Result<(Option<Self>, &'a str), FsError> {
        let mut parts = relative.split('/');
        let last = parts.next_back().unwrap_or_default();
        let mut current: Option<Self> = None;
        for part in parts {
            let next = current.as_ref().unwrap_or(self).open_dir(part)?;
            current = Some(next);
        }
        check_name(last)?;
        Ok((current, last))
    }

    /// Creates a new temporary file in this directory, writes and syncs `bytes`, and returns
    /// its name. Its name is random and it is created exclusively without following a link, so
    /// nothing another user planted is ever opened.
    fn write_temporary(&self, bytes: &[u8], mode: FileMode) -> Result<String, FsError> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut attempts = 0;
        let (name, fd) = loop {
            let name = temporary_name()
                .map_err(|errno| FsError::io("name a temporary file in", &self.path, errno))?;
            match rustix::fs::openat(&self.fd, name.as_str(), flags, mode.file()) {
                Ok(fd) => break (name, fd),
                // Someone holds that name: draw another, a few times.
                Err(Errno::EXIST | Errno::LOOP) if attempts < 8 => attempts += 1,
                Err(errno) => {
                    return Err(FsError::io("create a temporary file in", &self.path, errno));
                }
            }
        };
        let mut file = File::from(fd);
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        if let Err(source) = written {
            self.remove_quietly(&name);
            return Err(FsError::io("write", self.path.join(&name), source));
        }
        Ok(name)
    }

    fn remove_quietly(&self, name: &str) {
        let _ = rustix::fs::unlinkat(&self.fd, name, AtFlags::empty());
    }

    /// The refusal of a name that exists: a link says so, anything else exists.
    fn existing(&self, name: &str, path: PathBuf) -> FsError {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                FsError::Symlink { path }
            }
            _ => FsError::Exists { path },
        }
    }
}

/// Writes `bytes` as the file at `path`, a path the user named, whole or not at all (see
/// [`Dir::write_atomic`]). The directories on the way are the user's; the file itself must not
/// be a symbolic link.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: FileMode) -> Result<(), FsError> {
    let (directory, name) = split(path)?;
    let fd = rustix::fs::open(
        &directory,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| FsError::io("open the directory", &directory, errno))?;
    Dir {
        fd,
        path: directory,
    }
    .write_atomic(&name, bytes, mode)
}

/// `path` without `.` components or trailing slashes (a trailing slash would make the kernel
/// follow a final link), and whether its last component is a name (rather than `/`, `.` or
/// `..`, which cannot be links themselves).
fn normalize(path: &Path) -> (PathBuf, bool) {
    let normalized: PathBuf = path.components().collect();
    let last_is_name = matches!(
        normalized.components().next_back(),
        Some(Component::Normal(_))
    );
    if normalized.as_os_str().is_empty() {
        (PathBuf::from("."), false)
    } else {
        (normalized, last_is_name)
    }
}

/// A file path split into its directory (`.` when it has none) and its name.
fn split(path: &Path) -> Result<(PathBuf, String), FsError> {
    let (normalized, last_is_name) = normalize(path);
    let name = normalized
        .file_name()
        .filter(|_| last_is_name)
        .and_then(|name| name.to_str())
        .ok_or_else(|| FsError::InvalidName {
            name: path.display().to_string(),
            reason: "it does not end in a UTF-8 file name",
        })?
        .to_owned();
    let directory = normalized
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    Ok((directory, name))
}

/// Why opening `name` in `dirfd` failed: a link or something other than what was expected is
/// refused as such (whatever the kernel answered: `ELOOP` usually, but `EACCES` where it
/// protects links in shared directories); anything else is an I/O error.
fn classify(dirfd: impl AsFd, name: impl rustix::path::Arg, path: &Path, errno: Errno) -> FsError {
    if errno != Errno::NOENT
        && let Ok(stat) = rustix::fs::statat(dirfd, name, AtFlags::SYMLINK_NOFOLLOW)
    {
        let kind = FileType::from_raw_mode(stat.st_mode);
        if kind == FileType::Symlink {
            return FsError::Symlink {
                path: path.to_path_buf(),
            };
        }
        if errno == Errno::NOTDIR {
            return FsError::NotADirectory {
                path: path.to_path_buf(),
                kind: describe(kind),
            };
        }
    }
    FsError::io("open", path, errno)
}

fn refuse_unless_regular(kind: FileType, path: &Path) -> Result<(), FsError> {
    match kind {
        FileType::RegularFile => Ok(()),
        FileType::Symlink => Err(FsError::Symlink {
            path: path.to_path_buf(),
        }),
        other => Err(FsError::NotRegular {
            path: path.to_path_buf(),
            kind: describe(other),
            limit: None,
        }),
    }
}

fn owned(owner: u32, path: &Path) -> Result<(), FsError> {
    if owner == rustix::process::geteuid().as_raw() {
        Ok(())
    } else {
        Err(FsError::NotOwned {
            path: path.to_path_buf(),
            owner,
        })
    }
}

/// `.cua-<16 hex digits>.tmp`: hidden, and drawn from the kernel's random source so no other
/// user can plant it ahead of time (they can only make this attempt fail).
fn temporary_name() -> Result<String, Errno> {
    let mut bytes = [0_u8; 8];
    rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty())?;
    Ok(format!(".cua-{:016x}.tmp", u64::from_le_bytes(bytes)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    const LIMIT: Limit = Limit {
        bytes: 64,
        what: "a test file",
    };

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_directory_that_is_a_link_is_refused_and_a_real_one_is_created_or_opened() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("real");
        let dir = Dir::create_all(&real.join("a/b"), FileMode::Private).unwrap();
        assert_eq!(
            std::fs::metadata(dir.path()).unwrap().permissions().mode() & 0o777,
            0o700
        );
        Dir::open(&real).unwrap();
        symlink(&real, root.path().join("link")).unwrap();
        for path in [
            root.path().join("link"),
            root.path().join("link/"),
            root.path().join("link/."),
        ] {
            assert!(
                matches!(Dir::open(&path), Err(FsError::Symlink { .. })),
                "{}",
                path.display()
            );
            assert!(matches!(
                Dir::create_all(&path, FileMode::Private),
                Err(FsError::Symlink { .. })
            ));
        }
        let parent = Dir::open(root.path()).unwrap();
        assert!(matches!(
            parent.open_dir("link"),
            Err(FsError::Symlink { .. })
        ));
        assert!(matches!(
            parent.ensure_dir("link", FileMode::Private),
            Err(FsError::Symlink { .. })
        ));
        assert!(matches!(
            parent.create_dir("real", FileMode::Private),
            Err(FsError::Exists { .. })
        ));
        assert!(matches!(
            parent.open_dir("../x"),
            Err(FsError::InvalidName { .. })
        ));
    }

    #[test]
    fn reads_inside_a_directory_follow_no_link_at_any_depth() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("run/snapshots")).unwrap();
        std::fs::write(root.path().join("run/snapshots/a.json"), "{}").unwrap();
        std::fs::write(root.path().join("outside.txt"), "secret").unwrap();
        symlink(
            root.path().join("outside.txt"),
            root.path().join("run/link.txt"),
        )
        .unwrap();
        symlink(
            root.path().join("run/snapshots"),
            root.path().join("run/linked-dir"),
        )
        .unwrap();
        let run = Dir::open(&root.path().join("run")).unwrap();
        assert_eq!(run.read("snapshots/a.json", LIMIT).unwrap(), b"{}");
        assert!(run.has_file("snapshots/a.json"));
        for (relative, symlinked) in [
            ("link.txt", true),
            ("linked-dir/a.json", true),
            ("../outside.txt", false),
            ("snapshots/../../outside.txt", false),
            ("snapshots//a.json", false),
            ("snapshots", false),
        ] {
            let refused = run.read(relative, LIMIT).unwrap_err();
            assert_eq!(
                matches!(refused, FsError::Symlink { .. }),
                symlinked,
                "{relative}: {refused}"
            );
            assert!(refused.is_refusal(), "{relative}: {refused}");
            assert!(!run.has_file(relative), "{relative}");
        }
    }

    #[test]
    fn an_atomic_write_replaces_a_file_whole_and_never_writes_through_a_link() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::open(root.path()).unwrap();
        dir.write_atomic("doc.yaml", b"one", FileMode::Readable)
            .unwrap();
        dir.write_atomic("doc.yaml", b"two", FileMode::Readable)
            .unwrap();
        assert_eq!(std::fs::read(root.path().join("doc.yaml")).unwrap(), b"two");
        std::fs::write(root.path().join("victim"), "precious").unwrap();
        symlink(root.path().join("victim"), root.path().join("link.yaml")).unwrap();
        let refused = dir
            .write_atomic("link.yaml", b"pwned", FileMode::Readable)
            .unwrap_err();
        assert!(matches!(refused, FsError::Symlink { .. }), "{refused}");
        assert!(
            refused
                .to_string()
                .contains(&root.path().join("link.yaml").display().to_string())
        );
        std::fs::create_dir(root.path().join("a-dir")).unwrap();
        assert!(matches!(
            dir.write_atomic("a-dir", b"x", FileMode::Readable),
            Err(FsError::NotRegular { .. })
        ));
        assert!(matches!(
            write_atomic(&root.path().join("link.yaml"), b"pwned", FileMode::Readable),
            Err(FsError::Symlink { .. })
        ));
        write_atomic(&root.path().join("doc.yaml"), b"three", FileMode::Readable).unwrap();
        assert_eq!(
            std::fs::read(root.path().join("doc.yaml")).unwrap(),
            b"three"
        );
        assert_eq!(
            std::fs::read(root.path().join("victim")).unwrap(),
            b"precious"
        );
        // No temporary file is left behind.
        assert_eq!(
            names(root.path()),
            ["a-dir", "doc.yaml", "link.yaml", "victim"]
        );
    }

    #[test]
    fn a_new_file_is_written_once_and_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::open(root.path()).unwrap();
        dir.write_new("0001.json", b"{}", FileMode::Private)
            .unwrap();
        assert!(matches!(
            dir.write_new("0001.json", b"[]", FileMode::Private),
            Err(FsError::Exists { .. })
        ));
        assert_eq!(std::fs::read(root.path().join("0001.json")).unwrap(), b"{}");
        assert_eq!(
            std::fs::metadata(root.path().join("0001.json"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        symlink(root.path().join("elsewhere"), root.path().join("0002.json")).unwrap();
        assert!(matches!(
            dir.write_new("0002.json", b"{}", FileMode::Private),
            Err(FsError::Symlink { .. })
        ));
        assert!(!root.path().join("elsewhere").exists());
        assert_eq!(names(root.path()), ["0001.json", "0002.json"]);
    }

    #[test]
    fn an_append_log_is_a_regular_file_of_ours_never_a_link() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::open(root.path()).unwrap();
        let mut file = dir
            .open_append("state.jsonl", Create::IfMissing, FileMode::Private)
            .unwrap();
        file.write_all(b"one\n").unwrap();
        let mut again = dir
            .open_append("state.jsonl", Create::IfMissing, FileMode::Private)
            .unwrap();
        again.write_all(b"two\n").unwrap();
        assert_eq!(
            std::fs::read(root.path().join("state.jsonl")).unwrap(),
            b"one\ntwo\n"
        );
        assert!(matches!(
            dir.open_append("state.jsonl", Create::New, FileMode::Private),
            Err(FsError::Exists { .. })
        ));
        symlink(root.path().join("victim"), root.path().join("linked.jsonl")).unwrap();
        for create in [Create::New, Create::IfMissing] {
            assert!(matches!(
                dir.open_append("linked.jsonl", create, FileMode::Private),
                Err(FsError::Symlink { .. })
            ));
        }
        assert!(!root.path().join("victim").exists());
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.path().join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(matches!(
            dir.open_append("fifo", Create::IfMissing, FileMode::Private),
            Err(FsError::NotRegular { .. })
        ));
    }
}
