//! `cua eval [SUITE…] [--out evidence/evals]`: run eval suites (`evals/*.yaml` by default)
//! against the MemberDesk fixture (or a running application) in Debian's Chromium, and write per
//! suite a Markdown, JSON and HTML report and the evaluation `cua catalog approve --from-eval`
//! reads. Exits 0 when no suite shows a wrong action or an unauthorized dispatch, 1 when one
//! does (or a setup run fails), 2 for an invalid suite or document, 69 when Chromium or the
//! application is unavailable.
//!
//! This module reads and checks the suites, the catalog and the policy, serves the fixture,
//! launches one browser per suite and hands it to `cua-eval` as its surface. Secrets come from
//! the environment (`CUA_SECRET_…`), as for `cua replay`.

use std::path::PathBuf;

use cua_artifact::{CapabilityRef, PolicyConfig, TenantId};
use cua_catalog::{Catalog, CatalogConfig, Integrity};
use cua_eval::score::Answer;
use cua_eval::{
    EvalSuite, Evaluator, RunObservation, Sensitive, SuitePlan, SuiteReport, WrittenReports,
};
use cua_fs::{Dir, FileMode};
use cua_policy::PolicyEngine;
use cua_replay::{CapabilityList, PreparedCapability, ReplayConfig};
use serde::Serialize;

use crate::fixture_app::{FixtureApp, NotStarted};
use crate::progress::{Ended, Progress};
use crate::project::{self, DefaultPath};

use crate::cli::{EvalArgs, Format};
use crate::commands::policy::LoadedPolicy;
use crate::commands::replay::launch;
use crate::error::{CliError, ErrorCode, runtime};
use crate::limits;
use crate::output::{Exit, emit};

/// Runs `cua eval`.
pub(crate) fn run(format: Format, args: &EvalArgs) -> Result<Exit, CliError> {
    evaluate(format, args)
}

/// One suite's result, as printed.
#[derive(Debug, Serialize)]
struct SuiteOutcome {
    suite: String,
    verdict: cua_eval::Verdict,
    sound_for_exit: bool,
    metrics: cua_eval::score::Metrics,
    reports: WrittenReports,
    runs_dir: PathBuf,
    /// The suite as JUnit sees it, for `--junit`.
    #[serde(skip)]
    junit: crate::junit::Suite,
}

/// A suite read and checked, before anything runs.
struct Loaded {
    path: PathBuf,
    suite: EvalSuite,
}

