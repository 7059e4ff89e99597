//! `cua show`: one run's evidence as one self-contained page a person can read offline, and
//! the console's run viewer.
//!
//! The page is static: the run (its trace, its record, the snapshots and screenshots the trace
//! refers to, the chain's verification and a timeline of steps) is embedded as one JSON
//! document, and `show.js` renders it with `textContent` only, so text that came from the
//! application under test (a page title, a node's name) is never markup. Only files the trace
//! names are read, each through the run directory without following a link, so a file planted
//! beside the evidence is never shown as if the run had produced it.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use cua_evidence::{Event, TraceLine};
use cua_fs::Dir;
use serde::Serialize;
use serde_json::{Value, json};

use crate::error::ConsoleError;

const PAGE: &str = include_str!("../assets/show.html");
const STYLE: &str = include_str!("../assets/show.css");
const SCRIPT: &str = include_str!("../assets/show.js");

/// How much snapshot and screenshot data one page embeds; past it, a file is named but left
/// out, so a run of many large pages still opens.
pub const EMBED_LIMIT_BYTES: usize = 96 * 1024 * 1024;

/// One step as the viewer lists it: the trace lines about it, the screens around it and the
/// pictures taken during it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepView {
    /// The capability's step id; `None` for a discovery's or an operator's action.
    pub step: Option<String>,
    /// Indexes into the trace, in order.
    pub lines: Vec<usize>,
    /// The last snapshot observed before the step began.
    pub before: Option<String>,
    /// The first snapshot observed after its dispatch (or a snapshot its failure recorded).
    pub after: Option<String>,
    pub screenshots: Vec<String>,
    /// The kind of action dispatched, or refused.
    pub action: Option<String>,
    /// Who acted, and under which lease epoch, from the dispatch or the first line.
    pub actor: String,
    pub epoch: u64,
    pub dispatched: bool,
    pub refused: bool,
    /// The effect verdict, once one was recorded.
    pub verdict: Option<String>,
}

impl StepView {
    fn new(step: Option<String>, line: &TraceLine, before: Option<String>) -> Self {
        Self {
            step,
            lines: Vec::new(),
            before,
            after: None,
            screenshots: Vec::new(),
            action: None,
            actor: line.actor.as_str().to_owned(),
            epoch: line.lease_epoch,
            dispatched: false,
            refused: false,
            verdict: None,
        }
    }

    /// Whether its action went out or was stopped: what follows is another action's.
    fn settled(&self) -> bool {
        self.dispatched || self.refused
    }

    fn take(&mut self, index: usize, line: &TraceLine) {
        self.lines.push(index);
        match &line.event {
            Event::Dispatch(dispatch) => {
                self.action = Some(dispatch.action_type.as_str().to_owned());
                self.actor = line.actor.as_str().to_owned();
                self.epoch = line.lease_epoch;
                if dispatch.refused {
                    self.refused = true;
                } else {
                    self.dispatched = true;
                }
            }
            Event::Authorize(authorize) => {
                if self.action.is_none() {
                    self.action = Some(authorize.action_type.as_str().to_owned());
                }
                if !authorize.granted {
                    self.refused = true;
                }
            }
            Event::Effect(effect) => {
                self.verdict = Some(effect.verdict.as_str().to_owned());
                if let Some(screenshot) = &effect.screenshot_ref {
                    self.screenshots.push(screenshot.clone());
                }
                if let Some(kind) = effect.undispatched
                    && self.action.is_none()
                {
                    self.action = Some(kind.as_str().to_owned());
                }
            }
            Event::Escalate(escalate) => {
                if let Some(screenshot) = &escalate.screenshot_ref {
                    self.screenshots.push(screenshot.clone());
                }
                if self.after.is_none() {
                    self.after.clone_from(&escalate.snapshot_ref);
                }
            }
            Event::Verify(verify) if self.after.is_none() => {
                self.after.clone_from(&verify.snapshot_ref);
            }
            Event::Note(note) => {
                if let Some(Value::String(screenshot)) = note.data.get("screenshot_ref") {
                    self.screenshots.push(screenshot.clone());
                }
            }
            _ => {}
        }
    }
}

