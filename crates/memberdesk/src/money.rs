//! Money as whole cents: parsing what an operator types, and the two renderings the app uses
//! (`$4,210.55` on pages, `4210.55` in JSON).

use std::fmt;
use std::str::FromStr;

use crate::FixtureError;

/// An amount of money in whole cents. Balances never go negative in the app, but the type does
/// not forbid it so arithmetic stays total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Money {
    cents: i64,
}

impl Money {
    /// The largest amount an operator may type: 999,999,999.99.
    pub const MAX_TYPED: Money = Money::from_cents(99_999_999_999);

    /// Builds an amount from whole cents.
    pub const fn from_cents(cents: i64) -> Self {
        Self { cents }
    }

    /// The amount in whole cents.
    pub const fn cents(self) -> i64 {
        self.cents
    }

    /// The plain decimal form used in JSON: `4210.55`, `0.00`, `-1.05`.
    pub fn decimal(self) -> String {
        let sign = if self.cents < 0 { "-" } else { "" };
        let magnitude = self.cents.unsigned_abs();
        format!("{sign}{}.{:02}", magnitude / 100, magnitude % 100)
    }

    /// Adds, or `None` on overflow.
    pub fn checked_add(self, other: Money) -> Option<Money> {
        self.cents.checked_add(other.cents).map(Money::from_cents)
    }

    /// Subtracts, or `None` on overflow.
    pub fn checked_sub(self, other: Money) -> Option<Money> {
        self.cents.checked_sub(other.cents).map(Money::from_cents)
    }
}

/// The page form: `$4,210.55`, `$0.00`, `-$1.05`.
impl fmt::Display for Money {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.cents < 0 { "-" } else { "" };
        let magnitude = self.cents.unsigned_abs();
        let dollars = (magnitude / 100).to_string();
        let mut grouped = String::with_capacity(dollars.len() + dollars.len() / 3);
        for (index, digit) in dollars.chars().enumerate() {
            if index > 0 && (dollars.len() - index).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(digit);
        }
        write!(formatter, "{sign}${grouped}.{:02}", magnitude % 100)
    }
}

/// Parses what an operator types: `25`, `25.5`, `4210.55`, `$4,210.55`, surrounding spaces
/// allowed. Negative amounts, more than two decimals and amounts above [`Money::MAX_TYPED`] are
/// refused.
impl FromStr for Money {
    type Err = FixtureError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || FixtureError::InvalidAmount {
            given: text.to_owned(),
        };
        let trimmed = text.trim();
        let unsigned = trimmed.strip_prefix('$').unwrap_or(trimmed);
        let digits: String = unsigned.chars().filter(|&c| c != ',').collect();
        let (whole, fraction) = match digits.split_once('.') {
            Some((whole, fraction)) => (whole, fraction),
            None => (digits.as_str(), ""),
        };
        let all_digits = |part: &str| part.chars().all(|c| c.is_ascii_digit());
        if whole.is_empty() && fraction.is_empty()
            || !all_digits(whole)
            || !all_digits(fraction)
            || fraction.len() > 2
            || whole.len() > 12
        {
            return Err(invalid());
        }
        let whole_cents: i64 = if whole.is_empty() {
            0
        } else {
            whole.parse::<i64>().map_err(|_| invalid())? * 100
        };
        let fraction_cents: i64 = match fraction.len() {
            0 => 0,
            1 => fraction.parse::<i64>().map_err(|_| invalid())? * 10,
            _ => fraction.parse::<i64>().map_err(|_| invalid())?,
        };
        let amount = Money::from_cents(whole_cents + fraction_cents);
        if amount > Money::MAX_TYPED {
            return Err(invalid());
        }
        Ok(amount)
    }
}

impl serde::Serialize for Money {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.decimal())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_display(cents: i64, page: &str, decimal: &str) {
        let money = Money::from_cents(cents);
        assert_eq!(money.to_string(), page, "page form of {cents}");
        assert_eq!(money.decimal(), decimal, "decimal form of {cents}");
    }

    #[test]
    fn renders_page_and_decimal_forms() {
        check_display(0, "$0.00", "0.00");
        check_display(5, "$0.05", "0.05");
        check_display(81_230, "$812.30", "812.30");
        check_display(421_055, "$4,210.55", "4210.55");
        check_display(1_873_000, "$18,730.00", "18730.00");
        check_display(100_000_000, "$1,000,000.00", "1000000.00");
        check_display(-105, "-$1.05", "-1.05");
    }

    fn check_parse(text: &str, expect: Option<i64>) {
        let parsed = text.parse::<Money>().ok().map(Money::cents);
        assert_eq!(parsed, expect, "parsing {text:?}");
    }

    #[test]
    fn parses_what_operators_type() {
        check_parse("25", Some(2_500));
        check_parse("25.5", Some(2_550));
        check_parse("25.05", Some(2_505));
        check_parse(" 4210.55 ", Some(421_055));
        check_parse("$4,210.55", Some(421_055));
        check_parse(".5", Some(50));
        check_parse("0", Some(0));
        check_parse("999999999.99", Some(99_999_999_999));
        check_parse("1000000000", None);
        check_parse("", None);
        check_parse(".", None);
        check_parse("-5", None);
        check_parse("1.005", None);
        check_parse("12a", None);
        check_parse("1e3", None);
        check_parse("$", None);
    }

    #[test]
    fn parse_error_names_the_input() {
        let error = "abc".parse::<Money>().expect_err("not an amount");
        assert_eq!(error.to_string(), "invalid amount `abc`");
    }
}
