//! What a value looks like: money, a date, a number, an identifier, or free text; and the input
//! pattern one example suggests.

use std::sync::LazyLock;

use cua_artifact::{Transform, ValueType};
use regex::Regex;

/// The shape of a value seen once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `$4,210.55`, `-12.00`.
    Money,
    /// `09/11/2026` or `2026-09-11`.
    Date,
    /// Digits only.
    Digits,
    /// Letters, digits and punctuation such as `S-12345-01`.
    Code,
    Text,
}

/// The regex a money-shaped screen value matches.
pub const MONEY_PATTERN: &str = r"^\$?-?[0-9,]+\.[0-9]{2}$";
/// The regex a date-shaped screen value matches.
pub const DATE_PATTERN: &str = r"^([0-9]{2}/[0-9]{2}/[0-9]{4}|[0-9]{4}-[0-9]{2}-[0-9]{2})$";

static MONEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(MONEY_PATTERN).expect("the money pattern is a valid regex"));
static DATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(DATE_PATTERN).expect("the date pattern is a valid regex"));

impl Shape {
    /// The shape of `text`.
    pub fn of(text: &str) -> Self {
        let text = text.trim();
        if MONEY.is_match(text) {
            Self::Money
        } else if DATE.is_match(text) {
            Self::Date
        } else if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()) {
            Self::Digits
        } else if !text.is_empty()
            && text.chars().any(|c| c.is_ascii_digit())
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/' | '.'))
        {
            Self::Code
        } else {
            Self::Text
        }
    }

    /// The output type a value of this shape becomes.
    pub fn value_type(self) -> ValueType {
        match self {
            Self::Money => ValueType::Money,
            Self::Date => ValueType::Date,
            Self::Digits | Self::Code | Self::Text => ValueType::String,
        }
    }

    /// The transform an extract of this shape applies.
    pub fn transform(self) -> Option<Transform> {
        match self {
            Self::Money => Some(Transform::Money),
            Self::Date => Some(Transform::Date),
            Self::Digits | Self::Code | Self::Text => None,
        }
    }

    /// The regex a checkpoint asserts a screen value of this shape matches, if the shape is
    /// specific enough to assert.
    pub fn screen_pattern(self) -> Option<&'static str> {
        match self {
            Self::Money => Some(MONEY_PATTERN),
            Self::Date => Some(DATE_PATTERN),
            Self::Digits | Self::Code | Self::Text => None,
        }
    }
}

/// The input pattern one example suggests: digit runs keep a little slack (`12345` →
/// `^[0-9]{4,10}$`), codes keep their punctuation and run lengths (`S-12345-01` →
/// `^[A-Z]-[0-9]{5}-[0-9]{2}$`), money is money; free text gets no pattern.
pub fn infer_pattern(example: &str) -> Option<String> {
    match Shape::of(example) {
        Shape::Digits => {
            let length = example.trim().len();
            let low = length.saturating_sub(1).max(1);
            Some(format!("^[0-9]{{{low},{}}}$", length + 5))
        }
        Shape::Money => Some(MONEY_PATTERN.to_owned()),
        Shape::Date => Some(DATE_PATTERN.to_owned()),
        Shape::Code => {
            let mut pattern = String::from("^");
            let mut chars = example.trim().chars().peekable();
            while let Some(c) = chars.next() {
                let class = if c.is_ascii_digit() {
                    "[0-9]"
                } else if c.is_ascii_uppercase() {
                    "[A-Z]"
                } else if c.is_ascii_lowercase() {
                    "[a-z]"
                } else {
                    if matches!(c, '-' | '_' | '/') {
                        pattern.push(c);
                    } else {
                        pattern.push_str(&regex::escape(&c.to_string()));
                    }
                    continue;
                };
                let mut run = 1;
                while chars.peek().is_some_and(|next| same_class(c, *next)) {
                    chars.next();
                    run += 1;
                }
                pattern.push_str(class);
                if run > 1 {
                    pattern.push_str(&format!("{{{run}}}"));
                }
            }
            pattern.push('$');
            Some(pattern)
        }
        Shape::Text => None,
    }
}

fn same_class(a: char, b: char) -> bool {
    (a.is_ascii_digit() && b.is_ascii_digit())
        || (a.is_ascii_uppercase() && b.is_ascii_uppercase())
        || (a.is_ascii_lowercase() && b.is_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(example: &str, shape: Shape, pattern: Option<&str>) {
        assert_eq!(Shape::of(example), shape, "{example}");
        assert_eq!(infer_pattern(example).as_deref(), pattern, "{example}");
        if let Some(pattern) = pattern {
            assert!(
                Regex::new(pattern).unwrap().is_match(example),
                "{pattern} !~ {example}"
            );
        }
    }

    #[test]
    fn shapes_and_patterns_follow_the_example() {
        check("12345", Shape::Digits, Some("^[0-9]{4,10}$"));
        check("S-12345-01", Shape::Code, Some("^[A-Z]-[0-9]{5}-[0-9]{2}$"));
        check("$4,210.55", Shape::Money, Some(MONEY_PATTERN));
        check("09/11/2026", Shape::Date, Some(DATE_PATTERN));
        check("Ada Lovelace", Shape::Text, None);
        assert_eq!(Shape::Money.transform(), Some(Transform::Money));
    }
}
