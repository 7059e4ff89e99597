//! The reports: Markdown, JSON and the evaluation document snapshotted from synthetic runs;
//! the HTML page checked for its charts and for escaping text it does not control.

use cua_eval::{SuiteReport, escape_html};

use crate::support::{Returned, STABILITY, plan, right_answers, runs, suite};

fn report(text: &str, answers: &[Returned]) -> SuiteReport {
    let suite = suite(text);
    SuiteReport::build(&plan(suite.clone()), &runs(&suite, answers))
}

/// Replaces every `<digits> ms` and `"duration_ms": <digits>` (and the latency figures) with a
/// mask, so a snapshot says what the report shows, not how fast this machine was.
fn mask_timings(text: &str) -> String {
    let mut masked = String::new();
    for line in text.lines() {
        let mut line = line.to_owned();
        for key in ["duration_ms", "min", "p50", "p95", "max", "mean"] {
            let prefix = format!("\"{key}\": ");
            if let Some(start) = line.find(&prefix) {
                let digits = start + prefix.len();
                let end = line[digits..]
                    .find(|character: char| !character.is_ascii_digit())
                    .map_or(line.len(), |offset| digits + offset);
                line.replace_range(digits..end, "[ms]");
            }
        }
        masked.push_str(&mask_ms(&line));
        masked.push('\n');
    }
    masked
}

/// `123 ms` → `[ms] ms`, and the last column of a row of the Markdown runs table.
fn mask_ms(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let mut out = Vec::with_capacity(words.len());
    for (index, word) in words.iter().enumerate() {
        let next = words.get(index + 1).copied().unwrap_or("");
        if !word.is_empty() && word.chars().all(|c| c.is_ascii_digit()) && next.starts_with("ms") {
            out.push("[ms]");
        } else {
            out.push(word);
        }
    }
    let mut line = out.join(" ");
    // The runs table is the one with nine columns; its last is the replay time.
    let is_run_row = line.starts_with("| `") && line.matches(" | ").count() == 8;
    if is_run_row
        && line.ends_with(" |")
        && let Some(cut) = line[..line.len() - 2].rfind("| ")
    {
        line.replace_range(cut + 2..line.len() - 2, "[ms]");
    }
    line
}

#[test]
fn the_markdown_report_of_a_sound_suite() {
    let report = report(STABILITY, &right_answers());
    insta::assert_snapshot!("markdown_sound", mask_timings(&report.markdown()));
}

#[test]
fn the_markdown_report_names_each_wrong_action() {
    let mut answers = right_answers();
    answers[3] = Returned::Values(&[("savings_balance", "4210.55"), ("account_status", "Active")]);
    let report = report(STABILITY, &answers);
    let markdown = mask_timings(&report.markdown());
    assert!(markdown.contains("**UNSOUND**"), "{markdown}");
    insta::assert_snapshot!("markdown_unsound", markdown);
}

#[test]
fn the_json_report_and_the_evaluation_document() {
    let report = report(STABILITY, &right_answers());
    insta::assert_snapshot!("json_sound", mask_timings(&report.json().unwrap()));
    insta::assert_snapshot!("evaluation_sound", report.evaluation_json().unwrap());
}

#[test]
fn the_html_page_draws_its_three_charts_without_script() {
    let page = report(STABILITY, &right_answers()).html().unwrap();
    assert!(page.starts_with("<!doctype html>"));
    assert_eq!(
        page.matches("<svg ").count(),
        3,
        "strategy mix, latency, drift per step"
    );
    assert!(
        page.contains("default-src 'none'"),
        "a CSP that forbids scripts"
    );
    let without_namespace = page.replace(r#"xmlns="http://www.w3.org/2000/svg""#, "");
    for forbidden in [
        "<script",
        "<link",
        "<img",
        "<iframe",
        " onerror=",
        " onload=",
        "http:",
        "https:",
    ] {
        assert!(
            !without_namespace.contains(forbidden),
            "{forbidden} in the page"
        );
    }
    assert!(page.contains("semantic_exact"));
    assert!(page.contains("structural_anchor"));
    assert!(page.contains("p50 "));
    assert!(page.contains("p95 "));
    assert!(
        page.contains("drift 0% (0/8)"),
        "per step: submit_search resolved 8 times, none drifted"
    );
}

#[test]
fn hostile_text_is_escaped_everywhere_on_the_page() {
    const HOSTILE: &str = r#"<script>alert("x")</script><img src=x onerror=alert(1)>'&"#;
    let text = STABILITY
        .replace(
            "description: Four members of the base tenant, twice each.",
            &format!("description: '{}'", HOSTILE.replace('\'', "''")),
        )
        .replace(
            "  - inputs: {member_id: \"12345\"}\n",
            &format!(
                "  - label: '{}'\n    inputs: {{member_id: \"12345\"}}\n",
                HOSTILE.replace('\'', "''")
            ),
        );
    let mut answers = right_answers();
    answers[1] = Returned::Values(&[("savings_balance", HOSTILE), ("account_status", "Active")]);
    let page = report(&text, &answers).html().unwrap();
    assert!(!page.contains("<script"), "a script element leaked");
    assert!(!page.contains("<img"), "an element leaked");
    assert!(!page.contains("alert(\"x\")"), "a quote leaked unescaped");
    let escaped = escape_html(HOSTILE);
    assert_eq!(
        escaped,
        "&lt;script&gt;alert(&quot;x&quot;)&lt;&#x2f;script&gt;&lt;img src=x onerror=alert(1)&gt;&#x27;&amp;"
    );
    // The description, the case label (cases and runs tables) and the wrong output value.
    assert!(page.matches(&escaped).count() >= 4, "{page}");
    let markdown = report(&text, &answers).markdown();
    assert!(!markdown.contains("<script>"), "{markdown}");
}

#[test]
fn reports_are_never_written_through_a_planted_link() {
    use cua_fs::testing::{plant_symlink, share};
    // The reports directory is shared, as /tmp is; the attacker links one report's name to a
    // file of the victim's, and the reports directory of a second run to a directory of theirs.
    let shared = tempfile::tempdir().unwrap();
    share(shared.path());
    let victim = tempfile::tempdir().unwrap();
    let victim_file = victim.path().join("victim.txt");
    std::fs::write(&victim_file, "precious").unwrap();
    let report = report(STABILITY, &right_answers());
    let markdown = shared.path().join(format!("{}.md", report.suite));
    plant_symlink(&victim_file, &markdown);
    let refused = report.write(shared.path()).unwrap_err().to_string();
    assert!(
        refused.contains(&markdown.display().to_string()) && refused.contains("symbolic link"),
        "{refused}"
    );
    assert_eq!(std::fs::read_to_string(&victim_file).unwrap(), "precious");
    assert!(
        std::fs::symlink_metadata(&markdown)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced"
    );

    let linked_dir = shared.path().join("reports");
    plant_symlink(victim.path(), &linked_dir);
    let refused = report.write(&linked_dir).unwrap_err().to_string();
    assert!(
        refused.contains(&linked_dir.display().to_string()) && refused.contains("symbolic link"),
        "{refused}"
    );
    let names: Vec<_> = std::fs::read_dir(victim.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "a report was written through the link");
}
