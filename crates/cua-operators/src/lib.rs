//! The concrete operators behind `cua-surface`'s ports: [`HttpServiceClient`] (structured-api,
//! reqwest over rustls) and [`ProcessCommandRunner`] (native-cli, an argv child process).
//!
//! Architecture invariant: each takes only its own witness (`Authorized<HttpRequest>`,
//! `Authorized<CommandInvocation>`), by value, and acts only on what the policy
//! engine put in it: the URL it checked against the allowlist (redirects are never followed),
//! the program path it looked up in `commands.allowed`. Neither knows capabilities, evidence or
//! redaction; the executor redacts what they return. `cua-replay` does not depend on this crate:
//! the binary injects it.

mod command;
mod http;

pub use command::ProcessCommandRunner;
pub use http::HttpServiceClient;
