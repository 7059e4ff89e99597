//! The operator steps beside the browser: `http` (structured-api) and `command` (native-cli).
//!
//! They pass the same chokepoint as a browser action (values bound at the last moment, secrets
//! registered with the redactor as they are issued, `PolicyEngine` authorization, the lease again
//! right before the dispatch) and then go to their own port instead of the surface. Their
//! effect verdict comes from `cua-route`'s closed table: an HTTP exchange through
//! `EffectVerdict::from_http` (a creation or deletion the service itself reports confirms, a
//! read is `not_applicable`, anything else is at best `unverifiable`), a command through
//! `settle` with the claim its JSON output makes under `effect`, which is discarded, never
//! repaired, when the table does not allow it. A receipt alone never confirms anything.
//!
//! Recovery is the route planner's: an `http` read that timed out or found nothing listening
//! is sent once more (same provider, same authorized request, same target); a mutation and a
//! command are sent once; no failure ever hands the step to another provider.

use std::collections::BTreeMap;

use cua_artifact::{
    CommandCall, EffectVerdict, FailureCode, HttpCall, HttpMethod, OutputName, Step, Template,
    TemplatePart, TemplateRef, ValueExpr, ValueType,
};
use cua_gate::{Cleared, Sent};
use cua_policy::{CommandInvocation, HttpRequest, SurfaceAction};
use cua_route::{AttemptOutcome, DispatchPhase, ProviderClaim, ProviderFailure, RecoveryEdge};
use cua_surface::SurfaceDriver;
use serde_json::Value;

