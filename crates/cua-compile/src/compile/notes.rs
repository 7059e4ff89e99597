//! Naming and review notes: step ids, the parameterized goal, what a reviewer must check, and the
//! text helpers they are written with.

use cua_artifact::{Identifier, ValueExpr};

use crate::shape::Shape;

use super::Compiler;

impl Compiler {
    /// The goal with every input's example replaced by `{name}`.
    pub(super) fn parameterize(&self, goal: &str) -> String {
        self.inputs.iter().fold(goal.to_owned(), |goal, input| {
            match input.example.as_ref().and_then(ValueExpr::literal_text) {
                Some(example) => goal.replace(&example, &format!("{{{}}}", input.name)),
                None => goal,
            }
        })
    }

    pub(super) fn step_id(&mut self, wanted: &str) -> Identifier {
        let mut base: String = snake(wanted).chars().take(56).collect();
        if base.is_empty() || !base.starts_with(|c: char| c.is_ascii_lowercase()) {
            base = format!("step_{base}");
        }
        let mut id = base.clone();
        let mut counter = 2;
        while self.step_ids.contains(&id) {
            id = format!("{base}_{counter}");
            counter += 1;
        }
        self.step_ids.insert(id.clone());
        Identifier::parse(&id)
            .unwrap_or_else(|_| Identifier::parse("step").expect("`step` is an identifier"))
    }

    pub(super) fn review_notes(&self, run_id: &str, model: &str) -> String {
        let mut notes = format!(
            "DRAFT compiled from discovery run {run_id} ({model}). Before it is sealed and approved, a reviewer must:\n\
             1. Outcomes: add each legitimate non-success answer the application gives (no such record, not authorized, \
             nothing on file) with a detector for what it shows. This run only saw its own path; the compiler invents none.\n\
             2. Recovery: add bounded rules only for transient conditions known to occur (a gateway error answered by a \
             reload, an expired session answered by a pinned sign-on), each with max_attempts.\n\
             3. Inputs: check every pattern; each was inferred from the one value discovery used.\n\
             4. Checkpoint: confirm it asserts the goal's own evidence and fails on a screen that merely loaded.\n\
             5. Postconditions: each describes the change this run observed; make sure an outcome screen does not \
             also satisfy a step it should stop.\n\
             These are gaps, not omissions: detectors for screens a run never observed would make the error handling fiction."
        );
        if !self.notes.is_empty() {
            notes.push_str("\nNOTES FROM THIS RUN:");
            for note in &self.notes {
                notes.push_str("\n- ");
                notes.push_str(note);
            }
        }
        if !self.warnings.is_empty() {
            notes.push_str("\nCOMPILER WARNINGS FROM THIS RUN:");
            for warning in &self.warnings {
                notes.push_str("\n- ");
                notes.push_str(warning);
            }
        }
        notes
    }
}

/// `Member Number` → `member_number`.
pub(super) fn snake(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').chars().take(64).collect()
}

/// Whether `token` occurs in `text` as a whole word.
pub(super) fn contains_token(text: &str, token: &str) -> bool {
    text.match_indices(token).any(|(start, _)| {
        let before = text[..start].chars().next_back();
        let after = text[start + token.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

pub(super) fn first_sentence(text: &str) -> String {
    let sentence = text
        .split_inclusive(". ")
        .next()
        .unwrap_or(text)
        .trim()
        .trim_end_matches('.');
    sentence.chars().take(120).collect()
}

pub(super) fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

pub(super) fn quoted(text: &str) -> String {
    format!("\"{text}\"")
}

pub(super) fn render_value(value: &ValueExpr) -> String {
    value.to_string()
}

pub(super) fn shape_name(shape: Shape) -> &'static str {
    match shape {
        Shape::Money => "money",
        Shape::Date => "date",
        Shape::Digits => "number",
        Shape::Code => "code",
        Shape::Text => "text",
    }
}

pub(super) fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
