//! The static HTML page a reviewer opens in a browser: the verdict, the headline numbers as
//! cards, three charts (strategy mix, replay-time distribution, drift per step), the cases and
//! every run. One file, no script, no external resource; a Content-Security-Policy that allows
//! only the inline stylesheet.
//!
//! The page is `report.html`, a template rendered by minijinja with HTML auto-escaping: outputs
//! and failure reasons are text from the application under test, and none of it can become
//! markup. Only the charts, drawn by [`super::svg`] from escaped text, go in as markup.

use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, HtmlEscape, UndefinedBehavior};
use serde::Serialize;

use super::{SuiteReport, Verdict, svg};
use crate::error::EvalError;
use crate::score::{Answer, status_name};

/// The page's template.
const TEMPLATE: &str = include_str!("report.html");

/// Escapes text for HTML element content and attribute values, as the template does.
pub fn escape(text: &str) -> String {
    HtmlEscape(text).to_string()
}

#[derive(Serialize)]
struct Page<'r> {
    title: String,
    suite: &'r str,
    capability: String,
    content_hash: &'r str,
    tenant: Option<&'r str>,
    target: &'r str,
    case_count: usize,
    repeats: u32,
    description: &'r str,
    verdict: VerdictView,
    cards: Vec<Card>,
    charts: Vec<Chart>,
    cases: Vec<CaseView<'r>>,
    runs: Vec<RunView<'r>>,
    setup: Vec<SetupView<'r>>,
}

#[derive(Serialize)]
struct VerdictView {
    class: &'static str,
    headline: &'static str,
    explanation: String,
}

#[derive(Serialize)]
struct Card {
    figure: String,
    name: &'static str,
    tone: &'static str,
}

#[derive(Serialize)]
struct Chart {
    title: &'static str,
    lead: String,
    /// Markup drawn by [`svg`], every text in it escaped there.
    svg: Value,
}

#[derive(Serialize)]
struct CaseView<'r> {
    label: &'r str,
    expect: &'r str,
    runs: u32,
    correct: u32,
    wrong_actions: u32,
    unanswered: u32,
    deterministic: &'static str,
}

#[derive(Serialize)]
struct RunView<'r> {
    run_id: &'r str,
    case: &'r str,
    repeat: u32,
    status: &'static str,
    returned: String,
    wrong: bool,
    answer: &'static str,
    answer_words: String,
    why: &'r str,
    drift: String,
    duration_ms: u64,
}

#[derive(Serialize)]
struct SetupView<'r> {
    run_id: &'r str,
    capability: &'r str,
    status: &'r str,
}

/// Renders the page.
pub(super) fn render(report: &SuiteReport) -> Result<String, EvalError> {
    let mut environment = Environment::new();
    environment.set_auto_escape_callback(|_| AutoEscape::Html);
    // A field the template names and the page lacks is an error, never an empty cell.
    environment.set_undefined_behavior(UndefinedBehavior::Strict);
    environment
        .add_template("report.html", TEMPLATE)
        .and_then(|()| environment.get_template("report.html"))
        .and_then(|template| template.render(page(report)))
        .map_err(|error| EvalError::Serialize {
            what: "HTML report",
            reason: error.to_string(),
        })
}

