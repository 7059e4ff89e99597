//! Who may use the console: named operators, each with a token. A token is presented in a
//! request header (never a cookie, so a cross-site page cannot ride on it), or, for the live
//! view's WebSocket, in its subprotocol list. The operator a token names is who the audit trail
//! (lease events, authorize reasons) records.

use crate::error::ConsoleError;

/// The shortest token accepted from an operators file.
pub const MIN_TOKEN_CHARS: usize = 24;

/// The operators and their tokens.
#[derive(Clone)]
pub struct Access {
    operators: Vec<(String, String)>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .operators
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        f.debug_struct("Access").field("operators", &names).finish()
    }
}

impl Access {
    /// One operator, `operator`, with a fresh random token (printed once at start).
    pub fn generated(operator: &str) -> Result<(Self, String), ConsoleError> {
        let mut bytes = [0_u8; 24];
        getrandom::fill(&mut bytes).map_err(|error| ConsoleError::BadRequest {
            reason: format!("no randomness for a token: {error}"),
        })?;
        let token: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        Ok((
            Self {
                operators: vec![(operator.to_owned(), token.clone())],
            },
            token,
        ))
    }

    /// Named operators with their tokens (from an operators file). Names are non-empty
    /// letters, digits, `.`, `_`, `-`; tokens are at least [`MIN_TOKEN_CHARS`] long and
    /// distinct.
    pub fn named(operators: Vec<(String, String)>) -> Result<Self, ConsoleError> {
        if operators.is_empty() {
            return Err(ConsoleError::BadRequest {
                reason: "the operators file names no operator".to_owned(),
            });
        }
        for (index, (name, token)) in operators.iter().enumerate() {
            let valid_name = !name.is_empty()
                && name.len() <= 64
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !valid_name {
                return Err(ConsoleError::BadRequest {
                    reason: format!("operator name {name:?} is not letters, digits, `.`, `_`, `-`"),
                });
            }
            if token.chars().count() < MIN_TOKEN_CHARS || token.chars().any(char::is_whitespace) {
                return Err(ConsoleError::BadRequest {
                    reason: format!(
                        "the token of {name} must be at least {MIN_TOKEN_CHARS} characters without spaces"
                    ),
                });
            }
            if operators[..index].iter().any(|(_, other)| other == token) {
                return Err(ConsoleError::BadRequest {
                    reason: format!("the token of {name} is also another operator's"),
                });
            }
        }
        Ok(Self { operators })
    }

    /// The operator a presented token names. Every token is compared in constant time.
    pub fn operator_for(&self, presented: &str) -> Option<&str> {
        let mut found = None;
        for (name, token) in &self.operators {
            if constant_time_eq(token.as_bytes(), presented.as_bytes()) {
                found = Some(name.as_str());
            }
        }
        found
    }

    /// The operators' names.
    pub fn names(&self) -> Vec<&str> {
        self.operators
            .iter()
            .map(|(name, _)| name.as_str())
            .collect()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0_u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn tokens_name_their_operator() {
        let (access, token) = Access::generated("operator").unwrap();
        assert_eq!(token.len(), 48);
        assert_eq!(access.operator_for(&token), Some("operator"));
        assert_eq!(access.operator_for(""), None);
        assert_eq!(access.operator_for(&token[1..]), None);
        let named = Access::named(vec![
            ("ada".into(), "a".repeat(30)),
            ("grace".into(), "g".repeat(30)),
        ])
        .unwrap();
        assert_eq!(named.operator_for(&"g".repeat(30)), Some("grace"));
        assert!(Access::named(vec![("ada".into(), "short".into())]).is_err());
        assert!(Access::named(vec![("a b".into(), "a".repeat(30))]).is_err());
        assert!(
            Access::named(vec![
                ("ada".into(), "a".repeat(30)),
                ("eve".into(), "a".repeat(30))
            ])
            .is_err()
        );
    }
}
