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
/// (`2026-09-30T22:07:14.687487Z`). Only instants from year 0000 to jiff's last one
/// (`9999-12-30T22:00:00Z`) are representable, so the text form always has the same width and
/// sorts like the instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    unix_micros: i64,
}

impl Timestamp {
    /// The Unix epoch, `1970-01-01T00:00:00.000000Z`.
    pub const UNIX_EPOCH: Timestamp = Timestamp { unix_micros: 0 };

    /// The instant `unix_micros` microseconds after the Unix epoch, if it is one a document may
    /// carry ([`cua_artifact::FIRST_INSTANT_MICROS`] to [`cua_artifact::LAST_INSTANT_MICROS`]).
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

    /// Parses an RFC 3339 instant as [`cua_artifact::parse_instant`] reads one: the form
    /// [`Display`](fmt::Display) writes (`YYYY-MM-DDTHH:MM:SS.ffffffZ`), and any other offset
    /// or fraction width; finer than a microsecond is refused rather than rounded.
    pub fn parse(text: &str) -> Result<Self, EvidenceError> {
        cua_artifact::parse_instant(text)
            .ok()
            .and_then(Self::from_unix_micros)
            .ok_or_else(|| EvidenceError::InvalidTimestamp {
                text: text.to_owned(),
            })
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        // In jiff's range by construction.
        let instant =
            jiff::Timestamp::from_microsecond(self.unix_micros).map_err(|_| fmt::Error)?;
        write!(formatter, "{}", instant.strftime("%Y-%m-%dT%H:%M:%S.%6fZ"))
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

/// The instants a [`Timestamp`] holds: the years 0000 to 9999 as jiff represents them.
const MIN_MICROS: i64 = cua_artifact::FIRST_INSTANT_MICROS;
const MAX_MICROS: i64 = cua_artifact::LAST_INSTANT_MICROS;

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
            (MAX_MICROS, "9999-12-30T22:00:00.000000Z"),
        ];
        for (micros, text) in cases {
            let timestamp = Timestamp::from_unix_micros(micros).unwrap();
            assert_eq!(timestamp.to_string(), text);
            assert_eq!(Timestamp::parse(text).unwrap(), timestamp, "{text}");
        }
    }

    #[test]
    fn reads_any_rfc_3339_instant_and_refuses_anything_else() {
        let instant = Timestamp::parse("2026-09-30T22:07:14.687487Z").unwrap();
        for same in [
            "2026-09-30T22:07:14.687487+00:00",
            "2026-10-01T00:07:14.687487+02:00",
            "2026-09-30T22:07:14.687487000Z",
        ] {
            assert_eq!(Timestamp::parse(same).unwrap(), instant, "{same}");
        }
        assert_eq!(
            Timestamp::parse("2026-09-30T22:07:14Z")
                .unwrap()
                .to_string(),
            "2026-09-30T22:07:14.000000Z"
        );
        for text in [
            "",
            "2026-02-29T00:00:00.000000Z",
            "2026-13-01T00:00:00.000000Z",
            "2026-09-30T24:00:00.000000Z",
            "2026-09-3OT22:07:14.687487Z",
            "2026-09-30T22:07:14.6874871Z",
            "2026-09-30T22:07:14",
            "2026-09-30 22:07:14Z",
            "2026-09-30T22:07:60Z",
            "20260930T220714Z",
            "2026-09-30T22Z",
            "2026-09-30T22:07:14Z[Europe/Paris]",
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
