//! The operators and their tokens. A token is presented in a request header (never a cookie,
//! so a cross-site page cannot ride on it); the operator it names is who the server's audit
//! trail records.

use http::HeaderMap;
use http::header::AUTHORIZATION;

use crate::error::{AccessError, Refusal};

/// The shortest token accepted from an operators file.
pub const MIN_TOKEN_CHARS: usize = 24;

/// The operators and their tokens.
#[derive(Clone)]
pub struct Access {
    operators: Vec<(String, String)>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("operators", &self.names())
            .finish()
    }
}

impl Access {
    /// One operator, `operator`, with a fresh random token (the caller prints it once at
    /// start).
    pub fn generated(operator: &str) -> Result<(Self, String), AccessError> {
        let mut bytes = [0_u8; 24];
        getrandom::fill(&mut bytes).map_err(|error| AccessError::Randomness {
            reason: error.to_string(),
        })?;
        let token: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        Ok((
            Self {
                operators: vec![(operator.to_owned(), token.clone())],
            },
            token,
        ))
    }

    /// Named operators with their tokens. Names are non-empty letters, digits, `.`, `_`, `-`;
    /// tokens are at least [`MIN_TOKEN_CHARS`] long, without spaces, and distinct.
    pub fn named(operators: Vec<(String, String)>) -> Result<Self, AccessError> {
        if operators.is_empty() {
            return Err(AccessError::NoOperator);
        }
        for (index, (name, token)) in operators.iter().enumerate() {
            let valid_name = !name.is_empty()
                && name.len() <= 64
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !valid_name {
                return Err(AccessError::BadOperatorName { name: name.clone() });
            }
            if token.chars().count() < MIN_TOKEN_CHARS || token.chars().any(char::is_whitespace) {
                return Err(AccessError::WeakToken { name: name.clone() });
            }
            if operators[..index].iter().any(|(_, other)| other == token) {
                return Err(AccessError::SharedToken { name: name.clone() });
            }
        }
        Ok(Self { operators })
    }

    /// The operators of an operators file: one `name: token` per line; blank lines and lines
    /// starting with `#` are skipped.
    pub fn from_operators_file(text: &str) -> Result<Self, AccessError> {
        let mut operators = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((name, token)) = line.split_once(':') else {
                return Err(AccessError::NotAnOperatorLine { line: index + 1 });
            };
            operators.push((name.trim().to_owned(), token.trim().to_owned()));
        }
        Self::named(operators)
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

    /// The operator a request acts as, or why it is refused: no token, or no operator's.
    pub fn authenticate(&self, presented: Option<&str>) -> Result<&str, Refusal> {
        let presented = presented.ok_or(Refusal::MissingToken)?;
        self.operator_for(presented).ok_or(Refusal::WrongToken)
    }

    /// The operators' names.
    pub fn names(&self) -> Vec<&str> {
        self.operators
            .iter()
            .map(|(name, _)| name.as_str())
            .collect()
    }
}

/// The token of an `Authorization: Bearer <token>` header, if the request has one.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
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

    use http::HeaderValue;

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

    #[test]
    fn authentication_says_whether_a_token_was_missing_or_wrong() {
        let (access, token) = Access::generated("agent").unwrap();
        assert_eq!(access.authenticate(Some(&token)), Ok("agent"));
        assert_eq!(access.authenticate(None), Err(Refusal::MissingToken));
        assert_eq!(
            access.authenticate(Some(&format!("{token}x"))),
            Err(Refusal::WrongToken)
        );
    }

    #[test]
    fn an_operators_file_is_read_line_by_line() {
        let ada = "a".repeat(30);
        let grace = "g".repeat(30);
        let access =
            Access::from_operators_file(&format!("# who may\n\nada: {ada}\n  grace:{grace}  \n"))
                .unwrap();
        assert_eq!(access.names(), ["ada", "grace"]);
        assert_eq!(access.operator_for(&grace), Some("grace"));
        for (text, message) in [
            ("", "the operators file names no operator"),
            ("# nobody\n", "the operators file names no operator"),
            (
                "ada: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\njust-a-token\n",
                "line 2: expected `operator: token`",
            ),
            (
                "ada: short\n",
                "the token of ada must be at least 24 characters without spaces",
            ),
        ] {
            let error = Access::from_operators_file(text).unwrap_err();
            assert_eq!(error.to_string(), message, "{text:?}");
        }
    }

    #[test]
    fn only_a_bearer_authorization_presents_a_token() {
        let check = |value: &str, expect: Option<&str>| {
            let mut headers = HeaderMap::new();
            headers.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            assert_eq!(bearer_token(&headers), expect, "{value:?}");
        };
        check("Bearer abc", Some("abc"));
        check("Basic abc", None);
        check("abc", None);
        check("Bearer", None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }
}
