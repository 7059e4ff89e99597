//! The native-cli operator: the program the policy allowed, started from an argv with no shell,
//! an empty environment (the parent's may hold secrets) and no stdin, bounded output, killed at
//! its timeout.

use std::process::Stdio;
use std::time::{Duration, Instant};

use cua_policy::{Authorized, CommandInvocation};
use cua_surface::{CommandOutput, CommandRunner, OperatorFuture, SurfaceError};
use tokio::io::AsyncReadExt;

/// Output beyond this many bytes per stream is refused rather than buffered.
const MAX_OUTPUT_BYTES: u64 = 1024 * 1024;

/// A [`CommandRunner`] over `tokio::process`.
#[derive(Debug, Clone, Default)]
pub struct ProcessCommandRunner;

impl ProcessCommandRunner {
    pub fn new() -> Self {
        Self
    }
}

impl CommandRunner for ProcessCommandRunner {
    fn run(&self, action: Authorized<CommandInvocation>) -> OperatorFuture<'_, CommandOutput> {
        Box::pin(async move {
            let invocation = action.action();
            let Some(program) = action.program() else {
                return Err(SurfaceError::ActionFailed {
                    reason: format!(
                        "command `{}` was authorized without a program",
                        invocation.executable
                    ),
                });
            };
            let timeout = Duration::from_millis(u64::from(invocation.timeout_ms));
            // No shell, no inherited environment (it may hold secrets such as CUA_SECRET_*),
            // no stdin: the program sees its argv and nothing else.
            let mut child = tokio::process::Command::new(program)
                .args(&invocation.args)
                .env_clear()
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|error| SurfaceError::Unavailable {
                    reason: format!(
                        "command `{}` cannot start {}: {error}",
                        invocation.executable,
                        program.display()
                    ),
                })?;
            let started = Instant::now();
            let mut stdout = child.stdout.take();
            let mut stderr = child.stderr.take();
            let collect = async {
                let mut out = Vec::new();
                let mut err = Vec::new();
                let read_out = async {
                    match stdout.as_mut() {
                        Some(stream) => read_bounded(stream, &mut out).await,
                        None => Ok(()),
                    }
                };
                let read_err = async {
                    match stderr.as_mut() {
                        Some(stream) => read_bounded(stream, &mut err).await,
                        None => Ok(()),
                    }
                };
                let (read_out, read_err) = tokio::join!(read_out, read_err);
                read_out?;
                read_err?;
                let status = child.wait().await?;
                Ok::<_, std::io::Error>((status, out, err))
            };
            let finished = tokio::time::timeout(timeout, collect).await;
            let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            match finished {
                Err(_) => {
                    // The collecting future (and its borrow of the child) is gone: kill now
                    // and reap, so no process outlives its step.
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    Ok(CommandOutput {
                        exit_code: None,
                        timed_out: true,
                        stdout: Vec::new(),
                        stderr: Vec::new(),
                        duration_ms,
                    })
                }
                Ok(Err(error)) => Err(SurfaceError::ActionFailed {
                    reason: format!("command `{}` failed: {error}", invocation.executable),
                }),
                Ok(Ok((status, out, err))) => {
                    let limit = usize::try_from(MAX_OUTPUT_BYTES).unwrap_or(usize::MAX);
                    if out.len() > limit || err.len() > limit {
                        return Err(SurfaceError::ActionFailed {
                            reason: format!(
                                "command `{}` wrote more than {MAX_OUTPUT_BYTES} bytes",
                                invocation.executable
                            ),
                        });
                    }
                    Ok(CommandOutput {
                        exit_code: status.code(),
                        timed_out: false,
                        stdout: out,
                        stderr: err,
                        duration_ms,
                    })
                }
            }
        })
    }
}

/// Reads `stream` to its end, keeping at most one byte past the limit (enough to tell that the
/// program wrote too much) and discarding the rest, so a program that writes a lot is never
/// blocked on a full pipe and still ends on its own or at its timeout.
async fn read_bounded<R: tokio::io::AsyncRead + Unpin>(
    stream: &mut R,
    kept: &mut Vec<u8>,
) -> std::io::Result<()> {
    let keep = usize::try_from(MAX_OUTPUT_BYTES + 1).unwrap_or(usize::MAX);
    let mut buffer = [0u8; 8192];
    loop {
        let read = stream.read(&mut buffer).await?;
        if read == 0 {
            return Ok(());
        }
        let room = keep.saturating_sub(kept.len());
        kept.extend_from_slice(&buffer[..read.min(room)]);
    }
}
