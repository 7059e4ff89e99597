//! Regexes of the `regex` crate (the syntax artifacts use) rewritten for JavaScript.
//!
//! The translation walks the pattern's syntax tree and writes a JavaScript source for the `u`
//! flag, where escapes are strict and `\p{…}` exists. It keeps the `regex` crate's meaning, not
//! just its spelling: `.` stops only at `\n` (JavaScript's also stops at `\r`, U+2028 and
//! U+2029), and `\d`, `\s`, `\w` are Unicode classes (JavaScript's are ASCII). What has no
//! faithful equivalent is refused with the reason: inline flags, word boundaries, Unicode
//! classes other than general categories, and class set operations.

use regex_syntax::ast::{
    self, AssertionKind, Ast, ClassAsciiKind, ClassPerl, ClassPerlKind, ClassSet, ClassSetItem,
    ClassUnicode, ClassUnicodeKind, GroupKind, RepetitionKind, RepetitionRange,
};

use crate::codegen::escape::push_regex_char;

/// A JavaScript regex literal, `/source/u`, matching what `pattern` matches in the `regex`
/// crate; or why there is none.
pub fn js_regex_literal(pattern: &str) -> Result<String, String> {
    Ok(format!("/{}/u", js_regex_source(pattern)?))
}

/// The source of [`js_regex_literal`], for a `u`-flag `RegExp`.
pub(crate) fn js_regex_source(pattern: &str) -> Result<String, String> {
    regex::Regex::new(pattern).map_err(|error| {
        format!(
            "{pattern:?} is not a valid regex: {}",
            error.to_string().lines().last().unwrap_or_default().trim()
        )
    })?;
    let parsed = ast::parse::Parser::new()
        .parse(pattern)
        .map_err(|error| format!("{pattern:?} is not a valid regex: {}", error.kind()))?;
    let mut source = String::with_capacity(pattern.len() + 8);
    write(&parsed, &mut source)
        .map_err(|reason| format!("regex {pattern:?} has no JavaScript equivalent: {reason}"))?;
    if source.is_empty() {
        // `//` would open a comment.
        source.push_str("(?:)");
    }
    Ok(source)
}

/// Where the characters `stands_for` matches (values' stand-ins) appear in `pattern`: how many
/// stand as literals outside any class, and whether one is inside a character class, where a
/// value bound as literal text has no meaning.
pub(crate) fn stand_ins(pattern: &str, stands_for: fn(char) -> bool) -> Result<StandIns, String> {
    struct Finder {
        stands_for: fn(char) -> bool,
        found: StandIns,
    }
    impl ast::Visitor for Finder {
        type Output = StandIns;
        type Err = std::convert::Infallible;

        fn finish(self) -> Result<StandIns, Self::Err> {
            Ok(self.found)
        }

        fn visit_pre(&mut self, node: &Ast) -> Result<(), Self::Err> {
            if let Ast::Literal(literal) = node
                && (self.stands_for)(literal.c)
            {
                self.found.literals += 1;
            }
            Ok(())
        }

        fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), Self::Err> {
            let literal = |literal: &ast::Literal| (self.stands_for)(literal.c);
            self.found.in_a_class |= match item {
                ClassSetItem::Literal(one) => literal(one),
                ClassSetItem::Range(range) => literal(&range.start) || literal(&range.end),
                _ => false,
            };
            Ok(())
        }
    }
    let parsed = ast::parse::Parser::new()
        .parse(pattern)
        .map_err(|error| format!("{pattern:?} is not a valid regex: {}", error.kind()))?;
    let Ok(found) = ast::visit(
        &parsed,
        Finder {
            stands_for,
            found: StandIns::default(),
        },
    );
    Ok(found)
}

/// What [`stand_ins`] found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StandIns {
    /// Stand-ins as literals outside classes.
    pub(crate) literals: usize,
    /// Whether any stand-in is inside a character class.
    pub(crate) in_a_class: bool,
}

/// `\w` of the `regex` crate (Unicode, UTS #18), as class items.
const WORD_ITEMS: &str = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}";

/// The general categories JavaScript's `\p{…}` and the `regex` crate both know by these names.
const GENERAL_CATEGORIES: [&str; 37] = [
    "L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No", "P", "Pc",
    "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp", "C",
    "Cc", "Cf", "Co", "Cn", "LC",
];

