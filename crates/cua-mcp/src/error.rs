//! What can stop the tool server itself. A refused or failed tool call is not one of these: it
//! is a tool result with `isError: true` that the calling agent reads.

use std::net::SocketAddr;

/// Why the server could not start or keep serving.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The catalog directory could not be listed.
    #[error("cannot read the catalog")]
    Catalog(#[source] cua_catalog::CatalogError),
    /// The policy does not make an engine.
    #[error("the policy is invalid")]
    Policy(#[source] cua_policy::PolicyError),
    /// The policy's redaction rules do not compile.
    #[error("the policy's redaction rules are invalid")]
    Redaction(#[source] cua_evidence::EvidenceError),
    /// The operating system gave no randomness for the plan key.
    #[error("no randomness for the plan approval key: {reason}")]
    Randomness { reason: String },
    /// `serve` was asked to listen beyond this machine without the explicit opt-in.
    #[error(transparent)]
    Access(#[from] cua_access::AccessError),
    /// The listening socket could not be bound.
    #[error("cannot listen on {address}")]
    Bind {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The transport ended with an error.
    #[error("the MCP transport failed: {reason}")]
    Transport { reason: String },
}
