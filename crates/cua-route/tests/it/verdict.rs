//! Effect verdicts: the closed status/evidence table, conservative settlement of malformed
//! claims, and that a dispatch receipt cannot become a confirmed mutation.

use cua_route::{
    AuthoritativeResponse, DispatchPhase, DispatchReceipt, EffectEvidence, EffectStatus,
    EffectVerdict, HttpMethod, ObservedPostcondition, PhysicalAction, ProviderClaim, ProviderKind,
    Verification, settle,
};

fn claim(status: &str, evidence: &str, reason: &str) -> ProviderClaim {
    ProviderClaim {
        status: Some(status.to_owned()),
        evidence: Some(evidence.to_owned()),
        reason: Some(reason.to_owned()),
        verification: None,
    }
}

fn verdict_line(verdict: &EffectVerdict) -> String {
    format!("{}/{}", verdict.status(), verdict.evidence())
}

#[test]
fn the_compatibility_table_is_closed() {
    // Every status × evidence pair, read as a provider claim: the table in the reference.
    let mut lines = Vec::new();
    for &status in EffectStatus::ALL {
        let accepted: Vec<&str> = EffectEvidence::ALL
            .iter()
            .filter(|evidence| {
                claim(status.as_str(), evidence.as_str(), "because")
                    .read()
                    .is_ok()
            })
            .map(|evidence| evidence.as_str())
            .collect();
        lines.push(format!("{status}: {}", accepted.join(", ")));
    }
    assert_eq!(
        lines.join("\n"),
        "not_applicable: declared_read\n\
         confirmed: authoritative_response, postcondition_observation\n\
         pending: accepted_deferred_observation\n\
         unverifiable: dispatch_receipt\n\
         suspected_noop: pre_dispatch_rejection, provider_noop_signal, provider_refusal, \
         state_unchanged"
    );
    for &status in EffectStatus::ALL {
        for &evidence in status.allowed_evidence() {
            let verdict = claim(status.as_str(), evidence.as_str(), " why ")
                .read()
                .expect("allowed pairs read");
            assert_eq!((verdict.status(), verdict.evidence()), (status, evidence));
            assert_eq!(verdict.reason(), "why", "reasons are trimmed");
        }
    }
}

#[test]
fn malformed_claims_are_discarded_and_settled_conservatively() {
    fn check(json: &str, mutates: bool, phase: DispatchPhase, expect: &str) {
        let claim: ProviderClaim = serde_json::from_str(json).expect("claim json parses");
        let settlement = settle(mutates, phase, Some(&claim));
        let defect = settlement
            .discarded_claim
            .map(|defect| format!(" (discarded: {defect})"))
            .unwrap_or_default();
        assert_eq!(
            format!("{}{defect}", verdict_line(&settlement.verdict)),
            expect,
            "{json}"
        );
    }
    use DispatchPhase::{Dispatched, PreDispatch};
    let write = true;
    let read = false;
    check(
        r#"{"status":"confirmed","evidence":"postcondition_observation","reason":"row visible"}"#,
        write,
        Dispatched,
        "confirmed/postcondition_observation",
    );
    check(
        r#"{"status":"confirmed","evidence":"dispatch_receipt","reason":"clicked"}"#,
        write,
        Dispatched,
        "unverifiable/dispatch_receipt (discarded: incompatible_evidence)",
    );
    check(
        r#"{"status":"confirmed","evidence":"authoritative_response","reason":"  "}"#,
        write,
        Dispatched,
        "unverifiable/dispatch_receipt (discarded: empty_reason)",
    );
    check(
        r#"{"status":"confirmed","evidence":"authoritative_response"}"#,
        write,
        Dispatched,
        "unverifiable/dispatch_receipt (discarded: empty_reason)",
    );
    check(
        r#"{"status":"Confirmed","evidence":"authoritative_response","reason":"x"}"#,
        write,
        Dispatched,
        "unverifiable/dispatch_receipt (discarded: unknown_status)",
    );
    check(
        r#"{"status":"refused","evidence":"provider_refusal","reason":"x"}"#,
        write,
        Dispatched,
        "unverifiable/dispatch_receipt (discarded: unknown_status)",
    );
    check(
        r#"{"status":"suspected_noop","evidence":"pixels_same","reason":"x"}"#,
        write,
        Dispatched,
        "unverifiable/dispatch_receipt (discarded: unknown_evidence)",
    );
    check(
        r#"{"status":"confirmed","evidence":"authoritative_response","reason":"x","verification":"vibes"}"#,
        write,
        Dispatched,
        "unverifiable/dispatch_receipt (discarded: unknown_verification)",
    );
    check(
        r#"{"status":"not_applicable","evidence":"declared_read","reason":"x"}"#,
        write,
        Dispatched,
        "unverifiable/dispatch_receipt (discarded: inconsistent_with_contract)",
    );
    check(
        r#"{"status":"confirmed","evidence":"authoritative_response","reason":"x"}"#,
        write,
        PreDispatch,
        "suspected_noop/pre_dispatch_rejection (discarded: inconsistent_with_contract)",
    );
    check(
        r#"{"status":"suspected_noop","evidence":"provider_refusal","reason":"403"}"#,
        write,
        PreDispatch,
        "suspected_noop/provider_refusal",
    );
    check(
        r#"{"status":"pending","evidence":"accepted_deferred_observation","reason":"queued"}"#,
        write,
        Dispatched,
        "pending/accepted_deferred_observation",
    );
    check(
        r#"{"status":"confirmed","evidence":"postcondition_observation","reason":"x"}"#,
        read,
        Dispatched,
        "not_applicable/declared_read (discarded: inconsistent_with_contract)",
    );
    check(
        r#"{}"#,
        write,
        Dispatched,
        "unverifiable/dispatch_receipt (discarded: unknown_status)",
    );
    check(
        r#"{}"#,
        read,
        PreDispatch,
        "not_applicable/declared_read (discarded: unknown_status)",
    );
}

