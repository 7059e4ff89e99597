//! End-to-end tests of the `cua` binary.

mod catalog;
mod console;
mod discover;
mod documents;
mod evidence;
mod replay;
