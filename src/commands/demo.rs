//! `cua demo`: the whole story in one run, against in-process MemberDesk fixtures and Debian's
//! Chromium. Discovery (the scripted model unless one is configured) reaches a goal once; the
//! trace compiles into a draft that is sealed; a reviewer adds outcomes and recovery; then the
//! reviewed capability replays with zero model calls through business outcomes, an injected
//! 502, a malformed input, an undeclared screen, a second tenant, the irreversible gate and a
//! batch. Then an operator takes over a supervised run through the console's broker and hands
//! it back; a reviewer approves the capability from an evaluation; an agent calls it as a typed
//! MCP tool (and is refused the irreversible transfer without a plan approval); codegen writes
//! it as a Playwright spec; and one route planner runs a capability mixing `http`, browser and
//! `command` steps, and signs a canvas by a screenshot and a click at its pixels on the explicit
//! visual route.
//!
//! Stages are a list ([`STAGES`]): each runs, checks the fact that proves it and prints one line
//! of evidence (number, name, `ok` or `FAIL`, the fact, elapsed ms).
//! Everything is written under a fresh demo directory (`evidence/demo/` by default); the
//! reference catalog is only read. Exit 0 when every stage holds, 1 when one does not, 2 for a
//! demo directory that is not the demo's, 69 when Chromium cannot run.

mod agents;
mod handoff;
mod operators;
mod review;
mod rig;
mod stages;

use std::future::Future;
use std::io::Write;
use std::path::Path;
use std::pin::Pin;
use std::time::Instant;

use cua_fs::FileMode;
use serde::Serialize;

use crate::cli::{DemoArgs, Format};
use crate::commands::policy::LoadedPolicy;
use crate::error::{CliError, ErrorCode, runtime};
use crate::output::{self, Exit};
use crate::project::{self, DefaultPath};
use rig::{Demo, StageFailure, StageResult};

/// A stage's work, borrowing the shared state for as long as it runs.
type StageFuture<'a> = Pin<Box<dyn Future<Output = StageResult> + 'a>>;

/// One stage of the story.
struct Stage {
    name: &'static str,
    run: for<'a> fn(&'a mut Demo) -> StageFuture<'a>,
}

/// The story, in order. Append new stages at the end.
const STAGES: &[Stage] = &[
    Stage {
        name: "fixture app up",
        run: stages::fixture_app_up,
    },
    Stage {
        name: "discovery",
        run: stages::discovery,
    },
    Stage {
        name: "compiled and sealed draft",
        run: stages::compiled_and_sealed_draft,
    },
    Stage {
        name: "reviewer adds outcomes and recovery",
        run: stages::reviewer_adds_outcomes_and_recovery,
    },
    Stage {
        name: "replay with unseen inputs",
        run: stages::replay_with_unseen_inputs,
    },
    Stage {
        name: "business outcome",
        run: stages::business_outcome,
    },
    Stage {
        name: "injected 502 recovered",
        run: stages::injected_502_recovered,
    },
    Stage {
        name: "malformed input refused",
        run: stages::malformed_input_refused,
    },
    Stage {
        name: "undeclared screen fails closed",
        run: stages::undeclared_screen_fails_closed,
    },
    Stage {
        name: "northgate-fcu tenant via overlay",
        run: stages::northgate_tenant_via_overlay,
    },
    Stage {
        name: "irreversible transfer gated",
        run: stages::irreversible_transfer_gated,
    },
    Stage {
        name: "batch of 50 replays",
        run: stages::batch_of_replays,
    },
    Stage {
        name: "human handoff",
        run: handoff::human_handoff,
    },
    Stage {
        name: "reviewer approves from eval",
        run: agents::reviewer_approval_from_eval,
    },
    Stage {
        name: "typed tool over MCP",
        run: agents::typed_tool,
    },
    Stage {
        name: "codegen Playwright spec",
        run: agents::codegen_playwright_spec,
    },
    Stage {
        name: "one route planner across operators",
        run: operators::one_planner_across_operators,
    },
];

/// The marker that says a directory is a demo directory the demo may empty.
const MARKER: &str = ".cua-demo";

/// What one stage showed.
#[derive(Debug, Serialize)]
struct StageRecord {
    number: usize,
    name: &'static str,
    ok: bool,
    /// The fact that proves the stage, or why it does not hold.
    fact: String,
    elapsed_ms: u128,
}

/// The whole run, for `--format json`.
#[derive(Debug, Serialize)]
struct DemoReport {
    out: String,
    passed: bool,
    elapsed_ms: u128,
    stages: Vec<StageRecord>,
}

/// Runs the demo.
pub(crate) fn run(format: Format, args: &DemoArgs) -> Result<Exit, CliError> {
    let policy = LoadedPolicy::read(&args.policy.file()?)?;
    let out = project::or_default(args.out.as_deref(), DefaultPath::Demo)?;
    fresh_directory(&out).map_err(|message| CliError::new(ErrorCode::DemoDirectory, message))?;
    let runtime = runtime()?;
    let demo = Demo::new(
        out,
        args.paths.catalog()?,
        args.paths.tenants()?,
        args.policy.file()?,
        policy,
    );
    Ok(runtime.block_on(tell(format, demo)))
}

