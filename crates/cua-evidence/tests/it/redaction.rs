//! The redactor: literals, pattern rules and sensitive keys, shape preserved; nothing more than
//! that (over-redaction guards); and a canary sweep over every byte a run writes.

use std::collections::BTreeMap;
use std::path::Path;

use cua_artifact::{
    ActionKind, Actor, EffectVerdict, FailureCode, ObservationClass, ResolutionStrategy, RiskTier,
    RunKind, RunStatus, SecretName,
};
use cua_evidence::{
    Authorize, BlockedRequest, Classify, Dispatch, Effect, Escalate, Event, EvidenceError, Intent,
    Lease, LeaseTransition, LlmCall, MAX_REDACTABLE_BYTES, Note, Observe, Recovery, Redactor,
    Resolve, RunEnd, RunStart, SecretResolver, Verify, Wait, read_trace,
};
use cua_snapshot::NodeId;
use serde_json::json;

use crate::{bus, capability, content_hash, id, policy_redactor, read, snapshot};

fn check(redactor: &Redactor, input: &str, expect: &str) {
    assert_eq!(redactor.redact_text(input), expect, "{input}");
}

#[test]
fn pattern_rules_replace_what_they_match_with_the_rule_name() {
    let redactor = policy_redactor();
    check(
        &redactor,
        "SSN 123-45-6789 on file",
        "SSN <redacted:ssn> on file",
    );
    check(
        &redactor,
        "account 123456789012 closed",
        "account <redacted:account_number> closed",
    );
    check(
        &redactor,
        "card 4111 1111 1111 1111",
        "card <redacted:card_pan>",
    );
    check(
        &redactor,
        "write to jane.doe+bank@mail.example.com today",
        "write to <redacted:email> today",
    );
    check(&redactor, "call 555-123-4567", "call <redacted:phone>");
}

#[test]
fn what_the_rules_do_not_describe_survives() {
    let redactor = policy_redactor();
    for text in [
        // A capability reference is not an email: its final label is not alphabetic.
        "corebank.member.savings_balance@1.0.0",
        "ran corebank.member.savings_balance@1.2.0-rc.1 for northgate-fcu",
        // Minted decision ids and short member numbers are not account numbers.
        "dec-000001 granted",
        "member 12345 has $4,210.55 as of 09/11/2026",
        "content:/document[0]/table[1]/row[3]/cell[1]/textbox[0]",
        "blake3:5f0c3c5e9e0a0e8cd2c1b5a3d1e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4",
        "2026-09-30T22:07:14.687487Z",
        "<redacted:secret> and <redacted:string[5]>",
    ] {
        assert!(redactor.is_clean(text), "over-redacted: {text}");
    }
}

#[test]
fn registered_literals_are_replaced_longest_first() {
    let redactor = policy_redactor();
    assert!(redactor.register_secret("hunter2-canary"));
    assert!(redactor.register_secret("hunter2"));
    assert!(redactor.register_sensitive_value("Jane Q. Member"));
    assert!(!redactor.register_secret("abc"), "too short to scrub");
    check(
        &redactor,
        "typed hunter2-canary, then hunter2, for Jane Q. Member (abc)",
        "typed <redacted:secret>, then <redacted:secret>, for <redacted:string[14]> (abc)",
    );
    // A value registered as both sensitive and secret is a secret.
    assert!(redactor.register_sensitive_value("hunter2"));
    check(&redactor, "hunter2", "<redacted:secret>");
    // Clones share what is registered.
    let clone = redactor.clone();
    assert!(clone.register_secret("s3cr3t-token"));
    check(&redactor, "token s3cr3t-token", "token <redacted:secret>");
    assert!(redactor.contains_secret(b"\x89PNG..s3cr3t-token.."));
    assert!(!redactor.contains_secret(b"\x89PNG..Jane Q. Member.."));
}