/// Groups a trace into steps, in order. A step begins at the first line about a step other
/// than the last one's, or at a resolution or decision after the last step dispatched (the
/// next action of a discovery, or another attempt); lines about no step (a lease change, a
/// model call, a blocked request, a note) belong to the step they happened in. An observation
/// is the `before` of the steps that follow it and the `after` of a step that dispatched and
/// had none yet.
pub fn timeline(lines: &[TraceLine]) -> Vec<StepView> {
    let mut steps: Vec<StepView> = Vec::new();
    let mut screen: Option<String> = None;
    let mut pending: Vec<(usize, &TraceLine)> = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        match &line.event {
            Event::RunStart(_) | Event::RunEnd(_) => {}
            Event::Observe(observe) => {
                if let Some(last) = steps.last_mut()
                    && last.dispatched
                    && last.after.is_none()
                {
                    last.after.clone_from(&observe.snapshot_ref);
                    last.lines.push(index);
                }
                if observe.snapshot_ref.is_some() {
                    screen.clone_from(&observe.snapshot_ref);
                }
            }
            Event::LlmCall(_) | Event::Note(_) if steps.last().is_none_or(StepView::settled) => {
                pending.push((index, line));
            }
            Event::Lease(_) | Event::LlmCall(_) | Event::BlockedRequest(_) | Event::Note(_) => {
                if let Some(last) = steps.last_mut() {
                    last.take(index, line);
                }
            }
            event => {
                let step = event.step().map(ToString::to_string);
                let begins = steps.last().is_none_or(|last| {
                    last.step != step
                        || (last.settled()
                            && matches!(event, Event::Resolve(_) | Event::Authorize(_)))
                });
                if begins {
                    let mut view = StepView::new(step, line, screen.clone());
                    // A model call (or note) made after the last step settled is this step's:
                    // discovery asks before it acts.
                    for (index, line) in std::mem::take(&mut pending) {
                        view.take(index, line);
                    }
                    steps.push(view);
                }
                if let Some(last) = steps.last_mut() {
                    last.take(index, line);
                }
            }
        }
    }
    // What came after the last step and began no other (a failure capture's note) is its.
    if let Some(last) = steps.last_mut() {
        for (index, line) in pending {
            last.take(index, line);
        }
    }
    steps
}

/// The chain's verification, as the page shows it.
#[derive(Debug, Serialize)]
struct Verification {
    intact: bool,
    summary: String,
}

/// Everything the page shows.
#[derive(Debug, Serialize)]
struct Document {
    run_id: String,
    verification: Verification,
    record: Option<Value>,
    trace: Vec<Value>,
    steps: Vec<StepView>,
    snapshots: BTreeMap<String, Value>,
    screenshots: BTreeMap<String, String>,
    /// Files the trace names that the page does not carry, and why.
    left_out: BTreeMap<String, String>,
}

/// The trace as the pages show it: each event's members, with its line number, time, actor and
/// lease epoch beside them.
pub fn trace_values(lines: &[TraceLine]) -> Vec<Value> {
    lines
        .iter()
        .map(|line| {
            let mut event = serde_json::to_value(&line.event).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut event {
                map.insert("seq".into(), json!(line.seq));
                map.insert("at".into(), json!(line.at.to_string()));
                map.insert("actor".into(), json!(line.actor.as_str()));
                map.insert("lease_epoch".into(), json!(line.lease_epoch));
            }
            event
        })
        .collect()
}

