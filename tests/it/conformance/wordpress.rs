//! WordPress 6.1 (Debian's package, MariaDB): sign-in with the test cookie, a deep link built
//! from an input, the category list's search keyed to the exact name among look-alikes, and an
//! AJAX form that adds a category. The truth is the app's own MariaDB database.

use super::{App, query, quoted, root, setting, unique};

fn wordpress() -> App {
    App::new(
        "wordpress",
        "WORDPRESS_PORT",
        "/wp-login.php",
        vec![
            (
                "CUA_SECRET_WORDPRESS_USERNAME".into(),
                setting("WORDPRESS_ADMIN_USER"),
            ),
            (
                "CUA_SECRET_WORDPRESS_PASSWORD".into(),
                setting("WORDPRESS_ADMIN_PASSWORD"),
            ),
        ],
    )
}

/// Rows of a query against WordPress's own database, through MariaDB's socket.
fn sql(statement: &str) -> Vec<Vec<String>> {
    let socket = root().join("target/conformance/mariadb.sock");
    let socket = format!("--socket={}", socket.display());
    query(
        "mariadb",
        &[
            "--no-defaults",
            &socket,
            "-uroot",
            "-N",
            "-B",
            "cua_wordpress",
            "-e",
        ],
        statement,
    )
}

#[test]
fn sign_in_leaves_the_login_page_and_names_rejected_credentials() {
    let app = wordpress();
    super::sign_in_and_refusal(
        &app,
        "wordpress.auth.sign_in@1.0.0",
        "CUA_SECRET_WORDPRESS_PASSWORD",
    );
}

#[test]
fn a_deep_link_reads_each_look_alike_user_as_the_database_holds_them() {
    let app = wordpress();
    // Two users share the display name "Li Wen"; the number the caller gives decides.
    let rows = sql(
        "SELECT u.ID, u.user_login, u.user_email, m.meta_value FROM wp_users u \
         JOIN wp_usermeta m ON m.user_id = u.ID AND m.meta_key = 'wp_capabilities' \
         WHERE u.display_name = 'Li Wen' ORDER BY u.ID;",
    );
    assert_eq!(
        rows.len(),
        2,
        "the seed holds two users named Li Wen: {rows:?}"
    );
    for row in rows {
        let run = app.replay("wordpress.user.show@1.0.0", &[("user_id", &row[0])]);
        run.succeeded();
        assert_eq!(run.output("username"), row[1]);
        // The e-mail address is a sensitive output: the caller sees its shape only (the eval
        // compares it with the database in clear, inside the process).
        assert_eq!(
            run.output("email"),
            format!("<redacted:string[{}]>", row[2].chars().count())
        );
        // wp_capabilities is a serialized array whose one key is the role's slug.
        let role = run.output("role").to_lowercase();
        assert!(
            row[3].contains(&format!("\"{role}\"")),
            "{role} in {}",
            row[3]
        );
    }
    let missing = app.replay("wordpress.user.show@1.0.0", &[("user_id", "987654")]);
    assert_eq!(
        (missing.status(), missing.outcome()),
        ("business_outcome", "user_not_found"),
        "{:#}",
        missing.envelope
    );
}

#[test]
fn the_search_keys_the_row_by_its_exact_name_among_look_alikes() {
    let app = wordpress();
    // "Loans" also lists Auto Loans, Student Loans, Loans 2024 and Loans 2025.
    for name in ["Loans", "Loans 2024"] {
        let truth = sql(&format!(
            "SELECT t.slug FROM wp_terms t JOIN wp_term_taxonomy x ON x.term_id = t.term_id \
             WHERE x.taxonomy = 'category' AND t.name = '{name}';"
        ));
        let run = app.replay("wordpress.category.find@1.0.0", &[("name", name)]);
        run.succeeded();
        assert_eq!(run.output("slug"), truth[0][0], "{name}");
    }
    let nothing = app.replay("wordpress.category.find@1.0.0", &[("name", "Crypto Desk")]);
    assert_eq!(
        (nothing.status(), nothing.outcome()),
        ("business_outcome", "category_not_found"),
        "{:#}",
        nothing.envelope
    );
}

