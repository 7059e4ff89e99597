//! Escapers for every place generated TypeScript holds text that came from an artifact: string
//! literals, `//` comments, CSS strings (the frame selector) and regex-literal characters.
//!
//! Artifact text is untrusted: a title, a control's name or an input's example may hold quotes,
//! backslashes, line breaks, `${`, U+2028/U+2029 (line terminators to JavaScript) or invisible
//! bidi controls that would make the file read differently from how it runs. Each escaper
//! returns text that means exactly the input in its context, and shows invisible characters as
//! escapes a reviewer can see.

use std::fmt::Write as _;

/// A single-quoted TypeScript string literal that evaluates to exactly `text`.
///
/// `${` is written `$\{` (the same two characters) so that the text stays inert even if the
/// literal is ever moved into a template.
pub fn ts_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '$' if chars.peek() == Some(&'{') => out.push_str("$\\"),
            c if is_invisible(c) => push_unicode_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Text for a `//` comment: it can never end the comment (line terminators become spaces) and
/// shows invisible characters as `\u{…}`.
pub fn comment_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\u{2028}' | '\u{2029}' | '\t' => out.push(' '),
            c if is_invisible(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A double-quoted CSS string that denotes exactly `text` (for `frame[name="…"]`).
pub fn css_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            // A hex escape ends at the space after it, which CSS consumes.
            c if c.is_control() || is_invisible(c) => {
                let _ = write!(out, "\\{:x} ", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Appends `c` to a JavaScript regex source in `u` mode so that it matches itself: escaped
/// when it is syntax (outside or inside a class), when it is `/` (the literal's delimiter),
/// and when it is a line terminator or invisible.
pub(crate) fn push_regex_char(out: &mut String, c: char, in_class: bool) {
    let syntax = if in_class {
        matches!(c, '\\' | ']' | '[' | '^' | '-' | '/')
    } else {
        matches!(
            c,
            '^' | '$'
                | '\\'
                | '.'
                | '*'
                | '+'
                | '?'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '|'
                | '/'
        )
    };
    match c {
        c if syntax => {
            out.push('\\');
            out.push(c);
        }
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if is_invisible(c) => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// Characters a reader cannot see or that change how the line around them reads: controls,
/// JavaScript line terminators, whitespace other than the space, and Unicode format
/// characters (bidi overrides and isolates, zero-width characters, the byte-order mark).
pub(crate) fn is_invisible(c: char) -> bool {
    c.is_control()
        || (c != ' ' && c.is_whitespace())
        || matches!(
            c,
            '\u{ad}'
                | '\u{34f}'
                | '\u{61c}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{17b4}'
                | '\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff0}'..='\u{fffb}'
                | '\u{e0000}'..='\u{e0fff}'
        )
}

fn push_unicode_escape(out: &mut String, c: char) {
    let code = u32::from(c);
    if code <= 0xffff {
        let _ = write!(out, "\\u{code:04x}");
    } else {
        let _ = write!(out, "\\u{{{code:x}}}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(escape: fn(&str) -> String, input: &str, expected: &str) {
        assert_eq!(escape(input), expected, "escaping {input:?}");
    }

    #[test]
    fn ts_strings_mean_exactly_their_text() {
        for (input, expected) in [
            ("Member Number", "'Member Number'"),
            ("", "''"),
            ("O'Brien", r"'O\'Brien'"),
            (r#"say "hi""#, r#"'say "hi"'"#),
            (r"C:\temp\new", r"'C:\\temp\\new'"),
            ("line\nbreak\r\n", r"'line\nbreak\r\n'"),
            ("tab\there", r"'tab\there'"),
            ("${process.exit(1)}", r"'$\{process.exit(1)}'"),
            ("$4,210.55 and $ {", "'$4,210.55 and $ {'"),
            ("a\u{2028}b\u{2029}c", r"'a\u2028b\u2029c'"),
            ("nul\0", r"'nul\u0000'"),
            ("rtl\u{202e}txt", r"'rtl\u202etxt'"),
            ("zero\u{200b}width", r"'zero\u200bwidth'"),
            ("nbsp\u{a0}here", r"'nbsp\u00a0here'"),
            ("tag\u{e0041}", r"'tag\u{e0041}'"),
            ("Café Zürich 東京", "'Café Zürich 東京'"),
            ("'; process.exit(1); '", r"'\'; process.exit(1); \''"),
            ("</script>", "'</script>'"),
        ] {
            check(ts_string, input, expected);
        }
    }

    #[test]
    fn comments_cannot_be_ended_from_inside() {
        for (input, expected) in [
            ("Look up a balance", "Look up a balance"),
            ("title\nprocess.exit(1)", "title process.exit(1)"),
            ("a\r\nb", "a  b"),
            ("a\u{2028}b\u{2029}c", "a b c"),
            ("*/ still a comment", "*/ still a comment"),
            ("bidi\u{202e}gnirts", r"bidi\u{202e}gnirts"),
            ("bell\u{7}", r"bell\u{7}"),
        ] {
            check(comment_text, input, expected);
        }
    }

    #[test]
    fn css_strings_mean_exactly_their_text() {
        for (input, expected) in [
            ("content", r#""content""#),
            (r#"a"b"#, r#""a\"b""#),
            (r"a\b", r#""a\\b""#),
            ("a\nb", r#""a\a b""#),
            ("]'); alert(1); ('", r#""]'); alert(1); ('""#),
        ] {
            check(css_string, input, expected);
        }
    }

    #[test]
    fn regex_characters_match_themselves() {
        let escape_outside = |text: &str| {
            let mut out = String::new();
            for c in text.chars() {
                push_regex_char(&mut out, c, false);
            }
            out
        };
        let escape_inside = |text: &str| {
            let mut out = String::new();
            for c in text.chars() {
                push_regex_char(&mut out, c, true);
            }
            out
        };
        for (input, outside, inside) in [
            ("abc", "abc", "abc"),
            ("$4.00", r"\$4\.00", "$4.00"),
            ("a/b", r"a\/b", r"a\/b"),
            ("[x]-^", r"\[x\]-\^", r"\[x\]\-\^"),
            ("(?:{1})|", r"\(\?:\{1\}\)\|", "(?:{1})|"),
            ("\\", r"\\", r"\\"),
            ("a\nb\u{2028}", r"a\nb\u{2028}", r"a\nb\u{2028}"),
        ] {
            assert_eq!(escape_outside(input), outside, "outside a class: {input:?}");
            assert_eq!(escape_inside(input), inside, "inside a class: {input:?}");
        }
    }
}
