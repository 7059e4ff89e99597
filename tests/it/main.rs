//! End-to-end tests of the `cua` binary.

mod catalog;
mod codegen;
mod discover;
mod documents;
mod evidence;
mod probe;
mod replay;
mod route;
