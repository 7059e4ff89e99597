//! Integration tests of cua-assist: which stopped runs may be assisted, and what becomes of a
//! proposal, against the MemberDesk fixture in real Chromium with a canned model.
#![allow(
    clippy::unwrap_used,
    reason = "a test fails loudly on the first unexpected error"
)]

mod eligibility;
mod proposals;
mod support;
