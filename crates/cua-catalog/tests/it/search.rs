//! Search over a small fixed corpus: ranking with explanations, typo tolerance (the unique
//! nearest term is taken, an ambiguous one is not), filters applied before top-k, ties broken by
//! reference, and determinism whatever order the documents arrive in.

use std::fmt::Write as _;

use cua_artifact::{RiskTier, SurfaceKind};
use cua_catalog::{
    Catalog, Resolution, SearchDocument, SearchFilters, SearchIndex, SearchQuery, SearchResults,
};

use crate::{Fixture, SAVINGS, reference_of};

struct Spec {
    reference: &'static str,
    title: &'static str,
    description: &'static str,
    inputs: &'static [&'static str],
    outputs: &'static [&'static str],
    outcomes: &'static [&'static str],
    max_risk: RiskTier,
    surface: SurfaceKind,
    approved: bool,
}

const CORPUS: [Spec; 10] = [
    Spec {
        reference: "corebank.member.savings_balance@1.0.0",
        title: "Look up a member's savings balance",
        description: "Given a member number, return the current balance of the member's savings \
                      account, its status and the date it is stated as of. Reads only.",
        inputs: &["member_id"],
        outputs: &["savings_balance", "account_status", "as_of"],
        outcomes: &[
            "member_not_found",
            "no_savings_account",
            "permission_denied",
        ],
        max_risk: RiskTier::Safe,
        surface: SurfaceKind::LegacyWeb,
        approved: true,
    },
    Spec {
        reference: "corebank.member.transfer_funds@1.0.0",
        title: "Transfer funds between a member's accounts",
        description: "Move an amount from one of the member's accounts to another and return \
                      the confirmation number. The transfer cannot be undone.",
        inputs: &["member_id", "from_account", "to_account", "amount"],
        outputs: &["confirmation_number", "primary_balance_before"],
        outcomes: &["member_not_found", "insufficient_funds", "account_closed"],
        max_risk: RiskTier::Irreversible,
        surface: SurfaceKind::LegacyWeb,
        approved: true,
    },
    Spec {
        reference: "corebank.member.open_subaccount@1.0.0",
        title: "Open a sub-account for a member",
        description: "Open a checking or savings sub-account with an initial deposit and return \
                      the new account's reference.",
        inputs: &["member_id", "account_type", "initial_deposit"],
        outputs: &["reference"],
        outcomes: &["member_not_found", "validation_rejected"],
        max_risk: RiskTier::Elevated,
        surface: SurfaceKind::LegacyWeb,
        approved: false,
    },
    Spec {
        reference: "corebank.auth.sign_on@1.0.0",
        title: "Sign the operator on to MemberDesk",
        description: "Sign on with the operator's credentials from the secret store.",
        inputs: &[],
        outputs: &[],
        outcomes: &["invalid_credentials"],
        max_risk: RiskTier::Safe,
        surface: SurfaceKind::LegacyWeb,
        approved: true,
    },
    Spec {
        reference: "cards.card.freeze_card@2.1.0",
        title: "Freeze a member's debit card",
        description: "Block the card at once so no purchase or withdrawal goes through.",
        inputs: &["card_number"],
        outputs: &["frozen_at"],
        outcomes: &["card_not_found", "already_frozen"],
        max_risk: RiskTier::Elevated,
        surface: SurfaceKind::Web,
        approved: true,
    },
    Spec {
        reference: "cards.card.card_balance@1.0.0",
        title: "Look up a card's balance",
        description: "Return the outstanding balance and available credit of a card.",
        inputs: &["card_number"],
        outputs: &["balance", "available_credit"],
        outcomes: &["card_not_found"],
        max_risk: RiskTier::Safe,
        surface: SurfaceKind::Web,
        approved: false,
    },
    Spec {
        reference: "lending.loan.payoff_balance@1.0.0",
        title: "Look up a loan's payoff balance",
        description: "Return the amount that pays the loan off today.",
        inputs: &["loan_number"],
        outputs: &["payoff_amount"],
        outcomes: &["loan_not_found"],
        max_risk: RiskTier::Safe,
        surface: SurfaceKind::Desktop,
        approved: true,
    },
    Spec {
        reference: "shop.cart.checkout_cart@1.0.0",
        title: "Check out a shopping cart",
        description: "Place the order for everything in the cart.",
        inputs: &["cart_id"],
        outputs: &["order_number"],
        outcomes: &["cart_empty"],
        max_risk: RiskTier::Irreversible,
        surface: SurfaceKind::Web,
        approved: false,
    },
    Spec {
        reference: "crm.contact.update_phone@1.1.0",
        title: "Update a contact's phone number",
        description: "Replace the phone number on a contact record.",
        inputs: &["contact_id", "phone"],
        outputs: &[],
        outcomes: &["contact_not_found"],
        max_risk: RiskTier::Elevated,
        surface: SurfaceKind::Web,
        approved: true,
    },
    Spec {
        reference: "crm.contact.update_phone@1.0.0",
        title: "Update a contact's phone number",
        description: "Replace the phone number on a contact record.",
        inputs: &["contact_id", "phone"],
        outputs: &[],
        outcomes: &["contact_not_found"],
        max_risk: RiskTier::Elevated,
        surface: SurfaceKind::Web,
        approved: true,
    },
];

