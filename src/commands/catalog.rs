//! `cua catalog list|show|approve|revoke|search`: the capability catalog on disk. Exit 0 when
//! the command did what was asked, 1 when a review criterion refused it (`approve --from-eval`
//! without a passing evaluation), 2 for a usage error or a missing, invalid or tampered document.

use std::fmt::Write as _;
use std::path::PathBuf;

use cua_artifact::{CapabilityRef, RiskTier, SurfaceKind, TenantId};
use cua_catalog::{
    ApproveRequest, Catalog, CatalogConfig, CatalogEntry, CatalogError, DecisionRecorded,
    Integrity, Resolution, ReviewStatus, RevokeRequest, SearchFilters, SearchIndex, SearchQuery,
    SearchResults, signature,
};
use cua_evidence::Clock as _;
use serde::Serialize;

use crate::cli::{
    CatalogApproveArgs, CatalogArgs, CatalogCommand, CatalogPaths, CatalogRevokeArgs,
    CatalogSearchArgs, CatalogShowArgs, Format, RiskArg, SurfaceArg,
};
use crate::error::{CliError, ErrorCode};
use crate::output::{self, Exit, emit};
use crate::project::{self, DefaultPath};

/// Runs one catalog command.
pub(crate) fn run(format: Format, args: &CatalogArgs) -> Result<Exit, CliError> {
    let paths = CatalogPaths {
        catalog: args.catalog.clone(),
        tenants: args.tenants.clone(),
    };
    let tenant = match &args.command {
        CatalogCommand::Show(show) => show.tenant.as_deref(),
        CatalogCommand::Approve(approve) => approve.tenant.as_deref(),
        CatalogCommand::Revoke(revoke) => revoke.tenant.as_deref(),
        CatalogCommand::List | CatalogCommand::Search(_) => None,
    };
    // A malformed tenant is the mistake to report, before where its bindings would be.
    let tenant_id = tenant
        .map(TenantId::parse)
        .transpose()
        .map_err(|error| CliError::new(ErrorCode::InvalidTenant, error.to_string()))?;
    let capabilities = paths.catalog()?;
    let catalog = Catalog::new(CatalogConfig {
        capabilities: capabilities.clone(),
        evaluations: project::or_default_or(
            args.evals.as_deref(),
            DefaultPath::Evaluations,
            || Ok(capabilities.clone()),
        )?,
        tenants: paths.tenants_for(tenant)?,
    });
    match &args.command {
        CatalogCommand::List => list(format, &catalog),
        CatalogCommand::Show(show_args) => show(format, &catalog, show_args, tenant_id),
        CatalogCommand::Approve(approve_args) => approve(format, &catalog, approve_args, tenant_id),
        CatalogCommand::Revoke(revoke_args) => revoke(format, &catalog, revoke_args, tenant_id),
        CatalogCommand::Search(search_args) => search(format, &catalog, search_args),
    }
}

/// One capability as `list` and `show` report it.
#[derive(Debug, Serialize)]
struct EntryView {
    reference: String,
    file: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
    outcomes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_risk: Option<RiskTier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    surface: Option<SurfaceKind>,
    integrity: Integrity,
    /// `draft`, `approved`, `rejected`, `revoked`, `stale approval` or `invalid approval`.
    approval_state: &'static str,
    review: ReviewStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    approved_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    approved_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unattended_replay: Option<bool>,
}

#[derive(Debug, Serialize)]
struct ListView {
    capabilities: Vec<EntryView>,
}