#[test]
fn json_is_redacted_recursively_with_shapes_under_sensitive_keys() {
    let redactor = policy_redactor();
    redactor.add_sensitive_keys(["member_id", "pin", "flags", "profile", "consent"]);
    redactor.register_secret("Canary-Secret-7f3a");
    let input = json!({
        "inputs": {
            "member_id": "12345",
            "pin": 1234,
            "flags": [true, false],
            "profile": {"name": "Jane", "born": "1970"},
            "consent": true,
            "note": null,
            "amount": 123456789012_u64,
        },
        "message": "mail jane@example.com, password Canary-Secret-7f3a",
        "decision_id": "dec-12345678",
        "duration_ms": 123456789012_u64,
        "node_id": "content:/row[12345678]/cell[1]",
        "values": ["SSN 123-45-6789", 42],
        "Canary-Secret-7f3a": "keys are scrubbed too",
    });
    let expected = json!({
        "inputs": {
            "member_id": "<redacted:string[5]>",
            "pin": "<redacted:number[4]>",
            "flags": "<redacted:array[2]>",
            "profile": "<redacted:object[2]>",
            "consent": "<redacted:boolean>",
            "note": null,
            "amount": "<redacted:account_number>",
        },
        "message": "mail <redacted:email>, password <redacted:secret>",
        "decision_id": "dec-12345678",
        "duration_ms": 123456789012_u64,
        "node_id": "content:/row[12345678]/cell[1]",
        "values": ["SSN <redacted:ssn>", 42],
        "<redacted:secret>": "keys are scrubbed too",
    });
    let redacted = redactor.redact_json(&input);
    assert_eq!(redacted, expected);
    assert_eq!(redactor.redact_json(&redacted), redacted, "idempotent");
    redactor.remove_sensitive_keys(["member_id"]);
    assert_eq!(
        redactor.redact_json(&json!({"member_id": "12345"})),
        json!({"member_id": "12345"})
    );
}

#[test]
fn structural_fields_survive_the_rules_literals_do_not() {
    let redactor = policy_redactor();
    redactor.register_secret("Canary-Secret-7f3a");
    let redacted = redactor.redact_json(&json!({
        "decision_id": "dec-12345678 Canary-Secret-7f3a",
        "run_id": "run-20260930-123456789",
    }));
    assert_eq!(
        redacted,
        json!({
            "decision_id": "dec-12345678 <redacted:secret>",
            "run_id": "run-20260930-123456789",
        })
    );
}

/// A run's outputs are what a caller asked for: declared secrets and sensitive keys are masked,
/// but nothing is guessed at, so an e-mail address or an account number read on purpose stays.
#[test]
fn declared_redaction_masks_what_was_declared_and_guesses_nothing() {
    let redactor = policy_redactor();
    redactor.add_sensitive_keys(["member_id"]);
    redactor.register_secret("Canary-Secret-7f3a");
    let outputs = json!({
        "member_id": "12345",
        "contact": "jane.doe@mail.example.com",
        "reference": "123456789012",
        "note": "token Canary-Secret-7f3a",
    });
    assert_eq!(
        redactor.redact_declared_json(&outputs),
        json!({
            "member_id": "<redacted:string[5]>",
            "contact": "jane.doe@mail.example.com",
            "reference": "123456789012",
            "note": "token <redacted:secret>",
        })
    );
    assert_eq!(
        redactor.redact_declared_text("mail jane@example.com, password Canary-Secret-7f3a"),
        "mail jane@example.com, password <redacted:secret>"
    );
}

/// A digest the bus computed is kept as written; anything else under a `_digest` key is text
/// like any other, and a registered secret in it is scrubbed.
#[test]
fn only_a_real_digest_is_exempt_from_scrubbing() {
    let redactor = policy_redactor();
    redactor.register_secret("c0ffee15c0ffee");
    let digest = format!("blake3:c0ffee15c0ffee{}", "0".repeat(50));
    let lookalike = format!("blake3:c0ffee15c0ffee{}", "z".repeat(50));
    let redacted = redactor.redact_json(&json!({
        "content_digest": digest,
        "snapshot_digest": lookalike,
    }));
    assert_eq!(redacted["content_digest"], json!(digest));
    assert_eq!(
        redacted["snapshot_digest"],
        json!(format!("blake3:<redacted:secret>{}", "z".repeat(50)))
    );
}

/// What a redactor shows of itself in a log: its rules and counts, never a registered value.
#[test]
fn a_redactors_debug_form_names_its_rules_and_no_secret() {
    let redactor = policy_redactor();
    redactor.register_secret("Canary-Secret-7f3a");
    let shown = format!("{redactor:?}");
    assert!(
        shown.starts_with("Redactor {") && shown.contains("\"ssn\""),
        "{shown}"
    );
    assert!(shown.contains("literals: 1"), "{shown}");
    assert!(!shown.contains("Canary-Secret-7f3a"), "{shown}");
}