use crate::executor::{Execution, Replayer, RunState};
use crate::route::RouteWalk;
use crate::step::{Declared, DispatchFailure, StepRecordInput};
use crate::stop::{Halt, Position, Stop};

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// `http`: bind, authorize, send once, check the status, read the outputs, and settle the
    /// effect from the response.
    pub(crate) async fn http_step(
        &self,
        frame: &mut Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        step: &Step,
        call: &HttpCall,
    ) -> Result<(), Halt> {
        let kind = step.action.kind();
        let mutates = !call.method.is_safe();
        let Some(client) = self.config.operators.http.clone() else {
            let stop = unwired(position, "an http step", "HTTP client");
            return Err(self.refuse_operator_step(frame, tally, position, step, mutates, stop));
        };
        let bound = self.bind_http(frame, call);
        let method = call.method;
        let url = bound
            .as_ref()
            .map_or_else(|_| String::new(), |request| request.url.clone());
        let Cleared { authorized, ticket } = self.admit(
            frame,
            tally,
            position,
            step,
            mutates,
            bound.map(SurfaceAction::Http),
        )?;
        let decision_id = ticket.decision_id.clone();
        let risk = ticket.risk;
        // The step walks its route's recovery graph: `open` sends the request once; a failure
        // settles the walk, and only the edge the route offers next (a retry of a read after a
        // retryable failure: same provider, same authorized request, same target) sends again.
        let mut walk = RouteWalk::start(&frame.routes[position.index as usize]);
        tally.fresh = None;
        let mut attempts: u8 = 0;
        walk.take(RecoveryEdge::Open);
        let mut witness = authorized
            .into_http()
            .map_err(|kind| cua_surface::SurfaceError::wrong_port(kind.as_str(), "HTTP operator"));
        let sent = loop {
            attempts = attempts.saturating_add(1);
            // Only a read's witness has a spare: a mutation is sent once whatever the route says.
            let spare = witness
                .as_ref()
                .ok()
                .and_then(cua_policy::Authorized::retry_of_read);
            let result = match witness {
                Ok(witness) => client.send(witness).await,
                Err(wrong) => Err(wrong),
            };
            tally.dispatches += 1;
            let Err(error) = &result else {
                break result;
            };
            walk.settle(AttemptOutcome::Failed(provider_failure(error)));
            let next = match spare {
                Some(spare) if walk.take(RecoveryEdge::Retry) => spare,
                _ => break result,
            };
            witness = Ok(next);
            self.record_sent(
                frame,
                &ticket,
                Sent::failed(format!(
                    "attempt {attempts}: {error}; the route retries the same request"
                )),
                Vec::new(),
            )?;
        };
        self.mark_mutation(tally, &position.id, risk, false);
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                self.record_sent(frame, &ticket, Sent::failed(error.to_string()), Vec::new())?;
                let (verdict, reason) = failed_dispatch_verdict(
                    &error,
                    mutates,
                    "the service could not be reached; nothing was sent",
                    "the request failed part-way; nothing proves what happened",
                );
                let input = dispatched_record(kind, &decision_id, risk, verdict, reason, walk);
                self.record_step(frame, tally, position, input)?;
                return Err(Stop::surface(
                    &error,
                    &format!("step `{}` sending {} {url}", position.id, method.as_str()),
                )
                .into());
            }
        };
        let expected = call.expect_status.contains(&response.status);
        self.record_sent(
            frame,
            &ticket,
            Sent {
                ok: expected,
                navigated: false,
                http_status: Some(response.status),
                duration_ms: response.duration_ms,
                message: format!("{} {url} answered {}", method.as_str(), response.status),
            },
            Vec::new(),
        )?;
        let settled = cua_route::EffectVerdict::from_http(route_method(method), response.status);
        let verdict = artifact_verdict(&settled);
        let reason = settled.reason();
        walk.settle(AttemptOutcome::Settled(settled));
        let record = dispatched_record(kind, &decision_id, risk, verdict, reason, walk);
        if !expected {
            self.record_step(frame, tally, position, record)?;
            return Err(Stop::new(
                FailureCode::ActionFailed,
                format!(
                    "step `{}`: {} {url} answered {}, and the step expects {:?}",
                    position.id,
                    method.as_str(),
                    response.status,
                    call.expect_status
                ),
            )
            .into());
        }
        let extracted = if call.extract.is_empty() {
            Ok(())
        } else {
            parse_json(&response.body, "the response")
                .and_then(|document| self.extract_outputs(frame, &call.extract, &document))
        };
        self.record_step(frame, tally, position, record)?;
        extracted.map_err(|problem| {
            Stop::new(
                FailureCode::ActionFailed,
                format!("step `{}`: {problem}", position.id),
            )
            .into()
        })
    }

    /// `command`: bind the argv, authorize (the policy names the program), run it once, check
    /// the exit code, read the outputs from its JSON stdout, and settle the effect.
    pub(crate) async fn command_step(
        &self,
        frame: &mut Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        step: &Step,
        call: &CommandCall,
    ) -> Result<(), Halt> {
        let kind = step.action.kind();
        let mutates = !call.read_only;
        let Some(runner) = self.config.operators.command.clone() else {
            let stop = unwired(position, "a command step", "command runner");
            return Err(self.refuse_operator_step(frame, tally, position, step, mutates, stop));
        };
        let args: Result<Vec<String>, Stop> = call
            .args
            .iter()
            .map(|value| {
                if value.secret().is_some() {
                    return Err(Stop::new(
                        FailureCode::PolicyDenied,
                        format!(
                            "step `{}` would pass a secret on a command line, where every process can read it",
                            position.id
                        ),
                    ));
                }
                self.bind_value(frame, value, &mut false)
            })
            .collect();
        let bound = args.map(|args| {
            SurfaceAction::Command(CommandInvocation {
                executable: call.executable.clone(),
                args,
                timeout_ms: call.timeout_ms,
            })
        });
        let Cleared { authorized, ticket } =
            self.admit(frame, tally, position, step, mutates, bound)?;
        let decision_id = ticket.decision_id.clone();
        let risk = ticket.risk;
        tally.fresh = None;
        // A command is sent once, whatever it does: its route never retries.
        let mut walk = RouteWalk::start(&frame.routes[position.index as usize]);
        walk.take(RecoveryEdge::Open);
        let ran = match authorized.into_command() {
            Ok(command) => runner.run(command).await,
            Err(kind) => Err(cua_surface::SurfaceError::wrong_port(
                kind.as_str(),
                "command operator",
            )),
        };
        tally.dispatches += 1;
        self.mark_mutation(tally, &position.id, risk, false);
        let output = match ran {
            Ok(output) => output,
            Err(error) => {
                self.record_sent(frame, &ticket, Sent::failed(error.to_string()), Vec::new())?;
                let (verdict, reason) = failed_dispatch_verdict(
                    &error,
                    mutates,
                    "the program could not be started",
                    "the command failed part-way; nothing proves what happened",
                );
                walk.settle(AttemptOutcome::Failed(provider_failure(&error)));
                let input = dispatched_record(kind, &decision_id, risk, verdict, reason, walk);
                self.record_step(frame, tally, position, input)?;
                return Err(Stop::surface(
                    &error,
                    &format!("step `{}` running `{}`", position.id, call.executable),
                )
                .into());
            }
        };
        let expected = !output.timed_out
            && output
                .exit_code
                .is_some_and(|code| call.expect_exit.contains(&code));
        let message = match (output.timed_out, output.exit_code) {
            (true, _) => format!(
                "`{}` ran past {} ms and was killed",
                call.executable, call.timeout_ms
            ),
            (false, Some(code)) => format!("`{}` exited with {code}", call.executable),
            (false, None) => format!("`{}` was ended by a signal", call.executable),
        };
        self.record_sent(
            frame,
            &ticket,
            Sent {
                ok: expected,
                navigated: false,
                http_status: None,
                duration_ms: output.duration_ms,
                message: message.clone(),
            },
            Vec::new(),
        )?;
        let document = parse_json(&output.stdout, "the command's stdout");
        let claim = document
            .as_ref()
            .ok()
            .and_then(|document| document.get("effect"))
            .and_then(|effect| serde_json::from_value::<ProviderClaim>(effect.clone()).ok());
        let settlement = cua_route::settle(mutates, DispatchPhase::Dispatched, claim.as_ref());
        let verdict = artifact_verdict(&settlement.verdict);
        let mut reason = settlement.verdict.reason();
        if let Some(defect) = settlement.discarded_claim {
            reason = format!("{reason} (the command's effect claim was discarded: {defect})");
        }
        walk.settle(AttemptOutcome::Settled(settlement.verdict));
        let record = dispatched_record(kind, &decision_id, risk, verdict, reason, walk);
        if !expected {
            self.record_step(frame, tally, position, record)?;
            let code = if output.timed_out {
                FailureCode::Timeout
            } else {
                FailureCode::ActionFailed
            };
            let stderr = String::from_utf8_lossy(&output.stderr);
            let first_line: String = stderr
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect();
            let detail = if first_line.is_empty() {
                String::new()
            } else {
                format!(": {first_line}")
            };
            return Err(Stop::new(
                code,
                format!(
                    "step `{}`: {message}, and the step expects exit {:?}{detail}",
                    position.id, call.expect_exit
                ),
            )
            .into());
        }
        let extracted = if call.extract.is_empty() {
            Ok(())
        } else {
            document.and_then(|document| self.extract_outputs(frame, &call.extract, &document))
        };
        self.record_step(frame, tally, position, record)?;
        extracted.map_err(|problem| {
            Stop::new(
                FailureCode::ActionFailed,
                format!("step `{}`: {problem}", position.id),
            )
            .into()
        })
    }

    /// Binds a URL template (an `http` call's, a `navigate`'s, the entrypoint's): each reference
    /// percent-encoded, so a value fills a path segment or a query value and can never add a
    /// segment, a query or an origin; a secret is refused (URLs are recorded in evidence). A
    /// placeholder left in the bound URL is refused before anything is dispatched.
    pub(crate) fn bind_url(&self, frame: &Execution<'_>, url: &str) -> Result<String, Stop> {
        let template = Template::parse(url).map_err(|problem| {
            Stop::new(
                FailureCode::Internal,
                format!("the url is not a template: {problem}"),
            )
        })?;
        let mut bound = String::new();
        for part in template.parts() {
            match part {
                TemplatePart::Text(text) => bound.push_str(text),
                TemplatePart::Ref(TemplateRef::Secret(_)) => {
                    return Err(Stop::new(
                        FailureCode::PolicyDenied,
                        "a secret may not be placed in a URL, which evidence records",
                    ));
                }
                TemplatePart::Ref(reference) => {
                    let mut sensitive = false;
                    let text =
                        self.bind_value(frame, &template_value(reference), &mut sensitive)?;
                    let declared_sensitive = frame.capability.is_sensitive_reference(reference);
                    if sensitive || declared_sensitive {
                        return Err(Stop::new(
                            FailureCode::PolicyDenied,
                            "a sensitive value may not be placed in a URL, which evidence records",
                        ));
                    }
                    // `.` and `..` are path segments a browser resolves away: a value that is
                    // one would move the URL, not fill it.
                    if matches!(text.as_str(), "." | "..") {
                        return Err(Stop::new(
                            FailureCode::InputValidationFailed,
                            format!(
                                "the value {text:?} would be a `{text}` path segment in the url {url:?}"
                            ),
                        ));
                    }
                    bound.push_str(&percent_encode(&text));
                }
            }
        }
        // Bound values are percent-encoded, so a brace left here came from the template itself:
        // a placeholder nothing bound.
        if bound.contains(['{', '}']) {
            return Err(Stop::new(
                FailureCode::InputValidationFailed,
                format!(
                    "the url {url:?} holds a placeholder nothing binds; it is never navigated to"
                ),
            )
            .expected("every placeholder of the url bound by the tenant binding or --base-url"));
        }
        Ok(bound)
    }

    /// Binds an `http` call: the URL's references percent-encoded (so a value can never add a
    /// segment, a query or an origin), headers with their secrets, the body as JSON.
    fn bind_http(&self, frame: &Execution<'_>, call: &HttpCall) -> Result<HttpRequest, Stop> {
        let invalid = |what: String| Stop::new(FailureCode::Internal, what);
        let url = self.bind_url(frame, &call.url)?;
        let mut headers = Vec::with_capacity(call.headers.len());
        for (name, value) in &call.headers {
            let template = Template::parse(value)
                .map_err(|problem| invalid(format!("header `{name}`: {problem}")))?;
            let mut text = String::new();
            for part in template.parts() {
                match part {
                    TemplatePart::Text(literal) => text.push_str(literal),
                    TemplatePart::Ref(reference) => text.push_str(&self.bind_value(
                        frame,
                        &template_value(reference),
                        &mut false,
                    )?),
                }
            }
            if text.chars().any(char::is_control) {
                return Err(Stop::new(
                    FailureCode::InputValidationFailed,
                    format!("header `{name}` would hold a control character"),
                ));
            }
            headers.push((name.to_ascii_lowercase(), text));
        }
        let body = match &call.body {
            None => None,
            Some(fields) => {
                let mut object = serde_json::Map::new();
                for (name, value) in fields {
                    object.insert(name.clone(), self.json_value(frame, value)?);
                }
                Some(Value::Object(object).to_string())
            }
        };
        Ok(HttpRequest {
            method: call.method,
            url,
            headers,
            body,
            timeout_ms: call.timeout_ms,
        })
    }

    /// A bound value as JSON: literals keep their type, an input its declared one, everything
    /// else is a string.
    fn json_value(&self, frame: &Execution<'_>, value: &ValueExpr) -> Result<Value, Stop> {
        let literal = match value {
            ValueExpr::Integer(number) => Some(Value::from(*number)),
            ValueExpr::Number(number) => Some(Value::from(*number)),
            ValueExpr::Boolean(flag) => Some(Value::from(*flag)),
            _ => None,
        };
        if let Some(literal) = literal {
            return Ok(literal);
        }
        let text = self.bind_value(frame, value, &mut false)?;
        let declared = value
            .input()
            .and_then(|name| frame.capability.input(name.as_str()))
            .map(|input| input.value_type);
        let typed = match declared {
            Some(ValueType::Integer) => text.parse::<i64>().ok().map(Value::from),
            Some(ValueType::Number | ValueType::Money) => text.parse::<f64>().ok().map(Value::from),
            Some(ValueType::Boolean) => text.parse::<bool>().ok().map(Value::from),
            _ => None,
        };
        Ok(typed.unwrap_or(Value::String(text)))
    }

    /// Reads each output by JSON pointer and checks it against the output's declared type.
    fn extract_outputs(
        &self,
        frame: &mut Execution<'_>,
        extract: &BTreeMap<OutputName, String>,
        document: &Value,
    ) -> Result<(), String> {
        for (name, pointer) in extract {
            let found = document
                .pointer(pointer)
                .ok_or_else(|| format!("`{pointer}` finds nothing for output `{name}`"))?;
            let spec = frame.capability.output(name.as_str());
            let value_type = spec.map(|spec| spec.value_type).unwrap_or_default();
            let text = typed_text(found, value_type).ok_or_else(|| {
                format!(
                    "output `{name}` is declared {} but `{pointer}` holds {}",
                    value_type.as_str(),
                    json_kind(found)
                )
            })?;
            if spec.is_some_and(|spec| spec.sensitive) {
                self.bus.redactor().register_sensitive_value(&text);
            }
            frame.values.set_output(name.clone(), text);
        }
        Ok(())
    }

    /// The chokepoint every operator step passes before its operator sees it: the values the
    /// caller bound (or why they could not be), then `PolicyEngine` and the lease. A refusal at
    /// either is recorded (nothing was sent) and stops the run.
    fn admit(
        &self,
        frame: &Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        step: &Step,
        mutates: bool,
        bound: Result<SurfaceAction, Stop>,
    ) -> Result<Cleared, Halt> {
        let action = bound.map_err(|stop| {
            self.refuse_operator_step(frame, tally, position, step, mutates, stop)
        })?;
        self.authorize_action(
            frame,
            tally,
            Some(&position.id),
            action,
            None,
            Declared {
                risk: Some(step.risk),
                mutates,
            },
        )
        .map_err(|failure| match failure {
            DispatchFailure::Refused {
                stop,
                decision_id,
                risk,
            }
            | DispatchFailure::Failed {
                stop,
                decision_id,
                risk,
                ..
            } => {
                let mut input = refused_record(step, mutates, refusal(&stop));
                input.decision_id = Some(decision_id);
                input.risk = risk;
                match self.record_step(frame, tally, position, input) {
                    Ok(()) => stop.into(),
                    Err(error) => error.into(),
                }
            }
            DispatchFailure::Fatal(error) => Halt::Fatal(error),
        })
    }

    /// Records an operator step refused before anything was sent, and the stop it ends on.
    fn refuse_operator_step(
        &self,
        frame: &Execution<'_>,
        tally: &mut RunState,
        position: &Position,
        step: &Step,
        mutates: bool,
        stop: Stop,
    ) -> Halt {
        let input = refused_record(step, mutates, refusal(&stop));
        match self.record_step(frame, tally, position, input) {
            Ok(()) => stop.into(),
            Err(error) => error.into(),
        }
    }
}

