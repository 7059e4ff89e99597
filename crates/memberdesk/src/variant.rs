//! The two tenants MemberDesk can dress up as, and the one table of every string that differs
//! between them: labels, headings, form field names and CSS classes. Pages are rendered once,
//! from this table, so both variants always have the same structure and row order.

use std::fmt;
use std::str::FromStr;

use crate::FixtureError;

/// Which tenant the app renders as. The set is closed: the names are the ones capabilities,
/// tenants and evals refer to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {
    /// `first-valley`: First Valley Credit Union, "MemberDesk". The base markup.
    FirstValley,
    /// `northgate-fcu`: Northgate Federal Credit Union, "MemberDesk Pro". Every field name and
    /// class differs, and some labels and headings are rebranded.
    NorthgateFcu,
}

impl Variant {
    /// Every variant, in declaration order.
    pub const ALL: [Variant; 2] = [Variant::FirstValley, Variant::NorthgateFcu];

    const VALID_NAMES: &'static str = "first-valley, northgate-fcu";

    /// The variant's name as written on the command line and in tenant bindings.
    pub const fn name(self) -> &'static str {
        match self {
            Variant::FirstValley => "first-valley",
            Variant::NorthgateFcu => "northgate-fcu",
        }
    }

    /// The institution shown in the banner.
    pub const fn institution(self) -> &'static str {
        self.skin().institution
    }

    /// The product name shown in the banner and the window title.
    pub const fn product(self) -> &'static str {
        self.skin().product
    }

    pub(crate) const fn skin(self) -> &'static Skin {
        match self {
            Variant::FirstValley => &FIRST_VALLEY,
            Variant::NorthgateFcu => &NORTHGATE_FCU,
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl FromStr for Variant {
    type Err = FixtureError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Variant::ALL
            .into_iter()
            .find(|variant| variant.name() == text)
            .ok_or_else(|| FixtureError::UnknownVariant {
                given: text.to_owned(),
                valid: Variant::VALID_NAMES,
            })
    }
}

