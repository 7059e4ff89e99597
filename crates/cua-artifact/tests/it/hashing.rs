//! Content addressing: layout, comments, key order and spelled-out defaults do not change the
//! hash; any change of meaning does; a wrong hash is refused as tampered.

use cua_artifact::{
    ArtifactError, Capability, DiagnosticCode, SealState, check_source, seal_source,
    yaml::from_yaml,
};

use crate::support::{MINIMAL, minimal_with, reference_text};

fn hash_of(text: &str) -> String {
    let capability: Capability = from_yaml(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    capability.compute_hash().to_string()
}

#[test]
fn layout_comments_and_key_order_do_not_change_the_hash() {
    let base = hash_of(MINIMAL);
    // Block style instead of flow style, comments, different quoting.
    let relaid = minimal_with(
        "surface: {kind: web, app: {vendor: acme, product: Desk}}",
        "# Where this runs.\nsurface:\n  kind: 'web'\n  app:\n    product: \"Desk\"   # reordered\n    vendor: acme",
    );
    assert_eq!(hash_of(&relaid), base);
    // Top-level keys in another order.
    let mut lines: Vec<&str> = MINIMAL.lines().collect();
    let title = lines
        .iter()
        .position(|line| line.starts_with("title:"))
        .expect("a title line");
    let moved = lines.remove(title);
    lines.push(moved);
    assert_eq!(hash_of(&(lines.join("\n") + "\n")), base);
}

#[test]
fn spelling_out_a_default_does_not_change_the_hash() {
    let base = hash_of(MINIMAL);
    for (old, new) in [
        (
            "      target: {role: textbox, name: {value: Member Number}}",
            "      target: {role: textbox, name: {value: Member Number, match: exact}}\n      clear_first: true",
        ),
        (
            "  - {name: member_id, pattern:",
            "  - {name: member_id, type: string, required: true, sensitive: false, pattern:",
        ),
        (
            "  allowed_actions: [navigate, type, click, extract, reload]",
            "  allowed_actions: [navigate, type, click, extract, reload]\n  max_steps: 40\n  max_duration_ms: 120000",
        ),
        (
            "checkpoint:",
            "escalation: {policy: pause_and_request_human}\ncheckpoint:",
        ),
        (
            "      target: {role: cell, anchor: {relation: adjacent_to, text: Balance}}\n",
            "      target: {role: cell, anchor: {relation: adjacent_to, text: Balance, match: normalized}}\n    wait: {for: snapshot_stable, timeout_ms: 5000}\n    risk: safe\n",
        ),
        (
            "policy:\n",
            "outcomes: []\nrecovery: []\ncontent_hash: \"\"\npolicy:\n",
        ),
    ] {
        assert_eq!(hash_of(&minimal_with(old, new)), base, "{new}");
    }
}

#[test]
fn every_change_of_meaning_changes_the_hash() {
    let base = hash_of(MINIMAL);
    let changes = [
        ("title: Look up a member", "title: Look up a member."),
        ("version: 1.0.0", "version: 1.0.1"),
        ("{value: Search}", "{value: Search, match: normalized}"),
        (
            "wait: {for: navigation, timeout_ms: 8000}",
            "wait: {for: navigation, timeout_ms: 8001}",
        ),
        (
            "value: {$input: member_id}",
            "value: {$input: member_id}\n      clear_first: false",
        ),
        ("type: money", "type: string"),
        (
            "[navigate, type, click, extract, reload]",
            "[navigate, type, click, extract]",
        ),
        (
            "[navigate, type, click, extract, reload]",
            "[type, navigate, click, extract, reload]",
        ),
        (
            "  - id: submit_search\n",
            "  - id: submit_search\n    risk: elevated\n",
        ),
        ("value: Balance}", "value: balance}"),
    ];
    let mut seen = std::collections::BTreeSet::from([base.clone()]);
    for (old, new) in changes {
        let hash = hash_of(&minimal_with(old, new));
        assert!(
            seen.insert(hash),
            "{old:?} -> {new:?} must change the hash to a new value"
        );
    }
}

#[test]
fn the_hash_is_blake3_over_key_sorted_compact_json_without_the_hash() {
    let capability: Capability = from_yaml(MINIMAL).expect("MINIMAL parses");
    let canonical =
        String::from_utf8(capability.canonical_bytes()).expect("canonical bytes are UTF-8");
    assert!(
        canonical.starts_with(
            r#"{"checkpoint":{"assert":"text_present","value":"Balance"},"description":"#
        ),
        "{canonical}"
    );
    assert!(!canonical.contains("content_hash"));
    assert!(!canonical.contains(": ") && !canonical.contains('\n'));
    assert_eq!(
        capability.compute_hash().to_string(),
        format!("blake3:{}", blake3::hash(canonical.as_bytes()).to_hex())
    );
    // Sealing does not change what is hashed.
    let sealed = capability.clone().sealed();
    assert_eq!(sealed.compute_hash(), capability.compute_hash());
    assert_eq!(
        sealed.seal_state(),
        SealState::Sealed(capability.compute_hash())
    );
}

#[test]
fn a_draft_is_accepted_and_a_wrong_hash_is_refused_as_tampered() {
    let draft = Capability::from_yaml(MINIMAL).expect("a draft loads");
    assert_eq!(draft.seal_state(), SealState::Draft);

    let text = reference_text("corebank.member.savings_balance@1.0.0.yaml");
    let tampered = text.replace("max_steps: 12", "max_steps: 13");
    assert_ne!(tampered, text);
    match Capability::from_yaml(&tampered) {
        Err(ArtifactError::Tampered {
            reference,
            declared,
            computed,
        }) => {
            assert_eq!(
                reference.to_string(),
                "corebank.member.savings_balance@1.0.0"
            );
            assert_ne!(declared, computed);
            let message = ArtifactError::Tampered {
                reference,
                declared: declared.clone(),
                computed: computed.clone(),
            }
            .to_string();
            assert!(
                message.contains(declared.as_str()) && message.contains(computed.as_str()),
                "{message}"
            );
        }
        other => panic!("expected a tampered refusal, got {other:?}"),
    }
    let checked = check_source("savings.yaml", &tampered);
    let codes: Vec<DiagnosticCode> = checked.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, vec![DiagnosticCode::Tampered]);
    assert!(matches!(checked.seal, Some(SealState::Tampered { .. })));

    // A comment is not meaning: editing one keeps the seal.
    let commented = text.replace("# Reference capability", "# The reference capability");
    assert_ne!(commented, text);
    assert!(Capability::from_yaml(&commented).is_ok());
}

