//! Redmine 5 (Debian's package, SQLite): sign-in with Rails' CSRF token, a deep link built from
//! an input, a form with selects, a checkbox and a date that files an issue, the list filtered
//! through a URL to find it again. The truth is the app's own SQLite database.

use super::{App, query, setting, unique};

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
    query("sqlite3", &["-tabs", "-readonly", &database], statement)
}

fn issue_count() -> usize {
    sql("SELECT count(*) FROM issues;")[0][0]
        .parse()
        .expect("a count")
}

#[test]
fn sign_in_passes_the_csrf_form_and_names_rejected_credentials() {
    let app = redmine();
    app.replay("redmine.auth.sign_in@1.0.0", &[]).succeeded();

    let rejected = app.replay_with(
        "redmine.auth.sign_in@1.0.0",
        &[],
        &[("CUA_SECRET_REDMINE_PASSWORD", "not-the-password")],
    );
    assert_eq!(
        (rejected.code, rejected.status(), rejected.outcome()),
        (0, "business_outcome", "invalid_credentials"),
        "{:#}",
        rejected.envelope
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

#[test]
fn filing_an_issue_writes_exactly_one_row_and_its_reference_finds_it_again() {
    let app = redmine();
    let subject = unique("Dormant account letter");
    let before = issue_count();
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
    assert_eq!(issue_count(), before + 1, "exactly one issue was filed");
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
    let before = issue_count();
    // A due date Redmine cannot store: the browser's date control refuses it before any click.
    let bad_date = app.replay(
        "redmine.issue.create@1.0.0",
        &[
            ("project", "member-services"),
            ("tracker", "Bug"),
            ("subject", &unique("Never filed")),
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
    assert_eq!(issue_count(), before, "nothing was filed");
}
