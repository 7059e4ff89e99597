//! Discovery trace → draft: the snapshot of the draft, determinism, and the grid case.

use cua_agent::scripted::ScriptedServer;
use cua_agent::{Discovery, DiscoveryConfig, DiscoveryRequest, OpenAiAdapter, StopReason};
use cua_artifact::{Action, Capability, SecretName, ValueExpr};
use cua_compile::{CompileConfig, CompileError, compile, load_run};
use cua_target::{BoundValues, read_by_column, resolve};

use crate::desk::{self, BASE, Desk};

const GOAL: &str = "Look up member 12345 and report their savings balance, the account status, and the as-of date.";

/// Runs discovery on the desk (signed in already) and returns the run directory.
async fn discover(root: &std::path::Path, goal: &str, signed_in: bool) -> std::path::PathBuf {
    let desk = Desk::new(signed_in, false);
    let (bus, secrets) = desk::bus(root, "disc-0001");
    let server = ScriptedServer::start().await.unwrap();
    let llm = OpenAiAdapter::new(server.model_config()).unwrap();
    let policy = desk::policy();
    let discovery = Discovery {
        driver: &desk,
        policy: &policy,
        bus: &bus,
        llm: &llm,
        secrets: &secrets,
        config: DiscoveryConfig::default(),
    };
    let mut request = DiscoveryRequest::new(goal, format!("{BASE}/"));
    request.secret_names = vec![
        SecretName::parse("corebank.operator_id").unwrap(),
        SecretName::parse("corebank.operator_password").unwrap(),
    ];
    let report = discovery.run(&request).await.unwrap();
    assert_eq!(report.stop_reason, StopReason::GoalMet, "{report:#?}");
    server.shutdown().await;
    bus.dir().to_path_buf()
}

fn config() -> CompileConfig {
    CompileConfig::new("evidence/discovery/disc-0001/trace.jsonl")
}

#[tokio::test]
async fn a_discovery_trace_compiles_into_a_reviewable_draft() {
    let root = tempfile::tempdir().unwrap();
    let dir = discover(root.path(), GOAL, true).await;
    let compiled = compile(&load_run(&dir).unwrap(), &config()).unwrap();
    insta::assert_snapshot!("savings_balance_draft", compiled.yaml);

    let draft = Capability::from_yaml(&compiled.yaml).unwrap();
    assert_eq!(
        draft, compiled.capability,
        "the YAML reads back as the same capability"
    );
    assert!(draft.content_hash.is_none(), "a draft is not sealed");
    assert!(
        draft.outcomes.is_empty() && draft.recovery.is_empty(),
        "no invented outcomes or recovery"
    );
    assert_eq!(draft.entrypoint.url, "{base_url}/");
    let inputs: Vec<&str> = draft
        .inputs
        .iter()
        .map(|input| input.name.as_str())
        .collect();
    assert_eq!(inputs, ["member_number"]);
    let outputs: Vec<(&str, &str)> = draft
        .outputs
        .iter()
        .map(|output| (output.name.as_str(), output.value_type.as_str()))
        .collect();
    assert_eq!(
        outputs,
        [
            ("savings_balance", "money"),
            ("account_status", "string"),
            ("as_of", "date")
        ]
    );
    for step in &draft.steps {
        if !matches!(step.action, Action::Extract { .. }) {
            assert!(
                step.postcondition.is_some(),
                "mutating step `{}` has no postcondition",
                step.id
            );
        }
    }
    assert!(
        draft.provenance.notes.contains("Outcomes"),
        "{}",
        draft.provenance.notes
    );
    assert_eq!(
        draft.provenance.discovered_by.as_ref().unwrap().model,
        "scripted"
    );
}

#[tokio::test]
async fn the_same_trace_compiles_to_the_same_bytes_and_hash() {
    let first_root = tempfile::tempdir().unwrap();
    let second_root = tempfile::tempdir().unwrap();
    let first = discover(first_root.path(), GOAL, true).await;
    let second = discover(second_root.path(), GOAL, true).await;
    let once = compile(&load_run(&first).unwrap(), &config()).unwrap();
    let again = compile(&load_run(&first).unwrap(), &config()).unwrap();
    let other_run = compile(&load_run(&second).unwrap(), &config()).unwrap();
    assert_eq!(once.yaml, again.yaml);
    assert_eq!(
        once.capability.compute_hash(),
        again.capability.compute_hash()
    );
    assert_eq!(
        once.yaml, other_run.yaml,
        "a second identical discovery compiles to the same bytes"
    );
}

