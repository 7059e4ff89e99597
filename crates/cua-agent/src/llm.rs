//! The model port: one chat turn with the closed tool set, answered by a reply, its token usage
//! and where it came from. The discovery loop speaks only this; the OpenAI-compatible adapter
//! and test doubles implement it.

use std::future::Future;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::AgentError;

/// One message of the conversation, in the shape every OpenAI-compatible endpoint accepts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Message {
    System(String),
    User(String),
    /// What the model answered: optional text and the tool calls it made.
    Assistant {
        content: Option<String>,
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, answered to the model.
    Tool {
        call_id: String,
        content: String,
    },
}

/// One tool call the model made: its id, the tool's name and the JSON arguments as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A tool offered to the model: name, description and JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// One request to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}

/// Tokens one call consumed, as the endpoint reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Usage {
    /// Prompt plus completion.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// Where an answer came from, for the `llm_call` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallMeta {
    /// The model that answered, as the endpoint named it.
    pub model: String,
    /// The provider behind the endpoint (`x-provider`), or the endpoint's host.
    pub provider: String,
    /// The endpoint's request id (`x-request-id`, `request-id`), when it sent one.
    pub request_id: Option<String>,
    pub latency_ms: u64,
    /// Whether the answer came from the scripted model rather than a live one.
    pub scripted: bool,
}

/// The model's answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    /// Free text the model wrote besides its tool calls (its stated reasoning).
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub meta: CallMeta,
}

impl ModelReply {
    /// The `llm_call` event of this reply, made for `purpose`; `scripted` when the model was
    /// the scripted one, whatever the reply says.
    pub fn llm_call(&self, purpose: &str, scripted: bool) -> cua_evidence::LlmCall {
        cua_evidence::LlmCall {
            model: self.meta.model.clone(),
            provider: self.meta.provider.clone(),
            scripted: self.meta.scripted || scripted,
            request_id: self.meta.request_id.clone(),
            prompt_tokens: self.usage.prompt_tokens,
            completion_tokens: self.usage.completion_tokens,
            reasoning: self.content.clone().unwrap_or_default(),
            tool_calls: self
                .tool_calls
                .iter()
                .map(|call| call.name.clone())
                .collect(),
            purpose: Some(purpose.to_owned()),
        }
    }
}

/// The port the discovery loop calls the model through.
pub trait LlmPort: Send + Sync {
    /// The model name requested, for `run_start`.
    fn model(&self) -> &str;

    /// Whether this port talks to the scripted model. A scripted run says so in every record.
    fn scripted(&self) -> bool;

    /// One chat completion with tools, temperature 0, no retries.
    fn complete(
        &self,
        request: &ModelRequest,
    ) -> impl Future<Output = Result<ModelReply, AgentError>> + Send;
}

/// The environment variable naming the endpoint's base URL (`…/v1`).
pub const BASE_URL_ENV: &str = "CUA_LLM_BASE_URL";
/// The environment variable naming the model.
pub const MODEL_ENV: &str = "CUA_LLM_MODEL";
/// The environment variable holding the endpoint's API key, if it needs one.
pub const API_KEY_ENV: &str = "CUA_LLM_API_KEY";
/// The environment variable bounding one model call, in seconds.
pub const TIMEOUT_ENV: &str = "CUA_LLM_TIMEOUT_S";

/// Where and how to call the model.
#[derive(Clone, PartialEq, Eq)]
pub struct ModelConfig {
    /// The OpenAI-compatible base URL, e.g. `http://127.0.0.1:8000/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    /// The bound on one call.
    pub timeout: Duration,
    /// Set when the endpoint is the scripted model: every record says `scripted`.
    pub scripted: bool,
}

impl ModelConfig {
    /// The default bound on one model call.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

    /// A configuration for a live endpoint.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: Self::DEFAULT_TIMEOUT,
            scripted: false,
        }
    }

    /// Reads `CUA_LLM_BASE_URL`, `CUA_LLM_MODEL`, `CUA_LLM_API_KEY` and `CUA_LLM_TIMEOUT_S` from
    /// `lookup` (the process environment in production). Both the base URL and the model are
    /// required; a missing one names the variable to set.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, AgentError> {
        let present = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let base_url = present(BASE_URL_ENV).ok_or(AgentError::ModelNotConfigured {
            missing: BASE_URL_ENV,
        })?;
        let model =
            present(MODEL_ENV).ok_or(AgentError::ModelNotConfigured { missing: MODEL_ENV })?;
        let timeout = match present(TIMEOUT_ENV) {
            None => Self::DEFAULT_TIMEOUT,
            Some(text) => Duration::from_secs(text.trim().parse::<u64>().map_err(|_| {
                AgentError::InvalidModelConfig {
                    reason: format!("{TIMEOUT_ENV}={text:?} is not a whole number of seconds"),
                }
            })?),
        };
        Ok(Self {
            base_url,
            model,
            api_key: present(API_KEY_ENV),
            timeout,
            scripted: false,
        })
    }

    /// [`ModelConfig::from_lookup`] over the process environment.
    pub fn from_env() -> Result<Self, AgentError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Whether a model is configured in `lookup` at all (both the base URL and the model).
    pub fn is_configured(lookup: impl Fn(&str) -> Option<String>) -> bool {
        let present = |name: &str| lookup(name).is_some_and(|value| !value.trim().is_empty());
        present(BASE_URL_ENV) && present(MODEL_ENV)
    }
}

impl std::fmt::Debug for ModelConfig {
    /// Never prints the API key.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ModelConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("timeout", &self.timeout)
            .field("scripted", &self.scripted)
            .finish()
    }
}
