//! Optional OpenTelemetry export of a run.
//!
//! A finished run's trace (`trace.jsonl`, already redacted by the evidence bus) becomes one
//! OTLP trace: a `run` span, a span per step under it, and under each step a span per event
//! (`resolve`, `authorize`, `intent`, `dispatch`, `wait`, `verify`, `effect`, …), each lasting
//! until the next line of the trace. A model call is a `chat {model}` span with the GenAI
//! semantic conventions (`gen_ai.operation.name`, `gen_ai.provider.name`,
//! `gen_ai.request.model`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`).
//!
//! Events that name a step are under its span; the others (observations between steps, leases,
//! model calls of a discovery, notes) are under the run's.
//!
//! Built from the trace and nothing else, the spans hold no more than the trace does, and every
//! text goes through the caller's redaction once more (the run's final redactor knows values
//! read late in the run): a secret never reaches the collector. Their ids derive from the run's
//! first line hash (BLAKE3), unique to the run, so exporting a run twice sends the same trace,
//! and [`request`] reads no clock and draws no randomness.
//!
//! Off by default: [`OtlpConfig::from_env`] reads the standard `OTEL_*` variables, and only an
//! endpoint turns export on (`OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it
//! off again). The wire is OTLP/HTTP with protobuf (`http/protobuf`, the protocol's default),
//! with the headers `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS` name.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cua_artifact::RunStatus;
use cua_evidence::{Event, TraceLine};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use prost::Message as _;

/// The variable naming the whole traces URL (used as it is).
pub const TRACES_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The variable naming the collector's base URL (`/v1/traces` is appended).
pub const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The variables naming the protocol; only `http/protobuf` is spoken.
pub const PROTOCOL_ENVS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
];
/// The variable naming the service (`cua` when unset).
pub const SERVICE_NAME_ENV: &str = "OTEL_SERVICE_NAME";
/// The variables naming headers sent with each export (`key=value,…`, values percent-encoded),
/// the traces one first.
pub const HEADERS_ENVS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_HEADERS",
];

/// How long one export may take before it is given up: a run's result is already decided, and
/// a batch must not wait on a collector.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// Set once an export failed: the process does not try again, so a collector that is down
/// costs a batch one timeout, not one per row.
static GAVE_UP: AtomicBool = AtomicBool::new(false);

/// Why a run was not exported.
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    /// The configuration in the environment is not one cua can use.
    #[error("{variable}={value:?}: {reason}")]
    Config {
        variable: &'static str,
        value: String,
        reason: &'static str,
    },
    /// The collector could not be reached or refused the export.
    #[error("the trace was not exported to {endpoint}: {reason}")]
    Export { endpoint: String, reason: String },
    /// An earlier export of this process failed; no more are tried.
    #[error("the trace was not exported to {endpoint}: an earlier export failed")]
    GaveUp { endpoint: String },
}

/// Where spans go, under which service name and with which headers.
#[derive(Clone, PartialEq, Eq)]
pub struct OtlpConfig {
    /// The traces URL the request is posted to.
    pub endpoint: String,
    /// `service.name` of the resource.
    pub service: String,
    /// Headers sent with each export (an API key, say): never printed.
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for OtlpConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OtlpConfig")
            .field("endpoint", &shown(&self.endpoint))
            .field("service", &self.service)
            .field("headers", &self.headers.len())
            .finish()
    }
}

impl OtlpConfig {
    /// The endpoint as it may be printed: without a `user:password@` part.
    pub fn shown_endpoint(&self) -> String {
        shown(&self.endpoint)
    }
}

/// `url` without the credentials a `user:password@` part holds.
fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

