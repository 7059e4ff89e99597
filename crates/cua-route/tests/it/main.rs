//! Integration tests for `cua-route`: the seed's conformance properties, data-driven.

mod determinism;
mod forgery;
mod observation;
mod planner;
mod recovery;
mod support;
mod verdict;
