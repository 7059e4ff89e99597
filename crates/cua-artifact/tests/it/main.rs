//! Integration tests of the document family: strict YAML, round trips, content hashing, every
//! validation rule, tenant overlays, schema freshness and the reference artifacts.

mod documents;
mod fuzz;
mod hashing;
mod invalid;
mod operators;
mod overlay;
mod properties;
mod references;
mod round_trip;
mod rules;
mod schemas;
mod strict_yaml;
mod support;
mod warnings;
