//! Redmine 5 (Debian's package, SQLite): sign-in with Rails' CSRF token, a deep link built from
//! an input, a form with selects, a checkbox and a date that files an issue, the list filtered
//! through a URL to find it again. The truth is the app's own SQLite database.

use super::{App, query, quoted, setting, unique};

fn redmine() -> App {
    App::new(
        "redmine",
        "REDMINE_PORT",
        "/login",
        vec![
            (
                "CUA_SECRET_REDMINE_LOGIN".into(),
                setting("REDMINE_ADMIN_USER"),
            ),
            (
                "CUA_SECRET_REDMINE_PASSWORD".into(),
                setting("REDMINE_ADMIN_PASSWORD"),
            ),
        ],
    )
}

/// Rows of a query against Redmine's own database.
fn sql(statement: &str) -> Vec<Vec<String>> {
    let database = format!(
        "/var/lib/redmine/{}/db/redmine.sqlite3",
        setting("REDMINE_INSTANCE")
    );
    query(
        "sqlite3",
        &["-tabs", "-readonly", "-cmd", ".timeout 5000", &database],
        statement,
    )
}

/// How many issues match a condition: tests run side by side, so each counts only its own.
fn issues_where(condition: &str) -> usize {
    sql(&format!("SELECT count(*) FROM issues WHERE {condition};"))[0][0]
        .parse()
        .expect("a count")
}

#[test]
fn sign_in_passes_the_csrf_form_and_names_rejected_credentials() {
    let app = redmine();
    super::sign_in_and_refusal(
        &app,
        "redmine.auth.sign_in@1.0.0",
        "CUA_SECRET_REDMINE_PASSWORD",
    );
}

#[test]
fn a_deep_link_built_from_the_input_reads_the_issue_the_database_holds() {
    let app = redmine();
    // The truth for two seeded issues whose subjects differ by one transposed digit.
    let rows = sql("SELECT i.id, i.subject, s.name, p.name FROM issues i \
         JOIN issue_statuses s ON s.id = i.status_id JOIN enumerations p ON p.id = i.priority_id \
         WHERE i.subject LIKE 'Card not arriving for member %' ORDER BY i.id;");
    assert_eq!(
        rows.len(),
        2,
        "the seed holds two look-alike issues: {rows:?}"
    );
    for row in rows {
        let run = app.replay("redmine.issue.show@1.0.0", &[("issue_id", &row[0])]);
        run.succeeded();
        assert_eq!(run.output("subject"), row[1], "issue {}", row[0]);
        assert_eq!(run.output("status"), row[2], "issue {}", row[0]);
        assert_eq!(run.output("priority"), row[3], "issue {}", row[0]);
    }

    let missing = app.replay("redmine.issue.show@1.0.0", &[("issue_id", "987654")]);
    assert_eq!(
        (missing.status(), missing.outcome()),
        ("business_outcome", "issue_not_found"),
        "{:#}",
        missing.envelope
    );
}

/// Identity beyond tables: the activity feed is a description list, each entry a term (the
/// issue's link) and a definition (the description's start). The definition whose term names
/// the issue is read, as the database holds it; when a look-alike issue's term also holds the
/// subject, the read is refused, never answered by position.
#[test]
fn an_activity_entry_is_keyed_by_its_term_and_a_look_alike_is_refused() {
    let app = redmine();
    let subject = unique("Feed entry");
    let reference = unique("cua-feed").replace(' ', "-");
    file_issue(&subject, &reference);
    let run = app.replay(
        "redmine.activity.read_entry@1.0.0",
        &[("project", "member-services"), ("subject", &subject)],
    );
    run.succeeded();
    let truth = sql(&format!(
        "SELECT description FROM issues WHERE subject = '{subject}';"
    ));
    assert_eq!(run.output("excerpt"), truth[0][0]);

    // A second issue whose subject begins with the first one's: both terms hold the key.
    file_issue(
        &format!("{subject} again"),
        &unique("cua-feed-again").replace(' ', "-"),
    );
    let refused = app.replay(
        "redmine.activity.read_entry@1.0.0",
        &[("project", "member-services"), ("subject", &subject)],
    );
    assert_ne!(refused.status(), "success", "{:#}", refused.envelope);
    assert!(
        refused
            .envelope
            .to_string()
            .contains("is not unique: 2 definitions hold"),
        "{:#}",
        refused.envelope
    );
}