impl serde::Serialize for Variant {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Every string a page uses that may differ between variants. Strings that never differ (the
/// fault pages, error texts, the seeded data) live with the page that uses them.
pub(crate) struct Skin {
    pub(crate) institution: &'static str,
    pub(crate) product: &'static str,

    pub(crate) heading_sign_on: &'static str,
    pub(crate) heading_search: &'static str,
    pub(crate) heading_detail: &'static str,
    pub(crate) heading_accounts: &'static str,
    pub(crate) heading_summary: &'static str,
    pub(crate) heading_subaccount: &'static str,
    pub(crate) heading_subaccount_done: &'static str,
    pub(crate) heading_transfer: &'static str,
    pub(crate) heading_review: &'static str,
    pub(crate) heading_transfer_done: &'static str,
    pub(crate) heading_transfer_failed: &'static str,
    pub(crate) heading_recent_transfers: &'static str,
    pub(crate) heading_find_transfer: &'static str,

    pub(crate) label_operator_id: &'static str,
    pub(crate) label_password: &'static str,
    pub(crate) label_member_number: &'static str,
    pub(crate) label_name: &'static str,
    pub(crate) label_savings_balance: &'static str,
    pub(crate) label_status: &'static str,
    pub(crate) label_as_of: &'static str,
    pub(crate) label_account_type: &'static str,
    pub(crate) label_initial_deposit: &'static str,
    pub(crate) label_reference: &'static str,
    pub(crate) label_new_account: &'static str,
    pub(crate) label_from_account: &'static str,
    pub(crate) label_to_account: &'static str,
    pub(crate) label_amount: &'static str,
    pub(crate) label_confirmation_number: &'static str,
    pub(crate) label_client_reference: &'static str,
    pub(crate) label_member: &'static str,
    pub(crate) caption_training: &'static str,

    pub(crate) button_sign_on: &'static str,
    pub(crate) button_search: &'static str,
    pub(crate) button_open_account: &'static str,
    pub(crate) button_review_transfer: &'static str,
    pub(crate) button_post_transfer: &'static str,
    pub(crate) button_find_transfer: &'static str,

    pub(crate) link_open_subaccount: &'static str,
    pub(crate) link_transfer: &'static str,
    pub(crate) link_new_search: &'static str,
    pub(crate) link_cancel: &'static str,
    pub(crate) link_return_to_member: &'static str,
    pub(crate) nav_member_search: &'static str,
    pub(crate) nav_find_transfer: &'static str,
    pub(crate) nav_reports: &'static str,
    pub(crate) nav_administration: &'static str,
    pub(crate) nav_sign_off: &'static str,

    pub(crate) field_operator_id: &'static str,
    pub(crate) field_password: &'static str,
    pub(crate) field_member_number: &'static str,
    pub(crate) field_account_type: &'static str,
    pub(crate) field_initial_deposit: &'static str,
    pub(crate) field_from_account: &'static str,
    pub(crate) field_to_account: &'static str,
    pub(crate) field_amount: &'static str,
    /// The client reference, on the transfer form and the lookup form alike.
    pub(crate) field_client_reference: &'static str,

    /// The text input class (`frmfld` in the base markup).
    pub(crate) class_input: &'static str,
    /// The select class.
    pub(crate) class_select: &'static str,
    /// The submit button class (`btn1` in the base markup).
    pub(crate) class_button: &'static str,
    /// The cell holding a label, left of its control or value.
    pub(crate) class_label_cell: &'static str,
    /// The cell holding a value.
    pub(crate) class_value_cell: &'static str,
    /// The outer layout table.
    pub(crate) class_layout: &'static str,
    /// The banner cell.
    pub(crate) class_banner: &'static str,
    /// The page heading.
    pub(crate) class_heading: &'static str,
    /// Section headings ("Accounts", "Summary").
    pub(crate) class_section: &'static str,
    /// Label/value and form tables.
    pub(crate) class_form_table: &'static str,
    /// The accounts grid.
    pub(crate) class_grid: &'static str,
    /// The decoy training table.
    pub(crate) class_training: &'static str,
    /// Action links.
    pub(crate) class_link: &'static str,
    /// Informational text.
    pub(crate) class_message: &'static str,
    /// Error text.
    pub(crate) class_error: &'static str,
    /// Enabled navigation links.
    pub(crate) class_nav_link: &'static str,
    /// Disabled navigation links.
    pub(crate) class_nav_disabled: &'static str,

    pub(crate) stylesheet: &'static str,
}

static FIRST_VALLEY: Skin = Skin {
    institution: "First Valley Credit Union",
    product: "MemberDesk",

    heading_sign_on: "Operator Sign On",
    heading_search: "Member Search",
    heading_detail: "Member Detail",
    heading_accounts: "Accounts",
    heading_summary: "Summary",
    heading_subaccount: "Open Sub-Account",
    heading_subaccount_done: "Confirmation",
    heading_transfer: "Transfer Funds",
    heading_review: "Review Transfer",
    heading_transfer_done: "Transfer Complete",
    heading_transfer_failed: "Transfer Not Completed",
    heading_recent_transfers: "Recent Transfers",
    heading_find_transfer: "Find Transfer",

    label_operator_id: "Operator ID",
    label_password: "Password",
    label_member_number: "Member Number",
    label_name: "Name",
    label_savings_balance: "Savings Balance",
    label_status: "Status",
    label_as_of: "As Of",
    label_account_type: "Account Type",
    label_initial_deposit: "Initial Deposit",
    label_reference: "Reference",
    label_new_account: "Account",
    label_from_account: "From Account",
    label_to_account: "To Account",
    label_amount: "Amount",
    label_confirmation_number: "Confirmation Number",
    label_client_reference: "Client Reference",
    label_member: "Member",
    caption_training: "Training members",

    button_sign_on: "Sign On",
    button_search: "Search",
    button_open_account: "Open Account",
    button_review_transfer: "Review Transfer",
    button_post_transfer: "Transfer Funds",
    button_find_transfer: "Find Transfer",

    link_open_subaccount: "Open Sub-Account",
    link_transfer: "Transfer Funds",
    link_new_search: "New Search",
    link_cancel: "Cancel",
    link_return_to_member: "Return to Member",
    nav_member_search: "Member Search",
    nav_find_transfer: "Find Transfer",
    nav_reports: "Reports",
    nav_administration: "Administration",
    nav_sign_off: "Sign Off",

    field_operator_id: "user",
    field_password: "pw",
    field_member_number: "memno",
    field_account_type: "accttype",
    field_initial_deposit: "initdep",
    field_from_account: "fromacct",
    field_to_account: "toacct",
    field_amount: "amt",
    field_client_reference: "clientref",

    class_input: "frmfld",
    class_select: "frmsel",
    class_button: "btn1",
    class_label_cell: "lblc",
    class_value_cell: "valc",
    class_layout: "tbl0",
    class_banner: "hdr1",
    class_heading: "pgttl",
    class_section: "sect",
    class_form_table: "frmtbl",
    class_grid: "grid1",
    class_training: "hlp2",
    class_link: "lnk1",
    class_message: "msg1",
    class_error: "err1",
    class_nav_link: "nv1",
    class_nav_disabled: "nv0",

    stylesheet: "body{font-family:Tahoma,Arial,sans-serif;font-size:12px;margin:0}\
.tbl0{background:#e8e8f0}.hdr1{background:#1f3a68;color:#fff;font-weight:bold;padding:4px}\
.pgttl{font-size:15px;margin:4px 0}.sect{font-size:13px;margin:8px 0 2px}\
.lblc{font-weight:bold;text-align:right;padding-right:6px}.frmfld{width:140px}\
.btn1{background:#d4d0c8}.grid1 th{background:#c0c8d8;text-align:left}\
.hlp2{color:#666;font-size:11px}.msg1{color:#1f3a68}.err1{color:#b00;font-weight:bold}\
.nv0{color:#999}",
};

static NORTHGATE_FCU: Skin = Skin {
    institution: "Northgate Federal Credit Union",
    product: "MemberDesk Pro",

    heading_sign_on: "Operator Sign On",
    heading_search: "Member Search",
    heading_detail: "Member Profile",
    heading_accounts: "Accounts",
    heading_summary: "Savings Summary",
    heading_subaccount: "New Sub-Account Request",
    heading_subaccount_done: "Request Received",
    heading_transfer: "Funds Transfer",
    heading_review: "Review Funds Transfer",
    heading_transfer_done: "Transfer Posted",
    heading_transfer_failed: "Transfer Rejected",
    heading_recent_transfers: "Recent Transfers",
    heading_find_transfer: "Find Transfer",

    label_operator_id: "Operator ID",
    label_password: "Password",
    label_member_number: "Member Number",
    label_name: "Name",
    label_savings_balance: "Savings Bal.",
    label_status: "Acct Status",
    label_as_of: "As Of",
    label_account_type: "Type of Account",
    label_initial_deposit: "Opening Deposit",
    label_reference: "Reference",
    label_new_account: "Account",
    label_from_account: "From Account",
    label_to_account: "To Account",
    label_amount: "Amount",
    label_confirmation_number: "Confirmation Number",
    label_client_reference: "Client Reference",
    label_member: "Member",
    caption_training: "Training members",

    button_sign_on: "Sign On",
    button_search: "Search",
    button_open_account: "Submit Request",
    button_review_transfer: "Continue to Review",
    button_post_transfer: "Post Transfer",
    button_find_transfer: "Find Transfer",

    link_open_subaccount: "Open Sub-Account",
    link_transfer: "Transfer Funds",
    link_new_search: "New Search",
    link_cancel: "Cancel",
    link_return_to_member: "Return to Member",
    nav_member_search: "Member Search",
    nav_find_transfer: "Find Transfer",
    nav_reports: "Reports",
    nav_administration: "Administration",
    nav_sign_off: "Sign Off",

    field_operator_id: "opr_id",
    field_password: "opr_pass",
    field_member_number: "member_num",
    field_account_type: "acct_kind",
    field_initial_deposit: "open_amt",
    field_from_account: "src_acct",
    field_to_account: "dst_acct",
    field_amount: "xfer_amt",
    field_client_reference: "xfer_memo",

    class_input: "ng-inp",
    class_select: "ng-sel",
    class_button: "ng-act",
    class_label_cell: "ng-k",
    class_value_cell: "ng-v",
    class_layout: "ng-shell",
    class_banner: "ng-brand",
    class_heading: "ng-h1",
    class_section: "ng-h2",
    class_form_table: "ng-kv",
    class_grid: "ng-grid",
    class_training: "ng-demo",
    class_link: "ng-a",
    class_message: "ng-note",
    class_error: "ng-alert",
    class_nav_link: "ng-nav",
    class_nav_disabled: "ng-nav-off",

    stylesheet: "body{font-family:Verdana,Geneva,sans-serif;font-size:11px;margin:0}\
.ng-shell{background:#f4f1e8}.ng-brand{background:#2d5016;color:#fff;font-weight:bold;padding:5px}\
.ng-h1{font-size:14px;margin:4px 0}.ng-h2{font-size:12px;margin:8px 0 2px}\
.ng-k{font-weight:bold;padding-right:8px}.ng-inp{width:150px}\
.ng-act{background:#2d5016;color:#fff}.ng-grid th{background:#dfe8d0;text-align:left}\
.ng-demo{color:#777;font-size:10px}.ng-note{color:#2d5016}.ng-alert{color:#a00}\
.ng-nav-off{color:#aaa}",
};

#[cfg(test)]
mod tests {
    use super::*;

    fn check_parse(text: &str, expect: Result<Variant, &str>) {
        let parsed = text.parse::<Variant>().map_err(|error| error.to_string());
        assert_eq!(parsed, expect.map_err(str::to_owned), "parsing {text:?}");
    }

    #[test]
    fn parses_variant_names() {
        check_parse("first-valley", Ok(Variant::FirstValley));
        check_parse("northgate-fcu", Ok(Variant::NorthgateFcu));
        check_parse(
            "base",
            Err("unknown variant `base` (valid variants: first-valley, northgate-fcu)"),
        );
        check_parse(
            "First-Valley",
            Err("unknown variant `First-Valley` (valid variants: first-valley, northgate-fcu)"),
        );
    }

    #[test]
    fn names_round_trip() {
        for variant in Variant::ALL {
            assert_eq!(variant.to_string().parse::<Variant>().ok(), Some(variant));
        }
    }

    /// The contract promises that every form field name and every CSS class differs between
    /// variants, so that every CSS hint written against one is dead on the other.
    #[test]
    fn every_field_name_and_class_differs() {
        let base = Variant::FirstValley.skin();
        let other = Variant::NorthgateFcu.skin();
        let pairs = [
            (base.field_operator_id, other.field_operator_id),
            (base.field_password, other.field_password),
            (base.field_member_number, other.field_member_number),
            (base.field_account_type, other.field_account_type),
            (base.field_initial_deposit, other.field_initial_deposit),
            (base.field_from_account, other.field_from_account),
            (base.field_to_account, other.field_to_account),
            (base.field_amount, other.field_amount),
            (base.field_client_reference, other.field_client_reference),
            (base.class_input, other.class_input),
            (base.class_select, other.class_select),
            (base.class_button, other.class_button),
            (base.class_label_cell, other.class_label_cell),
            (base.class_value_cell, other.class_value_cell),
            (base.class_layout, other.class_layout),
            (base.class_banner, other.class_banner),
            (base.class_heading, other.class_heading),
            (base.class_section, other.class_section),
            (base.class_form_table, other.class_form_table),
            (base.class_grid, other.class_grid),
            (base.class_training, other.class_training),
            (base.class_link, other.class_link),
            (base.class_message, other.class_message),
            (base.class_error, other.class_error),
            (base.class_nav_link, other.class_nav_link),
            (base.class_nav_disabled, other.class_nav_disabled),
        ];
        for (base_name, other_name) in pairs {
            assert_ne!(base_name, other_name);
            assert!(!other.stylesheet.contains(&format!(".{base_name}{{")));
        }
        assert_eq!(base.field_member_number, "memno");
        assert_eq!(other.field_member_number, "member_num");
        assert_eq!((base.class_input, other.class_input), ("frmfld", "ng-inp"));
        assert_eq!((base.class_button, other.class_button), ("btn1", "ng-act"));
    }
}
