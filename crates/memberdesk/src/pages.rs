//! Every page MemberDesk renders, as pure functions from state to HTML. One code path serves
//! both variants: everything that differs comes from the variant's [`Skin`].
//!
//! The markup is deliberately legacy: nested layout tables, labels in the cell to the left of
//! their control (never `<label for>`), `onclick` navigation, opaque class names, controls with
//! no accessible name, and a decoy training table that repeats the real labels.
//!
//! The display faults ([`Distortions`]) make a page lie the way a reskinning proxy or a
//! careless redesign would: lookalike rows, help text quoting refusals, same-named controls in
//! another section. They change only the markup; every real control still does what it did.

use crate::Money;
use crate::fault::{Distortions, Fault};
use crate::html::{content_page, content_page_with_preamble, esc, label_row, paragraph, value_row};
use crate::state::{
    AS_OF, Account, AccountType, MINIMUM_DEPOSIT, Member, OpenedAccount, ReviewedTransfer,
    SubaccountRefusal, TransferFields, TransferRecord, TransferRefusal, seeded_members,
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
/// The `decoy_control` section heading on the search page.
const DECOY_SEARCH_HEADING: &str = "Quick Search Help";
/// The `decoy_control` section heading on the member detail page.
const DECOY_LINKS_HEADING: &str = "Training Links";
/// The `decoy_control` section heading on the transfer review page.
const DECOY_TRANSFER_HEADING: &str = "Practice Transfer";
/// Where every decoy control leads: a page that changes nothing but a counter.
pub(crate) const DECOY_PATH: &str = "/decoy";
/// The heading of the page every decoy control leads to.
const DECOY_PAGE_HEADING: &str = "Training page";
/// The `quoted_refusals` heading on the sub-account confirmation page. It shares
/// "below the minimum required" with [`SubaccountRefusal::BelowMinimum`].
const SUBACCOUNT_DONE_QUOTE: &str = "Deposits below the minimum required are refused";

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
/// `decoy_control` puts a second search form under its own heading above the page heading;
/// `quoted_refusals` adds a help caption quoting both refusals just under the real form.
pub(crate) fn search(
    skin: &Skin,
    typed: &str,
    notice: Option<Notice<'_>>,
    distortions: &Distortions,
) -> String {
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
    if distortions.shows(Fault::QuotedRefusals) {
        body += &paragraph(skin.class_message, &search_help());
    }
    match notice {
        Some(Notice::Info(text)) => body += &paragraph(skin.class_message, text),
        Some(Notice::Error(text)) => body += &paragraph(skin.class_error, text),
        None => {}
    }
    body += &training_table(skin);
    let preamble = if distortions.shows(Fault::DecoyControl) {
        decoy_search_form(skin)
    } else {
        String::new()
    };
    content_page_with_preamble(skin, &preamble, skin.heading_search, &body)
}

/// `GET /member/{id}`: the member table, the accounts grid, the savings summary, the action
/// links, and last the member's recent transfers (newest first). The display faults add, before
/// the real first grid row, a row whose Member cell differs by one character (`lookalike_row`)
/// and a row for the same member whose account number differs by one digit
/// (`lookalike_account`); a second savings balance row before the real one
/// (`duplicate_summary_row`); and same-named action links in a section of their own between the
/// grid and the summary (`decoy_control`), so the real links stay in the summary's section.
pub(crate) fn member_detail(
    skin: &Skin,
    member: &Member,
    recent_transfers: &[TransferRecord],
    distortions: &Distortions,
) -> String {
    let mut body = member_table(skin, member);
    body += &section(skin, skin.heading_accounts);
    body += &format!(
        "<table class=\"{}\" border=\"1\" cellpadding=\"3\" cellspacing=\"0\">\n\
         <tr><th>Account</th><th>Member</th><th>Type</th><th>Balance</th><th>Status</th></tr>\n",
        esc(skin.class_grid),
    );
    if let Some(first) = member.accounts.first() {
        if distortions.shows(Fault::LookalikeRow) {
            body += &grid_row(&lookalike_of(first));
        }
        if distortions.shows(Fault::LookalikeAccount) {
            body += &grid_row(&lookalike_account_of(first, &member.accounts));
        }
    }
    for account in &member.accounts {
        body += &grid_row(account);
    }
    body += "</table>\n";
    if distortions.shows(Fault::DecoyControl) {
        body += &section(skin, DECOY_LINKS_HEADING);
        body += &format!(
            "<table border=\"0\" cellpadding=\"4\" cellspacing=\"0\"><tr>\n\
             <td>{}</td>\n<td>{}</td>\n</tr></table>\n",
            onclick_link(skin, DECOY_PATH, skin.link_open_subaccount),
            onclick_link(skin, DECOY_PATH, skin.link_transfer),
        );
    }
    body += &section(skin, skin.heading_summary);
    match member.savings() {
        Some(savings) => {
            body += &format!(
                "<table class=\"{}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n",
                esc(skin.class_form_table),
            );
            if distortions.shows(Fault::DuplicateSummaryRow) {
                body += &value_row(
                    skin,
                    skin.label_savings_balance,
                    &duplicate_summary_balance(savings.balance).to_string(),
                );
            }
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

/// `GET /member/{id}/new-subaccount`, and its re-render after a refusal. `quoted_refusals` adds
/// a help paragraph under the form quoting every refusal.
pub(crate) fn subaccount_form(
    skin: &Skin,
    member: &Member,
    selected_type: &str,
    deposit: &str,
    error: Option<&str>,
    distortions: &Distortions,
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
    if distortions.shows(Fault::QuotedRefusals) {
        body += &paragraph(skin.class_message, &subaccount_help());
    }
    if let Some(error) = error {
        body += &paragraph(skin.class_error, error);
    }
    body += &return_link(skin, member);
    content_page(skin, skin.heading_subaccount, &body)
}

/// The sub-account confirmation page. `quoted_refusals` puts a second heading quoting the
/// minimum-deposit refusal right under the page heading.
pub(crate) fn subaccount_done(
    skin: &Skin,
    member: &Member,
    opened: &OpenedAccount,
    distortions: &Distortions,
) -> String {
    let mut body = String::new();
    if distortions.shows(Fault::QuotedRefusals) {
        body += &section(skin, SUBACCOUNT_DONE_QUOTE);
    }
    body += &member_table(skin, member);
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
/// `quoted_refusals` adds a help paragraph under the form quoting every transfer refusal.
pub(crate) fn transfer_form(
    skin: &Skin,
    member: &Member,
    fields: TransferFields<'_>,
    error: Option<&str>,
    distortions: &Distortions,
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
    if distortions.shows(Fault::QuotedRefusals) {
        body += &paragraph(skin.class_message, &transfer_help());
    }
    if let Some(error) = error {
        body += &paragraph(skin.class_error, error);
    }
    body += &return_link(skin, member);
    content_page(skin, skin.heading_transfer, &body)
}

/// The review page: what will move, the irreversible confirm button, and "Cancel".
/// `decoy_control` puts a form with a same-named button under its own heading above the page
/// heading, so the real form stays in the page heading's section.
pub(crate) fn transfer_review(
    skin: &Skin,
    member: &Member,
    reviewed: &ReviewedTransfer,
    distortions: &Distortions,
) -> String {
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
    let preamble = if distortions.shows(Fault::DecoyControl) {
        decoy_transfer_form(skin)
    } else {
        String::new()
    };
    content_page_with_preamble(skin, &preamble, skin.heading_review, &body)
}

/// The page after a posted transfer, with its confirmation number. `quoted_refusals` puts a
/// second heading quoting "Insufficient funds" right under the page heading.
pub(crate) fn transfer_done(
    skin: &Skin,
    member: &Member,
    record: &TransferRecord,
    distortions: &Distortions,
) -> String {
    let mut body = String::new();
    if distortions.shows(Fault::QuotedRefusals) {
        body += &section(skin, &transfer_done_quote());
    }
    body += &member_table(skin, member);
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
/// `quoted_refusals` adds a help paragraph under the form quoting the not-found text, whatever
/// the search found.
pub(crate) fn transfer_lookup(
    skin: &Skin,
    typed: &str,
    search: TransferSearch<'_>,
    distortions: &Distortions,
) -> String {
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
    if distortions.shows(Fault::QuotedRefusals) {
        body += &paragraph(skin.class_message, &lookup_help());
    }
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

/// `/decoy`: where every `decoy_control` control leads. It changes nothing but the hit counter.
pub(crate) fn decoy(skin: &Skin) -> String {
    content_page(
        skin,
        DECOY_PAGE_HEADING,
        &paragraph(
            skin.class_message,
            "Training page: practice controls lead here, and nothing in the member system was \
             changed.",
        ),
    )
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

/// The `lookalike_account` row: the same member, type and status as `account`, a balance one
/// cent higher, and an account number whose last digit differs and that none of `accounts`
/// has.
fn lookalike_account_of(account: &Account, accounts: &[Account]) -> Account {
    Account {
        number: lookalike_account_number(&account.number, accounts),
        balance: account
            .balance
            .checked_add(Money::from_cents(1))
            .unwrap_or(account.balance),
        ..account.clone()
    }
}

/// `S-12345-01` → `S-12345-09`: the last digit moves up by 8 (mod 10), so it reads as another
/// sequence number of the same member rather than as a typo. If the member has that account,
/// the other offsets are tried (7, 6, … 1, then 9), so the number exists only when all ten
/// last digits are taken. A non-digit last character becomes `9`.
fn lookalike_account_number(number: &str, accounts: &[Account]) -> String {
    let Some(last) = number.chars().last() else {
        return "9".to_owned();
    };
    let stem = &number[..number.len() - last.len_utf8()];
    let Some(digit) = last.to_digit(10) else {
        return format!("{stem}9");
    };
    let with_offset = |offset: u32| format!("{stem}{}", (digit + offset) % 10);
    [8, 7, 6, 5, 4, 3, 2, 1, 9]
        .into_iter()
        .map(with_offset)
        .find(|candidate| !accounts.iter().any(|account| account.number == *candidate))
        .unwrap_or_else(|| with_offset(8))
}

/// The `duplicate_summary_row` value: the real balance plus $100.00, so a read of the wrong
/// row is visible in the output.
fn duplicate_summary_balance(balance: Money) -> Money {
    balance
        .checked_add(Money::from_cents(10_000))
        .unwrap_or(balance)
}

/// The `quoted_refusals` caption on the search page.
fn search_help() -> String {
    format!(
        "Help: any number not listed here answers {NO_RECORDS}, and a restricted member answers \
         {NOT_AUTHORIZED}"
    )
}

/// The `quoted_refusals` help on the transfer form: every transfer refusal, verbatim.
fn transfer_help() -> String {
    format!(
        "Help: an account that is not the member's answers {} The same account twice answers {} \
         A blank or zero amount answers {} A malformed client reference answers {}. When \
         posting, a short balance answers {} and a closed account answers {}.",
        TransferRefusal::UnknownAccount.message(),
        TransferRefusal::SameAccount.message(),
        TransferRefusal::InvalidAmount.message(),
        TransferRefusal::InvalidClientReference.message(),
        TransferRefusal::InsufficientFunds.message(),
        TransferRefusal::AccountClosed.message(),
    )
}

/// The `quoted_refusals` help on the sub-account form: every sub-account refusal, verbatim.
fn subaccount_help() -> String {
    format!(
        "Help: a deposit of less than {} answers {} A deposit that is not an amount answers {} \
         A missing type answers {}",
        MINIMUM_DEPOSIT.decimal(),
        SubaccountRefusal::BelowMinimum.message(),
        SubaccountRefusal::InvalidDeposit.message(),
        SubaccountRefusal::UnknownType.message(),
    )
}

/// The `quoted_refusals` heading on the transfer confirmation page.
fn transfer_done_quote() -> String {
    format!(
        "{}? Ask about overdraft protection",
        TransferRefusal::InsufficientFunds.message()
    )
}

/// The `quoted_refusals` help on the transfer lookup page.
fn lookup_help() -> String {
    format!(
        "Help: a reference that no posted transfer carries answers \
         {NO_TRANSFER_WITH_REFERENCE}, and a blank search answers {ENTER_CLIENT_REFERENCE}"
    )
}

/// The `decoy_control` search form: a section of its own holding a textbox titled like the
/// real one and a button named like the real one, posting to `/decoy`.
fn decoy_search_form(skin: &Skin) -> String {
    let mut markup = section(skin, DECOY_SEARCH_HEADING);
    markup += &format!(
        "<form method=\"post\" action=\"{}\">\n\
         <table class=\"{}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n\
         <tr><td class=\"{}\">{}</td><td>{}</td><td>{}</td></tr>\n\
         </table>\n</form>\n",
        esc(DECOY_PATH),
        esc(skin.class_form_table),
        esc(skin.class_label_cell),
        esc(skin.label_member_number),
        text_input(
            skin,
            skin.field_member_number,
            Some(skin.label_member_number),
            ""
        ),
        submit(skin, skin.button_search),
    );
    markup
}

/// The `decoy_control` review form: a section of its own holding a button named like the real
/// confirm button, posting to `/decoy`.
fn decoy_transfer_form(skin: &Skin) -> String {
    let mut markup = section(skin, DECOY_TRANSFER_HEADING);
    markup += &format!(
        "<form method=\"post\" action=\"{}\">\n\
         <table class=\"{}\" border=\"0\" cellpadding=\"3\" cellspacing=\"0\">\n{}\
         </table>\n</form>\n",
        esc(DECOY_PATH),
        esc(skin.class_form_table),
        label_row(skin, "", &submit(skin, skin.button_post_transfer)),
    );
    markup
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::AccountStatus;

    fn account(number: &str) -> Account {
        Account {
            number: number.to_owned(),
            member_id: "12345".to_owned(),
            account_type: AccountType::Savings,
            balance: Money::from_cents(421_055),
            status: AccountStatus::Active,
        }
    }

    fn check_lookalike_account(number: &str, existing: &[&str], expect: &str) {
        let accounts: Vec<Account> = existing.iter().map(|number| account(number)).collect();
        let lookalike = lookalike_account_number(number, &accounts);
        assert_eq!(lookalike, expect, "{number} among {existing:?}");
        assert_ne!(lookalike, number);
        assert!(
            !existing.contains(&lookalike.as_str()),
            "{lookalike} exists"
        );
    }

    #[test]
    fn lookalike_account_numbers_differ_in_the_last_digit_and_never_exist() {
        check_lookalike_account("S-12345-01", &["S-12345-01", "C-12345-02"], "S-12345-09");
        check_lookalike_account("C-12345-02", &["C-12345-02"], "C-12345-00");
        check_lookalike_account("S-67890-09", &["S-67890-09"], "S-67890-07");
        // The +8 neighbour exists, so the next offset down is used.
        check_lookalike_account(
            "S-12345-01",
            &["S-12345-01", "S-12345-09", "S-12345-08"],
            "S-12345-07",
        );
        check_lookalike_account("S-12345-0X", &["S-12345-0X"], "S-12345-09");
        check_lookalike_account("", &[], "9");
    }

    #[test]
    fn the_lookalike_account_is_one_cent_richer_and_otherwise_the_same() {
        let first = account("S-12345-01");
        let lookalike = lookalike_account_of(&first, std::slice::from_ref(&first));
        assert_eq!(
            lookalike,
            Account {
                number: "S-12345-09".to_owned(),
                balance: Money::from_cents(421_056),
                ..first
            }
        );
        assert_eq!(
            duplicate_summary_balance(Money::from_cents(421_055)).to_string(),
            "$4,310.55"
        );
    }

    #[test]
    fn quoted_refusals_quote_the_refusals_verbatim() {
        let search = search_help();
        assert!(search.contains(NO_RECORDS) && search.contains(NOT_AUTHORIZED));
        let transfer = transfer_help();
        for refusal in [
            TransferRefusal::UnknownAccount,
            TransferRefusal::SameAccount,
            TransferRefusal::InvalidAmount,
            TransferRefusal::InvalidClientReference,
            TransferRefusal::AccountClosed,
            TransferRefusal::InsufficientFunds,
        ] {
            assert!(transfer.contains(refusal.message()), "{refusal:?}");
        }
        let subaccount = subaccount_help();
        for refusal in [
            SubaccountRefusal::BelowMinimum,
            SubaccountRefusal::InvalidDeposit,
            SubaccountRefusal::UnknownType,
        ] {
            assert!(subaccount.contains(refusal.message()), "{refusal:?}");
        }
        let shared = "below the minimum required";
        assert!(SubaccountRefusal::BelowMinimum.message().contains(shared));
        assert!(SUBACCOUNT_DONE_QUOTE.contains(shared));
        assert!(transfer_done_quote().starts_with(TransferRefusal::InsufficientFunds.message()));
        assert!(lookup_help().contains(NO_TRANSFER_WITH_REFERENCE));
    }

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