/// An empty field on Redmine's issue page: its value `<div>` is empty, the accessibility tree
/// drops it, and the next thing after "Due date:" is the label "% Done:". The read beside the
/// label is refused rather than answered with that label; once the issue has a due date, the
/// same capability reads it.
#[test]
fn an_empty_field_beside_its_label_is_refused_never_read_from_the_next_label() {
    let app = redmine();
    let issue = file_issue(
        &unique("Empty due date"),
        &unique("cua-empty").replace(' ', "-"),
    );
    let reference = app.sealed_draft(
        "redmine.issue.due_date@1.0.0.yaml",
        r#"schema: cua.capability/v1
id: redmine.issue.due_date
version: 1.0.0
title: Read an issue's due date
description: Read the value beside the "Due date" label.
surface:
  kind: legacy_web
  driver_capabilities: [semantic_tree]
  app:
    vendor: redmine.org
    product: Redmine
    version_range: ">=5.0 <6"
entrypoint:
  url: "{base_url}/issues/{$input: issue_id}"
inputs:
  - name: issue_id
    type: string
    description: The issue number.
    pattern: "^[1-9][0-9]{0,8}$"
    example: "3"
outputs:
  - name: due_date
    type: string
    description: The due date as the page prints it.
    source: {step: read_due_date}
steps:
  - id: read_due_date
    description: Read the value beside its label.
    action:
      type: extract
      into: due_date
      target:
        role: text
        anchor: {relation: adjacent_to, text: Due date}
        recorded_strategy: structural_anchor
    risk: safe
checkpoint:
  assert: node_exists
  query: {role: heading, name_matches: '^[A-Za-z ]+ #[0-9]+$'}
recovery:
  - id: signed_out
    description: The session is gone; sign in.
    detect:
      assert: all_of
      of:
        - {assert: node_exists, query: {role: button, name: Login}}
        - {assert: node_exists, query: {role: textbox, name: Login}}
    remedy:
      - type: run_capability
        capability: redmine.auth.sign_in@1.0.0
    max_attempts: 1
    backoff: none
    scope: named_steps
    steps: [read_due_date]
escalation:
  triggers: [target_ambiguous, target_not_found, checkpoint_failed, unexpected_state, recovery_exhausted]
  policy: fail_closed
policy:
  allowed_domains: ["{base_url}"]
  allowed_actions: [navigate, type, click, extract]
  max_steps: 6
  max_duration_ms: 30000
provenance:
  notes: Written by the conformance test.
"#,
    );

    let empty = app.replay(&reference, &[("issue_id", &issue)]);
    assert_ne!(empty.status(), "success", "{:#}", empty.envelope);
    assert!(
        !empty.envelope.to_string().contains("% Done"),
        "the next label is never the answer: {:#}",
        empty.envelope
    );

    set_due_date(&issue, "2027-02-03");
    let filled = app.replay(&reference, &[("issue_id", &issue)]);
    filled.succeeded();
    // Redmine prints the date and how far off it is: "02/03/2027 (Due in about 2 months)".
    assert!(
        filled.output("due_date").starts_with("02/03/2027"),
        "{:#}",
        filled.envelope
    );
}