impl OtlpConfig {
    /// The configuration the standard variables give, read through `lookup`; `None` (export
    /// off) when neither endpoint variable is set. A protocol other than `http/protobuf`, or an
    /// endpoint that is not an `http` or `https` URL, is an error naming the variable.
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, OtelError> {
        let set = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let disabled = set("OTEL_SDK_DISABLED")
            .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"))
            || set("OTEL_TRACES_EXPORTER")
                .is_some_and(|value| value.trim().eq_ignore_ascii_case("none"));
        if disabled || (set(TRACES_ENDPOINT_ENV).is_none() && set(ENDPOINT_ENV).is_none()) {
            return Ok(None);
        }
        // The traces variable wins over the general one, as the specification says.
        if let Some((variable, value)) = PROTOCOL_ENVS
            .iter()
            .find_map(|variable| set(variable).map(|value| (*variable, value)))
            && value.trim() != "http/protobuf"
        {
            return Err(OtelError::Config {
                variable,
                value,
                reason: "cua exports over OTLP/HTTP with protobuf only: set it to \
                         http/protobuf or unset it",
            });
        }
        let headers = match HEADERS_ENVS
            .iter()
            .find_map(|variable| set(variable).map(|value| (*variable, value)))
        {
            Some((variable, value)) => headers(&value).ok_or(OtelError::Config {
                variable,
                value: "(not shown)".to_owned(),
                reason: "headers are key=value pairs separated by commas, values \
                         percent-encoded",
            })?,
            None => Vec::new(),
        };
        let (variable, endpoint) = if let Some(url) = set(TRACES_ENDPOINT_ENV) {
            (TRACES_ENDPOINT_ENV, url.trim().to_owned())
        } else if let Some(base) = set(ENDPOINT_ENV) {
            (
                ENDPOINT_ENV,
                format!("{}/v1/traces", base.trim().trim_end_matches('/')),
            )
        } else {
            return Ok(None);
        };
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(OtelError::Config {
                variable,
                value: shown(&endpoint),
                reason: "the collector's endpoint must be an http:// or https:// URL",
            });
        }
        let service = set(SERVICE_NAME_ENV).unwrap_or_else(|| "cua".to_owned());
        Ok(Some(Self {
            endpoint,
            service,
            headers,
        }))
    }
}

/// `key=value,key=value` with percent-encoded values, or `None` when a pair has no `=`, an empty
/// key, or a value that does not decode to UTF-8.
fn headers(text: &str) -> Option<Vec<(String, String)>> {
    text.split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=')?;
            let key = key.trim();
            if key.is_empty() {
                return None;
            }
            Some((key.to_owned(), percent_decoded(value.trim())?))
        })
        .collect()
}

fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Posts the spans of `lines` (one run's trace, every text passed through `redact`) to the
/// collector; returns how many were sent. After one failure the process tries no more.
pub async fn export(
    config: &OtlpConfig,
    lines: &[TraceLine],
    redact: &(dyn Fn(&str) -> String + Sync),
) -> Result<usize, OtelError> {
    if GAVE_UP.load(Ordering::Relaxed) {
        return Err(OtelError::GaveUp {
            endpoint: config.shown_endpoint(),
        });
    }
    let sent = send(config, lines, redact).await;
    if sent.is_err() {
        GAVE_UP.store(true, Ordering::Relaxed);
    }
    sent
}

async fn send(
    config: &OtlpConfig,
    lines: &[TraceLine],
    redact: &(dyn Fn(&str) -> String + Sync),
) -> Result<usize, OtelError> {
    let request = request(lines, &config.service, redact);
    let spans = request
        .resource_spans
        .iter()
        .flat_map(|resource| &resource.scope_spans)
        .map(|scope| scope.spans.len())
        .sum();
    let failed = |reason: String| OtelError::Export {
        endpoint: config.shown_endpoint(),
        reason,
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(EXPORT_TIMEOUT)
        .connect_timeout(EXPORT_TIMEOUT / 2)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| failed(format!("the HTTP client cannot start: {error}")))?;
    let mut post = client
        .post(&config.endpoint)
        .header("content-type", "application/x-protobuf");
    for (key, value) in &config.headers {
        post = post.header(key.as_str(), value.as_str());
    }
    let response = post
        .body(request.encode_to_vec())
        .send()
        .await
        // reqwest's message may quote the URL, credentials included.
        .map_err(|error| failed(error.without_url().to_string()))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(format!("the collector answered {status}")));
    }
    Ok(spans)
}

