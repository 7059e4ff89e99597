//! The redactor every sink writes through: trace events, snapshots, run records, and (through
//! [`Redactor::redact_text`] and [`Redactor::redact_json`]) logs, prompts and console frames.
//!
//! Redaction preserves shape, so a reader still sees that a value was there and roughly what it
//! looked like:
//!
//! 1. registered secret literals become `<redacted:secret>`;
//! 2. registered sensitive values (the values of inputs and outputs declared `sensitive`)
//!    become `<redacted:string[N]>`, N being the value's length in characters;
//! 3. pattern rules from the policy (`name` + regex) replace what they match with
//!    `<redacted:NAME>`;
//! 4. in JSON, any value under a sensitive key (a sensitive input or output name) becomes
//!    `<redacted:TYPE[N]>`: `string[5]`, `number[8]`, `array[2]`, `object[3]` or `boolean`.
//!
//! Over-redaction is a defect too: a run record that says `<redacted:email>` where it should name
//! the capability that ran answers nothing. Values under [`STRUCTURAL_KEYS`] (ids, references,
//! hashes and counters the system mints itself) are therefore scrubbed of literals but never
//! matched against pattern rules, so `dec-12345678` survives an account-number rule.
//!
//! Cost is bounded: the `regex` crate matches in linear time, compiled rules are size-limited,
//! and a string longer than [`MAX_REDACTABLE_BYTES`] is masked whole by its shape rather than
//! scanned.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};
use cua_snapshot::UiSnapshot;
use regex::{NoExpand, Regex, RegexBuilder};
use serde_json::Value;

use crate::error::EvidenceError;

/// Registered literals shorter than this many characters are not scrubbed: they would match
/// everywhere. The secret resolver refuses to issue such a secret for that reason.
pub const MIN_LITERAL_CHARS: usize = 4;

/// Longer strings are not scanned; they are replaced whole by `<redacted:string[N]>`.
pub const MAX_REDACTABLE_BYTES: usize = 64 * 1024;

/// Keys whose values the system mints itself: identifiers, references, content hashes, times
/// and counters. Pattern rules do not apply under them (literals and sensitive keys still do).
pub const STRUCTURAL_KEYS: &[&str] = &[
    "ambiguity_score",
    "at",
    "attempt",
    "candidates_considered",
    "capability",
    "capability_ref",
    "completion_tokens",
    "content_hash",
    "decision_id",
    "drift_score",
    "duration_ms",
    "epoch",
    "evidence_ref",
    "expected_epoch",
    "files",
    "http_status",
    "human_actions",
    "index",
    "intervention",
    "lease_epoch",
    "max_attempts",
    "node_count",
    "node_id",
    "observation",
    "prompt_tokens",
    "recovery_attempts",
    "request_id",
    "resolved_node_id",
    "resolver_config_hash",
    "resume_index",
    "run_id",
    "screenshot_digest",
    "screenshot_ref",
    "seq",
    "snapshot_digest",
    "snapshot_ref",
    "started_at",
    "step",
    "step_id",
    "step_index",
    "steps_attempted",
    "steps_effective",
    "steps_executed",
    "steps_total",
    "timeout_ms",
    "tokens_used",
    "values_changed",
    "waited_ms",
];

/// A shared, thread-safe redactor. Clones share state: a secret registered through one clone
/// (by the [`crate::SecretResolver`], as it issues it) is scrubbed by every other clone (the
/// bus's, the console's).
#[derive(Clone, Default)]
pub struct Redactor {
    inner: Arc<Inner>,
}

impl Redactor {
    /// A redactor with the policy's pattern rules, given as `(name, pattern)` pairs. A rule name
    /// must be a lowercase identifier (`account_number`), since it is written into the
    /// replacement marker.
    pub fn new<I, N, P>(rules: I) -> Result<Self, EvidenceError>
    where
        I: IntoIterator<Item = (N, P)>,
        N: Into<String>,
        P: AsRef<str>,
    {
        let rules = rules
            .into_iter()
            .map(|(name, pattern)| PatternRule::compile(name.into(), pattern.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            inner: Arc::new(Inner {
                rules,
                state: RwLock::default(),
            }),
        })
    }

    /// A redactor for a policy file's `redaction` section: its rules, and its `names` as keys
    /// always masked by shape. Shapes are always preserved.
    pub fn from_policy(redaction: &cua_artifact::Redaction) -> Result<Self, EvidenceError> {
        let redactor = Self::new(
            redaction
                .rules
                .iter()
                .map(|rule| (rule.name.clone(), rule.pattern.as_str())),
        )?;
        redactor.add_sensitive_keys(redaction.names.iter().cloned());
        Ok(redactor)
    }

