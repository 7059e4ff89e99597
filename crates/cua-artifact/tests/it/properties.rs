//! Property: any capability that validates survives dump → load unchanged, with the same hash.
//! Capabilities are generated structurally (every action, predicate and value shape), with text
//! drawn from the strings YAML most likes to mangle.

use cua_artifact::{
    Action, Anchor, AnchorRelation, AppIdentity, Backoff, Capability, CapabilityPolicy, Entrypoint,
    Escalation, EscalationPolicy, FailureCode, Hints, Identifier, IdentityCheck, InputSpec,
    MatchMode, NameMatch, NodeQuery, NodeScope, Outcome, OutputSource, OutputSpec, Predicate,
    Provenance, RecoveryRule, RecoveryScope, Remedy, ResolutionStrategy, RiskTier, ScrollDirection,
    Step, Surface, SurfaceKind, TargetDescriptor, Transform, ValueExpr, ValueType, WaitCondition,
    WaitPolicy,
};
use proptest::prelude::*;

/// Text YAML readers are known to misread: booleans, nulls, numbers, indicators, quotes, line
/// breaks, exotic whitespace.
fn tricky_text() -> BoxedStrategy<String> {
    prop_oneof![
        Just(String::new()),
        Just("on".to_owned()),
        Just("yes".to_owned()),
        Just("No".to_owned()),
        Just("null".to_owned()),
        Just("~".to_owned()),
        Just("true".to_owned()),
        Just("12345".to_owned()),
        Just("0x1F".to_owned()),
        Just("1e3".to_owned()),
        Just("007".to_owned()),
        Just("- item".to_owned()),
        Just("key: value".to_owned()),
        Just("# not a comment".to_owned()),
        Just("{base_url}/search".to_owned()),
        Just("'single' and \"double\"".to_owned()),
        Just("  padded  ".to_owned()),
        Just("line one\nline two\n".to_owned()),
        Just("tab\there".to_owned()),
        Just("next\u{85}line".to_owned()),
        Just("sep\u{2028}arator".to_owned()),
        Just("Savings Bal.".to_owned()),
        Just("Ünïcödé – ✓".to_owned()),
        "[ -~]{0,24}",
        "\\PC{0,12}",
    ]
    .boxed()
}

fn words() -> impl Strategy<Value = String> {
    "[A-Z][a-z]{1,8}( [A-Z][a-z]{1,8}){0,2}"
}

fn identifier(prefix: &'static str, count: usize) -> impl Strategy<Value = Identifier> {
    (0..count).prop_map(move |index| {
        Identifier::parse(&format!("{prefix}{index}")).expect("a valid identifier")
    })
}

fn literal() -> BoxedStrategy<ValueExpr> {
    prop_oneof![
        tricky_text().prop_map(ValueExpr::String),
        any::<i64>().prop_map(ValueExpr::Integer),
        (-1.0e12f64..1.0e12).prop_map(ValueExpr::Number),
        any::<bool>().prop_map(ValueExpr::Boolean),
    ]
    .boxed()
}

/// Values that only reference the two inputs every generated capability declares.
fn value() -> BoxedStrategy<ValueExpr> {
    prop_oneof![3 => literal(), 1 => identifier("input_", 2).prop_map(ValueExpr::Input)].boxed()
}

fn match_mode() -> impl Strategy<Value = MatchMode> {
    prop_oneof![
        Just(MatchMode::Exact),
        Just(MatchMode::Normalized),
        Just(MatchMode::Contains)
    ]
}

fn scope() -> BoxedStrategy<Option<NodeScope>> {
    proptest::option::of(
        (
            proptest::option::of(Just("content".to_owned())),
            proptest::option::of(Just("detail_view".to_owned())),
        )
            .prop_map(|(frame, region)| NodeScope { frame, region }),
    )
    .boxed()
}

