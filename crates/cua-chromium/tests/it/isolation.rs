//! A launched browser is the run's alone: another local user can neither attach to it nor
//! read what it keeps. The attacks run as uid `nobody` when the tests run as root (as CI
//! does), and as this user otherwise, which is the stronger attacker for everything but file
//! permissions.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cua_policy::BrowserAction;
use cua_surface::SurfaceDriver;

use crate::support::{Authority, Page, Site, find, goto, launch, observe_until};

/// A value only the site and the browser know: the attack must never see it.
const COOKIE_CANARY: &str = "cookie-canary-5f1d0c2a";

/// Runs `script` under bash as the attacker, returning what it printed.
fn as_stranger(script: &str) -> String {
    let mut command = if rustix::process::geteuid().is_root() {
        let mut command = Command::new("setpriv");
        command.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "bash",
            "-c",
            script,
        ]);
        command
    } else {
        let mut command = Command::new("bash");
        command.args(["-c", script]);
        command
    };
    let output = command.output().expect("bash and setpriv run");
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// An HTTP request over bash's `/dev/tcp`, as the attacker, with a WebSocket upgrade when
/// asked: the answer's first 2,000 bytes, or nothing if the port refused. Off the async
/// workers, which serve the bridge meanwhile.
async fn probe(port: u16, path: &str, upgrade: bool) -> String {
    let headers = if upgrade {
        "Connection: Upgrade\\r\\nUpgrade: websocket\\r\\nSec-WebSocket-Version: 13\\r\\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\n"
    } else {
        ""
    };
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{port} || exit 0; \
         printf 'GET {path} HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n{headers}\\r\\n' >&3; \
         timeout 2 cat <&3 | head -c 2000"
    );
    tokio::task::spawn_blocking(move || as_stranger(&script))
        .await
        .expect("the probe ran")
}

/// The listening TCP sockets of the machine: socket inode → port.
fn listening() -> HashMap<u64, u16> {
    let mut sockets = HashMap::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // local_address is `ADDR:PORT` in hex; state 0A is LISTEN; the inode is field 9.
            if fields.len() > 9 && fields[3] == "0A" {
                let port = fields[1].rsplit(':').next().unwrap_or_default();
                if let (Ok(port), Ok(inode)) =
                    (u16::from_str_radix(port, 16), fields[9].parse::<u64>())
                {
                    sockets.insert(inode, port);
                }
            }
        }
    }
    sockets
}

/// The ports on which process `pid` holds a listening socket.
fn ports_of(pid: u32, sockets: &HashMap<u64, u16>) -> Vec<u16> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            let inode = link.strip_prefix("socket:[")?.strip_suffix(']')?;
            sockets.get(&inode.parse::<u64>().ok()?).copied()
        })
        .collect()
}

