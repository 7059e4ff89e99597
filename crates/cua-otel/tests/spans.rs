//! The spans of a real replay's trace (`replay_trace.jsonl`, the evidence crate's determinism
//! run): one trace, unique ids, every parent present, steps under the run and their events under
//! them, no span ending before it starts, every text through the redaction, and the same request
//! each time.

#![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

use std::collections::BTreeSet;

use cua_evidence::TraceLine;
use cua_otel::request;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;

fn lines() -> Vec<TraceLine> {
    include_str!("replay_trace.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn spans(redact: &dyn Fn(&str) -> String) -> Vec<Span> {
    request(&lines(), "cua", redact).resource_spans[0].scope_spans[0]
        .spans
        .clone()
}

fn texts(span: &Span) -> Vec<String> {
    let mut all = vec![span.name.clone()];
    for attribute in &span.attributes {
        if let Some(any_value::Value::StringValue(text)) = attribute
            .value
            .as_ref()
            .and_then(|value| value.value.clone())
        {
            all.push(text);
        }
    }
    all
}

#[test]
fn a_run_is_one_tree_of_spans() {
    let spans = spans(&|text| text.to_owned());
    let ids: BTreeSet<&Vec<u8>> = spans.iter().map(|span| &span.span_id).collect();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
    let traces: BTreeSet<&Vec<u8>> = spans.iter().map(|span| &span.trace_id).collect();
    assert_eq!(traces.len(), 1);
    let root = &spans[0];
    assert!(root.parent_span_id.is_empty());
    assert!(root.name.starts_with("run "), "{}", root.name);
    for span in &spans[1..] {
        assert!(
            ids.contains(&span.parent_span_id),
            "{} has no parent",
            span.name
        );
        assert!(
            span.start_time_unix_nano <= span.end_time_unix_nano,
            "{}",
            span.name
        );
        assert!(
            span.end_time_unix_nano <= root.end_time_unix_nano,
            "{}",
            span.name
        );
    }
    let step = spans
        .iter()
        .find(|span| span.name == "step open_details")
        .expect("the step's span");
    assert_eq!(step.parent_span_id, root.span_id);
    let under: BTreeSet<&str> = spans
        .iter()
        .filter(|span| span.parent_span_id == step.span_id)
        .map(|span| span.name.as_str())
        .collect();
    for name in ["resolve", "authorize", "dispatch", "verify"] {
        assert!(under.contains(name), "{name} among {under:?}");
    }
}

#[test]
fn every_text_goes_through_the_redaction_and_the_request_is_the_same_each_time() {
    let masked = spans(&|text| text.replace("Member Details", "[REDACTED]"));
    assert!(
        masked
            .iter()
            .flat_map(texts)
            .all(|text| !text.contains("Member Details"))
    );
    assert!(
        masked
            .iter()
            .flat_map(texts)
            .any(|text| text.contains("[REDACTED]")),
        "the trace quotes the heading, so the redaction had something to mask"
    );
    let same = |text: &str| text.to_owned();
    assert_eq!(
        request(&lines(), "cua", &same),
        request(&lines(), "cua", &same)
    );
}
