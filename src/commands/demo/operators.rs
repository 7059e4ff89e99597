//! Stage 17: one route planner and one set of effect verdicts across the operators. A capability
//! mixing an `http` read, browser steps, a `command` and an `http` creation replays on the First
//! Valley browser with the real HTTP client and a real child process; a second capability signs
//! MemberDesk's canvas signature pad by a screenshot and a click at its pixels on the explicit
//! visual route; and the same click at a point outside the screenshot is refused before
//! anything is clicked. Every step's record names the operator and provider the planner chose
//! before the run's first action, and the path its dispatch took through the recovery graph.

use std::sync::{Arc, Mutex};

use cua_artifact::{Action, Actor, Capability, DeclaredCommand, EffectVerdict, SecretName};
use cua_operators::{HttpServiceClient, ProcessCommandRunner};
use cua_policy::{Lease, PolicyEngine};
use cua_replay::{Operators, PreparedCapability, RecordedEscalations, ReplayReport, RunRequest};

use super::StageFuture;
use super::rig::{Demo, Supervision, Wiring, describe, expect, failed, inputs, plain};
use super::stages::{create_dir, write};

/// The mixed capability and the visual one, as the tests use them (unsealed; sealed here).
const ACCOUNT_REVIEW: &str =
    include_str!("../../../tests/fixtures/operators/corebank.member.account_review@1.0.0.yaml");
const SIGN_CARD: &str =
    include_str!("../../../tests/fixtures/visual/corebank.member.sign_card@1.0.0.yaml");
/// The declared tool the `command` step runs: a POSIX shell script using builtins only.
const MEMBER_RISK: &str = include_str!("../../../tests/fixtures/operators/member-risk");

const MEMBER: &str = "12345";

/// Stage 17.
pub(super) fn one_planner_across_operators(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let demo: &Demo = demo;
        let (fixture, _) = demo.first_valley()?;
        let base_url = fixture.base_url();
        let dir = demo.out.join("operators");
        create_dir(&dir)?;
        let tool = dir.join("member-risk");
        write(&tool, MEMBER_RISK)?;
        make_executable(&tool)?;
        let mut config = demo.policy.config.clone();
        config.commands.allowed.push(DeclaredCommand {
            name: "member-risk".to_owned(),
            path: tool.display().to_string(),
        });
        let policy = PolicyEngine::from_config(&config)
            .map_err(|error| failed(format!("the policy with member-risk: {error}")))?;
        let http = HttpServiceClient::new()
            .map_err(|error| failed(format!("the HTTP operator cannot start: {error}")))?;
        let wiring = Wiring {
            policy: Some(&policy),
            operators: Operators {
                http: Some(Arc::new(http)),
                command: Some(Arc::new(ProcessCommandRunner::new())),
            },
            secrets: SecretName::parse("corebank.api_token")
                .map(|name| vec![(name, memberdesk::API_TOKEN.to_owned())])
                .map_err(|error| failed(error.to_string()))?,
        };

        let review = replay(
            demo,
            &wiring,
            "s17-account-review",
            prepared(ACCOUNT_REVIEW, &base_url, |_| {})?,
            &[("member_id", MEMBER), ("note", "Savings reviewed")],
        )
        .await?;
        expect_success(&review)?;
        expect_routes(
            &review,
            &[
                ("read_member", "http", "not_applicable"),
                ("enter_member_id", "cdp-browser", "confirmed"),
                ("submit_search", "cdp-browser", "confirmed"),
                ("read_balance", "cdp-browser", "not_applicable"),
                ("score_balance", "subprocess", "not_applicable"),
                ("add_note", "http", "confirmed"),
            ],
        )?;
        let notes = fixture.handle().note_texts(MEMBER);
        expect(notes == ["Savings reviewed"], || {
            format!("member {MEMBER} holds the notes {notes:?}")
        })?;
        let outputs = &review.result.outputs;

        let signed = replay(
            demo,
            &wiring,
            "s17-sign-card",
            prepared(SIGN_CARD, &base_url, |_| {})?,
            &[("member_id", MEMBER)],
        )
        .await?;
        expect_success(&signed)?;
        expect_routes(
            &signed,
            &[
                ("enter_member_id", "cdp-browser", "confirmed"),
                ("open_card", "cdp-browser", "confirmed"),
                ("look", "visual", "not_applicable"),
                ("sign", "visual", "confirmed"),
            ],
        )?;
        let signatures = fixture.handle().signature_count(MEMBER);
        expect(signatures == 1, || {
            format!("member {MEMBER} has {signatures} signature(s) on file, not 1")
        })?;

        let outside = replay(
            demo,
            &wiring,
            "s17-sign-card-outside",
            prepared(SIGN_CARD, &base_url, |capability| {
                for step in &mut capability.steps {
                    if let Action::ClickAt { x, .. } = &mut step.action {
                        *x = 50_000;
                    }
                }
            })?,
            &[("member_id", MEMBER)],
        )
        .await?;
        let refused = outside
            .result
            .error
            .as_ref()
            .is_some_and(|error| error.message.contains("outside the screenshot"));
        let clicked = outside
            .steps
            .iter()
            .any(|step| step.step == "sign" && step.dispatched);
        let signatures = fixture.handle().signature_count(MEMBER);
        expect(refused && !clicked && signatures == 1, || {
            format!(
                "a click at (50000, 220) was not refused before dispatch: {} (clicked: {clicked}, signatures: {signatures})",
                describe(&outside)
            )
        })?;

        Ok(format!(
            "account_review routed http, cdp-browser ×3, subprocess (band {}), http: note {} \
             confirmed by 201; sign_card: screenshot + click_at via visual, signature confirmed \
             on a canvas with no semantic handle; a click outside the screenshot refused \
             (policy_denied) with nothing clicked; every step planned before the first action",
            plain(outputs.get("risk_band")),
            plain(outputs.get("note_id")),
        ))
    })
}