/// The snapshot and screenshot files the trace refers to, in order of first mention.
fn referenced_files(lines: &[TraceLine]) -> (Vec<String>, Vec<String>) {
    let mut snapshots = Vec::new();
    let mut screenshots = Vec::new();
    let add = |list: &mut Vec<String>, name: Option<&String>| {
        if let Some(name) = name
            && !list.contains(name)
        {
            list.push(name.clone());
        }
    };
    for line in lines {
        match &line.event {
            Event::Observe(observe) => add(&mut snapshots, observe.snapshot_ref.as_ref()),
            Event::Verify(verify) => add(&mut snapshots, verify.snapshot_ref.as_ref()),
            Event::Escalate(escalate) => {
                add(&mut snapshots, escalate.snapshot_ref.as_ref());
                add(&mut screenshots, escalate.screenshot_ref.as_ref());
            }
            Event::Effect(effect) => add(&mut screenshots, effect.screenshot_ref.as_ref()),
            Event::Note(note) => {
                if let Some(Value::String(name)) = note.data.get("screenshot_ref") {
                    add(&mut screenshots, Some(name));
                }
            }
            _ => {}
        }
    }
    (snapshots, screenshots)
}

/// The page for the run in `dir`: one HTML file with everything it shows inside it. `secret`
/// says whether bytes carry a registered secret (a screenshot that does is left out); the
/// console passes its redactor's check; `cua show` passes none, since a screenshot carrying a
/// secret is refused when it is written.
pub fn render(dir: &Path, secret: &dyn Fn(&[u8]) -> bool) -> Result<String, ConsoleError> {
    Ok(page_of(&document(dir, secret)?))
}

/// The page for a [`document`] (redacted once more by a caller that holds a redactor).
pub fn page_of(document: &Value) -> String {
    page(&document.to_string())
}

/// What [`render`] embeds, for a page that renders it with `show.js` itself (the console's).
pub fn document(dir: &Path, secret: &dyn Fn(&[u8]) -> bool) -> Result<Value, ConsoleError> {
    document_within(dir, secret, EMBED_LIMIT_BYTES)
}

/// [`document`], embedding at most `limit` bytes of snapshots and screenshots (a test shows a
/// page past its limit without writing a hundred megabytes).
pub fn document_within(
    dir: &Path,
    secret: &dyn Fn(&[u8]) -> bool,
    limit: usize,
) -> Result<Value, ConsoleError> {
    serde_json::to_value(build(dir, secret, limit)?).map_err(unshowable)
}

/// The viewer's script, for a page that serves it as a file.
pub const SHOW_JS: &str = SCRIPT;
/// The viewer's style sheet, likewise.
pub const SHOW_CSS: &str = STYLE;

fn unshowable(error: serde_json::Error) -> ConsoleError {
    ConsoleError::BadRequest {
        reason: format!("the run cannot be shown: {error}"),
    }
}

fn page(data: &str) -> String {
    // Inside a script element only `</script` (and `<!--`) end or change the data; JSON escapes
    // of `<` and `>` keep both out, and of `&` keep an entity from meaning anything.
    let data = data
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    fill(
        PAGE,
        &[
            ("/*{{style}}*/", STYLE),
            ("{{data}}", &data),
            ("/*{{script}}*/", SCRIPT),
        ],
    )
}

/// The template with each marker replaced, in order, once: what is filled in is never searched
/// for a marker again, so a run whose text spells one stays as it is.
fn fill(template: &str, parts: &[(&str, &str)]) -> String {
    let mut page = String::with_capacity(
        template.len() + parts.iter().map(|(_, value)| value.len()).sum::<usize>(),
    );
    let mut rest = template;
    for (marker, value) in parts {
        if let Some((before, after)) = rest.split_once(marker) {
            page.push_str(before);
            page.push_str(value);
            rest = after;
        }
    }
    page.push_str(rest);
    page
}

