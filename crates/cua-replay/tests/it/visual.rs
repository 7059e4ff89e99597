//! The visual operators end to end, on the real fixture in Chromium: MemberDesk's signature pad
//! is a canvas whose "Sign here" box exists only as pixels. A screenshot on the explicit visual
//! route issues a single-use observation ref, and a click at its pixel coordinates signs the
//! card. Every check of the ref (the point inside the image, the same page, one claim only)
//! happens before anything is clicked, and a step that asks for coordinates without an explicit
//! route never runs at all.

use cua_artifact::{Action, Capability, EffectVerdict, FailureCode, Identifier, RunStatus};
use cua_replay::{PreparedCapability, RunRequest};
use memberdesk::Variant;

use crate::live::Live;
use crate::support::{events, inputs, root};

const MEMBER: &str = "12345";

/// A step as the test reads it: id, dispatched, verdict, and (provider, physical action, last
/// recovery state) of its route.
type StepSummary<'r> = (
    &'r str,
    bool,
    EffectVerdict,
    Option<(&'r str, &'r str, &'r str)>,
);

fn sign_card() -> Capability {
    let path = root().join("tests/fixtures/visual/corebank.member.sign_card@1.0.0.yaml");
    Capability::from_yaml(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn request(live: &Live, capability: Capability) -> RunRequest {
    let prepared =
        PreparedCapability::bind(capability.sealed(), None, Some(&live.base_url()), None).unwrap();
    RunRequest::new(prepared, inputs(&[("member_id", MEMBER)]))
}

/// The capability as the fixture's, with `{base_url}` written out, edited by `edit` past the
/// validator (which would refuse the edit) and sealed: what replay does with a document that
/// never went through `cua validate`.
fn unvalidated(live: &Live, edit: impl FnOnce(&mut Capability)) -> RunRequest {
    let path = root().join("tests/fixtures/visual/corebank.member.sign_card@1.0.0.yaml");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("{base_url}", &live.base_url());
    let mut capability = Capability::from_yaml(&text).unwrap();
    edit(&mut capability);
    RunRequest::new(
        PreparedCapability::plain(capability.sealed()),
        inputs(&[("member_id", MEMBER)]),
    )
}

async fn start() -> Live {
    let live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    live.fixture.handle().reset();
    live
}

fn action_of<'c>(capability: &'c mut Capability, step: &str) -> &'c mut Action {
    &mut capability
        .steps
        .iter_mut()
        .find(|candidate| candidate.id.as_str() == step)
        .unwrap()
        .action
}

