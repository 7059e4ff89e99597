//! The report's charts as inline SVG, drawn here (no library, no script): the strategy mix as
//! horizontal bars, the replay-time distribution as a histogram with its p50 and p95 marked,
//! and per step the rungs that resolved its target with the share that drifted. Every piece of
//! text goes through [`escape`].

use std::collections::BTreeMap;
use std::fmt::Write as _;

use cua_artifact::ResolutionStrategy;

use super::html::escape;
use crate::score::{Latency, StepDrift};

/// The chart width in user units; the page scales it to its column.
const WIDTH: f64 = 720.0;
/// Room for the labels left of horizontal bars.
const LABEL_WIDTH: f64 = 190.0;
/// Room for the figures right of horizontal bars.
const VALUE_WIDTH: f64 = 150.0;

/// A rung's colour, the same in every chart and legend.
pub(super) fn colour(strategy: ResolutionStrategy) -> &'static str {
    match strategy {
        ResolutionStrategy::SemanticExact => "#2b6cb0",
        ResolutionStrategy::SemanticNormalized => "#63b3ed",
        ResolutionStrategy::LabelAssociation => "#2f855a",
        ResolutionStrategy::StructuralAnchor => "#805ad5",
        ResolutionStrategy::HintCached => "#dd6b20",
        ResolutionStrategy::OrdinalInRegion => "#b7791f",
        ResolutionStrategy::Vision => "#718096",
    }
}