fn list(format: Format, catalog: &Catalog) -> Result<Exit, CliError> {
    let entries = match catalog.list() {
        Ok(entries) => entries,
        Err(error) => return Err(CliError::from(&error)),
    };
    let view = ListView {
        capabilities: entries.iter().map(entry_view).collect(),
    };
    emit(format, "catalog list", Some(&view), None, || {
        let mut out = String::new();
        for entry in &view.capabilities {
            // An unreadable file has no content an approval could be judged against.
            let approval_state = match entry.integrity {
                Integrity::Invalid { .. } => "-",
                _ => entry.approval_state,
            };
            let _ = writeln!(
                out,
                "{}  {}  {approval_state}",
                entry.reference,
                entry.integrity.label(),
            );
            match &entry.integrity {
                Integrity::Invalid { reason } => {
                    let _ = writeln!(out, "    {reason}");
                }
                _ => {
                    if let Some(title) = &entry.title {
                        let _ = writeln!(out, "    {title}");
                    }
                    if let Some(signature) = &entry.signature {
                        let _ = writeln!(out, "    {signature}");
                    }
                    if !entry.outcomes.is_empty() {
                        let _ = writeln!(out, "    outcomes: {}", entry.outcomes.join(", "));
                    }
                }
            }
        }
        let count = |label: &str| {
            view.capabilities
                .iter()
                .filter(|entry| entry.integrity.label() == label)
                .count()
        };
        let approved = view
            .capabilities
            .iter()
            .filter(|entry| entry.review.is_approved())
            .count();
        let _ = writeln!(
            out,
            "{} capabilities: {} sealed, {} draft, {} TAMPERED, {} invalid; {approved} approved",
            view.capabilities.len(),
            count("sealed"),
            count("draft"),
            count("TAMPERED"),
            count("invalid"),
        );
        out
    });
    Ok(Exit::Success)
}

/// `show`: the entry, its evaluations, and the tenant's view of its approval.
#[derive(Debug, Serialize)]
struct ShowView {
    #[serde(flatten)]
    entry: EntryView,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    approval: cua_catalog::ApprovalAnswer,
    evaluations: Vec<EvaluationView>,
}

#[derive(Debug, Serialize)]
struct EvaluationView {
    file: PathBuf,
    content_hash: String,
    /// Whether it evaluated this exact content.
    current: bool,
    passed: bool,
    assessment: cua_catalog::Assessment,
}

fn show(
    format: Format,
    catalog: &Catalog,
    args: &CatalogShowArgs,
    tenant: Option<TenantId>,
) -> Result<Exit, CliError> {
    let command = "catalog show";
    let reference = match catalog.resolve(&args.reference) {
        Ok(reference) => reference,
        Err(error) => return Err(CliError::from(&error)),
    };
    if args.tool_schema {
        return match catalog.load(&reference) {
            Ok(capability) => {
                let schema = capability.tool_schema();
                emit(format, command, Some(&schema), None, || {
                    let mut text =
                        serde_json::to_string_pretty(&schema).expect("a tool schema is plain JSON");
                    text.push('\n');
                    text
                });
                Ok(Exit::Success)
            }
            Err(error) => Err(CliError::from(&error)),
        };
    }
    let entry = match catalog.entry(&reference) {
        Ok(entry) => entry,
        Err(error) => return Err(CliError::from(&error)),
    };
    let refusal = match &entry.integrity {
        Integrity::Invalid { reason } => Some(CatalogError::Invalid {
            path: entry.path.clone(),
            reason: reason.clone(),
        }),
        Integrity::Tampered { declared, computed } => Some(CatalogError::Tampered {
            reference: Box::new(reference.clone()),
            declared: declared.clone(),
            computed: computed.clone(),
        }),
        Integrity::Sealed { .. } | Integrity::Draft { .. } => None,
    };
    if let Some(error) = refusal
        .as_ref()
        .filter(|error| matches!(error, CatalogError::Invalid { .. }))
    {
        return Err(CliError::from(error));
    }
    // A tenant the catalog has no directory for is a misspelt one (a tenant with bindings of
    // other capabilities runs this one's base, as its remedies and MCP server do).
    if let Some(tenant) = &tenant {
        let directory = catalog.binding_path(tenant, reference.id());
        if directory
            .parent()
            .is_none_or(|directory| !directory.is_dir())
        {
            return Err(crate::error::no_binding(catalog, tenant, reference.id()));
        }
    }
    let approval = match catalog.approval_for(&reference, tenant.as_ref()) {
        Ok(approval) => approval,
        Err(error) => return Err(CliError::from(&error)),
    };
    let evaluations = match catalog.evaluations() {
        Ok(scan) => {
            let current = entry.integrity.computed_hash().cloned();
            scan.records
                .iter()
                .filter(|record| record.evaluation.capability == reference)
                .map(|record| {
                    let assessment = record.assess();
                    EvaluationView {
                        file: record.source.clone(),
                        content_hash: record.evaluation.content_hash.to_string(),
                        current: Some(&record.evaluation.content_hash) == current.as_ref(),
                        passed: assessment.passed(),
                        assessment,
                    }
                })
                .collect()
        }
        Err(error) => return Err(CliError::from(&error)),
    };
    let view = ShowView {
        description: entry
            .capability
            .as_ref()
            .map(|capability| capability.description.clone()),
        entry: entry_view(&entry),
        approval,
        evaluations,
    };
    let error = refusal.as_ref().map(CliError::from);
    Ok(output::report(
        format,
        command,
        Some(&view),
        error.as_ref(),
        || render_show(&view, &entry),
    ))
}