fn evaluate(format: Format, args: &EvalArgs) -> Result<Exit, CliError> {
    let paths = suite_paths(args)?;
    let out = args.out()?;
    let runs_dir = args.runs_dir()?;
    // Reports go to `--out` and runs to `--runs-dir`: a link planted at either is refused
    // before anything runs, and everything below them is written without following one.
    for (directory, mode) in [(&out, FileMode::Readable), (&runs_dir, FileMode::Private)] {
        Dir::create_all(directory, mode)
            .map_err(|error| CliError::unwritten(&error, ErrorCode::EvidenceUnwritable))?;
    }
    if let Some(path) = &args.junit {
        crate::junit::prepare(path)?;
    }
    let LoadedPolicy {
        config: policy_config,
        engine: policy,
        ..
    } = LoadedPolicy::read(&args.policy.file()?)?;
    let catalog = Catalog::new(CatalogConfig {
        capabilities: args.paths.catalog()?,
        evaluations: out.clone(),
        // Outside a project the tenants directory is needed only by a suite that names a
        // tenant (checked below, suite by suite).
        tenants: args.paths.tenants_for(None)?,
    });
    // Every suite is read and checked before the first browser starts: a typo in the last
    // suite should not cost the minutes of the first.
    let mut loaded = Vec::new();
    for path in paths {
        let text = cua_fs::read_to_string_bounded(&path, limits::DOCUMENT)
            .map_err(|error| CliError::unread(&path, &error))?;
        let mut suite = EvalSuite::from_yaml(&text)
            .map_err(|error| crate::error::invalid_document(&path, &error))?;
        if let Some(repeats) = args.repeats {
            suite.repeats = repeats;
        }
        let base = load(&catalog, &suite.capability)?;
        let sensitive = Sensitive::of(&base);
        let problems = suite.check(&base);
        if !problems.is_empty() {
            return Err(invalid(format!("{}: {}", path.display(), problems.join("; ")))
                .with_help(format!(
                    "a case may name only the inputs, outputs and outcomes {} declares (`cua validate {}` places each problem)",
                    suite.capability,
                    path.display()
                )));
        }
        if let Some(fixture) = &suite.fixture {
            crate::fixture_app::check_variant(fixture)
                .map_err(|error| invalid(format!("{}: fixture: {error}", path.display())))?;
        }
        for case in &suite.cases {
            let Some(faults) = &case.faults else {
                continue;
            };
            if suite.fixture.is_none() {
                return Err(invalid(format!(
                    "{}: case {:?} arms faults, which only a fixture has; name a `fixture:`",
                    path.display(),
                    case.label(&sensitive)
                )));
            }
            for fault in faults {
                crate::fixture_app::check_fault(fault).map_err(|error| {
                    invalid(format!(
                        "{}: case {:?}: {error}",
                        path.display(),
                        case.label(&sensitive)
                    ))
                })?;
            }
        }
        if suite.tenant.is_some() {
            args.paths
                .tenants()
                .map_err(|error| error.located(&path.display()))?;
        }
        if let Some(tenant) = &suite.tenant
            && binding(&catalog, tenant, &suite.capability)?.is_none()
        {
            return Err(
                crate::error::no_binding(&catalog, tenant, suite.capability.id())
                    .located(&path.display()),
            );
        }
        loaded.push(Loaded { path, suite });
    }
    let runtime = runtime()?;
    let stamp = stamp();
    let mut outcomes = Vec::new();
    for entry in &loaded {
        let outcome = runtime.block_on(run_suite(
            args,
            &catalog,
            &policy,
            &policy_config,
            entry,
            &stamp,
        ))?;
        outcomes.push(outcome);
    }
    if let Some(path) = &args.junit {
        let suites: Vec<crate::junit::Suite> = outcomes
            .iter()
            .map(|outcome| outcome.junit.clone())
            .collect();
        crate::junit::write(path, "cua eval", &suites)?;
        crate::junit::announce(path, &suites);
    }
    let sound = outcomes.iter().all(|outcome| outcome.sound_for_exit);
    let exit = if sound {
        Exit::Success
    } else {
        ErrorCode::WrongActionOrUnauthorizedDispatch.exit()
    };
    let error = (!sound).then(|| {
        ErrorCode::WrongActionOrUnauthorizedDispatch.envelope(
            outcomes
                .iter()
                .filter(|outcome| !outcome.sound_for_exit)
                .map(|outcome| {
                    format!(
                        "{}: {} wrong action(s), {} unauthorized dispatch(es)",
                        outcome.suite,
                        outcome.metrics.wrong_actions,
                        outcome.metrics.unauthorized_dispatches
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        )
    });
    emit(format, "eval", Some(&outcomes), error.as_ref(), || {
        outcomes.iter().map(render).collect::<String>()
    });
    Ok(exit)
}

/// Serves the fixture (when the suite names one), launches a browser, runs the suite, writes
/// its reports.
async fn run_suite(
    args: &EvalArgs,
    catalog: &Catalog,
    policy: &PolicyEngine,
    policy_config: &PolicyConfig,
    entry: &Loaded,
    stamp: &str,
) -> Result<SuiteOutcome, CliError> {
    let suite = &entry.suite;
    let fixture =
        match &suite.fixture {
            Some(variant) => Some(FixtureApp::start(variant).await.map_err(
                |error| match error {
                    NotStarted::Invalid(reason) => invalid(reason),
                    NotStarted::Unavailable(reason) => {
                        CliError::new(ErrorCode::FixtureUnavailable, reason)
                    }
                },
            )?),
            None => None,
        };
    let (base_url, target) = match (&fixture, &suite.base_url) {
        (Some(fixture), _) => (
            fixture.base_url(),
            format!("fixture {}", suite.fixture.as_deref().unwrap_or_default()),
        ),
        (None, Some(url)) => (url.to_string(), format!("application at {url}")),
        (None, None) => {
            return Err(invalid(format!(
                "{}: no fixture and no base_url",
                entry.path.display()
            )));
        }
    };
    let arm_faults = |faults: &[String]| -> Result<(), String> {
        match &fixture {
            Some(app) => app.arm_only(faults),
            None => cua_eval::no_faults(faults),
        }
    };
    let outcome = measure(
        args,
        catalog,
        policy,
        policy_config,
        entry,
        stamp,
        &base_url,
        target,
        &arm_faults,
    )
    .await;
    if let Some(fixture) = fixture {
        fixture.shutdown().await;
    }
    outcome
}

#[expect(
    clippy::too_many_arguments,
    reason = "the parts of one suite run, borrowed"
)]
async fn measure(
    args: &EvalArgs,
    catalog: &Catalog,
    policy: &PolicyEngine,
    policy_config: &PolicyConfig,
    entry: &Loaded,
    stamp: &str,
    base_url: &str,
    target: String,
    arm_faults: &(dyn Fn(&[String]) -> Result<(), String> + Send + Sync),
) -> Result<SuiteOutcome, CliError> {
    let suite = &entry.suite;
    let tenant = suite.tenant.as_ref();
    let base = load(catalog, &suite.capability)?;
    let prepared = prepare(catalog, base.clone(), tenant, base_url)?;
    let mut setup = Vec::new();
    for run in &suite.setup {
        let capability = load(catalog, &run.capability)?;
        setup.push(prepare(catalog, capability, tenant, base_url)?);
    }
    let remedies = remedies(catalog, tenant, base_url);
    let allowlist = policy
        .for_capability(&prepared.capability)
        .map(|engine| engine.allowlist().clone())
        .map_err(|error| invalid(format!("the capability's allowed domains: {error}")))?;
    let plan = SuitePlan {
        suite: suite.clone(),
        base,
        prepared,
        setup,
        target,
    };
    let runs_dir = args.runs_dir()?.join(format!("{}-{stamp}", suite.name));
    Dir::create_all(&runs_dir, FileMode::Private)
        .map_err(|error| CliError::new(ErrorCode::EvidenceUnwritable, error.to_string()))?;
    let surface = launch(allowlist).await?;
    let evaluator = Evaluator {
        driver: &surface,
        policy,
        policy_config,
        capabilities: &remedies,
        environment: cua_evidence::process_environment(),
        runs_dir: runs_dir.clone(),
        config: ReplayConfig {
            operators: crate::commands::replay::operators()
                .map_err(|message| CliError::new(ErrorCode::SurfaceUnavailable, message))?,
            screenshots: policy_config.evidence.screenshots,
            ..ReplayConfig::default()
        },
        prepare: arm_faults,
    };
    let total = suite.repeats as usize * suite.cases.len();
    eprintln!(
        "eval {}: {} case(s) × {} repeat(s) against {}; runs in {}",
        suite.name,
        suite.cases.len(),
        suite.repeats,
        plan.target,
        runs_dir.display()
    );
    let mut bar = Progress::counted(format!("eval {}", suite.name), total);
    let runs = evaluator
        .run(&plan, |observation: &RunObservation| {
            let (answer, line) = progress(&plan, observation);
            let ended = Ended::failed_if(answer != Answer::Correct);
            bar.finished(answer.as_str(), ended, &line);
        })
        .await;
    bar.finish();
    surface.close().await;
    let runs = runs.map_err(|error| match error {
        cua_eval::EvalError::Replay { .. } => CliError::new(ErrorCode::Refused, error.to_string()),
        other => CliError::new(ErrorCode::EvalFailed, other.to_string()),
    })?;
    let report = SuiteReport::build(&plan, &runs);
    let reports = report
        .write(&args.out()?)
        .map_err(|error| CliError::new(ErrorCode::WriteFailed, error.to_string()))?;
    let junit = junit_suite(&report);
    Ok(SuiteOutcome {
        suite: report.suite.clone(),
        verdict: report.verdict,
        sound_for_exit: report.sound_for_exit,
        metrics: report.metrics,
        reports,
        runs_dir,
        junit,
    })
}

/// A suite's runs as JUnit test cases: a correct answer passes; a wrong one, or a right one
/// reached through an unauthorized dispatch, fails; a refusal (acceptable to an eval, but not
/// an answer) is skipped. Each names its run and evidence.
fn junit_suite(report: &SuiteReport) -> crate::junit::Suite {
    use crate::junit::{Case, Suite, Verdict};
    let classname = format!("{}.{}", report.suite, report.capability);
    let cases = report
        .runs
        .iter()
        .map(|row| {
            let verdict = match &row.answer {
                _ if row.unauthorized_dispatches > 0 => Verdict::Failure {
                    kind: "unauthorized_dispatch".to_owned(),
                    message: format!(
                        "{} dispatch(es) without an authorization",
                        row.unauthorized_dispatches
                    ),
                },
                Answer::Correct => Verdict::Passed,
                Answer::WrongAction(why) => Verdict::Failure {
                    kind: "wrong_action".to_owned(),
                    message: why.clone(),
                },
                Answer::Unanswered(why) => Verdict::Skipped {
                    message: format!(
                        "{}{}: {why}",
                        row.status.as_str(),
                        row.failure_code
                            .map(|code| format!(" {}", code.as_str()))
                            .unwrap_or_default()
                    ),
                },
            };
            Case {
                classname: classname.clone(),
                name: format!("{} (repeat {})", row.case, row.repeat),
                duration_ms: row.duration_ms,
                verdict,
                output: format!("run {}\nevidence {}\n", row.run_id, row.evidence_ref),
            }
        })
        .collect();
    Suite {
        name: report.suite.clone(),
        cases,
        properties: vec![
            ("capability".to_owned(), report.capability.to_string()),
            ("content_hash".to_owned(), report.content_hash.to_string()),
            ("verdict".to_owned(), report.verdict.headline().to_owned()),
            ("target".to_owned(), report.target.clone()),
        ],
    }
}

/// How a run answered, and the line that says so: `member_id=12345 repeat 2: 3 output(s),
/// correct in 412 ms`.
fn progress(plan: &SuitePlan, observation: &RunObservation) -> (Answer, String) {
    let case = &plan.suite.cases[observation.case];
    let sensitive = Sensitive::of(&plan.base);
    let answer = cua_eval::score::judge(&case.expect, observation, &sensitive);
    let result = &observation.report.result;
    let returned = match (&result.outcome, &result.error) {
        (Some(outcome), _) => format!("outcome {}", outcome.code),
        (None, Some(error)) => error.code.as_str().to_owned(),
        (None, None) => format!("{} output(s)", result.outputs.len()),
    };
    let line = format!(
        "{} repeat {}: {returned}, {} in {} ms",
        case.label(&sensitive),
        observation.repeat,
        answer.as_str().replace('_', " "),
        result.duration_ms
    );
    (answer, line)
}

/// The text form of one suite's outcome.
fn render(outcome: &SuiteOutcome) -> String {
    let metrics = &outcome.metrics;
    let mix: Vec<String> = metrics
        .strategy_mix
        .iter()
        .map(|(strategy, count)| format!("{} {count}", strategy.as_str()))
        .collect();
    format!(
        "{}: {}\n  runs {}   successes {}   business outcomes {}   needs human {}   failures {}\n  wrong actions {}   unauthorized dispatches {}   ambiguity refusals {}   determinism {}\n  mean drift {:.2}   strategies {}\n  replay p50 {} ms   p95 {} ms\n  reports {}, {}, {}, {}\n",
        outcome.suite,
        outcome.verdict.headline(),
        metrics.runs,
        metrics.successes,
        metrics.business_outcomes,
        metrics.needs_human,
        metrics.failures,
        metrics.wrong_actions,
        metrics.unauthorized_dispatches,
        metrics.ambiguity_refusals,
        match metrics.determinism_holds {
            Some(true) => "holds",
            Some(false) => "DOES NOT HOLD",
            None => "not shown",
        },
        metrics.mean_drift,
        if mix.is_empty() {
            "none".to_owned()
        } else {
            mix.join(", ")
        },
        metrics.replay_ms.p50,
        metrics.replay_ms.p95,
        outcome.reports.markdown.display(),
        outcome.reports.json.display(),
        outcome.reports.html.display(),
        outcome.reports.evaluation.display(),
    )
}

/// The suite files: as given, or every `*.yaml` in the project's suites directory, sorted.
fn suite_paths(args: &EvalArgs) -> Result<Vec<PathBuf>, CliError> {
    if !args.suites.is_empty() {
        return Ok(args.suites.clone());
    }
    let directory = &project::or_default(None, DefaultPath::Suites)?;
    let entries = std::fs::read_dir(directory).map_err(|error| {
        CliError::usage(format!(
            "no suite given and {} cannot be read: {error}",
            directory.display()
        ))
    })?;
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "yaml")
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(CliError::usage(format!(
            "no suite given and {} holds no *.yaml",
            directory.display()
        )));
    }
    Ok(paths)
}

