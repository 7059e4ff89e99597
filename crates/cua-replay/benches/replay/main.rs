//! `make bench`: the savings-balance flow replayed by cua versus the same flow hand-written in
//! Playwright (`playwright-core`, `getByRole` locators, the same Debian Chromium), and batch
//! throughput over a pool of pages. Printed side by side; nothing is asserted.
//!
//! Both sides run the whole flow (sign on, search, read three values) against the same
//! in-process MemberDesk. "Browser start excluded": one browser, signed out (untimed) before
//! each iteration. "Included": a fresh browser per iteration, launch and close timed.
#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]
#![allow(clippy::unwrap_used, reason = "a benchmark fails loudly")]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cua_artifact::{Actor, Capability, PolicyConfig, RunStatus};
use cua_chromium::{ChromiumConfig, ChromiumSurface};
use cua_evidence::{Clock, EvidenceBus, Redactor, RunId, SecretResolver, SystemClock};
use cua_policy::{ActionRequest, BrowserAction, Lease, PolicyEngine, SurfaceAction};
use cua_replay::{
    CapabilityList, PreparedCapability, RecordedEscalations, ReplayConfig, Replayer, RunRequest,
    TokioClock,
};
use cua_surface::SurfaceDriver;
use serde_json::Value;

mod procfs;
mod profile;

use profile::{MarkingClock, Meter, Profile, Profiled};

const ITERATIONS: usize = 7;
const BATCH_ROWS: usize = 16;

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(bench());
}

/// What every replay in the bench shares: the policy, an evidence root, a run counter.
struct Harness {
    policy_config: PolicyConfig,
    policy: PolicyEngine,
    evidence: tempfile::TempDir,
    runs: AtomicU64,
}

impl Harness {
    fn new(policy_config: PolicyConfig) -> Self {
        Self {
            policy: PolicyEngine::from_config(&policy_config).unwrap(),
            policy_config,
            evidence: tempfile::tempdir().unwrap(),
            runs: AtomicU64::new(0),
        }
    }

    /// One replay of `capability` on `surface`, with `remedies` loadable and `secrets` set.
    async fn replay<D: SurfaceDriver>(
        &self,
        surface: &D,
        capability: &PreparedCapability,
        remedies: &[&PreparedCapability],
        secrets: &[(&str, &str)],
        inputs: &[(&str, &str)],
    ) -> cua_replay::ReplayReport {
        let clock = Arc::new(SystemClock);
        self.replay_timed(surface, clock, capability, remedies, secrets, inputs)
            .await
            .0
    }

    /// As [`Harness::replay`], with the evidence clock given; also returns the run's directory.
    async fn replay_timed<D: SurfaceDriver>(
        &self,
        surface: &D,
        evidence_clock: Arc<dyn Clock>,
        capability: &PreparedCapability,
        remedies: &[&PreparedCapability],
        secrets: &[(&str, &str)],
        inputs: &[(&str, &str)],
    ) -> (cua_replay::ReplayReport, std::path::PathBuf) {
        let number = self.runs.fetch_add(1, Ordering::Relaxed);
        let redactor = Redactor::from_policy(&self.policy_config.redaction).unwrap();
        let run_id = format!("bench-{number}");
        let bus = EvidenceBus::create(
            self.evidence.path(),
            RunId::parse(&run_id).unwrap(),
            evidence_clock,
            redactor.clone(),
        )
        .unwrap();
        let secrets = SecretResolver::new("CUA_SECRET_", secrets.iter().copied(), redactor);
        let loader = CapabilityList::new(remedies.iter().map(|&r| r.clone()).collect());
        let escalations = RecordedEscalations::new();
        let clock = TokioClock::new();
        let replayer = Replayer {
            driver: surface,
            policy: &self.policy,
            bus: &bus,
            clock: &clock,
            secrets: &secrets,
            capabilities: &loader,
            escalations: &escalations,
            lease: Arc::new(Mutex::new(Lease::new(Actor::Automation))),
            config: ReplayConfig::default(),
        };
        let inputs = inputs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), Value::from(*value)))
            .collect::<BTreeMap<_, _>>();
        let report = replayer
            .run(RunRequest::new(capability.clone(), inputs))
            .await
            .unwrap();
        (report, self.evidence.path().join(run_id))
    }
}

struct Setup {
    harness: Harness,
    savings: PreparedCapability,
    sign_on: PreparedCapability,
    base_url: String,
}