fn render_show(view: &ShowView, entry: &CatalogEntry) -> String {
    let mut out = String::new();
    let line = |out: &mut String, label: &str, value: &str| {
        let _ = writeln!(out, "  {label:<12} {value}");
    };
    let _ = writeln!(out, "{}", view.entry.reference);
    if let Some(title) = &view.entry.title {
        line(&mut out, "title", title);
    }
    if let Some(signature) = &view.entry.signature {
        line(&mut out, "signature", signature);
    }
    if let Some(description) = &view.description {
        line(&mut out, "description", description);
    }
    if let Some(capability) = &entry.capability {
        let app = &capability.surface.app;
        line(
            &mut out,
            "surface",
            &format!(
                "{} ({} {}{})",
                wire_name(&capability.surface.kind),
                app.vendor,
                app.product,
                app.version_range
                    .as_deref()
                    .map(|range| format!(" {range}"))
                    .unwrap_or_default()
            ),
        );
        line(
            &mut out,
            "risk",
            &format!(
                "{} (the riskiest of {} steps)",
                capability.max_risk().as_str(),
                capability.steps.len()
            ),
        );
        for (position, outcome) in capability.outcomes.iter().enumerate() {
            let label = if position == 0 { "outcomes" } else { "" };
            let description = if outcome.description.is_empty() {
                String::new()
            } else {
                format!(": {}", outcome.description)
            };
            line(&mut out, label, &format!("{}{description}", outcome.code));
        }
    }
    let integrity = match &view.entry.integrity {
        Integrity::Sealed { content_hash } => format!("sealed {content_hash}"),
        Integrity::Draft { computed } => format!("draft (content is {computed})"),
        Integrity::Tampered { declared, computed } => {
            format!("TAMPERED: declared {declared}, computed {computed}")
        }
        Integrity::Invalid { reason } => format!("invalid: {reason}"),
    };
    line(&mut out, "integrity", &integrity);
    let review = match (&view.entry.review, &entry.approval) {
        (ReviewStatus::Stale { pinned, why, .. }, _) => {
            format!("stale approval: pinned to {pinned}; {why}")
        }
        (ReviewStatus::Invalid { reason }, _) => format!("invalid approval file: {reason}"),
        (ReviewStatus::Current { .. }, Some(approval)) => format!(
            "{} by {}{}{}",
            view.entry.approval_state,
            approval
                .approved_by
                .as_deref()
                .unwrap_or("an unnamed reviewer"),
            approval
                .approved_at
                .as_deref()
                .map(|at| format!(" at {at}"))
                .unwrap_or_default(),
            if approval.scope.unattended_replay {
                ", unattended replay"
            } else {
                ""
            }
        ),
        _ => view.entry.approval_state.to_owned(),
    };
    line(&mut out, "approval", &review);
    if let Some(approval) = &entry.approval
        && !approval.notes.is_empty()
    {
        line(&mut out, "notes", &approval.notes);
    }
    if let Some(tenant) = &view.approval.tenant {
        line(
            &mut out,
            "tenant",
            &format!(
                "{tenant}: {}: {}",
                if view.approval.approved {
                    "approved"
                } else {
                    "not approved"
                },
                view.approval.reason
            ),
        );
    }
    for (position, evaluation) in view.evaluations.iter().enumerate() {
        let label = if position == 0 { "evaluations" } else { "" };
        let verdict = if !evaluation.current {
            format!("of other content ({})", evaluation.content_hash)
        } else if evaluation.passed {
            "passes every criterion".to_owned()
        } else {
            let failed: Vec<&str> = evaluation
                .assessment
                .failures()
                .map(|result| result.detail.as_str())
                .collect();
            format!("fails: {}", failed.join("; "))
        };
        line(
            &mut out,
            label,
            &format!("{}: {verdict}", evaluation.file.display()),
        );
    }
    out
}