fn build(
    dir: &Path,
    secret: &dyn Fn(&[u8]) -> bool,
    limit: usize,
) -> Result<Document, ConsoleError> {
    let run = Dir::open(dir).map_err(|error| ConsoleError::BadRequest {
        reason: format!(
            "cannot open the run directory {}: {error} (pass a directory that holds a trace.jsonl)",
            dir.display()
        ),
    })?;
    if !run.has_file(cua_evidence::TRACE_FILE) {
        return Err(ConsoleError::BadRequest {
            reason: format!(
                "{} holds no {}: pass a run directory (one per run, under the evidence root)",
                dir.display(),
                cua_evidence::TRACE_FILE
            ),
        });
    }
    let lines = cua_evidence::read_trace(dir).map_err(ConsoleError::Evidence)?;
    let verification = match cua_evidence::verify(dir) {
        Ok(report) => Verification {
            intact: report.is_intact(),
            summary: report.summary(),
        },
        Err(error) => Verification {
            intact: false,
            summary: error.to_string(),
        },
    };
    let record = run
        .read(
            cua_evidence::RUN_RECORD_FILE,
            cua_evidence::EVIDENCE_FILE_LIMIT,
        )
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .or_else(|| {
            cua_evidence::project(&lines)
                .ok()
                .and_then(|record| serde_json::to_value(record).ok())
        });
    let (snapshot_names, screenshot_names) = referenced_files(&lines);
    let mut budget = limit;
    let mut left_out = BTreeMap::new();
    let mut read = |name: &str, left_out: &mut BTreeMap<String, String>| -> Option<Vec<u8>> {
        match run.read(name, cua_evidence::EVIDENCE_FILE_LIMIT) {
            Ok(bytes) if bytes.len() <= budget => {
                budget -= bytes.len();
                Some(bytes)
            }
            Ok(_) => {
                left_out.insert(
                    name.to_owned(),
                    "the page's size limit was reached: open the file itself".to_owned(),
                );
                None
            }
            Err(error) => {
                left_out.insert(name.to_owned(), format!("cannot be read: {error}"));
                None
            }
        }
    };
    let mut snapshots = BTreeMap::new();
    for name in snapshot_names {
        if let Some(bytes) = read(&name, &mut left_out) {
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(snapshot) => {
                    snapshots.insert(name, snapshot);
                }
                Err(error) => {
                    left_out.insert(name, format!("not a snapshot: {error}"));
                }
            }
        }
    }
    let mut screenshots = BTreeMap::new();
    for name in screenshot_names {
        if let Some(bytes) = read(&name, &mut left_out) {
            if secret(&bytes) {
                left_out.insert(name, "withheld: it carries a registered secret".to_owned());
            } else {
                let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
                screenshots.insert(name, format!("data:image/png;base64,{encoded}"));
            }
        }
    }
    let run_id = dir.file_name().map_or_else(
        || {
            lines
                .first()
                .map(|line| line.run_id.clone())
                .unwrap_or_default()
        },
        |name| name.to_string_lossy().into_owned(),
    );
    Ok(Document {
        run_id,
        verification,
        record,
        trace: trace_values(&lines),
        steps: timeline(&lines),
        snapshots,
        screenshots,
        left_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every marker is in the template, in the order `page` fills them, so none is left
    /// unfilled and none is filled inside another's value.
    #[test]
    fn the_template_holds_every_marker_once_in_order() {
        let mut at = 0;
        for marker in ["/*{{style}}*/", "{{data}}", "/*{{script}}*/"] {
            assert_eq!(PAGE.matches(marker).count(), 1, "{marker}");
            let found = PAGE.find(marker).unwrap_or_default();
            assert!(found >= at, "{marker} is out of order");
            at = found;
        }
    }

    /// One trace line from its event's members.
    fn line(seq: u64, event: Value) -> TraceLine {
        let mut line = json!({
            "seq": seq, "at": "2026-12-02T10:00:00.000000Z", "run_id": "run-t",
            "actor": "automation", "lease_epoch": 1, "prev_hash": "", "line_hash": "",
        });
        if let (Value::Object(line), Value::Object(event)) = (&mut line, event) {
            line.extend(event);
        }
        serde_json::from_value(line).unwrap_or_else(|error| panic!("a trace line: {error}"))
    }

    /// Steps begin where another step's lines begin or where an action follows a settled one
    /// (dispatched, or refused by the policy); a model call made after a settled step is the
    /// next step's; an observation is the next steps' `before` and a dispatched step's `after`.
    #[test]
    fn a_trace_groups_into_the_steps_a_person_reads() {
        let resolve = |step: Option<&str>| json!({"event": "resolve", "step": step, "target": "button Save", "resolved": true, "candidates_considered": 1});
        let authorize = |step: Option<&str>, granted: bool| json!({"event": "authorize", "step": step, "decision_id": "d", "granted": granted, "action_type": "click", "risk": "safe", "reason": "r"});
        let dispatch = |step: Option<&str>| json!({"event": "dispatch", "step": step, "decision_id": "d", "action_type": "click", "ok": true});
        let observe = |snapshot: &str| json!({"event": "observe", "url": "u", "title": "t", "node_count": 1, "snapshot_ref": snapshot});
        let llm = json!({"event": "llm_call", "model": "m", "provider": "p", "prompt_tokens": 1, "completion_tokens": 1});
        let effect =
            json!({"event": "effect", "step": "save", "verdict": "confirmed", "reason": "r"});
        let lines: Vec<TraceLine> = [
            json!({"event": "run_start", "kind": "discovery"}),
            observe("snapshots/0001-a.json"),
            llm.clone(),
            resolve(None),
            authorize(None, false),
            llm,
            resolve(None),
            authorize(None, true),
            dispatch(None),
            observe("snapshots/0002-b.json"),
            resolve(Some("save")),
            authorize(Some("save"), true),
            dispatch(Some("save")),
            effect,
            observe("snapshots/0003-c.json"),
        ]
        .into_iter()
        .zip(1..)
        .map(|(event, seq)| line(seq, event))
        .collect();
        let steps = timeline(&lines);
        #[expect(clippy::type_complexity, reason = "one step's parts, compared whole")]
        let shape: Vec<(
            Option<&str>,
            Vec<usize>,
            Option<&str>,
            Option<&str>,
            bool,
            bool,
        )> = steps
            .iter()
            .map(|step| {
                (
                    step.step.as_deref(),
                    step.lines.clone(),
                    step.before.as_deref(),
                    step.after.as_deref(),
                    step.dispatched,
                    step.refused,
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                (
                    None,
                    vec![2, 3, 4],
                    Some("snapshots/0001-a.json"),
                    None,
                    false,
                    true
                ),
                (
                    None,
                    vec![5, 6, 7, 8, 9],
                    Some("snapshots/0001-a.json"),
                    Some("snapshots/0002-b.json"),
                    true,
                    false
                ),
                (
                    Some("save"),
                    vec![10, 11, 12, 13, 14],
                    Some("snapshots/0002-b.json"),
                    Some("snapshots/0003-c.json"),
                    true,
                    false
                ),
            ]
        );
        assert_eq!(steps[2].verdict.as_deref(), Some("confirmed"));
        assert_eq!(steps[1].action.as_deref(), Some("click"));
    }

    /// A run whose text spells a marker or closes the script keeps it as text.
    #[test]
    fn data_that_spells_markup_or_a_marker_stays_data() {
        let page =
            page(r#"{"title":"</script><script>alert(1)</script> /*{{script}}*/ {{data}} &amp;"}"#);
        assert_eq!(
            page.matches("</script>").count(),
            3,
            "the page's own three scripts"
        );
        assert!(page.contains(r#"\u003c/script\u003e\u003cscript\u003ealert(1)"#));
        assert!(page.contains("/*{{script}}*/ {{data}} \\u0026amp;"));
        assert_eq!(page.matches("window.cuaShow").count(), 1);
    }
}