/// A failed operator dispatch as the route's walk sees it. Nothing listening (or no program
/// to start) failed before anything was sent; anything else may have reached the service. A
/// read may be retried after a timeout or nothing listening; an answer, even an error status,
/// is never a failure here, and a mutation is never retried whatever this says.
fn provider_failure(error: &cua_surface::SurfaceError) -> ProviderFailure {
    ProviderFailure {
        phase: match error {
            cua_surface::SurfaceError::Unavailable { .. } => DispatchPhase::PreDispatch,
            _ => DispatchPhase::Dispatched,
        },
        retryable: matches!(
            error,
            cua_surface::SurfaceError::Timeout { .. }
                | cua_surface::SurfaceError::Unavailable { .. }
        ),
        reason: error.to_string(),
    }
}

/// The record of a dispatched operator step, with the trace of the route it walked.
fn dispatched_record(
    kind: cua_artifact::ActionKind,
    decision_id: &str,
    risk: cua_artifact::RiskTier,
    verdict: EffectVerdict,
    reason: String,
    walk: RouteWalk,
) -> StepRecordInput {
    StepRecordInput {
        kind,
        resolution: None,
        decision_id: Some(decision_id.to_owned()),
        dispatched: true,
        verdict,
        reason,
        risk,
        route: Some(walk.finish()),
    }
}

