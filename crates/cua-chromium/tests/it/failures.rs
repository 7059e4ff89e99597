//! The defined failures: Chromium absent, browser killed mid-run, endpoints and targets that
//! do not answer. Each is quick and specific; none hangs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cua_chromium::{ChromiumSurface, LaunchError};
use cua_policy::BrowserAction;
use cua_surface::{SurfaceDriver, SurfaceError};

use crate::support::{Authority, Page, Site, assert_unavailable, config, goto, launch};

async fn launch_missing(executable: PathBuf) -> String {
    let mut config = config(&[]);
    config.executable = executable.clone();
    let started = Instant::now();
    let error = ChromiumSurface::launch(config)
        .await
        .expect_err("no browser can start");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
    match &error {
        LaunchError::ChromiumMissing { path, .. } => assert_eq!(path, &executable),
        other => panic!("expected chromium missing, got {other:?}"),
    }
    error.to_string()
}

#[tokio::test]
async fn a_missing_chromium_is_named_with_its_install_step() {
    let message = launch_missing(PathBuf::from("/nonexistent/chromium")).await;
    assert!(message.contains("/nonexistent/chromium"), "{message}");
    assert!(message.contains("apt-get install -y chromium"), "{message}");

    let dir = std::env::temp_dir().join(format!("cua-not-chromium-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let message = launch_missing(dir.clone()).await;
    assert!(message.contains("not a file"), "{message}");
    let file = dir.join("chromium");
    std::fs::write(&file, "#!/bin/sh\n").unwrap();
    let message = launch_missing(file).await;
    assert!(message.contains("not executable"), "{message}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_browser_that_never_announces_itself_times_out_and_is_reaped() {
    let dir = std::env::temp_dir().join(format!("cua-silent-chromium-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("chromium");
    std::fs::write(&fake, "#!/bin/sh\necho starting >&2\nexec sleep 30\n").unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&fake)
        .status()
        .unwrap();
    let mut config = config(&[]);
    config.executable = fake;
    config.launch_timeout = Duration::from_millis(500);
    let started = Instant::now();
    let error = ChromiumSurface::launch(config)
        .await
        .expect_err("the fake never announces");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "took {:?}",
        started.elapsed()
    );
    assert!(matches!(error, LaunchError::Timeout { .. }), "{error:?}");
    assert!(
        error.to_string().contains("starting"),
        "the stderr tail is reported: {error}"
    );

    let mut config = crate::support::config(&[]);
    config.executable = dir.join("crashes");
    std::fs::write(&config.executable, "#!/bin/sh\necho boom >&2\nexit 3\n").unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&config.executable)
        .status()
        .unwrap();
    let error = ChromiumSurface::launch(config)
        .await
        .expect_err("the fake exits");
    assert!(matches!(error, LaunchError::Exited { .. }), "{error:?}");
    assert!(error.to_string().contains("boom"), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_browser_is_unavailable_within_a_bound() {
    let site = Site::serve(vec![("/", Page::html("<h1>Alive</h1>"))]).await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/")).await;
    surface.observe().await.unwrap();
    let pid = surface.browser_pid().expect("a launched browser has a pid");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let started = Instant::now();
    assert_unavailable(surface.observe().await);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    let started = Instant::now();
    assert_unavailable(
        surface
            .dispatch(authority.allow(BrowserAction::Reload, None))
            .await,
    );
    assert_unavailable(surface.screenshot(Default::default()).await);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
    let deadline = Instant::now() + Duration::from_secs(1);
    while process_exists(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!process_exists(pid), "the killed browser is reaped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_or_closing_reaps_the_browser_and_removes_its_profile() {
    let surface = launch(&[]).await;
    let (pid, profile) = (
        surface.browser_pid().unwrap(),
        surface.profile_dir().unwrap().to_path_buf(),
    );
    assert!(process_exists(pid) && profile.is_dir());
    drop(surface);
    assert!(!process_exists(pid), "dropped browser {pid} still exists");
    assert!(
        !profile.exists(),
        "the profile {} is left behind",
        profile.display()
    );
    assert!(
        eventually_no_process_mentions(&profile).await,
        "a helper process outlived its browser"
    );

    let surface = launch(&[]).await;
    let (pid, profile) = (
        surface.browser_pid().unwrap(),
        surface.profile_dir().unwrap().to_path_buf(),
    );
    let started = Instant::now();
    surface.close().await;
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "took {:?}",
        started.elapsed()
    );
    assert!(!process_exists(pid) && !profile.exists());
    assert!(
        eventually_no_process_mentions(&profile).await,
        "a helper process outlived its browser"
    );
}

/// A browser someone else started with a TCP debugging port, as `attach` expects to find
/// one. Killed and its profile removed on drop.
struct PortBrowser {
    child: std::process::Child,
    profile: PathBuf,
    ws: String,
}

impl PortBrowser {
    fn start() -> Self {
        use std::io::BufRead;
        let profile = std::env::temp_dir().join(format!(
            "cua-port-browser-{}-{}",
            std::process::id(),
            free_port()
        ));
        let mut child = std::process::Command::new(config(&[]).executable)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("chromium starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let ws = std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .find_map(|line| {
                line.split_once("DevTools listening on ")
                    .map(|(_, url)| url.trim().to_owned())
            })
            .expect("chromium announces its endpoint");
        Self { child, profile, ws }
    }
}

impl Drop for PortBrowser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attaching_by_websocket_or_http_endpoint_and_to_a_closed_port() {
    let site = Site::serve(vec![(
        "/",
        Page::html("<title>Attached</title><h1>Hello</h1>"),
    )])
    .await;
    let owner = launch(&[site.entry()]).await;
    // A launched browser is reached through its owner's bridge (a ws URL with a secret path);
    // a browser with a TCP port, by its ws URL or its http address.
    let external = tokio::task::spawn_blocking(PortBrowser::start)
        .await
        .expect("the browser started");
    let http = format!(
        "http://{}",
        external
            .ws
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .unwrap()
    );
    let authority = Authority::new(&[site.entry()]);
    for endpoint in [
        owner.devtools_endpoint(),
        external.ws.as_str(),
        http.as_str(),
    ] {
        let attached = ChromiumSurface::attach(endpoint, config(&[site.entry()]))
            .await
            .unwrap();
        assert_eq!(attached.browser_pid(), None);
        goto(&attached, &authority, &site.url("/")).await;
        assert_eq!(attached.observe().await.unwrap().title, "Attached");
        attached.close().await;
    }
    // The owner's page is untouched by the attached surfaces coming and going.
    assert_eq!(owner.observe().await.unwrap().url, "about:blank");

    let closed = free_port();
    let started = Instant::now();
    let error = ChromiumSurface::attach(&format!("http://127.0.0.1:{closed}"), config(&[]))
        .await
        .expect_err("nothing listens there");
    assert!(
        matches!(error, LaunchError::Unreachable { .. }),
        "{error:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    let error = ChromiumSurface::attach(
        &format!("ws://127.0.0.1:{closed}/devtools/browser/x"),
        config(&[]),
    )
    .await
    .expect_err("nothing listens there");
    assert!(
        matches!(error, LaunchError::Unreachable { .. }),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_whose_port_is_closed_is_unavailable_quickly() {
    let closed = free_port();
    let entry = format!("127.0.0.1:{closed}");
    let surface = launch(std::slice::from_ref(&entry)).await;
    let authority = Authority::new(&[entry]);
    let started = Instant::now();
    let url = format!("http://127.0.0.1:{closed}/login");
    let result = surface
        .dispatch(authority.allow(BrowserAction::Navigate { url }, None))
        .await;
    match result {
        Err(SurfaceError::Unavailable { reason }) => {
            assert!(reason.contains("ERR_CONNECTION_REFUSED"), "{reason}")
        }
        other => panic!("expected unavailable, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
}

/// A port nothing listens on (bound, then released).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().expect("bound address").port()
}

fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether, within 3 s, no live process has `profile` on its command line.
async fn eventually_no_process_mentions(profile: &Path) -> bool {
    let needle = profile.to_string_lossy().to_string();
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let mentioned = std::fs::read_dir("/proc")
            .expect("procfs")
            .flatten()
            .any(|entry| {
                let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
                let zombie = state
                    .rsplit(')')
                    .next()
                    .is_some_and(|rest| rest.trim_start().starts_with('Z'));
                let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                !zombie && String::from_utf8_lossy(&cmdline).contains(&needle)
            });
        if !mentioned {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_headed_browser_is_never_the_headless_shell() {
    let mut config = config(&[]);
    config.executable = PathBuf::from(cua_chromium::HEADLESS_SHELL);
    config.headless = false;
    let error = ChromiumSurface::launch(config)
        .await
        .expect_err("the headless shell has no window");
    let message = error.to_string();
    assert!(message.contains("has no window"), "{message}");
    assert!(
        message.contains(cua_chromium::DEFAULT_EXECUTABLE),
        "{message}"
    );
}
