//! MemberDesk pages as the driver would observe them (see `crates/memberdesk/CONTRACT.md`),
//! in both tenant variants, and with the lookalike-row fault.

use cua_snapshot::UiSnapshot;

use crate::dsl::snapshot;

/// `GET /search`, first-valley: the search form, and below it the "Training members" table
/// whose header row repeats the form's labels (a decoy).
pub(crate) fn search_page() -> UiSnapshot {
    snapshot(
        r#"
@url http://127.0.0.1:8080/search
document "MemberDesk" frame=content
  heading "Member Search" region=search_form
  table region=search_form
    row
      cell "Member Number" css="td.lblc" > text "Member Number"
      cell > textbox "Member Number" css="input[name=memno]"
    row > cell > button "Search" css="input.btn1"
  heading "Training members" region=training
  table region=training
    row > cell "Member Number" | cell "Name" | cell "Savings Balance"
    row > cell "12345" | cell "Ada Lovelace" | cell "$4,210.55"
    row > cell "67890" | cell "Grace Hopper" | cell "$18,730.00"
"#,
    )
}

/// `GET /member/12345` in a variant, optionally with the lookalike row armed.
/// The lookalike of another member listed first (the fixture's `lookalike_row` fault).
const OTHER_MEMBER_ROW: &str = r#"    row > cell "S-12346-01" | cell "12346" | cell "Savings" | cell "$5,210.55" | cell "Active""#;

/// A lookalike of the member's own first account: the same Member cell, the account number one
/// digit off and the balance one cent off (the fixture's `lookalike_account` fault).
const SAME_MEMBER_ROW: &str = r#"    row > cell "S-12345-09" | cell "12345" | cell "Savings" | cell "$4,210.56" | cell "Active""#;

fn member_page(northgate: bool, extra_row: &str) -> UiSnapshot {
    let (detail, summary, balance_label, status_label, value_css, label_css) = if northgate {
        (
            "Member Profile",
            "Savings Summary",
            "Savings Bal.",
            "Acct Status",
            "td.ng-v",
            "td.ng-k",
        )
    } else {
        (
            "Member Detail",
            "Summary",
            "Savings Balance",
            "Status",
            "td.valc",
            "td.lblc",
        )
    };
    snapshot(&format!(
        r#"
@url http://127.0.0.1:8080/member/12345
document "MemberDesk" frame=content
  heading "{detail}" region=detail_view
  table region=detail_view
    row > cell "Member Number" css="{label_css}" | cell "12345" css="{value_css}"
    row > cell "Name" css="{label_css}" | cell "Ada Lovelace" css="{value_css}"
  heading "Accounts" region=accounts_view
  table region=accounts_view
    row > cell "Account" | cell "Member" | cell "Type" | cell "Balance" | cell "Status"
{extra_row}
    row > cell "S-12345-01" | cell "12345" | cell "Savings" | cell "$4,210.55" | cell "Active"
    row > cell "C-12345-02" | cell "12345" | cell "Checking" | cell "$812.30" | cell "Active"
  heading "{summary}" region=summary
  table region=summary
    row
      cell "{balance_label}" css="{label_css}" > text "{balance_label}"
      cell "$4,210.55" css="{value_css}" > text "$4,210.55"
    row
      cell "{status_label}" css="{label_css}" > text "{status_label}"
      cell "Active" css="{value_css}" > text "Active"
    row
      cell "As Of" css="{label_css}" > text "As Of"
      cell "09/11/2026" css="{value_css}" > text "09/11/2026"
  link "Open Sub-Account"
  link "Transfer Funds"
  link "New Search"
"#
    ))
}

pub(crate) fn member_detail() -> UiSnapshot {
    member_page(false, "")
}

pub(crate) fn member_detail_northgate() -> UiSnapshot {
    member_page(true, "")
}

pub(crate) fn member_detail_lookalike() -> UiSnapshot {
    member_page(false, OTHER_MEMBER_ROW)
}

pub(crate) fn member_detail_lookalike_account() -> UiSnapshot {
    member_page(false, SAME_MEMBER_ROW)
}

/// `GET /member/12345/new-subaccount`: unnamed controls beside their label cells.
pub(crate) fn subaccount_form(northgate: bool) -> UiSnapshot {
    let (heading, type_label, deposit_label, button, select_css, input_css, button_css) =
        if northgate {
            (
                "New Sub-Account Request",
                "Type of Account",
                "Opening Deposit",
                "Submit Request",
                "select[name=acct_kind]",
                "input[name=open_amt]",
                "input.ng-act",
            )
        } else {
            (
                "Open Sub-Account",
                "Account Type",
                "Initial Deposit",
                "Open Account",
                "select[name=accttype]",
                "input[name=initdep]",
                "input.btn1",
            )
        };
    snapshot(&format!(
        r#"
@url http://127.0.0.1:8080/member/12345/new-subaccount
document "MemberDesk" frame=content
  heading "{heading}" region=subaccount_form
  table region=subaccount_form
    row
      cell "{type_label}" > text "{type_label}"
      cell "Savings"
        combobox css="{select_css}" value="Savings" > option "Savings" | option "Checking" | option "Certificate"
    row
      cell "{deposit_label}:" > text "{deposit_label}:"
      cell > textbox css="{input_css}"
  button "{button}" css="{button_css}"
"#
    ))
}