/// The OTLP request for one run's trace: deterministic, from the lines and `redact` alone.
pub fn request(
    lines: &[TraceLine],
    service: &str,
    redact: &dyn Fn(&str) -> String,
) -> ExportTraceServiceRequest {
    let mut spans = spans(lines);
    for span in &mut spans {
        span.name = redact(&span.name);
        for attribute in &mut span.attributes {
            if let Some(AnyValue {
                value: Some(any_value::Value::StringValue(text)),
            }) = &mut attribute.value
            {
                *text = redact(text);
            }
        }
        if let Some(status) = &mut span.status {
            status.message = redact(&status.message);
        }
    }
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![text("service.name", service)],
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "cua".to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    ..InstrumentationScope::default()
                }),
                spans,
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    }
}

/// The spans of a run: the run, its steps in the order they began, and one per event.
fn spans(lines: &[TraceLine]) -> Vec<Span> {
    let Some(first) = lines.first() else {
        return Vec::new();
    };
    let run_id = first.run_id.as_str();
    // The first line's hash covers its run id and moment: two runs given the same id (on two
    // machines, on two days) are still two traces.
    let run = first.line_hash.as_str();
    let trace_id = digest(&["trace", run])[..16].to_vec();
    let root_id = digest(&["span", run, "run"])[..8].to_vec();
    let nanos = |line: &TraceLine| u64::try_from(line.at.unix_micros()).unwrap_or(0) * 1_000;
    // A span lasts until the next line, never less than nothing if the clock stepped back.
    let ends: Vec<u64> = (0..lines.len())
        .map(|index| nanos(lines.get(index + 1).unwrap_or(&lines[index])).max(nanos(&lines[index])))
        .collect();

    let mut root = Span {
        trace_id: trace_id.clone(),
        span_id: root_id.clone(),
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: nanos(first),
        end_time_unix_nano: ends.iter().copied().max().unwrap_or(0).max(nanos(first)),
        attributes: vec![text("cua.run_id", run_id)],
        name: "run".to_owned(),
        ..Span::default()
    };
    let mut steps: BTreeMap<String, Span> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut children = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        match &line.event {
            Event::RunStart(start) => {
                if let Some(capability) = &start.capability {
                    root.name = format!("run {capability}");
                    root.attributes
                        .push(text("cua.capability", &capability.to_string()));
                }
                if let Some(hash) = &start.content_hash {
                    root.attributes
                        .push(text("cua.content_hash", hash.as_str()));
                }
                continue;
            }
            Event::RunEnd(end) => {
                root.attributes
                    .push(text("cua.run.status", end.status.as_str()));
                if let Some(code) = end.failure_code {
                    root.attributes
                        .push(text("cua.failure_code", code.as_str()));
                }
                let failed = matches!(end.status, RunStatus::Failed | RunStatus::NeedsHuman);
                root.status = Some(status(!failed, end.reason.as_deref().unwrap_or_default()));
                continue;
            }
            _ => {}
        }
        let parent = match line.event.step() {
            Some(step) => {
                let key = step.to_string();
                let span = steps.entry(key.clone()).or_insert_with(|| {
                    order.push(key.clone());
                    Span {
                        trace_id: trace_id.clone(),
                        span_id: digest(&["span", run, "step", &key])[..8].to_vec(),
                        parent_span_id: root_id.clone(),
                        kind: SpanKind::Internal as i32,
                        name: format!("step {key}"),
                        start_time_unix_nano: nanos(line),
                        attributes: vec![text("cua.step", &key)],
                        ..Span::default()
                    }
                });
                span.end_time_unix_nano = span.end_time_unix_nano.max(ends[index]);
                span.span_id.clone()
            }
            None => root_id.clone(),
        };
        let (name, attributes, ok) = describe(&line.event);
        let mut attributes = attributes;
        attributes.push(text("cua.actor", line.actor.as_str()));
        attributes.push(int("cua.seq", line.seq));
        children.push(Span {
            trace_id: trace_id.clone(),
            span_id: digest(&["span", run, "line", &line.seq.to_string()])[..8].to_vec(),
            parent_span_id: parent,
            kind: if matches!(line.event, Event::LlmCall(_)) {
                SpanKind::Client as i32
            } else {
                SpanKind::Internal as i32
            },
            name,
            start_time_unix_nano: nanos(line),
            end_time_unix_nano: ends[index],
            attributes,
            status: ok.map(|ok| status(ok, "")),
            ..Span::default()
        });
    }
    let mut all = vec![root];
    all.extend(order.iter().filter_map(|key| steps.remove(key)));
    all.extend(children);
    all
}