fn query() -> BoxedStrategy<NodeQuery> {
    (
        proptest::option::of(prop_oneof![
            Just("cell".to_owned()),
            Just("button".to_owned())
        ]),
        proptest::option::of(words()),
        proptest::option::of(words()),
        proptest::option::of(Just(r"^\$[0-9,]+\.[0-9]{2}$".to_owned())),
        scope(),
    )
        .prop_map(
            |(role, name, name_contains, name_matches, scope)| NodeQuery {
                role,
                name,
                name_contains,
                name_matches,
                scope,
            },
        )
        .boxed()
}

fn predicate() -> BoxedStrategy<Predicate> {
    let leaf = prop_oneof![
        (query(), 1u32..4)
            .prop_map(|(query, min_count)| Predicate::NodeExists { query, min_count }),
        query().prop_map(|query| Predicate::NodeAbsent { query }),
        (query(), value()).prop_map(|(query, value)| Predicate::NodeHasValue { query, value }),
        value().prop_map(|value| Predicate::TextPresent { value }),
        value().prop_map(|value| Predicate::TextAbsent { value }),
        Just(Predicate::UrlMatches {
            pattern: "/member/[0-9]+".into()
        }),
        proptest::collection::vec(200u16..600, 1..4)
            .prop_map(|codes| Predicate::HttpStatusIn { codes }),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 1..3).prop_map(|of| Predicate::AllOf { of }),
            proptest::collection::vec(inner.clone(), 1..3).prop_map(|of| Predicate::AnyOf { of }),
            inner.prop_map(|of| Predicate::Not { of: Box::new(of) }),
        ]
    })
    .boxed()
}

