//! Every page MemberDesk renders, as pure functions from state to HTML. One code path serves
//! both variants: everything that differs comes from the variant's [`Skin`].
//!
//! The markup is deliberately legacy: nested layout tables, labels in the cell to the left of
//! their control (never `<label for>`), `onclick` navigation, opaque class names, controls with
//! no accessible name, and a decoy training table that repeats the real labels.

use crate::html::{content_page, esc, label_row, paragraph, value_row};
use crate::state::{
    AS_OF, Account, AccountType, Member, OpenedAccount, ReviewedTransfer, TransferFields,
    TransferRecord, TransferRefusal, seeded_members,
};
use crate::variant::Skin;

/// Text shown when a searched member does not exist.
pub(crate) const NO_RECORDS: &str = "No records found";
/// Text shown when a searched member is restricted.
pub(crate) const NOT_AUTHORIZED: &str = "You are not authorized to view this member record.";
/// Text shown when sign-on fails.
pub(crate) const BAD_CREDENTIALS: &str = "Invalid operator ID or password.";
/// Text shown when the search box is empty.
pub(crate) const ENTER_MEMBER_NUMBER: &str = "Enter a member number.";
/// Text shown instead of the summary for a member with no savings account.
const NO_SAVINGS: &str = "No savings account on file for this member.";
/// Text shown under "Recent Transfers" for a member with none.
const NO_TRANSFERS: &str = "No transfers";
/// Text the transfer lookup shows when no transfer carries the reference.
const NO_TRANSFER_WITH_REFERENCE: &str = "No transfer with that client reference";
/// Text the transfer lookup shows when submitted blank.
const ENTER_CLIENT_REFERENCE: &str = "Enter a client reference.";

/// What the transfer lookup page answers.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TransferSearch<'a> {
    /// No reference was submitted: the form alone.
    NotAsked,
    /// The form was submitted blank.
    Blank,
    /// The transfers carrying the submitted reference, oldest first (possibly none).
    Found(&'a [TransferRecord]),
}

