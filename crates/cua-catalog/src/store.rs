//! The catalog on disk: `<id>@<version>.yaml` artifacts in one directory, each with its
//! approval beside it as `<id>@<version>.approval.yaml`; evaluations as
//! `<suite>.evaluation.json` in the evaluations directory (or beside the artifacts); tenant
//! bindings as `<tenants>/<tenant>/<id>.yaml`.
//!
//! Listing never stops at a bad file: an unreadable, invalid or tampered artifact is an entry
//! that says so. Loading refuses a tampered artifact. Every write goes through `cua-fs`: an
//! exclusive temporary file in the same directory, synced, then renamed over the target (never
//! through a link), so a reader sees the old document or the new one, never half of each. Every
//! read is bounded by [`cua_artifact::yaml::MAX_DOCUMENT_BYTES`].

use std::path::{Path, PathBuf};

use cua_artifact::{
    ApprovalSchema, ApprovalScope, ApprovalState, Capability, CapabilityApproval, CapabilityId,
    CapabilityRef, ContentHash, DocumentKind, Origin, PreparedCapability, TenantBinding, TenantId,
    yaml,
};
use cua_fs::{FileMode, Limit};
use serde::Serialize;

use crate::error::CatalogError;
use crate::evaluation::{Assessment, EvaluationRecord};
use crate::review::{
    ApprovalAnswer, Integrity, ReviewStatus, carried_answer, direct_answer, state_name,
    tenant_answer,
};
use crate::search::SearchDocument;

/// The file name suffix of an artifact.
pub const CAPABILITY_SUFFIX: &str = ".yaml";
/// The file name suffix of an approval, after `<id>@<version>`.
pub const APPROVAL_SUFFIX: &str = ".approval.yaml";
/// The file name suffix of an evaluation, after the suite name.
pub const EVALUATION_SUFFIX: &str = ".evaluation.json";

/// The catalog reads documents (artifacts, approvals, bindings, evaluations) of at most the
/// size the YAML parser accepts anyway, and nothing past it.
const DOCUMENT_LIMIT: Limit = Limit {
    bytes: yaml::MAX_DOCUMENT_BYTES as u64,
    what: "a catalog document",
};

/// Where the catalog's documents live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogConfig {
    /// Artifacts and their approvals.
    pub capabilities: PathBuf,
    /// Evaluation reports (`<suite>.evaluation.json`). A missing directory holds none.
    pub evaluations: PathBuf,
    /// Tenant bindings, one directory per tenant. A missing directory holds none.
    pub tenants: PathBuf,
}

/// One artifact file as the catalog sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogEntry {
    pub path: PathBuf,
    /// From the file name; `None` when the name is not `<id>@<version>.yaml`.
    pub reference: Option<CapabilityRef>,
    pub integrity: Integrity,
    /// The parsed artifact, unless it is invalid. A tampered artifact is kept for inspection
    /// only; [`Catalog::load`] refuses it.
    pub capability: Option<Capability>,
    pub approval: Option<CapabilityApproval>,
    pub review: ReviewStatus,
}

/// A file that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileProblem {
    pub path: PathBuf,
    pub reason: String,
}

/// Every evaluation found, and every evaluation file that could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EvaluationScan {
    pub records: Vec<EvaluationRecord>,
    pub problems: Vec<FileProblem>,
}

/// `approve`: who decides, when (from the caller's clock), and on what evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApproveRequest {
    pub reference: CapabilityRef,
    pub by: String,
    /// RFC 3339, from the caller's clock; the catalog reads none.
    pub at: String,
    pub notes: Option<String>,
    /// Require a passing evaluation at this exact content hash, and record that the approval
    /// covers unattended replay.
    pub from_eval: bool,
    /// Approve what this tenant's binding makes of the capability, pinned to that effective
    /// hash and scoped to the tenant: for a binding that changes more than vars, whose base
    /// approval does not carry over.
    pub tenant: Option<TenantId>,
}