/// Every process in the process group `group` (Chromium runs in its own).
fn group_members(group: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // After the command name in parentheses: state, ppid, pgrp.
            let after = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest)
                .unwrap_or_default();
            after.split_whitespace().nth(2) == Some(group.to_string().as_str())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_other_user_can_attach_to_a_launched_browser() {
    let mut signed_in = Page::html("<title>Signed in</title><h1>Member desk</h1>");
    signed_in.headers.push((
        "set-cookie",
        format!("session={COOKIE_CANARY}; HttpOnly; Path=/"),
    ));
    let site = Site::serve(vec![("/", signed_in)]).await;
    let surface = launch(&[site.entry()]).await;
    goto(&surface, &Authority::new(&[site.entry()]), &site.url("/")).await;
    let browser = surface.browser_pid().expect("a launched browser has a pid");

    // Chromium itself listens nowhere: no process of its group holds a listening socket.
    let sockets = listening();
    let members = group_members(browser);
    assert!(members.contains(&browser), "{members:?}");
    for member in &members {
        let ports = ports_of(*member, &sockets);
        assert!(
            ports.is_empty(),
            "Chromium process {member} listens on {ports:?}: any local user could attach"
        );
    }

    // This process's listeners (the bridge among them) give a stranger nothing: no
    // discovery endpoint, no handshake on a guessed path.
    let endpoint = surface.devtools_endpoint().to_owned();
    let (authority, secret_path) = endpoint
        .trim_start_matches("ws://")
        .split_once('/')
        .expect("a ws URL has a path");
    let bridge: u16 = authority
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .expect("the endpoint names a port");
    let ours = ports_of(std::process::id(), &sockets);
    assert!(ours.contains(&bridge), "{ours:?} lacks the bridge {bridge}");
    let guesses = [
        ("/json/version", false),
        ("/json/list", false),
        ("/json", false),
        ("/devtools/browser", true),
        (
            "/devtools/browser/00000000-0000-0000-0000-000000000000",
            true,
        ),
        ("/devtools/page/1", true),
    ];
    for port in ours {
        for (path, upgrade) in guesses {
            let answer = probe(port, path, upgrade).await;
            assert!(
                !answer.contains("webSocketDebuggerUrl")
                    && !answer.contains(" 101 ")
                    && !answer.contains(COOKIE_CANARY),
                "port {port} answered {path} to a stranger: {answer}"
            );
            if port == bridge {
                assert!(
                    answer.contains(" 404 "),
                    "the bridge answered {path}: {answer}"
                );
            }
        }
    }
    // The control: the same probe on the secret path is let in, so a probe that got through
    // would have been seen. (Only this process knows the path.)
    let granted = probe(bridge, &format!("/{secret_path}"), true).await;
    assert!(granted.contains(" 101 "), "{granted}");

    // Nothing a stranger can read names the secret, and the profile is closed to them.
    let secret = secret_path.rsplit('/').next().expect("a token");
    for member in &members {
        let script = format!("tr '\\0' ' ' < /proc/{member}/cmdline");
        let visible = tokio::task::spawn_blocking(move || as_stranger(&script))
            .await
            .expect("the read ran");
        assert!(!visible.contains(secret), "{visible}");
    }
    let profile = surface
        .profile_dir()
        .expect("a launched browser has a profile");
    let script = format!(
        "ls {0}/Default && cat {0}/Default/Cookies",
        profile.display()
    );
    let listed = tokio::task::spawn_blocking(move || as_stranger(&script))
        .await
        .expect("the listing ran");
    if rustix::process::geteuid().is_root() {
        assert!(listed.contains("Permission denied"), "{listed}");
    }
    assert!(!listed.contains(COOKIE_CANARY), "{listed}");
    // The bridge still serves its owner after all that.
    assert_eq!(surface.observe().await.unwrap().title, "Signed in");
    surface.close().await;
}

/// Every file under `dir` that holds `needle`, as bytes.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file()
                && let Ok(bytes) = std::fs::read(entry.path())
                && bytes
                    .windows(needle.len())
                    .any(|window| window == needle.as_bytes())
            {
                found.push(entry.path().display().to_string());
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_typed_into_a_form_is_not_kept_by_the_browser() {
    let typed = "operator-canary-81be3f";
    let site = Site::serve(vec![
        (
            "/",
            Page::html(
                "<title>Sign in</title><form action=\"/done\" method=\"post\">\
                 <label>Operator ID <input name=\"operator\" autocomplete=\"username\"></label>\
                 <label>Password <input name=\"password\" type=\"password\" \
                 autocomplete=\"current-password\"></label>\
                 <label>Branch <input name=\"branch\" autocomplete=\"organization\"></label>\
                 <button type=\"submit\">Sign in</button></form>",
            ),
        ),
        ("/done", Page::html("<title>Done</title><h1>Signed in</h1>")),
    ])
    .await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/")).await;
    let snapshot = surface.observe().await.unwrap();
    for name in ["Operator ID", "Password", "Branch"] {
        let field = find(&snapshot, "textbox", name);
        let typing = BrowserAction::Type {
            text: typed.to_owned(),
            clear_first: true,
        };
        surface
            .dispatch(authority.allow(typing, Some(field)))
            .await
            .unwrap();
    }
    let button = find(&snapshot, "button", "Sign in");
    surface
        .dispatch(authority.allow(BrowserAction::Click, Some(button)))
        .await
        .unwrap();
    observe_until(&surface, "the signed-in page", |snapshot| {
        snapshot.title == "Done"
    })
    .await;
    // Chromium saves form entries and passwords on a timer after the submission; the longest
    // of its write delays is well under this.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let profile = surface
        .profile_dir()
        .expect("a launched browser has a profile")
        .to_path_buf();
    let keeping = files_holding(&profile, typed);
    assert!(
        keeping.is_empty(),
        "the profile keeps what was typed: {keeping:?}"
    );
    surface.close().await;
}