const MEMBERDESK_SECRETS: [(&str, &str); 2] = [
    ("CUA_SECRET_COREBANK_OPERATOR_ID", memberdesk::OPERATOR_ID),
    (
        "CUA_SECRET_COREBANK_OPERATOR_PASSWORD",
        memberdesk::OPERATOR_PASSWORD,
    ),
];

impl Setup {
    async fn replay<D: SurfaceDriver>(&self, surface: &D, member_id: &str) -> RunStatus {
        self.harness
            .replay(
                surface,
                &self.savings,
                &[&self.sign_on],
                &MEMBERDESK_SECRETS,
                &[("member_id", member_id)],
            )
            .await
            .result
            .status
    }

    /// Replays the flow `ITERATIONS` times on one signed-out browser, each surface call and
    /// trace line marked; reads CPU from `/proc` when `cpu` is set.
    async fn profile(&self, surface: &ChromiumSurface, cpu: bool) -> Profile {
        let pids: Vec<u32> = surface.browser_pid().into_iter().collect();
        let meter = Arc::new(Meter::new(&pids, cpu));
        let profiled = Profiled::new(surface, Arc::clone(&meter));
        let mut profile = Profile::default();
        for _ in 0..ITERATIONS {
            self.sign_out(surface).await;
            let clock = Arc::new(MarkingClock::new(Arc::clone(&meter)));
            let started = meter.mark();
            let (report, run_dir) = self
                .harness
                .replay_timed(
                    &profiled,
                    Arc::clone(&clock) as Arc<dyn Clock>,
                    &self.savings,
                    &[&self.sign_on],
                    &MEMBERDESK_SECRETS,
                    &[("member_id", "12345")],
                )
                .await;
            let ended = meter.mark();
            assert_eq!(report.result.status, RunStatus::Success);
            let lines = cua_evidence::read_trace(&run_dir).unwrap();
            let marks = std::mem::take(&mut *clock.marks.lock().unwrap());
            profile.add((started, ended), &marks, &lines, &profiled);
        }
        profile
    }

    /// Signs the browser out (untimed), through the policy like anything else.
    async fn sign_out(&self, surface: &ChromiumSurface) {
        let lease = Lease::new(Actor::Automation);
        let action = self
            .harness
            .policy
            .authorize(
                &lease,
                ActionRequest {
                    actor: Actor::Automation,
                    epoch: lease.epoch,
                    action: SurfaceAction::Browser(BrowserAction::Navigate {
                        url: format!("{}/logout", self.base_url),
                    }),
                    target: None,
                    declared_risk: None,
                },
            )
            .unwrap();
        surface
            .dispatch(action.into_browser().expect("a browser action"))
            .await
            .unwrap();
    }
}

