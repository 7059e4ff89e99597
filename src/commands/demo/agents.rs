//! The stages of agents and reviewers: a reviewer approves the reviewed capability from an
//! evaluation at its exact hash, an agent finds it as a typed MCP tool and calls it (while the
//! irreversible transfer tool refuses a call without a plan approval), and codegen writes it as
//! a Playwright spec. Everything runs in this process against the live fixture.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cua_artifact::{ApprovalState, Capability, Remedy};
use cua_catalog::{ApproveRequest, Catalog, CatalogConfig};
use cua_chromium::ChromiumSurface;
use cua_compile::codegen::{
    BASE_URL_ENV, CONFIG_FILE, CodegenConfig, FIXTURES_FILE, fixtures_file, playwright_config,
    render_playwright,
};
use cua_eval::{EvalSuite, Evaluator, RunObservation, SuitePlan, SuiteReport};
use cua_evidence::{Clock, SystemClock};
use cua_mcp::{
    APPROVAL_TOKEN, CapabilityServer, McpConfig, PlanKey, SurfaceFactory, SurfaceUnavailable,
};
use cua_policy::Allowlist;
use cua_replay::{PreparedCapability, ReplayConfig};
use serde_json::{Value, json};

use super::StageFuture;
use super::rig::{Demo, SIGN_ON, StageFailure, expect, failed, plain};
use super::stages::{copy, create_dir, hash_of, input_name, reviewed, truth, write};
use crate::commands::mcp::ChromiumSurfaces;

/// The evaluation of the reviewed capability: these members, each this many times.
const EVAL_SUITE: &str = "demo_reviewed_stability";
const EVAL_MEMBERS: [&str; 3] = ["12345", "67890", "99999"];
const EVAL_REPEATS: u32 = 2;
/// The member the agent asks about through the MCP tool.
const TOOL_MEMBER: &str = "24680";
const TRANSFER: &str = "corebank.member.transfer_funds@1.0.0";
const REVIEWER: &str = "demo-reviewer";

