//! End-to-end tests of the `cua` binary.

mod catalog;
mod documents;
mod evidence;
