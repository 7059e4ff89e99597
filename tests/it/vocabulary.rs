//! One action vocabulary: every `ActionKind` is placed in every table that acts on it, and a
//! table that forgets one fails here, not in a run. The policy file allows it (or keeps it for
//! humans); the route planner has a provider for each of its logical actions (or it is a
//! human-only gesture); discovery's model has a tool for it or a reason not to; a demonstration
//! records it or says why not; the compiler compiles what discovery and recording write; codegen
//! translates it or refuses with a reason. The whole table is a snapshot a reviewer reads when a
//! kind is added.

use std::fmt::Write as _;
use std::path::Path;

use cua_artifact::{ActionKind, PolicyConfig};
use cua_route::ProviderRegistry;

fn policy() -> PolicyConfig {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/policy.yaml"))
            .expect("the repository's policy");
    PolicyConfig::from_yaml(&text).expect("a valid policy")
}

#[test]
fn every_action_kind_is_placed_in_every_table() {
    let policy = policy();
    let registry = ProviderRegistry::builtin();
    let tools: Vec<String> = cua_agent::tools::tool_specs()
        .into_iter()
        .map(|spec| spec.name)
        .collect();
    let mut problems = Vec::new();
    let mut table = String::new();
    for kind in ActionKind::ALL {
        let name = kind.as_str();
        assert_eq!(ActionKind::parse(name), Some(kind), "{name} round-trips");
        let human_only = policy.actions.human_only.contains(&kind);
        let policed = if policy.actions.allowed.contains(&kind) {
            "allowed"
        } else if human_only {
            "human only"
        } else {
            problems.push(format!(
                "{name}: config/policy.yaml neither allows it nor keeps it for humans"
            ));
            "MISSING"
        };
        let logical = cua_route::logical_actions(kind);
        if logical.is_empty() && !human_only {
            problems.push(format!(
                "{name}: no logical action, yet not a human-only gesture"
            ));
        }
        let mut routes = Vec::new();
        for action in logical {
            let providers = registry.implementers(*action);
            if providers.is_empty() {
                problems.push(format!(
                    "{name}: no built-in provider performs {}",
                    action.as_str()
                ));
            }
            routes.push(format!(
                "{} by {}",
                action.as_str(),
                providers
                    .iter()
                    .map(|provider| provider.as_str())
                    .collect::<Vec<_>>()
                    .join("/")
            ));
        }
        let tool = cua_agent::tools::tool_for(kind);
        let recorded = cua_console::recorded_as(kind);
        let compiled = cua_compile::compiles(kind);
        if let Ok(tool) = tool {
            if !tools.iter().any(|spec| spec == tool) {
                problems.push(format!(
                    "{name}: the model's tool `{tool}` is not in its tool set"
                ));
            }
            if let Err(why) = compiled {
                problems.push(format!(
                    "{name}: discovery records it, the compiler refuses it: {why}"
                ));
            }
        }
        if recorded.is_ok() && compiled.is_err() {
            problems.push(format!(
                "{name}: a demonstration records it, the compiler refuses it"
            ));
        }
        if recorded.is_ok() && tool.is_err() {
            problems.push(format!(
                "{name}: a demonstration records it under a tool name discovery does not have"
            ));
        }
        let codegen = cua_compile::codegen::refusal(kind);
        let stance = |decided: Result<&str, &str>| match decided {
            Ok(how) => format!("yes ({how})"),
            Err(why) => format!("no: {why}"),
        };
        writeln!(
            table,
            "{name}\n  policy: {policed}\n  routes: {}\n  discovery tool: {}\n  recorded: {}\n  compiled: {}\n  codegen: {}",
            if routes.is_empty() { "none".to_owned() } else { routes.join(", ") },
            stance(tool),
            stance(recorded),
            stance(compiled.map(|()| "from a trace")),
            codegen.map_or_else(|| "translated".to_owned(), |why| format!("refused: {why}")),
        )
        .expect("writing to a string");
    }
    // And the other way: every acting tool the model has is an action kind.
    for tool in &tools {
        if !matches!(tool.as_str(), "observe" | "finish") && ActionKind::parse(tool).is_none() {
            problems.push(format!("the model's tool `{tool}` is no action kind"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    insta::assert_snapshot!("action_vocabulary", table);
}