#[test]
fn adding_a_category_through_the_ajax_form_writes_exactly_one_term() {
    let app = wordpress();
    let name = unique("Branch Closures");
    assert_eq!(categories_named(&name), 0);
    let run = app.replay(
        "wordpress.category.create@1.0.0",
        &[
            ("name", &name),
            ("parent", "Member News"),
            ("description", "Branches closed for works."),
        ],
    );
    run.succeeded();
    assert_eq!(
        run.envelope["data"]["effect"], "confirmed",
        "{:#}",
        run.envelope
    );
    assert_eq!(categories_named(&name), 1, "exactly one category was added");
    let rows = sql(&format!(
        "SELECT t.slug, p.name, x.description FROM wp_terms t \
         JOIN wp_term_taxonomy x ON x.term_id = t.term_id \
         JOIN wp_terms p ON p.term_id = x.parent \
         WHERE x.taxonomy = 'category' AND t.name = '{name}';"
    ));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(run.output("slug"), rows[0][0]);
    assert_eq!(
        (rows[0][1].as_str(), rows[0][2].as_str()),
        ("Member News", "Branches closed for works.")
    );

    // The same name under the same parent again: WordPress refuses it after the click, and a
    // refusal on the screen after a mutation is never taken as proof that nothing happened.
    let again = app.replay(
        "wordpress.category.create@1.0.0",
        &[
            ("name", &name),
            ("parent", "Member News"),
            ("description", "Twice."),
        ],
    );
    assert_eq!(
        (again.code, again.status()),
        (3, "needs_human"),
        "{:#}",
        again.envelope
    );
    assert_eq!(categories_named(&name), 1, "nothing more was added");
}

fn categories_named(name: &str) -> usize {
    sql(&format!(
        "SELECT count(*) FROM wp_terms t JOIN wp_term_taxonomy x ON x.term_id = t.term_id \
         WHERE x.taxonomy = 'category' AND t.name = '{name}';"
    ))[0][0]
        .parse()
        .expect("a count")
}

#[test]
fn a_hidden_row_action_behind_a_confirm_deletes_exactly_the_named_category() {
    let mut app = wordpress();
    // Two categories the search lists together; the first is the one to go.
    let name = unique("Fraud Desk");
    let look_alike = format!("{name} Archive");
    for category in [&name, &look_alike] {
        app.replay(
            "wordpress.category.create@1.0.0",
            &[
                ("name", category),
                ("parent", "None"),
                ("description", "To delete."),
            ],
        )
        .succeeded();
    }
    app.approve("wordpress.category.delete@1.0.0");
    let run = app.replay_irreversible("wordpress.category.delete@1.0.0", &[("name", &name)]);
    run.succeeded();
    assert_eq!(
        run.envelope["data"]["effect"], "confirmed",
        "{:#}",
        run.envelope
    );
    assert_eq!(categories_named(&name), 0, "the named category is gone");
    assert_eq!(categories_named(&look_alike), 1, "its look-alike stays");

    let again = app.replay_irreversible("wordpress.category.delete@1.0.0", &[("name", &name)]);
    assert_ne!(again.status(), "success", "{:#}", again.envelope);
    assert_eq!(
        categories_named(&look_alike),
        1,
        "a second run deletes nothing else"
    );

    let absent = app.replay("wordpress.category.check_absent@1.0.0", &[("name", &name)]);
    absent.succeeded();
    let present = app.replay(
        "wordpress.category.check_absent@1.0.0",
        &[("name", &look_alike)],
    );
    assert_eq!(
        present.outcome(),
        "category_exists",
        "{:#}",
        present.envelope
    );
}