/// A sealed capability from the catalog; a tampered, invalid or missing one is refused.
fn load(
    catalog: &Catalog,
    reference: &CapabilityRef,
) -> Result<cua_artifact::Capability, CliError> {
    catalog
        .load(reference)
        .map_err(|error| CliError::from(&error))
}

fn binding(
    catalog: &Catalog,
    tenant: &TenantId,
    reference: &CapabilityRef,
) -> Result<Option<cua_artifact::TenantBinding>, CliError> {
    catalog
        .binding(tenant, reference)
        .map_err(|error| CliError::from(&error))
}

/// A capability bound as the suite runs it: the tenant's binding when it has one, the base URL.
fn prepare(
    catalog: &Catalog,
    capability: cua_artifact::Capability,
    tenant: Option<&TenantId>,
    base_url: &str,
) -> Result<PreparedCapability, CliError> {
    let reference = capability.reference();
    let binding = match tenant {
        Some(tenant) => binding(catalog, tenant, &reference)?,
        None => None,
    };
    PreparedCapability::bind(capability, binding, Some(base_url), None)
        .map_err(|error| invalid(format!("cannot bind {reference}: {error}")))
}

/// Every sealed capability of the catalog, bound like the suite's, for `run_capability`
/// remedies.
fn remedies(catalog: &Catalog, tenant: Option<&TenantId>, base_url: &str) -> CapabilityList {
    let mut entries = Vec::new();
    if let Ok(listing) = catalog.list() {
        for entry in listing {
            if let Some(capability) = entry.capability
                && matches!(entry.integrity, Integrity::Sealed { .. })
                && let Ok(mut prepared) = prepare(catalog, capability, tenant, base_url)
            {
                prepared.approval = entry.approval;
                entries.push(prepared);
            }
        }
    }
    CapabilityList::new(entries)
}

/// The invocation's stamp, so repeated evals never collide on a run directory:
/// `20261130T041929Z-4242`.
fn stamp() -> String {
    let now = cua_evidence::Clock::now(&cua_evidence::SystemClock).to_string();
    let compact: String = now.chars().filter(char::is_ascii_alphanumeric).collect();
    format!("{compact}-{}", std::process::id())
}

/// A suite or document that does not load or check.
fn invalid(message: impl Into<String>) -> CliError {
    CliError::new(ErrorCode::InvalidDocument, message)
}