/// The verdict of a step refused before anything was sent.
/// The verdict of an operator dispatch that failed: a read changed nothing; an operator that
/// was unavailable (nothing listening, no program to start) sent nothing; any other failure may
/// have reached the service, so a mutation's outcome is unknown.
fn failed_dispatch_verdict(
    error: &cua_surface::SurfaceError,
    mutates: bool,
    unreached: &str,
    part_way: &str,
) -> (EffectVerdict, String) {
    match (error, mutates) {
        (_, false) => (
            EffectVerdict::NotApplicable,
            "a read that failed".to_owned(),
        ),
        (cua_surface::SurfaceError::Unavailable { .. }, true) => {
            (EffectVerdict::SuspectedNoop, unreached.to_owned())
        }
        (_, true) => (EffectVerdict::Unverifiable, part_way.to_owned()),
    }
}

fn pre_dispatch_verdict(mutates: bool) -> EffectVerdict {
    artifact_verdict(&cua_route::default_verdict(
        mutates,
        DispatchPhase::PreDispatch,
    ))
}

/// The record of an operator step refused before anything was sent.
fn refused_record(step: &Step, mutates: bool, reason: String) -> StepRecordInput {
    StepRecordInput {
        kind: step.action.kind(),
        resolution: None,
        decision_id: None,
        dispatched: false,
        verdict: pre_dispatch_verdict(mutates),
        reason,
        risk: step.risk,
        route: None,
    }
}