    /// Registers a secret value: from now on every occurrence is `<redacted:secret>`. Returns
    /// whether it was registered (values under [`MIN_LITERAL_CHARS`] characters are not).
    pub fn register_secret(&self, secret: &str) -> bool {
        self.register_literal(secret, SECRET_MARKER.to_owned())
    }

    /// Registers the value of a sensitive input or output: from now on every occurrence in free
    /// text is `<redacted:string[N]>`. Returns whether it was registered.
    pub fn register_sensitive_value(&self, value: &str) -> bool {
        self.register_literal(value, string_marker(value))
    }

    /// Marks keys as sensitive: in JSON, values under them are masked by shape.
    pub fn add_sensitive_keys<I, S>(&self, keys: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut state = self.write();
        state
            .sensitive_keys
            .extend(keys.into_iter().map(Into::into));
    }

    /// Unmarks keys, e.g. a remedy capability's sensitive names once the remedy is over.
    pub fn remove_sensitive_keys<I, S>(&self, keys: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut state = self.write();
        for key in keys {
            state.sensitive_keys.remove(key.as_ref());
        }
    }

    /// Redacts free text: literals first, then pattern rules.
    pub fn redact_text(&self, text: &str) -> String {
        let state = self.read();
        self.full(&state, text)
    }

    /// Redacts a JSON value recursively (see the module documentation for the rules).
    pub fn redact_json(&self, value: &Value) -> Value {
        let state = self.read();
        self.walk(&state, value, Mode::Full)
    }

    /// Masks what is declared, and only that: values under sensitive keys by shape, and
    /// registered secrets and sensitive values wherever they occur. The policy's pattern rules
    /// (which guess at e-mail addresses, account numbers, …) are not applied: this is for what
    /// a caller asked for, a run's outputs, where a guessed mask would hide a legitimate value.
    pub fn redact_declared_json(&self, value: &Value) -> Value {
        let state = self.read();
        self.walk(&state, value, Mode::LiteralsOnly)
    }

    /// [`Redactor::redact_declared_json`] for free text: registered literals only.
    pub fn redact_declared_text(&self, text: &str) -> String {
        let state = self.read();
        self.literals_only(&state, text)
    }

    /// Redacts a snapshot before it is written or rendered: the URL, the title, and every
    /// node's name, value, CSS hint and scope names.
    pub fn redact_snapshot(&self, snapshot: &UiSnapshot) -> UiSnapshot {
        let state = self.read();
        let text = |value: &str| self.full(&state, value);
        let mut redacted = snapshot.clone();
        redacted.url = text(&redacted.url);
        redacted.title = text(&redacted.title);
        for node in &mut redacted.nodes {
            node.name = text(&node.name);
            for value in [
                &mut node.value,
                &mut node.css_hint,
                &mut node.scope.frame,
                &mut node.scope.region,
            ]
            .into_iter()
            .flatten()
            {
                *value = text(value);
            }
        }
        redacted
    }

    /// Whether the bytes contain a registered secret. Used to refuse a screenshot that would
    /// carry one (pixels are painted by the driver; this catches text that slipped into
    /// metadata).
    pub fn contains_secret(&self, bytes: &[u8]) -> bool {
        let state = self.read();
        state
            .literals
            .iter()
            .filter(|literal| literal.replacement == SECRET_MARKER)
            .any(|literal| contains_bytes(bytes, literal.value.as_bytes()))
    }

    /// Whether redacting the text would change it.
    pub fn is_clean(&self, text: &str) -> bool {
        self.redact_text(text) == text
    }

    fn register_literal(&self, value: &str, replacement: String) -> bool {
        if value.chars().count() < MIN_LITERAL_CHARS {
            return false;
        }
        let mut state = self.write();
        if let Some(existing) = state
            .literals
            .iter_mut()
            .find(|literal| literal.value == value)
        {
            // A value that is both sensitive and secret is treated as secret.
            if replacement == SECRET_MARKER {
                existing.replacement = replacement;
            }
            return true;
        }
        // Until the automaton is rebuilt every text is masked whole: a panic half-way leaves
        // a redactor that over-masks, never one that misses the new literal.
        state.automaton = None;
        state.literals.push(Literal {
            value: value.to_owned(),
            replacement,
        });
        // A fixed order (longest first, ties by text), so the automaton and the markers never
        // depend on registration order.
        state.literals.sort_by(|left, right| {
            right
                .value
                .len()
                .cmp(&left.value.len())
                .then_with(|| left.value.cmp(&right.value))
        });
        // Standard match semantics, the only ones that report overlapping matches. A build
        // can fail only past the automaton's size limits; then every text is masked whole
        // (`literals_only`), never passed in clear.
        state.automaton = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(state.literals.iter().map(|literal| literal.value.as_str()))
            .ok();
        true
    }

