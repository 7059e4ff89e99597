//! Validated names: capability ids, versions, references, content hashes and the identifiers
//! documents use for inputs, outputs, steps, secrets and tenants.
//!
//! Every type here has private fields and is built only through its parser; `Deserialize` goes
//! through the same parser, so a value of one of these types is valid by construction.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ArtifactError;

/// Implements the string plumbing shared by every validated name: `as_str`, `Display`,
/// `FromStr`, serde through the parser, and a JSON Schema string with a pattern.
macro_rules! validated_string {
    ($name:ident, $pattern:literal, $description:literal) => {
        impl $name {
            /// The validated text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(&self.0)
            }
        }

        impl FromStr for $name {
            type Err = ArtifactError;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Self::parse(text)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = ArtifactError;

            fn try_from(text: &str) -> Result<Self, Self::Error> {
                Self::parse(text)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = Cow::<'de, str>::deserialize(deserializer)?;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }

            fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
                json_schema!({
                    "type": "string",
                    "pattern": $pattern,
                    "description": $description,
                })
            }
        }
    };
}

/// A capability id: `<vendor_product>.<domain>.<operation>`, lowercase dotted segments, each
/// `[a-z][a-z0-9_]*`, three or more of them. Ids are namespaced by product, never by tenant:
/// tenants bind a capability through an overlay, they do not fork its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CapabilityId(String);

impl CapabilityId {
    /// Parses an id, refusing anything but three or more lowercase dotted segments.
    pub fn parse(text: &str) -> Result<Self, ArtifactError> {
        let invalid = |reason: &str| ArtifactError::invalid_name("capability id", text, reason);
        if text.len() > 128 {
            return Err(invalid("is longer than 128 characters"));
        }
        let segments: Vec<&str> = text.split('.').collect();
        if segments.len() < 3 {
            return Err(invalid(
                "needs at least three dotted segments: <vendor_product>.<domain>.<operation>",
            ));
        }
        for segment in segments {
            if !is_snake_segment(segment) {
                return Err(invalid(
                    "each dotted segment must be lowercase letters, digits and `_`, starting \
                     with a letter",
                ));
            }
        }
        Ok(Self(text.to_owned()))
    }

    /// The first segment: the vendor product that namespaces the id.
    pub fn product(&self) -> &str {
        self.0.split('.').next().unwrap_or_default()
    }
}

validated_string!(
    CapabilityId,
    "^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*){2,}$",
    "<vendor_product>.<domain>.<operation>, lowercase dotted segments; namespaced by product, \
     never by tenant"
);

/// A name declared inside a document: an input, output, step, outcome code or recovery rule id,
/// a tenant var. Lowercase `[a-z][a-z0-9_]*`, at most 64 characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Identifier(String);

/// An input name.
pub type InputName = Identifier;
/// An output name.
pub type OutputName = Identifier;
/// A step id.
pub type StepId = Identifier;

impl Identifier {
    /// Parses an identifier.
    pub fn parse(text: &str) -> Result<Self, ArtifactError> {
        if text.len() > 64 {
            return Err(ArtifactError::invalid_name(
                "identifier",
                text,
                "is longer than 64 characters",
            ));
        }
        if !is_snake_segment(text) {
            return Err(ArtifactError::invalid_name(
                "identifier",
                text,
                "must be lowercase letters, digits and `_`, starting with a letter",
            ));
        }
        Ok(Self(text.to_owned()))
    }
}

validated_string!(
    Identifier,
    "^[a-z][a-z0-9_]{0,63}$",
    "a lowercase identifier: letters, digits and `_`, starting with a letter"
);

/// The name of a secret, resolved by the secret resolver at the moment of dispatch and never
/// written anywhere: dotted lowercase segments such as `corebank.operator_password`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SecretName(String);

impl SecretName {
    /// Parses a secret name.
    pub fn parse(text: &str) -> Result<Self, ArtifactError> {
        let valid = text.len() <= 128 && text.split('.').all(is_snake_segment);
        if !valid {
            return Err(ArtifactError::invalid_name(
                "secret name",
                text,
                "must be dotted lowercase segments such as `corebank.operator_password`",
            ));
        }
        Ok(Self(text.to_owned()))
    }

    /// The environment variable a secret resolver reads it from: the prefix, then the name
    /// upper-cased with dots turned into underscores (`CUA_SECRET_COREBANK_OPERATOR_ID`).
    pub fn env_var(&self, prefix: &str) -> String {
        let mut variable = String::with_capacity(prefix.len() + self.0.len());
        variable.push_str(prefix);
        variable.extend(self.0.chars().map(|c| {
            if c == '.' {
                '_'
            } else {
                c.to_ascii_uppercase()
            }
        }));
        variable
    }
}