#[test]
fn oversized_strings_are_masked_whole() {
    let redactor = policy_redactor();
    let long = "a".repeat(MAX_REDACTABLE_BYTES + 1);
    check(
        &redactor,
        &long,
        &format!("<redacted:string[{}]>", MAX_REDACTABLE_BYTES + 1),
    );
    let at_limit = "a".repeat(MAX_REDACTABLE_BYTES);
    check(&redactor, &at_limit, &at_limit);
    // A page's text runs to tens of kilobytes: it is scanned, not masked whole.
    let page = format!("{} SSN 123-45-6789", "a".repeat(48 * 1024));
    check(
        &redactor,
        &page,
        &format!("{} SSN <redacted:ssn>", "a".repeat(48 * 1024)),
    );
}

#[test]
fn snapshots_are_redacted_node_by_node() {
    let redactor = policy_redactor();
    redactor.register_secret("Canary-Secret-7f3a");
    let mut page = snapshot("Canary-Secret-7f3a");
    page.title = "Member jane@example.com".into();
    page.nodes[2].name = "SSN 123-45-6789".into();
    let redacted = redactor.redact_snapshot(&page);
    assert_eq!(redacted.title, "Member <redacted:email>");
    assert_eq!(
        redacted.nodes[1].value.as_deref(),
        Some("<redacted:secret>")
    );
    assert_eq!(redacted.nodes[1].name, "Member Number");
    assert_eq!(redacted.nodes[2].name, "SSN <redacted:ssn>");
    assert_eq!(redacted.nodes[0].id, page.nodes[0].id, "ids are untouched");
}

#[test]
fn invalid_rules_are_refused_naming_the_rule() {
    let check = |name: &str, pattern: &str, expect: &str| {
        let error = Redactor::new([(name, pattern)]).expect_err("an invalid rule");
        assert!(error.to_string().starts_with(expect), "{name}: {error}");
    };
    check(
        "broken",
        "(unclosed",
        "invalid redaction rule `broken`: regex parse error",
    );
    check(
        "Bad Name",
        r"\d+",
        "invalid redaction rule `Bad Name`: a rule name must be a lowercase identifier",
    );
    check(
        "acct-number",
        r"\d+",
        "invalid redaction rule `acct-number`: a rule name must be a lowercase identifier",
    );
    check(
        "everything",
        "x*",
        "invalid redaction rule `everything`: the pattern matches the empty string",
    );
    check(
        "nothing",
        "",
        "invalid redaction rule `nothing`: the pattern is empty",
    );
}

