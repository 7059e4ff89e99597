//! End-to-end tests of the `cua` binary.

mod architecture;
mod assist;
mod catalog;
mod ci_example;
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
mod junit;
mod kubernetes;
mod manual;
mod mcp;
mod mistakes;
mod options;
mod otel;
mod probe;
mod project;
mod queue;
mod replay;
mod route;
mod schemas;
mod show;
mod vocabulary;

/// The MemberDesk fixture's operator credentials, as the environment variables the sign-on
/// capability's secrets are read from (`secrets.env_prefix` in config/policy.yaml).
pub(crate) const OPERATOR_SECRETS: [(&str, &str); 2] = [
    ("CUA_SECRET_COREBANK_OPERATOR_ID", memberdesk::OPERATOR_ID),
    (
        "CUA_SECRET_COREBANK_OPERATOR_PASSWORD",
        memberdesk::OPERATOR_PASSWORD,
    ),
];