validated_string!(
    SecretName,
    "^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$",
    "a secret's name, dotted lowercase segments; the value is resolved at dispatch and never stored"
);

/// A tenant: lowercase words joined by `-`, e.g. `northgate-fcu`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TenantId(String);

impl TenantId {
    /// Parses a tenant id.
    pub fn parse(text: &str) -> Result<Self, ArtifactError> {
        let valid = !text.is_empty()
            && text.len() <= 64
            && text.split('-').all(|word| {
                !word.is_empty()
                    && word
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            });
        if !valid {
            return Err(ArtifactError::invalid_name(
                "tenant id",
                text,
                "must be lowercase letters and digits in words joined by `-`",
            ));
        }
        Ok(Self(text.to_owned()))
    }
}

validated_string!(
    TenantId,
    "^[a-z0-9]+(-[a-z0-9]+)*$",
    "a tenant, lowercase words joined by `-`"
);

/// Where an application is served: `http` or `https`, a host (a name, an IPv4 address or a
/// bracketed IPv6 address) and an optional port, with nothing after: no path, query, fragment
/// or credentials. What `{base_url}` binds to, so a capability's URLs are this origin's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin(String);

impl Origin {
    /// Parses an origin such as `http://127.0.0.1:8811`.
    pub fn parse(text: &str) -> Result<Self, ArtifactError> {
        let invalid = |reason: &str| Err(ArtifactError::invalid_name("origin", text, reason));
        let Some(rest) = text
            .strip_prefix("http://")
            .or_else(|| text.strip_prefix("https://"))
        else {
            return invalid("must start with http:// or https://");
        };
        if let Some(extra) = rest.find(['/', '?', '#', '@', '\\']) {
            return invalid(&format!(
                "must be a scheme, a host and an optional port with nothing after (found `{}`)",
                &rest[extra..extra + 1]
            ));
        }
        let (host, port) = match rest.strip_prefix('[') {
            Some(bracketed) => {
                let Some((address, after)) = bracketed.split_once(']') else {
                    return invalid("an IPv6 host needs its closing `]`");
                };
                if address.parse::<core::net::Ipv6Addr>().is_err() {
                    return invalid("the bracketed host is not an IPv6 address");
                }
                match after {
                    "" => (address, None),
                    _ => match after.strip_prefix(':') {
                        Some(port) => (address, Some(port)),
                        None => return invalid("only `:PORT` may follow the host"),
                    },
                }
            }
            None => match rest.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (rest, None),
            },
        };
        let bracketed = rest.starts_with('[');
        let label = |label: &str| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        };
        if !bracketed && !host.split('.').all(label) {
            return invalid("the host must be dot-separated letters, digits and `-`");
        }
        if let Some(port) = port
            && !(port.chars().all(|c| c.is_ascii_digit())
                && port.parse::<u16>().is_ok_and(|port| port > 0))
        {
            return invalid("the port must be a number from 1 to 65535");
        }
        Ok(Self(text.to_owned()))
    }
}

validated_string!(
    Origin,
    "^https?://([A-Za-z0-9.-]+|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?$",
    "an origin: http or https, a host and an optional port, nothing after"
);

/// A content hash: `blake3:` and 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContentHash(String);

impl ContentHash {
    /// The algorithm prefix.
    pub const PREFIX: &'static str = "blake3:";

    /// Parses a hash. The empty string is not a hash: documents model "no hash yet" (a draft)
    /// as the absence of one.
    pub fn parse(text: &str) -> Result<Self, ArtifactError> {
        let digest = text.strip_prefix(Self::PREFIX).ok_or_else(|| {
            ArtifactError::invalid_name("content hash", text, "must start with `blake3:`")
        })?;
        let valid = digest.len() == 64
            && digest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !valid {
            return Err(ArtifactError::invalid_name(
                "content hash",
                text,
                "must be `blake3:` and 64 lowercase hex digits",
            ));
        }
        Ok(Self(text.to_owned()))
    }

    /// The hash of some bytes.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self(format!("{}{}", Self::PREFIX, blake3::hash(bytes).to_hex()))
    }

    /// The 64 hex digits without the prefix.
    pub fn hex(&self) -> &str {
        &self.0[Self::PREFIX.len()..]
    }
}

validated_string!(
    ContentHash,
    "^blake3:[0-9a-f]{64}$",
    "blake3 over the canonical form: key-sorted compact JSON of the document minus its hash"
);

/// A strict semantic version (parsed by the `semver` crate): `MAJOR.MINOR.PATCH` in ASCII
/// digits without leading zeros, with an optional pre-release (`1.0.0-rc.1`). Build metadata is
/// refused: two artifacts differing only in metadata would share a reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SemVer {
    text: String,
    version: semver::Version,
}

