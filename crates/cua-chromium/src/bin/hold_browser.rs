//! A test fixture, not a tool: launches Chromium through `ChromiumSurface`, prints
//! `<browser pid> <profile dir>` on one stdout line and then holds the browser until it is
//! killed, so the integration tests can end the owner of a browser in every way there is.
//!
//! The mode argument says how it ends by itself: `hold` (the default) waits forever, `abort`
//! aborts (what a panic does under `panic = "abort"`), `overflow` crashes on a stack overflow
//! (a real fault: a SIGSEGV sent with `kill` is not one, Rust's handler ignores it once), and
//! `exit` calls `std::process::exit`, which runs no destructor.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test helper program reports on its own stderr"
)]

use std::io::Write;
use std::process::ExitCode;

use cua_chromium::{ChromiumConfig, ChromiumSurface};
use cua_policy::Allowlist;

#[tokio::main]
async fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "hold".into());
    if !matches!(mode.as_str(), "hold" | "abort" | "overflow" | "exit") {
        eprintln!("usage: cua-chromium-hold-browser [hold|abort|overflow|exit]");
        return ExitCode::from(2);
    }
    let allowlist = Allowlist::new(&[], &[]).expect("an empty allowlist is well formed");
    let surface = match ChromiumSurface::launch(ChromiumConfig::from_env(allowlist)).await {
        Ok(surface) => surface,
        Err(error) => {
            eprintln!("cua-chromium-hold-browser: {error}");
            return ExitCode::FAILURE;
        }
    };
    let pid = surface.browser_pid().expect("a launched browser has a pid");
    let profile = surface
        .profile_dir()
        .expect("a launched browser has a profile")
        .display()
        .to_string();
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{pid} {profile}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    drop(stdout);
    match mode.as_str() {
        "abort" => std::process::abort(),
        "overflow" => {
            let depth = recurse(std::hint::black_box(1));
            eprintln!("the stack did not overflow at depth {depth}");
            ExitCode::FAILURE
        }
        "exit" => std::process::exit(0),
        _ => {
            std::future::pending::<()>().await;
            // The surface must live until the process is killed.
            drop(surface);
            ExitCode::SUCCESS
        }
    }
}

/// Recurses until the stack overflows; the array and `black_box` keep the compiler from
/// turning it into a loop or from seeing that it cannot return.
fn recurse(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 64]);
    if std::hint::black_box(depth) == 0 {
        return frame[0];
    }
    recurse(depth + 1) + frame[63]
}
