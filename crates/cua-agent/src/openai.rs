//! The real model adapter: `async-openai` against any OpenAI-compatible `/chat/completions`
//! endpoint (vLLM, llama.cpp server, Ollama, hosted gateways), temperature 0, tool choice
//! `auto`, and no retries: a model error ends the call and the loop records it.
//!
//! The client's default transport retries 429s and 5xx and hides the response headers. This
//! adapter installs its own transport (async-openai's middleware hook) that sends once and keeps
//! the headers, so the `llm_call` event can carry the gateway's request id and provider.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls,
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestToolMessage,
    ChatCompletionRequestToolMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, ChatCompletionTool, ChatCompletionToolChoiceOption,
    ChatCompletionTools, CreateChatCompletionRequest, FunctionCall, FunctionObject,
    ToolChoiceOptions,
};
use reqwest::header::HeaderMap;

use crate::error::AgentError;
use crate::llm::{
    CallMeta, LlmPort, Message, ModelConfig, ModelReply, ModelRequest, ToolCall, Usage,
};

/// Response headers that carry the endpoint's request id, in the order they are tried.
pub const REQUEST_ID_HEADERS: [&str; 3] = ["x-request-id", "request-id", "x-omniroute-request-id"];
/// Response headers that name the provider behind a gateway, in the order they are tried.
pub const PROVIDER_HEADERS: [&str; 2] = ["x-provider", "x-omniroute-provider"];
/// The model name the scripted model answers with; an answer under it is labelled scripted.
pub const SCRIPTED_MODEL_NAME: &str = "scripted";

/// [`LlmPort`] over an OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiAdapter {
    config: ModelConfig,
    http: reqwest::Client,
}

impl OpenAiAdapter {
    /// An adapter for the endpoint. TLS is rustls with the ring provider.
    pub fn new(config: ModelConfig) -> Result<Self, AgentError> {
        if !(config.base_url.starts_with("http://") || config.base_url.starts_with("https://")) {
            return Err(AgentError::InvalidModelConfig {
                reason: format!(
                    "the base URL {:?} must start with http:// or https://",
                    config.base_url
                ),
            });
        }
        // reqwest is built without a compiled-in crypto provider; ring is installed once for
        // the process. A provider installed earlier (by anyone) is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(AgentError::HttpClient)?;
        Ok(Self { config, http })
    }

    /// The configuration this adapter calls with.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }
}

impl LlmPort for OpenAiAdapter {
    fn model(&self) -> &str {
        &self.config.model
    }

    fn scripted(&self) -> bool {
        self.config.scripted
    }

    fn complete(
        &self,
        request: &ModelRequest,
    ) -> impl Future<Output = Result<ModelReply, AgentError>> + Send {
        let body = chat_request(&self.config.model, request);
        let headers = Arc::new(Mutex::new(None));
        let transport = HeaderCapture {
            http: self.http.clone(),
            headers: Arc::clone(&headers),
        };
        let openai = OpenAIConfig::new()
            .with_api_base(self.config.base_url.trim_end_matches('/'))
            .with_api_key(self.config.api_key.clone().unwrap_or_default());
        let client = Client::with_config(openai).with_http_service(transport);
        let scripted_config = self.config.scripted;
        let fallback_provider = host_of(&self.config.base_url);
        async move {
            let started = Instant::now();
            let result = client.chat().create(body).await;
            let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let response = result.map_err(|error| AgentError::ModelCall {
                reason: error.to_string(),
            })?;
            let headers = headers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .unwrap_or_default();
            let header = |names: &[&str]| {
                names.iter().find_map(|name| {
                    headers
                        .get(*name)
                        .and_then(|value| value.to_str().ok())
                        .map(str::to_owned)
                })
            };
            let choice =
                response
                    .choices
                    .into_iter()
                    .next()
                    .ok_or_else(|| AgentError::ModelAnswer {
                        reason: "the completion has no choices".to_owned(),
                    })?;
            let tool_calls = choice
                .message
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .filter_map(|call| match call {
                    ChatCompletionMessageToolCalls::Function(call) => Some(ToolCall {
                        id: call.id,
                        name: call.function.name,
                        arguments: call.function.arguments,
                    }),
                    ChatCompletionMessageToolCalls::Custom(_) => None,
                })
                .collect();
            let usage = response.usage.map_or(Usage::default(), |usage| Usage {
                prompt_tokens: u64::from(usage.prompt_tokens),
                completion_tokens: u64::from(usage.completion_tokens),
            });
            let scripted = scripted_config
                || response.model == SCRIPTED_MODEL_NAME
                || header(&["x-cua-scripted"]).is_some();
            Ok(ModelReply {
                content: choice
                    .message
                    .content
                    .filter(|text| !text.trim().is_empty()),
                tool_calls,
                usage,
                meta: CallMeta {
                    model: response.model,
                    provider: header(&PROVIDER_HEADERS).unwrap_or(fallback_provider),
                    request_id: header(&REQUEST_ID_HEADERS),
                    latency_ms,
                    scripted,
                },
            })
        }
    }
}