/// What `approve` and `revoke` report.
#[derive(Debug, Serialize)]
struct DecisionView<'a> {
    reference: &'a CapabilityRef,
    #[serde(flatten)]
    decision: &'a DecisionRecorded,
}

fn approve(
    format: Format,
    catalog: &Catalog,
    args: &CatalogApproveArgs,
    tenant: Option<TenantId>,
) -> Result<Exit, CliError> {
    let command = "catalog approve";
    let reference = match catalog.resolve(&args.reference) {
        Ok(reference) => reference,
        Err(error) => return Err(CliError::from(&error)),
    };
    let request = ApproveRequest {
        reference: reference.clone(),
        by: args.by.clone(),
        at: now(),
        notes: args.notes.clone(),
        from_eval: args.from_eval,
        tenant,
    };
    match catalog.approve(&request) {
        Ok(decision) => {
            let view = DecisionView {
                reference: &reference,
                decision: &decision,
            };
            emit(format, command, Some(&view), None, || {
                let mut out = format!(
                    "approved {reference} at {} by {}\n",
                    decision.approval.content_hash,
                    decision.approval.approved_by.as_deref().unwrap_or_default()
                );
                if decision.approval.scope.unattended_replay {
                    out.push_str("  unattended replay: yes, on the evidence of\n");
                    for assessment in &decision.evidence {
                        let _ = writeln!(out, "    {}", assessment.summary());
                    }
                } else {
                    out.push_str("  unattended replay: no (approve --from-eval to allow it)\n");
                }
                let _ = writeln!(out, "  wrote {}", decision.path.display());
                out
            });
            Ok(Exit::Success)
        }
        Err(error) => {
            let data = match &error {
                CatalogError::EvaluationFailed { assessments, .. } => {
                    Some(serde_json::json!({ "assessments": assessments }))
                }
                _ => None,
            };
            Ok(output::fail_with(
                format,
                command,
                data.as_ref(),
                &CliError::from(&error),
            ))
        }
    }
}

fn revoke(
    format: Format,
    catalog: &Catalog,
    args: &CatalogRevokeArgs,
    tenant: Option<TenantId>,
) -> Result<Exit, CliError> {
    let command = "catalog revoke";
    let reference = match catalog.resolve(&args.reference) {
        Ok(reference) => reference,
        Err(error) => return Err(CliError::from(&error)),
    };
    let request = RevokeRequest {
        reference: reference.clone(),
        by: args.by.clone(),
        at: now(),
        notes: args.notes.clone(),
        tenant,
    };
    match catalog.revoke(&request) {
        Ok(decision) => {
            let view = DecisionView {
                reference: &reference,
                decision: &decision,
            };
            emit(format, command, Some(&view), None, || {
                format!(
                    "revoked {reference} (was {}) by {}\n  wrote {}\n",
                    decision.previous.label(),
                    decision.approval.approved_by.as_deref().unwrap_or_default(),
                    decision.path.display()
                )
            });
            Ok(Exit::Success)
        }
        Err(error) => Err(CliError::from(&error)),
    }
}

#[derive(Debug, Serialize)]
struct SearchView<'a> {
    query: &'a str,
    top: usize,
    #[serde(flatten)]
    results: &'a SearchResults,
}

fn search(format: Format, catalog: &Catalog, args: &CatalogSearchArgs) -> Result<Exit, CliError> {
    let command = "catalog search";
    let entries = match catalog.list() {
        Ok(entries) => entries,
        Err(error) => return Err(CliError::from(&error)),
    };
    let index = SearchIndex::build(Catalog::search_documents(&entries));
    let query = SearchQuery {
        text: args.intent.clone(),
        filters: SearchFilters {
            max_risk: args.max_risk.map(|risk| match risk {
                RiskArg::Safe => RiskTier::Safe,
                RiskArg::Elevated => RiskTier::Elevated,
                RiskArg::Irreversible => RiskTier::Irreversible,
            }),
            surface: args.surface.map(|surface| match surface {
                SurfaceArg::Web => SurfaceKind::Web,
                SurfaceArg::LegacyWeb => SurfaceKind::LegacyWeb,
                SurfaceArg::Desktop => SurfaceKind::Desktop,
            }),
            approved_only: args.approved,
        },
        top_k: args.top,
    };
    let results = index.search(&query);
    let view = SearchView {
        query: &args.intent,
        top: args.top,
        results: &results,
    };
    emit(format, command, Some(&view), None, || {
        render_search(&results)
    });
    Ok(Exit::Success)
}

