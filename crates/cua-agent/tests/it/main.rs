//! Integration tests of discovery: the scripted model over real HTTP through the same adapter a
//! live model uses, the loop against an in-memory desk behind the `SurfaceDriver` port, prompt
//! redaction, the hostile page, budgets and labelling.

#![allow(clippy::unwrap_used, reason = "tests unwrap what they just built")]

mod desk;
mod discovery;
mod model;