#[test]
fn an_eval_against_the_database_truth_finds_no_wrong_answer() {
    let app = wordpress();
    // Look-alike names the search lists together: the slug of each, from wp_terms.
    let rows = sql(
        "SELECT t.name, t.slug FROM wp_terms t JOIN wp_term_taxonomy x ON x.term_id = t.term_id \
         WHERE x.taxonomy = 'category' AND t.name IN \
         ('Loans', 'Loans 2024', 'Loans 2025', 'Savings', 'Savings Plus', 'Rates', 'Rates Archive') \
         ORDER BY t.name;",
    );
    assert_eq!(rows.len(), 7, "{rows:?}");
    let mut cases = String::new();
    for row in &rows {
        cases.push_str(&format!(
            "  - inputs: {{name: {}}}\n    expect:\n      outputs: {{slug: {}}}\n",
            quoted(&row[0]),
            quoted(&row[1])
        ));
    }
    cases.push_str("  - inputs: {name: Crypto Desk}\n    expect: {outcome: category_not_found}\n");
    let suite = format!(
        "schema: cua.eval_suite/v1\nname: wordpress_category_find\n\
         description: Each look-alike category found by its exact name, and one that does not exist.\n\
         capability: wordpress.category.find@1.0.0\nbase_url: {}\n\
         setup:\n  - capability: wordpress.auth.sign_in@1.0.0\nrepeats: 2\ncases:\n{cases}",
        app.base_url
    );
    let evaluation = super::evaluate(&app, &suite, "wordpress_category_find");
    assert_eq!(evaluation["runs"], 16, "{evaluation:#}");
    assert_eq!(evaluation["successes"], 14, "{evaluation:#}");
    assert_eq!(evaluation["business_outcomes"], 2, "{evaluation:#}");
    assert_eq!(evaluation["wrong_actions"], 0, "{evaluation:#}");
    assert_eq!(evaluation["unauthorized_dispatches"], 0, "{evaluation:#}");
    assert_eq!(evaluation["determinism_holds"], true, "{evaluation:#}");
}

fn option(name: &str) -> String {
    sql(&format!(
        "SELECT option_value FROM wp_options WHERE option_name = '{name}';"
    ))[0][0]
        .clone()
}

#[test]
fn a_radio_named_by_today_and_a_select_save_the_settings_the_database_then_holds() {
    let app = wordpress();
    // The generated spec of this capability saves the same settings.
    let _settings = crate::codegen::exclusive("wordpress-settings");
    // Two different settings in turn, so each run changes something and is checked.
    for (format, day, start_of_week) in [("Y-m-d", "Monday", "1"), ("F j, Y", "Sunday", "0")] {
        let run = app.replay(
            "wordpress.settings.date_format@1.0.0",
            &[("date_format", format), ("week_starts_on", day)],
        );
        run.succeeded();
        assert_eq!(
            run.envelope["data"]["effect"], "confirmed",
            "{:#}",
            run.envelope
        );
        assert_eq!(option("date_format"), format);
        assert_eq!(option("start_of_week"), start_of_week);
    }
}

/// `labelled_by` on a page we did not write: WordPress's login form associates each label with
/// its field (`<label for>`), so a target named by nothing but its label finds the field, types
/// into it and reads it back; the same label as `beside_label` (the text before the field)
/// finds the same field.
#[test]
fn a_field_found_only_through_the_label_the_page_associates_with_it() {
    let app = wordpress();
    for relation in ["labelled_by", "beside_label"] {
        let draft = app.sealed_draft(
            &format!("wordpress.login.{relation}@1.0.0.yaml"),
            &format!(
                r#"schema: cua.capability/v1
id: wordpress.login.{relation}
version: 1.0.0
title: Type a name into the login form and read it back
description: Find the username field through its label alone ({relation}).
surface:
  kind: legacy_web
  driver_capabilities: [semantic_tree]
  app:
    vendor: wordpress.org
    product: WordPress
    version_range: ">=6.1 <7"
entrypoint:
  url: "{{base_url}}/wp-login.php"
inputs:
  - name: user
    type: string
    description: What to type.
    pattern: "^[a-z.]{{1,40}}$"
    example: tom.okafor
outputs:
  - name: typed
    type: string
    description: What the field holds afterwards.
    source: {{step: read_back}}
steps:
  - id: enter_user
    description: Type into the field the label names.
    action:
      type: type
      value: {{$input: user}}
      target:
        role: textbox
        anchor: {{relation: {relation}, text: Username or Email Address, match: exact}}
        recorded_strategy: structural_anchor
    wait: {{for: snapshot_stable, timeout_ms: 3000}}
    risk: safe
  - id: read_back
    description: Read the same field.
    action:
      type: extract
      into: typed
      target:
        role: textbox
        anchor: {{relation: {relation}, text: Username or Email Address, match: exact}}
        recorded_strategy: structural_anchor
    risk: safe
checkpoint:
  assert: node_exists
  query: {{role: button, name: Log In}}
escalation:
  triggers: [target_ambiguous, target_not_found, checkpoint_failed, unexpected_state]
  policy: fail_closed
policy:
  allowed_domains: ["{{base_url}}"]
  allowed_actions: [navigate, type, extract]
  max_steps: 4
  max_duration_ms: 30000
provenance:
  notes: Written by the conformance test.
"#
            ),
        );
        let run = app.replay(&draft, &[("user", "ada.lovelace")]);
        run.succeeded();
        assert_eq!(run.output("typed"), "ada.lovelace", "{relation}");
    }
}