/// Stage 14: an evaluation of the reviewed capability, then `approve --from-eval` through the
/// catalog, which refuses before the evaluation exists and approves after it.
pub(super) fn reviewer_approval_from_eval(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let demo: &Demo = demo;
        let reviewed = reviewed(demo)?;
        let (fixture, surface) = demo.first_valley()?;
        let base_url = fixture.base_url();
        let catalog = demo_catalog(demo);
        let request = ApproveRequest {
            reference: reviewed.reference(),
            by: REVIEWER.to_owned(),
            at: SystemClock.now().to_string(),
            notes: Some("approved by cua demo from its evaluation".to_owned()),
            from_eval: true,
            tenant: None,
        };
        let before = match catalog.approve(&request) {
            Ok(recorded) => {
                return Err(failed(format!(
                    "`approve --from-eval` approved {} before any evaluation ran ({})",
                    reviewed.reference(),
                    recorded.path.display()
                )));
            }
            Err(error) => error.to_string(),
        };

        let suite = eval_suite(demo, reviewed, &base_url)?;
        let suites_dir = demo.out.join("evals").join("suites");
        create_dir(&suites_dir)?;
        let suite_path = suites_dir.join(format!("{EVAL_SUITE}.yaml"));
        write(&suite_path, &suite)?;
        let suite = EvalSuite::from_yaml(&suite)
            .map_err(|error| failed(format!("{}: {error}", suite_path.display())))?;
        let problems = suite.check(reviewed);
        expect(problems.is_empty(), || {
            format!("{}: {}", suite_path.display(), problems.join("; "))
        })?;
        let prepared = PreparedCapability::bind(reviewed.clone(), None, Some(&base_url), None)
            .map_err(|error| failed(format!("binding {}: {error}", reviewed.reference())))?;
        let plan = SuitePlan {
            suite,
            base: reviewed.clone(),
            prepared,
            setup: Vec::new(),
            target: format!("the demo's fixture at {base_url}"),
        };
        let runs_dir = demo.out.join("evals").join("runs");
        create_dir(&runs_dir)?;
        let remedies = demo.remedies(&base_url)?;
        let evaluator = Evaluator {
            driver: surface,
            policy: &demo.policy.engine,
            policy_config: &demo.policy.config,
            capabilities: &remedies,
            environment: demo.environment_with_operator(),
            runs_dir,
            config: ReplayConfig::default(),
            prepare: &cua_eval::no_faults,
        };
        let runs = evaluator
            .run(&plan, |_: &RunObservation| {})
            .await
            .map_err(|error| failed(format!("the evaluation did not run: {error}")))?;
        let report = SuiteReport::build(&plan, &runs);
        let written = report
            .write(&demo.out.join("evals"))
            .map_err(|error| failed(format!("writing the evaluation: {error}")))?;
        let metrics = &report.metrics;
        expect(
            metrics.runs >= 5
                && metrics.wrong_actions == 0
                && metrics.unauthorized_dispatches == 0
                && metrics.determinism_holds == Some(true),
            || {
                format!(
                    "{} runs, {} wrong action(s), {} unauthorized dispatch(es), determinism {:?} ({})",
                    metrics.runs,
                    metrics.wrong_actions,
                    metrics.unauthorized_dispatches,
                    metrics.determinism_holds,
                    written.markdown.display()
                )
            },
        )?;

        let recorded = catalog
            .approve(&ApproveRequest {
                at: SystemClock.now().to_string(),
                ..request
            })
            .map_err(|error| {
                failed(format!(
                    "`approve --from-eval` refused after the evaluation: {error}"
                ))
            })?;
        let approval = &recorded.approval;
        expect(
            approval.state == ApprovalState::Approved
                && Some(&approval.content_hash) == reviewed.content_hash.as_ref()
                && approval.scope.unattended_replay
                && !recorded.evidence.is_empty(),
            || {
                format!(
                    "the approval is {:?} pinned to {} (reviewed is {}), unattended {}, on {} evaluation(s)",
                    approval.state,
                    approval.content_hash,
                    hash_of(reviewed),
                    approval.scope.unattended_replay,
                    recorded.evidence.len()
                )
            },
        )?;
        Ok(format!(
            "before the eval: refused ({}); eval {EVAL_SUITE} ({} members × {EVAL_REPEATS}): {}: runs {}, successes {}, business outcomes {}, wrong actions {}, unauthorized {}, stability {:.0}%, determinism {}, p50 {} ms ({}); approved --from-eval by {REVIEWER} for unattended replay, pinned to {} ({})",
            first_clause(before.trim_start_matches("refused: ")),
            EVAL_MEMBERS.len(),
            report.verdict.headline(),
            metrics.runs,
            metrics.successes,
            metrics.business_outcomes,
            metrics.wrong_actions,
            metrics.unauthorized_dispatches,
            metrics.stability * 100.0,
            if metrics.determinism_holds == Some(true) {
                "holds"
            } else {
                "DOES NOT HOLD"
            },
            metrics.replay_ms.p50,
            written.html.display(),
            approval.content_hash,
            recorded.path.display()
        ))
    })
}

