//! The client reference a transfer may carry: the caller's own memo for it, up to 40 letters,
//! digits and dashes. The core system stores and shows it, and finds transfers by it, but never
//! deduplicates by it: posting twice with one reference posts two transfers, as in the core
//! systems this fixture imitates. Keeping a reference to exactly one transfer is the caller's job.

use std::fmt;
use std::str::FromStr;

use crate::FixtureError;

/// A valid client reference: 1 to [`ClientReference::MAX_LEN`] characters, each an ASCII letter,
/// digit or `-`. Compared exactly (case-sensitive).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientReference(String);

impl ClientReference {
    /// The most characters a client reference may hold.
    pub const MAX_LEN: usize = 40;

    /// The reference as typed.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Parses exactly what is given: no trimming, no case folding.
impl FromStr for ClientReference {
    type Err = FixtureError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let allowed = |character: char| character.is_ascii_alphanumeric() || character == '-';
        if text.is_empty() || text.len() > Self::MAX_LEN || !text.chars().all(allowed) {
            return Err(FixtureError::InvalidClientReference {
                given: text.to_owned(),
            });
        }
        Ok(Self(text.to_owned()))
    }
}

impl fmt::Display for ClientReference {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl serde::Serialize for ClientReference {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expect: Result<&str, &str>) {
        let parsed = text
            .parse::<ClientReference>()
            .map(|reference| reference.as_str().to_owned())
            .map_err(|error| error.to_string());
        assert_eq!(
            parsed,
            expect.map(str::to_owned).map_err(str::to_owned),
            "parsing {text:?}"
        );
    }

    #[test]
    fn accepts_up_to_40_letters_digits_and_dashes() {
        check("idem-7f3a", Ok("idem-7f3a"));
        check("A", Ok("A"));
        check("-", Ok("-"));
        check(
            "0123456789-abcdefghijklmnopqrstuvwxyzABC",
            Ok("0123456789-abcdefghijklmnopqrstuvwxyzABC"),
        );
        let too_long = "a".repeat(41);
        let refused = |given: &str| {
            format!("invalid client reference `{given}` (up to 40 letters, digits and dashes)")
        };
        check(&too_long, Err(&refused(&too_long)));
        check("", Err(&refused("")));
        check(" idem", Err(&refused(" idem")));
        check("idem_1", Err(&refused("idem_1")));
        check("idem 1", Err(&refused("idem 1")));
        check("idem.1", Err(&refused("idem.1")));
        check("réf", Err(&refused("réf")));
        check("<script>", Err(&refused("<script>")));
    }
}