fn write(node: &Ast, out: &mut String) -> Result<(), String> {
    match node {
        Ast::Empty(_) => {}
        Ast::Flags(flags) => {
            return Err(format!(
                "inline flags `(?{})` (JavaScript takes flags only on the whole literal)",
                flags_text(&flags.flags)
            ));
        }
        Ast::Literal(literal) => push_regex_char(out, literal.c, false),
        Ast::Dot(_) => out.push_str(r"[^\n]"),
        Ast::Assertion(assertion) => match assertion.kind {
            AssertionKind::StartLine | AssertionKind::StartText => out.push('^'),
            AssertionKind::EndLine | AssertionKind::EndText => out.push('$'),
            _ => {
                return Err(
                    "word boundaries (`\\b`, `\\B`) are Unicode-aware in the regex crate and ASCII in JavaScript"
                        .to_owned(),
                );
            }
        },
        Ast::ClassUnicode(class) => out.push_str(&unicode_class(class)?),
        Ast::ClassPerl(class) => out.push_str(&perl_class(class)),
        Ast::ClassBracketed(class) => {
            out.push('[');
            if class.negated {
                out.push('^');
            }
            class_set(&class.kind, out)?;
            out.push(']');
        }
        Ast::Repetition(repetition) => {
            write(&repetition.ast, out)?;
            match &repetition.op.kind {
                RepetitionKind::ZeroOrOne => out.push('?'),
                RepetitionKind::ZeroOrMore => out.push('*'),
                RepetitionKind::OneOrMore => out.push('+'),
                RepetitionKind::Range(RepetitionRange::Exactly(count)) => {
                    out.push_str(&format!("{{{count}}}"));
                }
                RepetitionKind::Range(RepetitionRange::AtLeast(count)) => {
                    out.push_str(&format!("{{{count},}}"));
                }
                RepetitionKind::Range(RepetitionRange::Bounded(low, high)) => {
                    out.push_str(&format!("{{{low},{high}}}"));
                }
            }
            if !repetition.greedy {
                out.push('?');
            }
        }
        Ast::Group(group) => {
            match &group.kind {
                GroupKind::CaptureIndex(_) => out.push('('),
                GroupKind::CaptureName { name, .. } => {
                    let valid = name
                        .name
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                        && name
                            .name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_');
                    if !valid {
                        return Err(format!(
                            "the group name {:?} is not a JavaScript identifier",
                            name.name
                        ));
                    }
                    out.push_str(&format!("(?<{}>", name.name));
                }
                GroupKind::NonCapturing(flags) => {
                    if !flags.items.is_empty() {
                        return Err(format!(
                            "inline flags `(?{}:…)` (JavaScript takes flags only on the whole literal)",
                            flags_text(flags)
                        ));
                    }
                    out.push_str("(?:");
                }
            }
            write(&group.ast, out)?;
            out.push(')');
        }
        Ast::Alternation(alternation) => {
            for (position, branch) in alternation.asts.iter().enumerate() {
                if position > 0 {
                    out.push('|');
                }
                write(branch, out)?;
            }
        }
        Ast::Concat(concat) => {
            for part in &concat.asts {
                write(part, out)?;
            }
        }
    }
    Ok(())
}

fn class_set(set: &ClassSet, out: &mut String) -> Result<(), String> {
    match set {
        ClassSet::Item(item) => class_item(item, out),
        ClassSet::BinaryOp(_) => {
            Err("class set operations (`&&`, `--`, `~~`) need JavaScript's `v` flag".to_owned())
        }
    }
}

fn class_item(item: &ClassSetItem, out: &mut String) -> Result<(), String> {
    match item {
        ClassSetItem::Empty(_) => {}
        ClassSetItem::Literal(literal) => push_regex_char(out, literal.c, true),
        ClassSetItem::Range(range) => {
            push_regex_char(out, range.start.c, true);
            out.push('-');
            push_regex_char(out, range.end.c, true);
        }
        ClassSetItem::Ascii(ascii) => {
            if ascii.negated {
                return Err("a negated ASCII class inside brackets (`[[:^…:]]`)".to_owned());
            }
            out.push_str(ascii_items(&ascii.kind));
        }
        ClassSetItem::Unicode(class) => out.push_str(&unicode_class(class)?),
        ClassSetItem::Perl(class) => {
            if class.negated && class.kind == ClassPerlKind::Word {
                return Err(
                    "`\\W` inside brackets (its Unicode form is a negated union)".to_owned(),
                );
            }
            match class.kind {
                ClassPerlKind::Word => out.push_str(WORD_ITEMS),
                _ => out.push_str(&perl_class(class)),
            }
        }
        ClassSetItem::Bracketed(inner) => {
            if inner.negated {
                return Err("a negated class nested in brackets".to_owned());
            }
            class_set(&inner.kind, out)?;
        }
        ClassSetItem::Union(union) => {
            for item in &union.items {
                class_item(item, out)?;
            }
        }
    }
    Ok(())
}

fn perl_class(class: &ClassPerl) -> String {
    let (positive, negative) = match class.kind {
        ClassPerlKind::Digit => (r"\p{Nd}".to_owned(), r"\P{Nd}".to_owned()),
        ClassPerlKind::Space => (r"\p{White_Space}".to_owned(), r"\P{White_Space}".to_owned()),
        ClassPerlKind::Word => (format!("[{WORD_ITEMS}]"), format!("[^{WORD_ITEMS}]")),
    };
    if class.negated { negative } else { positive }
}