async fn bench() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    let fixture = memberdesk::serve(memberdesk::FixtureConfig::loopback(
        memberdesk::Variant::FirstValley,
    ))
    .await
    .unwrap();
    let base_url = fixture.base_url();
    let policy_config = PolicyConfig::from_yaml(&read("config/policy.yaml")).unwrap();
    let bind = |path: &str| {
        let capability = Capability::from_yaml(&read(path)).unwrap();
        PreparedCapability::bind(capability, None, Some(&base_url), None).unwrap()
    };
    let setup = Setup {
        harness: Harness::new(policy_config),
        savings: bind("capabilities/corebank.member.savings_balance@1.0.0.yaml"),
        sign_on: bind("capabilities/corebank.auth.sign_on@1.0.0.yaml"),
        base_url: base_url.clone(),
    };
    let allowlist = setup
        .harness
        .policy
        .for_capability(&setup.savings.capability)
        .unwrap()
        .allowlist()
        .clone();
    let launch = || ChromiumSurface::launch(ChromiumConfig::from_env(allowlist.clone()));

    println!(
        "browser, both sides: {}",
        ChromiumConfig::from_env(allowlist.clone())
            .executable
            .display()
    );
    println!("savings_balance flow: sign on, search, read three values ({ITERATIONS} iterations)");
    // cua, browser start excluded.
    let mut cua_excluded = Vec::new();
    {
        let surface = launch().await.unwrap();
        // One warm-up run, untimed (both sides get one).
        setup.sign_out(&surface).await;
        assert_eq!(setup.replay(&surface, "12345").await, RunStatus::Success);
        for _ in 0..ITERATIONS {
            setup.sign_out(&surface).await;
            let start = Instant::now();
            let status = setup.replay(&surface, "12345").await;
            cua_excluded.push(start.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(status, RunStatus::Success);
        }
        surface.close().await;
    }
    // cua, browser start included.
    let mut cua_included = Vec::new();
    for _ in 0..ITERATIONS {
        let start = Instant::now();
        let surface = launch().await.unwrap();
        let status = setup.replay(&surface, "12345").await;
        surface.close().await;
        cua_included.push(start.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(status, RunStatus::Success);
    }
    let playwright = playwright("savings_balance.mjs", &[&base_url, &ITERATIONS.to_string()])
        .and_then(|result| {
            let values = &result["values"];
            if values["savings_balance"] == "$4,210.55" {
                Ok(result)
            } else {
                Err(format!(
                    "the Playwright flow read the wrong values: {values}"
                ))
            }
        });
    side_by_side(
        &cua_excluded,
        &cua_included,
        &playwright.as_ref().map(times).map_err(Clone::clone),
    );

    println!(
        "profile: where one savings_balance replay's time and CPU go, browser start excluded \
         ({ITERATIONS} replays per pass; CPU from a second pass, as reading it slows a run)"
    );
    {
        let surface = launch().await.unwrap();
        let wall = setup.profile(&surface, false).await;
        let cpu = setup.profile(&surface, true).await;
        wall.print(&cpu);
        surface.close().await;
        let (own, browser) = cpu.cpu_per_replay();
        match &playwright {
            Ok(result) => {
                let median_of = |key: &str| {
                    median(
                        &result[key]
                            .as_array()
                            .map(|all| all.iter().filter_map(Value::as_f64).collect::<Vec<_>>())
                            .unwrap_or_default(),
                    )
                };
                let (node, chromium) = (median_of("ownCpu"), median_of("browserCpu"));
                println!(
                    "  CPU per flow: cua {:.0} ms (cua {own:.0} + Chromium {browser:.0})   \
                     playwright {:.0} ms (node {node:.0} + Chromium {chromium:.0})   ratio {:.2}",
                    own + browser,
                    node + chromium,
                    (own + browser) / (node + chromium)
                );
            }
            Err(_) => println!(
                "  CPU per flow: cua {:.0} ms (cua {own:.0} + Chromium {browser:.0})   playwright (not run)",
                own + browser
            ),
        }
    }

    println!("batch throughput: {BATCH_ROWS} savings lookups (medians above are per flow)");
    for (pool, concurrency) in [
        ("pages", 1),
        ("pages", 2),
        ("pages", 4),
        ("browsers", 2),
        ("browsers", 4),
    ] {
        let measured = batch(&setup, &launch, pool, concurrency).await;
        let cpu = measured.own_cpu + measured.browser_cpu;
        println!(
            "  {pool:<8} concurrency {concurrency}: {:>6.1} replays/min, CPU {:>4.0} ms per replay \
             (cua {:>3.0} + Chromium {:>3.0}), {:>5.1} replays/min per busy core, peak RSS {:>5.0} MiB \
             ({:.0} MiB per page)",
            measured.per_minute,
            cpu * 1000.0,
            measured.own_cpu * 1000.0,
            measured.browser_cpu * 1000.0,
            60.0 / cpu,
            measured.peak as f64 / 1024.0 / 1024.0,
            measured.peak as f64 / 1024.0 / 1024.0 / concurrency as f64,
        );
    }
    fixture.shutdown().await.unwrap();
    conformance(&root, setup.harness).await;
}

/// Prints cua's medians beside Playwright's, browser start excluded and included.
fn side_by_side(
    excluded: &[f64],
    included: &[f64],
    playwright: &Result<(Vec<f64>, Vec<f64>), String>,
) {
    let row = |name: &str, cua: &[f64], playwright: Option<&Vec<f64>>| {
        let cua = median(cua);
        match playwright {
            Some(times) => {
                let pw = median(times);
                println!(
                    "  {name:<26} cua replay {cua:>7.0} ms   playwright {pw:>7.0} ms   ratio {:.2}",
                    cua / pw
                );
            }
            None => println!("  {name:<26} cua replay {cua:>7.0} ms   playwright (not run)"),
        }
    };
    match playwright {
        Ok(times) => {
            row("browser start excluded", excluded, Some(&times.0));
            row("browser start included", included, Some(&times.1));
        }
        Err(reason) => {
            row("browser start excluded", excluded, None);
            row("browser start included", included, None);
            println!("  playwright: {reason}");
        }
    }
}

/// One conformance flow: the app, its settings' prefix in `apps.env`, the capability and its
/// sign-in remedy, the input, the secrets' variables, and one output with the seeded value.
struct Flow {
    app: &'static str,
    key: &'static str,
    flow: &'static str,
    sign_in: &'static str,
    input: (&'static str, &'static str),
    secrets: (&'static str, &'static str),
    what: &'static str,
    read: (&'static str, &'static str),
}

/// The conformance apps (`conformance/apps.sh up`, which `make bench` runs): one read flow per
/// app, cua against the same flow hand-written in Playwright. "Excluded": one browser signed in
/// by an untimed warm-up run. "Included": a fresh browser per iteration, signing in.
async fn conformance(root: &Path, harness: Harness) {
    let settings: BTreeMap<String, String> =
        std::fs::read_to_string(root.join("conformance/apps.env"))
            .unwrap()
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
            .filter_map(|line| line.split_once('='))
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
            .collect();
    let flows = [
        Flow {
            app: "redmine",
            key: "REDMINE",
            flow: "redmine.issue.show@1.0.0",
            sign_in: "redmine.auth.sign_in@1.0.0",
            input: ("issue_id", "3"),
            secrets: ("CUA_SECRET_REDMINE_LOGIN", "CUA_SECRET_REDMINE_PASSWORD"),
            what: "read issue 3 by its deep link",
            read: ("subject", "Statement PDF shows wrong branch"),
        },
        Flow {
            app: "wordpress",
            key: "WORDPRESS",
            flow: "wordpress.category.find@1.0.0",
            sign_in: "wordpress.auth.sign_in@1.0.0",
            input: ("name", "Loans"),
            secrets: (
                "CUA_SECRET_WORDPRESS_USERNAME",
                "CUA_SECRET_WORDPRESS_PASSWORD",
            ),
            what: "search the categories, read the slug of \"Loans\"",
            read: ("slug", "loans"),
        },
    ];
    // Both sides must read the seeded value, so a wrong flow cannot pass as a fast one.
    for Flow {
        app,
        key,
        flow,
        sign_in,
        input,
        secrets: (user_env, password_env),
        what,
        read: (output, expected),
    } in flows
    {
        let base_url = format!("http://127.0.0.1:{}", settings[&format!("{key}_PORT")]);
        let user = &settings[&format!("{key}_ADMIN_USER")];
        let password = &settings[&format!("{key}_ADMIN_PASSWORD")];
        println!("{app}: {what} ({ITERATIONS} iterations)");
        let catalog = root.join("conformance").join(app).join("capabilities");
        let bind = |reference: &str| {
            let text = std::fs::read_to_string(catalog.join(format!("{reference}.yaml"))).unwrap();
            PreparedCapability::bind(
                Capability::from_yaml(&text).unwrap(),
                None,
                Some(&base_url),
                None,
            )
            .unwrap()
        };
        let (flow, sign_in) = (bind(flow), bind(sign_in));
        let allowlist = harness
            .policy
            .for_capability(&flow.capability)
            .unwrap()
            .allowlist()
            .clone();
        let launch = || ChromiumSurface::launch(ChromiumConfig::from_env(allowlist.clone()));
        let secrets = [(user_env, user.as_str()), (password_env, password.as_str())];
        let (remedies, inputs) = ([&sign_in], [input]);
        let up = {
            let surface = launch().await.unwrap();
            let report = harness
                .replay(&surface, &flow, &remedies, &secrets, &inputs)
                .await;
            surface.close().await;
            report.result.status == RunStatus::Success
                && report.result.outputs.get(output).and_then(Value::as_str) == Some(expected)
        };
        if !up {
            println!(
                "  not run: {app} at {base_url} did not answer {expected:?}: conformance/apps.sh up"
            );
            continue;
        }
        let mut excluded = Vec::new();
        {
            let surface = launch().await.unwrap();
            assert_eq!(
                harness
                    .replay(&surface, &flow, &remedies, &secrets, &inputs)
                    .await
                    .result
                    .status,
                RunStatus::Success
            );
            for _ in 0..ITERATIONS {
                let start = Instant::now();
                let status = harness
                    .replay(&surface, &flow, &remedies, &secrets, &inputs)
                    .await
                    .result
                    .status;
                excluded.push(start.elapsed().as_secs_f64() * 1000.0);
                assert_eq!(status, RunStatus::Success);
            }
            surface.close().await;
        }
        let mut included = Vec::new();
        for _ in 0..ITERATIONS {
            let start = Instant::now();
            let surface = launch().await.unwrap();
            let status = harness
                .replay(&surface, &flow, &remedies, &secrets, &inputs)
                .await
                .result
                .status;
            surface.close().await;
            included.push(start.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(status, RunStatus::Success);
        }
        let iterations = ITERATIONS.to_string();
        let playwright = playwright(
            "conformance.mjs",
            &[app, &base_url, &iterations, user, password],
        )
        .map(|result| times(&result));
        side_by_side(&excluded, &included, &playwright);
    }
}

/// What a batch measured.
struct Batch {
    per_minute: f64,
    /// Peak resident bytes of this process and its Chromium processes.
    peak: u64,
    /// CPU seconds per replay: this process (cua and the in-process fixture), and Chromium.
    own_cpu: f64,
    browser_cpu: f64,
}

/// Runs `BATCH_ROWS` lookups over `concurrency` workers.
async fn batch<F, Fut>(setup: &Setup, launch: &F, pool: &str, concurrency: usize) -> Batch
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<ChromiumSurface, cua_chromium::LaunchError>>,
{
    let first = launch().await.unwrap();
    let mut surfaces = vec![first];
    for _ in 1..concurrency {
        let surface = if pool == "pages" {
            ChromiumSurface::attach(
                surfaces[0].devtools_endpoint(),
                ChromiumConfig::from_env(
                    setup
                        .harness
                        .policy
                        .for_capability(&setup.savings.capability)
                        .unwrap()
                        .allowlist()
                        .clone(),
                ),
            )
            .await
            .unwrap()
        } else {
            launch().await.unwrap()
        };
        surfaces.push(surface);
    }
    let pids: Vec<u32> = surfaces
        .iter()
        .filter_map(ChromiumSurface::browser_pid)
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let done = Arc::clone(&done);
        let peak = Arc::clone(&peak);
        let pids = pids.clone();
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(procfs::resident_bytes(&pids), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let members = ["12345", "67890", "24680", "13579"];
    let next = AtomicU64::new(0);
    let cpu = || {
        (
            procfs::cpu_ns(&[std::process::id()]),
            procfs::cpu_ns(&procfs::family(&pids)),
        )
    };
    let (own_before, browser_before) = cpu();
    let start = Instant::now();
    let workers = surfaces.iter().map(|surface| async {
        loop {
            let row = next.fetch_add(1, Ordering::Relaxed) as usize;
            if row >= BATCH_ROWS {
                break;
            }
            let status = setup.replay(surface, members[row % members.len()]).await;
            assert!(matches!(
                status,
                RunStatus::Success | RunStatus::BusinessOutcome
            ));
        }
    });
    futures::future::join_all(workers).await;
    let elapsed = start.elapsed();
    let (own_after, browser_after) = cpu();
    done.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    for surface in surfaces {
        surface.close().await;
    }
    let per_replay =
        |before: u64, after: u64| after.saturating_sub(before) as f64 / 1e9 / BATCH_ROWS as f64;
    Batch {
        per_minute: BATCH_ROWS as f64 / elapsed.as_secs_f64() * 60.0,
        peak: peak.load(Ordering::Relaxed),
        own_cpu: per_replay(own_before, own_after),
        browser_cpu: per_replay(browser_before, browser_after),
    }
}

/// The Playwright side: installs `playwright-core` beside the scripts if needed, runs `script`
/// with `args` on the browser executable cua launches, and returns what it printed.
fn playwright(script: &str, args: &[&str]) -> Result<Value, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/playwright");
    if !dir.join("node_modules/playwright-core").is_dir() {
        let installed = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .status()
            .map_err(|error| format!("npm is not available ({error}); apt-get install -y npm"))?;
        if !installed.success() {
            return Err("npm install playwright-core failed".to_owned());
        }
    }
    let executable =
        ChromiumConfig::from_env(cua_policy::Allowlist::new(&[], &[]).unwrap()).executable;
    let output = Command::new("node")
        .env("CUA_CHROMIUM", executable)
        .arg(script)
        .args(args)
        .current_dir(&dir)
        .output()
        .map_err(|error| format!("node is not available ({error}); apt-get install -y nodejs"))?;
    if !output.status.success() {
        return Err(format!(
            "the Playwright script failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|error| error.to_string())
}

/// The per-iteration times a Playwright script printed: (excluded, included).
fn times(result: &Value) -> (Vec<f64>, Vec<f64>) {
    let times = |key: &str| -> Vec<f64> {
        result[key]
            .as_array()
            .map(|items| items.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default()
    };
    (times("excluded"), times("included"))
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}