/// A message under the search form, and whether it is an error.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Notice<'a> {
    Info(&'a str),
    Error(&'a str),
}

/// `GET /`: the frameset. The content frame starts at the search page when signed in.
pub(crate) fn frameset(skin: &Skin, signed_in: bool) -> String {
    let content = if signed_in { "/search" } else { "/login" };
    format!(
        "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01 Frameset//EN\">\n<html>\n<head>\n\
         <meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\">\n\
         <title>{product} - {institution}</title>\n</head>\n\
         <frameset cols=\"220,*\">\n\
         <frame name=\"nav\" src=\"/nav\">\n\
         <frame name=\"content\" src=\"{content}\">\n\
         <noframes>{product} requires a browser that supports frames.</noframes>\n\
         </frameset>\n</html>\n",
        product = esc(skin.product),
        institution = esc(skin.institution),
        content = esc(content),
    )
}

/// `GET /nav`: the navigation frame.
pub(crate) fn nav(skin: &Skin) -> String {
    format!(
        "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01 Transitional//EN\">\n<html>\n<head>\n\
         <meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\">\n\
         <title>{product}</title>\n<style type=\"text/css\">{style}</style>\n</head>\n<body>\n\
         <table class=\"{layout}\" width=\"100%\" border=\"0\" cellpadding=\"4\" cellspacing=\"0\">\n\
         <tr><td class=\"{banner}\">{product}</td></tr>\n\
         <tr><td><a href=\"#\" class=\"{link}\" onclick=\"parent.content.location='/search';return false;\">{search}</a></td></tr>\n\
         <tr><td><a href=\"#\" class=\"{link}\" onclick=\"parent.content.location='/transfers/lookup';return false;\">{find_transfer}</a></td></tr>\n\
         <tr><td><a href=\"/reports\" class=\"{disabled}\" aria-disabled=\"true\" onclick=\"return false;\">{reports}</a></td></tr>\n\
         <tr><td><a href=\"/admin\" class=\"{disabled}\" aria-disabled=\"true\" onclick=\"return false;\">{administration}</a></td></tr>\n\
         <tr><td><a href=\"/logout\" class=\"{link}\" target=\"_top\">{sign_off}</a></td></tr>\n\
         </table>\n</body>\n</html>\n",
        product = esc(skin.product),
        style = skin.stylesheet,
        layout = esc(skin.class_layout),
        banner = esc(skin.class_banner),
        link = esc(skin.class_nav_link),
        disabled = esc(skin.class_nav_disabled),
        search = esc(skin.nav_member_search),
        find_transfer = esc(skin.nav_find_transfer),
        reports = esc(skin.nav_reports),
        administration = esc(skin.nav_administration),
        sign_off = esc(skin.nav_sign_off),
    )
}

/// `GET /login`, and its re-render after a failed sign-on.
pub(crate) fn login(skin: &Skin, operator_id: &str, error: Option<&str>) -> String {
    let mut body = format!(
        "<form method=\"post\" action=\"/login\">\n\
         <table class=\"{table}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n",
        table = esc(skin.class_form_table),
    );
    body += &label_row(
        skin,
        skin.label_operator_id,
        &text_input(
            skin,
            skin.field_operator_id,
            Some(skin.label_operator_id),
            operator_id,
        ),
    );
    body += &label_row(
        skin,
        skin.label_password,
        &format!(
            "<input type=\"password\" name=\"{}\" title=\"{}\" class=\"{}\" value=\"\">",
            esc(skin.field_password),
            esc(skin.label_password),
            esc(skin.class_input),
        ),
    );
    body += &label_row(skin, "", &submit(skin, skin.button_sign_on));
    body += "</table>\n</form>\n";
    if let Some(error) = error {
        body += &paragraph(skin.class_error, error);
    }
    content_page(skin, skin.heading_sign_on, &body)
}

/// `GET /search`, and its re-render with a message ("No records found", not authorized).
pub(crate) fn search(skin: &Skin, typed: &str, notice: Option<Notice<'_>>) -> String {
    let mut body = format!(
        "<form method=\"post\" action=\"/search\">\n\
         <table class=\"{table}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n",
        table = esc(skin.class_form_table),
    );
    let member_number = format!(
        "<input type=\"text\" name=\"{}\" title=\"{}\" class=\"{}\" maxlength=\"10\" value=\"{}\">",
        esc(skin.field_member_number),
        esc(skin.label_member_number),
        esc(skin.class_input),
        esc(typed),
    );
    body += &format!(
        "<tr><td class=\"{}\">{}</td><td>{member_number}</td><td>{}</td></tr>\n",
        esc(skin.class_label_cell),
        esc(skin.label_member_number),
        submit(skin, skin.button_search),
    );
    body += "</table>\n</form>\n";
    match notice {
        Some(Notice::Info(text)) => body += &paragraph(skin.class_message, text),
        Some(Notice::Error(text)) => body += &paragraph(skin.class_error, text),
        None => {}
    }
    body += &training_table(skin);
    content_page(skin, skin.heading_search, &body)
}

/// `GET /member/{id}`: the member table, the accounts grid, the savings summary, the action
/// links, and last the member's recent transfers (newest first). With `lookalike`, the grid gains
/// a row before the real first one whose Member cell differs by one character (the
/// `lookalike_row` fault).
pub(crate) fn member_detail(
    skin: &Skin,
    member: &Member,
    lookalike: bool,
    recent_transfers: &[TransferRecord],
) -> String {
    let mut body = member_table(skin, member);
    body += &section(skin, skin.heading_accounts);
    body += &format!(
        "<table class=\"{}\" border=\"1\" cellpadding=\"3\" cellspacing=\"0\">\n\
         <tr><th>Account</th><th>Member</th><th>Type</th><th>Balance</th><th>Status</th></tr>\n",
        esc(skin.class_grid),
    );
    if lookalike && let Some(first) = member.accounts.first() {
        body += &grid_row(&lookalike_of(first));
    }
    for account in &member.accounts {
        body += &grid_row(account);
    }
    body += "</table>\n";
    body += &section(skin, skin.heading_summary);
    match member.savings() {
        Some(savings) => {
            body += &format!(
                "<table class=\"{}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n",
                esc(skin.class_form_table),
            );
            body += &value_row(
                skin,
                skin.label_savings_balance,
                &savings.balance.to_string(),
            );
            body += &value_row(skin, skin.label_status, savings.status.label());
            body += &value_row(skin, skin.label_as_of, AS_OF);
            body += "</table>\n";
        }
        None => body += &paragraph(skin.class_message, NO_SAVINGS),
    }
    body += &format!(
        "<table border=\"0\" cellpadding=\"4\" cellspacing=\"0\"><tr>\n\
         <td>{}</td>\n<td>{}</td>\n<td><a href=\"/search\" class=\"{}\">{}</a></td>\n\
         </tr></table>\n",
        onclick_link(
            skin,
            &format!("/member/{}/new-subaccount", member.id),
            skin.link_open_subaccount
        ),
        onclick_link(
            skin,
            &format!("/member/{}/transfer", member.id),
            skin.link_transfer
        ),
        esc(skin.class_link),
        esc(skin.link_new_search),
    );
    // Last on the page, under its own heading, so it is a section of its own after everything
    // the page showed before it existed.
    body += &section(skin, skin.heading_recent_transfers);
    if recent_transfers.is_empty() {
        body += &paragraph(skin.class_message, NO_TRANSFERS);
    } else {
        body += &transfer_table(skin, recent_transfers, MemberColumn::Omitted);
    }
    content_page(skin, skin.heading_detail, &body)
}

/// `GET /member/{id}/new-subaccount`, and its re-render after a refusal.
pub(crate) fn subaccount_form(
    skin: &Skin,
    member: &Member,
    selected_type: &str,
    deposit: &str,
    error: Option<&str>,
) -> String {
    let mut body = member_table(skin, member);
    body += &format!(
        "<form method=\"post\" action=\"/member/{}/new-subaccount\">\n\
         <table class=\"{}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n",
        esc(&member.id),
        esc(skin.class_form_table),
    );
    let options: Vec<(&str, &str)> = AccountType::ALL
        .iter()
        .map(|account_type| (account_type.value(), account_type.label()))
        .collect();
    body += &label_row(
        skin,
        skin.label_account_type,
        &select(skin, skin.field_account_type, &options, selected_type),
    );
    body += &label_row(
        skin,
        skin.label_initial_deposit,
        &text_input(skin, skin.field_initial_deposit, None, deposit),
    );
    body += &label_row(skin, "", &submit(skin, skin.button_open_account));
    body += "</table>\n</form>\n";
    if let Some(error) = error {
        body += &paragraph(skin.class_error, error);
    }
    body += &return_link(skin, member);
    content_page(skin, skin.heading_subaccount, &body)
}

/// The sub-account confirmation page.
pub(crate) fn subaccount_done(skin: &Skin, member: &Member, opened: &OpenedAccount) -> String {
    let mut body = member_table(skin, member);
    body += &format!(
        "<table class=\"{}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n",
        esc(skin.class_form_table),
    );
    body += &value_row(skin, skin.label_reference, &opened.reference);
    body += &value_row(skin, skin.label_new_account, &opened.account.number);
    body += &value_row(
        skin,
        skin.label_account_type,
        opened.account.account_type.label(),
    );
    body += &value_row(
        skin,
        skin.label_initial_deposit,
        &opened.account.balance.to_string(),
    );
    body += "</table>\n";
    body += &return_link(skin, member);
    content_page(skin, skin.heading_subaccount_done, &body)
}

/// `GET /member/{id}/transfer`, and its re-render after a refusal at review.
pub(crate) fn transfer_form(
    skin: &Skin,
    member: &Member,
    fields: TransferFields<'_>,
    error: Option<&str>,
) -> String {
    let mut body = member_table(skin, member);
    body += &format!(
        "<form method=\"post\" action=\"/member/{}/transfer\">\n\
         <table class=\"{}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n",
        esc(&member.id),
        esc(skin.class_form_table),
    );
    let option_texts: Vec<String> = member.accounts.iter().map(account_option).collect();
    let options: Vec<(&str, &str)> = member
        .accounts
        .iter()
        .zip(&option_texts)
        .map(|(account, text)| (account.number.as_str(), text.as_str()))
        .collect();
    body += &label_row(
        skin,
        skin.label_from_account,
        &select(skin, skin.field_from_account, &options, fields.from),
    );
    body += &label_row(
        skin,
        skin.label_to_account,
        &select(skin, skin.field_to_account, &options, fields.to),
    );
    body += &label_row(
        skin,
        skin.label_amount,
        &text_input(skin, skin.field_amount, None, fields.amount),
    );
    // Built exactly like the Amount row: an unnamed textbox beside its label cell.
    body += &label_row(
        skin,
        skin.label_client_reference,
        &text_input(
            skin,
            skin.field_client_reference,
            None,
            fields.client_reference,
        ),
    );
    body += &label_row(skin, "", &submit(skin, skin.button_review_transfer));
    body += "</table>\n</form>\n";
    if let Some(error) = error {
        body += &paragraph(skin.class_error, error);
    }
    body += &return_link(skin, member);
    content_page(skin, skin.heading_transfer, &body)
}

/// The review page: what will move, the irreversible confirm button, and "Cancel".
pub(crate) fn transfer_review(skin: &Skin, member: &Member, reviewed: &ReviewedTransfer) -> String {
    let mut body = member_table(skin, member);
    body += &format!(
        "<form method=\"post\" action=\"/member/{}/transfer/confirm\">\n\
         <input type=\"hidden\" name=\"{}\" value=\"{}\">\n\
         <input type=\"hidden\" name=\"{}\" value=\"{}\">\n\
         <input type=\"hidden\" name=\"{}\" value=\"{}\">\n",
        esc(&member.id),
        esc(skin.field_from_account),
        esc(&reviewed.from.number),
        esc(skin.field_to_account),
        esc(&reviewed.to.number),
        esc(skin.field_amount),
        esc(&reviewed.amount.decimal()),
    );
    // A transfer without a client reference reviews exactly as it did before references.
    if let Some(reference) = &reviewed.client_reference {
        body += &format!(
            "<input type=\"hidden\" name=\"{}\" value=\"{}\">\n",
            esc(skin.field_client_reference),
            esc(reference.as_str()),
        );
    }
    body += &format!(
        "<table class=\"{}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n",
        esc(skin.class_form_table),
    );
    body += &value_row(
        skin,
        skin.label_from_account,
        &account_option(&reviewed.from),
    );
    body += &value_row(skin, skin.label_to_account, &account_option(&reviewed.to));
    body += &value_row(skin, skin.label_amount, &reviewed.amount.to_string());
    if let Some(reference) = &reviewed.client_reference {
        body += &value_row(skin, skin.label_client_reference, reference.as_str());
    }
    body += &label_row(
        skin,
        "",
        &format!(
            "{} <a href=\"/member/{}\" class=\"{}\">{}</a>",
            submit(skin, skin.button_post_transfer),
            esc(&member.id),
            esc(skin.class_link),
            esc(skin.link_cancel),
        ),
    );
    body += "</table>\n</form>\n";
    content_page(skin, skin.heading_review, &body)
}

/// The page after a posted transfer, with its confirmation number.
pub(crate) fn transfer_done(skin: &Skin, member: &Member, record: &TransferRecord) -> String {
    let mut body = member_table(skin, member);
    body += &format!(
        "<table class=\"{}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n",
        esc(skin.class_form_table),
    );
    body += &value_row(skin, skin.label_confirmation_number, &record.confirmation);
    body += &value_row(skin, skin.label_from_account, &record.from_account);
    body += &value_row(skin, skin.label_to_account, &record.to_account);
    body += &value_row(skin, skin.label_amount, &record.amount.to_string());
    if let Some(reference) = &record.client_reference {
        body += &value_row(skin, skin.label_client_reference, reference.as_str());
    }
    body += "</table>\n";
    body += &return_link(skin, member);
    content_page(skin, skin.heading_transfer_done, &body)
}

/// `GET /transfers/lookup`: a GET form for a client reference, and what it found: every
/// member's transfers carrying it, or a message.
pub(crate) fn transfer_lookup(skin: &Skin, typed: &str, search: TransferSearch<'_>) -> String {
    let mut body = format!(
        "<form method=\"get\" action=\"/transfers/lookup\">\n\
         <table class=\"{table}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n",
        table = esc(skin.class_form_table),
    );
    body += &format!(
        "<tr><td class=\"{}\">{}</td><td>{}</td><td>{}</td></tr>\n",
        esc(skin.class_label_cell),
        esc(skin.label_client_reference),
        text_input(
            skin,
            skin.field_client_reference,
            Some(skin.label_client_reference),
            typed,
        ),
        submit(skin, skin.button_find_transfer),
    );
    body += "</table>\n</form>\n";
    match search {
        TransferSearch::NotAsked => {}
        TransferSearch::Blank => body += &paragraph(skin.class_error, ENTER_CLIENT_REFERENCE),
        TransferSearch::Found([]) => {
            body += &paragraph(skin.class_message, NO_TRANSFER_WITH_REFERENCE);
        }
        TransferSearch::Found(transfers) => {
            body += &transfer_table(skin, transfers, MemberColumn::Shown)
        }
    }
    content_page(skin, skin.heading_find_transfer, &body)
}

/// The page after a refused confirm ("Insufficient funds", "Account is closed").
pub(crate) fn transfer_failed(skin: &Skin, member: &Member, refusal: TransferRefusal) -> String {
    let mut body = member_table(skin, member);
    body += &paragraph(skin.class_error, refusal.message());
    body += &return_link(skin, member);
    content_page(skin, skin.heading_transfer_failed, &body)
}

/// The `undeclared_dialog` interstitial; "Continue" repeats the interrupted GET.
pub(crate) fn system_notice(skin: &Skin, continue_to: &str) -> String {
    let body = format!(
        "{}<table border=\"0\" cellpadding=\"4\" cellspacing=\"0\"><tr><td>\
         <a href=\"{}\" class=\"{}\">Continue</a></td></tr></table>\n",
        paragraph(
            skin.class_message,
            "Member services will be unavailable tonight from 11:00 PM to 11:30 PM for scheduled \
             maintenance."
        ),
        esc(continue_to),
        esc(skin.class_link),
    );
    content_page(skin, "System Notice", &body)
}

/// The `transient_load` page, served with status 502.
pub(crate) fn unavailable(skin: &Skin) -> String {
    content_page(
        skin,
        "Service Temporarily Unavailable",
        &paragraph(
            skin.class_error,
            "The member system did not respond. Please try again.",
        ),
    )
}

/// The disabled "Reports" and "Administration" destinations, and unknown routes.
pub(crate) fn not_available(skin: &Skin, heading: &str) -> String {
    content_page(
        skin,
        heading,
        &paragraph(skin.class_message, "This function is not available."),
    )
}

// ---- helpers ----

fn text_input(skin: &Skin, name: &str, title: Option<&str>, value: &str) -> String {
    let title = title.map_or_else(String::new, |title| format!(" title=\"{}\"", esc(title)));
    format!(
        "<input type=\"text\" name=\"{}\"{title} class=\"{}\" value=\"{}\">",
        esc(name),
        esc(skin.class_input),
        esc(value),
    )
}

fn submit(skin: &Skin, label: &str) -> String {
    format!(
        "<input type=\"submit\" value=\"{}\" class=\"{}\">",
        esc(label),
        esc(skin.class_button),
    )
}

/// A select with no accessible name. `options` are (value, text); `selected` picks one by
/// value, else the browser selects the first.
fn select(skin: &Skin, name: &str, options: &[(&str, &str)], selected: &str) -> String {
    let mut markup = format!(
        "<select name=\"{}\" class=\"{}\">",
        esc(name),
        esc(skin.class_select),
    );
    for &(value, text) in options {
        let marker = if value == selected { " selected" } else { "" };
        markup += &format!(
            "<option value=\"{}\"{marker}>{}</option>",
            esc(value),
            esc(text)
        );
    }
    markup += "</select>";
    markup
}

fn onclick_link(skin: &Skin, target: &str, text: &str) -> String {
    format!(
        "<a href=\"#\" class=\"{}\" onclick=\"location.href='{}';return false;\">{}</a>",
        esc(skin.class_link),
        esc(target),
        esc(text),
    )
}

fn section(skin: &Skin, heading: &str) -> String {
    format!(
        "<h2 class=\"{}\">{}</h2>\n",
        esc(skin.class_section),
        esc(heading)
    )
}

fn member_table(skin: &Skin, member: &Member) -> String {
    format!(
        "<table class=\"{}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n{}{}</table>\n",
        esc(skin.class_form_table),
        value_row(skin, skin.label_member_number, &member.id),
        value_row(skin, skin.label_name, &member.name),
    )
}

fn return_link(skin: &Skin, member: &Member) -> String {
    format!(
        "<p><a href=\"/member/{}\" class=\"{}\">{}</a></p>\n",
        esc(&member.id),
        esc(skin.class_link),
        esc(skin.link_return_to_member),
    )
}

fn grid_row(account: &Account) -> String {
    format!(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        esc(&account.number),
        esc(&account.member_id),
        esc(account.account_type.label()),
        esc(&account.balance.to_string()),
        esc(account.status.label()),
    )
}

/// Whether a transfer grid has a Member column: the lookup spans members, the member record
/// does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MemberColumn {
    Shown,
    Omitted,
}

