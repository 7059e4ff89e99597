//! Model-driven discovery: the run where the model is allowed to be uncertain, once.
//!
//! - [`LlmPort`] is the model port; [`OpenAiAdapter`] implements it with `async-openai` against
//!   any OpenAI-compatible endpoint (temperature 0, tool calling, no retries), reading the
//!   gateway's request id and provider from the response headers.
//! - [`tools`] is the closed action space (observe, click, type, select, press_key, navigate,
//!   extract, finish) and how a tool call names its target: a node ref from the outline, which
//!   the loop turns into a synthesized semantic descriptor, or a descriptor the model writes.
//! - [`render`] turns a snapshot into the compact, folded, redacted outline the model reads.
//! - [`Discovery`] is the loop: it acts only through resolve → authorize → dispatch → evidence
//!   as actor `agent`, records every model call as `llm_call` and every proposal as an
//!   `agent_action` note, and stops on finish or on a budget (steps, tokens, wall time).
//! - [`scripted`] is an OpenAI-compatible HTTP server on loopback that plays a scripted model,
//!   choosing tool calls by rules over the rendered screen in each request; tests and the
//!   offline demo reach it through the same adapter, and its runs say `scripted` everywhere.
//!
//! Architecture invariant: nothing here reaches a surface except through
//! `PolicyEngine::authorize`; no secret or sensitive input value is ever part of a prompt (the
//! model types `{$secret: name}` and `{$input: name}` placeholders bound at dispatch, and every
//! outline and tool result passes through the run's redactor). `cua-replay` never depends on
//! this crate.

mod discover;
mod error;
mod llm;
mod openai;
pub mod render;
pub mod scripted;
pub mod tools;

pub use discover::{
    ACTION_NOTE, Discovery, DiscoveryConfig, DiscoveryReport, DiscoveryRequest, PHASE_NOTE,
    Refusal, StopReason,
};
pub use error::AgentError;
pub use llm::{
    API_KEY_ENV, BASE_URL_ENV, CallMeta, LlmPort, MODEL_ENV, Message, ModelConfig, ModelReply,
    ModelRequest, TIMEOUT_ENV, ToolCall, ToolSpec, Usage,
};
pub use openai::{OpenAiAdapter, PROVIDER_HEADERS, REQUEST_ID_HEADERS, SCRIPTED_MODEL_NAME};
