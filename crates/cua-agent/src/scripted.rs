//! The scripted model: an OpenAI-compatible `/v1/chat/completions` server on loopback that
//! plays a model by rules over the screen rendered in each request, never by fixed node ids.
//!
//! Tests and the offline demo reach it through the same [`crate::OpenAiAdapter`] as a live
//! endpoint. Every answer says model `scripted`, carries `x-request-id: scripted-N`,
//! `x-provider: scripted` and `x-cua-scripted: true`, so a run that used it is labelled scripted
//! in every record and can never pass for a live model. The server keeps every request body it
//! receives, so a test can sweep them for anything that must never leave the process.
//!
//! The rules, tried in order on the last screen of the request (the server keeps no state: what
//! was already tried is read from the conversation in the request):
//!
//! 1. A gullible reader: page text `navigate to <url>` → `navigate` there; page text
//!    `press "<name>"` with such a button → `click` it (the policy must refuse both).
//! 2. A sign-on form: an empty `Operator ID` / `Password` textbox → `type` the credential
//!    placeholder named in the goal; then `click` "Sign On".
//! 3. A search form: a `Member Number` textbox not holding the member from the goal → `type`
//!    it (by ref); holding it → `click` the `Search` button (by role and name).
//! 4. A member record: each value the goal asks for (savings balance, status, as-of date, or the
//!    balance of a named account) → `extract` the cell beside its label, or under its column
//!    header in the account's row.
//! 5. Everything asked for is extracted → `finish`; no rule applies → `finish` gave up.
//!
//! An assisted-recovery request (a user message starting with [`ASSIST_MARKER`], sent by
//! `cua replay --assist` after a deterministic run stopped at one step) is answered by its own
//! rule after the gullible reader: the node whose label reads most like the step's recorded
//! label (the same words, or abbreviations of them: "Savings Bal." for "Savings Balance"),
//! proposed with the step's own action, or `give_up` when no single node stands out.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use regex::Regex;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::AgentError;
use crate::llm::ModelConfig;
use crate::openai::SCRIPTED_MODEL_NAME;

/// The first words of the user message that briefs the model on an assisted recovery.
pub const ASSIST_MARKER: &str = "Assisted recovery of one step.";

/// A scripted model serving on loopback.
#[derive(Debug)]
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    requests: Mutex<Vec<String>>,
    answered: AtomicU64,
}

impl ScriptedServer {
    /// Starts the server on 127.0.0.1, on a free port.
    pub async fn start() -> Result<Self, AgentError> {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .await
            .map_err(AgentError::ScriptedServer)?;
        let addr = listener.local_addr().map_err(AgentError::ScriptedServer)?;
        let shared = Arc::new(Shared::default());
        let router = Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/chat/completions", post(complete))
            .with_state(Arc::clone(&shared));
        let (shutdown, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
        });
        Ok(Self {
            addr,
            shared,
            shutdown: Some(shutdown),
            task,
        })
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL an OpenAI-compatible client is given.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The model configuration that reaches this server, labelled scripted.
    pub fn model_config(&self) -> ModelConfig {
        ModelConfig {
            scripted: true,
            ..ModelConfig::new(self.base_url(), SCRIPTED_MODEL_NAME)
        }
    }

    /// Every request body received so far, in order, byte for byte.
    pub fn requests(&self) -> Vec<String> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stops the server and waits for it.
    pub async fn shutdown(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

async fn complete(State(shared): State<Arc<Shared>>, body: String) -> Response {
    shared
        .requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(body.clone());
    let number = shared.answered.fetch_add(1, Ordering::Relaxed) + 1;
    let request: Value = match serde_json::from_str(&body) {
        Ok(request) => request,
        Err(error) => {
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": {"message": format!("not JSON: {error}"), "type": "invalid_request_error"}})),
            )
                .into_response();
        }
    };
    let decision = decide(&request);
    let arguments = decision.arguments.to_string();
    let answer = json!({
        "id": format!("chatcmpl-scripted-{number}"),
        "object": "chat.completion",
        "created": 0,
        "model": SCRIPTED_MODEL_NAME,
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": decision.reasoning,
                "tool_calls": [{
                    "id": format!("call_{number}"),
                    "type": "function",
                    "function": { "name": decision.tool, "arguments": arguments },
                }],
            },
            "finish_reason": "tool_calls",
        }],
        "usage": {
            "prompt_tokens": body.len() / 4,
            "completion_tokens": arguments.len() / 4 + 1,
            "total_tokens": body.len() / 4 + arguments.len() / 4 + 1,
        },
    });
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(&format!("scripted-{number}")) {
        headers.insert("x-request-id", value);
    }
    headers.insert("x-provider", HeaderValue::from_static("scripted"));
    headers.insert("x-cua-scripted", HeaderValue::from_static("true"));
    (StatusCode::OK, headers, axum::Json(answer)).into_response()
}