/// Every event kind, with ids and counters big enough to look like account numbers and card
/// numbers to the rules, and no free text that the rules describe.
fn one_of_each_event() -> Vec<Event> {
    let big = 12_345_678_901_u64;
    let node = || NodeId::new("content:/document[0]/table[12345678]/row[3]/cell[1]");
    vec![
        RunStart {
            kind: RunKind::Discovery,
            capability: Some(capability()),
            content_hash: Some(content_hash()),
            sealed_hash: None,
            bound_by: None,
            tenant: None,
            inputs: BTreeMap::new(),
            goal: Some("read the savings balance".into()),
            target_url: Some("http://127.0.0.1:8811/".into()),
            model: Some("scripted".into()),
            scripted_model: Some(true),
            resolver_config_hash: Some(content_hash().to_string()),
        }
        .into(),
        Observe {
            url: "http://127.0.0.1:8811/search".into(),
            title: "MemberDesk".into(),
            node_count: big,
            http_status: Some(200),
            snapshot_ref: None,
            snapshot_digest: None,
        }
        .into(),
        Resolve {
            step: Some(id("enter_member_id")),
            target: "textbox named \"Member Number\"".into(),
            resolved: false,
            node_id: Some(node()),
            strategy: None,
            strategy_recorded: Some(ResolutionStrategy::SemanticExact),
            candidates_considered: 2,
            identity_verified: None,
            failure_code: Some(FailureCode::TargetAmbiguous),
            reason: Some("two candidates".into()),
            strategies_tried: vec![ResolutionStrategy::SemanticExact],
            candidates: vec!["textbox at row 3".into(), "textbox at row 4".into()],
            ambiguity_score: Some(0.5),
        }
        .into(),
        Authorize {
            step: Some(id("enter_member_id")),
            decision_id: "dec-12345678".into(),
            granted: false,
            action_type: ActionKind::Type,
            risk: RiskTier::Elevated,
            signals: vec!["declared:elevated".into()],
            reason: "elevated (declared:elevated)".into(),
            denial: Some("lease_stale".into()),
            approval: None,
            node_id: Some(node()),
        }
        .into(),
        Intent {
            step: Some(id("enter_member_id")),
            decision_id: "dec-12345678".into(),
            action_type: ActionKind::Type,
            risk: RiskTier::Elevated,
            row: Some(12),
            attempt: 2,
            idempotency_key: "cua-0123456789abcdef0123".into(),
            remedy: None,
        }
        .into(),
        Dispatch {
            step: Some(id("enter_member_id")),
            decision_id: "dec-12345678".into(),
            action_type: ActionKind::Type,
            node_id: Some(node()),
            refused: true,
            ok: false,
            navigated: false,
            http_status: Some(200),
            duration_ms: big,
            message: String::new(),
            reason: Some("stale epoch".into()),
            expected_epoch: Some(big),
        }
        .into(),
        Classify {
            step: id("enter_member_id"),
            observation: ObservationClass::Recoverable,
            reason: "recovery rule transient_load".into(),
            matched: Some(id("transient_load")),
        }
        .into(),
        Wait {
            step: Some(id("enter_member_id")),
            condition: "textbox named \"Member Number\" exists".into(),
            satisfied: true,
            waited_ms: big,
            timeout_ms: Some(big),
        }
        .into(),
        Verify {
            step: id("enter_member_id"),
            postcondition: "value is typed".into(),
            holds: false,
            observed: Some("empty".into()),
            snapshot_ref: Some("snapshots/0001-enter_member_id.json".into()),
        }
        .into(),
        Effect {
            step: id("enter_member_id"),
            verdict: EffectVerdict::SuspectedNoop,
            reason: "state unchanged".into(),
            decision_id: Some("dec-12345678".into()),
            route: None,
            undispatched: None,
            screenshot_ref: None,
            screenshot_digest: None,
        }
        .into(),
        Recovery {
            step: Some(id("enter_member_id")),
            rule: id("session_expired"),
            attempt: big,
            max_attempts: big,
            remedy: Some("run_capability".into()),
            capability: Some(capability()),
            content_hash: Some(content_hash()),
        }
        .into(),
        Escalate {
            step: Some(id("enter_member_id")),
            step_index: Some(1),
            status: Some(RunStatus::NeedsHuman),
            failure_code: Some(FailureCode::UnexpectedState),
            reason: "nothing declared explains the screen".into(),
            intervention: Some("int-12345678".into()),
            snapshot_ref: Some("snapshots/0002-failure.json".into()),
            screenshot_ref: None,
            screenshot_digest: None,
        }
        .into(),
        Lease {
            transition: LeaseTransition::Released,
            holder: Actor::Human,
            operator: Some("demo-operator".into()),
            intervention: Some("int-12345678".into()),
            human_actions: Some(big),
            human_delta: Some("+77/-4 nodes".into()),
            values_changed: vec![node()],
        }
        .into(),
        LlmCall {
            model: "auto".into(),
            provider: "scripted".into(),
            scripted: true,
            request_id: Some("req-12345678901".into()),
            prompt_tokens: big,
            completion_tokens: big,
            reasoning: "type the member number".into(),
            tool_calls: vec!["type_text".into()],
            purpose: None,
        }
        .into(),
        BlockedRequest {
            url: "https://elsewhere.example.com/".into(),
            reason: "host not in the allowlist".into(),
            navigation: true,
            resource_type: Some("Document".into()),
        }
        .into(),
        Note {
            note: "re-anchor after handoff".into(),
            data: BTreeMap::from([("resume_index".to_owned(), json!(big))]),
        }
        .into(),
        RunEnd {
            failure_code: Some(FailureCode::UnexpectedState),
            reason: Some("nothing declared explains the screen".into()),
            step: Some(id("enter_member_id")),
            effect: Some(EffectVerdict::NotApplicable),
            steps_executed: Some(1),
            steps_total: Some(4),
            stop_reason: Some("escalated".into()),
            steps_attempted: Some(2),
            steps_effective: Some(1),
            ..RunEnd::with_status(RunStatus::NeedsHuman)
        }
        .into(),
    ]
}

#[test]
fn every_event_round_trips_through_the_policy_rules_unchanged() {
    let events = one_of_each_event();
    let mut names: Vec<&str> = events.iter().map(Event::name).collect();
    let mut all = Event::NAMES.to_vec();
    names.sort_unstable();
    all.sort_unstable();
    assert_eq!(
        names, all,
        "one of each (run_end last, since nothing may follow it)"
    );
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-20260930-123456789", policy_redactor());
    for event in &events {
        bus.emit(Actor::Automation, 12_345_678_901, event.clone())
            .expect("written");
    }
    let lines = read_trace(bus.dir()).expect("the trace parses");
    for (line, event) in lines.iter().zip(&events) {
        assert_eq!(&line.event, event, "over-redacted");
        assert_eq!(line.run_id, "run-20260930-123456789");
        assert_eq!(line.lease_epoch, 12_345_678_901);
    }
}

