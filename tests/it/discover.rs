//! `cua discover --scripted` against the MemberDesk fixture in real Chromium, then `cua compile`
//! of the same run: the goal is reached through the chokepoint and the draft is deterministic.

use std::path::Path;
use std::process::Command;

const GOAL: &str = "Look up member 12345 and report their savings balance, the account status, and the as-of date.";

fn cua(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(args)
        .current_dir(cwd)
        .env_remove("CUA_LLM_BASE_URL")
        .env_remove("CUA_LLM_MODEL")
        .envs(crate::OPERATOR_SECRETS)
        .output()
        .expect("the cua binary runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_discovery_in_chromium_reaches_the_goal_and_compiles_a_deterministic_draft() {
    let fixture = memberdesk::serve(memberdesk::FixtureConfig::loopback(
        memberdesk::Variant::FirstValley,
    ))
    .await
    .expect("the fixture starts");
    let work = tempfile::tempdir().expect("a temporary directory");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sign_on = repo.join("capabilities/corebank.auth.sign_on@1.0.0.yaml");
    let policy = repo.join("config/policy.yaml");
    let target = format!("{}/", fixture.base_url());
    let dir = work.path().to_path_buf();
    let args: Vec<String> = vec![
        "discover".into(),
        "--scripted".into(),
        "--goal".into(),
        GOAL.into(),
        "--target".into(),
        target,
        "--sign-in-with".into(),
        sign_on.display().to_string(),
        "--policy".into(),
        policy.display().to_string(),
        "--out".into(),
        "drafts".into(),
        "--evidence".into(),
        "evidence".into(),
    ];
    let (code, stdout, stderr) = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cua(&args, &dir)
    })
    .await
    .expect("the discovery task finishes");
    assert_eq!(
        code, 0,
        "discovery failed (real Chromium is required: apt-get install -y chromium)\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("goal_met"), "{stdout}");
    // Off a terminal, a line per step the model took, then the summary; no escape codes.
    assert!(
        stderr.contains("discover step 1: acted") && stderr.contains("discover: "),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    assert!(stdout.contains("(scripted model)"), "{stdout}");
    let draft_path = work
        .path()
        .join("drafts/memberdesk.discovered.savings_balance@0.1.0.yaml");
    let draft = std::fs::read_to_string(&draft_path).expect("the draft was written");
    let capability =
        cua_artifact::Capability::from_yaml(&draft).expect("the draft is a valid capability");
    let inputs: Vec<&str> = capability
        .inputs
        .iter()
        .map(|input| input.name.as_str())
        .collect();
    assert_eq!(inputs, ["member_number"]);
    let outputs: Vec<&str> = capability
        .outputs
        .iter()
        .map(|output| output.name.as_str())
        .collect();
    assert_eq!(outputs, ["savings_balance", "account_status", "as_of"]);
    assert_eq!(capability.entrypoint.url, "{base_url}/");
    assert!(
        !draft.contains(memberdesk::OPERATOR_PASSWORD),
        "the sign-in secret is not in the draft"
    );
    assert!(
        !draft.contains("Operator ID"),
        "sign-in steps are not part of the goal's draft"
    );

    let run = std::fs::read_dir(work.path().join("evidence"))
        .expect("the evidence root exists")
        .map(|entry| entry.expect("a directory entry").path())
        .find(|path| path.is_dir())
        .expect("one run");
    let run = run.display().to_string();
    for out in ["again", "again2"] {
        let (code, stdout, stderr) = cua(&["compile", &run, "--out", out], work.path());
        assert_eq!(code, 0, "{stdout}\n{stderr}");
    }
    let again = std::fs::read(
        work.path()
            .join("again/memberdesk.discovered.savings_balance@0.1.0.yaml"),
    )
    .expect("recompiled");
    let again2 = std::fs::read(
        work.path()
            .join("again2/memberdesk.discovered.savings_balance@0.1.0.yaml"),
    )
    .expect("recompiled");
    assert_eq!(again, again2, "the same trace compiles to the same bytes");
    let (code, stdout, _) = cua(&["evidence", "verify", &run], work.path());
    assert_eq!(code, 0, "{stdout}");
    fixture.shutdown().await.expect("the fixture stops");
}