/// What the scripted model answers: one tool call and a sentence of reasoning.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub tool: String,
    pub arguments: Value,
    pub reasoning: String,
}

impl Decision {
    fn new(tool: &str, arguments: Value, reasoning: impl Into<String>) -> Self {
        Self {
            tool: tool.to_owned(),
            arguments,
            reasoning: reasoning.into(),
        }
    }
}

/// One line of the rendered outline.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Item {
    reference: String,
    role: String,
    name: String,
    value: Option<String>,
}

/// A row of the outline: its cells and controls, left to right.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    items: Vec<Item>,
}

/// The screen as the rules read it.
#[derive(Debug, Default)]
struct Screen {
    items: Vec<Item>,
    rows: Vec<Row>,
    text: String,
}

impl Screen {
    fn parse(text: &str) -> Self {
        let item = item_pattern();
        let mut screen = Screen {
            text: text.to_owned(),
            ..Screen::default()
        };
        for line in text.lines() {
            let trimmed = line.trim_start();
            let is_row = trimmed
                .split_once(' ')
                .is_some_and(|(_, rest)| rest.starts_with("row:"));
            let items: Vec<Item> = item
                .captures_iter(trimmed)
                .map(|captures| Item {
                    reference: captures[1].to_owned(),
                    role: captures[2].to_owned(),
                    name: unquote(captures.get(3).map_or("\"\"", |name| name.as_str())),
                    value: captures.get(4).map(|value| unquote(value.as_str())),
                })
                .filter(|item| item.role != "row")
                .collect();
            if is_row {
                screen.rows.push(Row {
                    items: items.clone(),
                });
            }
            screen.items.extend(items);
        }
        screen
    }

    fn control(&self, role: &str, name: &str) -> Option<&Item> {
        self.items
            .iter()
            .find(|item| item.role == role && item.name.eq_ignore_ascii_case(name))
    }

    /// The cell right of a row's first cell when that first cell reads `label`.
    fn value_beside(&self, label: &str) -> Option<&Item> {
        self.rows.iter().find_map(|row| {
            let first = row.items.first()?;
            (first.role == "cell" && first.name.eq_ignore_ascii_case(label))
                .then(|| row.items.get(1))
                .flatten()
        })
    }

    /// The cell under column `header` in the row holding a cell that reads `key`.
    fn value_in_column(&self, key: &str, header: &str) -> Option<&Item> {
        let header_row = self.rows.iter().find(|row| {
            row.items
                .iter()
                .any(|item| item.role == "cell" && item.name.eq_ignore_ascii_case(header))
        })?;
        let column = header_row
            .items
            .iter()
            .position(|item| item.name.eq_ignore_ascii_case(header))?;
        let row = self.rows.iter().find(|row| {
            row.items
                .iter()
                .any(|item| item.role == "cell" && item.name == key)
        })?;
        row.items.get(column)
    }
}

/// What the conversation so far says.
#[derive(Debug, Default)]
struct Conversation {
    goal: String,
    screen: String,
    /// The brief of an assisted recovery, when the request is one.
    assist: Option<String>,
    /// `tool arguments` of every earlier call.
    tried: BTreeSet<String>,
    /// Outputs already extracted.
    extracted: BTreeSet<String>,
}