fn documents() -> Vec<SearchDocument> {
    let owned = |parts: &[&str]| parts.iter().map(|part| (*part).to_owned()).collect();
    CORPUS
        .iter()
        .map(|spec| SearchDocument {
            reference: reference_of(spec.reference),
            title: spec.title.to_owned(),
            description: spec.description.to_owned(),
            inputs: owned(spec.inputs),
            outputs: owned(spec.outputs),
            outcomes: owned(spec.outcomes),
            max_risk: spec.max_risk,
            surface: spec.surface,
            approved: spec.approved,
        })
        .collect()
}

fn index() -> SearchIndex {
    SearchIndex::build(documents())
}

fn query(text: &str) -> SearchQuery {
    SearchQuery::new(text)
}

/// The results as a reviewer reads them: how each word resolved, then every hit with its
/// score taken apart.
fn render(text: &str, results: &SearchResults) -> String {
    let mut out = String::new();
    let words: Vec<String> = results
        .words
        .iter()
        .map(|word| match &word.resolution {
            Resolution::Exact => word.word.clone(),
            Resolution::Corrected { term, distance } => {
                format!("{} → {term} (distance {distance})", word.word)
            }
            Resolution::Ambiguous {
                distance,
                candidates,
            } => format!(
                "{} ambiguous at distance {distance}: {}",
                word.word,
                candidates.join(", ")
            ),
            Resolution::Unknown => format!("{} unknown", word.word),
        })
        .collect();
    writeln!(
        out,
        "query {text:?}: [{}]; matched {}, filtered out {}",
        words.join("; "),
        results.matched,
        results.filtered_out
    )
    .unwrap();
    for (rank, hit) in results.hits.iter().enumerate() {
        writeln!(
            out,
            "{}. {} score {:.4} = lexical {:.4} [{}, {}, {}]",
            rank + 1,
            hit.reference,
            hit.score,
            hit.explanation.lexical,
            hit.max_risk.as_str(),
            serde_json::to_value(hit.surface).unwrap().as_str().unwrap(),
            if hit.approved {
                "approved"
            } else {
                "not approved"
            }
        )
        .unwrap();
        for field_match in &hit.explanation.matches {
            let term = if field_match.term == field_match.word {
                field_match.term.clone()
            } else {
                format!("{} → {}", field_match.word, field_match.term)
            };
            writeln!(
                out,
                "     {term} in {}: tf {} idf {:.4} weight {} typo ×{} → {:.4}",
                field_match.field.as_str(),
                field_match.term_frequency,
                field_match.idf,
                field_match.field_weight,
                field_match.typo_discount,
                field_match.contribution
            )
            .unwrap();
        }
        for signal in &hit.explanation.signals {
            writeln!(
                out,
                "     signal {} {:.4}: {}",
                signal.name, signal.value, signal.detail
            )
            .unwrap();
        }
    }
    out
}

fn run(index: &SearchIndex, query: &SearchQuery) -> String {
    render(&query.text, &index.search(query))
}

#[test]
fn ranking_explained() {
    let index = index();
    let mut out = String::new();
    for text in [
        "savings balance",
        "look up a balance",
        "freeze the member's card",
        "confirmation number",
        "member not found",
    ] {
        let mut search = query(text);
        search.top_k = 4;
        out.push_str(&run(&index, &search));
        out.push('\n');
    }
    insta::assert_snapshot!(out);
}

