//! Chromium profile directories: a fresh one per launch, named after the process that owns
//! it, and the sweep that removes the ones whose owner is gone.
//!
//! A profile holds a signed-in session, so one must never outlive its owner. The watchdog
//! (`watchdog.rs`) removes it when the owner ends in any way the kernel sees; what it cannot
//! cover (a power cut, or the watchdog killed together with its owner) is found by name at the
//! next launch: `cua-chromium-<owner pid>-<owner start time>-<counter>-<nanos>` under the
//! system temp dir. The start time (clock ticks after boot, from `/proc/<pid>/stat`) tells a
//! live owner from an unrelated process that has since been given the same pid.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::LaunchError;

/// Every profile directory name starts with this; nothing else in the temp dir is touched.
const PREFIX: &str = "cua-chromium-";

/// The preferences every profile starts with (see [`ProfileDir::write_preferences`]).
const PREFERENCES: &str = r#"{
  "autofill": { "enabled": false, "profile_enabled": false, "credit_card_enabled": false },
  "credentials_enable_service": false,
  "credentials_enable_autosignin": false,
  "profile": { "password_manager_enabled": false }
}"#;

/// A fresh, uniquely named profile directory under the system temp dir, readable only by us.
pub(crate) struct ProfileDir {
    pub(crate) path: PathBuf,
}

impl ProfileDir {
    /// Creates a new profile directory owned by this process.
    pub(crate) fn create() -> Result<Self, LaunchError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let owner = std::process::id();
        let started = start_time(owner).ok_or_else(|| LaunchError::Setup {
            reason: "cannot read this process's start time from /proc/self/stat".into(),
        })?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        let counter = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("{PREFIX}{owner}-{started}-{counter}-{nanos}"));
        // The profile will hold cookies and a signed-in session: nobody else may read it.
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|source| LaunchError::UserDataDir {
                path: path.clone(),
                source,
            })?;
        let profile = Self { path };
        if let Err(source) = profile.write_preferences() {
            profile.remove();
            return Err(LaunchError::UserDataDir {
                path: profile.path.clone(),
                source,
            });
        }
        Ok(profile)
    }

    /// Turns off what would keep typed values on disk: form autofill and autocomplete (which
    /// saves every submitted field, secrets included) and password saving. Chromium has no
    /// flags for these, only the profile's preferences, read at start-up.
    fn write_preferences(&self) -> std::io::Result<()> {
        let default = self.path.join("Default");
        std::fs::DirBuilder::new().mode(0o700).create(&default)?;
        std::fs::write(default.join("Preferences"), PREFERENCES)
    }

    /// Removes the directory (best effort, bounded).
    pub(crate) fn remove(&self) {
        remove_bounded(&self.path);
    }
}

/// Removes the profile directories in the system temp dir whose owner is no longer alive,
/// after killing any process still running on one of them. Best effort: a directory that
/// cannot be read or removed is left for the next sweep.
///
/// Only real directories (never symlinks) owned by our effective uid and named like a
/// profile are considered. A directory is kept when its owner pid is alive with the recorded
/// start time (or, for the older name without a start time, when the pid is alive at all).
pub(crate) fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let uid = rustix::process::geteuid().as_raw();
    let stale: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| {
            let Some(owner) = entry.file_name().to_str().and_then(parse_owner) else {
                return false;
            };
            // `DirEntry::metadata` does not follow symlinks, so a link is never a directory here.
            let ours = entry
                .metadata()
                .is_ok_and(|metadata| metadata.is_dir() && metadata.uid() == uid);
            ours && !owner.is_alive()
        })
        .map(|entry| entry.path())
        .collect();
    if stale.is_empty() {
        return;
    }
    let flags: Vec<String> = stale
        .iter()
        .map(|path| format!("--user-data-dir={}", path.display()))
        .collect();
    for pid in processes_using(&flags, uid) {
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    for path in &stale {
        remove_bounded(path);
    }
}

/// The process that created a profile directory, as recorded in its name.
#[derive(Debug, PartialEq, Eq)]
struct Owner {
    pid: u32,
    /// Absent in the names of older versions (`cua-chromium-<pid>-<counter>-<nanos>`).
    start_time: Option<u64>,
}

impl Owner {
    fn is_alive(&self) -> bool {
        match self.start_time {
            Some(recorded) => start_time(self.pid) == Some(recorded),
            None => Path::new(&format!("/proc/{}", self.pid)).exists(),
        }
    }
}