fn render_search(results: &SearchResults) -> String {
    let mut out = String::new();
    let words: Vec<String> = results
        .words
        .iter()
        .map(|word| match &word.resolution {
            Resolution::Exact => word.word.clone(),
            Resolution::Corrected { term, distance } => {
                format!("{} → {term} (typo, distance {distance})", word.word)
            }
            Resolution::Ambiguous {
                distance,
                candidates,
            } => format!(
                "{} (not corrected: {} are equally near, distance {distance})",
                word.word,
                candidates.join(", ")
            ),
            Resolution::Unknown => format!("{} (no match)", word.word),
        })
        .collect();
    let _ = writeln!(
        out,
        "query: {}\nmatched {}, removed by filters {}, showing {}",
        if words.is_empty() {
            "(no searchable words)".to_owned()
        } else {
            words.join(", ")
        },
        results.matched,
        results.filtered_out,
        results.hits.len()
    );
    if !results.ignored_words.is_empty() {
        let _ = writeln!(
            out,
            "ignored beyond the first {} words: {}",
            cua_catalog::MAX_QUERY_WORDS,
            results.ignored_words.join(", ")
        );
    }
    for (rank, hit) in results.hits.iter().enumerate() {
        let _ = writeln!(
            out,
            "\n{}. {}  score {:.3}  {} · {} · {}",
            rank + 1,
            hit.reference,
            hit.score,
            hit.max_risk.as_str(),
            wire_name(&hit.surface),
            if hit.approved {
                "approved"
            } else {
                "not approved"
            }
        );
        let _ = writeln!(out, "   {}", hit.title);
        // One line per matched term: its contribution from each field.
        let mut lines: Vec<(String, Vec<String>)> = Vec::new();
        for field_match in &hit.explanation.matches {
            let term = if field_match.distance == 0 {
                field_match.term.clone()
            } else {
                format!("{} → {}", field_match.word, field_match.term)
            };
            let part = format!(
                "{} {:.3}",
                field_match.field.as_str(),
                field_match.contribution
            );
            match lines.iter_mut().find(|(seen, _)| *seen == term) {
                Some((_, parts)) => parts.push(part),
                None => lines.push((term, vec![part])),
            }
        }
        for (term, parts) in lines {
            let _ = writeln!(out, "   {term}: {}", parts.join(", "));
        }
        let _ = writeln!(out, "   lexical {:.3}", hit.explanation.lexical);
        for signal in &hit.explanation.signals {
            let _ = writeln!(
                out,
                "   {} {:.3}: {}",
                signal.name, signal.value, signal.detail
            );
        }
    }
    if results.hits.is_empty() {
        out.push_str("no capability matches\n");
    }
    out
}

fn entry_view(entry: &CatalogEntry) -> EntryView {
    let capability = entry.capability.as_ref();
    let approval = entry.approval.as_ref();
    EntryView {
        reference: entry.display_name(),
        file: entry.path.clone(),
        title: capability.map(|capability| capability.title.clone()),
        signature: capability.map(signature),
        outcomes: capability
            .map(|capability| {
                capability
                    .outcomes
                    .iter()
                    .map(|outcome| outcome.code.to_string())
                    .collect()
            })
            .unwrap_or_default(),
        max_risk: capability.map(cua_artifact::Capability::max_risk),
        surface: capability.map(|capability| capability.surface.kind),
        integrity: entry.integrity.clone(),
        approval_state: entry.review.label(),
        review: entry.review.clone(),
        approved_by: approval.and_then(|approval| approval.approved_by.clone()),
        approved_at: approval.and_then(|approval| approval.approved_at.clone()),
        unattended_replay: approval.map(|approval| approval.scope.unattended_replay),
    }
}

/// The serde name of a closed-set value, such as `legacy_web`.
fn wire_name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The decision time, from the system clock: the one place the catalog's caller reads it.
fn now() -> String {
    cua_evidence::SystemClock.now().to_string()
}