impl Conversation {
    fn read(request: &Value) -> Self {
        let mut conversation = Conversation::default();
        let messages = request
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for message in &messages {
            let role = message.get("role").and_then(Value::as_str).unwrap_or("");
            let content = message.get("content").and_then(Value::as_str).unwrap_or("");
            match role {
                "user" if content.starts_with("Goal:") => conversation.goal = content.to_owned(),
                "user" if content.starts_with(ASSIST_MARKER) => {
                    conversation.assist = Some(content.to_owned());
                }
                "user" => conversation.screen = content.to_owned(),
                "assistant" => {
                    for call in message
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let function = call.get("function").cloned().unwrap_or_default();
                        let name = function.get("name").and_then(Value::as_str).unwrap_or("");
                        let arguments = function
                            .get("arguments")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        conversation.tried.insert(format!("{name} {arguments}"));
                    }
                }
                "tool" => {
                    if let Some(rest) = content.strip_prefix("extracted ")
                        && let Some((name, _)) = rest.split_once(" = ")
                    {
                        conversation.extracted.insert(name.to_owned());
                    }
                }
                _ => {}
            }
        }
        conversation
    }

    fn tried(&self, tool: &str, arguments: &Value) -> bool {
        self.tried.contains(&format!("{tool} {arguments}"))
    }

    /// The member the goal names: an `{$input: name}` placeholder, or a 4 to 12 digit number.
    fn member(&self) -> Option<String> {
        let placeholder = Regex::new(r"\{\$input:\s*([a-z][a-z0-9_]*)\}").ok()?;
        if let Some(captures) = placeholder.captures(&self.goal) {
            return Some(format!("{{$input: {}}}", &captures[1]));
        }
        let number = Regex::new(r"\b([0-9]{4,12})\b").ok()?;
        number
            .captures(self.goal.lines().next().unwrap_or(""))
            .map(|captures| captures[1].to_owned())
    }

    /// The credential placeholder named in the goal whose name contains `part`.
    fn secret(&self, part: &str) -> Option<String> {
        self.goal.lines().find_map(|line| {
            let placeholder = line.trim().strip_prefix("- ")?;
            (placeholder.starts_with("{$secret:") && placeholder.contains(part))
                .then(|| placeholder.to_owned())
        })
    }

    /// What the goal asks to read: `(output name, label)` pairs, or an account's balance.
    fn wanted(&self) -> Vec<Wanted> {
        let goal = self.goal.to_ascii_lowercase();
        let first_line = goal.lines().next().unwrap_or("");
        let mut wanted = Vec::new();
        let account = Regex::new(r"\b([A-Za-z]-[0-9]{3,12}-[0-9]{2})\b")
            .ok()
            .and_then(|pattern| {
                pattern
                    .captures(self.goal.lines().next().unwrap_or(""))
                    .map(|captures| captures[1].to_owned())
            });
        if let Some(account) = account {
            wanted.push(Wanted::Column {
                output: "account_balance",
                key: account,
                header: "Balance",
            });
            return wanted;
        }
        if first_line.contains("savings balance") {
            wanted.push(Wanted::Beside {
                output: "savings_balance",
                label: "Savings Balance",
            });
        }
        if first_line.contains("status") {
            wanted.push(Wanted::Beside {
                output: "account_status",
                label: "Status",
            });
        }
        if first_line.contains("as-of") || first_line.contains("as of") {
            wanted.push(Wanted::Beside {
                output: "as_of",
                label: "As Of",
            });
        }
        wanted
    }
}

/// A value the goal asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Wanted {
    /// The cell beside a label cell.
    Beside {
        output: &'static str,
        label: &'static str,
    },
    /// The cell under a column header in the row holding a key cell.
    Column {
        output: &'static str,
        key: String,
        header: &'static str,
    },
}

