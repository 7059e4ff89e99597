//! `cua codegen <ref|file> --out FILE [--tenant T] [--allow-irreversible] [--config]`: write a
//! capability as a runnable Playwright Test file. Exit 0 when written, 1 when a step cannot be
//! expressed (every refusal named, nothing written), 2 for a usage error or a missing, invalid
//! or tampered document.
//!
//! Beside the spec it writes the fixtures file every generated spec imports, and a setup file
//! for each sign-on the spec's recovery runs (a setup project runs it once and saves the
//! session); with `--config`, a `playwright.config.ts` when none is there. A file at one of
//! those paths that `cua codegen` did not write is never written over: nothing is written then.
//!
//! The capabilities that recovery remedies run (a sign-on) are read from the catalog, so the
//! spec can sign on when the application asks it to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cua_artifact::{Capability, Remedy, TenantId};
use cua_catalog::{Catalog, CatalogConfig};
use cua_compile::CompileError;
use cua_compile::codegen::{
    BASE_URL_ENV, CONFIG_FILE, CONFIG_FILES, CodegenConfig, FIXTURES_FILE, GENERATED_MARK, Refusal,
    fixtures_file, playwright_config, render_playwright,
};
use cua_fs::FileMode;
use serde::Serialize;

use crate::cli::{CodegenArgs, Format};
use crate::error::{CliError, ErrorCode};
use crate::output::{self, Exit, emit};

/// What `cua codegen` reports.
#[derive(Debug, Serialize)]
struct Written {
    out: PathBuf,
    /// The other files written beside the spec: the fixtures, setups, and a config.
    beside: Vec<PathBuf>,
    /// A config that was asked for and already there, left as it was.
    config_kept: Option<PathBuf>,
    capability: String,
    tenant: Option<String>,
    content_hash: Option<String>,
    steps: usize,
    not_translated: Vec<String>,
}

/// The refusals, as the JSON envelope's data.
#[derive(Debug, Serialize)]
struct Refused {
    capability: String,
    refusals: Vec<RefusalView>,
}

#[derive(Debug, Serialize)]
struct RefusalView {
    place: String,
    reason: String,
}

/// Runs `cua codegen`.
pub(crate) fn run(format: Format, args: &CodegenArgs) -> Result<Exit, CliError> {
    let loaded = load(
        &args.capability,
        args.tenant.as_deref(),
        &args.paths.catalog()?,
        &args.paths.tenants_for(args.tenant.as_deref())?,
    )?;
    let config = CodegenConfig {
        tenant: loaded.tenant.clone(),
        allow_irreversible: args.allow_irreversible,
        remedies: remedies(&loaded.catalog, &loaded.capability),
        signed_out: recovers_others(&loaded.catalog, &loaded.capability)?,
    };
    let spec = match render_playwright(&loaded.capability, &config) {
        Ok(spec) => spec,
        Err(CompileError::Unexpressible {
            capability,
            refusals,
        }) => return Ok(refused(format, capability, &refusals)),
        Err(other) => return Err(CliError::new(ErrorCode::CodegenFailed, other.to_string())),
    };
    let dir = args
        .out
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let mut beside: Vec<(PathBuf, String)> =
        vec![(dir.join(FIXTURES_FILE), fixtures_file().to_owned())];
    for setup in &spec.setups {
        beside.push((dir.join(&setup.name), setup.text.clone()));
    }
    let existing = CONFIG_FILES
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.exists());
    let config_kept = match existing {
        Some(path) if args.config => Some(path),
        _ => {
            if args.config {
                beside.push((dir.join(CONFIG_FILE), playwright_config()));
            }
            None
        }
    };
    // Every path is checked before anything is written: someone else's file stops it all.
    for path in std::iter::once(&args.out).chain(beside.iter().map(|(path, _)| path)) {
        refuse_foreign(path)?;
    }
    if let Err(error) = std::fs::create_dir_all(&dir) {
        return Err(CliError::new(
            ErrorCode::WriteFailed,
            format!("cannot create {}: {error}", dir.display()),
        ));
    }
    // Each whole or not at all, never through a link planted at the path; the spec last, so a
    // spec is never there without what it imports.
    for (path, text) in &beside {
        cua_fs::write_atomic(path, text.as_bytes(), FileMode::Readable)
            .map_err(|error| CliError::unwritten(&error, ErrorCode::WriteFailed))?;
    }
    cua_fs::write_atomic(&args.out, spec.text.as_bytes(), FileMode::Readable)
        .map_err(|error| CliError::unwritten(&error, ErrorCode::WriteFailed))?;
    let written = Written {
        out: args.out.clone(),
        beside: beside.into_iter().map(|(path, _)| path).collect(),
        config_kept,
        capability: loaded.capability.reference().to_string(),
        tenant: loaded.tenant.as_ref().map(ToString::to_string),
        content_hash: loaded
            .capability
            .content_hash
            .as_ref()
            .map(|hash| hash.as_str().to_owned()),
        steps: spec.steps,
        not_translated: spec.not_translated,
    };
    emit(format, "codegen", Some(&written), None, || render(&written));
    Ok(Exit::Success)
}