#[test]
fn model_reasoning_is_cut_to_its_limit() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-reasoning", Redactor::default());
    bus.emit(
        Actor::Agent,
        1,
        LlmCall {
            model: "m".into(),
            provider: "p".into(),
            reasoning: "é".repeat(LlmCall::MAX_REASONING_CHARS + 10),
            ..LlmCall::default()
        },
    )
    .expect("written");
    let lines = read_trace(bus.dir()).expect("parses");
    let Event::LlmCall(call) = &lines[0].event else {
        panic!("an llm_call");
    };
    assert_eq!(call.reasoning.chars().count(), LlmCall::MAX_REASONING_CHARS);
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push(path);
        }
    }
    found.sort();
    found
}

#[test]
fn canary_secrets_never_reach_a_byte_under_the_run_directory() {
    const SECRET: &str = "Canary-Secret-7f3a";
    const SENSITIVE_INPUT: &str = "55512399";
    let seeded = [
        SECRET,
        SENSITIVE_INPUT,
        "123-45-6789",
        "123456789012",
        "jane.doe@example.com",
    ];
    let root = tempfile::tempdir().expect("a temporary directory");
    let redactor = policy_redactor();
    let bus = bus(root.path(), "run-canary", redactor.clone());
    // The executor marks sensitive inputs before the first write.
    redactor.add_sensitive_keys(["member_id"]);
    redactor.register_sensitive_value(SENSITIVE_INPUT);
    bus.emit(
        Actor::Automation,
        0,
        RunStart {
            kind: RunKind::Replay,
            capability: Some(capability()),
            content_hash: Some(content_hash()),
            sealed_hash: None,
            bound_by: None,
            tenant: None,
            inputs: BTreeMap::from([
                ("member_id".to_owned(), json!(SENSITIVE_INPUT)),
                ("note".to_owned(), json!("SSN 123-45-6789")),
            ]),
            goal: None,
            target_url: None,
            model: None,
            scripted_model: None,
            resolver_config_hash: None,
        },
    )
    .expect("written");
    // The secret is resolved at the dispatch; from then on, every sink scrubs it.
    let resolver = SecretResolver::new(
        "CUA_SECRET_",
        [("CUA_SECRET_COREBANK_OPERATOR_PASSWORD", SECRET)],
        redactor.clone(),
    );
    let password = resolver
        .resolve(&SecretName::parse("corebank.operator_password").expect("a valid name"))
        .expect("the secret is set");
    assert_eq!(password.expose(), SECRET);
    let page = {
        let mut page = snapshot(password.expose());
        page.title = format!("Welcome jane.doe@example.com, account 123456789012 ({SECRET})");
        page
    };
    let written = bus
        .write_snapshot(&format!("after typing {SECRET}"), &page)
        .expect("written");
    bus.emit(
        Actor::System,
        0,
        Observe {
            url: format!("http://127.0.0.1:8811/home?member={SENSITIVE_INPUT}"),
            title: page.title.clone(),
            node_count: 3,
            http_status: Some(200),
            snapshot_ref: Some(written.path),
            snapshot_digest: Some(written.digest),
        },
    )
    .expect("written");
    bus.emit(
        Actor::Automation,
        1,
        Dispatch {
            step: Some(id("sign_on")),
            decision_id: "dec-000001".into(),
            action_type: ActionKind::Type,
            node_id: None,
            refused: false,
            ok: false,
            navigated: false,
            http_status: None,
            duration_ms: 3,
            message: format!("could not type {SECRET} into the textbox"),
            reason: None,
            expected_epoch: None,
        },
    )
    .expect("written");
    bus.emit(
        Actor::Agent,
        1,
        LlmCall {
            model: "m".into(),
            provider: "p".into(),
            reasoning: format!("the password is {SECRET}, the member's SSN is 123-45-6789"),
            ..LlmCall::default()
        },
    )
    .expect("written");
    let refused = bus.write_screenshot("failure", format!("PNG tEXt {SECRET}").as_bytes());
    let Err(EvidenceError::SecretInScreenshot { label }) = refused else {
        panic!("a screenshot carrying the secret is refused: {refused:?}");
    };
    assert_eq!(label, "failure");
    bus.write_screenshot(&format!("failure {SECRET}"), b"\x89PNG painted")
        .expect("a clean screenshot is written");
    bus.emit(
        Actor::Automation,
        0,
        Note {
            note: format!("failure capture: typed {SECRET}"),
            data: BTreeMap::from([("member_id".to_owned(), json!(SENSITIVE_INPUT))]),
        },
    )
    .expect("written");
    bus.emit(
        Actor::Automation,
        0,
        RunEnd {
            failure_code: Some(FailureCode::ActionFailed),
            reason: Some(format!("typing {SECRET} failed for jane.doe@example.com")),
            step: Some(id("sign_on")),
            observed: Some(format!("account 123456789012, member {SENSITIVE_INPUT}")),
            effect: Some(EffectVerdict::SuspectedNoop),
            steps_executed: Some(1),
            steps_total: Some(3),
            ..RunEnd::with_status(RunStatus::Failed)
        },
    )
    .expect("written");
    bus.finish().expect("the run record is written");

    let written = files(bus.dir());
    let names: Vec<String> = written
        .iter()
        .map(|path| {
            path.strip_prefix(bus.dir())
                .expect("under the run")
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "run_record.json",
            "screenshots/0001-failure_redacted_secret.png",
            "snapshots/0001-after_typing_redacted_secret.json",
            "trace.jsonl",
        ]
    );
    for path in &written {
        let bytes = std::fs::read(path).expect("readable");
        for canary in seeded {
            assert!(
                !bytes
                    .windows(canary.len())
                    .any(|window| window == canary.as_bytes()),
                "{canary} leaked into {}",
                path.display()
            );
        }
    }
    // Redacted, not dropped: the shapes are there for a debugger.
    let trace = read(&bus.dir().join("trace.jsonl"));
    for marker in [
        "<redacted:secret>",
        "<redacted:string[8]>",
        "<redacted:ssn>",
        "<redacted:email>",
        "<redacted:account_number>",
    ] {
        assert!(trace.contains(marker), "{marker} missing from the trace");
    }
    assert!(
        cua_evidence::verify(bus.dir())
            .expect("a run directory")
            .is_intact()
    );
}

