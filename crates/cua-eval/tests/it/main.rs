//! Integration tests of cua-eval: the suite document, scoring, the reports, and the crate's
//! boundaries. The suites run end to end against Chromium in the binary's tests
//! (`tests/it/eval.rs` at the workspace root).
#![allow(
    clippy::unwrap_used,
    reason = "a test fails loudly on the first unexpected error"
)]

mod boundaries;
mod reports;
mod scoring;
mod suites;
mod support;
