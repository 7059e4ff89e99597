//! Integration tests of the compiler: traces recorded by real discovery runs (the scripted
//! model over HTTP, the in-memory desk behind the `SurfaceDriver` port) compile into drafts;
//! capabilities become Playwright specs (codegen); recorded runs are probed for drift.

#![allow(clippy::unwrap_used, reason = "tests unwrap what they just built")]

#[path = "../../../cua-agent/tests/it/desk.rs"]
#[allow(
    dead_code,
    reason = "the desk is shared with cua-agent's tests, which use all of it"
)]
mod desk;

mod codegen;
mod compile;
mod probe;