/// The stop of an operator step whose operator this run was not given.
fn unwired(position: &Position, what: &str, operator: &str) -> Stop {
    Stop::new(
        FailureCode::SurfaceUnavailable,
        format!(
            "step `{}` is {what} but no {operator} is wired into this run",
            position.id
        ),
    )
}

fn refusal(stop: &Stop) -> String {
    format!("refused before dispatch: {}", stop.code.as_str())
}

/// The run record's verdict for `cua-route`'s typed one: the same five statuses.
fn artifact_verdict(verdict: &cua_route::EffectVerdict) -> EffectVerdict {
    match verdict.status() {
        cua_route::EffectStatus::NotApplicable => EffectVerdict::NotApplicable,
        cua_route::EffectStatus::Confirmed => EffectVerdict::Confirmed,
        cua_route::EffectStatus::Pending => EffectVerdict::Pending,
        cua_route::EffectStatus::Unverifiable => EffectVerdict::Unverifiable,
        cua_route::EffectStatus::SuspectedNoop => EffectVerdict::SuspectedNoop,
    }
}

fn route_method(method: HttpMethod) -> cua_route::HttpMethod {
    match method {
        HttpMethod::Get => cua_route::HttpMethod::Get,
        HttpMethod::Head => cua_route::HttpMethod::Head,
        HttpMethod::Post => cua_route::HttpMethod::Post,
        HttpMethod::Put => cua_route::HttpMethod::Put,
        HttpMethod::Patch => cua_route::HttpMethod::Patch,
        HttpMethod::Delete => cua_route::HttpMethod::Delete,
    }
}

