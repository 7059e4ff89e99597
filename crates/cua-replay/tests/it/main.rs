//! Integration tests of the replay executor: preflight refusals on a recording surface, the
//! crate boundary from `cargo metadata`, and everything else against the real fixture in
//! Chromium.
#![allow(
    clippy::unwrap_used,
    reason = "tests fail loudly on the first surprise"
)]

mod batch;
mod boundaries;
mod deep_link;
mod fake;
mod invariants;
mod live;
mod operators;
mod preflight;
mod scenarios;
mod support;
mod transfer;
mod visual;