/// `revoke`: who withdraws the approval, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevokeRequest {
    pub reference: CapabilityRef,
    pub by: String,
    /// RFC 3339, from the caller's clock.
    pub at: String,
    pub notes: Option<String>,
    /// Revoke this tenant's own approval rather than the base's.
    pub tenant: Option<TenantId>,
}

/// What `approve` or `revoke` wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionRecorded {
    pub approval: CapabilityApproval,
    pub path: PathBuf,
    /// The review state before the decision.
    pub previous: ReviewStatus,
    /// The evaluations the decision rests on (`--from-eval`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Assessment>,
}

/// The catalog over its directories.
#[derive(Debug, Clone)]
pub struct Catalog {
    config: CatalogConfig,
}

impl Default for CatalogConfig {
    /// The repository layout: `capabilities/`, `evidence/evals/`, `tenants/`.
    fn default() -> Self {
        Self::rooted_at(Path::new(""))
    }
}

impl CatalogConfig {
    /// The repository layout under `root`.
    pub fn rooted_at(root: &Path) -> Self {
        Self {
            capabilities: root.join("capabilities"),
            evaluations: root.join("evidence").join("evals"),
            tenants: root.join("tenants"),
        }
    }
}

impl CatalogEntry {
    /// `id@version`, or the file name when the name is not a reference.
    pub fn display_name(&self) -> String {
        match &self.reference {
            Some(reference) => reference.to_string(),
            None => file_name(&self.path),
        }
    }
}

impl Catalog {
    /// A catalog over these directories. Nothing is read until asked.
    pub fn new(config: CatalogConfig) -> Self {
        Self { config }
    }

    /// The directories.
    pub fn config(&self) -> &CatalogConfig {
        &self.config
    }

    /// Every `*.yaml` artifact file in the capabilities directory, ordered by reference (files
    /// whose name is not a reference last, by name). Bad files are entries saying what is wrong.
    pub fn list(&self) -> Result<Vec<CatalogEntry>, CatalogError> {
        let directory = &self.config.capabilities;
        let mut entries: Vec<CatalogEntry> = read_directory(directory)?
            .into_iter()
            .filter(|name| {
                name.ends_with(CAPABILITY_SUFFIX)
                    && !name.ends_with(APPROVAL_SUFFIX)
                    && !name.starts_with('.')
            })
            .map(|name| read_entry(&directory.join(&name), &name))
            .collect();
        entries.sort_by(|left, right| match (&left.reference, &right.reference) {
            (Some(left), Some(right)) => left.cmp(right),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => left.path.cmp(&right.path),
        });
        Ok(entries)
    }

    /// The entry of one reference, whatever its state.
    pub fn entry(&self, reference: &CapabilityRef) -> Result<CatalogEntry, CatalogError> {
        let name = reference.file_name();
        let path = self.config.capabilities.join(&name);
        if !path.is_file() {
            return Err(CatalogError::NotFound {
                reference: reference.to_string(),
                directory: self.config.capabilities.clone(),
                closest: self.closest(&reference.to_string()),
            });
        }
        Ok(read_entry(&path, &name))
    }

    /// Parses `id@version`, or takes a bare `id` to mean its highest version in the catalog.
    pub fn resolve(&self, text: &str) -> Result<CapabilityRef, CatalogError> {
        let invalid = |reason: String| CatalogError::InvalidReference {
            text: text.to_owned(),
            reason,
            closest: self.closest(text),
        };
        if text.contains('@') {
            return CapabilityRef::parse(text).map_err(|error| invalid(error.to_string()));
        }
        let id = CapabilityId::parse(text).map_err(|error| invalid(error.to_string()))?;
        self.list()?
            .into_iter()
            .filter_map(|entry| entry.reference)
            .filter(|reference| *reference.id() == id)
            .max()
            .ok_or_else(|| CatalogError::NotFound {
                reference: text.to_owned(),
                directory: self.config.capabilities.clone(),
                closest: self.closest(text),
            })
    }