/// Every WordPress capability as a generated Playwright spec, run against the live app; what
/// the specs read is what the database holds, and what they change is there afterwards.
#[test]
fn generated_playwright_specs_pass_against_wordpress() {
    let app = wordpress();
    let user =
        sql("SELECT ID, user_login, user_email FROM wp_users WHERE user_login = 'tom.okafor';");
    // The examples: "Crypto Desk" is no category; "Loans" is one among look-alikes.
    assert_eq!(categories_named("Crypto Desk"), 0);
    let outcomes = super::generated_specs_pass(
        &app,
        &super::SpecRun {
            references: &[
                "wordpress.auth.sign_in@1.0.0",
                "wordpress.category.check_absent@1.0.0",
                "wordpress.category.find@1.0.0",
                "wordpress.user.show@1.0.0",
            ],
            // Irreversible: written only when asked.
            refused: &["wordpress.category.delete@1.0.0"],
            flags: &[],
            env: &[("CUA_INPUT_USER_ID", &user[0][0])],
        },
    );
    let shown = super::spec_outputs(&outcomes, "wordpress.user.show@1.0.0");
    assert_eq!(shown["username"], user[0][1]);
    assert_eq!(
        super::spec_outputs(&outcomes, "wordpress.category.find@1.0.0")["slug"],
        sql(
            "SELECT t.slug FROM wp_terms t JOIN wp_term_taxonomy x ON x.term_id = t.term_id \
             WHERE x.taxonomy = 'category' AND t.name = 'Loans';"
        )[0][0],
        "the row keyed by its exact name, not a look-alike's"
    );

    // Changes, in file order: a category added through the AJAX form, then deleted behind a
    // confirm(); and the date settings saved. The settings are
    // the same ones another test saves, so the two never run at once.
    let _settings = crate::codegen::exclusive("wordpress-settings");
    let name = unique("Spec category");
    let slug = name.to_lowercase().replace(' ', "-");
    let outcomes = super::generated_specs_pass(
        &app,
        &super::SpecRun {
            references: &[
                "wordpress.category.create@1.0.0",
                "wordpress.category.delete@1.0.0",
                "wordpress.settings.date_format@1.0.0",
            ],
            refused: &[],
            flags: &["--allow-irreversible"],
            env: &[
                ("CUA_INPUT_NAME", &name),
                ("CUA_INPUT_SLUG", &slug),
                ("CUA_INPUT_DATE_FORMAT", "d/m/Y"),
                ("CUA_INPUT_WEEK_STARTS_ON", "Saturday"),
            ],
        },
    );
    assert_eq!(
        super::spec_outputs(&outcomes, "wordpress.category.create@1.0.0")["slug"],
        slug
    );
    assert_eq!(categories_named(&name), 0, "created, then deleted");
    assert_eq!(option("date_format"), "d/m/Y");
    assert_eq!(option("start_of_week"), "6");
}

/// The path that needs no model, on WordPress: a demonstration through the recorder's API,
/// compiled, sealed, replayed; the answer is the one wp_users holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demonstration_compiles_to_a_capability_that_replays_on_wordpress() {
    let app = wordpress();
    let truth = sql("SELECT ID, user_email FROM wp_users WHERE user_login = 'tom.okafor';");
    let (user, email) = (&truth[0][0], &truth[0][1]);
    let (draft, _) = super::Demonstration {
        url: format!("{}/wp-admin/user-edit.php?user_id={user}", app.base_url),
        goal: format!("Read the e-mail address of user {user}"),
        run_id: "rec-wordpress",
        sign_in: ["Username or Email Address", "Password", "Log In"],
        user: setting("WORDPRESS_ADMIN_USER"),
        password: setting("WORDPRESS_ADMIN_PASSWORD"),
        ready: ("textbox", "Email (required)"),
        read: ("textbox", "Email (required)", "email"),
    }
    .record_and_seal(&app)
    .await;
    let replayed = app.replay_with(
        &draft.display().to_string(),
        &[],
        &[(
            "CUA_SECRET_RECORDED_PASSWORD",
            &setting("WORDPRESS_ADMIN_PASSWORD"),
        )],
    );
    replayed.succeeded();
    assert_eq!(replayed.output("email"), email.as_str());
}
