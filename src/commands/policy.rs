//! The policy file, read one way by every command: the document, the engine built from it (a
//! declared command path is relative to the file) and its redactor.

use std::path::Path;

use cua_artifact::PolicyConfig;
use cua_evidence::Redactor;
use cua_policy::PolicyEngine;

use crate::error::{CliError, ErrorCode};

/// The policy file, read and checked once.
pub(crate) struct LoadedPolicy {
    pub(crate) config: PolicyConfig,
    pub(crate) engine: PolicyEngine,
    pub(crate) redactor: Redactor,
}

impl LoadedPolicy {
    /// Reads and checks the policy file: one that cannot be read is `read_failed`, one that
    /// does not load or build an engine or a redactor is `invalid_policy`, naming the file.
    pub(crate) fn read(path: &Path) -> Result<Self, CliError> {
        let text = cua_fs::read_to_string_bounded(path, crate::limits::DOCUMENT)
            .map_err(|error| CliError::unread(path, &error))?;
        let invalid = |error: &dyn std::fmt::Display| {
            CliError::new(
                ErrorCode::InvalidPolicy,
                format!("{}: {error}", path.display()),
            )
        };
        let config = PolicyConfig::from_yaml(&text).map_err(|error| invalid(&error))?;
        let engine = PolicyEngine::from_config(&config)
            .map_err(|error| invalid(&error))?
            .with_command_base(path.parent().unwrap_or(Path::new(".")));
        let redactor = Redactor::from_policy(&config.redaction).map_err(|error| invalid(&error))?;
        Ok(Self {
            config,
            engine,
            redactor,
        })
    }
}