fn render(written: &Written) -> String {
    let mut text = format!("wrote {}\n", written.out.display());
    for path in &written.beside {
        text.push_str(&format!("wrote {}\n", path.display()));
    }
    if let Some(path) = &written.config_kept {
        text.push_str(&format!(
            "kept  {} (it was already there)\n",
            path.display()
        ));
    }
    text.push_str(&format!("from  {}", written.capability));
    if let Some(tenant) = &written.tenant {
        text.push_str(&format!(" for {tenant}"));
    }
    text.push_str(&format!(
        " at {}\n",
        written
            .content_hash
            .as_deref()
            .unwrap_or("(an unsealed draft)")
    ));
    text.push_str(&format!("steps {}\n", written.steps));
    for line in &written.not_translated {
        text.push_str(&format!("not translated: {line}\n"));
    }
    text.push_str(&format!(
        "run it: npx playwright test {}, with use.baseURL set to the application's URL \
         (the config `cua codegen --config` writes reads it from {BASE_URL_ENV})\n",
        written.out.display()
    ));
    text
}

/// Refuses a path that holds a file `cua codegen` did not write (or one it cannot read): a
/// hand-written fixture or spec of the same name is never written over.
fn refuse_foreign(path: &Path) -> Result<(), CliError> {
    // A link is refused as the write would refuse it, before anything beside it is written.
    if std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        let refused = cua_fs::FsError::Symlink {
            path: path.to_path_buf(),
        };
        return Err(CliError::unwritten(&refused, ErrorCode::WriteFailed));
    }
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => {
            return Err(CliError::new(
                ErrorCode::WriteFailed,
                format!(
                    "cannot read {} before writing over it: {error}",
                    path.display()
                ),
            ));
        }
    };
    if text.starts_with(GENERATED_MARK) {
        return Ok(());
    }
    Err(CliError::new(
        ErrorCode::RefusedPath,
        format!(
            "{} is there and `cua codegen` did not write it: move it away or choose another \
             --out directory (nothing was written)",
            path.display()
        ),
    ))
}

fn refused(format: Format, capability: String, refusals: &[Refusal]) -> Exit {
    let message = format!(
        "{capability} cannot be generated as a Playwright test:\n{}",
        refusals
            .iter()
            .map(|refusal| format!("  {refusal}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let data = Refused {
        capability,
        refusals: refusals
            .iter()
            .map(|refusal| RefusalView {
                place: refusal.place.clone(),
                reason: refusal.reason.clone(),
            })
            .collect(),
    };
    output::fail_with(
        format,
        "codegen",
        Some(&data),
        &CliError::new(ErrorCode::Unexpressible, message),
    )
}

/// The capabilities the recovery remedies of `capability` run, as the catalog has them. One
/// the catalog lacks is left out; codegen then lists its rule as not translated.
fn remedies(
    catalog: &Catalog,
    capability: &Capability,
) -> BTreeMap<cua_artifact::CapabilityRef, Capability> {
    let mut found = BTreeMap::new();
    let mut pending: Vec<Capability> = vec![capability.clone()];
    while let Some(current) = pending.pop() {
        for rule in &current.recovery {
            for remedy in &rule.remedy {
                if let Remedy::RunCapability(run) = remedy
                    && !found.contains_key(&run.capability)
                    && let Ok(remedy_capability) = catalog.load(&run.capability)
                {
                    pending.push(remedy_capability.clone());
                    found.insert(run.capability.clone(), remedy_capability);
                }
            }
        }
    }
    found
}

/// Whether another capability of the catalog runs `capability` as a recovery remedy: a sign-on,
/// whose own test must start signed out.
fn recovers_others(catalog: &Catalog, capability: &Capability) -> Result<bool, CliError> {
    let reference = capability.reference();
    Ok(catalog
        .list()
        .map_err(|error| CliError::from(&error))?
        .iter()
        .filter_map(|entry| entry.capability.as_ref())
        .flat_map(|other| other.recovery.iter().flat_map(|rule| rule.remedy.iter()))
        .any(|remedy| matches!(remedy, Remedy::RunCapability(run) if run.capability == reference)))
}

/// A capability read for codegen or probe, with its tenant binding applied.
pub(super) struct Loaded {
    pub(super) capability: Capability,
    pub(super) tenant: Option<TenantId>,
    pub(super) catalog: Catalog,
}

/// Reads a capability from a file or the catalog and applies the tenant's binding.
pub(super) fn load(
    text: &str,
    tenant: Option<&str>,
    catalog_dir: &Path,
    tenants_dir: &Path,
) -> Result<Loaded, CliError> {
    let catalog = Catalog::new(CatalogConfig {
        capabilities: catalog_dir.to_path_buf(),
        evaluations: catalog_dir.to_path_buf(),
        tenants: tenants_dir.to_path_buf(),
    });
    let base = super::load_capability(text, &catalog)?;
    let Some(tenant) = tenant else {
        return Ok(Loaded {
            capability: base,
            tenant: None,
            catalog,
        });
    };
    let tenant = TenantId::parse(tenant)
        .map_err(|error| CliError::new(ErrorCode::InvalidTenant, error.to_string()))?;
    let binding = catalog
        .binding(&tenant, &base.reference())
        .map_err(|error| CliError::from(&error))?
        .ok_or_else(|| crate::error::no_binding(&catalog, &tenant, &base.id))?;
    let capability = binding
        .apply(&base)
        .map_err(|error| CliError::new(ErrorCode::InvalidDocument, error.to_string()))?;
    Ok(Loaded {
        capability,
        tenant: Some(tenant),
        catalog,
    })
}