#[test]
fn a_dispatch_receipt_cannot_become_a_confirmed_mutation() {
    let receipt = DispatchReceipt {
        provider: ProviderKind::CdpBrowser,
        physical_action: PhysicalAction::new("dom_click"),
    };
    // The only verdict a receipt converts to.
    let verdict = EffectVerdict::from_receipt(&receipt);
    assert_eq!(verdict_line(&verdict), "unverifiable/dispatch_receipt");
    assert!(!verdict.settles_replay());
    // No claim built on a receipt confirms, in any status, phase or spelling.
    for &status in EffectStatus::ALL {
        for phase in [DispatchPhase::PreDispatch, DispatchPhase::Dispatched] {
            let claim = claim(
                status.as_str(),
                "dispatch_receipt",
                "the click was delivered",
            );
            let settled = settle(true, phase, Some(&claim)).verdict;
            assert_ne!(
                settled.status(),
                EffectStatus::Confirmed,
                "{status} {phase:?}"
            );
        }
    }
    // Without any claim the defaults never confirm either.
    for mutates in [false, true] {
        for phase in [DispatchPhase::PreDispatch, DispatchPhase::Dispatched] {
            assert_ne!(
                settle(mutates, phase, None).verdict.status(),
                EffectStatus::Confirmed
            );
        }
    }
    // Confirmation needs evidence a receipt does not have.
    let postcondition = ObservedPostcondition::new("text \"Saved\" visible", "snapshot 4");
    assert_eq!(postcondition.postcondition(), "text \"Saved\" visible");
    assert_eq!(postcondition.observation(), "snapshot 4");
    let observed = EffectVerdict::confirmed(postcondition);
    assert_eq!(
        verdict_line(&observed),
        "confirmed/postcondition_observation"
    );
    assert!(observed.settles_replay());
}

#[test]
fn http_responses_confirm_only_with_authoritative_semantics() {
    fn check(method: HttpMethod, status: u16, expect: &str) {
        assert_eq!(
            verdict_line(&EffectVerdict::from_http(method, status)),
            expect,
            "{method} {status}"
        );
    }
    use HttpMethod::{Delete, Get, Head, Patch, Post, Put};
    check(Get, 200, "not_applicable/declared_read");
    check(Head, 500, "not_applicable/declared_read");
    check(Post, 201, "confirmed/authoritative_response");
    check(Put, 201, "confirmed/authoritative_response");
    check(Delete, 204, "confirmed/authoritative_response");
    check(Delete, 200, "confirmed/authoritative_response");
    check(Post, 200, "unverifiable/dispatch_receipt");
    check(Patch, 204, "unverifiable/dispatch_receipt");
    check(Post, 202, "pending/accepted_deferred_observation");
    check(Post, 409, "suspected_noop/provider_refusal");
    check(Delete, 404, "suspected_noop/provider_refusal");
    check(Post, 503, "unverifiable/dispatch_receipt");
    assert!(AuthoritativeResponse::from_http(Post, 200).is_none());
    let created =
        AuthoritativeResponse::from_http(Put, 201).expect("201 to a PUT is authoritative");
    assert_eq!(
        (created.method(), created.status()),
        (Put, 201),
        "the response names what answered"
    );
    assert_eq!(
        EffectVerdict::from_http(Post, 201).verification(),
        Some(Verification::ProtocolResponse)
    );
}

#[test]
fn verdicts_serialize_to_the_envelope_shape() {
    let verdicts = [
        EffectVerdict::not_applicable(),
        EffectVerdict::from_http(HttpMethod::Post, 201),
        EffectVerdict::from_receipt(&DispatchReceipt {
            provider: ProviderKind::Subprocess,
            physical_action: PhysicalAction::new("spawn_argv"),
        }),
        EffectVerdict::from_http(HttpMethod::Delete, 403),
        claim("pending", "accepted_deferred_observation", "export queued")
            .read()
            .expect("valid"),
    ];
    insta::assert_json_snapshot!("verdicts.json", verdicts);
}