/// The owner recorded in a profile directory name, or `None` for any other name.
fn parse_owner(name: &str) -> Option<Owner> {
    let fields: Vec<u64> = name
        .strip_prefix(PREFIX)?
        .split('-')
        .map(|field| field.parse().ok())
        .collect::<Option<_>>()?;
    let pid = u32::try_from(*fields.first()?).ok()?;
    match fields.len() {
        4 => Some(Owner {
            pid,
            start_time: Some(fields[1]),
        }),
        3 => Some(Owner {
            pid,
            start_time: None,
        }),
        _ => None,
    }
}

/// A process's start time in clock ticks after boot (field 22 of `/proc/<pid>/stat`), or
/// `None` when there is no such process.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may itself contain spaces or ')'; the
    // fields after the last ')' start at field 3.
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// The processes of `uid` whose command line passes one of `flags`.
fn processes_using(flags: &[String], uid: u32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            if entry.metadata().ok()?.uid() != uid {
                return None;
            }
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            flags
                .iter()
                .any(|flag| passes_flag(&cmdline, flag.as_bytes()))
                .then_some(pid)
        })
        .collect()
}

/// Whether a `/proc/<pid>/cmdline` passes `flag`. The browser keeps its arguments apart
/// (NUL-separated), but Chromium rewrites each helper's command line into one space-joined
/// string, so the flag may end at a space as well as at a NUL or the end.
fn passes_flag(cmdline: &[u8], flag: &[u8]) -> bool {
    let starts_argument = |at: usize| at == 0 || matches!(cmdline[at - 1], 0 | b' ');
    let ends_argument = |at: usize| cmdline.get(at).is_none_or(|&byte| matches!(byte, 0 | b' '));
    cmdline
        .windows(flag.len())
        .enumerate()
        .any(|(at, window)| window == flag && starts_argument(at) && ends_argument(at + flag.len()))
}

fn remove_bounded(path: &Path) {
    // A browser process killed a moment ago may still be finishing a write; retry briefly.
    for _ in 0..10 {
        match std::fs::remove_dir_all(path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_read_from_current_and_older_names_only() {
        let check = |name: &str, expect: Option<(u32, Option<u64>)>| {
            let owner = parse_owner(name).map(|owner| (owner.pid, owner.start_time));
            assert_eq!(owner, expect, "{name}");
        };
        check("cua-chromium-42-9001-0-1700000000", Some((42, Some(9001))));
        check("cua-chromium-42-0-1700000000", Some((42, None)));
        check("cua-chromium-42-9001-0-1-2", None);
        check("cua-chromium-42", None);
        check("cua-chromium-x-9001-0-1", None);
        check("cua-chromium-42--0-1", None);
        check("cua-chromium-99999999999-1-0-1", None);
        check("chromium-42-9001-0-1", None);
        check("cua-chromium-42-9001-0-1.lock", None);
    }

    #[test]
    fn a_flag_is_found_as_a_whole_argument_in_either_command_line_form() {
        let flag = b"--user-data-dir=/tmp/cua-chromium-1-2-3-4";
        let check = |cmdline: &[u8], expect: bool| {
            assert_eq!(
                passes_flag(cmdline, flag),
                expect,
                "{}",
                String::from_utf8_lossy(cmdline)
            );
        };
        check(
            b"chromium\0--user-data-dir=/tmp/cua-chromium-1-2-3-4\0about:blank\0",
            true,
        );
        check(b"chromium\0--user-data-dir=/tmp/cua-chromium-1-2-3-4", true);
        check(
            b"chromium --type=renderer --user-data-dir=/tmp/cua-chromium-1-2-3-4 --lang=en\0",
            true,
        );
        check(
            b"chromium --type=renderer --user-data-dir=/tmp/cua-chromium-1-2-3-4",
            true,
        );
        check(
            b"chromium\0--user-data-dir=/tmp/cua-chromium-1-2-3-45\0",
            false,
        );
        check(
            b"chromium\0--user-data-dir=/tmp/cua-chromium-1-2-3-4/x\0",
            false,
        );
        check(
            b"chromium\0x--user-data-dir=/tmp/cua-chromium-1-2-3-4\0",
            false,
        );
        check(b"ls\0/tmp/cua-chromium-1-2-3-4\0", false);
        check(b"", false);
    }

    #[test]
    fn this_process_is_alive_under_its_start_time_only() {
        let pid = std::process::id();
        let started = start_time(pid).expect("this process has a start time");
        assert!(
            Owner {
                pid,
                start_time: Some(started)
            }
            .is_alive()
        );
        assert!(
            !Owner {
                pid,
                start_time: Some(started + 1)
            }
            .is_alive()
        );
        assert!(
            Owner {
                pid,
                start_time: None
            }
            .is_alive()
        );
    }
}