    /// The reference in the catalog nearest to `text` (an `id@version`, or an `id`, which is
    /// compared with ids), for a "did you mean".
    fn closest(&self, text: &str) -> Option<String> {
        let references: Vec<CapabilityRef> = self
            .list()
            .ok()?
            .into_iter()
            .filter_map(|entry| entry.reference)
            .collect();
        let names: Vec<String> = if text.contains('@') {
            references.iter().map(ToString::to_string).collect()
        } else {
            let mut ids: Vec<String> = references.iter().map(|r| r.id().to_string()).collect();
            ids.dedup();
            ids
        };
        cua_artifact::suggest::closest(text, names.iter().map(String::as_str)).map(str::to_owned)
    }

    /// A capability ready to run: loaded as [`Catalog::load`] loads it, bound by the tenant's
    /// binding when the tenant has one and by `base_url`, with the approval a run is judged by
    /// ([`Catalog::approval_record`]). The one way a run (or its remedy) is prepared from the
    /// catalog.
    pub fn prepare(
        &self,
        reference: &CapabilityRef,
        tenant: Option<&TenantId>,
        base_url: Option<&Origin>,
    ) -> Result<PreparedCapability, CatalogError> {
        let base = self.load(reference)?;
        let binding = match tenant {
            Some(tenant) => self.binding(tenant, reference)?,
            None => None,
        };
        let approval = self.approval_record(reference, tenant)?;
        PreparedCapability::bind(base, binding, base_url.map(Origin::as_str), approval).map_err(
            |error| CatalogError::Invalid {
                path: self.config.capabilities.join(reference.file_name()),
                reason: format!("cannot bind {reference}: {error}"),
            },
        )
    }

    /// Loads an artifact for use: sealed or draft. A tampered or invalid one is refused.
    pub fn load(&self, reference: &CapabilityRef) -> Result<Capability, CatalogError> {
        let entry = self.entry(reference)?;
        usable(entry)
    }

    /// Every evaluation in the evaluations directory and beside the artifacts, by path.
    pub fn evaluations(&self) -> Result<EvaluationScan, CatalogError> {
        let mut scan = EvaluationScan::default();
        let mut directories = vec![&self.config.evaluations];
        if self.config.capabilities != self.config.evaluations {
            directories.push(&self.config.capabilities);
        }
        for directory in directories {
            if !directory.is_dir() {
                continue;
            }
            for name in read_directory(directory)? {
                if !name.ends_with(EVALUATION_SUFFIX) || name.starts_with('.') {
                    continue;
                }
                let path = directory.join(&name);
                let parsed = cua_fs::read_to_string_bounded(&path, DOCUMENT_LIMIT)
                    .map_err(|error| format!("cannot read the file: {error}"))
                    .and_then(|text| EvaluationRecord::parse(&path, &text));
                match parsed {
                    Ok(record) => scan.records.push(record),
                    Err(reason) => scan.problems.push(FileProblem { path, reason }),
                }
            }
        }
        scan.records
            .sort_by(|left, right| left.source.cmp(&right.source));
        scan.problems
            .sort_by(|left, right| left.path.cmp(&right.path));
        Ok(scan)
    }

    /// Where `tenant`'s binding of `id` is, present or not.
    pub fn binding_path(&self, tenant: &TenantId, id: &CapabilityId) -> PathBuf {
        self.config
            .tenants
            .join(tenant.as_str())
            .join(format!("{id}{CAPABILITY_SUFFIX}"))
    }

