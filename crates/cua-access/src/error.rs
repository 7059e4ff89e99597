//! What can go wrong setting access up, and why a request is refused.

use std::net::SocketAddr;

use crate::names::ALLOW_REMOTE_FLAG;
use crate::tokens::MIN_TOKEN_CHARS;

/// Why access could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// The operating system gave no randomness for a generated token.
    #[error("no randomness for a token: {reason}")]
    Randomness { reason: String },
    /// The operators file has no operator in it.
    #[error("the operators file names no operator")]
    NoOperator,
    /// A line of the operators file is not `name: token`.
    #[error("line {line}: expected `operator: token`")]
    NotAnOperatorLine { line: usize },
    /// An operator name with characters other than letters, digits, `.`, `_`, `-`.
    #[error("operator name {name:?} is not letters, digits, `.`, `_`, `-`")]
    BadOperatorName { name: String },
    /// A token too short to resist guessing, or with spaces in it.
    #[error("the token of {name} must be at least {MIN_TOKEN_CHARS} characters without spaces")]
    WeakToken { name: String },
    /// Two operators with one token: the token would not say who acts.
    #[error("the token of {name} is also another operator's")]
    SharedToken { name: String },
    /// A non-loopback address without the explicit opt-in.
    #[error(
        "{address} is not a loopback address: pass {ALLOW_REMOTE_FLAG} to serve {server} beyond \
         this machine"
    )]
    NotLoopback {
        address: SocketAddr,
        server: &'static str,
    },
}

/// Why a request was refused before the server looked at what it asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No bearer token was presented.
    #[error(
        "an operator token is required: send `Authorization: Bearer <token>` with the token the \
         server printed at start or one from its operators file"
    )]
    MissingToken,
    /// A token was presented that is no operator's.
    #[error("the token presented is not an operator's token")]
    WrongToken,
    /// The `Host` is not a name the server listens under (DNS rebinding, or a mistyped port).
    #[error(
        "the server does not answer to that Host: only to its loopback names (127.0.0.1, \
         localhost, [::1]) with the port it listens on"
    )]
    BadHost,
    /// The request comes from a page of another origin.
    #[error("requests from another origin are refused")]
    BadOrigin,
}

impl Refusal {
    /// The HTTP status the refusal is answered with.
    pub fn status(self) -> u16 {
        match self {
            Self::MissingToken | Self::WrongToken => 401,
            Self::BadHost => 421,
            Self::BadOrigin => 403,
        }
    }

    /// A stable machine-readable code.
    pub fn code(self) -> &'static str {
        match self {
            Self::MissingToken => "missing_token",
            Self::WrongToken => "wrong_token",
            Self::BadHost => "bad_host",
            Self::BadOrigin => "bad_origin",
        }
    }
}
