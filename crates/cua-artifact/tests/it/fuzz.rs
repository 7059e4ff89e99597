//! Fuzzing the loaders with hostile documents: the repository's own capabilities, policy and
//! tenant bindings, cut, repeated, spliced and salted with the tokens YAML and our templates
//! most like to misread. Whatever comes in, loading never panics, and a document that loads is
//! one that validates: a tenant overlay that applies yields a capability with no problems.

use std::path::{Path, PathBuf};

use cua_artifact::check_source;
use cua_artifact::{Capability, PolicyConfig, TenantBinding};
use proptest::prelude::*;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo().join(relative))
        .unwrap_or_else(|error| panic!("the corpus file {relative}: {error}"))
}

/// The seeds: real documents of each kind the loaders take.
fn seeds() -> Vec<(&'static str, String)> {
    let mut seeds = vec![
        ("policy", read("config/policy.yaml")),
        (
            "capability",
            read("capabilities/corebank.member.savings_balance@1.0.0.yaml"),
        ),
        (
            "capability",
            read("capabilities/corebank.member.transfer_funds@1.0.0.yaml"),
        ),
    ];
    for binding in [
        "corebank.member.savings_balance",
        "corebank.member.transfer_funds",
        "corebank.member.open_subaccount",
    ] {
        seeds.push((
            "binding",
            read(&format!("tenants/northgate-fcu/{binding}.yaml")),
        ));
    }
    seeds
}

/// Tokens spliced in: YAML indicators and aliases, tags, templates of every kind, unbalanced
/// quotes and brackets, exotic whitespace, a long run.
const TOKENS: &[&str] = &[
    "\n",
    ": ",
    "- ",
    "&a ",
    "*a",
    "<<: *a\n",
    "!!binary ",
    "!custom ",
    "{$input: member_id}",
    "{$secret: x}",
    "{$output: y}",
    "{base_url}",
    "{",
    "}",
    "[",
    "'",
    "\"",
    "#",
    "|\n",
    ">-\n",
    "\t",
    "\u{feff}",
    "\u{2028}",
    "~",
    "null",
    "0x7fffffffffffffff",
    "99999999999999999999999",
    "-1",
    "NaN",
    "content_hash: blake3:0000\n",
];

#[derive(Debug, Clone)]
enum Mutation {
    /// Removes `len` bytes at `at` (both taken modulo the text's length).
    Cut { at: usize, len: usize },
    /// Repeats a span at `at` of `len` bytes, `times` times.
    Repeat { at: usize, len: usize, times: usize },
    /// Inserts a token at `at`.
    Splice { at: usize, token: usize },
    /// Swaps two lines.
    SwapLines { first: usize, second: usize },
    /// Changes the indentation of a line.
    Indent { line: usize, by: isize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0usize..64).prop_map(|(at, len)| Mutation::Cut { at, len }),
        (any::<usize>(), 1usize..48, 1usize..4).prop_map(|(at, len, times)| Mutation::Repeat {
            at,
            len,
            times
        }),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, token)| Mutation::Splice { at, token }),
        (any::<usize>(), any::<usize>())
            .prop_map(|(first, second)| Mutation::SwapLines { first, second }),
        (any::<usize>(), -4isize..5).prop_map(|(line, by)| Mutation::Indent { line, by }),
    ]
}

/// The nearest char boundary at or before `at`.
fn boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn apply(text: &str, mutation: &Mutation) -> String {
    let len = text.len().max(1);
    match *mutation {
        Mutation::Cut { at, len: cut } => {
            let start = boundary(text, at % len);
            let end = boundary(text, start + cut);
            format!("{}{}", &text[..start], &text[end..])
        }
        Mutation::Repeat {
            at,
            len: span,
            times,
        } => {
            let start = boundary(text, at % len);
            let end = boundary(text, start + span);
            let repeated = text[start..end].repeat(times + 1);
            format!("{}{repeated}{}", &text[..start], &text[end..])
        }
        Mutation::Splice { at, token } => {
            let at = boundary(text, at % len);
            format!("{}{}{}", &text[..at], TOKENS[token], &text[at..])
        }
        Mutation::SwapLines { first, second } => {
            let mut lines: Vec<&str> = text.lines().collect();
            if !lines.is_empty() {
                let count = lines.len();
                lines.swap(first % count, second % count);
            }
            lines.join("\n")
        }
        Mutation::Indent { line, by } => {
            let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
            if !lines.is_empty() {
                let count = lines.len();
                let target = &mut lines[line % count];
                if by >= 0 {
                    target.insert_str(0, &" ".repeat(by.unsigned_abs()));
                } else {
                    let strip = target
                        .chars()
                        .take(by.unsigned_abs())
                        .take_while(|c| *c == ' ')
                        .count();
                    target.replace_range(..strip, "");
                }
            }
            lines.join("\n")
        }
    }
}

fn base(binding: &TenantBinding) -> Option<Capability> {
    let file = format!("capabilities/{}.yaml", binding.capability);
    Capability::from_yaml(&std::fs::read_to_string(repo().join(file)).ok()?).ok()
}

/// Loads a mutated document every way the product does; panics are the failure.
fn load(kind: &str, text: &str) -> Result<(), TestCaseError> {
    // The checker `cua validate` runs, which also finds the document's kind.
    let _ = check_source("fuzzed.yaml", text);
    match kind {
        "policy" => {
            let _ = PolicyConfig::from_yaml(text);
        }
        "capability" => {
            if let Ok(capability) = Capability::from_yaml(text) {
                prop_assert!(
                    capability.validate().is_empty(),
                    "a capability that loads validates"
                );
            }
        }
        _ => {
            if let Ok(binding) = TenantBinding::from_yaml(text)
                && let Some(base) = base(&binding)
                && let Ok(effective) = binding.apply(&base)
            {
                prop_assert!(
                    effective.validate().is_empty(),
                    "an overlay that applies yields a valid capability:\n{text}"
                );
            }
        }
    }
    Ok(())
}

/// 2,000 cases, or `CUA_FUZZ_CASES` (mutation testing runs this once per mutant, and its
/// loaders are unoptimized there).
fn cases() -> u32 {
    std::env::var("CUA_FUZZ_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .filter(|&cases| cases > 0)
        .unwrap_or(2000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn no_mangled_document_panics_a_loader_or_loads_invalid(
        seed in 0usize..6,
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let (kind, original) = &seeds()[seed];
        let mut text = original.clone();
        for mutation in &mutations {
            text = apply(&text, mutation);
        }
        load(kind, &text)?;
    }
}

#[test]
fn the_seeds_load_unmangled() {
    for (kind, text) in seeds() {
        match kind {
            "policy" => assert!(PolicyConfig::from_yaml(&text).is_ok()),
            "capability" => assert!(Capability::from_yaml(&text).is_ok()),
            _ => {
                let binding = TenantBinding::from_yaml(&text).expect("a seed binding loads");
                let base = base(&binding).expect("its base capability loads");
                binding.apply(&base).expect("a seed overlay applies");
            }
        }
    }
}
