//! Invariant: an `AuthorizedAction` cannot be built outside `cua-policy`, nor copied to be
//! dispatched twice.

#[test]
fn forging_an_authorized_action_does_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/compile_fail/*.rs");
}
