//! Warm search over 10,000 synthetic capabilities: build the index once, then time each query
//! many times and print the median. Printed, never asserted: the goal is "well under a
//! millisecond" on a developer machine, and a shared CI runner is no place to enforce it.
//!
//! The capabilities are clones of a reference artifact with generated ids, titles,
//! descriptions, inputs, outputs, outcome codes, risks and surfaces, drawn from a fixed-seed
//! generator so every run indexes the same corpus.
#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use cua_artifact::{Capability, CapabilityId, Identifier, RiskTier, SurfaceKind};
use cua_catalog::{SearchDocument, SearchFilters, SearchIndex, SearchQuery};

const TEMPLATE: &str =
    include_str!("../tests/fixtures/capabilities/corebank.member.transfer_funds@1.0.0.yaml");
const CAPABILITIES: usize = 10_000;
const ITERATIONS: usize = 501;

const SYSTEMS: [&str; 12] = [
    "corebank",
    "cards",
    "lending",
    "crm",
    "billing",
    "payroll",
    "claims",
    "insurance",
    "ledger",
    "treasury",
    "helpdesk",
    "inventory",
];
const DOMAINS: [&str; 20] = [
    "member",
    "account",
    "loan",
    "card",
    "payment",
    "address",
    "statement",
    "transfer",
    "deposit",
    "customer",
    "invoice",
    "policy",
    "claim",
    "employee",
    "ticket",
    "order",
    "shipment",
    "vendor",
    "contract",
    "branch",
];
const VERBS: [&str; 20] = [
    "lookup", "open", "close", "update", "freeze", "unfreeze", "reissue", "approve", "cancel",
    "export", "verify", "schedule", "reverse", "list", "search", "create", "delete", "assign",
    "escalate", "renew",
];
const OBJECTS: [&str; 20] = [
    "balance",
    "status",
    "history",
    "limit",
    "address",
    "owner",
    "beneficiary",
    "fee",
    "rate",
    "schedule",
    "document",
    "note",
    "contact",
    "phone",
    "email",
    "signature",
    "pin",
    "hold",
    "dispute",
    "refund",
];
const PROSE: [&str; 40] = [
    "given",
    "the",
    "operator",
    "opens",
    "record",
    "and",
    "returns",
    "current",
    "value",
    "when",
    "business",
    "outcome",
    "not",
    "error",
    "screen",
    "legacy",
    "form",
    "reads",
    "only",
    "changes",
    "nothing",
    "submits",
    "request",
    "confirmation",
    "number",
    "date",
    "effective",
    "queue",
    "review",
    "branch",
    "office",
    "daily",
    "batch",
    "report",
    "signed",
    "session",
    "frame",
    "search",
    "results",
    "detail",
];

/// A fixed-seed xorshift generator: the same corpus on every run and every machine.
struct Generator(u64);

