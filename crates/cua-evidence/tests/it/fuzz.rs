//! Fuzzing the verifier: a finished run's trace mangled at random (bytes flipped, cut, repeated,
//! inserted, lines swapped or dropped). Whatever the bytes, `verify` never panics, and no change
//! to a finished run's trace leaves it intact.

use std::fs;
use std::path::Path;

use cua_evidence::{TRACE_FILE, verify};
use proptest::prelude::*;

use crate::{bus, policy_redactor, replay_run};

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, to: u8 },
    Cut { at: usize, len: usize },
    Repeat { at: usize, len: usize },
    Insert { at: usize, bytes: Vec<u8> },
    SwapLines { first: usize, second: usize },
    DropLine { line: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, to)| Mutation::Flip { at, to }),
        (any::<usize>(), 1usize..200).prop_map(|(at, len)| Mutation::Cut { at, len }),
        (any::<usize>(), 1usize..200).prop_map(|(at, len)| Mutation::Repeat { at, len }),
        (
            any::<usize>(),
            prop_oneof![
                Just(b"\n".to_vec()),
                Just(b"}".to_vec()),
                Just(b"\"line_hash\":\"blake3:00\"".to_vec()),
                proptest::collection::vec(any::<u8>(), 1..16),
            ]
        )
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), any::<usize>())
            .prop_map(|(first, second)| Mutation::SwapLines { first, second }),
        any::<usize>().prop_map(|line| Mutation::DropLine { line }),
    ]
}

fn apply(trace: &[u8], mutation: &Mutation) -> Vec<u8> {
    let len = trace.len().max(1);
    let mut out = trace.to_vec();
    match mutation {
        Mutation::Flip { at, to } => {
            if !out.is_empty() {
                out[at % len] = *to;
            }
        }
        Mutation::Cut { at, len: cut } => {
            let start = at % len;
            let end = (start + cut).min(out.len());
            out.drain(start..end);
        }
        Mutation::Repeat { at, len: span } => {
            let start = at % len;
            let end = (start + span).min(out.len());
            let copy = out[start..end].to_vec();
            out.splice(end..end, copy);
        }
        Mutation::Insert { at, bytes } => {
            let at = at % (out.len() + 1);
            out.splice(at..at, bytes.iter().copied());
        }
        Mutation::SwapLines { first, second } => {
            let mut lines: Vec<Vec<u8>> = out
                .split_inclusive(|&byte| byte == b'\n')
                .map(<[u8]>::to_vec)
                .collect();
            let count = lines.len().max(1);
            if !lines.is_empty() {
                lines.swap(first % count, second % count);
            }
            out = lines.concat();
        }
        Mutation::DropLine { line } => {
            let mut lines: Vec<Vec<u8>> = out
                .split_inclusive(|&byte| byte == b'\n')
                .map(<[u8]>::to_vec)
                .collect();
            if !lines.is_empty() {
                let count = lines.len();
                lines.remove(line % count);
            }
            out = lines.concat();
        }
    }
    out
}

fn finished_run(root: &Path) -> std::path::PathBuf {
    let bus = bus(root, "run-fuzzed", policy_redactor());
    replay_run(&bus);
    bus.finish().expect("the run record is written");
    bus.dir().to_owned()
}

/// One finished run, mangled and verified once per case and restored after it: building a run
/// per case would spend the test on writing runs rather than on mangling them.
#[test]
fn no_mangled_trace_panics_the_verifier_or_verifies() {
    let root = tempfile::tempdir().expect("a root");
    let dir = finished_run(root.path());
    let trace_file = dir.join(TRACE_FILE);
    let original = fs::read(&trace_file).expect("the trace");
    assert!(verify(&dir).expect("a run directory").is_intact());
    let config = ProptestConfig {
        cases: 400,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let outcome = runner.run(&proptest::collection::vec(mutation(), 1..4), |mutations| {
        let mut trace = original.clone();
        for mutation in &mutations {
            trace = apply(&trace, mutation);
        }
        fs::write(&trace_file, &trace).expect("the trace is writable");
        let report = verify(&dir).expect("still a run directory");
        fs::write(&trace_file, &original).expect("the trace is restored");
        if trace != original {
            prop_assert!(!report.is_intact(), "a changed trace verified: {report:?}");
        } else {
            prop_assert!(report.is_intact(), "{report:?}");
        }
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}
