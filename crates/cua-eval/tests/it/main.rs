//! Integration tests of cua-eval: the suite document, scoring and the reports. The crate's
//! boundary is checked with replay's (`crates/cua-replay/tests/it/boundaries.rs`); the suites
//! run end to end against Chromium in the binary's tests (`tests/it/eval.rs` at the workspace
//! root).
#![allow(
    clippy::unwrap_used,
    reason = "a test fails loudly on the first unexpected error"
)]

mod reports;
mod scoring;
mod suites;
mod support;
