//! `cua-mcp` through its public API: the tool list a client sees (snapshotted), and every way a
//! call is refused before anything runs, with a surface factory that counts what it opens.

#![allow(
    clippy::unwrap_used,
    reason = "integration tests: a panic is the failure report"
)]

mod calls;
mod http;
mod support;
mod tools;
