//! Eval suites: replay a capability over inputs whose truth is known, as often as asked, and
//! report whether a reviewer can trust it to run unattended.
//!
//! - [`EvalSuite`] is the suite document (`cua.eval_suite/v1`, strict YAML): the capability,
//!   an optional tenant, what to run against (a fixture variant or a base URL), setup
//!   capabilities, the cases with their truth (output values or a business outcome) and the
//!   number of repeats.
//! - [`Evaluator`] runs a [`SuitePlan`] on a surface the caller injects: setup once, then every
//!   case round-robin, each run an ordinary replay with its own evidence directory.
//! - [`score`] judges each run against its truth and computes the metrics: runs by status,
//!   **wrong actions** (a run that answered, and answered wrong), unauthorized dispatches (read
//!   back from each run's trace), ambiguity refusals, determinism (identical decision traces
//!   across the repeats of each case), mean drift, fallback rate, strategy mix and replay-time
//!   percentiles.
//! - [`SuiteReport`] renders Markdown, JSON, a static HTML page with inline-SVG charts, and the
//!   `cua.capability_evaluation/v1` document `cua catalog approve --from-eval` reads.
//!
//! Architecture invariant: this crate names no browser and no model. It depends on neither
//! `cua-chromium` nor `cua-agent`; the surface is a [`cua_surface::SurfaceDriver`] the binary
//! injects, and a test that reads `cargo metadata` fails if either appears in its closure.

mod error;
mod report;
mod runner;
pub mod score;
mod suite;

pub use error::EvalError;
pub use report::{REPORT_SCHEMA, SetupRow, SuiteReport, Verdict, WrittenReports, escape_html};
pub use runner::{Evaluator, RunObservation, SetupObservation, SuitePlan, SuiteRuns, no_faults};
pub use suite::{Case, EvalSuite, InputValue, Sensitive, SetupRun, SuiteName, Truth};
