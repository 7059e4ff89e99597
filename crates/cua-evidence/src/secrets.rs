//! The secret resolver: `{$secret: name}` to a value, at the moment of dispatch and nowhere
//! else, registering every value it issues with the shared redactor before handing it out.

use std::collections::BTreeMap;
use std::fmt;

use cua_artifact::SecretName;

use crate::error::EvidenceError;
use crate::redact::{MIN_LITERAL_CHARS, Redactor};

/// The default environment prefix: `{$secret: corebank.operator_password}` is read from
/// `CUA_SECRET_COREBANK_OPERATOR_PASSWORD`.
pub const DEFAULT_ENV_PREFIX: &str = "CUA_SECRET_";

/// A secret's value. `Debug` and `Display` never show it; [`SecretValue::expose`] is the one
/// way to read it, at the dispatch that types it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    /// The value, for the dispatch that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "SecretValue(<{} chars>)", self.0.chars().count())
    }
}

/// Resolves secrets from an injected environment (production passes the process environment;
/// tests pass a map), with optional per-run overrides (a remedy capability's sign-on secrets).
pub struct SecretResolver {
    prefix: String,
    environment: BTreeMap<String, String>,
    overrides: BTreeMap<SecretName, String>,
    redactor: Redactor,
}

impl SecretResolver {
    /// A resolver over `environment`, reading variables named `prefix` + the secret's name
    /// upper-cased with `.` and `-` turned into `_`. Only variables starting with the prefix are
    /// kept. Every value issued is registered with `redactor`.
    pub fn new<I, K, V>(prefix: impl Into<String>, environment: I, redactor: Redactor) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let prefix = prefix.into();
        let environment = environment
            .into_iter()
            .map(|(key, value)| (key.into(), value.into()))
            .filter(|(key, _)| key.starts_with(&prefix))
            .collect();
        Self {
            prefix,
            environment,
            overrides: BTreeMap::new(),
            redactor,
        }
    }

    /// A resolver over the process environment with the default prefix. Variables whose name
    /// or value is not UTF-8 are skipped.
    pub fn from_process_env(redactor: Redactor) -> Self {
        Self::from_process_env_with_prefix(DEFAULT_ENV_PREFIX, redactor)
    }

    /// [`SecretResolver::from_process_env`] with the policy's own prefix.
    pub fn from_process_env_with_prefix(prefix: impl Into<String>, redactor: Redactor) -> Self {
        Self::new(prefix, process_environment(), redactor)
    }

    /// Adds a value that wins over the environment for one name.
    pub fn with_override(mut self, name: SecretName, value: impl Into<String>) -> Self {
        self.overrides.insert(name, value.into());
        self
    }

    /// The environment variable a secret is read from.
    pub fn env_var(&self, name: &SecretName) -> String {
        env_var(&self.prefix, name.as_str())
    }

    /// Resolves a secret and registers its value with the redactor before returning it. A
    /// missing secret names the variable to set; a value shorter than
    /// [`MIN_LITERAL_CHARS`] characters is refused, since the redactor could not scrub it.
    pub fn resolve(&self, name: &SecretName) -> Result<SecretValue, EvidenceError> {
        let (value, env_var) = self.lookup(name)?;
        if !self.redactor.register_secret(value) {
            return Err(EvidenceError::SecretTooShort {
                name: name.to_string(),
                env_var,
                min: MIN_LITERAL_CHARS,
            });
        }
        Ok(SecretValue(value.clone()))
    }

    /// Whether [`SecretResolver::resolve`] would issue the secret, without issuing it: a run
    /// checks every secret it may need before its browser starts, so a missing one is a usage
    /// error up front rather than a failure halfway through a flow.
    pub fn check(&self, name: &SecretName) -> Result<(), EvidenceError> {
        let (value, env_var) = self.lookup(name)?;
        if value.chars().count() < MIN_LITERAL_CHARS {
            return Err(EvidenceError::SecretTooShort {
                name: name.to_string(),
                env_var,
                min: MIN_LITERAL_CHARS,
            });
        }
        Ok(())
    }

    fn lookup(&self, name: &SecretName) -> Result<(&String, String), EvidenceError> {
        let env_var = self.env_var(name);
        let value = self
            .overrides
            .get(name)
            .or_else(|| self.environment.get(&env_var))
            .ok_or_else(|| EvidenceError::SecretNotFound {
                name: name.to_string(),
                env_var: env_var.clone(),
            })?;
        Ok((value, env_var))
    }
}

impl fmt::Debug for SecretResolver {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SecretResolver")
            .field("prefix", &self.prefix)
            .field("variables", &self.environment.keys().collect::<Vec<_>>())
            .field("overrides", &self.overrides.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// `prefix` + the name upper-cased, with `.` and `-` turned into `_`.
pub fn env_var(prefix: &str, name: &str) -> String {
    let mut variable = String::with_capacity(prefix.len() + name.len());
    variable.push_str(prefix);
    variable.extend(name.chars().map(|c| match c {
        '.' | '-' => '_',
        other => other.to_ascii_uppercase(),
    }));
    variable
}

/// The process environment as text, where secrets are looked up by variable name. A variable
/// whose name or value is not UTF-8 cannot hold a secret and is left out (`std::env::vars`
/// would panic on it).
pub fn process_environment() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}