/// Stage 15: the approved capability as a typed MCP tool, called once; the irreversible
/// transfer tool refuses a call that carries no plan approval, before a browser opens.
pub(super) fn typed_tool(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let demo: &Demo = demo;
        let reviewed = reviewed(demo)?;
        let (fixture, _) = demo.first_valley()?;
        let base_url = fixture.base_url();
        // A tool call runs in a fresh browser, which signs on through the reviewed recovery:
        // the sign-on capability it names is in the demo catalog beside it.
        copy_reference(demo, SIGN_ON)?;
        let prefix = demo.policy.config.secrets.env_prefix.clone();
        let mut config = McpConfig::new(demo.policy.config.clone());
        config.catalog = catalog_config(demo);
        config.base_url = Some(
            cua_artifact::Origin::parse(&base_url)
                .map_err(|error| failed(format!("the fixture's origin: {error}")))?,
        );
        config.evidence_dir = demo.out.join("mcp").join("runs");
        config.environment = demo
            .environment_with_operator()
            .into_iter()
            .filter(|(key, _)| key.starts_with(&prefix))
            .collect();
        let key = PlanKey::generate().map_err(|error| failed(error.to_string()))?;
        let surfaces = CountedSurfaces::default();
        let opened = Arc::clone(&surfaces.opened);
        let server = CapabilityServer::new(config, surfaces, Arc::new(SystemClock), key)
            .map_err(|error| failed(format!("the MCP server: {error}")))?;
        let set = server
            .tool_set()
            .map_err(|error| failed(format!("listing tools: {error}")))?;
        let tool = set
            .offered
            .iter()
            .find(|offered| offered.reference == reviewed.reference())
            .ok_or_else(|| {
                failed(format!(
                    "{} is not offered as a tool; withheld: {}",
                    reviewed.reference(),
                    set.withheld
                        .iter()
                        .map(|withheld| format!("{} ({})", withheld.capability, withheld.reason))
                        .collect::<Vec<_>>()
                        .join("; ")
                ))
            })?;
        let transfer_tool = set
            .offered
            .iter()
            .find(|offered| offered.reference.to_string() == TRANSFER)
            .ok_or_else(|| failed(format!("{TRANSFER} is not offered as a tool (stage 11)")))?;
        let listed = server
            .tools()
            .map_err(|error| failed(format!("listing tools: {error}")))?;
        let schema = listed
            .iter()
            .map(|listed| serde_json::to_value(listed).unwrap_or(Value::Null))
            .find(|listed| listed["name"] == tool.name.as_str())
            .ok_or_else(|| failed(format!("tools/list has no {}", tool.name)))?;
        let input = input_name(reviewed)?;
        let pattern = plain(schema["inputSchema"]["properties"][input.as_str()].get("pattern"));
        let required = schema["inputSchema"]["required"]
            .as_array()
            .is_some_and(|required| required.iter().any(|name| name == input.as_str()));
        let read_only = schema["annotations"]["readOnlyHint"] == Value::Bool(true);
        expect(required && read_only, || {
            format!("the tool's schema does not say what the capability is: {schema}")
        })?;
        let tool_names: Vec<String> = listed
            .iter()
            .map(|listed| listed.name.to_string())
            .collect();

        let result = server
            .call(
                &tool.name,
                arguments(json!({ input.as_str(): TOOL_MEMBER })),
            )
            .await
            .map_err(|error| failed(format!("calling {}: {}", tool.name, error.message)))?;
        let content = result.structured_content.clone().unwrap_or(Value::Null);
        let expected = truth(fixture.handle(), TOOL_MEMBER)?;
        let answered = result.is_error == Some(false)
            && content["status"] == "success"
            && expected
                .iter()
                .all(|(name, value)| content["outputs"][*name].as_str() == Some(value.as_str()));
        expect(answered, || {
            format!(
                "{}({input}={TOOL_MEMBER}) returned {content} (the fixture holds {expected:?})",
                tool.name
            )
        })?;
        let outputs = content["outputs"]
            .as_object()
            .map(|outputs| {
                outputs
                    .iter()
                    .map(|(name, value)| format!("{name}={}", plain(Some(value))))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let browsers_for_the_call = opened.load(Ordering::SeqCst);

        let transfers_before = fixture.handle().transfers().len();
        let refused = server
            .call(
                &transfer_tool.name,
                arguments(json!({
                    "member_id": "12345",
                    "from_account": "S-12345-01",
                    "to_account": "C-12345-02",
                    "amount": "10.00",
                })),
            )
            .await
            .map_err(|error| {
                failed(format!("calling {}: {}", transfer_tool.name, error.message))
            })?;
        let refusal = refused.structured_content.clone().unwrap_or(Value::Null);
        let opened_after = opened.load(Ordering::SeqCst);
        let transfers_after = fixture.handle().transfers().len();
        expect(
            refused.is_error == Some(true)
                && refusal["status"] == "refused"
                && refusal["error"]["code"] == "plan_approval_required"
                && opened_after == browsers_for_the_call
                && transfers_after == transfers_before,
            || {
                format!(
                    "{} without {APPROVAL_TOKEN} gave {refusal}; browsers opened {}, transfers {transfers_before} -> {transfers_after}",
                    transfer_tool.name,
                    opened_after - browsers_for_the_call
                )
            },
        )?;
        Ok(format!(
            "tools/list offers {} (withheld: {}); {} [{}, readOnlyHint, {input} required, pattern {pattern}] called for member {TOOL_MEMBER}: success {outputs} (run {}, content hash {}); {} without {APPROVAL_TOKEN}: refused {} before any browser opened, {} transfer(s) posted",
            tool_names.join(", "),
            set.withheld
                .iter()
                .map(|withheld| format!(
                    "{}, {}",
                    withheld.capability,
                    first_clause(&withheld.reason)
                ))
                .collect::<Vec<_>>()
                .join("; "),
            tool.name,
            tool.risk.as_str(),
            plain(content["run"].get("run_id")),
            plain(content["run"].get("content_hash")),
            transfer_tool.name,
            plain(refusal["error"].get("code")),
            transfers_after - transfers_before,
        ))
    })
}

