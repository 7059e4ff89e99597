//! `cua console --capability`: a capability run supervised on an in-process MemberDesk
//! fixture, its session opened in the broker so an operator can take it over, and the fixture's
//! contract credentials given to its sign-on remedy. Built only with the `fixture` feature.

use std::collections::BTreeMap;
use std::sync::Arc;

use cua_artifact::{Capability, CapabilityRef};
use cua_catalog::{Catalog, CatalogConfig, Integrity};
use cua_chromium::ChromiumSurface;
use cua_console::{Broker, RunAttachment, SessionConfig, SessionMode};
use cua_evidence::RunId;
use cua_replay::{
    CapabilityList, PreparedCapability, ReplayConfig, RunRequest, RunSetup, RunWiring,
};
use serde_json::{Value, json};

use super::console::{ChromiumLive, Common, fresh_run_id};
use super::replay::launch;
use crate::cli::SupervisedArgs;
use crate::error::{CliError, ErrorCode};

/// Starts the supervised run `args` names, if it names one.
pub(crate) async fn start(
    common: &Common,
    broker: &Arc<Broker>,
    args: &SupervisedArgs,
) -> Result<Option<Supervised>, CliError> {
    match &args.capability {
        Some(reference) => start_supervised(common, broker, args, reference)
            .await
            .map(Some),
        None if args.arm_fault.is_some() || !args.inputs.is_empty() => {
            Err(CliError::usage("--input and --arm-fault need --capability"))
        }
        None => Ok(None),
    }
}

/// A capability running supervised on the in-process fixture.
pub(crate) struct Supervised {
    pub(crate) announcement: Value,
    pub(crate) run: Option<tokio::task::JoinHandle<()>>,
    surface: Arc<ChromiumSurface>,
    fixture: memberdesk::RunningFixture,
}

impl Supervised {
    pub(crate) async fn close(self) {
        if let Some(run) = self.run {
            run.abort();
        }
        if let Ok(surface) = Arc::try_unwrap(self.surface) {
            surface.close().await;
        }
        let _ = self.fixture.shutdown().await;
    }
}