/// A span's name, attributes, and whether it went well (`None`: nothing to say).
fn describe(event: &Event) -> (String, Vec<KeyValue>, Option<bool>) {
    let name = event.name().to_owned();
    match event {
        Event::Resolve(resolve) => {
            let mut attributes = vec![
                text("cua.target", &resolve.target),
                boolean("cua.resolved", resolve.resolved),
            ];
            if let Some(strategy) = resolve.strategy {
                attributes.push(text("cua.strategy", strategy.as_str()));
            }
            if let Some(recorded) = resolve.strategy_recorded {
                attributes.push(text("cua.strategy_recorded", recorded.as_str()));
            }
            if let Some(node) = &resolve.node_id {
                attributes.push(text("cua.node_id", node.as_str()));
            }
            (name, attributes, Some(resolve.resolved))
        }
        Event::Authorize(authorize) => {
            let mut attributes = vec![
                text("cua.decision_id", &authorize.decision_id),
                boolean("cua.granted", authorize.granted),
                text("cua.action", authorize.action_type.as_str()),
                text("cua.risk", authorize.risk.as_str()),
                text("cua.reason", &authorize.reason),
            ];
            if let Some(denial) = &authorize.denial {
                attributes.push(text("cua.denial", denial));
            }
            (name, attributes, Some(authorize.granted))
        }
        Event::Dispatch(dispatch) => {
            let mut attributes = vec![
                text("cua.decision_id", &dispatch.decision_id),
                text("cua.action", dispatch.action_type.as_str()),
                boolean("cua.ok", dispatch.ok),
                boolean("cua.refused", dispatch.refused),
                boolean("cua.navigated", dispatch.navigated),
            ];
            if let Some(status) = dispatch.http_status {
                attributes.push(int("http.response.status_code", u64::from(status)));
            }
            (name, attributes, Some(dispatch.ok && !dispatch.refused))
        }
        Event::Verify(verify) => {
            let mut attributes = vec![
                text("cua.postcondition", &verify.postcondition),
                boolean("cua.holds", verify.holds),
            ];
            if let Some(observed) = &verify.observed {
                attributes.push(text("cua.observed", observed));
            }
            (name, attributes, Some(verify.holds))
        }
        Event::Effect(effect) => (
            name,
            vec![
                text("cua.verdict", effect.verdict.as_str()),
                text("cua.reason", &effect.reason),
            ],
            None,
        ),
        Event::LlmCall(call) => {
            let mut attributes = vec![
                text("gen_ai.operation.name", "chat"),
                text("gen_ai.provider.name", &call.provider),
                text("gen_ai.request.model", &call.model),
                int("gen_ai.usage.input_tokens", call.prompt_tokens),
                int("gen_ai.usage.output_tokens", call.completion_tokens),
            ];
            if let Some(id) = &call.request_id {
                attributes.push(text("gen_ai.response.id", id));
            }
            (format!("chat {}", call.model), attributes, None)
        }
        _ => (name, Vec::new(), None),
    }
}

/// BLAKE3 over the parts, each ended by a newline, under a domain of its own.
fn digest(parts: &[&str]) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"cua.otel/v1\n");
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update(b"\n");
    }
    *hasher.finalize().as_bytes()
}

