//! The operators against real things: the MemberDesk fixture over real HTTP and real child
//! processes. Every action is minted by the policy engine, as in a run.

#![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cua_artifact::{Actor, DeclaredCommand, HttpMethod, PolicyConfig, RiskTier};
use cua_operators::{HttpServiceClient, ProcessCommandRunner};
use cua_policy::{
    ActionRequest, Authorized, AuthorizedAction, CommandInvocation, HttpRequest, Lease,
    PolicyEngine, SurfaceAction,
};
use cua_surface::{CommandRunner, ServiceClient, SurfaceError};
use memberdesk::{FixtureConfig, Variant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn engine() -> PolicyEngine {
    let text = std::fs::read_to_string(root().join("config/policy.yaml")).unwrap();
    let mut config = PolicyConfig::from_yaml(&text).unwrap();
    for name in ["member-risk", "spin", "flood"] {
        config.commands.allowed.push(DeclaredCommand {
            name: name.to_owned(),
            path: format!("tests/fixtures/operators/{name}"),
        });
    }
    PolicyEngine::from_config(&config)
        .unwrap()
        .with_command_base(&root())
}

fn authorize(action: SurfaceAction, declared: RiskTier) -> AuthorizedAction {
    let lease = Lease::new(Actor::Automation);
    engine()
        .authorize(
            &lease,
            ActionRequest {
                actor: Actor::Automation,
                epoch: lease.epoch,
                action,
                target: None,
                declared_risk: Some(declared),
            },
        )
        .unwrap()
}

/// The HTTP operator's witness for a request the policy allowed.
fn http_grant(action: SurfaceAction, declared: RiskTier) -> Authorized<HttpRequest> {
    authorize(action, declared).into_http().expect("a request")
}

/// The command operator's witness for a command the policy allowed.
fn command_grant(action: SurfaceAction, declared: RiskTier) -> Authorized<CommandInvocation> {
    authorize(action, declared)
        .into_command()
        .expect("a command")
}

fn request(method: HttpMethod, url: String, body: Option<&str>) -> SurfaceAction {
    SurfaceAction::Http(HttpRequest {
        method,
        url,
        headers: vec![("authorization".to_owned(), "Bearer md-api-token".to_owned())],
        body: body.map(str::to_owned),
        timeout_ms: 5_000,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_requests_reach_the_service_once_and_never_follow_redirects() {
    let fixture = memberdesk::serve(FixtureConfig::loopback(Variant::FirstValley))
        .await
        .unwrap();
    let base = fixture.base_url();
    let client = HttpServiceClient::new().unwrap();

    let read = client
        .send(http_grant(
            request(HttpMethod::Get, format!("{base}/api/members/12345"), None),
            RiskTier::Safe,
        ))
        .await
        .unwrap();
    assert_eq!(read.status, 200);
    let member: serde_json::Value = serde_json::from_slice(&read.body).unwrap();
    assert_eq!(member["name"], "Ada Lovelace");

    let created = client
        .send(http_grant(
            request(
                HttpMethod::Post,
                format!("{base}/api/members/12345/notes"),
                Some(r#"{"text":"called the member"}"#),
            ),
            RiskTier::Elevated,
        ))
        .await
        .unwrap();
    assert_eq!(created.status, 201);
    assert_eq!(
        fixture.handle().note_texts("12345"),
        vec!["called the member".to_owned()]
    );

    // `/logout` answers with a redirect; the client reports it and goes nowhere.
    let redirected = client
        .send(http_grant(
            request(HttpMethod::Get, format!("{base}/logout"), None),
            RiskTier::Safe,
        ))
        .await
        .unwrap();
    assert!(
        (300..400).contains(&redirected.status),
        "{}",
        redirected.status
    );

    // A command's witness never becomes the HTTP operator's: the port's type refuses it (a
    // compile-fail test shows a browser witness cannot be sent either).
    assert_eq!(
        authorize(
            SurfaceAction::Command(CommandInvocation {
                executable: "member-risk".to_owned(),
                args: vec!["1".to_owned()],
                timeout_ms: 1_000,
            }),
            RiskTier::Safe,
        )
        .into_http()
        .unwrap_err(),
        cua_artifact::ActionKind::Command
    );

    // Nothing listens: unavailable, so a mutation can be judged not sent.
    drop(fixture);
    let unreachable = client
        .send(http_grant(
            request(HttpMethod::Get, format!("{base}/api/members/12345"), None),
            RiskTier::Safe,
        ))
        .await;
    assert!(
        matches!(unreachable, Err(SurfaceError::Unavailable { .. })),
        "{unreachable:?}"
    );
}

fn run(name: &str, args: &[&str], timeout_ms: u32) -> Authorized<CommandInvocation> {
    command_grant(
        SurfaceAction::Command(CommandInvocation {
            executable: name.to_owned(),
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            timeout_ms,
        }),
        RiskTier::Safe,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_take_an_argv_never_a_shell_and_die_at_their_timeout() {
    let runner = ProcessCommandRunner::new();

    let scored = runner
        .run(run("member-risk", &["4210.55"], 5_000))
        .await
        .unwrap();
    assert_eq!((scored.exit_code, scored.timed_out), (Some(0), false));
    assert_eq!(
        String::from_utf8_lossy(&scored.stdout),
        "{\"balance\":\"4210.55\",\"band\":\"medium\"}\n"
    );

    // Shell syntax in an argument is one argument, never evaluated.
    let marker = std::env::temp_dir().join(format!("cua-argv-{}", std::process::id()));
    let hostile = format!("1; touch {}", marker.display());
    let refused = runner
        .run(run("member-risk", &[&hostile], 5_000))
        .await
        .unwrap();
    assert_eq!(refused.exit_code, Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("must be digits"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(!marker.exists(), "the argument was run by a shell");

    let started = Instant::now();
    let spun = runner.run(run("spin", &[], 300)).await.unwrap();
    assert!(spun.timed_out);
    assert_eq!(spun.exit_code, None);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // Too much output: the program still runs to its end, and is refused for it, not timed out.
    let started = Instant::now();
    let flooded = runner.run(run("flood", &[], 20_000)).await;
    assert!(
        matches!(&flooded, Err(SurfaceError::ActionFailed { reason }) if reason.contains("wrote more than")),
        "{flooded:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the flood was blocked on its pipe: {:?}",
        started.elapsed()
    );

    // A request's witness never becomes the command operator's.
    assert_eq!(
        authorize(
            request(HttpMethod::Get, "http://127.0.0.1:8811/".to_owned(), None),
            RiskTier::Safe,
        )
        .into_command()
        .unwrap_err(),
        cua_artifact::ActionKind::Http
    );
}