impl SemVer {
    /// Parses a version.
    pub fn parse(text: &str) -> Result<Self, ArtifactError> {
        let invalid = |reason: &str| ArtifactError::invalid_name("version", text, reason);
        if text.contains('+') {
            return Err(invalid("build metadata (`+…`) is not allowed"));
        }
        let version = semver::Version::parse(text).map_err(|error| {
            invalid(&format!(
                "{error} (a version is MAJOR.MINOR.PATCH, an optional `-pre.release`)"
            ))
        })?;
        Ok(Self {
            text: text.to_owned(),
            version,
        })
    }

    /// The version text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// `(major, minor, patch)`.
    pub fn numbers(&self) -> (u64, u64, u64) {
        (self.version.major, self.version.minor, self.version.patch)
    }

    /// Whether this is a pre-release.
    pub fn is_pre_release(&self) -> bool {
        !self.version.pre.is_empty()
    }
}

impl Ord for SemVer {
    /// Semantic-version precedence: numbers first, then a pre-release sorts before its release,
    /// then pre-release identifiers pairwise (numeric ones numerically, below alphanumeric ones).
    fn cmp(&self, other: &Self) -> Ordering {
        self.version.cmp(&other.version)
    }
}

impl PartialOrd for SemVer {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A range of application versions a capability was written against, `>=4.2 <5` (comparators
/// separated by spaces, as npm writes them, or by commas, as Cargo does), parsed by `semver`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRange(semver::VersionReq);

impl VersionRange {
    /// Parses a range.
    pub fn parse(text: &str) -> Result<Self, String> {
        let comparators: Vec<&str> = text
            .split(|character: char| character == ',' || character.is_whitespace())
            .filter(|part| !part.is_empty())
            .collect();
        // `>= 4.2` writes one comparator with a space: join an operator to its version.
        let mut joined: Vec<String> = Vec::new();
        for part in comparators {
            match joined.last_mut() {
                Some(last) if last.chars().all(|character| "<>=~^".contains(character)) => {
                    last.push_str(part);
                }
                _ => joined.push(part.to_owned()),
            }
        }
        if joined.is_empty() {
            return Err("the range is empty; write one such as `>=4.2 <5`".to_owned());
        }
        // A bare version means `4.2.x` to npm and `^4.2` to Cargo: refused, so a range says
        // what it means whichever way it is read.
        if let Some(bare) = joined
            .iter()
            .find(|comparator| comparator.starts_with(|character: char| character.is_ascii_digit()))
        {
            return Err(format!(
                "`{text}` has a version with no operator (`{bare}`), which npm and Cargo read differently"
            ));
        }
        semver::VersionReq::parse(&joined.join(", "))
            .map(Self)
            .map_err(|error| format!("`{text}` is not a version range: {error}"))
    }
}

impl fmt::Display for SemVer {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.text)
    }
}

impl FromStr for SemVer {
    type Err = ArtifactError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl Serialize for SemVer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for SemVer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<'de, str>::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for SemVer {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("SemVer")
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?$",
            "description": "strict semantic version MAJOR.MINOR.PATCH[-pre.release], no leading zeros, no build metadata",
        })
    }
}

/// A pinned capability: `id@version`. This is what approvals, evaluations, run records, tenant
/// bindings and `run_capability` remedies name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CapabilityRef {
    id: CapabilityId,
    version: SemVer,
}

impl CapabilityRef {
    /// Pins an id to a version.
    pub fn new(id: CapabilityId, version: SemVer) -> Self {
        Self { id, version }
    }

    /// Parses `id@version`.
    pub fn parse(text: &str) -> Result<Self, ArtifactError> {
        let (id, version) = text.split_once('@').ok_or_else(|| {
            ArtifactError::invalid_name("capability reference", text, "must be `id@version`")
        })?;
        Ok(Self {
            id: CapabilityId::parse(id)?,
            version: SemVer::parse(version)?,
        })
    }

    /// The id.
    pub fn id(&self) -> &CapabilityId {
        &self.id
    }

    /// The version.
    pub fn version(&self) -> &SemVer {
        &self.version
    }

    /// The catalog file name for this reference: `<id>@<version>.yaml`.
    pub fn file_name(&self) -> String {
        format!("{self}.yaml")
    }
}

impl fmt::Display for CapabilityRef {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}@{}", self.id, self.version)
    }
}

impl FromStr for CapabilityRef {
    type Err = ArtifactError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl Serialize for CapabilityRef {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CapabilityRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<'de, str>::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for CapabilityRef {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("CapabilityRef")
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*){2,}@(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?$",
            "description": "a pinned capability, `id@version`",
        })
    }
}

