//! `AgentError`, the crate's one error type.

use cua_evidence::EvidenceError;

/// Why discovery, a model call or the scripted model server could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// No model endpoint is configured.
    #[error(
        "no model is configured: set {missing} (and CUA_LLM_API_KEY if the endpoint needs one), \
         or pass --scripted to use the built-in scripted model"
    )]
    ModelNotConfigured { missing: &'static str },
    /// The model configuration holds a value that cannot be used.
    #[error("the model configuration is invalid: {reason}")]
    InvalidModelConfig { reason: String },
    /// The HTTP client for the model endpoint could not be built.
    #[error("the HTTP client for the model could not be built")]
    HttpClient(#[source] reqwest::Error),
    /// The model endpoint answered with an error or not at all. Model errors are not retried.
    #[error("the model call failed: {reason}")]
    ModelCall { reason: String },
    /// The model answered with something that is not a usable chat completion.
    #[error("the model's answer is unusable: {reason}")]
    ModelAnswer { reason: String },
    /// The scripted model server could not bind its loopback port.
    #[error("the scripted model server could not listen on loopback")]
    ScriptedServer(#[source] std::io::Error),
    /// The discovery target URL is not a URL the policy lets the agent open.
    #[error("the target {url} is refused: {reason}")]
    TargetRefused { url: String, reason: String },
    /// The sign-in capability given to discovery cannot be used.
    #[error("the sign-in capability cannot be used: {reason}")]
    SignIn { reason: String },
    /// The surface failed in a way that ends the run.
    #[error("the surface failed: {reason}")]
    Surface { reason: String },
    /// Evidence could not be written; a discovery without its trace is not carried on.
    #[error("evidence could not be written")]
    Evidence(#[from] EvidenceError),
}
