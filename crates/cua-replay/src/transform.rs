//! Extract transforms: screen text to an output value. A text that does not read as the
//! declared shape is refused, never guessed at.

use cua_artifact::Transform;
use cua_snapshot::{read_money, squash_whitespace};

use crate::values::is_calendar_date;

/// Applies `transform` to extracted text; `None` passes the text through, whitespace squashed.
pub fn apply(transform: Option<Transform>, text: &str) -> Result<String, String> {
    let text = squash_whitespace(text);
    match transform {
        None => Ok(text),
        Some(Transform::Money) => {
            read_money(&text).ok_or_else(|| format!("{text:?} does not read as an amount of money"))
        }
        Some(Transform::Date) => date(&text),
    }
}

/// `09/11/2026` → `2026-09-11`; an ISO date passes unchanged.
fn date(text: &str) -> Result<String, String> {
    let refuse = || format!("{text:?} does not read as a date (MM/DD/YYYY)");
    if crate::values::is_iso_date(text) {
        return Ok(text.to_owned());
    }
    let parts: Vec<&str> = text.split('/').collect();
    let [month, day, year] = parts.as_slice() else {
        return Err(refuse());
    };
    let number = |part: &str, widths: &[usize]| -> Option<u32> {
        (widths.contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit()))
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(month), Some(day), Some(year)) = (
        number(month, &[1, 2]),
        number(day, &[1, 2]),
        number(year, &[4]),
    ) else {
        return Err(refuse());
    };
    if !is_calendar_date(year, month, day) {
        return Err(refuse());
    }
    Ok(format!("{year:04}-{month:02}-{day:02}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(transform: Option<Transform>, text: &str, expect: Option<&str>) {
        assert_eq!(
            apply(transform, text).ok().as_deref(),
            expect,
            "{transform:?} {text:?}"
        );
    }

    #[test]
    fn money_reads_amounts_and_refuses_the_rest() {
        let money = Some(Transform::Money);
        check(money, "$4,210.55", Some("4210.55"));
        check(money, "$18,730.00", Some("18730.00"));
        check(money, "$0.00", Some("0.00"));
        check(money, " $1,000,000.10 ", Some("1000000.10"));
        check(money, "-$12.00", Some("-12.00"));
        check(money, "$-12.00", Some("-12.00"));
        check(money, "($12.00)", Some("-12.00"));
        check(money, "812.30", Some("812.30"));
        check(money, "$42,10.55", None);
        check(money, "$4,210.", None);
        check(money, "Active", None);
        check(money, "", None);
        check(money, "$", None);
        check(money, "--$1.00", None);
    }

    #[test]
    fn dates_become_iso() {
        let date = Some(Transform::Date);
        check(date, "09/11/2026", Some("2026-09-11"));
        check(date, "9/1/2026", Some("2026-09-01"));
        check(date, "2026-09-11", Some("2026-09-11"));
        check(date, "02/29/2026", None);
        check(date, "13/01/2026", None);
        check(date, "09/11/26", None);
        check(date, "Sept 11", None);
        check(None, "  Active \u{a0}", Some("Active"));
    }
}