/// Sets an issue's due date through Redmine's own REST API.
fn set_due_date(issue: &str, date: &str) {
    let body = format!(r#"{{"issue":{{"due_date":"{date}"}}}}"#);
    assert_eq!(
        api("PUT", &format!("/issues/{issue}.json"), &body),
        Ok(204),
        "Redmine's API set the due date of #{issue}"
    );
}

#[test]
fn filing_an_issue_writes_exactly_one_row_and_its_reference_finds_it_again() {
    let app = redmine();
    let subject = unique("Dormant account letter");
    let run = app.replay(
        "redmine.issue.create@1.0.0",
        &[
            ("project", "member-services"),
            ("tracker", "Feature"),
            ("subject", &subject),
            ("priority", "High"),
            ("due_date", "2027-01-15"),
        ],
    );
    run.succeeded();
    assert_eq!(
        issues_where(&format!("subject = '{subject}'")),
        1,
        "exactly one issue was filed"
    );
    let rows = sql(&format!(
        "SELECT i.id, t.name, p.name, i.is_private, i.due_date, i.description FROM issues i \
         JOIN trackers t ON t.id = i.tracker_id JOIN enumerations p ON p.id = i.priority_id \
         WHERE i.subject = '{subject}';"
    ));
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(run.output("issue"), format!("#{}", row[0]));
    assert_eq!(
        (
            row[1].as_str(),
            row[2].as_str(),
            row[3].as_str(),
            row[4].as_str()
        ),
        ("Feature", "High", "1", "2027-01-15")
    );
    let reference = &row[5];
    assert!(
        reference.starts_with("cua-"),
        "replay filled the idempotency key: {reference:?}"
    );
    assert_eq!(
        run.envelope["data"]["effect"], "confirmed",
        "the effect was observed: {:#}",
        run.envelope
    );

    // The reconciliation finds the one issue filed under the run's reference.
    let found = app.replay(
        "redmine.issue.find_by_reference@1.0.0",
        &[("project", "member-services"), ("request_ref", reference)],
    );
    found.succeeded();
    assert_eq!(found.output("issue"), row[0]);
    let nothing = app.replay(
        "redmine.issue.find_by_reference@1.0.0",
        &[
            ("project", "member-services"),
            ("request_ref", "cua-never-filed"),
        ],
    );
    assert_eq!(
        (nothing.status(), nothing.outcome()),
        ("business_outcome", "issue_not_found")
    );
}

#[test]
fn a_refused_form_files_nothing_and_is_never_reported_as_a_success() {
    let app = redmine();
    let never = unique("Never filed");
    // A due date Redmine cannot store: the browser's date control refuses it before any click.
    let bad_date = app.replay(
        "redmine.issue.create@1.0.0",
        &[
            ("project", "member-services"),
            ("tracker", "Bug"),
            ("subject", &never),
            ("priority", "Low"),
            ("due_date", "2027-02-31"),
        ],
    );
    assert_ne!(bad_date.status(), "success", "{:#}", bad_date.envelope);
    assert_eq!(bad_date.code, 1, "{:#}", bad_date.envelope);
    // A blank subject: Redmine refuses the form after the click. The refusal's message is
    // recognised, but a screen after a mutation cannot prove nothing happened, so a person
    // decides; the database shows nothing was filed.
    let blank = app.replay(
        "redmine.issue.create@1.0.0",
        &[
            ("project", "member-services"),
            ("tracker", "Bug"),
            ("subject", ""),
            ("priority", "Low"),
            ("due_date", "2027-02-01"),
        ],
    );
    assert_eq!(
        (blank.code, blank.status()),
        (3, "needs_human"),
        "{:#}",
        blank.envelope
    );
    assert_eq!(issues_where(&format!("subject = '{never}'")), 0);
    // Only this test files anything due on 2027-02-01.
    assert_eq!(
        issues_where("due_date = '2027-02-01'"),
        0,
        "nothing was filed"
    );
}

/// Files an issue category through Redmine's own REST API, for a test to delete.
fn add_category(name: &str) {
    let body = format!(r#"{{"issue_category":{{"name":"{name}"}}}}"#);
    let status = api(
        "POST",
        "/projects/member-services/issue_categories.json",
        &body,
    );
    assert_eq!(status, Ok(201), "Redmine's API filed the category {name}");
}

/// A request to Redmine's own REST API as its administrator; the HTTP status.
fn api(method: &str, path: &str, body: &str) -> Result<u16, String> {
    let port: u16 = setting("REDMINE_PORT").parse().expect("a port");
    let credentials = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!(
            "{}:{}",
            setting("REDMINE_ADMIN_USER"),
            setting("REDMINE_ADMIN_PASSWORD")
        ),
    );
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Authorization: Basic {credentials}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    super::http_request(port, &request)
}

fn categories_named(name: &str) -> usize {
    sql(&format!(
        "SELECT count(*) FROM issue_categories WHERE name = '{name}';"
    ))[0][0]
        .parse()
        .expect("a count")
}

#[test]
fn a_row_action_behind_a_confirm_deletes_exactly_the_named_row() {
    let mut app = redmine();
    // Two categories one character apart; the row of the first is the one to go.
    let name = unique("Cards");
    let look_alike = format!("{name}0");
    add_category(&name);
    add_category(&look_alike);

    // Irreversible: without an approval and the caller's opt-in, nothing is dispatched.
    let refused = app.replay(
        "redmine.category.delete@1.0.0",
        &[("project", "member-services"), ("name", &name)],
    );
    assert_eq!(
        refused.envelope["error"]["code"], "policy_denied",
        "{:#}",
        refused.envelope
    );
    assert_eq!(categories_named(&name), 1);

    app.approve("redmine.category.delete@1.0.0");
    let run = app.replay_irreversible(
        "redmine.category.delete@1.0.0",
        &[("project", "member-services"), ("name", &name)],
    );
    run.succeeded();
    assert_eq!(
        run.envelope["data"]["effect"], "confirmed",
        "{:#}",
        run.envelope
    );
    // The trace says the click answered OK to the confirm it declared, and to nothing else.
    let run_dir = run.result()["evidence_ref"].as_str().expect("the evidence");
    let dispatch = crate::console::read_trace(std::path::Path::new(run_dir))
        .into_iter()
        .find(|line| line["event"] == "dispatch" && line["step"] == "delete_category")
        .expect("the delete's dispatch");
    assert!(
        dispatch["message"]
            .as_str()
            .is_some_and(|message| message.ends_with("dialogs answered: confirm accepted")),
        "{dispatch}"
    );
    assert_eq!(categories_named(&name), 0, "the named category is gone");
    assert_eq!(categories_named(&look_alike), 1, "its look-alike stays");

    // Again: nothing of that name is left, and that is the answer, with nothing dispatched.
    let again = app.replay_irreversible(
        "redmine.category.delete@1.0.0",
        &[("project", "member-services"), ("name", &name)],
    );
    assert_eq!(
        (again.status(), again.outcome()),
        ("business_outcome", "category_not_found"),
        "{:#}",
        again.envelope
    );
    assert_eq!(categories_named(&look_alike), 1);

    // The reconciliation a crash after the click would run reads the same truth.
    let absent = app.replay(
        "redmine.category.check_absent@1.0.0",
        &[("project", "member-services"), ("name", &name)],
    );
    absent.succeeded();
    let present = app.replay(
        "redmine.category.check_absent@1.0.0",
        &[("project", "member-services"), ("name", &look_alike)],
    );
    assert_eq!(
        present.outcome(),
        "category_exists",
        "{:#}",
        present.envelope
    );
}

/// The path that needs no model: an operator demonstrates the task once in the console's
/// recorder (scripted here through its API, as the demo does), `cua compile` turns the trace
/// into a draft, a reviewer seals it, and it replays against Redmine with the answer the
/// database holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demonstration_compiles_to_a_capability_that_replays_on_redmine() {
    let app = redmine();
    let truth = sql(
        "SELECT i.id, s.name FROM issues i JOIN issue_statuses s ON s.id = i.status_id \
         WHERE i.subject = 'Statement PDF shows wrong branch';",
    );
    let (issue, status) = (&truth[0][0], &truth[0][1]);
    let (draft, text) = super::Demonstration {
        url: format!("{}/issues/{issue}", app.base_url),
        goal: format!("Read the status of issue {issue}"),
        run_id: "rec-redmine",
        sign_in: ["Login", "Password Lost password", "Login"],
        user: setting("REDMINE_ADMIN_USER"),
        password: setting("REDMINE_ADMIN_PASSWORD"),
        ready: ("text", "Status:"),
        read: ("text", status, "status"),
    }
    .record_and_seal(&app)
    .await;
    // The password became a secret named after the field's accessible name, which on Redmine
    // includes its label's "Lost password" link; it is written nowhere in the draft.
    assert!(
        text.contains("$secret: recorded.password_lost_password"),
        "{text}"
    );
    let replayed = app.replay_with(
        &draft.display().to_string(),
        &[],
        &[(
            "CUA_SECRET_RECORDED_PASSWORD_LOST_PASSWORD",
            &setting("REDMINE_ADMIN_PASSWORD"),
        )],
    );
    replayed.succeeded();
    assert_eq!(replayed.output("status"), status.as_str());
}