#[test]
fn a_policy_redaction_section_builds_a_redactor() {
    let section = cua_artifact::Redaction {
        preserve_shape: true,
        names: vec!["operator_password".into(), "pin".into()],
        rules: crate::POLICY_RULES
            .iter()
            .map(|(name, pattern)| cua_artifact::RedactionRule {
                name: (*name).to_owned(),
                pattern: (*pattern).to_owned(),
            })
            .collect(),
        always_redact_sensitive_inputs: true,
        blur_sensitive_regions_in_screenshots: true,
    };
    let redactor = Redactor::from_policy(&section).expect("valid rules");
    assert_eq!(
        redactor.redact_json(&json!({"pin": "1234", "note": "SSN 123-45-6789"})),
        json!({"pin": "<redacted:string[4]>", "note": "SSN <redacted:ssn>"})
    );
}

/// Two registered values that overlap in a text are scrubbed as one span: replacing the longer
/// first left the tail of the other in clear (`abcdef` then `defghi` in `abcdefghi` left `ghi`).
#[test]
fn overlapping_literals_leave_no_part_of_either_in_clear() {
    let redactor = Redactor::default();
    assert!(redactor.register_secret("token-ABCDEF"));
    assert!(redactor.register_sensitive_value("DEF-member-9"));
    let text = "before token-ABCDEF-member-9 after";
    let redacted = redactor.redact_text(text);
    assert_eq!(redacted, "before <redacted:secret> after");
    // The same value twice side by side is two markers; a value inside another is the
    // other's span.
    assert!(redactor.register_secret("4421"));
    assert_eq!(
        redactor.redact_declared_text("pin 44214421, token-ABCDEF4421."),
        "pin <redacted:secret><redacted:secret>, <redacted:secret><redacted:secret>."
    );
    assert!(redactor.register_secret("EF44"));
    assert_eq!(
        redactor.redact_declared_text("token-ABCDEF4421."),
        "<redacted:secret>."
    );
    // Two sensitive values overlapping: one shape marker over the whole span, never the
    // tail of either.
    let values = Redactor::default();
    assert!(values.register_sensitive_value("Jane Q"));
    assert!(values.register_sensitive_value("Q Public"));
    let redacted = values.redact_text("name: Jane Q Public.");
    assert!(
        !redacted.contains("Public") && !redacted.contains("Jane"),
        "{redacted}"
    );
}
