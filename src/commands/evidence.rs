//! `cua evidence verify RUN_DIR [--public-key FILE]`: checks a run directory's hash chain, the
//! files it holds, its run record and the evidence root's ledger. Exit 0 when everything
//! committed verifies (a killed run verifies as a prefix), 1 when the evidence is broken or
//! unreadable, 2 when the path is not a run directory or the key cannot be read.
//!
//! `cua evidence keygen --out DIR`: the installation's signing key pair. A run signs its ledger
//! line when `CUA_EVIDENCE_KEY` names the private key file.

use std::path::Path;
use std::sync::Arc;

use cua_evidence::{EvidenceError, InstallationKey, PublicKey};
use cua_fs::{Dir, FileMode};
use serde::Serialize;

use crate::cli::{EvidenceKeygenArgs, EvidenceVerifyArgs, Format};
use crate::error::{CliError, ErrorCode};
use crate::limits;
use crate::output::{Exit, emit};

/// The environment variable naming the installation's private key file.
pub(crate) const KEY_ENV: &str = "CUA_EVIDENCE_KEY";

/// The key pair's file names.
const PRIVATE_FILE: &str = "evidence.key";
const PUBLIC_FILE: &str = "evidence.pub";

/// The installation's signing key, when `CUA_EVIDENCE_KEY` names one: a run that cannot read
/// the key it was told to sign with does not start.
pub(crate) fn signing_key() -> Result<Option<Arc<InstallationKey>>, String> {
    let Some(path) = std::env::var_os(KEY_ENV).filter(|path| !path.is_empty()) else {
        return Ok(None);
    };
    let path = Path::new(&path);
    let text = cua_fs::read_to_string_bounded(path, limits::KEY)
        .map_err(|error| format!("{KEY_ENV}: {error}"))?;
    InstallationKey::from_hex(&text)
        .map(|key| Some(Arc::new(key)))
        .map_err(|error| format!("{KEY_ENV}={}: {error}", path.display()))
}

/// Writes a new key pair; refuses to overwrite one.
pub(crate) fn keygen(format: Format, args: &EvidenceKeygenArgs) -> Result<Exit, CliError> {
    #[derive(Serialize)]
    struct Written {
        private_key: String,
        public_key: String,
        public_key_hex: String,
    }
    let written = (|| {
        let key = InstallationKey::generate().map_err(|error| error.to_string())?;
        let dir =
            Dir::create_all(&args.out, FileMode::Private).map_err(|error| error.to_string())?;
        dir.write_new(
            PRIVATE_FILE,
            format!("{}\n", key.to_hex()).as_bytes(),
            FileMode::Private,
        )
        .map_err(|error| error.to_string())?;
        let public = key.public().to_hex();
        dir.write_new(
            PUBLIC_FILE,
            format!("{public}\n").as_bytes(),
            FileMode::Readable,
        )
        .map_err(|error| error.to_string())?;
        Ok::<_, String>(Written {
            private_key: args.out.join(PRIVATE_FILE).display().to_string(),
            public_key: args.out.join(PUBLIC_FILE).display().to_string(),
            public_key_hex: public,
        })
    })();
    let written = written.map_err(|message| CliError::new(ErrorCode::KeyUnwritable, message))?;
    emit(format, "evidence keygen", Some(&written), None, || {
        format!(
            "wrote {} (keep it private) and {}\nsign runs with {KEY_ENV}={}; verify with \
             cua evidence verify RUN_DIR --public-key {}\n",
            written.private_key, written.public_key, written.private_key, written.public_key
        )
    });
    Ok(Exit::Success)
}

/// Verifies one run directory.
pub(crate) fn verify(format: Format, args: &EvidenceVerifyArgs) -> Result<Exit, CliError> {
    let run_dir = args.run_dir.display().to_string();
    let public = match &args.public_key {
        None => None,
        Some(path) => {
            let read = cua_fs::read_to_string_bounded(path, limits::KEY)
                .map_err(|error| error.to_string())
                .and_then(|text| PublicKey::from_hex(&text).map_err(|error| error.to_string()));
            Some(read.map_err(|message| {
                CliError::new(
                    ErrorCode::BadKey,
                    format!("--public-key {}: {message}", path.display()),
                )
            })?)
        }
    };
    let report = cua_evidence::verify_with(&args.run_dir, public.as_ref()).map_err(|error| {
        let code = match error {
            EvidenceError::NotARunDir { .. } => ErrorCode::NotARunDir,
            _ => ErrorCode::EvidenceUnreadable,
        };
        CliError::new(code, error.to_string())
    })?;
    let error = report
        .broken
        .as_ref()
        .map(|broken| ErrorCode::EvidenceBroken.envelope(broken.message.clone()));
    emit(
        format,
        "evidence verify",
        Some(&report),
        error.as_ref(),
        || format!("{run_dir}: {}\n", report.summary()),
    );
    Ok(if report.is_intact() {
        Exit::Success
    } else {
        ErrorCode::EvidenceBroken.exit()
    })
}
