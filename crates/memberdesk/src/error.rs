//! The one error type of the crate: everything that can go wrong starting, driving or inspecting
//! the fixture from Rust (HTTP-level refusals are pages or JSON bodies, not errors).

use std::net::SocketAddr;

/// Everything that can fail when starting, stopping or inspecting a MemberDesk fixture.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// The variant name is not one of the closed set.
    #[error("unknown variant `{given}` (valid variants: {valid})")]
    UnknownVariant {
        /// What was given.
        given: String,
        /// The valid names, comma separated.
        valid: &'static str,
    },
    /// The fault name is not one of the closed set.
    #[error("unknown fault `{given}` (valid faults: {valid})")]
    UnknownFault {
        /// What was given.
        given: String,
        /// The valid names, comma separated.
        valid: &'static str,
    },
    /// A fault count other than -1 (indefinite), 0 (disarm) or a positive count.
    #[error(
        "invalid fault count {count} (use -1 for indefinite, 0 to disarm, or a positive count)"
    )]
    InvalidFaultCount {
        /// What was given.
        count: i64,
    },
    /// An amount that is not a non-negative dollar amount with at most two decimals.
    #[error("invalid amount `{given}`")]
    InvalidAmount {
        /// What was given.
        given: String,
    },
    /// A client reference that is empty, longer than 40 characters, or holds anything but ASCII
    /// letters, digits and dashes.
    #[error("invalid client reference `{given}` (up to 40 letters, digits and dashes)")]
    InvalidClientReference {
        /// What was given.
        given: String,
    },
    /// No account with this number exists.
    #[error("unknown account `{account}`")]
    UnknownAccount {
        /// The account number asked for.
        account: String,
    },
    /// The listening socket could not be bound.
    #[error("cannot bind the fixture to {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why binding failed.
        #[source]
        source: std::io::Error,
    },
    /// The server stopped with an I/O error.
    #[error("the fixture server failed")]
    Serve(#[source] std::io::Error),
    /// The server task panicked or was cancelled.
    #[error("the fixture server task did not finish cleanly")]
    Task(#[source] tokio::task::JoinError),
}
