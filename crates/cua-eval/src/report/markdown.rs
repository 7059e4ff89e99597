//! The Markdown view of a suite report: the verdict first, then the headline numbers,
//! targeting, the cases, every run, and how to read it. Text from the application (outputs,
//! failure reasons) and from the suite (labels, description) is escaped for table cells.

use std::fmt::Write as _;

use super::SuiteReport;
use crate::score::{Answer, status_name};

/// Renders the report.
pub(super) fn render(report: &SuiteReport) -> String {
    let metrics = &report.metrics;
    let mut out = String::new();
    let _ = writeln!(out, "# Eval `{}`\n", inline(&report.suite));
    let _ = writeln!(
        out,
        "**{}**: {}.\n",
        report.verdict.headline(),
        text(&report.verdict.explanation(metrics))
    );
    let _ = writeln!(
        out,
        "Capability `{}` at `{}`, {}, against {}: {} case(s) × {} repeat(s) = {} runs.\n",
        report.capability,
        report.content_hash,
        match &report.tenant {
            Some(tenant) => format!("tenant `{}`", inline(tenant.as_str())),
            None => "no tenant binding".to_owned(),
        },
        text(&report.target),
        report.cases.len(),
        report.repeats,
        metrics.runs,
    );
    if !report.description.is_empty() {
        let _ = writeln!(out, "{}\n", text(&report.description));
    }

    out.push_str("## Headline\n\n| metric | value |\n|---|---|\n");
    let rows: [(&str, String); 12] = [
        ("runs", metrics.runs.to_string()),
        ("successes", metrics.successes.to_string()),
        ("business outcomes", metrics.business_outcomes.to_string()),
        ("needs human", metrics.needs_human.to_string()),
        ("failures", metrics.failures.to_string()),
        (
            "**wrong actions**",
            format!("**{}**", metrics.wrong_actions),
        ),
        (
            "unauthorized dispatches",
            metrics.unauthorized_dispatches.to_string(),
        ),
        ("ambiguity refusals", metrics.ambiguity_refusals.to_string()),
        (
            "determinism",
            match metrics.determinism_holds {
                Some(true) => "holds".to_owned(),
                Some(false) => format!(
                    "**does not hold** ({})",
                    cell(&metrics.nondeterministic_cases.join(", "))
                ),
                None => "not shown (no case ran twice)".to_owned(),
            },
        ),
        ("stability", percent(metrics.stability)),
        (
            "replay time p50 / p95",
            format!(
                "{} ms / {} ms",
                metrics.replay_ms.p50, metrics.replay_ms.p95
            ),
        ),
        (
            "replay time min / mean / max",
            format!(
                "{} ms / {} ms / {} ms",
                metrics.replay_ms.min, metrics.replay_ms.mean, metrics.replay_ms.max
            ),
        ),
    ];
    for (name, value) in rows {
        let _ = writeln!(out, "| {name} | {value} |");
    }

    let _ = writeln!(
        out,
        "\n## Targeting\n\nMean drift {:.2}, fallback rate {} ({} resolutions).\n",
        metrics.mean_drift,
        percent(metrics.fallback_rate),
        metrics.strategy_mix.values().sum::<u32>()
    );
    out.push_str("| strategy | resolutions |\n|---|---|\n");
    if metrics.strategy_mix.is_empty() {
        out.push_str("| (none) | 0 |\n");
    }
    for (strategy, count) in &metrics.strategy_mix {
        let _ = writeln!(out, "| `{}` | {count} |", strategy.as_str());
    }
    out.push_str("\n### Drift per step\n\n| step | resolutions | drifted | strategies |\n|---|---|---|---|\n");
    for step in &report.steps {
        let strategies = if step.strategies.is_empty() {
            "-".to_owned()
        } else {
            step.strategies
                .iter()
                .map(|(strategy, count)| format!("`{}` {count}", strategy.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} ({}) | {strategies} |",
            inline(&step.step),
            step.resolutions,
            step.drifted,
            percent(step.rate()),
        );
    }

    out.push_str("\n## Cases\n\n| case | truth | runs | correct | wrong | unanswered | deterministic |\n|---|---|---|---|---|---|---|\n");
    for case in &report.cases {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            cell(&case.label),
            cell(&case.expect),
            case.runs,
            case.correct,
            case.wrong_actions,
            case.unanswered,
            match case.deterministic {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "ran once",
            }
        );
    }

    out.push_str("\n## Runs\n\n| run | case | repeat | status | returned | answer | drift | strategies | ms |\n|---|---|---|---|---|---|---|---|---|\n");
    for row in &report.runs {
        let returned = super::returned(row, "=");
        let answer = match &row.answer {
            Answer::Correct => "correct".to_owned(),
            Answer::WrongAction(why) => format!("**wrong action**: {}", cell(why)),
            Answer::Unanswered(why) => format!("unanswered: {}", cell(why)),
        };
        let strategies = row
            .strategy_mix
            .iter()
            .map(|(strategy, count)| format!("{} {count}", strategy.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {:.2} | {} | {} |",
            inline(&row.run_id),
            cell(&row.case),
            row.repeat,
            status_name(row.status),
            cell(&returned),
            answer,
            row.drift_score,
            cell(&strategies),
            row.duration_ms,
        );
    }

    if !report.setup.is_empty() {
        out.push_str("\n## Setup (not scored)\n\n");
        for setup in &report.setup {
            let _ = writeln!(
                out,
                "- `{}` ran `{}`: {}",
                inline(&setup.run_id),
                inline(&setup.capability),
                setup.status
            );
        }
    }

    out.push_str(
        "\n## How to read this\n\n\
         - A **wrong action** is a run that answered and answered wrong: a success whose pinned output differs from the truth, a success where the truth is a business outcome, or a business outcome where the truth is something else. One is disqualifying. `cua eval` exits 1 when there is any, or any unauthorized dispatch.\n\
         - A run that stops (`needs_human`, `failed`) did not answer: that is the executor refusing to guess, never a wrong action, but it lowers stability.\n\
         - **Determinism** compares the decision traces of the repeats of each case byte for byte: per step the observation, the rung that resolved the target, the node, whether it dispatched and the effect verdict, then the result.\n\
         - **Drift** is a resolution on a weaker rung of the ladder than the one recorded; it never stops a run, it is a signal. A tenant overlay resolves against the effective capability, so what the overlay fixes is not counted as drift.\n\
         - The run ids name the run directories, where each run's hash-chained trace, snapshots and run record are (`cua evidence verify <dir>`).\n",
    );
    out
}

/// Text for a paragraph: line breaks kept out, Markdown's active characters escaped.
fn text(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for character in value.chars() {
        match character {
            '\\' | '`' | '*' | '[' | ']' | '<' | '>' | '|' | '#' => {
                escaped.push('\\');
                escaped.push(character);
            }
            '\n' | '\r' => escaped.push(' '),
            other => escaped.push(other),
        }
    }
    escaped
}

/// Text for a table cell (the same escaping; a `|` would end the cell).
fn cell(value: &str) -> String {
    text(value)
}

/// Text inside backticks: a backtick would end the code span, a line break the row.
fn inline(value: &str) -> String {
    value
        .chars()
        .map(|character| match character {
            '`' => '\'',
            '\n' | '\r' | '|' => ' ',
            other => other,
        })
        .collect()
}

fn percent(fraction: f64) -> String {
    format!("{:.0}%", fraction * 100.0)
}