#[test]
fn sealing_writes_only_the_hash() {
    let expected = Capability::from_yaml(MINIMAL)
        .expect("loads")
        .compute_hash();
    let variants = [
        // No content_hash key: one line is appended.
        MINIMAL.to_owned(),
        MINIMAL.trim_end().to_owned(),
        // An empty value, quoted or not, with a comment after it.
        format!("{MINIMAL}content_hash: \"\"  # filled by cua seal\n"),
        format!("{MINIMAL}content_hash:  # filled by cua seal\n"),
        // A stale hash.
        format!("{MINIMAL}content_hash: blake3:{}\n", "0".repeat(64)),
        // An empty value after a short line that holds a colon of its own, and a key spelled
        // with space before its colon or in quotes: the hash goes right after the key's colon.
        minimal_with("version: 1.0.0\n", "version: 1.0.0\ncontent_hash:\n"),
        format!("{MINIMAL}content_hash :\n"),
        format!("{MINIMAL}\"content_hash\":\n"),
    ];
    for text in variants {
        let sealed = seal_source("minimal.yaml", &text)
            .unwrap_or_else(|diagnostics| panic!("{}", cua_artifact::render_plain(&diagnostics)));
        assert_eq!(sealed.hash, expected);
        assert!(sealed.changed());
        assert_eq!(
            sealed
                .text
                .lines()
                .filter(|line| line.contains(&format!(": {expected}")))
                .count(),
            1,
            "{}",
            sealed.text
        );
        let reloaded = Capability::from_yaml(&sealed.text).expect("the sealed text loads");
        assert_eq!(reloaded.seal_state(), SealState::Sealed(expected.clone()));
        // Everything but the hash line is untouched.
        let without_hash = |text: &str| {
            text.lines()
                .filter(|line| !line.trim_start_matches('"').starts_with("content_hash"))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(without_hash(&sealed.text), without_hash(&text));
        // Sealing a sealed text is a no-op.
        let again = seal_source("minimal.yaml", &sealed.text).expect("seals");
        assert!(!again.changed());
        assert_eq!(again.text, sealed.text);
    }
    // An invalid capability is refused, and so is a document that is not a capability.
    let invalid = minimal_with("value: {$input: member_id}", "value: {$input: nobody}");
    let refused = seal_source("invalid.yaml", &invalid).expect_err("invalid");
    assert_eq!(
        refused.iter().map(|d| d.code).collect::<Vec<_>>(),
        [DiagnosticCode::UndeclaredInput]
    );
    let policy = crate::support::read("config/policy.yaml");
    assert_eq!(
        seal_source("policy.yaml", &policy).expect_err("not a capability")[0].code,
        DiagnosticCode::UnknownDocument
    );
}

#[test]
fn seal_states_have_their_wire_names() {
    let capability = Capability::from_yaml(MINIMAL).expect("a draft loads");
    let computed = capability.compute_hash();
    let declared = cua_artifact::ContentHash::parse(&format!("blake3:{}", "0".repeat(64)))
        .expect("a well-formed hash");
    let names = [
        SealState::Draft,
        SealState::Sealed(computed.clone()),
        SealState::Tampered { declared, computed },
    ]
    .map(|state| state.as_str());
    assert_eq!(names, ["draft", "sealed", "tampered"]);
}