/// The chat completion request: temperature 0, every tool offered, tool choice `auto`.
fn chat_request(model: &str, request: &ModelRequest) -> CreateChatCompletionRequest {
    let messages = request.messages.iter().map(message).collect();
    let tools = request
        .tools
        .iter()
        .map(|tool| {
            ChatCompletionTools::Function(ChatCompletionTool {
                function: FunctionObject {
                    name: tool.name.clone(),
                    description: Some(tool.description.clone()),
                    parameters: Some(tool.parameters.clone()),
                    strict: None,
                },
            })
        })
        .collect();
    CreateChatCompletionRequest {
        model: model.to_owned(),
        messages,
        temperature: Some(0.0),
        tools: Some(tools),
        tool_choice: Some(ChatCompletionToolChoiceOption::Mode(
            ToolChoiceOptions::Auto,
        )),
        ..CreateChatCompletionRequest::default()
    }
}

fn message(message: &Message) -> ChatCompletionRequestMessage {
    match message {
        Message::System(text) => {
            ChatCompletionRequestMessage::System(ChatCompletionRequestSystemMessage {
                content: ChatCompletionRequestSystemMessageContent::Text(text.clone()),
                name: None,
            })
        }
        Message::User(text) => {
            ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
                content: ChatCompletionRequestUserMessageContent::Text(text.clone()),
                name: None,
            })
        }
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let calls: Vec<ChatCompletionMessageToolCalls> = tool_calls
                .iter()
                .map(|call| {
                    ChatCompletionMessageToolCalls::Function(ChatCompletionMessageToolCall {
                        id: call.id.clone(),
                        function: FunctionCall {
                            name: call.name.clone(),
                            arguments: call.arguments.clone(),
                        },
                    })
                })
                .collect();
            #[expect(
                deprecated,
                reason = "the struct still carries the deprecated function_call"
            )]
            let assistant = ChatCompletionRequestAssistantMessage {
                content: content
                    .clone()
                    .map(ChatCompletionRequestAssistantMessageContent::Text),
                refusal: None,
                name: None,
                audio: None,
                tool_calls: (!calls.is_empty()).then_some(calls),
                function_call: None,
            };
            ChatCompletionRequestMessage::Assistant(assistant)
        }
        Message::Tool { call_id, content } => {
            ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
                content: ChatCompletionRequestToolMessageContent::Text(content.clone()),
                tool_call_id: call_id.clone(),
            })
        }
    }
}

/// The host (and port) of a URL, for naming the provider when no header does.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split(['/', '?', '#'])
        .next()
        .unwrap_or_default()
        .rsplit('@')
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The transport: send once (no retry layer), keep the response headers for the caller.
#[derive(Clone)]
struct HeaderCapture {
    http: reqwest::Client,
    headers: Arc<Mutex<Option<HeaderMap>>>,
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

impl tower_service::Service<HttpRequestFactory> for HeaderCapture {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _context: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let http = self.http.clone();
        let headers = Arc::clone(&self.headers);
        Box::pin(async move {
            let request = factory.build().await?;
            let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
            *headers.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(response.headers().clone());
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provider_falls_back_to_the_endpoint_host() {
        assert_eq!(host_of("http://127.0.0.1:8000/v1"), "127.0.0.1:8000");
        assert_eq!(
            host_of("https://user@gateway.example/api/v1"),
            "gateway.example"
        );
        assert_eq!(host_of("gateway"), "gateway");
    }
}
