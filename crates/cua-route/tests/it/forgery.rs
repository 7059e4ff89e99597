//! Illegal recovery transitions and forged confirmations are compile errors, not runtime checks.

#[test]
fn illegal_transitions_and_forged_confirmations_do_not_compile() {
    trybuild::TestCases::new().compile_fail("tests/compile_fail/*.rs");
}