    /// The tenants with a binding of `id`, sorted: the directories of the tenants directory
    /// holding `<id>.yaml`.
    pub fn tenants_binding(&self, id: &CapabilityId) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.config.tenants) else {
            return Vec::new();
        };
        let mut tenants: Vec<String> = entries
            .flatten()
            .filter(|entry| {
                entry
                    .path()
                    .join(format!("{id}{CAPABILITY_SUFFIX}"))
                    .is_file()
            })
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        tenants.sort();
        tenants
    }

    /// The tenant's binding of this capability, if the tenant has one:
    /// `<tenants>/<tenant>/<id>.yaml`.
    pub fn binding(
        &self,
        tenant: &TenantId,
        reference: &CapabilityRef,
    ) -> Result<Option<TenantBinding>, CatalogError> {
        let path = self
            .config
            .tenants
            .join(tenant.as_str())
            .join(format!("{}{CAPABILITY_SUFFIX}", reference.id()));
        if !path.exists() {
            return Ok(None);
        }
        // Something other than a file where the binding belongs is not "no binding": the run
        // would silently go without the tenant's overlay.
        if !path.is_file() {
            return Err(CatalogError::Invalid {
                path,
                reason: "a tenant binding must be a regular file".to_owned(),
            });
        }
        let text = read_text(&path)?;
        let binding = TenantBinding::from_yaml(&text).map_err(|error| CatalogError::Invalid {
            path: path.clone(),
            reason: error.to_string(),
        })?;
        if binding.tenant != *tenant {
            return Err(CatalogError::Invalid {
                path,
                reason: format!(
                    "the binding is for tenant {}, but it sits in {}'s directory",
                    binding.tenant, tenant
                ),
            });
        }
        Ok(Some(binding))
    }

    /// Whether `reference` counts as approved, for a tenant or for itself, and why. For a
    /// tenant with a binding, the base's approval carries over only through a substitution-only
    /// binding whose effective capability is re-derived and compared; a tenant without a
    /// binding runs the base as it is.
    pub fn approval_for(
        &self,
        reference: &CapabilityRef,
        tenant: Option<&TenantId>,
    ) -> Result<ApprovalAnswer, CatalogError> {
        let entry = self.entry(reference)?;
        if let Integrity::Invalid { reason } = &entry.integrity {
            return Err(CatalogError::Invalid {
                path: entry.path.clone(),
                reason: reason.clone(),
            });
        }
        let direct = direct_answer(reference, &entry.integrity, entry.approval.as_ref());
        let Some(tenant) = tenant else {
            return Ok(direct);
        };
        let Some(binding) = self.binding(tenant, reference)? else {
            return Ok(ApprovalAnswer {
                tenant: Some(tenant.clone()),
                reason: format!(
                    "tenant {tenant} has no binding of {}, so it runs the base as is: {}",
                    reference.id(),
                    direct.reason
                ),
                ..direct
            });
        };
        if binding.capability != *reference {
            return Ok(ApprovalAnswer {
                tenant: Some(tenant.clone()),
                approved: false,
                basis: crate::review::ApprovalBasis::None,
                reason: format!(
                    "tenant {tenant}'s binding pins {}, not {reference}",
                    binding.capability
                ),
                ..direct
            });
        }
        let base = entry
            .capability
            .as_ref()
            .expect("an entry whose integrity is not invalid holds its capability");
        if let Some(own) = self.tenant_approval(tenant, reference)? {
            return Ok(tenant_answer(base, &own, &binding));
        }
        Ok(carried_answer(base, entry.approval.as_ref(), &binding))
    }

    /// Records an approval pinned to the artifact's sealed hash. Refuses an unsealed, tampered
    /// or invalid artifact; with `from_eval`, refuses unless every evaluation at this exact hash
    /// passes every [`crate::Criterion`] (and there is at least one).
    pub fn approve(&self, request: &ApproveRequest) -> Result<DecisionRecorded, CatalogError> {
        let by = reviewer(&request.by)?;
        let entry = self.entry(&request.reference)?;
        let target = self.decision_target(&entry, request.tenant.as_ref())?;
        let content_hash = target.content_hash.clone();
        let evidence = if request.from_eval {
            self.passing_evaluations(&request.reference, &content_hash)?
        } else {
            Vec::new()
        };
        let mut notes: Vec<String> = request
            .notes
            .iter()
            .filter(|notes| !notes.trim().is_empty())
            .cloned()
            .collect();
        notes.extend(
            evidence
                .iter()
                .map(|assessment| format!("evaluated {}", assessment.summary())),
        );
        let approval = CapabilityApproval {
            schema: ApprovalSchema::V1,
            capability: request.reference.clone(),
            content_hash,
            state: ApprovalState::Approved,
            approved_by: Some(by),
            approved_at: Some(request.at.clone()),
            scope: ApprovalScope {
                unattended_replay: request.from_eval,
                tenants: request.tenant.iter().cloned().collect(),
            },
            notes: notes.join("; "),
        };
        write_approval(&target.path, &approval)?;
        Ok(DecisionRecorded {
            approval,
            path: target.path,
            previous: target.previous,
            evidence,
        })
    }

    /// Records that the approval is withdrawn. The pin stays, so the record says which content
    /// was revoked; `approved_by` and `approved_at` name the latest decision.
    pub fn revoke(&self, request: &RevokeRequest) -> Result<DecisionRecorded, CatalogError> {
        let by = reviewer(&request.by)?;
        let entry = self.entry(&request.reference)?;
        let (path, current, previous) = match &request.tenant {
            None => {
                if let ReviewStatus::Invalid { reason } = &entry.review {
                    return Err(CatalogError::Invalid {
                        path: approval_path(&self.config.capabilities, &request.reference),
                        reason: reason.clone(),
                    });
                }
                (
                    approval_path(&self.config.capabilities, &request.reference),
                    entry.approval.clone(),
                    entry.review.clone(),
                )
            }
            // A tenant's own approval can be revoked whatever became of its binding.
            Some(tenant) => match self.decision_target(&entry, Some(tenant)) {
                Ok(target) => (target.path, target.current, target.previous),
                Err(CatalogError::NoBinding { .. }) => {
                    let current = self.tenant_approval(tenant, &request.reference)?;
                    let previous = ReviewStatus::judge(&entry.integrity, current.as_ref());
                    (
                        tenant_approval_path(&self.config.tenants, tenant, &request.reference),
                        current,
                        previous,
                    )
                }
                Err(error) => return Err(error),
            },
        };
        let Some(previous_approval) = current else {
            return Err(CatalogError::NothingToRevoke {
                reference: Box::new(request.reference.clone()),
            });
        };
        let mut history = Vec::new();
        if let Some(notes) = request
            .notes
            .as_ref()
            .filter(|notes| !notes.trim().is_empty())
        {
            history.push(notes.clone());
        }
        history.push(format!(
            "previously {} by {}{}",
            state_name(previous_approval.state),
            previous_approval
                .approved_by
                .as_deref()
                .unwrap_or("an unnamed reviewer"),
            previous_approval
                .approved_at
                .as_deref()
                .map(|at| format!(" at {at}"))
                .unwrap_or_default()
        ));
        if !previous_approval.notes.is_empty() {
            history.push(format!("notes then: {}", previous_approval.notes));
        }
        let approval = CapabilityApproval {
            state: ApprovalState::Revoked,
            approved_by: Some(by),
            approved_at: Some(request.at.clone()),
            notes: history.join("; "),
            ..previous_approval
        };
        write_approval(&path, &approval)?;
        Ok(DecisionRecorded {
            approval,
            path,
            previous,
            evidence: Vec::new(),
        })
    }

    /// The tenant's own approval of `reference` (`<tenants>/<tenant>/<id>@<version>.approval.yaml`),
    /// when it has one.
    pub fn tenant_approval(
        &self,
        tenant: &TenantId,
        reference: &CapabilityRef,
    ) -> Result<Option<CapabilityApproval>, CatalogError> {
        let path = tenant_approval_path(&self.config.tenants, tenant, reference);
        read_approval(&path, reference).map_err(|reason| CatalogError::Invalid { path, reason })
    }

    /// The approval a run of `reference` for `tenant` is judged by, as [`Catalog::approval_for`]
    /// judges it: the tenant's own when the tenant has a binding of `reference` and an approval
    /// of its own, else the base's (which carries over only through a substitution-only
    /// binding, as the policy re-derives). A tenant approval left behind by a removed binding
    /// is never presented.
    pub fn approval_record(
        &self,
        reference: &CapabilityRef,
        tenant: Option<&TenantId>,
    ) -> Result<Option<CapabilityApproval>, CatalogError> {
        if let Some(tenant) = tenant
            && self
                .binding(tenant, reference)?
                .is_some_and(|binding| binding.capability == *reference)
            && let Some(own) = self.tenant_approval(tenant, reference)?
        {
            return Ok(Some(own));
        }
        let entry = self.entry(reference)?;
        if let ReviewStatus::Invalid { reason } = &entry.review {
            return Err(CatalogError::Invalid {
                path: approval_path(&self.config.capabilities, reference),
                reason: reason.clone(),
            });
        }
        Ok(entry.approval)
    }

    /// What a decision about `entry` (for `tenant`, when given) is pinned to and where it is
    /// written. A tenant decision pins what the policy checks: the tenant's binding applied to
    /// the sealed base without its `base_url` ([`TenantBinding::reviewed`]), re-derived here,
    /// never taken from the binding file.
    fn decision_target(
        &self,
        entry: &CatalogEntry,
        tenant: Option<&TenantId>,
    ) -> Result<DecisionTarget, CatalogError> {
        let base_hash = sealed_hash(entry)?;
        let reference = entry
            .reference
            .clone()
            .expect("a parsed entry has a reference");
        let Some(tenant) = tenant else {
            return Ok(DecisionTarget {
                content_hash: base_hash,
                path: approval_path(&self.config.capabilities, &reference),
                current: entry.approval.clone(),
                previous: entry.review.clone(),
            });
        };
        let binding_path = self
            .config
            .tenants
            .join(tenant.as_str())
            .join(format!("{}{CAPABILITY_SUFFIX}", reference.id()));
        let Some(binding) = self.binding(tenant, &reference)? else {
            return Err(CatalogError::NoBinding {
                reference: Box::new(reference),
                tenant: tenant.clone(),
                path: binding_path,
            });
        };
        let base = entry
            .capability
            .as_ref()
            .expect("a sealed entry holds its capability");
        let effective = binding
            .reviewed(base)
            .map_err(|error| CatalogError::Invalid {
                path: binding_path.clone(),
                reason: format!("the binding does not apply: {error}"),
            })?;
        let integrity = Integrity::of(&effective);
        let Integrity::Sealed { content_hash } = &integrity else {
            return Err(CatalogError::Invalid {
                path: binding_path,
                reason: "the binding's effective capability is not sealed".to_owned(),
            });
        };
        let path = tenant_approval_path(&self.config.tenants, tenant, &reference);
        let current = read_approval(&path, &reference).map_err(|reason| CatalogError::Invalid {
            path: path.clone(),
            reason,
        })?;
        let previous = ReviewStatus::judge(&integrity, current.as_ref());
        Ok(DecisionTarget {
            content_hash: content_hash.clone(),
            path,
            current,
            previous,
        })
    }

    /// The search documents of every usable (sealed or draft) artifact; tampered and invalid
    /// ones cannot be called, so they are not offered.
    pub fn search_documents(entries: &[CatalogEntry]) -> Vec<SearchDocument> {
        entries
            .iter()
            .filter(|entry| {
                matches!(
                    entry.integrity,
                    Integrity::Sealed { .. } | Integrity::Draft { .. }
                )
            })
            .filter_map(|entry| {
                entry.capability.as_ref().map(|capability| {
                    SearchDocument::from_capability(capability, entry.review.is_approved())
                })
            })
            .collect()
    }

    /// The assessments of every evaluation of `reference` at `content_hash`, when there is at
    /// least one and all pass.
    fn passing_evaluations(
        &self,
        reference: &CapabilityRef,
        content_hash: &ContentHash,
    ) -> Result<Vec<Assessment>, CatalogError> {
        let scan = self.evaluations()?;
        let of_reference: Vec<&EvaluationRecord> = scan
            .records
            .iter()
            .filter(|record| record.evaluation.capability == *reference)
            .collect();
        let at_hash: Vec<Assessment> = of_reference
            .iter()
            .filter(|record| record.evaluation.content_hash == *content_hash)
            .map(|record| record.assess())
            .collect();
        if at_hash.is_empty() {
            let mut other_hashes: Vec<String> = of_reference
                .iter()
                .map(|record| record.evaluation.content_hash.to_string())
                .collect();
            other_hashes.sort();
            other_hashes.dedup();
            let mut reason = if other_hashes.is_empty() {
                format!(
                    "no evaluation of {reference} was found in {}",
                    self.evaluation_directories()
                )
            } else {
                format!(
                    "no evaluation of {reference} at {content_hash}; the evaluations found are of \
                     other content ({}), so run the suite against this exact version",
                    other_hashes.join(", ")
                )
            };
            if !scan.problems.is_empty() {
                reason.push_str(&format!(
                    " ({} evaluation file(s) could not be read: {})",
                    scan.problems.len(),
                    scan.problems
                        .iter()
                        .map(|problem| format!("{}: {}", problem.path.display(), problem.reason))
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
            }
            return Err(CatalogError::NoEvaluation {
                reference: Box::new(reference.clone()),
                content_hash: content_hash.clone(),
                reason,
            });
        }
        if at_hash.iter().all(Assessment::passed) {
            Ok(at_hash)
        } else {
            Err(CatalogError::EvaluationFailed {
                reference: Box::new(reference.clone()),
                content_hash: content_hash.clone(),
                assessments: at_hash,
            })
        }
    }

    fn evaluation_directories(&self) -> String {
        if self.config.capabilities == self.config.evaluations {
            self.config.evaluations.display().to_string()
        } else {
            format!(
                "{} or {}",
                self.config.evaluations.display(),
                self.config.capabilities.display()
            )
        }
    }
}

/// What a decision is pinned to and where it is written.
struct DecisionTarget {
    content_hash: ContentHash,
    path: PathBuf,
    /// The decision recorded there now.
    current: Option<CapabilityApproval>,
    previous: ReviewStatus,
}

fn write_approval(path: &Path, approval: &CapabilityApproval) -> Result<(), CatalogError> {
    let body = yaml::to_yaml(approval).map_err(|error| CatalogError::Invalid {
        path: path.to_owned(),
        reason: error.to_string(),
    })?;
    let modeline =
        cua_fs::schema_modeline(path, &DocumentKind::Approval.schema_path()).unwrap_or_default();
    let text = format!(
        "{modeline}# Written by `cua catalog`. This decision covers exactly `content_hash`: any \
         change\n# to the artifact's meaning voids it.\n{body}"
    );
    cua_fs::write_atomic(path, text.as_bytes(), FileMode::Readable).map_err(CatalogError::Write)
}

/// A tenant's own approval, beside its binding.
pub fn tenant_approval_path(
    tenants: &Path,
    tenant: &TenantId,
    reference: &CapabilityRef,
) -> PathBuf {
    tenants
        .join(tenant.as_str())
        .join(format!("{reference}{APPROVAL_SUFFIX}"))
}

/// The approval file beside an artifact.
pub fn approval_path(capabilities: &Path, reference: &CapabilityRef) -> PathBuf {
    capabilities.join(format!("{reference}{APPROVAL_SUFFIX}"))
}

fn read_entry(path: &Path, name: &str) -> CatalogEntry {
    let invalid = |reference: Option<CapabilityRef>, reason: String| CatalogEntry {
        path: path.to_owned(),
        reference,
        integrity: Integrity::Invalid { reason },
        capability: None,
        approval: None,
        review: ReviewStatus::Unreviewed,
    };
    let stem = name.strip_suffix(CAPABILITY_SUFFIX).unwrap_or(name);
    let reference = match CapabilityRef::parse(stem) {
        Ok(reference) => reference,
        Err(error) => {
            return invalid(
                None,
                format!("the file name is not `<id>@<version>.yaml`: {error}"),
            );
        }
    };
    let text = match cua_fs::read_to_string_bounded(path, DOCUMENT_LIMIT) {
        Ok(text) => text,
        Err(error) => return invalid(Some(reference), format!("cannot read the file: {error}")),
    };
    let capability: Capability = match yaml::from_yaml(&text) {
        Ok(capability) => capability,
        Err(error) => return invalid(Some(reference), error.to_string()),
    };
    let problems = capability.validate();
    if !problems.is_empty() {
        let reason = problems
            .iter()
            .map(|problem| {
                format!(
                    "[{}] {}: {}",
                    problem.code.as_str(),
                    problem.path,
                    problem.message
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        return invalid(Some(reference), reason);
    }
    if capability.reference() != reference {
        return invalid(
            Some(reference),
            format!(
                "the file name says {}, the content is {}",
                stem,
                capability.reference()
            ),
        );
    }
    let integrity = Integrity::of(&capability);
    let approval_file = approval_path(
        path.parent().unwrap_or(Path::new(".")),
        &capability.reference(),
    );
    let (approval, review) = match read_approval(&approval_file, &reference) {
        Ok(approval) => {
            let review = ReviewStatus::judge(&integrity, approval.as_ref());
            (approval, review)
        }
        Err(reason) => (None, ReviewStatus::Invalid { reason }),
    };
    CatalogEntry {
        path: path.to_owned(),
        reference: Some(reference),
        integrity,
        capability: Some(capability),
        approval,
        review,
    }
}

fn read_approval(
    path: &Path,
    reference: &CapabilityRef,
) -> Result<Option<CapabilityApproval>, String> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = cua_fs::read_to_string_bounded(path, DOCUMENT_LIMIT)
        .map_err(|error| format!("cannot read the file: {error}"))?;
    let approval: CapabilityApproval = yaml::from_yaml(&text).map_err(|error| error.to_string())?;
    if approval.capability != *reference {
        return Err(format!(
            "it approves {}, not {reference}",
            approval.capability
        ));
    }
    Ok(Some(approval))
}

/// The capability of a sealed or draft entry, or the refusal.
fn usable(entry: CatalogEntry) -> Result<Capability, CatalogError> {
    match entry.integrity {
        Integrity::Tampered { declared, computed } => Err(CatalogError::Tampered {
            reference: Box::new(entry.reference.expect("a parsed entry has a reference")),
            declared,
            computed,
        }),
        Integrity::Invalid { reason } => Err(CatalogError::Invalid {
            path: entry.path,
            reason,
        }),
        Integrity::Sealed { .. } | Integrity::Draft { .. } => Ok(entry
            .capability
            .expect("a sealed or draft entry holds its capability")),
    }
}

/// The sealed hash approval can pin, or why there is none.
fn sealed_hash(entry: &CatalogEntry) -> Result<ContentHash, CatalogError> {
    let reference = || {
        Box::new(
            entry
                .reference
                .clone()
                .expect("a parsed entry has a reference"),
        )
    };
    match &entry.integrity {
        Integrity::Sealed { content_hash } => Ok(content_hash.clone()),
        Integrity::Draft { .. } => Err(CatalogError::Unsealed {
            reference: reference(),
        }),
        Integrity::Tampered { declared, computed } => Err(CatalogError::Tampered {
            reference: reference(),
            declared: declared.clone(),
            computed: computed.clone(),
        }),
        Integrity::Invalid { reason } => Err(CatalogError::Invalid {
            path: entry.path.clone(),
            reason: reason.clone(),
        }),
    }
}

fn reviewer(by: &str) -> Result<String, CatalogError> {
    let by = by.trim();
    if by.is_empty() {
        Err(CatalogError::NoReviewer)
    } else {
        Ok(by.to_owned())
    }
}

fn read_directory(directory: &Path) -> Result<Vec<String>, CatalogError> {
    let read_error = |source| CatalogError::ReadDirectory {
        path: directory.to_owned(),
        source,
    };
    let mut names = Vec::new();
    for item in std::fs::read_dir(directory).map_err(read_error)? {
        let item = item.map_err(read_error)?;
        if item.file_type().map_err(read_error)?.is_file() {
            names.push(item.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

fn read_text(path: &Path) -> Result<String, CatalogError> {
    cua_fs::read_to_string_bounded(path, DOCUMENT_LIMIT).map_err(CatalogError::Read)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}
