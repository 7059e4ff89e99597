//! `cua record --target URL`: record a task by demonstration. A live session opens in the
//! console; every gesture of the operator, resolved against the snapshot it landed on, goes
//! through the human chokepoint and is written as the `agent_action` trace events discovery
//! writes, so `cua compile` turns the recording into a draft capability. No model is involved.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use cua_artifact::{Actor, RunKind};
use cua_console::{Broker, BrokerConfig, RunAttachment, SessionConfig, SessionMode, WallClock};
use cua_evidence::{EvidenceBus, RunId, RunStart, SystemClock};
use cua_policy::Lease;
use serde_json::json;

use super::console::{ChromiumLive, Common, fresh_run_id, start_server};
use super::replay::launch;
use crate::cli::{Format, RecordArgs};
use crate::error::{CliError, ErrorCode, runtime};
use crate::output::{self, Exit};

/// Runs `cua record` until the recording is finished in the console (or Ctrl-C).
pub(crate) fn run(format: Format, args: &RecordArgs) -> Result<Exit, CliError> {
    runtime()?.block_on(record(format, args))
}

async fn record(format: Format, args: &RecordArgs) -> Result<Exit, CliError> {
    let common = Common::load(
        &args.policy.file()?,
        args.paths.config(None)?,
        &args.evidence.dir()?,
    )?;
    if let Err(blocked) = common.policy.check_landing(&args.target) {
        return Err(CliError::usage(format!(
            "{} is outside the policy's allowlist: {}",
            args.target, blocked.reason
        )));
    }
    let (access, token) = cua_console::Access::generated("operator")
        .map_err(|error| CliError::new(ErrorCode::NoToken, error.to_string()))?;
    let broker = Broker::new(
        BrokerConfig {
            evidence_root: args.evidence.dir()?,
            hold_for: std::time::Duration::from_secs(30 * 60),
        },
        Arc::new(WallClock),
    );
    let surface = Arc::new(launch(common.policy.allowlist().clone()).await?);
    let run_id = args
        .run_id
        .clone()
        .unwrap_or_else(|| fresh_run_id("record"));
    let run_id = RunId::parse(&run_id).map_err(|error| CliError::usage(error.to_string()))?;
    let bus = Arc::new(
        EvidenceBus::create(
            &common.evidence,
            run_id.clone(),
            Arc::new(SystemClock),
            common.redactor.clone(),
        )
        .map_err(|error| CliError::from(&error))?,
    );
    let lease = Lease::new(Actor::Human);
    bus.emit(
        Actor::Human,
        lease.epoch,
        RunStart {
            kind: RunKind::Discovery,
            capability: None,
            content_hash: None,
            sealed_hash: None,
            bound_by: None,
            tenant: None,
            inputs: BTreeMap::new(),
            goal: Some(args.goal.clone()),
            target_url: Some(args.target.clone()),
            model: None,
            scripted_model: None,
            resolver_config_hash: None,
        },
    )
    .map_err(|error| CliError::new(ErrorCode::EvidenceUnwritable, error.to_string()))?;
    let session_id = "record-1".to_owned();
    broker
        .open_session(SessionConfig {
            id: session_id.clone(),
            mode: SessionMode::Recording,
            surface: Arc::new(ChromiumLive(Arc::clone(&surface))),
            engine: common.policy.clone(),
            redactor: bus.redactor().clone(),
            lease: Arc::new(Mutex::new(lease)),
            label: format!("demonstration of {:?}", args.goal),
        })
        .and_then(|_| {
            broker.attach_run(
                &session_id,
                RunAttachment {
                    bus: Arc::clone(&bus),
                    capability: None,
                    goal: Some(args.goal.clone()),
                },
            )
        })
        .map_err(|error| CliError::new(ErrorCode::SessionFailed, error.to_string()))?;
    let opened = broker
        .record_navigate(&session_id, "operator", &args.target)
        .await
        .map_err(|error| CliError::new(ErrorCode::SurfaceUnavailable, error.to_string()))?;
    if opened.outcome != "dispatched" {
        return Err(CliError::new(ErrorCode::NavigationFailed, opened.message));
    }
    let running = start_server(&broker, &common, args.bind, false, access).await?;
    let open = format!("{}/#token={token}", running.url());
    eprintln!("cua record: open {open}");
    eprintln!("demonstrate the task, then press \"Finish recording\"");
    eprintln!("token: {token}");
    let record_file = bus.dir().join(cua_evidence::RUN_RECORD_FILE);
    let finished = loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break false,
            () = tokio::time::sleep(std::time::Duration::from_millis(300)) => {
                if record_file.exists() {
                    break true;
                }
            }
        }
    };
    running.shutdown().await;
    if let Ok(surface) = Arc::try_unwrap(surface) {
        surface.close().await;
    }
    let trace = bus.dir().join(cua_evidence::TRACE_FILE);
    let data = json!({
        "run_id": run_id.as_str(),
        "trace": trace.display().to_string(),
        "finished": finished,
        "compile": format!("cua compile {}", trace.display()),
    });
    let unfinished = (!finished).then(|| {
        CliError::new(
            ErrorCode::RecordingUnfinished,
            format!("the recording {run_id} was stopped before it was finished"),
        )
    });
    Ok(output::report(
        format,
        "record",
        Some(&data),
        unfinished.as_ref(),
        || {
            if finished {
                format!(
                    "recorded {}\ncompile it: cua compile {}\n",
                    run_id,
                    trace.display()
                )
            } else {
                format!(
                    "interrupted: the recording in {} has no run_end and will not compile\n",
                    bus.dir().display()
                )
            }
        },
    ))
}
