//! Key names (`Enter`, `Tab`, `a`, `Control+a`) to CDP key events.

/// One key press, ready for `Input.dispatchKeyEvent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyPress {
    pub(crate) key: String,
    pub(crate) code: String,
    pub(crate) virtual_key: i64,
    /// Text the key inserts, when it inserts any and no command modifier is held.
    pub(crate) text: Option<String>,
    /// CDP modifier bits: Alt 1, Control 2, Meta 4, Shift 8.
    pub(crate) modifiers: i64,
}

/// Parses a DOM key name with optional `+`-separated modifiers. `None` for an unknown key.
pub(crate) fn parse(spec: &str) -> Option<KeyPress> {
    let mut parts: Vec<&str> = spec.split('+').collect();
    // `+` itself, alone or after modifiers (`Shift++`), is the key.
    let key = if spec.ends_with("++") || spec == "+" {
        parts.retain(|part| !part.is_empty());
        "+"
    } else {
        parts.pop()?
    };
    let mut modifiers = 0;
    for modifier in parts {
        modifiers |= match modifier.to_ascii_lowercase().as_str() {
            "alt" => 1,
            "control" | "ctrl" => 2,
            "meta" | "cmd" | "command" => 4,
            "shift" => 8,
            _ => return None,
        };
    }
    let named = |key: &str, code: &str, virtual_key: i64, text: Option<&str>| KeyPress {
        key: key.to_string(),
        code: code.to_string(),
        virtual_key,
        text: text.map(str::to_string),
        modifiers,
    };
    let press = match key {
        "Enter" | "Return" => named("Enter", "Enter", 13, Some("\r")),
        "Tab" => named("Tab", "Tab", 9, None),
        "Escape" | "Esc" => named("Escape", "Escape", 27, None),
        "Backspace" => named("Backspace", "Backspace", 8, None),
        "Delete" => named("Delete", "Delete", 46, None),
        "Space" | " " => named(" ", "Space", 32, Some(" ")),
        "ArrowLeft" => named("ArrowLeft", "ArrowLeft", 37, None),
        "ArrowUp" => named("ArrowUp", "ArrowUp", 38, None),
        "ArrowRight" => named("ArrowRight", "ArrowRight", 39, None),
        "ArrowDown" => named("ArrowDown", "ArrowDown", 40, None),
        "Home" => named("Home", "Home", 36, None),
        "End" => named("End", "End", 35, None),
        "PageUp" => named("PageUp", "PageUp", 33, None),
        "PageDown" => named("PageDown", "PageDown", 34, None),
        "Insert" => named("Insert", "Insert", 45, None),
        function if function.starts_with('F') && function.len() <= 3 => {
            let number: i64 = function[1..]
                .parse()
                .ok()
                .filter(|n| (1..=12).contains(n))?;
            named(function, function, 111 + number, None)
        }
        single => {
            let mut chars = single.chars();
            let c = chars.next()?;
            if chars.next().is_some() {
                return None;
            }
            let (code, virtual_key) = if c.is_ascii_alphabetic() {
                (
                    format!("Key{}", c.to_ascii_uppercase()),
                    i64::from(c.to_ascii_uppercase() as u8),
                )
            } else if c.is_ascii_digit() {
                (format!("Digit{c}"), i64::from(c as u8))
            } else {
                (String::new(), 0)
            };
            KeyPress {
                key: c.to_string(),
                code,
                virtual_key,
                text: Some(c.to_string()),
                modifiers,
            }
        }
    };
    // A command chord (Control, Alt, Meta) inserts no text.
    Some(KeyPress {
        text: press.text.filter(|_| modifiers & 0b111 == 0),
        ..press
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names() {
        let enter = parse("Enter").unwrap();
        assert_eq!((enter.virtual_key, enter.text.as_deref()), (13, Some("\r")));
        let select_all = parse("Control+a").unwrap();
        assert_eq!(
            (
                select_all.code.as_str(),
                select_all.modifiers,
                select_all.text
            ),
            ("KeyA", 2, None)
        );
        let shifted = parse("Shift+A").unwrap();
        assert_eq!((shifted.modifiers, shifted.text.as_deref()), (8, Some("A")));
        assert_eq!(parse("+").unwrap().key, "+");
        assert_eq!(parse("Shift++").unwrap().modifiers, 8);
        assert_eq!(parse("F5").unwrap().virtual_key, 116);
        assert!(parse("NoSuchKey").is_none());
        assert!(parse("Hyper+a").is_none());
        assert!(parse("F13").is_none());
    }
}