#[test]
fn an_eval_against_the_database_truth_finds_no_wrong_answer() {
    let app = redmine();
    let rows = sql("SELECT i.id, i.subject, s.name, p.name FROM issues i \
         JOIN issue_statuses s ON s.id = i.status_id JOIN enumerations p ON p.id = i.priority_id \
         WHERE i.author_id = 1 AND i.id <= 6 ORDER BY i.id;");
    assert_eq!(rows.len(), 6, "the seed's first six issues: {rows:?}");
    let mut cases = String::new();
    for row in &rows {
        cases.push_str(&format!(
            "  - inputs: {{issue_id: {}}}\n    expect:\n      outputs: {{subject: {}, status: {}, priority: {}}}\n",
            quoted(&row[0]),
            quoted(&row[1]),
            quoted(&row[2]),
            quoted(&row[3])
        ));
    }
    cases.push_str("  - inputs: {issue_id: \"987654\"}\n    expect: {outcome: issue_not_found}\n");
    let suite = format!(
        "schema: cua.eval_suite/v1\nname: redmine_issue_show\n\
         description: Each seeded issue read by its number, and one that does not exist.\n\
         capability: redmine.issue.show@1.0.0\nbase_url: {}\n\
         setup:\n  - capability: redmine.auth.sign_in@1.0.0\nrepeats: 2\ncases:\n{cases}",
        app.base_url
    );
    let evaluation = super::evaluate(&app, &suite, "redmine_issue_show");
    assert_eq!(evaluation["runs"], 14, "{evaluation:#}");
    assert_eq!(evaluation["successes"], 12, "{evaluation:#}");
    assert_eq!(evaluation["business_outcomes"], 2, "{evaluation:#}");
    assert_eq!(evaluation["wrong_actions"], 0, "{evaluation:#}");
    assert_eq!(evaluation["unauthorized_dispatches"], 0, "{evaluation:#}");
    assert_eq!(evaluation["determinism_holds"], true, "{evaluation:#}");
}