/// `text` sealed and bound to the fixture, after `edit`.
fn prepared(
    text: &str,
    base_url: &str,
    edit: impl FnOnce(&mut Capability),
) -> Result<PreparedCapability, super::rig::StageFailure> {
    let mut capability = Capability::from_yaml(text).map_err(|error| failed(error.to_string()))?;
    edit(&mut capability);
    let reference = capability.reference();
    PreparedCapability::bind(capability.sealed(), None, Some(base_url), None)
        .map_err(|error| failed(format!("binding {reference}: {error}")))
}

/// One replay on the First Valley browser, wired with the stage's policy and operators.
async fn replay(
    demo: &Demo,
    wiring: &Wiring<'_>,
    run_id: &str,
    capability: PreparedCapability,
    pairs: &[(&str, &str)],
) -> Result<ReplayReport, super::rig::StageFailure> {
    let (fixture, surface) = demo.first_valley()?;
    let bus = demo.evidence_bus(run_id)?;
    let escalations = RecordedEscalations::new();
    demo.replay_wired(
        Supervision {
            surface,
            bus: &bus,
            escalations: &escalations,
            lease: Arc::new(Mutex::new(Lease::new(Actor::Automation))),
        },
        wiring,
        &fixture.base_url(),
        run_id,
        RunRequest::new(capability, inputs(pairs)),
    )
    .await
}

fn expect_success(report: &ReplayReport) -> Result<(), super::rig::StageFailure> {
    expect(
        report.result.status == cua_artifact::RunStatus::Success,
        || {
            format!(
                "{} ended {}",
                report.evidence_dir.display(),
                describe(report)
            )
        },
    )
}

/// Each named step's provider and verdict, as its route trace and report say.
fn expect_routes(
    report: &ReplayReport,
    expected: &[(&str, &str, &str)],
) -> Result<(), super::rig::StageFailure> {
    let actual: Vec<(String, String, String)> = report
        .steps
        .iter()
        .filter(|step| step.capability.is_none() && step.step != "entrypoint")
        .map(|step| {
            (
                step.step.clone(),
                step.route
                    .as_ref()
                    .map_or_else(|| "none".to_owned(), |route| route.provider.clone()),
                verdict(step.verdict).to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(step, provider, verdict)| {
            (
                (*step).to_owned(),
                (*provider).to_owned(),
                (*verdict).to_owned(),
            )
        })
        .collect();
    expect(actual == expected, || {
        format!(
            "{}: routes {actual:?}, expected {expected:?}",
            report.evidence_dir.display()
        )
    })
}

fn verdict(verdict: EffectVerdict) -> &'static str {
    verdict.as_str()
}

#[cfg(unix)]
fn make_executable(path: &std::path::Path) -> Result<(), super::rig::StageFailure> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|error| failed(format!("{}: {error}", path.display())))
}

#[cfg(not(unix))]
fn make_executable(_path: &std::path::Path) -> Result<(), super::rig::StageFailure> {
    Ok(())
}