#[tokio::test]
async fn sign_on_steps_keep_their_credentials_as_secrets() {
    let root = tempfile::tempdir().unwrap();
    let dir = discover(root.path(), GOAL, false).await;
    let compiled = compile(&load_run(&dir).unwrap(), &config()).unwrap();
    let secrets: Vec<String> = compiled
        .capability
        .steps
        .iter()
        .filter_map(|step| match &step.action {
            Action::Type {
                value: ValueExpr::Secret(name),
                ..
            } => Some(name.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        secrets,
        ["corebank.operator_id", "corebank.operator_password"]
    );
    assert!(!compiled.yaml.contains(desk::PASSWORD) && !compiled.yaml.contains(desk::OPERATOR_ID));
}

#[tokio::test]
async fn a_value_in_a_multi_column_grid_is_read_by_its_column_header_and_keyed_by_its_row() {
    let root = tempfile::tempdir().unwrap();
    let dir = discover(
        root.path(),
        "Report the balance of account C-12345-02 of member 12345.",
        true,
    )
    .await;
    let run = load_run(&dir).unwrap();
    let compiled = compile(&run, &config()).unwrap();
    let draft = &compiled.capability;
    let step = draft
        .steps
        .iter()
        .find(|step| step.id.as_str() == "read_account_balance")
        .unwrap();
    let Action::Extract {
        target, transform, ..
    } = &step.action
    else {
        panic!("not an extract")
    };
    assert_eq!(*transform, Some(cua_artifact::Transform::Money));
    let identity = target
        .identity
        .as_ref()
        .expect("a grid target carries an identity check");
    assert_eq!(identity.column.as_deref(), Some("Account"));
    assert_eq!(
        identity.equals,
        ValueExpr::Input("account".parse().unwrap())
    );
    assert!(
        target
            .anchor
            .as_ref()
            .is_none_or(|anchor| !cua_target::looks_like_datum(&anchor.text)),
        "never anchored on another row's data: {target:?}"
    );
    assert!(
        step.description.contains("\"Balance\" column"),
        "{}",
        step.description
    );
    assert!(
        compiled
            .warnings
            .iter()
            .any(|warning| warning.contains("chosen by position"))
    );

    // On the recorded screen, the target resolves to the Balance cell of the C-12345-02 row.
    let snapshot = run
        .snapshots
        .values()
        .find(|snapshot| snapshot.title == "Member Detail")
        .unwrap();
    let bindings = BoundValues::new()
        .with_input("account".parse().unwrap(), "C-12345-02")
        .with_input("member_number".parse().unwrap(), "12345");
    let resolved = resolve(snapshot, target, &bindings).unwrap();
    assert_eq!(snapshot.nodes[resolved.node].name, "$812.30");
    assert_eq!(
        read_by_column(snapshot, resolved.node, "Balance"),
        Some(resolved.node)
    );
    // The identity check keys the read: asked for the other account, it reads that account's
    // row; asked for an account the grid does not list, it refuses rather than read any row.
    let other = BoundValues::new()
        .with_input("account".parse().unwrap(), "S-12345-01")
        .with_input("member_number".parse().unwrap(), "12345");
    let resolved = resolve(snapshot, target, &other).unwrap();
    assert_eq!(snapshot.nodes[resolved.node].name, "$4,210.55");
    let absent = BoundValues::new()
        .with_input("account".parse().unwrap(), "S-99999-01")
        .with_input("member_number".parse().unwrap(), "12345");
    assert!(resolve(snapshot, target, &absent).is_err());
}

#[tokio::test]
async fn a_run_that_did_not_reach_its_goal_does_not_compile() {
    let root = tempfile::tempdir().unwrap();
    let desk = Desk::new(true, false);
    let (bus, secrets) = desk::bus(root.path(), "disc-0002");
    let server = ScriptedServer::start().await.unwrap();
    let llm = OpenAiAdapter::new(server.model_config()).unwrap();
    let policy = desk::policy();
    let discovery = Discovery {
        driver: &desk,
        policy: &policy,
        bus: &bus,
        llm: &llm,
        secrets: &secrets,
        config: DiscoveryConfig {
            max_steps: 1,
            ..DiscoveryConfig::default()
        },
    };
    discovery
        .run(&DiscoveryRequest::new(GOAL, format!("{BASE}/")))
        .await
        .unwrap();
    let error = compile(&load_run(bus.dir()).unwrap(), &config()).unwrap_err();
    assert!(matches!(error, CompileError::GoalNotMet { .. }), "{error}");
}