/// Files an issue through Redmine's own REST API with this description; its number.
fn file_issue(subject: &str, description: &str) -> String {
    let body = format!(
        r#"{{"issue":{{"project_id":"member-services","subject":"{subject}","description":"{description}"}}}}"#
    );
    assert_eq!(
        api("POST", "/issues.json", &body),
        Ok(201),
        "Redmine's API filed {subject}"
    );
    sql(&format!(
        "SELECT id FROM issues WHERE subject = '{subject}';"
    ))[0][0]
        .clone()
}

/// Every Redmine capability as a generated Playwright spec, run against the live app; what the
/// specs read is what the database holds, and what they change is there afterwards.
#[test]
fn generated_playwright_specs_pass_against_redmine() {
    let app = redmine();
    // Reads: an issue filed through the API, found by its reference and shown by its number.
    let reference = unique("cua-spec").replace(' ', "-");
    let lookup = unique("Spec lookup");
    let issue = file_issue(&lookup, &reference);
    let absent = unique("Spec absent");
    let outcomes = super::generated_specs_pass(
        &app,
        &super::SpecRun {
            references: &[
                "redmine.activity.read_entry@1.0.0",
                "redmine.auth.sign_in@1.0.0",
                "redmine.category.check_absent@1.0.0",
                "redmine.issue.find_by_reference@1.0.0",
                "redmine.issue.show@1.0.0",
            ],
            // Irreversible: written only when asked.
            refused: &["redmine.category.delete@1.0.0"],
            flags: &[],
            env: &[
                ("CUA_INPUT_REQUEST_REF", &reference),
                ("CUA_INPUT_ISSUE_ID", &issue),
                ("CUA_INPUT_NAME", &absent),
                ("CUA_INPUT_SUBJECT", &lookup),
            ],
        },
    );
    let truth = sql(&format!(
        "SELECT i.subject, s.name, p.name FROM issues i \
         JOIN issue_statuses s ON s.id = i.status_id JOIN enumerations p ON p.id = i.priority_id \
         WHERE i.id = {issue};"
    ));
    let shown = super::spec_outputs(&outcomes, "redmine.issue.show@1.0.0");
    assert_eq!(
        [&shown["subject"], &shown["status"], &shown["priority"]],
        [&truth[0][0], &truth[0][1], &truth[0][2]],
        "the spec reads each value beside its own label"
    );
    assert_eq!(
        super::spec_outputs(&outcomes, "redmine.issue.find_by_reference@1.0.0")["issue"],
        issue
    );
    assert_eq!(
        super::spec_outputs(&outcomes, "redmine.activity.read_entry@1.0.0")["excerpt"],
        reference,
        "the feed entry keyed by its term"
    );

    // Changes: a private issue filed through the form, and a category deleted behind a confirm().
    let subject = unique("Spec filed");
    let filed_ref = unique("cua-spec-filed").replace(' ', "-");
    let category = unique("Spec category");
    add_category(&category);
    let outcomes = super::generated_specs_pass(
        &app,
        &super::SpecRun {
            references: &[
                "redmine.issue.create@1.0.0",
                "redmine.category.delete@1.0.0",
            ],
            refused: &[],
            flags: &["--allow-irreversible"],
            env: &[
                ("CUA_INPUT_SUBJECT", &subject),
                ("CUA_INPUT_REQUEST_REF", &filed_ref),
                ("CUA_INPUT_DUE_DATE", "2027-03-04"),
                ("CUA_INPUT_NAME", &category),
            ],
        },
    );
    let filed = sql(&format!(
        "SELECT id, is_private, due_date FROM issues WHERE subject = '{subject}';"
    ));
    assert_eq!(filed.len(), 1, "exactly one issue filed: {filed:?}");
    assert_eq!(
        (filed[0][1].as_str(), filed[0][2].as_str()),
        ("1", "2027-03-04"),
        "private, with the typed due date"
    );
    assert_eq!(
        super::spec_outputs(&outcomes, "redmine.issue.create@1.0.0")["issue"],
        format!("#{}", filed[0][0]),
        "the number read from the notice is the filed issue's"
    );
    assert_eq!(categories_named(&category), 0, "the category is gone");
}