fn template_value(reference: &TemplateRef) -> ValueExpr {
    match reference {
        TemplateRef::Input(name) => ValueExpr::Input(name.clone()),
        TemplateRef::Output(name) => ValueExpr::Output(name.clone()),
        TemplateRef::Secret(name) => ValueExpr::Secret(name.clone()),
    }
}

/// Everything but RFC 3986's unreserved characters, percent-encoded.
fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

fn parse_json(bytes: &[u8], what: &str) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|error| format!("{what} is not JSON: {error}"))
}

/// A JSON value as an output of `value_type`, or `None` when it is not one.
fn typed_text(value: &Value, value_type: ValueType) -> Option<String> {
    match (value_type, value) {
        (ValueType::String | ValueType::Enum | ValueType::Date, Value::String(text)) => {
            Some(text.clone())
        }
        (ValueType::Integer, Value::Number(number)) if number.is_i64() || number.is_u64() => {
            Some(number.to_string())
        }
        (ValueType::Number | ValueType::Money, Value::Number(number)) => Some(number.to_string()),
        (ValueType::Boolean, Value::Bool(flag)) => Some(flag.to_string()),
        _ => None,
    }
}

/// What a JSON value is, never what it holds (it may be sensitive).
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_values_cannot_add_segments_queries_or_origins() {
        let check = |input: &str, expect: &str| assert_eq!(percent_encode(input), expect);
        check("12345", "12345");
        check("../admin", "..%2Fadmin");
        check("1?x=2#f", "1%3Fx%3D2%23f");
        check("@evil.example", "%40evil.example");
        check("a b", "a%20b");
        check("é", "%C3%A9");
    }

    #[test]
    fn outputs_are_typed_from_json() {
        let check = |json: &str, value_type: ValueType, expect: Option<&str>| {
            let value: Value = serde_json::from_str(json).expect("json");
            assert_eq!(
                typed_text(&value, value_type).as_deref(),
                expect,
                "{json} as {value_type:?}"
            );
        };
        check(r#""Jane""#, ValueType::String, Some("Jane"));
        check("12", ValueType::String, None);
        check("12", ValueType::Integer, Some("12"));
        check("1.5", ValueType::Integer, None);
        check("4210.55", ValueType::Money, Some("4210.55"));
        check(r#""4210.55""#, ValueType::Money, None);
        check("true", ValueType::Boolean, Some("true"));
        check("null", ValueType::String, None);
    }

    #[test]
    fn a_failed_dispatch_is_never_confirmed_and_only_an_unreached_mutation_is_a_noop() {
        let unavailable = cua_surface::SurfaceError::Unavailable {
            reason: "connection refused".to_owned(),
        };
        let part_way = cua_surface::SurfaceError::ActionFailed {
            reason: "connection reset".to_owned(),
        };
        let verdict =
            |error, mutates| failed_dispatch_verdict(error, mutates, "unreached", "part").0;
        assert_eq!(verdict(&unavailable, false), EffectVerdict::NotApplicable);
        assert_eq!(verdict(&part_way, false), EffectVerdict::NotApplicable);
        assert_eq!(verdict(&unavailable, true), EffectVerdict::SuspectedNoop);
        assert_eq!(verdict(&part_way, true), EffectVerdict::Unverifiable);
    }

    #[test]
    fn verdicts_map_status_for_status() {
        let receipt = cua_route::DispatchReceipt {
            provider: cua_route::ProviderKind::Http,
            physical_action: cua_route::PhysicalAction::new("http_unsafe_request"),
        };
        let check = |verdict: cua_route::EffectVerdict, expect: EffectVerdict| {
            assert_eq!(artifact_verdict(&verdict), expect);
        };
        check(
            cua_route::EffectVerdict::from_http(cua_route::HttpMethod::Get, 200),
            EffectVerdict::NotApplicable,
        );
        check(
            cua_route::EffectVerdict::from_http(cua_route::HttpMethod::Post, 201),
            EffectVerdict::Confirmed,
        );
        check(
            cua_route::EffectVerdict::from_http(cua_route::HttpMethod::Post, 200),
            EffectVerdict::Unverifiable,
        );
        check(
            cua_route::EffectVerdict::from_http(cua_route::HttpMethod::Post, 409),
            EffectVerdict::SuspectedNoop,
        );
        check(
            cua_route::EffectVerdict::from_receipt(&receipt),
            EffectVerdict::Unverifiable,
        );
        assert_eq!(pre_dispatch_verdict(true), EffectVerdict::SuspectedNoop);
        assert_eq!(pre_dispatch_verdict(false), EffectVerdict::NotApplicable);
    }
}
