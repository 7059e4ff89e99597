//! The watchdog: a tiny `/bin/sh` child that kills a launched Chromium and removes its
//! profile when the process that launched it ends, however it ends.
//!
//! Drop and `close` clean up after themselves, but a SIGKILL, an unhandled SIGTERM, SIGINT or
//! SIGHUP, an abort or a crash runs no Rust code at all, and Chromium lives in its own process
//! group, so nothing else would stop it. The kernel, though, closes every descriptor of a
//! process that ends. The watchdog's stdin is a pipe whose only write end is held by this
//! process (std and tokio open pipes close-on-exec, so Chromium and every other child started
//! later do not inherit it); when it reads end-of-file, the owner has released it or is gone,
//! and it kills and removes whatever is left.
//!
//! The watchdog runs in its own process group, so a Ctrl-C to the terminal's foreground group
//! or a `kill -- -<pgid>` aimed at its owner does not stop it first, and it ignores SIGHUP,
//! SIGINT, SIGQUIT and SIGTERM. Its stdout and stderr go to `/dev/null`, so it never holds a
//! pipe that someone waits on, and the profile path reaches it through the environment, so no
//! process but Chromium has the path on its command line.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};

use crate::error::LaunchError;

/// The shell that runs [`SCRIPT`]; Debian's is dash, and the script is plain POSIX sh.
const SHELL: &str = "/bin/sh";

/// The environment variable that carries the profile path to the script.
const PROFILE_ENV: &str = "CUA_CHROMIUM_PROFILE";

/// The environment variable that carries [`uses_profile_pattern`] to the script.
const PATTERN_ENV: &str = "CUA_CHROMIUM_PROFILE_PATTERN";

/// What the watchdog runs. Its first stdin line is the browser pid (absent if the owner ended
/// before Chromium was started); it then blocks until end-of-file.
///
/// The browser's process group is killed only while the group leader is still the browser on
/// this profile, so a pid reused by an unrelated process is never signalled (the shell's
/// `read` drops the NULs between arguments, and the profile path is unique, so a substring
/// test suffices). The profile is removed at once, since a killed browser writes no more.
/// Then every process whose command line uses the profile ([`PATTERN_ENV`]) is killed until
/// none is left (unarmed, it keeps looking for two seconds, since a browser started just
/// before its owner died may not have exec'd yet), which catches a helper that left the group and the group's members when the
/// leader was already gone; zombies have an empty command line, so they do not count, and
/// `grep` reads the pattern from a pipe rather than from its own command line, so the search
/// never finds itself. Last, the removal is retried in case a dying process was still
/// finishing a write. Builtins are used where they can be: under load every fork counts
/// against the one-second bound.
const SCRIPT: &str = r#"
trap '' HUP INT QUIT TERM
profile=$CUA_CHROMIUM_PROFILE
pattern=$CUA_CHROMIUM_PROFILE_PATTERN
case $profile in
  /*cua-chromium-*) ;;
  *) exit 0 ;;
esac
browser=
read -r browser
read -r _
case $browser in
  ''|0|*[!0-9]*) browser= ;;
esac
if [ -n "$browser" ]; then
  leader=
  IFS= read -r leader < "/proc/$browser/cmdline" 2>/dev/null
  case $leader in
    # dash's kill takes no "--": a negative pid after the signal names a process group.
    *"--user-data-dir=$profile"*) kill -KILL "-$browser" 2>/dev/null ;;
  esac
fi
rm -rf -- "$profile" 2>/dev/null
rounds=0
while [ "$rounds" -lt 100 ]; do
  found=$(printf '%s' "$pattern" | grep -lzE -f - /proc/[0-9]*/cmdline 2>/dev/null)
  if [ -z "$found" ]; then
    # Armed, the browser was found and killed above. Unarmed, the owner died between starting
    # Chromium and arming this watchdog, and Chromium may not have exec'd yet: keep looking
    # for two seconds.
    [ -n "$browser" ] && break
    sleep 0.02
    rounds=$((rounds + 1))
    continue
  fi
  for file in $found; do
    pid=${file#/proc/}
    kill -KILL "${pid%/cmdline}" 2>/dev/null
  done
  sleep 0.02
  rounds=$((rounds + 1))
done
rounds=0
while { [ -e "$profile" ] || [ -L "$profile" ]; } && [ "$rounds" -lt 50 ]; do
  rm -rf -- "$profile" 2>/dev/null || sleep 0.02
  rounds=$((rounds + 1))
done
"#;

/// A running watchdog for one browser. [`Watchdog::release`] (or dropping it) lets it run its
/// clean-up at once; after a clean shutdown that finds nothing left to do.
pub(crate) struct Watchdog {
    /// The write end of the watchdog's stdin; closing it is the signal.
    stdin: Option<ChildStdin>,
    /// Held so that tokio reaps the watchdog in the background once it exits. Never
    /// `kill_on_drop`: the watchdog has to outlive this handle.
    _child: Child,
}

impl Watchdog {
    /// Starts a watchdog for the (not yet started) browser that will use `profile`.
    pub(crate) fn spawn(profile: &Path) -> Result<Self, LaunchError> {
        if profile.as_os_str().as_encoded_bytes().contains(&b'\n') {
            // grep reads its patterns one per line: a newline would split the profile flag
            // into fragments that could match someone else's browser.
            return Err(LaunchError::Setup {
                reason: format!("the profile path {} contains a newline", profile.display()),
            });
        }
        let mut child = Command::new(SHELL)
            .arg("-c")
            .arg(SCRIPT)
            .env(PROFILE_ENV, profile)
            .env(PATTERN_ENV, uses_profile_pattern(profile))
            // Byte-wise matching: the pattern is the path's bytes, whatever the locale.
            .env("LC_ALL", "C")
            // The system's grep, rm and sleep, whatever the owner's PATH says.
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(false)
            .spawn()
            .map_err(|source| LaunchError::Setup {
                reason: format!("cannot start the chromium watchdog {SHELL}: {source}"),
            })?;
        let stdin = child.stdin.take();
        Ok(Self {
            stdin,
            _child: child,
        })
    }

    /// Tells the watchdog which process leads the browser's process group.
    pub(crate) async fn arm(&mut self, browser_pid: u32) -> Result<(), LaunchError> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(LaunchError::Setup {
                reason: "the chromium watchdog was already released".into(),
            });
        };
        let line = format!("{browser_pid}\n");
        // A write to an empty pipe does not block; it fails only if the watchdog has exited,
        // and then nothing would clean up after a crash, so the launch fails.
        let written = stdin.write_all(line.as_bytes()).await;
        let flushed = stdin.flush().await;
        written.and(flushed).map_err(|source| LaunchError::Setup {
            reason: format!("the chromium watchdog exited before it was armed: {source}"),
        })
    }

    /// Closes the pipe: the watchdog kills what is left of the browser, removes the profile
    /// and exits.
    pub(crate) fn release(&mut self) {
        self.stdin = None;
    }
}