fn page(report: &SuiteReport) -> Page<'_> {
    let metrics = &report.metrics;
    let class = match report.verdict {
        Verdict::Sound => "sound",
        Verdict::Unsound => "unsound",
        _ => "other",
    };
    let determinism = match metrics.determinism_holds {
        Some(true) => ("holds", "good"),
        Some(false) => ("broken", "bad"),
        None => ("not shown", ""),
    };
    let zero_is_good = |count: u32| if count == 0 { "good" } else { "bad" };
    let card = |figure: String, name: &'static str, tone: &'static str| Card { figure, name, tone };
    let cards = vec![
        card(metrics.runs.to_string(), "runs", ""),
        card(
            metrics.wrong_actions.to_string(),
            "wrong actions",
            zero_is_good(metrics.wrong_actions),
        ),
        card(
            metrics.unauthorized_dispatches.to_string(),
            "unauthorized dispatches",
            zero_is_good(metrics.unauthorized_dispatches),
        ),
        card(determinism.0.to_owned(), "determinism", determinism.1),
        card(
            format!("{:.0}%", metrics.stability * 100.0),
            "stability",
            "",
        ),
        card(
            format!("{} / {}", metrics.successes, metrics.business_outcomes),
            "successes / outcomes",
            "",
        ),
        card(
            format!("{} / {}", metrics.needs_human, metrics.failures),
            "needs human / failed",
            "",
        ),
        card(
            format!("{} / {} ms", metrics.replay_ms.p50, metrics.replay_ms.p95),
            "replay p50 / p95",
            "",
        ),
    ];
    let total: u32 = metrics.strategy_mix.values().sum();
    let durations: Vec<u64> = report.runs.iter().map(|row| row.duration_ms).collect();
    let charts = vec![
        Chart {
            title: "Strategy mix",
            lead: format!(
                "Which rung of the resolution ladder found each target, over {total} resolutions. \
                 Mean drift {:.2}; fallback rate {:.0}%.",
                metrics.mean_drift,
                metrics.fallback_rate * 100.0
            ),
            svg: Value::from_safe_string(svg::strategy_mix(&metrics.strategy_mix)),
        },
        Chart {
            title: "Replay time",
            lead: format!(
                "How long each run took, from its first event to its last (min {} ms, mean {} \
                 ms, max {} ms).",
                metrics.replay_ms.min, metrics.replay_ms.mean, metrics.replay_ms.max
            ),
            svg: Value::from_safe_string(svg::latency(&durations, &metrics.replay_ms)),
        },
        Chart {
            title: "Drift per step",
            lead: "Per step, the rungs that resolved its target across all runs; the red bar is \
                   the share that resolved on a weaker rung than the one recorded."
                .to_owned(),
            svg: Value::from_safe_string(svg::drift_per_step(&report.steps)),
        },
    ];
    let cases = report
        .cases
        .iter()
        .map(|case| CaseView {
            label: &case.label,
            expect: &case.expect,
            runs: case.runs,
            correct: case.correct,
            wrong_actions: case.wrong_actions,
            unanswered: case.unanswered,
            deterministic: match case.deterministic {
                Some(true) => "yes",
                Some(false) => "no",
                None => "ran once",
            },
        })
        .collect();
    let runs = report
        .runs
        .iter()
        .map(|row| {
            let returned = super::returned(row, " = ");
            RunView {
                run_id: &row.run_id,
                case: &row.case,
                repeat: row.repeat,
                status: status_name(row.status),
                returned,
                wrong: matches!(row.answer, Answer::WrongAction(_)),
                answer: row.answer.as_str(),
                answer_words: row.answer.as_str().replace('_', " "),
                why: row.answer.why(),
                drift: format!("{:.2}", row.drift_score),
                duration_ms: row.duration_ms,
            }
        })
        .collect();
    let setup = report
        .setup
        .iter()
        .map(|row| SetupView {
            run_id: &row.run_id,
            capability: &row.capability,
            status: &row.status,
        })
        .collect();
    Page {
        title: format!("Eval {} — {}", report.suite, report.verdict.headline()),
        suite: &report.suite,
        capability: report.capability.to_string(),
        content_hash: report.content_hash.as_str(),
        tenant: report.tenant.as_ref().map(|tenant| tenant.as_str()),
        target: &report.target,
        case_count: report.cases.len(),
        repeats: report.repeats,
        description: &report.description,
        verdict: VerdictView {
            class,
            headline: report.verdict.headline(),
            explanation: report.verdict.explanation(metrics),
        },
        cards,
        charts,
        cases,
        runs,
        setup,
    }
}