/// A grid of posted transfers. Amounts are plain decimals (`100.00`), never `$100.00`, so no
/// cell here is money-shaped the way the Accounts grid's balances are.
fn transfer_table(
    skin: &Skin,
    transfers: &[TransferRecord],
    member_column: MemberColumn,
) -> String {
    let with_member = member_column == MemberColumn::Shown;
    let member_header = if with_member {
        format!("<th>{}</th>", esc(skin.label_member))
    } else {
        String::new()
    };
    let mut table = format!(
        "<table class=\"{}\" border=\"1\" cellpadding=\"3\" cellspacing=\"0\">\n\
         <tr><th>{}</th>{member_header}<th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr>\n",
        esc(skin.class_grid),
        esc(skin.label_confirmation_number),
        esc(skin.label_from_account),
        esc(skin.label_to_account),
        esc(skin.label_amount),
        esc(skin.label_client_reference),
    );
    for record in transfers {
        let member_cell = if with_member {
            format!("<td>{}</td>", esc(&record.member_id))
        } else {
            String::new()
        };
        let reference = record
            .client_reference
            .as_ref()
            .map_or("", |reference| reference.as_str());
        table += &format!(
            "<tr><td>{}</td>{member_cell}<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&record.confirmation),
            esc(&record.from_account),
            esc(&record.to_account),
            esc(&record.amount.decimal()),
            esc(reference),
        );
    }
    table += "</table>\n";
    table
}

