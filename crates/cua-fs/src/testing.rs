//! For tests that attack cua as a second local user. When the tests run as root (as in CI),
//! the attacker is `nobody`: links, FIFOs and directories are planted with `setpriv`, in a
//! directory every user may write to, as a real attacker would in `/tmp`. Otherwise the current
//! user plants them, which still shows cua refusing what it finds. Nothing is ever skipped.
//! Every helper panics when it cannot do what it says: a test that cannot set up its attack
//! has failed.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// Whether the attacker is another user (`nobody`), which is so when the tests run as root.
pub fn attacker_is_another_user() -> bool {
    rustix::process::geteuid().is_root()
}

/// Makes `directory` writable by every local user, with the sticky bit, as `/tmp` is.
pub fn share(directory: &Path) {
    std::fs::set_permissions(directory, std::fs::Permissions::from_mode(0o1777))
        .unwrap_or_else(|error| panic!("cannot share {}: {error}", directory.display()));
}

/// Runs `program` with `args` as the attacker.
pub fn as_attacker<S: AsRef<OsStr>>(program: &str, args: &[S]) {
    let mut command = if attacker_is_another_user() {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
            .arg(program);
        command
    } else {
        Command::new(program)
    };
    command.args(args);
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program} as the attacker: {error}"));
    assert!(
        output.status.success(),
        "{program} {:?} as the attacker failed: {}",
        args.iter().map(AsRef::as_ref).collect::<Vec<_>>(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Plants a symbolic link at `link` pointing to `target`, as the attacker.
pub fn plant_symlink(target: &Path, link: &Path) {
    as_attacker(
        "ln",
        &[
            OsStr::new("-s"),
            OsStr::new("--"),
            target.as_os_str(),
            link.as_os_str(),
        ],
    );
}

/// Creates the directory `path` as the attacker (who then owns it).
pub fn plant_directory(path: &Path) {
    as_attacker("mkdir", &[OsStr::new("--"), path.as_os_str()]);
}

/// Creates a FIFO at `path` as the attacker.
pub fn plant_fifo(path: &Path) {
    as_attacker("mkfifo", &[OsStr::new("--"), path.as_os_str()]);
}