fn unicode_class(class: &ClassUnicode) -> Result<String, String> {
    let name = match &class.kind {
        ClassUnicodeKind::OneLetter(letter) => letter.to_string(),
        ClassUnicodeKind::Named(name) => name.clone(),
        ClassUnicodeKind::NamedValue { name, value, .. } => {
            return Err(format!(
                "the Unicode class `{name}={value}` (only general categories translate)"
            ));
        }
    };
    if !GENERAL_CATEGORIES.contains(&name.as_str()) {
        return Err(format!(
            "the Unicode class `{name}` (only general categories such as L, Lu, Nd translate)"
        ));
    }
    let escape = if class.is_negated() { 'P' } else { 'p' };
    Ok(format!("\\{escape}{{{name}}}"))
}

fn ascii_items(kind: &ClassAsciiKind) -> &'static str {
    match kind {
        ClassAsciiKind::Alnum => "0-9A-Za-z",
        ClassAsciiKind::Alpha => "A-Za-z",
        ClassAsciiKind::Ascii => r"\u{0}-\u{7f}",
        ClassAsciiKind::Blank => r"\t ",
        ClassAsciiKind::Cntrl => r"\u{0}-\u{1f}\u{7f}",
        ClassAsciiKind::Digit => "0-9",
        ClassAsciiKind::Graph => "!-~",
        ClassAsciiKind::Lower => "a-z",
        ClassAsciiKind::Print => " -~",
        ClassAsciiKind::Punct => r"!-\/:-@\[-`{-~",
        ClassAsciiKind::Space => r"\t\n\u{b}\f\r ",
        ClassAsciiKind::Upper => "A-Z",
        ClassAsciiKind::Word => "0-9A-Za-z_",
        ClassAsciiKind::Xdigit => "0-9A-Fa-f",
    }
}

fn flags_text(flags: &ast::Flags) -> String {
    flags
        .items
        .iter()
        .map(|item| match &item.kind {
            ast::FlagsItemKind::Negation => '-',
            ast::FlagsItemKind::Flag(flag) => match flag {
                ast::Flag::CaseInsensitive => 'i',
                ast::Flag::MultiLine => 'm',
                ast::Flag::DotMatchesNewLine => 's',
                ast::Flag::SwapGreed => 'U',
                ast::Flag::Unicode => 'u',
                ast::Flag::CRLF => 'R',
                ast::Flag::IgnoreWhitespace => 'x',
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pattern: &str, expected: Result<&str, &str>) {
        let actual = js_regex_literal(pattern);
        match expected {
            Ok(literal) => assert_eq!(actual.as_deref(), Ok(literal), "translating {pattern:?}"),
            Err(reason) => {
                let error = actual.expect_err(pattern);
                assert!(
                    error.contains(reason),
                    "translating {pattern:?}: {error:?} should say {reason:?}"
                );
            }
        }
    }

    #[test]
    fn patterns_translate_with_their_meaning() {
        for (pattern, expected) in [
            (r"^\$[0-9,]+\.[0-9]{2}$", r"/^\$[0-9,]+\.[0-9]{2}$/u"),
            (r"^(?:[0-9]{4,10})$", r"/^(?:[0-9]{4,10})$/u"),
            (r"^SA-[0-9]+-[A-Z]{3}$", r"/^SA-[0-9]+-[A-Z]{3}$/u"),
            (r"^TF-\d{6}$", r"/^TF-\p{Nd}{6}$/u"),
            (r"a.b", r"/a[^\n]b/u"),
            (r"\s+\S", r"/\p{White_Space}+\P{White_Space}/u"),
            (
                r"\w+",
                r"/[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+/u",
            ),
            (
                r"[\w-]",
                r"/[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}\-]/u",
            ),
            (r"\A\d\z", r"/^\p{Nd}$/u"),
            (r"a/b", r"/a\/b/u"),
            (r"[/]", r"/[\/]/u"),
            (r"\-\#\ ", r"/-# /u"),
            (r"(?P<id>\d+)|x*?", r"/(?<id>\p{Nd}+)|x*?/u"),
            (r"[[:alpha:][:digit:]_]", r"/[A-Za-z0-9_]/u"),
            (r"[^a-c]", r"/[^a-c]/u"),
            (r"\pL\p{Lu}\PN", r"/\p{L}\p{Lu}\P{N}/u"),
            (r"x{2,}", r"/x{2,}/u"),
            ("", "/(?:)/u"),
            (r"\n\x41\u{2028}", r"/\nA\u{2028}/u"),
        ] {
            check(pattern, Ok(expected));
        }
    }

    #[test]
    fn patterns_without_an_equivalent_are_refused_with_the_reason() {
        for (pattern, reason) in [
            (r"(?i)status", "inline flags `(?i)`"),
            (r"(?i:status)", "inline flags `(?i:…)`"),
            (r"\bword\b", "word boundaries"),
            (r"\p{Greek}", "the Unicode class `Greek`"),
            (r"[a-z&&[^aeiou]]", "class set operations"),
            (r"[\W]", "`\\W` inside brackets"),
            (r"[[:^alpha:]]", "negated ASCII class"),
            (r"(unclosed", "is not a valid regex"),
        ] {
            check(pattern, Err(reason));
        }
    }
}
