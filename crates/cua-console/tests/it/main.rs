//! The broker and the console server without a browser: the lease cycle through the queue,
//! claim races, hold expiry, confirmation of irreversible gestures, persistence across a
//! restart, and the server's access, cross-site, traversal and redaction guarantees.

#![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

mod broker;
mod reanchor;
mod record;
mod server;
mod support;