/// Stage 16: the reviewed capability as a Playwright Test file in the demo directory.
pub(super) fn codegen_playwright_spec(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let demo: &Demo = demo;
        let reviewed = reviewed(demo)?;
        let mut remedies = BTreeMap::new();
        for rule in &reviewed.recovery {
            for remedy in &rule.remedy {
                if let Remedy::RunCapability(run) = remedy {
                    remedies.insert(
                        run.capability.clone(),
                        demo.reference(&run.capability.to_string())?,
                    );
                }
            }
        }
        let config = CodegenConfig {
            tenant: None,
            allow_irreversible: false,
            remedies,
            signed_out: false,
        };
        let spec = render_playwright(reviewed, &config)
            .map_err(|error| failed(format!("codegen refused: {error}")))?;
        // The project as `cua codegen --config` writes it: the spec, its fixtures, the setup
        // that signs on once, and the config.
        let dir = demo.out.join("codegen");
        create_dir(&dir)?;
        let path = dir.join(format!("{}.spec.ts", reviewed.reference()));
        write(&dir.join(FIXTURES_FILE), fixtures_file())?;
        for setup in &spec.setups {
            write(&dir.join(&setup.name), &setup.text)?;
        }
        write(&dir.join(CONFIG_FILE), &playwright_config())?;
        write(&path, &spec.text)?;
        let size = std::fs::metadata(&path)
            .map_err(|error| failed(format!("{}: {error}", path.display())))?
            .len();
        let hints: Vec<String> = reviewed
            .steps
            .iter()
            .filter_map(|step| step.action.target())
            .filter_map(|target| target.hints.css.clone())
            .collect();
        let leaked: Vec<&String> = hints
            .iter()
            .filter(|hint| spec.text.contains(hint.as_str()))
            .collect();
        expect(leaked.is_empty(), || {
            format!("the spec uses CSS hints: {leaked:?}")
        })?;
        expect(
            spec.steps == reviewed.steps.len() && spec.text.contains("page.goto('./"),
            || {
                format!(
                    "the spec expresses {} of {} steps, under the project's baseURL",
                    spec.steps,
                    reviewed.steps.len()
                )
            },
        )?;
        let (fixture, _) = demo.first_valley()?;
        let ran = run_spec(&dir, &fixture.base_url(), 1 + spec.setups.len()).await?;
        Ok(format!(
            "{} ({size} bytes): {} of {} steps expressed, {} getByRole locators, {} expect assertions, 0 CSS hints (of {} in the artifact), pages under the config's baseURL ({BASE_URL_ENV}), {} setup project file(s), {} part(s) not translated{}; {ran}",
            path.display(),
            spec.steps,
            reviewed.steps.len(),
            spec.text.matches("getByRole(").count(),
            spec.text.matches("expect(").count(),
            hints.len(),
            spec.setups.len(),
            spec.not_translated.len(),
            if spec.not_translated.is_empty() {
                String::new()
            } else {
                format!(" ({})", spec.not_translated.join("; "))
            }
        ))
    })
}