async fn start_supervised(
    common: &Common,
    broker: &Arc<Broker>,
    args: &SupervisedArgs,
    reference: &str,
) -> Result<Supervised, CliError> {
    let fixture = memberdesk::serve(memberdesk::FixtureConfig::loopback(args.variant))
        .await
        .map_err(|error| CliError::new(ErrorCode::FixtureUnavailable, error.to_string()))?;
    let base_url = fixture.base_url();
    if let Some(fault) = &args.arm_fault {
        let fault: memberdesk::Fault = fault
            .parse()
            .map_err(|error: memberdesk::FixtureError| CliError::usage(error.to_string()))?;
        fixture.handle().arm(
            fault,
            memberdesk::FaultCount::Times(args.fault_count.max(1)),
        );
    }
    let capability = load_capability(&common.catalog, reference)?;
    let prepared = PreparedCapability::bind(capability, None, Some(&base_url), None)
        .map_err(|error| CliError::usage(format!("cannot bind the capability: {error}")))?;
    let remedies = remedies(&common.catalog, &base_url);
    let inputs = parse_inputs(&args.inputs)?;
    let engine = common
        .policy
        .for_capability(&prepared.capability)
        .map_err(|error| CliError::usage(error.to_string()))?;
    let surface = Arc::new(launch(engine.allowlist().clone()).await?);
    let run_id = args
        .run_id
        .clone()
        .unwrap_or_else(|| fresh_run_id("supervised"));
    let run_id = RunId::parse(&run_id).map_err(|error| CliError::usage(error.to_string()))?;
    // The fixture's contract credentials, for its sign-on remedy, unless the environment
    // names others. They go to the resolver only, never to the process environment.
    let prefix = &common.policy_config.secrets.env_prefix;
    let mut environment = cua_evidence::process_environment();
    environment
        .entry(format!("{prefix}COREBANK_OPERATOR_ID"))
        .or_insert_with(|| memberdesk::OPERATOR_ID.to_owned());
    environment
        .entry(format!("{prefix}COREBANK_OPERATOR_PASSWORD"))
        .or_insert_with(|| memberdesk::OPERATOR_PASSWORD.to_owned());
    // The console's server redacts with the same redactor, so the secrets this run resolves
    // are scrubbed from everything the server sends too.
    let wiring = RunWiring::open(RunSetup {
        redactor: Some(common.redactor.clone()),
        ..RunSetup::new(
            &common.evidence,
            run_id.clone(),
            &common.policy_config,
            environment,
        )
    })
    .map_err(|error| CliError::from(&error))?;
    let bus = Arc::clone(wiring.bus());
    let lease = Arc::clone(wiring.lease());
    let session_id = "live-1".to_owned();
    broker
        .open_session(SessionConfig {
            id: session_id.clone(),
            mode: SessionMode::Supervised,
            surface: Arc::new(ChromiumLive(Arc::clone(&surface))),
            engine: engine.clone(),
            redactor: bus.redactor().clone(),
            lease: Arc::clone(&lease),
            label: prepared.capability.reference().to_string(),
        })
        .map_err(|error| CliError::new(ErrorCode::SessionFailed, error.to_string()))?;
    broker
        .attach_run(
            &session_id,
            RunAttachment {
                bus: Arc::clone(&bus),
                capability: Some(prepared.capability.reference()),
                goal: Some(prepared.capability.title.clone()),
            },
        )
        .map_err(|error| CliError::new(ErrorCode::SessionFailed, error.to_string()))?;
    let announcement = json!({
        "session": session_id,
        "run_id": run_id.as_str(),
        "evidence": bus.dir().display().to_string(),
        "fixture": base_url,
        "capability": prepared.capability.reference().to_string(),
    });
    let sink = broker.sink(&session_id);
    let policy = common.policy.clone();
    let screenshots = common.policy_config.evidence.screenshots;
    let driver = Arc::clone(&surface);
    let mut request = RunRequest::new(prepared, inputs);
    request.allow_irreversible = false;
    let operators = super::replay::operators()
        .map_err(|message| CliError::new(ErrorCode::SurfaceUnavailable, message))?;
    let run = tokio::spawn(async move {
        let config = ReplayConfig {
            operators,
            screenshots,
            ..ReplayConfig::default()
        };
        let replayer = wiring.replayer(&*driver, &policy, &remedies, &sink, config);
        match replayer.run(request).await {
            Ok(report) => eprintln!(
                "console: run {} ended {} (outputs {})",
                report.result.run_id,
                json!(report.result.status),
                json!(report.result.outputs)
            ),
            Err(error) => eprintln!("console: the run was refused: {error}"),
        }
    });
    Ok(Supervised {
        announcement,
        run: Some(run),
        surface,
        fixture,
    })
}

/// Every capability in the catalog, bound to the fixture, for `run_capability` remedies.
fn remedies(catalog: &CatalogConfig, base_url: &str) -> CapabilityList {
    let mut entries = Vec::new();
    if let Ok(listing) = Catalog::new(catalog.clone()).list() {
        for entry in listing {
            if let Some(capability) = entry.capability
                && matches!(entry.integrity, Integrity::Sealed { .. })
                && let Ok(prepared) =
                    PreparedCapability::bind(capability, None, Some(base_url), entry.approval)
            {
                entries.push(prepared);
            }
        }
    }
    CapabilityList::new(entries)
}

/// A capability by reference (`id@version`, or `id` for the newest) from the catalog.
fn load_capability(catalog: &CatalogConfig, reference: &str) -> Result<Capability, CliError> {
    let catalog = Catalog::new(catalog.clone());
    let resolved: CapabilityRef = catalog
        .resolve(reference)
        .map_err(|error| CliError::from(&error))?;
    catalog
        .load(&resolved)
        .map_err(|error| CliError::from(&error))
}

fn parse_inputs(pairs: &[String]) -> Result<BTreeMap<String, Value>, CliError> {
    let mut inputs = BTreeMap::new();
    for pair in pairs {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(CliError::usage(format!(
                "--input {pair:?} is not NAME=VALUE"
            )));
        };
        if inputs.insert(name.to_owned(), Value::from(value)).is_some() {
            return Err(CliError::usage(format!("--input {name} is given twice")));
        }
    }
    Ok(inputs)
}
