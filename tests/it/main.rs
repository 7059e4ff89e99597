//! End-to-end tests of the `cua` binary.

mod architecture;
mod assist;
mod catalog;
mod codegen;
mod conformance;
mod console;
mod crash;
mod demo;
mod discover;
mod documents;
mod draft_replay;
mod eval;
mod evidence;
mod exactly_once;
mod hostile_paths;
mod kubernetes;
mod mcp;
mod mistakes;
mod options;
mod probe;
mod project;
mod queue;
mod replay;
mod route;
mod show;
mod vocabulary;
