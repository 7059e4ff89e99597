//! Reading the recorded run: the actions its `agent_action` notes describe with the snapshots
//! around them, the model that made them, why the run stopped, and the application's origin.

use cua_evidence::{Event, RunStart, TraceLine};
use serde_json::Value;

use crate::error::CompileError;
use crate::run::RecordedRun;
use crate::{ACTION_NOTE, PHASE_NOTE};

use super::Recorded;

/// The actions that become steps, in trace order, with their snapshots.
pub(super) fn recorded_actions(run: &RecordedRun) -> Result<Vec<Recorded<'_>>, CompileError> {
    let has_phase = run.lines.iter().any(|line| is_note(line, PHASE_NOTE));
    let mut in_goal = !has_phase;
    let mut actions = Vec::new();
    for (position, line) in run.lines.iter().enumerate() {
        let Event::Note(note) = &line.event else {
            continue;
        };
        if note.note == PHASE_NOTE {
            in_goal = note.data.get("phase").and_then(Value::as_str) == Some("goal");
            continue;
        }
        if note.note != ACTION_NOTE || !in_goal {
            continue;
        }
        let outcome = note
            .data
            .get("outcome")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !matches!(outcome, "dispatched" | "extracted") {
            continue;
        }
        let before_ref = note
            .data
            .get("snapshot_ref")
            .and_then(Value::as_str)
            .ok_or_else(|| CompileError::Trace {
                reason: format!("action note at line {} names no snapshot", line.seq),
            })?
            .to_owned();
        let before = run
            .snapshots
            .get(&before_ref)
            .ok_or_else(|| CompileError::Snapshot {
                path: before_ref.clone(),
                reason: "the trace names it but the run has no such snapshot".to_owned(),
            })?;
        let after = run.lines[position + 1..]
            .iter()
            .find_map(|later| match &later.event {
                Event::Observe(observe) => observe
                    .snapshot_ref
                    .as_ref()
                    .and_then(|reference| run.snapshots.get(reference)),
                _ => None,
            });
        let decision = note.data.get("decision_id").and_then(Value::as_str);
        let navigated = note.data.get("navigated").and_then(Value::as_bool).unwrap_or_else(|| {
            run.lines.iter().any(|line| matches!(&line.event, Event::Dispatch(dispatch) if Some(dispatch.decision_id.as_str()) == decision && dispatch.navigated))
        });
        let risk = run
            .lines
            .iter()
            .find_map(|line| match &line.event {
                Event::Authorize(authorize)
                    if authorize.granted && Some(authorize.decision_id.as_str()) == decision =>
                {
                    Some(authorize.risk)
                }
                _ => None,
            })
            .unwrap_or_default();
        actions.push(Recorded {
            tool: note
                .data
                .get("tool")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            data: &note.data,
            before,
            before_ref,
            after,
            navigated,
            risk,
        });
    }
    Ok(actions)
}

pub(super) fn is_note(line: &TraceLine, name: &str) -> bool {
    matches!(&line.event, Event::Note(note) if note.note == name)
}

/// The discovery's stop reason, from `run_end`.
pub(super) fn stop_reason(lines: &[TraceLine]) -> Option<String> {
    lines.iter().rev().find_map(|line| match &line.event {
        Event::RunEnd(end) => end.stop_reason.clone(),
        _ => None,
    })
}

/// `http://host:port/path` → (`http://host:port`, `/path`).
pub(super) fn split_origin(url: &str) -> (String, String) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (String::new(), url.to_owned());
    };
    match rest.find(['/', '?', '#']) {
        Some(cut) => (
            format!("{scheme}://{}", &rest[..cut]),
            rest[cut..].to_owned(),
        ),
        None => (format!("{scheme}://{rest}"), "/".to_owned()),
    }
}

/// The model that drove the run, marked `(scripted)` when it was the scripted model.
pub(super) fn model_label(start: &RunStart, lines: &[TraceLine]) -> String {
    let scripted = start.scripted_model == Some(true)
        || lines
            .iter()
            .any(|line| matches!(&line.event, Event::LlmCall(call) if call.scripted));
    let model = start.model.clone().unwrap_or_else(|| "unknown".to_owned());
    match (scripted, model.as_str()) {
        (true, "scripted") => "scripted".to_owned(),
        (true, _) => format!("{model} (scripted)"),
        (false, _) => model,
    }
}
