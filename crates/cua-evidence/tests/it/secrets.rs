//! The secret resolver: where secrets come from, what a missing one says, and that every value
//! it issues is scrubbed from then on.

use cua_artifact::SecretName;
use cua_evidence::{DEFAULT_ENV_PREFIX, Redactor, SecretResolver, env_var};

fn name(text: &str) -> SecretName {
    SecretName::parse(text).expect("a valid secret name")
}

#[test]
fn secret_names_map_to_environment_variables() {
    let check = |name: &str, expect: &str| assert_eq!(env_var(DEFAULT_ENV_PREFIX, name), expect);
    check(
        "corebank.operator_password",
        "CUA_SECRET_COREBANK_OPERATOR_PASSWORD",
    );
    check("corebank.operator_id", "CUA_SECRET_COREBANK_OPERATOR_ID");
    check("a.b-c.d_e", "CUA_SECRET_A_B_C_D_E");
    let resolver =
        SecretResolver::new("ACME_", Vec::<(String, String)>::new(), Redactor::default());
    assert_eq!(resolver.env_var(&name("sso.token")), "ACME_SSO_TOKEN");
}

#[test]
fn a_missing_secret_names_the_variable_to_set() {
    let resolver = SecretResolver::new(
        DEFAULT_ENV_PREFIX,
        [("PATH", "/usr/bin"), ("CUA_SECRET_OTHER", "something")],
        Redactor::default(),
    );
    let error = resolver
        .resolve(&name("corebank.operator_id"))
        .expect_err("not set");
    assert_eq!(
        error.to_string(),
        "secret `corebank.operator_id` is not set: set the environment variable \
         CUA_SECRET_COREBANK_OPERATOR_ID"
    );
    // Variables outside the prefix are not read, even when the name would map to them.
    let outside = SecretResolver::new(
        DEFAULT_ENV_PREFIX,
        [("PATH", "/usr/bin")],
        Redactor::default(),
    );
    assert!(outside.resolve(&name("path")).is_err());
}

#[test]
fn every_issued_value_is_registered_with_the_redactor_as_it_is_issued() {
    let redactor = Redactor::default();
    let resolver = SecretResolver::new(
        DEFAULT_ENV_PREFIX,
        [("CUA_SECRET_COREBANK_OPERATOR_PASSWORD", "Pa55word-xyz")],
        redactor.clone(),
    );
    assert!(redactor.is_clean("typed Pa55word-xyz"), "not issued yet");
    let value = resolver
        .resolve(&name("corebank.operator_password"))
        .expect("set");
    assert_eq!(value.expose(), "Pa55word-xyz");
    assert_eq!(
        redactor.redact_text("typed Pa55word-xyz"),
        "typed <redacted:secret>"
    );
    // Neither the value nor the resolver prints the secret.
    assert_eq!(format!("{value:?}"), "SecretValue(<12 chars>)");
    let debug = format!("{resolver:?}");
    assert!(!debug.contains("Pa55word"), "{debug}");
    assert!(
        debug.contains("CUA_SECRET_COREBANK_OPERATOR_PASSWORD"),
        "{debug}"
    );
}

#[test]
fn an_override_wins_over_the_environment_and_is_registered_too() {
    let redactor = Redactor::default();
    let resolver = SecretResolver::new(
        DEFAULT_ENV_PREFIX,
        [("CUA_SECRET_COREBANK_OPERATOR_ID", "operator-env")],
        redactor.clone(),
    )
    .with_override(name("corebank.operator_id"), "operator-override");
    let value = resolver
        .resolve(&name("corebank.operator_id"))
        .expect("set");
    assert_eq!(value.expose(), "operator-override");
    assert!(!redactor.is_clean("operator-override"));
    assert!(
        redactor.is_clean("operator-env"),
        "never issued, never registered"
    );
}

#[test]
fn a_secret_too_short_to_scrub_is_refused() {
    let resolver = SecretResolver::new(
        DEFAULT_ENV_PREFIX,
        [("CUA_SECRET_KIOSK_PIN", "123")],
        Redactor::default(),
    );
    let error = resolver.resolve(&name("kiosk.pin")).expect_err("too short");
    assert_eq!(
        error.to_string(),
        "secret `kiosk.pin` (from CUA_SECRET_KIOSK_PIN) is shorter than 4 characters, too short \
         to be scrubbed from evidence reliably; refusing to issue it"
    );
}

#[test]
fn the_process_environment_is_read_with_the_default_prefix() {
    // Whatever the environment holds, an unset name is reported with the default prefix.
    let resolver = SecretResolver::from_process_env(Redactor::default());
    let error = resolver
        .resolve(&name("cua_evidence_test.surely_unset"))
        .expect_err("unset");
    assert!(
        error
            .to_string()
            .ends_with("CUA_SECRET_CUA_EVIDENCE_TEST_SURELY_UNSET"),
        "{error}"
    );
}

#[test]
fn checking_a_secret_issues_nothing_and_refuses_what_resolve_would() {
    let redactor = Redactor::default();
    let resolver = SecretResolver::new(
        DEFAULT_ENV_PREFIX,
        [
            ("CUA_SECRET_COREBANK_OPERATOR_ID", "op-7731"),
            ("CUA_SECRET_SHORT", "abc"),
        ],
        redactor.clone(),
    );
    resolver
        .check(&name("corebank.operator_id"))
        .expect("it is set");
    assert_eq!(
        redactor.redact_text("op-7731"),
        "op-7731",
        "a check registers nothing"
    );
    assert!(resolver.check(&name("corebank.password")).is_err());
    assert!(resolver.check(&name("short")).is_err());
}