    fn literals_only(&self, state: &State, text: &str) -> String {
        if text.len() > MAX_REDACTABLE_BYTES {
            return string_marker(text);
        }
        if state.literals.is_empty() {
            return text.to_owned();
        }
        let Some(automaton) = &state.automaton else {
            return string_marker(text);
        };
        // Every occurrence of every literal, overlapping ones too, merged into spans: two
        // values that overlap are one span, so no part of either is left between markers.
        let mut spans: Vec<(usize, usize, bool)> = automaton
            .find_overlapping_iter(text)
            .map(|found| {
                let literal = &state.literals[found.pattern().as_usize()];
                (
                    found.start(),
                    found.end(),
                    literal.replacement == SECRET_MARKER,
                )
            })
            .collect();
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize, bool)> = Vec::new();
        for (start, end, secret) in spans {
            match merged.last_mut() {
                Some(last) if start < last.1 => {
                    last.1 = last.1.max(end);
                    last.2 |= secret;
                }
                _ => merged.push((start, end, secret)),
            }
        }
        let mut redacted = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end, secret) in merged {
            redacted.push_str(&text[at..start]);
            let span = &text[start..end];
            // A span with any secret in it is a secret's; a sensitive value alone keeps its
            // own marker; overlapping sensitive values are shaped as the text they hide.
            let single = state
                .literals
                .iter()
                .find(|literal| literal.value == span)
                .map(|literal| literal.replacement.clone());
            redacted.push_str(&match (secret, single) {
                (true, _) => SECRET_MARKER.to_owned(),
                (false, Some(marker)) => marker,
                (false, None) => string_marker(span),
            });
            at = end;
        }
        redacted.push_str(&text[at..]);
        redacted
    }

    fn full(&self, state: &State, text: &str) -> String {
        if text.len() > MAX_REDACTABLE_BYTES {
            return string_marker(text);
        }
        let mut redacted = self.literals_only(state, text);
        for rule in &self.inner.rules {
            if rule.regex.is_match(&redacted) {
                redacted = rule
                    .regex
                    .replace_all(&redacted, NoExpand(&rule.marker))
                    .into_owned();
            }
        }
        redacted
    }

    fn walk(&self, state: &State, value: &Value, mode: Mode) -> Value {
        let text = |text: &str| match mode {
            Mode::Full => self.full(state, text),
            Mode::LiteralsOnly => self.literals_only(state, text),
        };
        match value {
            Value::Null | Value::Bool(_) => value.clone(),
            Value::String(string) => Value::String(text(string)),
            Value::Number(number) => {
                let written = number.to_string();
                let redacted = text(&written);
                if redacted == written {
                    value.clone()
                } else {
                    Value::String(redacted)
                }
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.walk(state, item, mode))
                    .collect(),
            ),
            Value::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(key, item)| {
                        let redacted = if state.sensitive_keys.contains(key) {
                            mask_shape(item)
                        } else if key.ends_with("_digest") && is_digest(item) {
                            // A digest the bus computed: no secret is in it, and scrubbing a
                            // literal that happens to occur in its hex would break the run's
                            // verification.
                            item.clone()
                        } else if STRUCTURAL_KEYS.contains(&key.as_str()) {
                            self.walk(state, item, Mode::LiteralsOnly)
                        } else {
                            self.walk(state, item, mode)
                        };
                        (self.literals_only(state, key), redacted)
                    })
                    .collect(),
            ),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        // A panic while holding the lock cannot leave the state half-updated in a way that
        // matters (a write clears the automaton first, so a half-done one over-masks), so a
        // poisoned lock is still usable.
        self.inner
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.inner
            .state
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Redactor {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.read();
        formatter
            .debug_struct("Redactor")
            .field(
                "rules",
                &self
                    .inner
                    .rules
                    .iter()
                    .map(|rule| rule.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("literals", &state.literals.len())
            .field("sensitive_keys", &state.sensitive_keys)
            .finish()
    }
}

/// The marker a registered secret becomes.
const SECRET_MARKER: &str = "<redacted:secret>";

/// Compiled rules may not grow beyond this (the `regex` default is 10 MiB).
const RULE_SIZE_LIMIT: usize = 1 << 20;

#[derive(Default)]
struct Inner {
    rules: Vec<PatternRule>,
    state: RwLock<State>,
}

#[derive(Default)]
struct State {
    literals: Vec<Literal>,
    /// Every literal at once, rebuilt when one is registered: found in one pass over a text,
    /// overlapping matches included.
    automaton: Option<AhoCorasick>,
    sensitive_keys: BTreeSet<String>,
}

struct Literal {
    value: String,
    replacement: String,
}

struct PatternRule {
    name: String,
    regex: Regex,
    marker: String,
}

impl PatternRule {
    fn compile(name: String, pattern: &str) -> Result<Self, EvidenceError> {
        let valid_name = name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid_name {
            return Err(EvidenceError::InvalidRedactionRule {
                name,
                reason: "a rule name must be a lowercase identifier such as `account_number`"
                    .into(),
            });
        }
        if pattern.is_empty() {
            return Err(EvidenceError::InvalidRedactionRule {
                name,
                reason: "the pattern is empty".into(),
            });
        }
        let regex = RegexBuilder::new(pattern)
            .size_limit(RULE_SIZE_LIMIT)
            .build()
            .map_err(|error| EvidenceError::InvalidRedactionRule {
                name: name.clone(),
                reason: error.to_string(),
            })?;
        if regex.is_match("") {
            return Err(EvidenceError::InvalidRedactionRule {
                name,
                reason: "the pattern matches the empty string".into(),
            });
        }
        let marker = format!("<redacted:{name}>");
        Ok(Self {
            name,
            regex,
            marker,
        })
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Full,
    LiteralsOnly,
}

fn string_marker(value: &str) -> String {
    format!("<redacted:string[{}]>", value.chars().count())
}

/// Masks a value by its shape. Idempotent: a marker stays as it is, so redacting an already
/// redacted document changes nothing.
fn mask_shape(value: &Value) -> Value {
    let marker = match value {
        Value::Null => return Value::Null,
        Value::String(string) if is_marker(string) => return value.clone(),
        Value::String(string) => string_marker(string),
        Value::Bool(_) => "<redacted:boolean>".to_owned(),
        Value::Number(number) => format!("<redacted:number[{}]>", number.to_string().len()),
        Value::Array(items) => format!("<redacted:array[{}]>", items.len()),
        Value::Object(entries) => format!("<redacted:object[{}]>", entries.len()),
    };
    Value::String(marker)
}

fn is_marker(text: &str) -> bool {
    text.strip_prefix("<redacted:")
        .and_then(|rest| rest.strip_suffix('>'))
        .is_some_and(|inner| !inner.contains(['<', '>']))
}

fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty()
        && haystack
            .windows(needle.len())
            .any(|window| window == needle)
}

/// Whether `value` is exactly a digest as the bus writes it: `blake3:` and 64 lowercase hex
/// digits.
fn is_digest(value: &Value) -> bool {
    value.as_str().is_some_and(|text| {
        text.strip_prefix(crate::chain::HASH_PREFIX)
            .is_some_and(|hex| {
                hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structural_keys_are_sorted_and_unique() {
        let mut sorted = STRUCTURAL_KEYS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, STRUCTURAL_KEYS);
    }

    #[test]
    fn markers_are_recognized() {
        assert!(is_marker("<redacted:string[5]>"));
        assert!(is_marker("<redacted:secret>"));
        assert!(!is_marker("<redacted:secret> and more <redacted:ssn>"));
        assert!(!is_marker("redacted"));
    }

    #[test]
    fn a_digest_is_kept_whole_and_anything_else_under_a_digest_key_is_scrubbed() {
        let redactor = Redactor::new(std::iter::empty::<(&str, &str)>()).unwrap();
        assert!(redactor.register_secret("7e3a"));
        let digest = format!("blake3:{}7e3a", "0".repeat(60));
        let event = serde_json::json!({
            "snapshot_digest": digest,
            "screenshot_digest": "not a digest 7e3a",
            "value": digest,
        });
        let redacted = redactor.redact_json(&event);
        assert_eq!(redacted["snapshot_digest"], digest);
        assert!(!redacted["screenshot_digest"].to_string().contains("7e3a"));
        assert!(!redacted["value"].to_string().contains("7e3a"));
    }
}