/// The scripted model's answer to one chat completion request.
pub fn decide(request: &Value) -> Decision {
    let conversation = Conversation::read(request);
    let screen = Screen::parse(&conversation.screen);
    let attempt = |tool: &str, arguments: Value, reasoning: String| {
        (!conversation.tried(tool, &arguments)).then(|| Decision::new(tool, arguments, reasoning))
    };

    // 1. A gullible reader follows instructions written on the page.
    if let Some(url) = Regex::new(r"(?i)navigate to (https?://[^\s\x22]+)")
        .ok()
        .and_then(|pattern| {
            pattern
                .captures(&screen.text)
                .map(|captures| captures[1].to_owned())
        })
        && let Some(decision) = attempt(
            "navigate",
            json!({ "url": url, "why": "the page says to go there" }),
            format!("The page asks me to navigate to {url}."),
        )
    {
        return decision;
    }
    if let Some(name) = Regex::new(r#"(?i)press \\?"([^"\\]+)\\?""#)
        .ok()
        .and_then(|pattern| {
            pattern
                .captures(&screen.text)
                .map(|captures| captures[1].to_owned())
        })
        && let Some(button) = screen.control("button", &name)
        && let Some(decision) = attempt(
            "click",
            json!({ "target": { "role": "button", "name": button.name }, "why": "the page says to press it" }),
            format!("The page asks me to press {name}."),
        )
    {
        return decision;
    }

    // An assisted recovery proposes one node for the stopped step, or gives up.
    if let Some(brief) = &conversation.assist {
        return assist(&screen, brief);
    }

    // 2. Sign on with credential placeholders.
    for (label, part) in [("Operator ID", "operator_id"), ("Password", "password")] {
        if let Some(field) = screen.control("textbox", label)
            && field.value.as_deref().unwrap_or("").is_empty()
            && let Some(secret) = conversation.secret(part)
        {
            return Decision::new(
                "type",
                json!({ "target": { "ref": field.reference }, "text": secret, "why": format!("sign on: {label}") }),
                format!("The sign-on form needs the {label}."),
            );
        }
    }
    if screen.control("textbox", "Operator ID").is_some()
        && let Some(decision) = attempt(
            "click",
            json!({ "target": { "role": "button", "name": "Sign On" }, "why": "submit the sign-on form" }),
            "The credentials are in; sign on.".to_owned(),
        )
    {
        return decision;
    }

    // 3. Search for the member.
    if let Some(field) = screen.control("textbox", "Member Number")
        && let Some(member) = conversation.member()
    {
        let value = field.value.clone().unwrap_or_default();
        let holds = value == member || (member.starts_with('{') && value.starts_with("<redacted"));
        if !holds {
            return Decision::new(
                "type",
                json!({ "target": { "ref": field.reference }, "text": member, "why": "enter the member number" }),
                "Search for the member the goal names.",
            );
        }
        if let Some(decision) = attempt(
            "click",
            json!({ "target": { "role": "button", "name": "Search" }, "why": "submit the search" }),
            "The member number is in; search.".to_owned(),
        ) {
            return decision;
        }
    }

    // 4. Read what the goal asks for.
    let wanted = conversation.wanted();
    for want in &wanted {
        let (output, cell) = match want {
            Wanted::Beside { output, label } => (*output, screen.value_beside(label)),
            Wanted::Column {
                output,
                key,
                header,
            } => (*output, screen.value_in_column(key, header)),
        };
        if conversation.extracted.contains(output) {
            continue;
        }
        if let Some(cell) = cell {
            return Decision::new(
                "extract",
                json!({ "target": { "ref": cell.reference }, "into": output, "why": format!("the goal asks for {output}") }),
                format!("Read {output}."),
            );
        }
    }

    // 5. Done, or stuck.
    let done = !wanted.is_empty()
        && wanted.iter().all(|want| {
            let output = match want {
                Wanted::Beside { output, .. } | Wanted::Column { output, .. } => *output,
            };
            conversation.extracted.contains(output)
        });
    if done {
        Decision::new(
            "finish",
            json!({ "summary": "Every value the goal asks for is extracted." }),
            "The goal is reached.",
        )
    } else {
        Decision::new(
            "finish",
            json!({ "summary": "No rule of the scripted model applies to this screen.", "gave_up": true }),
            "I do not know what to do on this screen.",
        )
    }
}

/// The assisted-recovery rule: read the step's action and recorded target from the brief
/// (`Action: extract`, `Target: role cell; name "…"; anchor adjacent_to "…"`), find the one
/// node whose label reads most like the recorded one, and propose it with the step's action.
fn assist(screen: &Screen, brief: &str) -> Decision {
    let line = |key: &str| {
        brief
            .lines()
            .find_map(|line| line.strip_prefix(key).map(str::trim))
            .unwrap_or("")
    };
    let action = line("Action:").to_owned();
    let target = line("Target:");
    let role = Regex::new(r"role ([a-z]+)")
        .ok()
        .and_then(|pattern| {
            pattern
                .captures(target)
                .map(|captures| captures[1].to_owned())
        })
        .unwrap_or_default();
    let quoted = |key: &str| {
        Regex::new(&format!(r#"{key} ("(?:[^"\\]|\\.)*")"#))
            .ok()
            .and_then(|pattern| {
                pattern
                    .captures(target)
                    .map(|captures| unquote(&captures[1]))
            })
    };
    let anchor = Regex::new(r#"anchor ([a-z_]+) ("(?:[^"\\]|\\.)*")"#)
        .ok()
        .and_then(|pattern| {
            pattern
                .captures(target)
                .map(|captures| (captures[1].to_owned(), unquote(&captures[2])))
        });
    let give_up = |reason: &str| {
        Decision::new(
            "give_up",
            json!({ "reason": reason }),
            format!("I cannot tell which node the step means: {reason}."),
        )
    };
    let chosen: Option<&Item> = match (&anchor, quoted("name")) {
        (Some((relation, label)), _) => {
            let rows: Vec<&Row> = screen
                .rows
                .iter()
                .filter(|row| row.items.first().is_some_and(|first| first.role == "cell"))
                .collect();
            unique_best(&rows, |row| likeness(&row.items[0].name, label)).and_then(|row| {
                if relation == "adjacent_to" {
                    row.items.get(1).filter(|item| item.role == role)
                } else {
                    row.items.iter().skip(1).find(|item| item.role == role)
                }
            })
        }
        (None, Some(name)) => {
            let items: Vec<&Item> = screen
                .items
                .iter()
                .filter(|item| item.role == role)
                .collect();
            unique_best(&items, |item| likeness(&item.name, &name)).copied()
        }
        (None, None) => None,
    };
    match chosen {
        Some(item) if ["click", "type", "select", "extract"].contains(&action.as_str()) => {
            Decision::new(
                &action,
                json!({ "target": { "ref": item.reference }, "why": "its label reads like the step's recorded label" }),
                format!(
                    "The step's target looks relabelled; {} {:?} matches it.",
                    item.role, item.name
                ),
            )
        }
        Some(_) => give_up("the step's action is not one an assist may propose"),
        None => give_up("no single node on this screen reads like the step's target"),
    }
}

/// The one candidate with the highest likeness, when it is at least one half and no other
/// candidate ties it.
fn unique_best<T>(candidates: &[T], score: impl Fn(&T) -> f64) -> Option<&T> {
    let scored: Vec<(f64, &T)> = candidates
        .iter()
        .map(|candidate| (score(candidate), candidate))
        .filter(|(likeness, _)| *likeness >= 0.5)
        .collect();
    let best = scored
        .iter()
        .map(|(likeness, _)| *likeness)
        .fold(0.0, f64::max);
    let mut top = scored.iter().filter(|(likeness, _)| *likeness == best);
    match (top.next(), top.next()) {
        (Some((_, candidate)), None) => Some(*candidate),
        _ => None,
    }
}

/// How alike two labels read: 0 unless every word of the shorter label matches a word of the
/// longer one (the same word, or one abbreviating the other: "bal" and "balance"); then the
/// shorter label's word count over the longer's. "Status" and "Acct Status" read 0.5 alike,
/// "Opening Balance" and "Savings Bal." not at all.
fn likeness(left: &str, right: &str) -> f64 {
    let words = |text: &str| -> Vec<String> {
        text.split(|character: char| !character.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let (left, right) = (words(left), words(right));
    let (shorter, longer) = if left.len() <= right.len() {
        (left, right)
    } else {
        (right, left)
    };
    if shorter.is_empty() {
        return 0.0;
    }
    let abbreviates = |short: &str, long: &str| short.len() >= 3 && long.starts_with(short);
    let all_match = shorter.iter().all(|word| {
        longer
            .iter()
            .any(|other| other == word || abbreviates(other, word) || abbreviates(word, other))
    });
    if all_match {
        shorter.len() as f64 / longer.len() as f64
    } else {
        0.0
    }
}

/// `n42 role "name" = "value"`: the ref, role, quoted name and quoted value of one outline item.
fn item_pattern() -> Regex {
    Regex::new(r#"\b(n[0-9]+) ([a-z]+)(?: ("(?:[^"\\]|\\.)*"))?(?: = ("(?:[^"\\]|\\.)*"))?"#)
        .expect("the outline item pattern is a valid regex")
}

fn unquote(quoted: &str) -> String {
    serde_json::from_str::<String>(quoted).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(goal: &str, screen: &str) -> Value {
        json!({ "messages": [
            { "role": "system", "content": "rules" },
            { "role": "user", "content": goal },
            { "role": "user", "content": format!("Current screen:\n{screen}") },
        ]})
    }

    #[test]
    fn the_search_form_gets_the_member_typed_then_searched() {
        let screen = "frame content:\n  n5 table (1 rows):\n    n6 row: n7 cell \"Member Number\" | n9 textbox \"Member Number\" = \"\"\n  n12 button \"Search\"";
        let decision = decide(&request(
            "Goal: Look up member 12345 and report the savings balance",
            screen,
        ));
        assert_eq!(decision.tool, "type");
        assert_eq!(decision.arguments["target"]["ref"], "n9");
        assert_eq!(decision.arguments["text"], "12345");
        let typed = screen.replace("= \"\"", "= \"12345\"");
        let decision = decide(&request(
            "Goal: Look up member 12345 and report the savings balance",
            &typed,
        ));
        assert_eq!(decision.tool, "click");
        assert_eq!(decision.arguments["target"]["name"], "Search");
    }

    #[test]
    fn an_assisted_recovery_proposes_the_relabelled_node_or_gives_up() {
        let screen = "n50 table (3 rows):\n  n51 row: n52 cell \"Savings Bal.\" | n54 cell \"$4,210.55\"\n  n56 row: n57 cell \"Acct Status\" | n59 cell \"Active\"\n  n61 row: n62 cell \"As Of\" | n64 cell \"09/11/2026\"";
        let brief = |target: &str| {
            format!("{ASSIST_MARKER}\nStep: read_balance\nAction: extract\nTarget: {target}")
        };
        let ask = |target: &str| {
            decide(&json!({ "messages": [
                { "role": "system", "content": "rules" },
                { "role": "user", "content": brief(target) },
                { "role": "user", "content": format!("Current screen:\n{screen}") },
            ]}))
        };
        let decision =
            ask(r#"role cell; anchor adjacent_to "Savings Balance"; scope frame content"#);
        assert_eq!(decision.tool, "extract");
        assert_eq!(decision.arguments["target"]["ref"], "n54");
        let decision = ask(r#"role cell; anchor adjacent_to "Status"; scope frame content"#);
        assert_eq!(decision.arguments["target"]["ref"], "n59");
        let decision = ask(r#"role cell; anchor adjacent_to "Opening Balance""#);
        assert_eq!(decision.tool, "give_up", "{decision:?}");
        assert!((likeness("Savings Bal.", "Savings Balance") - 1.0).abs() < f64::EPSILON);
        assert!((likeness("Acct Status", "Status") - 0.5).abs() < f64::EPSILON);
        assert!(likeness("As Of", "Savings Balance") < 0.5);
        assert!(likeness("Opening Balance", "Savings Bal.") < 0.5);
    }

    #[test]
    fn values_are_read_beside_labels_and_under_column_headers() {
        let screen = "n20 table (3 rows):\n  n21 row: n22 cell \"Account\" | n24 cell \"Member\" | n26 cell \"Balance\"\n  n28 row: n29 cell \"S-12345-01\" | n31 cell \"12345\" | n33 cell \"$4,210.55\"\n  n35 row: n36 cell \"C-12345-02\" | n38 cell \"12345\" | n40 cell \"$812.30\"\nn50 table (1 rows):\n  n51 row: n52 cell \"Savings Balance\" | n54 cell \"$4,210.55\"";
        let decision = decide(&request(
            "Goal: Look up member 12345 and report the savings balance",
            screen,
        ));
        assert_eq!(
            (decision.tool.as_str(), &decision.arguments["target"]["ref"]),
            ("extract", &json!("n54"))
        );
        let decision = decide(&request(
            "Goal: Report the balance of account C-12345-02",
            screen,
        ));
        assert_eq!(decision.arguments["target"]["ref"], "n40");
        assert_eq!(decision.arguments["into"], "account_balance");
    }
}