/// Debian's Chromium for tool calls, counting the browsers it opens.
#[derive(Default)]
struct CountedSurfaces {
    opened: Arc<AtomicUsize>,
}

impl SurfaceFactory for CountedSurfaces {
    type Surface = ChromiumSurface;

    async fn open(&self, allowlist: Allowlist) -> Result<ChromiumSurface, SurfaceUnavailable> {
        self.opened.fetch_add(1, Ordering::SeqCst);
        ChromiumSurfaces.open(allowlist).await
    }

    async fn close(&self, surface: ChromiumSurface) {
        ChromiumSurfaces.close(surface).await;
    }
}

/// The suite: each member with what the fixture holds for them, as a suite file.
fn eval_suite(demo: &Demo, reviewed: &Capability, base_url: &str) -> Result<String, StageFailure> {
    let (fixture, _) = demo.first_valley()?;
    let input = input_name(reviewed)?;
    let mut cases = Vec::new();
    for member in EVAL_MEMBERS {
        let expect = if fixture.handle().member(member).is_some() {
            let outputs: serde_json::Map<String, Value> = truth(fixture.handle(), member)?
                .into_iter()
                .map(|(name, value)| (name.to_owned(), Value::from(value)))
                .collect();
            json!({ "outputs": outputs })
        } else {
            json!({ "outcome": "member_not_found" })
        };
        cases.push(json!({ "inputs": { input.as_str(): member }, "expect": expect }));
    }
    let document = json!({
        "schema": "cua.eval_suite/v1",
        "name": EVAL_SUITE,
        "description": format!(
            "{}: the members' truth read from the demo's fixture as this stage began",
            reviewed.reference()
        ),
        "capability": reviewed.reference().to_string(),
        "base_url": base_url,
        "repeats": EVAL_REPEATS,
        "cases": cases,
    });
    // JSON is YAML: the suite file is what `cua eval` would read.
    serde_json::to_string_pretty(&document)
        .map(|text| format!("# Written by `cua demo` (stage 14).\n{text}\n"))
        .map_err(|error| failed(error.to_string()))
}

fn catalog_config(demo: &Demo) -> CatalogConfig {
    CatalogConfig {
        capabilities: demo.demo_catalog(),
        evaluations: demo.out.join("evals"),
        tenants: demo.tenants.clone(),
    }
}

fn demo_catalog(demo: &Demo) -> Catalog {
    Catalog::new(catalog_config(demo))
}

/// Copies a reference capability into the demo catalog.
fn copy_reference(demo: &Demo, reference: &str) -> Result<(), StageFailure> {
    let file_name = format!("{reference}.yaml");
    let target = demo.demo_catalog().join(&file_name);
    copy(&demo.catalog.join(&file_name), &target)
}

