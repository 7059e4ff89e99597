//! Requests and commands pass the same chokepoint as browser actions: the allowlist applies to a
//! request's URL, a command must be declared (and the policy, not the proposer, names the
//! program), and only a safe method is a read whatever the step declares.

use cua_artifact::{ActionKind, Actor, HttpMethod, PolicyConfig, RiskTier};
use cua_policy::{
    ActionRequest, BrowserAction, CommandInvocation, ForPort, HttpRequest, Lease, PolicyEngine,
    SurfaceAction,
};

fn engine() -> PolicyEngine {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/policy.yaml"),
    )
    .unwrap();
    let mut config = PolicyConfig::from_yaml(&text).unwrap();
    config.commands.allowed.push(cua_artifact::DeclaredCommand {
        name: "member-risk".to_owned(),
        path: "tools/member-risk".to_owned(),
    });
    PolicyEngine::from_config(&config)
        .unwrap()
        .with_command_base(std::path::Path::new("/opt/cua"))
}

/// The engine's decision for an automation action with no target, declared `declared`.
fn authorize(
    engine: &PolicyEngine,
    lease: &Lease,
    action: SurfaceAction,
    declared: RiskTier,
) -> cua_policy::AuthorizedAction {
    engine
        .authorize(
            lease,
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

fn http(method: HttpMethod, url: &str) -> SurfaceAction {
    SurfaceAction::Http(HttpRequest {
        method,
        url: url.to_owned(),
        headers: vec![("authorization".to_owned(), "Bearer hunter2".to_owned())],
        body: None,
        timeout_ms: 1_000,
    })
}

fn command(name: &str) -> SurfaceAction {
    SurfaceAction::Command(CommandInvocation {
        executable: name.to_owned(),
        args: vec!["$(id)".to_owned()],
        timeout_ms: 1_000,
    })
}

/// One line per decision: granted with its tier and program, or the denial.
fn decide(action: SurfaceAction, declared: RiskTier) -> String {
    let engine = engine();
    let lease = Lease::new(Actor::Automation);
    let request = ActionRequest {
        actor: Actor::Automation,
        epoch: lease.epoch,
        action,
        target: None,
        declared_risk: Some(declared),
    };
    match engine.authorize(&lease, request) {
        Ok(authorized) => format!(
            "granted {} ({}){}",
            authorized.risk().as_str(),
            authorized.assessment().reason,
            authorized
                .program()
                .map(|program| format!(" program {}", program.display()))
                .unwrap_or_default()
        ),
        Err(denial) => format!("denied {}: {}", denial.code.as_str(), denial.reason),
    }
}

#[test]
fn requests_and_commands_pass_the_chokepoint() {
    let check = |action: SurfaceAction, declared: RiskTier, expect: &str| {
        let debug = format!("{action:?}");
        assert_eq!(decide(action, declared), expect, "{debug}");
        // Debug never shows a header value or an argument.
        assert!(
            !debug.contains("hunter2") && !debug.contains("$(id)"),
            "{debug}"
        );
    };
    check(
        http(HttpMethod::Get, "http://127.0.0.1:8811/api/members/12345"),
        RiskTier::Safe,
        "granted safe (safe (safe_method))",
    );
    // A GET is a read even when the step over-declares.
    check(
        http(HttpMethod::Get, "http://127.0.0.1:8811/api/members/12345"),
        RiskTier::Elevated,
        "granted safe (safe (safe_method))",
    );
    check(
        http(
            HttpMethod::Post,
            "http://127.0.0.1:8811/api/members/12345/notes",
        ),
        RiskTier::Elevated,
        "granted elevated (elevated (declared:elevated))",
    );
    check(
        http(HttpMethod::Get, "http://evil.example.com/api"),
        RiskTier::Safe,
        "denied navigation_blocked: host `evil.example.com` is not on the allowlist",
    );
    check(
        http(HttpMethod::Get, "file:///etc/passwd"),
        RiskTier::Safe,
        "denied navigation_blocked: scheme `file` is not http or https",
    );
    check(
        command("member-risk"),
        RiskTier::Safe,
        "granted safe (safe (default)) program /opt/cua/tools/member-risk",
    );
    check(
        command("/bin/sh"),
        RiskTier::Safe,
        "denied policy_denied: command `/bin/sh` is not declared in the policy's `commands.allowed`",
    );
}

#[test]
fn only_a_read_has_a_spare_witness_for_its_retry() {
    let engine = engine();
    let lease = Lease::new(Actor::Automation);
    let grant =
        |action: SurfaceAction, declared: RiskTier| authorize(&engine, &lease, action, declared);
    let read = grant(
        http(HttpMethod::Get, "http://127.0.0.1:8811/api/members/12345"),
        RiskTier::Safe,
    )
    .into_http()
    .unwrap();
    let spare = read.retry_of_read().unwrap();
    assert_eq!(spare.decision_id(), read.decision_id());
    assert_eq!(spare.action(), read.action());
    let write = grant(
        http(
            HttpMethod::Post,
            "http://127.0.0.1:8811/api/members/12345/notes",
        ),
        RiskTier::Elevated,
    )
    .into_http()
    .unwrap();
    assert!(write.retry_of_read().is_none());
    // A POST declared safe is still no read, and a command never has a spare.
    let declared_safe = grant(
        http(
            HttpMethod::Post,
            "http://127.0.0.1:8811/api/members/12345/notes",
        ),
        RiskTier::Safe,
    )
    .into_http()
    .unwrap();
    assert!(declared_safe.retry_of_read().is_none());
    // A command's witness has no `retry_of_read` at all, and it never becomes a request's.
    assert_eq!(
        grant(command("member-risk"), RiskTier::Safe)
            .into_http()
            .unwrap_err(),
        cua_artifact::ActionKind::Command
    );
}

/// Each witness goes to its own port and carries the decision with it; a witness for one port
/// never becomes another's.
#[test]
fn a_witness_splits_to_its_own_port_with_its_decision() {
    let engine = engine();
    let lease = Lease::new(Actor::Automation);
    let grant = |action: SurfaceAction| authorize(&engine, &lease, action, RiskTier::Safe);
    let navigate = || {
        SurfaceAction::Browser(BrowserAction::Navigate {
            url: "http://127.0.0.1:8811/".to_owned(),
        })
    };
    let read = || http(HttpMethod::Get, "http://127.0.0.1:8811/api/members/12345");

    let browser = grant(navigate()).into_browser().unwrap();
    assert_eq!(
        browser.action(),
        &BrowserAction::Navigate {
            url: "http://127.0.0.1:8811/".to_owned()
        }
    );
    assert_eq!(browser.risk(), RiskTier::Safe);
    assert!(browser.decision_id().starts_with("dec-"));
    let request = grant(read()).into_http().unwrap();
    assert_eq!(request.action().method, HttpMethod::Get);
    let program = grant(command("member-risk")).into_command().unwrap();
    assert_eq!(program.action().executable, "member-risk");
    assert!(program.program().is_some());
    assert!(matches!(
        grant(SurfaceAction::Screenshot).into_port(),
        ForPort::Screenshot(_)
    ));

    assert_eq!(
        grant(navigate()).into_http().unwrap_err(),
        ActionKind::Navigate
    );
    assert_eq!(
        grant(navigate()).into_command().unwrap_err(),
        ActionKind::Navigate
    );
    assert_eq!(grant(read()).into_browser().unwrap_err(), ActionKind::Http);
    assert_eq!(
        grant(command("member-risk")).into_browser().unwrap_err(),
        ActionKind::Command
    );
}

/// A witness names the lease epoch it was granted under and the node it was granted for: the
/// gate re-checks the first at the dispatch, the driver acts on the second and nothing else.
#[test]
fn a_witness_carries_its_lease_epoch_and_its_node() {
    let engine = engine();
    let mut lease = Lease::new(Actor::Automation);
    let _ = lease.transfer(Actor::Human);
    let _ = lease.transfer(Actor::Automation);
    assert!(lease.epoch > 1, "{}", lease.epoch);
    let target = cua_policy::ResolvedTarget {
        node_id: cua_snapshot::NodeId::new("main:/document[0]/button[0]"),
        role: "button".to_owned(),
        name: "Search".to_owned(),
    };
    let authorized = engine
        .authorize(
            &lease,
            ActionRequest {
                actor: Actor::Automation,
                epoch: lease.epoch,
                action: SurfaceAction::Browser(BrowserAction::Click),
                target: Some(target.clone()),
                declared_risk: Some(RiskTier::Safe),
            },
        )
        .unwrap();
    assert_eq!(authorized.lease_epoch(), lease.epoch);
    assert_eq!(authorized.target(), Some(&target));
    assert_eq!(authorized.actor(), Actor::Automation);
}

/// Where a navigation landed is checked against the same allowlist as where it was sent.
#[test]
fn a_landing_outside_the_allowlist_is_blocked() {
    let engine = engine();
    assert!(
        engine
            .check_landing("http://127.0.0.1:8811/members")
            .is_ok()
    );
    let blocked = engine
        .check_landing("https://evil.example.com/phish")
        .unwrap_err();
    assert!(
        blocked.reason.contains("not on the allowlist"),
        "{blocked:?}"
    );
}