fn status(ok: bool, message: &str) -> Status {
    Status {
        code: if ok {
            StatusCode::Ok
        } else {
            StatusCode::Error
        } as i32,
        message: if ok {
            String::new()
        } else {
            message.to_owned()
        },
    }
}

fn attribute(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

fn text(key: &str, value: &str) -> KeyValue {
    attribute(key, any_value::Value::StringValue(value.to_owned()))
}

fn boolean(key: &str, value: bool) -> KeyValue {
    attribute(key, any_value::Value::BoolValue(value))
}

fn int(key: &str, value: u64) -> KeyValue {
    attribute(
        key,
        any_value::Value::IntValue(i64::try_from(value).unwrap_or(i64::MAX)),
    )
}

#[cfg(test)]
mod tests {
    use super::{OtelError, OtlpConfig, request};

    fn config(pairs: &[(&str, &str)]) -> Result<Option<OtlpConfig>, OtelError> {
        OtlpConfig::from_env(|name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    #[test]
    fn export_is_off_unless_an_endpoint_is_set() {
        assert_eq!(config(&[]).unwrap(), None);
        assert_eq!(
            config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]).unwrap(),
            None
        );
        assert_eq!(config(&[("OTEL_SERVICE_NAME", "x")]).unwrap(), None);
    }

    #[test]
    fn the_traces_endpoint_is_used_as_is_and_the_base_one_gains_the_path() {
        let base = config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")])
            .unwrap()
            .unwrap();
        assert_eq!(base.endpoint, "http://collector:4318/v1/traces");
        assert_eq!(base.service, "cua");
        let traces = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://collector/custom",
            ),
            ("OTEL_SERVICE_NAME", "claims-bot"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(traces.endpoint, "https://collector/custom");
        assert_eq!(traces.service, "claims-bot");
    }

    #[test]
    fn another_protocol_or_a_non_http_endpoint_is_refused_naming_the_variable() {
        for (pairs, variable) in [
            (
                vec![
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ],
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ),
            (
                vec![
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
                    ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
                ],
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            ),
            (
                vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")],
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ),
        ] {
            let error = config(&pairs).unwrap_err().to_string();
            assert!(error.starts_with(variable), "{error}");
        }
    }

    #[test]
    fn export_is_off_when_disabled_and_a_protocol_alone_turns_nothing_on() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        assert_eq!(
            config(&[endpoint, ("OTEL_SDK_DISABLED", "true")]).unwrap(),
            None
        );
        assert_eq!(
            config(&[endpoint, ("OTEL_TRACES_EXPORTER", "none")]).unwrap(),
            None
        );
        assert_eq!(
            config(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap(),
            None
        );
        // The traces protocol wins over the general one.
        assert!(
            config(&[
                endpoint,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ])
            .unwrap()
            .is_some()
        );
    }

    #[test]
    fn headers_are_read_and_never_shown() {
        let endpoint = (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "https://user:pass@collector:4318",
        );
        let read = config(&[
            endpoint,
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "api-key=s%3Dcret, x-tenant = blue",
            ),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            read.headers,
            [
                ("api-key".to_owned(), "s=cret".to_owned()),
                ("x-tenant".to_owned(), "blue".to_owned())
            ]
        );
        assert_eq!(read.shown_endpoint(), "https://collector:4318/v1/traces");
        let debug = format!("{read:?}");
        assert!(
            !debug.contains("cret") && !debug.contains("pass"),
            "{debug}"
        );
        let refused = config(&[endpoint, ("OTEL_EXPORTER_OTLP_HEADERS", "api-key s3cret")])
            .unwrap_err()
            .to_string();
        assert!(
            refused.starts_with("OTEL_EXPORTER_OTLP_HEADERS") && !refused.contains("s3cret"),
            "{refused}"
        );
    }

    #[test]
    fn an_empty_trace_has_no_spans() {
        let request = request(&[], "cua", &|text| text.to_owned());
        assert!(request.resource_spans[0].scope_spans[0].spans.is_empty());
    }
}