/// Resolutions per rung, one bar each, in ladder order.
pub(super) fn strategy_mix(mix: &BTreeMap<ResolutionStrategy, u32>) -> String {
    let rows: Vec<(ResolutionStrategy, u32)> = ResolutionStrategy::LADDER
        .into_iter()
        .filter_map(|strategy| mix.get(&strategy).map(|count| (strategy, *count)))
        .collect();
    let row_height = 30.0;
    let height = 20.0 + row_height * rows.len().max(1) as f64;
    let total: u32 = rows.iter().map(|(_, count)| count).sum();
    let mut svg = open(
        height,
        &format!("Resolutions per rung of the ladder, {total} in all"),
    );
    if rows.is_empty() {
        let _ = write!(
            svg,
            r#"<text x="{LABEL_WIDTH}" y="34" class="muted">no target was resolved</text>"#
        );
    }
    let most = rows
        .iter()
        .map(|(_, count)| *count)
        .max()
        .unwrap_or(1)
        .max(1);
    let span = WIDTH - LABEL_WIDTH - VALUE_WIDTH;
    for (position, (strategy, count)) in rows.iter().enumerate() {
        let y = 10.0 + row_height * position as f64;
        let width = span * f64::from(*count) / f64::from(most);
        let share = f64::from(*count) * 100.0 / f64::from(total.max(1));
        let _ = write!(
            svg,
            r#"<text x="{x}" y="{ty}" class="label" text-anchor="end">{name}</text><rect x="{LABEL_WIDTH}" y="{y}" width="{width:.1}" height="20" rx="2" fill="{fill}"><title>{name}: {count}</title></rect><text x="{vx:.1}" y="{ty}" class="value">{count} ({share:.0}%)</text>"#,
            x = LABEL_WIDTH - 8.0,
            ty = y + 15.0,
            name = escape(strategy.as_str()),
            fill = colour(*strategy),
            vx = LABEL_WIDTH + width + 6.0,
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The distribution of replay times: equal-width bins between the fastest and slowest run,
/// the count above each bar, the p50 and p95 as dashed lines.
pub(super) fn latency(durations: &[u64], figures: &Latency) -> String {
    let height = 250.0;
    let (left, right, top, bottom) = (50.0, 20.0, 34.0, 44.0);
    let plot_width = WIDTH - left - right;
    let plot_height = height - top - bottom;
    let mut svg = open(
        height,
        &format!(
            "Replay time of {} runs: p50 {} ms, p95 {} ms",
            durations.len(),
            figures.p50,
            figures.p95
        ),
    );
    if durations.is_empty() {
        let _ = write!(
            svg,
            r#"<text x="{left}" y="{}" class="muted">no runs</text></svg>"#,
            top + 20.0
        );
        return svg;
    }
    let low = figures.min;
    let high = figures.max;
    let bins = if low == high {
        1
    } else {
        (durations.len() as f64).sqrt().ceil().clamp(1.0, 12.0) as u64
    };
    let bin_width = ((high - low + 1).div_ceil(bins)).max(1);
    let mut counts = vec![0_u32; usize::try_from(bins).unwrap_or(1)];
    for duration in durations {
        let bin = usize::try_from((duration - low) / bin_width)
            .unwrap_or(0)
            .min(counts.len() - 1);
        counts[bin] += 1;
    }
    let most = counts.iter().copied().max().unwrap_or(1).max(1);
    let bar = plot_width / counts.len() as f64;
    let range = (bin_width * bins) as f64;
    let baseline = top + plot_height;
    // Axes, and the y gridline at the tallest bar.
    let _ = write!(
        svg,
        r#"<line x1="{left}" y1="{baseline}" x2="{x2}" y2="{baseline}" class="axis"/><line x1="{left}" y1="{top}" x2="{left}" y2="{baseline}" class="axis"/><text x="{tx}" y="{ty}" class="tick" text-anchor="end">{most}</text><text x="{tx}" y="{baseline}" class="tick" text-anchor="end">0</text><text x="{cx}" y="{ly}" class="tick" text-anchor="middle">replay time (ms)</text><text x="12" y="{my}" class="tick" transform="rotate(-90 12 {my})" text-anchor="middle">runs</text>"#,
        x2 = left + plot_width,
        tx = left - 6.0,
        ty = top + 4.0,
        cx = left + plot_width / 2.0,
        ly = height - 6.0,
        my = top + plot_height / 2.0,
    );
    for (index, count) in counts.iter().enumerate() {
        let from = low + bin_width * index as u64;
        let to = from + bin_width - 1;
        let x = left + bar * index as f64;
        let bar_height = plot_height * f64::from(*count) / f64::from(most);
        let y = baseline - bar_height;
        let _ = write!(
            svg,
            r##"<rect x="{bx:.1}" y="{y:.1}" width="{bw:.1}" height="{bar_height:.1}" fill="#4a5568"><title>{from}–{to} ms: {count} run(s)</title></rect>"##,
            bx = x + 2.0,
            bw = (bar - 4.0).max(1.0),
        );
        if *count > 0 {
            let _ = write!(
                svg,
                r#"<text x="{cx:.1}" y="{ty:.1}" class="value" text-anchor="middle">{count}</text>"#,
                cx = x + bar / 2.0,
                ty = y - 4.0,
            );
        }
        // Label every bin edge when there is room, otherwise every other one.
        if counts.len() <= 8 || index % 2 == 0 {
            let _ = write!(
                svg,
                r#"<text x="{x:.1}" y="{ty}" class="tick" text-anchor="middle">{from}</text>"#,
                ty = baseline + 16.0,
            );
        }
    }
    let _ = write!(
        svg,
        r#"<text x="{x:.1}" y="{ty}" class="tick" text-anchor="middle">{end}</text>"#,
        x = left + plot_width,
        ty = baseline + 16.0,
        end = low + bin_width * bins,
    );
    // Each marker's label on its own line above the plot, on the side with room for it.
    for (row, (name, value)) in [("p50", figures.p50), ("p95", figures.p95)]
        .into_iter()
        .enumerate()
    {
        let x = left + plot_width * (value - low) as f64 / range;
        let (anchor, nudge) = if x > left + plot_width * 0.6 {
            ("end", -5.0)
        } else {
            ("start", 5.0)
        };
        let label_y = 12.0 + 13.0 * row as f64;
        let _ = write!(
            svg,
            r#"<line x1="{x:.1}" y1="{y1}" x2="{x:.1}" y2="{baseline}" class="marker"/><text x="{tx:.1}" y="{label_y}" class="marker-label" text-anchor="{anchor}">{name} {value} ms</text>"#,
            y1 = label_y - 9.0,
            tx = x + nudge,
        );
    }
    svg.push_str("</svg>");
    svg
}

/// Per step: a bar split by the rungs that resolved its target across all runs, a thin red
/// bar for the share of those resolutions that drifted, and the figures.
pub(super) fn drift_per_step(steps: &[StepDrift]) -> String {
    let row_height = 40.0;
    let legend: Vec<ResolutionStrategy> = ResolutionStrategy::LADDER
        .into_iter()
        .filter(|strategy| {
            steps
                .iter()
                .any(|step| step.strategies.contains_key(strategy))
        })
        .collect();
    let legend_height = if legend.is_empty() { 0.0 } else { 28.0 };
    let height = legend_height + 10.0 + row_height * steps.len().max(1) as f64;
    let drifted: u32 = steps.iter().map(|step| step.drifted).sum();
    let mut svg = open(
        height,
        &format!(
            "Resolutions per step by rung, {drifted} drifted in all, over {} step(s)",
            steps.len()
        ),
    );
    let mut x = LABEL_WIDTH;
    for strategy in &legend {
        let name = escape(strategy.as_str());
        let _ = write!(
            svg,
            r#"<rect x="{x}" y="6" width="12" height="12" fill="{fill}"/><text x="{tx}" y="16" class="tick">{name}</text>"#,
            fill = colour(*strategy),
            tx = x + 16.0,
        );
        x += 24.0 + 7.0 * strategy.as_str().len() as f64;
    }
    let span = WIDTH - LABEL_WIDTH - VALUE_WIDTH;
    for (position, step) in steps.iter().enumerate() {
        let y = legend_height + 10.0 + row_height * position as f64;
        let _ = write!(
            svg,
            r#"<text x="{lx}" y="{ty}" class="label" text-anchor="end">{name}</text>"#,
            lx = LABEL_WIDTH - 8.0,
            ty = y + 14.0,
            name = escape(&step.step),
        );
        if step.resolutions == 0 {
            let _ = write!(
                svg,
                r#"<rect x="{LABEL_WIDTH}" y="{y}" width="{span}" height="18" class="empty"/><text x="{tx}" y="{ty}" class="muted">no target resolved</text>"#,
                tx = LABEL_WIDTH + 8.0,
                ty = y + 14.0,
            );
            continue;
        }
        let mut offset = LABEL_WIDTH;
        for strategy in ResolutionStrategy::LADDER {
            let Some(count) = step.strategies.get(&strategy) else {
                continue;
            };
            let width = span * f64::from(*count) / f64::from(step.resolutions);
            let _ = write!(
                svg,
                r#"<rect x="{offset:.1}" y="{y}" width="{width:.1}" height="18" fill="{fill}"><title>{name}: {count} of {total}</title></rect>"#,
                fill = colour(strategy),
                name = escape(strategy.as_str()),
                total = step.resolutions,
            );
            offset += width;
        }
        let drift_width = span * step.rate();
        let _ = write!(
            svg,
            r#"<rect x="{LABEL_WIDTH}" y="{dy}" width="{span}" height="5" class="track"/><rect x="{LABEL_WIDTH}" y="{dy}" width="{drift_width:.1}" height="5" class="drift"/><text x="{tx}" y="{ty}" class="value">drift {rate:.0}% ({drifted}/{total})</text>"#,
            dy = y + 21.0,
            tx = LABEL_WIDTH + span + 8.0,
            ty = y + 14.0,
            rate = step.rate() * 100.0,
            drifted = step.drifted,
            total = step.resolutions,
        );
    }
    svg.push_str("</svg>");
    svg
}

/// An `<svg>` element scaled to its column, with an accessible title.
fn open(height: f64, title: &str) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" aria-label="{label}"><title>{label}</title>"#,
        label = escape(title),
    )
}
