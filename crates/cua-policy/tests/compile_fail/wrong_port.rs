use cua_policy::{Authorized, BrowserAction, CommandInvocation, HttpRequest};

fn send(_request: Authorized<HttpRequest>) {}

// Each port takes only its own witness: a click cannot be sent as a request.
fn misroute(click: Authorized<BrowserAction>) {
    send(click)
}

// Only a read has a spare witness; a command's has no retry at all.
fn rerun(command: &Authorized<CommandInvocation>) -> Option<Authorized<CommandInvocation>> {
    command.retry_of_read()
}

fn main() {}
