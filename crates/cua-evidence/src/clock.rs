//! Time as the evidence bus sees it: an injected [`Clock`] and the [`Timestamp`] it returns.
//!
//! The bus never reads the system clock itself. Production wires [`SystemClock`]; tests wire a
//! [`FixedClock`] or a [`SteppingClock`], so the same events give byte-identical traces.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::EvidenceError;

/// A UTC instant with microsecond precision, written as RFC 3339
/// (`2026-09-30T22:07:14.687487Z`). Only years 0000 to 9999 are representable, so the text
/// form always has the same width and sorts like the instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    unix_micros: i64,
}

impl Timestamp {
    /// The Unix epoch, `1970-01-01T00:00:00.000000Z`.
    pub const UNIX_EPOCH: Timestamp = Timestamp { unix_micros: 0 };

    /// The instant `unix_micros` microseconds after the Unix epoch, if its year is in
    /// 0000..=9999.
    pub fn from_unix_micros(unix_micros: i64) -> Option<Self> {
        (MIN_MICROS..=MAX_MICROS)
            .contains(&unix_micros)
            .then_some(Self { unix_micros })
    }

    /// Microseconds since the Unix epoch.
    pub fn unix_micros(self) -> i64 {
        self.unix_micros
    }

    /// Whole milliseconds from `earlier` to `self`; negative if `earlier` is later.
    pub fn millis_since(self, earlier: Timestamp) -> i64 {
        (self.unix_micros - earlier.unix_micros).div_euclid(1_000)
    }

    /// Parses the exact form [`Display`](fmt::Display) writes: `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
    pub fn parse(text: &str) -> Result<Self, EvidenceError> {
        parse_rfc3339(text).ok_or_else(|| EvidenceError::InvalidTimestamp {
            text: text.to_owned(),
        })
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.unix_micros.div_euclid(1_000_000);
        let micros = self.unix_micros.rem_euclid(1_000_000);
        let days = seconds.div_euclid(86_400);
        let second_of_day = seconds.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        write!(
            formatter,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}Z",
            second_of_day / 3_600,
            second_of_day % 3_600 / 60,
            second_of_day % 60,
        )
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Where the bus gets the `at` of each trace line.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The real clock: the system's wall time, in UTC.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| {
                i64::try_from(elapsed.as_micros()).unwrap_or(MAX_MICROS)
            });
        Timestamp {
            unix_micros: micros.clamp(0, MAX_MICROS),
        }
    }
}

/// A clock that always answers the same instant.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub Timestamp);

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        self.0
    }
}

/// A clock that starts at an instant and advances by a fixed step on every reading, so a test
/// trace has distinct, increasing, reproducible times.
#[derive(Debug)]
pub struct SteppingClock {
    start: Timestamp,
    step_micros: i64,
    readings: AtomicI64,
}

impl SteppingClock {
    /// A clock whose first reading is `start` and each later one `step_micros` after the last.
    pub fn new(start: Timestamp, step_micros: i64) -> Self {
        Self {
            start,
            step_micros,
            readings: AtomicI64::new(0),
        }
    }
}

impl Clock for SteppingClock {
    fn now(&self) -> Timestamp {
        let reading = self.readings.fetch_add(1, Ordering::Relaxed);
        let micros = reading
            .saturating_mul(self.step_micros)
            .saturating_add(self.start.unix_micros);
        Timestamp {
            unix_micros: micros.clamp(MIN_MICROS, MAX_MICROS),
        }
    }
}

/// `0000-01-01T00:00:00Z`.
const MIN_MICROS: i64 = -62_167_219_200 * 1_000_000;
/// `9999-12-31T23:59:59.999999Z`.
const MAX_MICROS: i64 = 253_402_300_800 * 1_000_000 - 1;

/// Year, month and day of a day count since 1970-01-01 (proleptic Gregorian; Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The inverse of [`civil_from_days`].
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_index = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    let bytes = text.as_bytes();
    if bytes.len() != 27 {
        return None;
    }
    let separators = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (26, b'Z'),
    ];
    if separators
        .iter()
        .any(|&(index, expected)| bytes[index] != expected)
    {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = &bytes[range];
        digits.iter().all(u8::is_ascii_digit).then(|| {
            digits
                .iter()
                .fold(0_i64, |value, digit| value * 10 + i64::from(digit - b'0'))
        })
    };
    let year = number(0..4)?;
    let month = number(5..7)?;
    let day = number(8..10)?;
    let hour = number(11..13)?;
    let minute = number(14..16)?;
    let second = number(17..19)?;
    let micros = number(20..26)?;
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if day < 1 || day > days_in_month || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second;
    Timestamp::from_unix_micros(seconds * 1_000_000 + micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_round_trip() {
        let cases = [
            (0, "1970-01-01T00:00:00.000000Z"),
            (1_790_000_000_123_456, "2026-09-21T14:13:20.123456Z"),
            (951_782_400_000_001, "2000-02-29T00:00:00.000001Z"),
            (-1, "1969-12-31T23:59:59.999999Z"),
            (MIN_MICROS, "0000-01-01T00:00:00.000000Z"),
            (MAX_MICROS, "9999-12-31T23:59:59.999999Z"),
        ];
        for (micros, text) in cases {
            let timestamp = Timestamp::from_unix_micros(micros).unwrap();
            assert_eq!(timestamp.to_string(), text);
            assert_eq!(Timestamp::parse(text).unwrap(), timestamp, "{text}");
        }
    }

    #[test]
    fn refuses_anything_but_the_written_form() {
        for text in [
            "",
            "2026-09-30T22:07:14Z",
            "2026-09-30T22:07:14.687487+00:00",
            "2026-02-29T00:00:00.000000Z",
            "2026-13-01T00:00:00.000000Z",
            "2026-09-30T24:00:00.000000Z",
            "2026-09-30 22:07:14.687487Z",
            "2026-09-3OT22:07:14.687487Z",
        ] {
            assert!(Timestamp::parse(text).is_err(), "{text}");
        }
        assert!(Timestamp::from_unix_micros(MAX_MICROS + 1).is_none());
    }

    #[test]
    fn stepping_clock_advances_per_reading() {
        let clock = SteppingClock::new(Timestamp::UNIX_EPOCH, 1_500);
        let readings: Vec<String> = (0..3).map(|_| clock.now().to_string()).collect();
        assert_eq!(
            readings,
            [
                "1970-01-01T00:00:00.000000Z",
                "1970-01-01T00:00:00.001500Z",
                "1970-01-01T00:00:00.003000Z",
            ]
        );
        let fixed = FixedClock(Timestamp::UNIX_EPOCH);
        assert_eq!(fixed.now(), fixed.now());
        assert!(SystemClock.now() > Timestamp::UNIX_EPOCH);
    }
}