impl Generator {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[(self.next() % words.len() as u64) as usize]
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

fn corpus() -> Vec<SearchDocument> {
    let template = Capability::from_yaml(TEMPLATE).expect("the template capability is valid");
    let mut generator = Generator(0x5eed_cafe_f00d_d00d);
    let mut seen = std::collections::BTreeSet::new();
    let mut documents = Vec::with_capacity(CAPABILITIES);
    while documents.len() < CAPABILITIES {
        let (system, domain) = (generator.pick(&SYSTEMS), generator.pick(&DOMAINS));
        let (verb, object) = (generator.pick(&VERBS), generator.pick(&OBJECTS));
        let mut id = format!("{system}.{domain}.{verb}_{object}");
        if !seen.insert(id.clone()) {
            id = format!("{id}_v{}", documents.len());
            seen.insert(id.clone());
        }
        let mut capability = template.clone();
        capability.id = CapabilityId::parse(&id).expect("generated ids are valid");
        capability.title = format!("{verb} the {domain}'s {object}");
        let words = 12 + generator.below(24);
        capability.description = (0..words)
            .map(|_| match generator.below(5) {
                0 => generator.pick(&DOMAINS),
                1 => generator.pick(&OBJECTS),
                _ => generator.pick(&PROSE),
            })
            .collect::<Vec<_>>()
            .join(" ");
        let inputs = 1 + generator.below(3) as usize;
        capability.inputs.truncate(inputs);
        for input in &mut capability.inputs {
            let name = format!("{}_{}", generator.pick(&DOMAINS), generator.pick(&OBJECTS));
            input.name = Identifier::parse(&name).expect("generated names are valid");
        }
        for output in &mut capability.outputs {
            output.name = Identifier::parse(generator.pick(&OBJECTS)).expect("valid");
        }
        let outcomes = generator.below(4) as usize;
        capability.outcomes.truncate(outcomes);
        for outcome in &mut capability.outcomes {
            let code = format!("{}_{}", generator.pick(&DOMAINS), "not_found");
            outcome.code = Identifier::parse(&code).expect("generated codes are valid");
        }
        let risk = match generator.below(10) {
            0 => RiskTier::Irreversible,
            1..=3 => RiskTier::Elevated,
            _ => RiskTier::Safe,
        };
        for step in &mut capability.steps {
            step.risk = RiskTier::Safe;
        }
        if let Some(step) = capability.steps.first_mut() {
            step.risk = risk;
        }
        capability.surface.kind = match generator.below(3) {
            0 => SurfaceKind::Web,
            1 => SurfaceKind::LegacyWeb,
            _ => SurfaceKind::Desktop,
        };
        let approved = generator.below(2) == 0;
        documents.push(SearchDocument::from_capability(&capability, approved));
    }
    documents
}

/// The median and the fastest sample. On a shared machine the median carries other people's
/// load; the fastest is the closest estimate of the query's own cost.
fn median_and_min(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort_unstable();
    (samples[samples.len() / 2], samples[0])
}

fn main() {
    let documents = corpus();
    let started = Instant::now();
    let index = SearchIndex::build(documents);
    let build = started.elapsed();
    println!(
        "indexed {} capabilities ({} terms) in {:.1} ms",
        index.len(),
        index.vocabulary_size(),
        build.as_secs_f64() * 1e3
    );

    let safe_only = SearchFilters {
        max_risk: Some(RiskTier::Safe),
        ..SearchFilters::default()
    };
    let approved_legacy = SearchFilters {
        surface: Some(SurfaceKind::LegacyWeb),
        approved_only: true,
        ..SearchFilters::default()
    };
    let queries = [
        ("member savings balance", SearchFilters::default()),
        ("freeze a card", SearchFilters::default()),
        (
            "look up the customer's address history for the branch",
            SearchFilters::default(),
        ),
        ("transfer balance", SearchFilters::default()),
        ("trasnfer balnce", SearchFilters::default()),
        ("reissue card pin", SearchFilters::default()),
        ("reissu crad pin", SearchFilters::default()),
        ("lookup loan status", safe_only),
        ("approve invoice refund", approved_legacy),
        ("zebra quantum", SearchFilters::default()),
    ];
    println!(
        "{:<58} {:>8} {:>5} {:>11} {:>11}",
        "query", "matched", "hits", "median", "min"
    );
    for (text, filters) in queries {
        let query = SearchQuery {
            text: text.to_owned(),
            filters,
            top_k: 10,
        };
        for _ in 0..20 {
            black_box(index.search(black_box(&query)));
        }
        let mut samples = Vec::with_capacity(ITERATIONS);
        let mut last = None;
        for _ in 0..ITERATIONS {
            let started = Instant::now();
            let results = index.search(black_box(&query));
            samples.push(started.elapsed());
            last = Some(results);
        }
        let results = last.expect("at least one iteration ran");
        let label = format!("{text:?}");
        let (median, min) = median_and_min(samples);
        println!(
            "{label:<58} {:>8} {:>5} {:>8.1} µs {:>8.1} µs",
            results.matched,
            results.hits.len(),
            median.as_secs_f64() * 1e6,
            min.as_secs_f64() * 1e6
        );
    }
}