#[test]
fn typo_tolerance() {
    let index = index();
    let mut out = String::new();
    // balnce: one deletion; trasnfer: one transposition; acounts: one insertion away from
    // `accounts` and two from `account`, so the unique nearest is taken; balances: a plural.
    for text in [
        "balnce",
        "trasnfer funds",
        "acounts",
        "balances",
        "savngs blance",
    ] {
        let mut search = query(text);
        search.top_k = 2;
        out.push_str(&run(&index, &search));
        out.push('\n');
    }
    // carx is one edit from both `card` and `cart`: ambiguous, so neither is taken; ok is too
    // short to correct; zebra is nowhere near anything.
    for text in ["carx", "ok", "zebra"] {
        let results = index.search(&query(text));
        assert!(results.hits.is_empty(), "{text}");
        out.push_str(&render(text, &results));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn ambiguity_is_reported_not_resolved() {
    let results = index().search(&query("carx"));
    assert_eq!(
        results.words[0].resolution,
        Resolution::Ambiguous {
            distance: 1,
            candidates: vec!["card".to_owned(), "cart".to_owned()],
        }
    );
}

#[test]
fn filters_apply_before_top_k() {
    let index = index();
    // Unfiltered, the irreversible transfer is the best match for "transfer funds".
    let unfiltered = index.search(&SearchQuery {
        top_k: 1,
        ..query("transfer funds between member accounts")
    });
    assert_eq!(
        unfiltered.hits[0].reference.to_string(),
        "corebank.member.transfer_funds@1.0.0"
    );
    // Filtered to elevated, it is removed before ranking, so the one place goes to the next
    // best match instead of being lost.
    let filtered = index.search(&SearchQuery {
        text: "transfer funds between member accounts".to_owned(),
        filters: SearchFilters {
            max_risk: Some(RiskTier::Elevated),
            ..SearchFilters::default()
        },
        top_k: 1,
    });
    assert_eq!(filtered.hits.len(), 1);
    assert_eq!(filtered.filtered_out, 1);
    assert_eq!(
        filtered.hits[0].reference.to_string(),
        "corebank.member.savings_balance@1.0.0"
    );

    let mut out = String::new();
    let cases = [
        ("balance", SearchFilters::default()),
        (
            "balance",
            SearchFilters {
                max_risk: Some(RiskTier::Safe),
                ..SearchFilters::default()
            },
        ),
        (
            "balance",
            SearchFilters {
                surface: Some(SurfaceKind::Web),
                ..SearchFilters::default()
            },
        ),
        (
            "balance",
            SearchFilters {
                approved_only: true,
                ..SearchFilters::default()
            },
        ),
        (
            "balance",
            SearchFilters {
                max_risk: Some(RiskTier::Safe),
                surface: Some(SurfaceKind::LegacyWeb),
                approved_only: true,
            },
        ),
    ];
    for (text, filters) in cases {
        let results = index.search(&SearchQuery {
            text: text.to_owned(),
            filters,
            top_k: 10,
        });
        let hits: Vec<String> = results
            .hits
            .iter()
            .map(|hit| hit.reference.to_string())
            .collect();
        writeln!(
            out,
            "{filters:?}\n  filtered out {}: {}",
            results.filtered_out,
            hits.join(", ")
        )
        .unwrap();
    }
    insta::assert_snapshot!(out);
}

#[test]
fn ties_break_on_the_reference_and_order_of_arrival_does_not_matter() {
    let forward = index();
    let mut reversed_documents = documents();
    reversed_documents.reverse();
    let reversed = SearchIndex::build(reversed_documents);

    let results = forward.search(&query("update phone"));
    let references: Vec<String> = results
        .hits
        .iter()
        .map(|hit| hit.reference.to_string())
        .collect();
    assert_eq!(
        references,
        [
            "crm.contact.update_phone@1.0.0",
            "crm.contact.update_phone@1.1.0"
        ]
    );
    assert_eq!(results.hits[0].score, results.hits[1].score);

    for text in [
        "update phone",
        "look up a balance",
        "trasnfer acounts",
        "member",
        "carx card",
    ] {
        for top_k in [0, 1, 3, 10] {
            let search = SearchQuery {
                top_k,
                ..query(text)
            };
            let first = serde_json::to_string(&forward.search(&search)).unwrap();
            let again = serde_json::to_string(&forward.search(&search)).unwrap();
            let other = serde_json::to_string(&reversed.search(&search)).unwrap();
            assert_eq!(first, again, "{text} top {top_k}: repeatable");
            assert_eq!(
                first, other,
                "{text} top {top_k}: independent of arrival order"
            );
        }
    }
}

#[test]
fn top_k_is_a_prefix_of_the_full_ranking() {
    let index = index();
    let full = index.search(&SearchQuery {
        top_k: 100,
        ..query("member account balance")
    });
    for top_k in 0..full.hits.len() {
        let partial = index.search(&SearchQuery {
            top_k,
            ..query("member account balance")
        });
        assert_eq!(partial.hits, full.hits[..top_k], "top {top_k}");
    }
}

#[test]
fn an_explanation_adds_up_to_its_score() {
    let index = index();
    for text in [
        "savings balance",
        "trasnfer acounts",
        "look up balance zebra",
    ] {
        for hit in index.search(&query(text)).hits {
            let sum: f64 = hit
                .explanation
                .matches
                .iter()
                .map(|field_match| field_match.contribution)
                .sum();
            assert!((sum - hit.explanation.lexical).abs() < 1e-9, "{text}");
            let coord = hit.explanation.signals[0].value;
            assert_eq!(hit.score, hit.explanation.lexical * coord, "{text}");
        }
    }
}

#[test]
fn the_catalog_offers_usable_artifacts_only() {
    let fixture = Fixture::new();
    fixture.approve(SAVINGS, false).unwrap();
    // Tampered: listed, but not offered to search.
    fixture.edit(
        "corebank.member.transfer_funds@1.0.0",
        "title: Transfer funds",
        "title: Move funds",
    );
    let entries = fixture.catalog.list().unwrap();
    let documents = Catalog::search_documents(&entries);
    let references: Vec<String> = documents
        .iter()
        .map(|document| format!("{} approved={}", document.reference, document.approved))
        .collect();
    insta::assert_snapshot!(references.join("\n"));
    let index = SearchIndex::build(documents);
    let results = index.search(&query("savings balance for a member"));
    assert_eq!(results.hits[0].reference.to_string(), SAVINGS);
}
