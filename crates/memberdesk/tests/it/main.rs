//! Integration tests: real HTTP over loopback against the in-process MemberDesk server, for
//! both variants.

mod api;
mod client_references;
mod faults;
mod hostile;
mod pages;
mod sign_on;
mod subaccounts;
mod support;
mod transfers;
