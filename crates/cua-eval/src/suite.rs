//! The eval suite document (`cua.eval_suite/v1`) is one of cua's documents, defined with the
//! others in `cua-artifact` (so `cua validate` and `cua schema` know it); this crate reads it
//! and runs it.

pub use cua_artifact::{Case, EvalSuite, InputValue, Sensitive, SetupRun, SuiteName, Truth};
