//! The hand-written reference artifacts and `config/policy.yaml` are valid, sealed and agree with
//! each other.

use cua_artifact::{
    Action, ActionKind, Capability, PolicyConfig, RiskLexicon, RiskTier, SealState,
    ValidationConfig, check_source, validate_capability,
};
use regex::Regex;

use crate::support::{REFERENCE_CAPABILITIES, read, reference, reference_text};

fn policy() -> PolicyConfig {
    PolicyConfig::from_yaml(&read("config/policy.yaml"))
        .expect("config/policy.yaml loads and validates")
}

#[test]
fn reference_capabilities_are_valid_and_sealed() {
    for file_name in REFERENCE_CAPABILITIES {
        let text = reference_text(file_name);
        let checked = check_source(file_name, &text);
        assert!(
            checked.is_valid(),
            "{file_name}: {}",
            cua_artifact::render_plain(&checked.diagnostics)
        );
        assert!(
            checked.warnings.is_empty(),
            "{file_name}: {}",
            cua_artifact::render_plain(&checked.warnings)
        );
        let capability = reference(file_name);
        assert!(
            matches!(checked.seal, Some(SealState::Sealed(_))),
            "{file_name} must be sealed: run `cua seal`"
        );
        assert_eq!(
            capability.reference().file_name(),
            file_name,
            "the file is named after its reference"
        );
    }
}

#[test]
fn the_reference_artifacts_have_the_risk_they_claim() {
    let risks: Vec<(String, RiskTier)> = REFERENCE_CAPABILITIES
        .iter()
        .map(|file_name| {
            let capability = reference(file_name);
            (capability.id.to_string(), capability.max_risk())
        })
        .collect();
    insta::assert_debug_snapshot!(risks);
    let transfer = reference("corebank.member.transfer_funds@1.0.0.yaml");
    let irreversible: Vec<&str> = transfer
        .steps
        .iter()
        .filter(|step| step.risk == RiskTier::Irreversible)
        .map(|step| step.id.as_str())
        .collect();
    assert_eq!(irreversible, ["post_transfer"]);
    // No recovery rule may re-run the irreversible step or anything after it.
    for rule in &transfer.recovery {
        assert!(
            !rule.steps.iter().any(
                |step| step.as_str() == "post_transfer" || step.as_str() == "read_confirmation"
            )
        );
    }
    // Nothing is chosen by position: the balance read is keyed by the account the caller named.
    let positional: Vec<&str> = transfer
        .steps
        .iter()
        .filter(|step| {
            step.action
                .target()
                .is_some_and(|target| target.ordinal.is_some())
        })
        .map(|step| step.id.as_str())
        .collect();
    assert!(positional.is_empty(), "{positional:?}");
    let keyed: Vec<(&str, String)> = transfer
        .steps
        .iter()
        .filter_map(|step| {
            let identity = step.action.target()?.identity.as_ref()?;
            Some((
                step.id.as_str(),
                serde_json::to_string(&identity.equals).ok()?,
            ))
        })
        .collect();
    assert_eq!(
        keyed,
        [(
            "read_from_balance",
            r#"{"$input":"from_account"}"#.to_owned()
        )]
    );
}

#[test]
fn reference_artifacts_stay_inside_the_global_policy() {
    let policy = policy();
    for file_name in REFERENCE_CAPABILITIES {
        let capability = reference(file_name);
        for action in &capability.policy.allowed_actions {
            assert!(
                policy.actions.allowed.contains(action),
                "{file_name}: {} is not globally allowed",
                action.as_str()
            );
        }
        assert!(
            capability.policy.max_steps <= policy.budgets.max_steps,
            "{file_name}"
        );
        assert!(
            capability.policy.max_duration_ms <= policy.budgets.max_duration_ms,
            "{file_name}"
        );
        let recovery_attempts: u32 = capability
            .recovery
            .iter()
            .map(|rule| u32::from(rule.max_attempts))
            .sum();
        assert!(
            recovery_attempts <= policy.budgets.max_recovery_attempts_total,
            "{file_name}"
        );
        for step in &capability.steps {
            assert!(!matches!(step.action, Action::RawInput { .. }));
            assert_ne!(step.action.kind(), ActionKind::RawInput);
        }
        // Validating with the policy file's own lexicon finds what the built-in one finds.
        let config = ValidationConfig {
            lexicon: policy.risk.lexicon.clone(),
        };
        assert_eq!(
            validate_capability(&capability, &config),
            vec![],
            "{file_name}"
        );
    }
}

#[test]
fn the_built_in_lexicon_is_the_policy_files() {
    assert_eq!(policy().risk.lexicon, RiskLexicon::default());
}

#[test]
fn redaction_rules_compile_and_the_email_rule_spares_capability_references() {
    let policy = policy();
    let rule = |name: &str| {
        let rule = policy
            .redaction
            .rules
            .iter()
            .find(|rule| rule.name == name)
            .expect("a rule by that name");
        Regex::new(&rule.pattern).expect("compiles")
    };
    let email = rule("email");
    for address in ["ada.lovelace@example.com", "teller01@northgate-fcu.org"] {
        assert!(email.is_match(address), "{address}");
    }
    for reference in [
        "corebank.member.savings_balance@1.0.0",
        "corebank.member.transfer_funds@1.0.0-rc.beta",
        "ran corebank.auth.sign_on@10.2.3 at step 4",
    ] {
        assert!(!email.is_match(reference), "{reference}");
    }
    let ssn = rule("ssn");
    assert!(ssn.is_match("SSN 123-45-6789"));
    // A content hash is never redacted.
    let hash = reference("corebank.member.savings_balance@1.0.0.yaml")
        .compute_hash()
        .to_string();
    for rule in &policy.redaction.rules {
        assert!(
            !Regex::new(&rule.pattern).expect("compiles").is_match(&hash),
            "{} eats {hash}",
            rule.name
        );
    }
}

#[test]
fn tool_schema_of_the_reference_capability() {
    let capability: Capability = reference("corebank.member.savings_balance@1.0.0.yaml");
    insta::assert_json_snapshot!(capability.tool_schema());
}
