//! End-to-end tests of the `cua` binary.

mod documents;
mod evidence;
