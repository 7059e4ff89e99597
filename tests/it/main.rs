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

/// The first line a spawned process writes on its piped stdout (a port, a URL, a ready line),
/// without its newline; the rest of its output is left unread.
pub(crate) fn first_line(child: &mut std::process::Child) -> String {
    use std::io::BufRead as _;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout is piped"))
        .read_line(&mut line)
        .expect("the process writes a first line");
    line.trim_end_matches(['\r', '\n']).to_owned()
}