fn target() -> BoxedStrategy<TargetDescriptor> {
    (
        prop_oneof![
            Just("textbox"),
            Just("cell"),
            Just("combobox"),
            Just("link")
        ],
        proptest::option::of(
            (words(), match_mode()).prop_map(|(value, match_mode)| NameMatch { value, match_mode }),
        ),
        scope(),
        proptest::option::of(
            (
                prop_oneof![
                    Just(AnchorRelation::RowOf),
                    Just(AnchorRelation::AdjacentTo),
                    Just(AnchorRelation::WithinSection),
                    Just(AnchorRelation::LabelledBy)
                ],
                words(),
                match_mode(),
            )
                .prop_map(|(relation, text, match_mode)| Anchor {
                    relation,
                    text,
                    match_mode,
                }),
        ),
        proptest::option::of((0u32..4, proptest::option::of(words()), value()).prop_map(
            |(ordinal, column, equals)| {
                (
                    ordinal,
                    IdentityCheck {
                        column,
                        equals,
                        match_mode: MatchMode::Normalized,
                    },
                )
            },
        )),
        proptest::option::of(Just(r#"input[name="memno"]"#.to_owned())),
        proptest::option::of(prop_oneof![
            Just(ResolutionStrategy::SemanticExact),
            Just(ResolutionStrategy::StructuralAnchor),
            Just(ResolutionStrategy::OrdinalInRegion)
        ]),
    )
        .prop_map(
            |(role, name, scope, anchor, positional, css, recorded_strategy)| TargetDescriptor {
                role: role.to_owned(),
                name,
                scope,
                anchor,
                ordinal: positional.as_ref().map(|(ordinal, _)| *ordinal),
                identity: positional.map(|(_, identity)| identity),
                hints: Hints { css },
                recorded_strategy,
            },
        )
        .boxed()
}

/// A step's action, description, precondition, wait and postcondition.
type StepParts = (
    Action,
    String,
    Option<Predicate>,
    WaitPolicy,
    Option<Predicate>,
);

/// Every action but `extract` (added per output) and `raw_input` (never valid in an artifact).
fn action() -> BoxedStrategy<Action> {
    prop_oneof![
        target().prop_map(|target| Action::Click {
            target,
            accept_confirm: None,
        }),
        (target(), value(), any::<bool>()).prop_map(|(target, value, clear_first)| Action::Type {
            target,
            value,
            clear_first
        }),
        (target(), value()).prop_map(|(target, value)| Action::Select { target, value }),
        (
            prop_oneof![Just("Enter"), Just("Tab")],
            proptest::option::of(target())
        )
            .prop_map(|(key, target)| Action::PressKey {
                key: key.into(),
                target
            }),
        Just(Action::Navigate {
            url: "{base_url}/search".into()
        }),
        Just(Action::Reload {}),
        (
            prop_oneof![
                Just(ScrollDirection::Up),
                Just(ScrollDirection::Down),
                Just(ScrollDirection::IntoView)
            ],
            proptest::option::of(target()),
            proptest::option::of(1u32..10)
        )
            .prop_map(|(direction, target, amount)| Action::Scroll {
                direction,
                target,
                amount
            }),
        (predicate(), 1u32..60_000)
            .prop_map(|(until, timeout_ms)| Action::WaitFor { until, timeout_ms }),
        predicate().prop_map(|that| Action::Assert { that }),
    ]
    .boxed()
}

fn wait() -> BoxedStrategy<WaitPolicy> {
    prop_oneof![
        (1u32..30_000).prop_map(|timeout_ms| WaitPolicy {
            condition: WaitCondition::SnapshotStable,
            timeout_ms,
            until: None
        }),
        (1u32..30_000).prop_map(|timeout_ms| WaitPolicy {
            condition: WaitCondition::Navigation,
            timeout_ms,
            until: None
        }),
        (1u32..30_000, predicate()).prop_map(|(timeout_ms, until)| WaitPolicy {
            condition: WaitCondition::Predicate,
            timeout_ms,
            until: Some(until)
        }),
    ]
    .boxed()
}

fn step() -> BoxedStrategy<StepParts> {
    (
        action(),
        tricky_text(),
        proptest::option::of(predicate()),
        wait(),
        proptest::option::of(predicate()),
    )
        .boxed()
}

fn input(index: usize) -> BoxedStrategy<InputSpec> {
    (
        prop_oneof![
            Just(ValueType::String),
            Just(ValueType::Integer),
            Just(ValueType::Money),
            Just(ValueType::Date),
            Just(ValueType::Boolean)
        ],
        any::<bool>(),
        tricky_text(),
        any::<bool>(),
    )
        .prop_map(
            move |(value_type, required, description, sensitive)| InputSpec {
                name: Identifier::parse(&format!("input_{index}")).expect("valid"),
                value_type,
                required,
                description,
                pattern: None,
                allowed: Vec::new(),
                default: None,
                example: None,
                sensitive,
                idempotency_key: false,
            },
        )
        .boxed()
}

prop_compose! {
    fn capability()(
        title in tricky_text(),
        description in tricky_text(),
        kind in prop_oneof![Just(SurfaceKind::Web), Just(SurfaceKind::LegacyWeb), Just(SurfaceKind::Desktop)],
        inputs in (input(0), input(1)),
        steps in proptest::collection::vec(step(), 1..5),
        extract_target in target(),
        checkpoint in predicate(),
        outcomes in proptest::collection::vec((tricky_text(), predicate(), any::<bool>(), proptest::option::of(value())), 0..3),
        recovery in proptest::collection::vec((predicate(), 1u8..=10, prop_oneof![Just(Backoff::None), Just(Backoff::Linear), Just(Backoff::Exponential)]), 0..3),
        triggers in proptest::sample::subsequence(FailureCode::ALL.to_vec(), 0..5),
        fail_closed in any::<bool>(),
        risks in proptest::collection::vec(prop_oneof![Just(RiskTier::Safe), Just(RiskTier::Elevated), Just(RiskTier::Irreversible)], 6),
        notes in tricky_text(),
    ) -> Capability {
        let mut all_steps: Vec<Step> = steps
            .into_iter()
            .enumerate()
            .map(|(index, (action, description, precondition, wait, postcondition))| Step {
                id: Identifier::parse(&format!("step_{index}")).expect("valid"),
                description,
                action,
                precondition,
                wait,
                // Irreversible steps need a postcondition; give every elevated-or-worse one.
                postcondition: postcondition.or_else(|| (risks[index] == RiskTier::Irreversible).then(|| Predicate::TextPresent { value: ValueExpr::String("Done".into()) })),
                risk: risks[index],
                via: None,
                reconcile: None,
            })
            .collect();
        let extract_id = Identifier::parse("read_result").expect("valid");
        all_steps.push(Step {
            id: extract_id.clone(),
            description: String::new(),
            action: Action::Extract { target: extract_target, into: Identifier::parse("result").expect("valid"), transform: Some(Transform::Money) },
            precondition: None,
            wait: WaitPolicy::default(),
            postcondition: None,
            risk: RiskTier::Safe,
            via: None,
            reconcile: None,
        });
        let (first, second) = inputs;
        Capability {
            schema: Default::default(),
            id: "acme.member.generated".parse().expect("valid"),
            version: "1.2.3-rc.1".parse().expect("valid"),
            title,
            description,
            surface: Surface { kind, driver_capabilities: vec![cua_artifact::DriverCapability::SemanticTree], app: AppIdentity { vendor: "acme".into(), product: "Desk".into(), version_range: Some(">=4.2 <5".into()) } },
            entrypoint: Entrypoint { url: "{base_url}/".into() },
            inputs: vec![first, second],
            outputs: vec![OutputSpec { name: Identifier::parse("result").expect("valid"), value_type: ValueType::Money, description: String::new(), source: OutputSource { step: extract_id }, sensitive: false }],
            steps: all_steps,
            checkpoint,
            outcomes: outcomes.into_iter().enumerate().map(|(index, (description, detect, terminal, returned))| Outcome {
                code: Identifier::parse(&format!("outcome_{index}")).expect("valid"),
                description,
                detect,
                terminal,
                returns: returned.into_iter().map(|value| (Identifier::parse("value").expect("valid"), value)).collect(),
            }).collect(),
            recovery: recovery.into_iter().enumerate().map(|(index, (detect, max_attempts, backoff))| RecoveryRule {
                id: Identifier::parse(&format!("rule_{index}")).expect("valid"),
                description: String::new(),
                detect,
                remedy: vec![Remedy::Action(Action::Reload {})],
                max_attempts,
                backoff,
                scope: RecoveryScope::AnyStep,
                steps: Vec::new(),
            }).collect(),
            escalation: Escalation { triggers, policy: if fail_closed { EscalationPolicy::FailClosed } else { EscalationPolicy::PauseAndRequestHuman } },
            policy: CapabilityPolicy {
                allowed_domains: vec!["{base_url}".into()],
                allowed_actions: cua_artifact::ActionKind::ALL.into_iter().filter(|kind| !kind.is_human_only()).collect(),
                max_steps: 40,
                max_duration_ms: 120_000,
            },
            provenance: Provenance { notes, ..Provenance::default() },
            content_hash: None,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn valid_capabilities_round_trip_with_the_same_hash(capability in capability()) {
        let sealed = capability.sealed();
        let text = sealed.to_yaml().expect("dumps");
        let reloaded: Capability = cua_artifact::yaml::from_yaml(&text)
            .map_err(|error| TestCaseError::fail(format!("{error}\n{text}")))?;
        prop_assert_eq!(&reloaded, &sealed, "{}", text);
        prop_assert_eq!(reloaded.compute_hash(), sealed.compute_hash());
        if sealed.validate().is_empty() {
            let loaded = Capability::from_yaml(&text).map_err(|error| TestCaseError::fail(error.to_string()))?;
            prop_assert_eq!(loaded.content_hash, sealed.content_hash);
        }
    }
}