fn arguments(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// The first clause of a refusal, for a one-line summary.
fn first_clause(message: &str) -> &str {
    message.split(';').next().unwrap_or(message).trim()
}

/// Where `make deps-node` installs `@playwright/test` (a spec must sit inside it to import it).
const PLAYWRIGHT_INSTALL: &str = "target/playwright-ci";

/// Runs the generated project (`project`: spec, fixtures, setup and config, unchanged) with
/// `@playwright/test` (from `make deps-node`) and Debian's Chromium against the running fixture;
/// the stage holds only when Playwright reports all `tests` (setups and the spec) passed.
async fn run_spec(
    project: &std::path::Path,
    base_url: &str,
    tests: usize,
) -> Result<String, StageFailure> {
    let install = std::path::Path::new(PLAYWRIGHT_INSTALL);
    if !install
        .join("node_modules/@playwright/test/package.json")
        .is_file()
    {
        return Err(failed(format!(
            "@playwright/test is not installed in {PLAYWRIGHT_INSTALL}: run `make deps-node` (make demo does)"
        )));
    }
    let dir = install.join("demo-spec");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(|error| failed(format!("{}: {error}", dir.display())))?;
    }
    create_dir(&dir)?;
    let entries = std::fs::read_dir(project)
        .map_err(|error| failed(format!("{}: {error}", project.display())))?;
    for entry in entries {
        let entry = entry.map_err(|error| failed(format!("{}: {error}", project.display())))?;
        copy(&entry.path(), &dir.join(entry.file_name()))?;
    }
    let chromium = std::env::var("CUA_CHROMIUM")
        .ok()
        .filter(|path| !path.is_empty())
        .unwrap_or_else(|| "/usr/lib/chromium/chromium".to_owned());
    // The generated config as it is, with what this machine adds: Debian's Chromium instead of
    // a downloaded browser, and a JSON report to read.
    write(
        &dir.join("run.config.ts"),
        &format!(
            "import generated from './{}';\n\
             export default {{\n\
             \x20 ...generated,\n\
             \x20 outputDir: './test-results',\n\
             \x20 timeout: 60000,\n\
             \x20 workers: 1,\n\
             \x20 retries: 0,\n\
             \x20 reporter: [['json', {{ outputFile: 'results.json' }}]],\n\
             \x20 use: {{ ...generated.use, headless: true, actionTimeout: 10000, launchOptions: {{ executablePath: {chromium:?}, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] }} }},\n\
             }};\n",
            CONFIG_FILE.trim_end_matches(".ts")
        ),
    )?;
    // Each run signs on afresh: no session an earlier run saved is started from.
    let sessions = install.join(cua_compile::codegen::SESSIONS_DIR);
    if sessions.exists() {
        std::fs::remove_dir_all(&sessions)
            .map_err(|error| failed(format!("{}: {error}", sessions.display())))?;
    }
    let started = std::time::Instant::now();
    let mut command = tokio::process::Command::new("npx");
    command
        .args(["--no-install", "playwright", "test", "--config"])
        .arg("demo-spec/run.config.ts")
        .current_dir(install)
        .env(BASE_URL_ENV, base_url)
        .env("CUA_SECRET_COREBANK_OPERATOR_ID", memberdesk::OPERATOR_ID)
        .env(
            "CUA_SECRET_COREBANK_OPERATOR_PASSWORD",
            memberdesk::OPERATOR_PASSWORD,
        )
        .env("CUA_INPUT_MEMBER_NUMBER", "67890")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(std::time::Duration::from_secs(120), command.output())
        .await
        .map_err(|_| failed("npx playwright test did not finish within 120 s"))?
        .map_err(|error| {
            failed(format!(
                "npx cannot run ({error}): apt-get install -y nodejs npm"
            ))
        })?;
    let results =
        cua_fs::read_to_string_bounded(&dir.join("results.json"), crate::limits::PLAYWRIGHT_REPORT)
            .map_err(|_| {
                failed(format!(
                    "Playwright wrote no results: {}",
                    plain_text(&output.stderr)
                ))
            })?;
    let report: Value = serde_json::from_str(&results)
        .map_err(|error| failed(format!("Playwright's results are not JSON: {error}")))?;
    let expected = report["stats"]["expected"].as_u64().unwrap_or(0);
    let unexpected = report["stats"]["unexpected"].as_u64().unwrap_or(0);
    expect(
        output.status.success() && expected == tests as u64 && unexpected == 0,
        || {
            format!(
                "the spec did not pass under Playwright Test ({expected} passed, {unexpected} failed): {}",
                plain_text(&output.stdout)
            )
        },
    )?;
    Ok(format!(
        "passed under @playwright/test with Debian's Chromium for member 67890 ({expected} tests: {} setup, then the spec; {} ms)",
        tests - 1,
        started.elapsed().as_millis()
    ))
}

/// The last lines of a tool's output, on one line.
fn plain_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    lines[lines.len().saturating_sub(6)..].join(" | ")
}
