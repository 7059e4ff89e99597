//! Money as money: screen text such as `$4,210.55` read as an amount, so that a check of an
//! amount never depends on the currency symbol or the grouping a page prints.

/// Reads `text` as an amount of money, without its currency sign and grouping: `$4,210.55` →
/// `4210.55`; `-$12.00`, `$-12.00` and `($12.00)` → `-12.00`; `$0.00` → `0.00`. Grouping
/// commas must sit every three digits; anything else is `None`, never a guess.
pub fn read_money(text: &str) -> Option<String> {
    let text = text.trim();
    let (negative, body) = if let Some(inner) = text
        .strip_prefix('(')
        .and_then(|rest| rest.strip_suffix(')'))
    {
        (true, inner)
    } else if let Some(rest) = text.strip_prefix('-') {
        (true, rest)
    } else {
        (false, text)
    };
    let body = body.strip_prefix('$').unwrap_or(body);
    let (negative, body) = match body.strip_prefix('-') {
        Some(rest) if !negative => (true, rest),
        Some(_) => return None,
        None => (negative, body),
    };
    let amount = plain_amount(body)?;
    Some(if negative {
        format!("-{amount}")
    } else {
        amount
    })
}

/// Whether two texts read as the same amount: `$99,999.00`, `99999.00` and `99999` are one
/// amount; text that is not money equals nothing.
pub fn same_money(left: &str, right: &str) -> bool {
    match (read_money(left), read_money(right)) {
        (Some(left), Some(right)) => canonical(&left) == canonical(&right),
        _ => false,
    }
}

/// Whether screen text shows `expected` as an amount: the text must look like money as a page
/// prints it (a currency sign, or cents after a decimal point), so a bare number such as a
/// member number `12345` never stands for the amount `12345.00`.
pub fn shows_money(screen: &str, expected: &str) -> bool {
    let text = screen.trim();
    let has_cents = text
        .trim_end_matches(')')
        .rsplit_once('.')
        .is_some_and(|(_, cents)| cents.len() == 2 && cents.bytes().all(|b| b.is_ascii_digit()));
    (text.contains('$') || has_cents) && same_money(text, expected)
}

/// An amount from [`read_money`] with no leading zeros and no trailing fractional zeros, and
/// zero unsigned.
fn canonical(amount: &str) -> String {
    let (negative, body) = match amount.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, amount),
    };
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    let whole = whole.trim_start_matches('0');
    let fraction = fraction.trim_end_matches('0');
    let zero = whole.is_empty() && fraction.is_empty();
    let whole = if whole.is_empty() { "0" } else { whole };
    let sign = if negative && !zero { "-" } else { "" };
    if fraction.is_empty() {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{fraction}")
    }
}

/// `4,210.55` or `4210.55` or `4210` → the amount without grouping.
fn plain_amount(body: &str) -> Option<String> {
    let (whole, fraction) = match body.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (body, None),
    };
    if let Some(fraction) = fraction
        && (fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let groups: Vec<&str> = whole.split(',').collect();
    let grouped_right = groups.len() == 1
        || (!groups[0].is_empty()
            && groups[0].len() <= 3
            && groups[1..].iter().all(|group| group.len() == 3));
    let digits: String = groups.concat();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || !grouped_right {
        return None;
    }
    Some(match fraction {
        Some(fraction) => format!("{digits}.{fraction}"),
        None => digits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_amounts_and_refuses_the_rest() {
        let read = |text: &str| read_money(text);
        assert_eq!(read("$4,210.55").as_deref(), Some("4210.55"));
        assert_eq!(read(" $1,000,000.10 ").as_deref(), Some("1000000.10"));
        assert_eq!(read("-$12.00").as_deref(), Some("-12.00"));
        assert_eq!(read("$-12.00").as_deref(), Some("-12.00"));
        assert_eq!(read("($12.00)").as_deref(), Some("-12.00"));
        assert_eq!(read("812.30").as_deref(), Some("812.30"));
        for refused in [
            "$42,10.55",
            "$4,210.",
            "Active",
            "",
            "$",
            "--$1.00",
            "($-1.00)",
        ] {
            assert_eq!(read(refused), None, "{refused:?}");
        }
    }

    #[test]
    fn a_bare_number_on_screen_is_not_an_amount() {
        assert!(shows_money("$12,345.00", "12345.00"));
        assert!(shows_money("12345.00", "12345"));
        assert!(shows_money("($12.00)", "-12"));
        assert!(!shows_money("12345", "12345.00"));
        assert!(!shows_money("S-12345-01", "12345.00"));
        assert!(!shows_money("12345.0", "12345.00"));
    }

    #[test]
    fn compares_amounts_not_text() {
        assert!(same_money("$99,999.00", "99999.00"));
        assert!(same_money("99999", "$99,999.00"));
        assert!(same_money("$0.00", "-0"));
        assert!(same_money("0100.10", "100.1"));
        assert!(!same_money("$4,210.56", "4210.55"));
        assert!(!same_money("-$12.00", "12.00"));
        assert!(!same_money("Amount", "Amount"));
    }
}