/// Runs every stage in order, printing each line as it is known.
async fn tell(format: Format, mut demo: Demo) -> Exit {
    let started = Instant::now();
    if format == Format::Text {
        print_line(&format!(
            "cua demo: {} stages against MemberDesk in Chromium; everything is written under {}",
            STAGES.len(),
            demo.out.display()
        ));
    }
    let mut records = Vec::new();
    let mut unavailable = false;
    for (index, stage) in STAGES.iter().enumerate() {
        let stage_started = Instant::now();
        let outcome = (stage.run)(&mut demo).await;
        let elapsed_ms = stage_started.elapsed().as_millis();
        let (ok, fact) = match outcome {
            Ok(fact) => (true, fact),
            Err(StageFailure::Failed(reason)) => (false, reason),
            Err(StageFailure::Unavailable(reason)) => {
                unavailable = true;
                (false, reason)
            }
        };
        let record = StageRecord {
            number: index + 1,
            name: stage.name,
            ok,
            fact,
            elapsed_ms,
        };
        if format == Format::Text {
            print_line(&render(&record));
        }
        records.push(record);
        if unavailable {
            break;
        }
    }
    let out = demo.out.display().to_string();
    shut_down(demo).await;
    let passed = !unavailable && records.iter().all(|record| record.ok);
    let elapsed_ms = started.elapsed().as_millis();
    let failure = if unavailable {
        Some(ErrorCode::SurfaceUnavailable)
    } else if passed {
        None
    } else {
        Some(ErrorCode::StageFailed)
    };
    let exit = failure.map_or(Exit::Success, ErrorCode::exit);
    match format {
        Format::Text => print_line(&summary(&records, passed, unavailable, elapsed_ms)),
        Format::Json => {
            let failure = failure
                .map(|code| code.envelope(summary(&records, passed, unavailable, elapsed_ms)));
            let report = DemoReport {
                out,
                passed,
                elapsed_ms,
                stages: records,
            };
            output::emit(format, "demo", Some(&report), failure.as_ref(), String::new);
        }
    }
    exit
}

/// One stage line: number, name, ok or FAIL, the fact, elapsed time.
fn render(record: &StageRecord) -> String {
    format!(
        "{:>2}  {:<36} {:<4}  {}  [{} ms]",
        record.number,
        record.name,
        if record.ok { "ok" } else { "FAIL" },
        record.fact,
        record.elapsed_ms
    )
}

/// The closing line.
fn summary(records: &[StageRecord], passed: bool, unavailable: bool, elapsed_ms: u128) -> String {
    let held = records.iter().filter(|record| record.ok).count();
    if passed {
        format!(
            "demo passed: {held} of {} stages held in {:.1} s",
            STAGES.len(),
            elapsed_ms as f64 / 1000.0
        )
    } else if unavailable {
        "demo stopped: Chromium is unavailable (apt-get install -y chromium)".to_owned()
    } else {
        let failed: Vec<String> = records
            .iter()
            .filter(|record| !record.ok)
            .map(|record| record.number.to_string())
            .collect();
        format!(
            "demo FAILED: stage(s) {} did not hold ({held} of {} held)",
            failed.join(", "),
            STAGES.len()
        )
    }
}

/// Closes the browsers, the model and the fixtures.
async fn shut_down(demo: Demo) {
    for tenant in [demo.first_valley, demo.northgate].into_iter().flatten() {
        if let Some(surface) = tenant.surface {
            // Every stage that shared the browser has ended, so this is its only holder.
            match std::sync::Arc::try_unwrap(surface) {
                Ok(surface) => surface.close().await,
                Err(_) => eprintln!("warning: a browser is still shared; it closes on exit"),
            }
        }
        if let Err(error) = tenant.fixture.shutdown().await {
            eprintln!("warning: stopping a fixture: {error}");
        }
    }
    if let Some(model) = demo.model {
        model.shutdown().await;
    }
}

/// Makes `out` an empty demo directory: created when missing, emptied when it holds an earlier
/// demo, refused when it holds anything else.
fn fresh_directory(out: &Path) -> Result<(), String> {
    if out.exists() {
        let empty = std::fs::read_dir(out)
            .map_err(|error| format!("cannot read {}: {error}", out.display()))?
            .next()
            .is_none();
        if !empty && !out.join(MARKER).is_file() {
            return Err(format!(
                "{} exists and is not a demo directory (no {MARKER}); pass another --out",
                out.display()
            ));
        }
        std::fs::remove_dir_all(out)
            .map_err(|error| format!("cannot empty {}: {error}", out.display()))?;
    }
    cua_fs::Dir::create_all(out, FileMode::Readable)
        .and_then(|directory| {
            directory.write_atomic(
                MARKER,
                b"written by `cua demo`, which empties this directory on its next run\n",
                FileMode::Readable,
            )
        })
        .map_err(|error| error.to_string())
}

fn print_line(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}
