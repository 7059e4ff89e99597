//! Name and role normalization shared by every matcher, so that "the same name" means one thing.

/// Collapses runs of whitespace (including NBSP) to one space and trims the ends.
pub fn squash_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(|c: char| c.is_whitespace() || c == '\u{a0}') {
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The name as a person reads it: whitespace squashed and a trailing label colon or required
/// marker (`Member Number:*`) removed. Case is kept.
pub fn normalize_name(name: &str) -> String {
    let squashed = squash_whitespace(name);
    squashed
        .trim_end_matches(|c: char| c == ':' || c == '*' || c.is_whitespace())
        .to_string()
}

/// The folded form used by the normalized rung: lower case, ASCII alphanumerics and other
/// letters kept, everything else dropped. Not fuzzy: "Member #" and "Member Number" differ.
pub fn fold(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Maps a surface's raw role onto cua's vocabulary, so that descriptors say `cell`, `row`,
/// `text`, `textbox`, `combobox` whichever driver observed the page.
pub fn normalize_role(raw: &str) -> String {
    let role = match raw {
        "LayoutTableCell" | "gridcell" | "DataItem" => "cell",
        "LayoutTableRow" | "DataGridRow" => "row",
        "LayoutTable" | "grid" | "DataGrid" => "table",
        "StaticText" | "Text" => "text",
        "RootWebArea" | "WebArea" => "document",
        "searchbox" | "Edit" => "textbox",
        "listbox" | "ComboBox" | "PopUpButton" => "combobox",
        "Hyperlink" => "link",
        "Button" => "button",
        "columnheader" | "rowheader" => "cell",
        "Iframe" | "IframePresentational" => "iframe",
        other => other,
    };
    role.to_ascii_lowercase()
}

/// Roles that carry no meaning for targeting and are dropped from snapshots.
pub fn is_noise_role(role: &str) -> bool {
    matches!(
        role,
        "linebreak"
            | "inlinetextbox"
            | "none"
            | "presentation"
            | "generic"
            | "lineBreak"
            | "InlineTextBox"
            | "LineBreak"
            | "ignored"
            | "Ignored"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, normalized: &str, folded: &str) {
        assert_eq!(
            normalize_name(input),
            normalized,
            "normalize_name({input:?})"
        );
        assert_eq!(fold(input), folded, "fold({input:?})");
    }

    #[test]
    fn names_normalize_and_fold() {
        check("Member Number", "Member Number", "membernumber");
        check(
            "  Member\u{a0}\u{a0}Number:* ",
            "Member Number",
            "membernumber",
        );
        check("Savings Bal.", "Savings Bal.", "savingsbal");
        check("Member #", "Member #", "member");
        check("", "", "");
    }

    #[test]
    fn roles_alias_to_one_vocabulary() {
        for (raw, expected) in [
            ("LayoutTableCell", "cell"),
            ("StaticText", "text"),
            ("RootWebArea", "document"),
            ("searchbox", "textbox"),
            ("listbox", "combobox"),
            ("button", "button"),
            ("menulistpopup", "menulistpopup"),
        ] {
            assert_eq!(normalize_role(raw), expected, "{raw}");
        }
        assert!(is_noise_role("inlinetextbox"));
        assert!(!is_noise_role("cell"));
    }
}