/// `[a-z][a-z0-9_]*`.
fn is_snake_segment(text: &str) -> bool {
    let mut bytes = text.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_ids() {
        assert!(CapabilityId::parse("corebank.member.savings_balance").is_ok());
        assert_eq!(
            CapabilityId::parse("corebank.member.x")
                .map(|id| id.product().to_owned())
                .ok(),
            Some("corebank".into())
        );
        for bad in [
            "corebank.member",
            "Corebank.member.x",
            "corebank..x",
            "corebank.member.x-y",
            "1bank.a.b",
            "",
        ] {
            assert!(CapabilityId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn origins() {
        for good in [
            "http://127.0.0.1:8811",
            "https://members.example-fcu.test",
            "http://localhost",
            "http://[::1]:38082",
            "http://[fe80::1]",
        ] {
            assert!(Origin::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "127.0.0.1:8811",
            "ftp://example.test",
            "http://",
            "http://example.test/",
            "http://example.test/admin",
            "http://example.test?next=/",
            "http://example.test#top",
            "http://user:pw@example.test",
            "http://evil.test\\@example.test",
            "http://example.test:0",
            "http://example.test:65536",
            "http://example.test:80a",
            "http://example.test:",
            "http://-example.test",
            "http://example..test",
            "http://exa mple.test",
            "http://[::1",
            "http://[::1]x",
            "http://[zz::1]",
            "http://[:]",
            "http://[...]",
            "http://[1]",
            "http://[fe80::1%25eth0]",
            "HTTP://example.test",
        ] {
            assert!(Origin::parse(bad).is_err(), "{bad}");
        }
        let error = Origin::parse("http://example.test/admin")
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid origin `http://example.test/admin`: must be a scheme, a host and an \
             optional port with nothing after (found `/`)"
        );
    }

    #[test]
    fn versions() {
        for good in [
            "0.0.0",
            "1.0.0",
            "10.20.30",
            "1.0.0-rc.1",
            "1.0.0-alpha-1.0",
        ] {
            assert!(SemVer::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "1.0",
            "01.0.0",
            "1.00.0",
            "1.0.0+build",
            "1.0.0-",
            "1.0.0-01",
            "v1.0.0",
            "1.0.0.0",
            "1.0.x",
        ] {
            assert!(SemVer::parse(bad).is_err(), "{bad}");
        }
        let order = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-beta",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.10.0",
        ];
        for pair in order.windows(2) {
            assert!(
                SemVer::parse(pair[0]).ok() < SemVer::parse(pair[1]).ok(),
                "{pair:?}"
            );
        }
    }

    #[test]
    fn version_ranges_read_as_npm_and_cargo_write_them() {
        let range = VersionRange::parse(">=4.2 <5").expect("npm style");
        assert_eq!(
            range,
            VersionRange::parse(">=4.2, <5").expect("cargo style")
        );
        assert_eq!(
            range,
            VersionRange::parse(">= 4.2 < 5").expect("spaced operators")
        );
        for bad in [
            "",
            ">=four",
            ">=4.2 <<5",
            "4.2 - 5",
            "latest",
            "4.2",
            ">=4.2 5",
        ] {
            assert!(VersionRange::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn references_and_hashes() {
        let reference = CapabilityRef::parse("corebank.auth.sign_on@1.0.0").expect("valid");
        assert_eq!(reference.to_string(), "corebank.auth.sign_on@1.0.0");
        assert_eq!(reference.file_name(), "corebank.auth.sign_on@1.0.0.yaml");
        assert!(CapabilityRef::parse("corebank.auth.sign_on").is_err());
        let hash = ContentHash::of_bytes(b"x");
        assert_eq!(ContentHash::parse(hash.as_str()).ok(), Some(hash.clone()));
        assert_eq!(hash.hex().len(), 64);
        assert!(ContentHash::parse("").is_err());
        assert!(ContentHash::parse(&hash.as_str().to_uppercase()).is_err());
        assert!(ContentHash::parse("sha256:00").is_err());
    }

    #[test]
    fn secrets_and_tenants() {
        let secret = SecretName::parse("corebank.operator_id").expect("valid");
        assert_eq!(
            secret.env_var("CUA_SECRET_"),
            "CUA_SECRET_COREBANK_OPERATOR_ID"
        );
        assert!(SecretName::parse("Corebank.x").is_err());
        assert!(TenantId::parse("northgate-fcu").is_ok());
        assert!(TenantId::parse("northgate--fcu").is_err());
        assert!(TenantId::parse("Northgate").is_err());
    }
}
