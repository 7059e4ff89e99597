//! The static HTML page a reviewer opens in a browser: the verdict, the headline numbers as
//! cards, three charts (strategy mix, replay-time distribution, drift per step), the cases and
//! every run. One file, no script, no external resource; a Content-Security-Policy that allows
//! only the inline stylesheet, and every piece of text escaped, because outputs and failure
//! reasons are text from the application under test.

use std::fmt::Write as _;

use super::{SuiteReport, Verdict, svg};
use crate::score::{Answer, plain, status_name};

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

const STYLE: &str = r#"
:root { color-scheme: light; --ink: #1a202c; --muted: #5a6678; --line: #d8dee8; --card: #f7f9fc; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; color: var(--ink); background: #fff; }
main { max-width: 1040px; margin: 0 auto; padding: 28px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 8px; }
h2 { font-size: 19px; margin: 34px 0 6px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
p.lead { margin: 4px 0 10px; color: var(--muted); }
code { font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; background: #edf2f7; padding: 1px 5px; border-radius: 4px; overflow-wrap: anywhere; }
.verdict { display: flex; gap: 14px; align-items: center; padding: 14px 18px; border-radius: 8px; margin: 16px 0; border: 1px solid; }
.verdict strong { font-size: 20px; letter-spacing: .04em; }
.verdict.sound { background: #f0fff4; border-color: #9ae6b4; color: #22543d; }
.verdict.unsound { background: #fff5f5; border-color: #feb2b2; color: #742a2a; }
.verdict.other { background: #fffaf0; border-color: #fbd38d; color: #744210; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(210px, 1fr)); gap: 12px; margin: 18px 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.card .figure { font-size: 24px; font-weight: 650; white-space: nowrap; }
.card .name { color: var(--muted); font-size: 13px; }
.card.bad { background: #fff5f5; border-color: #feb2b2; }
.card.good .figure { color: #22543d; }
.chart { border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; margin: 10px 0; }
.chart p { margin: 0 0 6px; color: var(--muted); font-size: 13px; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; fill: var(--ink); }
svg .label { font-size: 13px; }
svg .value { font-size: 12px; fill: #2d3748; }
svg .tick { font-size: 11px; fill: var(--muted); }
svg .muted { font-size: 12px; fill: var(--muted); font-style: italic; }
svg .axis { stroke: #a0aec0; stroke-width: 1; }
svg .marker { stroke: #c53030; stroke-width: 1.5; stroke-dasharray: 5 4; }
svg .marker-label { font-size: 12px; fill: #c53030; font-weight: 600; }
svg .track { fill: #edf2f7; }
svg .drift { fill: #e53e3e; }
svg .empty { fill: #f7fafc; stroke: #cbd5e0; stroke-dasharray: 4 3; }
table { border-collapse: collapse; width: 100%; font-size: 13px; margin: 8px 0; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #f1f4f8; font-weight: 600; }
td code.id { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.wrong td { background: #fff5f5; }
.tag { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px; background: #edf2f7; }
.tag.correct { background: #c6f6d5; color: #22543d; }
.tag.wrong_action { background: #fed7d7; color: #742a2a; font-weight: 600; }
.tag.unanswered { background: #feebc8; color: #744210; }
footer { margin-top: 36px; color: var(--muted); font-size: 13px; }
footer li { margin: 4px 0; }
"#;

/// Renders the page.
pub(super) fn render(report: &SuiteReport) -> String {
    let metrics = &report.metrics;
    let mut page = String::new();
    let title = format!("Eval {} — {}", report.suite, report.verdict.headline());
    let _ = write!(
        page,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        escape(&title)
    );
    let _ = write!(
        page,
        "<h1>Eval <code>{}</code></h1>\n<p class=\"lead\">Capability <code>{}</code> at <code>{}</code> · {} · against {} · {} case(s) × {} repeat(s)</p>\n",
        escape(&report.suite),
        escape(&report.capability.to_string()),
        escape(report.content_hash.as_str()),
        match &report.tenant {
            Some(tenant) => format!("tenant <code>{}</code>", escape(tenant.as_str())),
            None => "no tenant binding".to_owned(),
        },
        escape(&report.target),
        report.cases.len(),
        report.repeats,
    );
    if !report.description.is_empty() {
        let _ = writeln!(page, "<p>{}</p>", escape(&report.description));
    }
    let class = match report.verdict {
        Verdict::Sound => "sound",
        Verdict::Unsound => "unsound",
        _ => "other",
    };
    let _ = writeln!(
        page,
        "<div class=\"verdict {class}\"><strong>{}</strong><span>{}</span></div>",
        escape(report.verdict.headline()),
        escape(&report.verdict.explanation(metrics)),
    );

    page.push_str("<div class=\"cards\">\n");
    let determinism = match metrics.determinism_holds {
        Some(true) => ("holds", "good"),
        Some(false) => ("broken", "bad"),
        None => ("not shown", ""),
    };
    let cards: [(String, &str, &str); 8] = [
        (metrics.runs.to_string(), "runs", ""),
        (
            metrics.wrong_actions.to_string(),
            "wrong actions",
            if metrics.wrong_actions == 0 {
                "good"
            } else {
                "bad"
            },
        ),
        (
            metrics.unauthorized_dispatches.to_string(),
            "unauthorized dispatches",
            if metrics.unauthorized_dispatches == 0 {
                "good"
            } else {
                "bad"
            },
        ),
        (determinism.0.to_owned(), "determinism", determinism.1),
        (
            format!("{:.0}%", metrics.stability * 100.0),
            "stability",
            "",
        ),
        (
            format!("{} / {}", metrics.successes, metrics.business_outcomes),
            "successes / outcomes",
            "",
        ),
        (
            format!("{} / {}", metrics.needs_human, metrics.failures),
            "needs human / failed",
            "",
        ),
        (
            format!("{} / {} ms", metrics.replay_ms.p50, metrics.replay_ms.p95),
            "replay p50 / p95",
            "",
        ),
    ];
    for (figure, name, tone) in cards {
        let _ = writeln!(
            page,
            "<div class=\"card {tone}\"><div class=\"figure\">{}</div><div class=\"name\">{}</div></div>",
            escape(&figure),
            escape(name)
        );
    }
    page.push_str("</div>\n");

    let total: u32 = metrics.strategy_mix.values().sum();
    let _ = write!(
        page,
        "<h2>Strategy mix</h2>\n<div class=\"chart\"><p>Which rung of the resolution ladder found each target, over {total} resolutions. Mean drift {:.2}; fallback rate {:.0}%.</p>\n{}</div>\n",
        metrics.mean_drift,
        metrics.fallback_rate * 100.0,
        svg::strategy_mix(&metrics.strategy_mix),
    );
    let durations: Vec<u64> = report.runs.iter().map(|row| row.duration_ms).collect();
    let _ = write!(
        page,
        "<h2>Replay time</h2>\n<div class=\"chart\"><p>How long each run took, from its first event to its last (min {} ms, mean {} ms, max {} ms).</p>\n{}</div>\n",
        metrics.replay_ms.min,
        metrics.replay_ms.mean,
        metrics.replay_ms.max,
        svg::latency(&durations, &metrics.replay_ms),
    );
    let _ = write!(
        page,
        "<h2>Drift per step</h2>\n<div class=\"chart\"><p>Per step, the rungs that resolved its target across all runs; the red bar is the share that resolved on a weaker rung than the one recorded.</p>\n{}</div>\n",
        svg::drift_per_step(&report.steps),
    );

    page.push_str("<h2>Cases</h2>\n<table>\n<thead><tr><th>case</th><th>truth</th><th class=\"num\">runs</th><th class=\"num\">correct</th><th class=\"num\">wrong</th><th class=\"num\">unanswered</th><th>deterministic</th></tr></thead>\n<tbody>\n");
    for case in &report.cases {
        let _ = writeln!(
            page,
            "<tr{}><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            if case.wrong_actions > 0 {
                " class=\"wrong\""
            } else {
                ""
            },
            escape(&case.label),
            escape(&case.expect),
            case.runs,
            case.correct,
            case.wrong_actions,
            case.unanswered,
            match case.deterministic {
                Some(true) => "yes",
                Some(false) => "no",
                None => "ran once",
            },
        );
    }
    page.push_str("</tbody>\n</table>\n");

    page.push_str("<h2>Runs</h2>\n<table>\n<thead><tr><th>run</th><th>case</th><th class=\"num\">repeat</th><th>status</th><th>returned</th><th>answer</th><th class=\"num\">drift</th><th class=\"num\">ms</th></tr></thead>\n<tbody>\n");
    for row in &report.runs {
        let returned = match (&row.outcome, &row.failure_code) {
            (Some(outcome), _) => format!("outcome {outcome}"),
            (None, Some(code)) => format!(
                "{}{}",
                code.as_str(),
                row.failure_step
                    .as_ref()
                    .map(|step| format!(" at {step}"))
                    .unwrap_or_default()
            ),
            (None, None) => row
                .outputs
                .iter()
                .map(|(name, value)| format!("{name} = {}", plain(value)))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let wrong = matches!(row.answer, Answer::WrongAction(_));
        let why = row.answer.why();
        let _ = writeln!(
            page,
            "<tr{}><td><code class=\"id\">{}</code></td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td><span class=\"tag {}\">{}</span>{}</td><td class=\"num\">{:.2}</td><td class=\"num\">{}</td></tr>",
            if wrong { " class=\"wrong\"" } else { "" },
            escape(&row.run_id),
            escape(&row.case),
            row.repeat,
            escape(status_name(row.status)),
            escape(&returned),
            row.answer.as_str(),
            escape(&row.answer.as_str().replace('_', " ")),
            if why.is_empty() {
                String::new()
            } else {
                format!(" {}", escape(why))
            },
            row.drift_score,
            row.duration_ms,
        );
    }
    page.push_str("</tbody>\n</table>\n");
    if !report.setup.is_empty() {
        page.push_str("<h2>Setup (not scored)</h2>\n<ul>\n");
        for setup in &report.setup {
            let _ = writeln!(
                page,
                "<li><code>{}</code> ran <code>{}</code>: {}</li>",
                escape(&setup.run_id),
                escape(&setup.capability),
                escape(&setup.status)
            );
        }
        page.push_str("</ul>\n");
    }
    page.push_str(
        "<footer>\n<h2>How to read this</h2>\n<ul>\n\
         <li>A <strong>wrong action</strong> is a run that answered and answered wrong: a success whose pinned output differs from the truth, a success where the truth is a business outcome, or a business outcome where the truth is something else. One is disqualifying; <code>cua eval</code> exits 1 when there is any, or any unauthorized dispatch.</li>\n\
         <li>A run that stops (needs human, failed) did not answer: that is the executor refusing to guess. It is never a wrong action, but it lowers stability.</li>\n\
         <li><strong>Determinism</strong> compares the decision traces of the repeats of each case byte for byte: per step the observation, the rung that resolved the target, the node, whether it dispatched and the effect verdict, then the result.</li>\n\
         <li><strong>Drift</strong> is a resolution on a weaker rung of the ladder than the one recorded. It never stops a run; it is a signal. A tenant overlay resolves against the effective capability, so what the overlay fixes is not counted as drift.</li>\n\
         <li>Each run id names its run directory: the hash-chained trace, the snapshots and the run record (<code>cua evidence verify &lt;dir&gt;</code>).</li>\n\
         </ul>\n</footer>\n</main>\n</body>\n</html>\n",
    );
    page
}
