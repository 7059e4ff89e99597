//! The scripted model through the OpenAI-compatible adapter.

use cua_agent::scripted::ScriptedServer;
use cua_agent::tools::tool_specs;
use cua_agent::{AgentError, LlmPort, Message, ModelConfig, ModelRequest, OpenAiAdapter};

#[tokio::test]
async fn the_scripted_model_answers_through_the_openai_adapter_and_says_so() {
    let server = ScriptedServer::start().await.unwrap();
    let adapter = OpenAiAdapter::new(server.model_config()).unwrap();
    let request = ModelRequest {
        messages: vec![
            Message::System("rules".into()),
            Message::User("Goal: Look up member 12345 and report the savings balance".into()),
            Message::User(
                "Current screen:\nframe content:\n  n3 table (1 rows):\n    n4 row: n5 cell \"Member Number\" | n7 textbox \"Member Number\" = \"\""
                    .into(),
            ),
        ],
        tools: tool_specs(),
    };
    let reply = adapter.complete(&request).await.unwrap();
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].name, "type");
    assert!(
        reply.tool_calls[0].arguments.contains("\"n7\""),
        "{:?}",
        reply.tool_calls[0]
    );
    assert_eq!(reply.meta.model, "scripted");
    assert_eq!(reply.meta.provider, "scripted");
    assert_eq!(reply.meta.request_id.as_deref(), Some("scripted-1"));
    assert!(reply.meta.scripted);
    assert!(reply.usage.prompt_tokens > 0);

    let bodies = server.requests();
    assert_eq!(bodies.len(), 1);
    let body: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(body["model"], "scripted");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["tool_choice"], "auto");
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "observe",
            "click",
            "type",
            "select",
            "press_key",
            "navigate",
            "extract",
            "finish"
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_dead_endpoint_is_a_model_error_not_a_retry_loop() {
    let server = ScriptedServer::start().await.unwrap();
    let config = server.model_config();
    server.shutdown().await;
    let adapter = OpenAiAdapter::new(config).unwrap();
    let request = ModelRequest {
        messages: vec![Message::User("Goal: x".into())],
        tools: tool_specs(),
    };
    let error = adapter.complete(&request).await.unwrap_err();
    assert!(matches!(error, AgentError::ModelCall { .. }), "{error}");
}

#[test]
fn without_a_configured_model_the_error_says_how_to_configure_one_or_use_scripted() {
    let error = ModelConfig::from_lookup(|_| None).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("CUA_LLM_BASE_URL"), "{message}");
    assert!(message.contains("--scripted"), "{message}");
    let only_url =
        |name: &str| (name == "CUA_LLM_BASE_URL").then(|| "http://127.0.0.1:1/v1".to_owned());
    assert!(
        ModelConfig::from_lookup(only_url)
            .unwrap_err()
            .to_string()
            .contains("CUA_LLM_MODEL")
    );
    let config = ModelConfig::from_lookup(|name| match name {
        "CUA_LLM_BASE_URL" => Some("http://127.0.0.1:1/v1".into()),
        "CUA_LLM_MODEL" => Some("qwen".into()),
        "CUA_LLM_API_KEY" => Some("sk-never-printed".into()),
        _ => None,
    })
    .unwrap();
    assert!(!format!("{config:?}").contains("sk-never-printed"));
    assert!(!config.scripted);
}