/// An extended regular expression (for `grep -zE`, one NUL-terminated argument per line)
/// matching a command line that passes `profile` as `--user-data-dir`. The browser keeps its
/// arguments apart, but Chromium rewrites each helper's command line into one space-joined
/// string, so the flag may end at a space as well as at the end of an argument.
fn uses_profile_pattern(profile: &Path) -> OsString {
    let mut pattern = b"--user-data-dir=".to_vec();
    for &byte in profile.as_os_str().as_bytes() {
        if b"\\.[]{}()*+?^$|".contains(&byte) {
            pattern.push(b'\\');
        }
        pattern.push(byte);
    }
    pattern.extend_from_slice(b"( |$)");
    OsString::from_vec(pattern)
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::path::PathBuf;
    use std::process::Command as StdCommand;
    use std::time::{Duration, Instant};

    use super::*;

    /// A profile-like directory of this test's own (its name is not a profile name, so no
    /// sweep ever touches it).
    fn scratch_profile(label: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "cua-chromium-watchdog-{label}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(path.join("Default")).unwrap();
        path
    }

    /// A shell leading its own process group with `leader_name` as its command line, and a
    /// `sleep` in that group that does not name any profile; returns both, and the sleep's pid.
    fn group(leader_name: &str) -> (std::process::Child, u32) {
        let mut leader = StdCommand::new("/bin/sh")
            .arg0(leader_name)
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(leader.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        (leader, line.trim().parse().unwrap())
    }

    async fn release_and_wait_for_removal(watchdog: &mut Watchdog, profile: &Path) {
        watchdog.release();
        let deadline = Instant::now() + Duration::from_secs(5);
        while profile.exists() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            !profile.exists(),
            "the watchdog did not remove {}",
            profile.display()
        );
    }

    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap()
                .trim_start()
                .starts_with('Z')
        })
    }

    #[tokio::test]
    async fn the_whole_group_of_a_leader_on_the_profile_is_killed() {
        let profile = scratch_profile("owned");
        let mut watchdog = Watchdog::spawn(&profile).unwrap();
        let (mut leader, member) = group(&format!(
            "chromium --user-data-dir={} --window-size=1,1",
            profile.display()
        ));
        watchdog.arm(leader.id()).await.unwrap();
        release_and_wait_for_removal(&mut watchdog, &profile).await;
        let status = leader.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "{status:?}");
        let deadline = Instant::now() + Duration::from_secs(2);
        while alive(member) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            !alive(member),
            "a group member that names no profile survived"
        );
    }

    #[tokio::test]
    async fn a_group_whose_leader_is_not_on_the_profile_is_left_alone() {
        // What a pid reused by an unrelated process group looks like to the watchdog.
        let profile = scratch_profile("reused");
        let mut watchdog = Watchdog::spawn(&profile).unwrap();
        let (mut leader, member) = group("an unrelated program");
        watchdog.arm(leader.id()).await.unwrap();
        release_and_wait_for_removal(&mut watchdog, &profile).await;
        assert!(leader.try_wait().unwrap().is_none() && alive(member));
        let group = rustix::process::Pid::from_raw(leader.id() as i32).unwrap();
        rustix::process::kill_process_group(group, rustix::process::Signal::KILL).unwrap();
        leader.wait().unwrap();
    }

    #[test]
    fn the_pattern_escapes_every_special_character_of_the_path() {
        let check = |path: &str, expect: &str| {
            assert_eq!(
                uses_profile_pattern(Path::new(path)),
                OsString::from(expect)
            );
        };
        check(
            "/tmp/cua-chromium-1-2-3-4",
            "--user-data-dir=/tmp/cua-chromium-1-2-3-4( |$)",
        );
        check(
            r"/t.m*p[a]{1}(b)+?^$|\/cua-chromium-1",
            r"--user-data-dir=/t\.m\*p\[a\]\{1\}\(b\)\+\?\^\$\|\\/cua-chromium-1( |$)",
        );
    }
}