/// `S-12345-01 Savings`: how comboboxes and the review page name an account.
fn account_option(account: &Account) -> String {
    format!("{} {}", account.number, account.account_type.label())
}

/// The decoy: a help table whose header row repeats the real labels, listing the seeded
/// members with their seeded (never live) savings balances.
fn training_table(skin: &Skin) -> String {
    let mut table = format!(
        "<br>\n<table class=\"{class}\" border=\"1\" cellpadding=\"2\" cellspacing=\"0\">\n\
         <tr><td colspan=\"3\">{caption}</td></tr>\n\
         <tr><th>{member_number}</th><th>{name}</th><th>{savings}</th></tr>\n",
        class = esc(skin.class_training),
        caption = esc(skin.caption_training),
        member_number = esc(skin.label_member_number),
        name = esc(skin.label_name),
        savings = esc(skin.label_savings_balance),
    );
    for member in seeded_members() {
        let savings = member
            .savings()
            .map_or_else(|| "n/a".to_owned(), |account| account.balance.to_string());
        table += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&member.id),
            esc(&member.name),
            esc(&savings),
        );
    }
    table += "</table>\n";
    table
}

/// The lookalike of an account: the same row, for a member number whose last character is
/// changed, with a balance $1,000.00 higher so a wrong pick is visible in the output.
fn lookalike_of(account: &Account) -> Account {
    let lookalike_id = lookalike_member_id(&account.member_id);
    Account {
        number: account.number.replace(&account.member_id, &lookalike_id),
        member_id: lookalike_id,
        balance: account
            .balance
            .checked_add(crate::Money::from_cents(100_000))
            .unwrap_or(account.balance),
        ..account.clone()
    }
}

/// `12345` → `12346`: the last digit moves up by one (9 wraps to 0); a non-digit last
/// character becomes `0`.
fn lookalike_member_id(member_id: &str) -> String {
    let mut characters: Vec<char> = member_id.chars().collect();
    if let Some(last) = characters.last_mut() {
        *last = match last.to_digit(10) {
            Some(digit) => char::from_digit((digit + 1) % 10, 10).unwrap_or('0'),
            None => '0',
        };
    }
    characters.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookalike_ids_differ_by_one_character() {
        for (id, expect) in [
            ("12345", "12346"),
            ("67899", "67890"),
            ("1234X", "12340"),
            ("", ""),
        ] {
            let lookalike = lookalike_member_id(id);
            assert_eq!(lookalike, expect);
            let differing = id
                .chars()
                .zip(lookalike.chars())
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(differing, usize::from(!id.is_empty()));
        }
    }
}