/// The dispatch events of one step in the run's trace.
fn dispatches_of(run_dir: &std::path::Path, step: &str) -> usize {
    cua_evidence::read_trace(run_dir)
        .unwrap()
        .into_iter()
        .filter(|line| {
            matches!(&line.event, cua_evidence::Event::Dispatch(dispatch)
                if dispatch.step.as_ref().is_some_and(|id| id.as_str() == step))
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canvas_is_signed_by_a_coordinate_click_on_the_explicit_visual_route() {
    let live = start().await;
    let (report, run_dir) = live.run(request(&live, sign_card())).await;
    assert_eq!(
        report.result.status,
        RunStatus::Success,
        "{}: {:?}",
        run_dir.display(),
        report.result
    );
    assert_eq!(live.fixture.handle().signature_count(MEMBER), 1);
    let steps: Vec<StepSummary<'_>> = report
        .steps
        .iter()
        .map(|step| {
            (
                step.step.as_str(),
                step.dispatched,
                step.verdict,
                step.route.as_ref().map(|route| {
                    (
                        route.provider.as_str(),
                        route.physical_action.as_str(),
                        route.path.last().map_or("", String::as_str),
                    )
                }),
            )
        })
        .collect();
    use EffectVerdict::*;
    assert_eq!(
        steps,
        [
            (
                "entrypoint",
                true,
                Unverifiable,
                Some(("cdp-browser", "page_navigate", "ambiguous"))
            ),
            (
                "enter_member_id",
                true,
                Confirmed,
                Some(("cdp-browser", "dom_insert_text", "confirmed"))
            ),
            (
                "open_card",
                true,
                Confirmed,
                Some(("cdp-browser", "dom_click", "confirmed"))
            ),
            (
                "look",
                false,
                NotApplicable,
                Some(("visual", "viewport_screenshot", "confirmed"))
            ),
            (
                "sign",
                true,
                Confirmed,
                Some(("visual", "pointer_click", "confirmed"))
            ),
        ]
    );
    let sign = report
        .steps
        .iter()
        .find(|step| step.step == "sign")
        .unwrap();
    let route = sign.route.as_ref().unwrap();
    assert_eq!(
        (route.operator.as_str(), route.selected_by.as_str()),
        ("visual-coordinate", "explicit visual route")
    );
    assert_eq!(route.path, ["planned", "dispatched", "confirmed"]);
    // The click was authorized as a coordinate action: elevated, whatever the step declared.
    assert_eq!(sign.risk, cua_artifact::RiskTier::Elevated);
    // The screenshot the ref was issued for is evidence, and the record carries the route.
    let shots: Vec<String> = std::fs::read_dir(run_dir.join("screenshots"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        shots
            .iter()
            .any(|name| name.ends_with("-look-observation.png")),
        "{shots:?}"
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run_record.json")).unwrap())
            .unwrap();
    let recorded = record["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["step_id"] == "sign")
        .unwrap();
    assert_eq!(recorded["action_type"], "click_at");
    assert_eq!(recorded["effect"], "confirmed");
    assert_eq!(recorded["route"]["provider"], "visual");
    // The trace names the ref by its first 32 bits only: it is a bearer capability.
    let issued = cua_evidence::read_trace(&run_dir)
        .unwrap()
        .into_iter()
        .find_map(|line| match line.event {
            cua_evidence::Event::Note(note) if note.note == "visual observation issued" => {
                Some(note.data["observation"].as_str().unwrap().to_owned())
            }
            _ => None,
        })
        .unwrap();
    assert!(issued.starts_with("visual-observation:") && issued.ends_with('…'));
    assert_eq!(issued.chars().count(), "visual-observation:".len() + 8 + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_claims_click_nothing() {
    let live = start().await;

    // A point outside the screenshot.
    let mut outside = sign_card();
    if let Action::ClickAt { x, .. } = action_of(&mut outside, "sign") {
        *x = 50_000;
    }
    let (report, run_dir) = live.run(request(&live, outside)).await;
    let error = report.result.error.as_ref().unwrap();
    assert_eq!(
        (report.result.status, error.code),
        (RunStatus::Failed, FailureCode::PolicyDenied),
        "{}",
        run_dir.display()
    );
    assert!(
        error
            .message
            .contains("the point lies outside the screenshot"),
        "{}",
        error.message
    );
    assert_eq!(dispatches_of(&run_dir, "sign"), 0);

    // A screenshot of another screen: the form, before the card was opened (past the
    // validator, which refuses actions between a screenshot and its click).
    let earlier = unvalidated(&live, |capability| {
        let look = capability.steps.remove(2);
        capability.steps.insert(0, look);
    });
    let (report, run_dir) = live.run(earlier).await;
    let error = report.result.error.as_ref().unwrap();
    assert_eq!(
        error.code,
        FailureCode::PolicyDenied,
        "{}",
        run_dir.display()
    );
    assert!(
        error
            .message
            .contains("the screen changed, or something was dispatched, since the screenshot"),
        "{}",
        error.message
    );
    assert_eq!(dispatches_of(&run_dir, "sign"), 0);

    // One observation, two claims (past the validator, which refuses this statically): the
    // first click signs, the second is refused before it is dispatched.
    let twice = unvalidated(&live, |capability| {
        let mut again = capability.steps[3].clone();
        again.id = Identifier::parse("sign_again").unwrap();
        again.postcondition = None;
        again.wait = cua_artifact::WaitPolicy::default();
        capability.steps.push(again);
    });
    let (report, run_dir) = live.run(twice).await;
    let error = report.result.error.as_ref().unwrap();
    assert_eq!(
        error.code,
        FailureCode::PolicyDenied,
        "{}",
        run_dir.display()
    );
    assert!(
        error
            .message
            .contains("the observation ref is unknown or was already claimed"),
        "{}",
        error.message
    );
    assert_eq!(dispatches_of(&run_dir, "sign"), 1);
    assert_eq!(dispatches_of(&run_dir, "sign_again"), 0);
    assert_eq!(live.fixture.handle().signature_count(MEMBER), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinates_without_an_explicit_route_never_run() {
    let live = start().await;
    let implicit = unvalidated(&live, |capability| capability.steps[3].via = None);
    let (report, run_dir) = live.run(implicit).await;
    let error = report.result.error.as_ref().unwrap();
    assert_eq!(
        (report.result.status, error.code),
        (RunStatus::Failed, FailureCode::RouteUnavailable),
        "{}",
        run_dir.display()
    );
    assert!(
        error.message.contains("step `sign` has no route"),
        "{}",
        error.message
    );
    // Planned before the first action: not even the entrypoint was opened.
    assert!(
        !events(&run_dir).contains(&"dispatch".to_owned()),
        "{:?}",
        events(&run_dir)
    );
    assert_eq!(live.fixture.handle().signature_count(MEMBER), 0);
}

/// A run clock on which time jumps by `shutter` right after the first reading that follows a
/// screenshot: the reading that dates the observation ref. Anything that reads the clock later
/// (the claim) finds the observation `shutter` old.
struct ShutterClock {
    time: cua_replay::ManualClock,
    armed: std::sync::atomic::AtomicBool,
    shutter: std::time::Duration,
}

impl cua_replay::RunClock for ShutterClock {
    fn elapsed(&self) -> std::time::Duration {
        let now = self.time.elapsed();
        if self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            self.time.advance(self.shutter);
        }
        now
    }

    fn sleep(&self, duration: std::time::Duration) -> cua_replay::Sleep<'_> {
        self.time.sleep(duration)
    }
}

/// Chromium, arming the clock at every screenshot.
struct Shutter<'a> {
    surface: &'a cua_chromium::ChromiumSurface,
    clock: &'a ShutterClock,
}

impl cua_surface::SurfaceDriver for Shutter<'_> {
    async fn observe(&self) -> Result<cua_snapshot::UiSnapshot, cua_surface::SurfaceError> {
        self.surface.observe().await
    }

    async fn dispatch(
        &self,
        action: cua_policy::Authorized<cua_policy::BrowserAction>,
    ) -> Result<cua_surface::DispatchReceipt, cua_surface::SurfaceError> {
        self.surface.dispatch(action).await
    }

    async fn wait(
        &self,
        condition: cua_surface::WaitCondition,
        timeout: std::time::Duration,
    ) -> Result<cua_surface::WaitOutcome, cua_surface::SurfaceError> {
        self.surface.wait(condition, timeout).await
    }

    async fn wait_until<P>(
        &self,
        predicate: P,
        timeout: std::time::Duration,
    ) -> Result<cua_surface::WaitOutcome, cua_surface::SurfaceError>
    where
        P: Fn(&cua_snapshot::UiSnapshot) -> bool + Send + Sync,
    {
        self.surface.wait_until(predicate, timeout).await
    }

    async fn screenshot(
        &self,
        request: cua_surface::ScreenshotRequest,
    ) -> Result<cua_surface::Screenshot, cua_surface::SurfaceError> {
        let shot = self.surface.screenshot(request).await;
        self.clock
            .armed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        shot
    }

    fn take_blocked_requests(&self) -> Vec<cua_surface::BlockedRequest> {
        self.surface.take_blocked_requests()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observation_is_good_for_thirty_seconds_of_run_time() {
    let live = start().await;
    let run = |shutter_ms: u64| {
        let live = &live;
        async move {
            let clock = ShutterClock {
                time: cua_replay::ManualClock::new(),
                armed: std::sync::atomic::AtomicBool::new(false),
                shutter: std::time::Duration::from_millis(shutter_ms),
            };
            let driver = Shutter {
                surface: &live.surface,
                clock: &clock,
            };
            let (report, run_dir) = live
                .harness
                .run_with_clock(&driver, request(live, sign_card()), &clock)
                .await;
            (report.unwrap(), run_dir)
        }
    };
    // Claimed 29.999 s after it was issued: signed.
    let (report, run_dir) = run(29_999).await;
    assert_eq!(
        report.result.status,
        RunStatus::Success,
        "{}: {:?}",
        run_dir.display(),
        report.result
    );
    assert_eq!(live.fixture.handle().signature_count(MEMBER), 1);
    // Claimed 30 s after: expired, refused before the click.
    let (report, run_dir) = run(30_000).await;
    let error = report.result.error.as_ref().unwrap();
    assert_eq!(
        error.code,
        FailureCode::PolicyDenied,
        "{}",
        run_dir.display()
    );
    assert!(
        error.message.contains("older than its 30-second lifetime"),
        "{}",
        error.message
    );
    assert_eq!(dispatches_of(&run_dir, "sign"), 0);
    assert_eq!(live.fixture.handle().signature_count(MEMBER), 1);
}
