//! The demo's stages, in story order. Each one does its part against the live fixture and
//! browser, checks the fact that proves it, and returns that fact as one line of evidence.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cua_agent::{DiscoveryConfig, DiscoveryRequest, ModelConfig, StopReason};
use cua_artifact::{
    ApprovalState, Capability, CapabilityRef, FailureCode, ResolutionStrategy, RunStatus,
    TenantBinding, TenantId,
};
use cua_catalog::{ApproveRequest, Catalog, CatalogConfig};
use cua_evidence::{Clock, SystemClock};
use cua_fs::FileMode;
use cua_replay::{PreparedCapability, ReplayReport, RunRequest};
use memberdesk::{Fault, FaultCount, FixtureConfig, FixtureHandle, Variant};
use serde_json::Value;

use super::StageFuture;
use super::review::{REVIEW_YAML, ReviewAdditions, reviewed_file, roleless_queries};
use super::rig::{
    Demo, Draft, SIGN_ON, StageFailure, Tenant, describe, expect, failed, fixture_operator, inputs,
    llm_calls, outputs_line, plain, strategy_mix,
};
use crate::commands::compile::compile_run;
use crate::commands::discover::{DiscoveryRun, Model, discover_on};

/// The goal discovery is given: member 12345 is the only member it ever sees.
const GOAL: &str = "Look up member 12345 and report their savings balance, the account status, and the as-of date.";
const SAVINGS_BALANCE: &str = "corebank.member.savings_balance@1.0.0";
const TRANSFER: &str = "corebank.member.transfer_funds@1.0.0";
const NORTHGATE: &str = "northgate-fcu";
/// How many rows the batch stage runs, over how many pages of one browser.
const BATCH_ROWS: usize = 50;
const BATCH_PAGES: usize = 2;
/// The members the batch cycles through: three answers and one business outcome.
const BATCH_MEMBERS: [&str; 5] = ["12345", "67890", "24680", "99999", "67890"];

/// Stage 1: both MemberDesk variants in-process on free loopback ports, and the browser.
pub(super) fn fixture_app_up(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let mut served = Vec::new();
        for variant in [Variant::FirstValley, Variant::NorthgateFcu] {
            let fixture = memberdesk::serve(FixtureConfig::loopback(variant))
                .await
                .map_err(|error| failed(format!("serving MemberDesk {variant}: {error}")))?;
            expect(fixture.handle().member("12345").is_some(), || {
                format!("MemberDesk {variant} has no seeded member 12345")
            })?;
            served.push(fixture);
        }
        let surface = demo.launch_browser().await?;
        let mut served = served.into_iter();
        let (Some(first_valley), Some(northgate)) = (served.next(), served.next()) else {
            return Err(failed("both fixtures were started but not both kept"));
        };
        let fact = format!(
            "MemberDesk first-valley at {} and northgate-fcu at {} (in-process, free ports); Chromium headless",
            first_valley.base_url(),
            northgate.base_url()
        );
        demo.first_valley = Some(Tenant {
            fixture: first_valley,
            surface: Some(Arc::new(surface)),
        });
        demo.northgate = Some(Tenant {
            fixture: northgate,
            surface: None,
        });
        Ok(fact)
    })
}

/// Stage 2: the one run where a model decides, through the same chokepoint as replay.
pub(super) fn discovery(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let configured = ModelConfig::is_configured(|name| std::env::var(name).ok());
        let model = Model::start(!configured)
            .await
            .map_err(|error| failed(format!("{}: {}", error.code(), error.message())))?;
        let (fixture, surface) = demo.first_valley()?;
        let mut request = DiscoveryRequest::new(GOAL, format!("{}/", fixture.base_url()));
        request.sign_in = Some(demo.reference(SIGN_ON)?);
        let evidence_root = demo.out.join("discovery");
        let outcome = discover_on(
            surface,
            &demo.policy,
            &model.llm,
            DiscoveryRun {
                evidence_root: &evidence_root,
                run_id: "disc-demo",
                request: &request,
                config: DiscoveryConfig::default(),
                secret_overrides: fixture_operator(),
                on_event: None,
            },
        )
        .await;
        demo.model_requests_after_discovery = model.scripted_requests();
        let model_name = model.llm.config().model.clone();
        let scripted = model.llm.config().scripted;
        demo.model = Some(model);
        let (report, run_dir) =
            outcome.map_err(|error| failed(format!("{}: {}", error.code(), error.message())))?;
        expect(report.stop_reason == StopReason::GoalMet, || {
            format!(
                "discovery stopped with {} after {} tool calls ({})",
                report.stop_reason.as_str(),
                report.steps_attempted,
                run_dir.display()
            )
        })?;
        expect(report.model_calls > 0, || {
            "discovery reached the goal without a model call".to_owned()
        })?;
        demo.discovery_run = Some(run_dir);
        Ok(format!(
            "model {model_name}{} reached the goal: {} steps ({} effective), {} llm calls, {} tokens; read {}",
            if scripted {
                " (scripted, offline)"
            } else {
                " (live)"
            },
            report.steps_attempted,
            report.steps_effective,
            report.model_calls,
            report.tokens,
            report
                .outputs
                .iter()
                .map(|(name, value)| format!("{name}={value}"))
                .collect::<Vec<_>>()
                .join(" ")
        ))
    })
}

/// Stage 3: the trace becomes a draft, which is sealed as it is.
pub(super) fn compiled_and_sealed_draft(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let run_dir = demo
            .discovery_run
            .clone()
            .ok_or_else(|| failed("there is no discovery run to compile (stage 2)"))?;
        let transcript = run_dir.join(cua_evidence::TRACE_FILE).display().to_string();
        let summary = compile_run(&run_dir, &transcript, &demo.out.join("drafts"))
            .map_err(|error| failed(format!("{}: {}", error.code(), error.message())))?;
        let path = PathBuf::from(&summary.path);
        let text = read(&path)?;
        let sealed = cua_artifact::seal_source(&summary.path, &text).map_err(|diagnostics| {
            failed(format!(
                "the draft does not seal: {}",
                diagnostics
                    .iter()
                    .map(|diagnostic| diagnostic.message.clone())
                    .collect::<Vec<_>>()
                    .join("; ")
            ))
        })?;
        write(&path, &sealed.text)?;
        let capability = Capability::from_yaml(&sealed.text)
            .map_err(|error| failed(format!("the sealed draft does not load: {error}")))?;
        let hash = hash_of(&capability);
        expect(hash == summary.content_hash, || {
            format!(
                "sealed as {hash}, but the compiler announced {}",
                summary.content_hash
            )
        })?;
        expect(
            capability.outcomes.is_empty() && capability.recovery.is_empty(),
            || "the compiler invented outcomes or recovery".to_owned(),
        )?;
        expect(
            !capability.inputs.is_empty() && !capability.outputs.is_empty(),
            || "the draft has no inputs or no outputs".to_owned(),
        )?;
        let fact = format!(
            "{}: {} steps; inputs {}; outputs {}; 0 outcomes, 0 recovery, {} warning(s); sealed {hash} (the hash the compiler announced)",
            capability.reference(),
            summary.steps,
            summary.inputs.join(", "),
            summary.outputs.join(", "),
            summary.warnings.len(),
        );
        demo.draft = Some(Draft { capability });
        Ok(fact)
    })
}

/// Stage 4: the reviewer's outcomes and recovery, applied on the draft and resealed.
pub(super) fn reviewer_adds_outcomes_and_recovery(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let draft = demo
            .draft
            .as_ref()
            .ok_or_else(|| failed("there is no sealed draft to review (stage 3)"))?;
        let additions = ReviewAdditions::parse(REVIEW_YAML)
            .map_err(|error| failed(format!("review.yaml: {error}")))?;
        let review_dir = demo.out.join("review");
        create_dir(&review_dir)?;
        write(
            &review_dir.join(format!("{}.review.yaml", draft.capability.id)),
            REVIEW_YAML,
        )?;
        let reviewed = additions.apply(&draft.capability).map_err(failed)?;
        let draft_hash = hash_of(&draft.capability);
        let text = reviewed_file(&reviewed, &draft_hash).map_err(failed)?;
        let reread = Capability::from_yaml(&text)
            .map_err(|error| failed(format!("the reviewed file does not load: {error}")))?;
        expect(reread == reviewed, || {
            "the reviewed file reads back as a different capability".to_owned()
        })?;
        let hash = hash_of(&reviewed);
        expect(hash != draft_hash, || {
            "the review changed nothing the hash covers".to_owned()
        })?;
        let catalog = demo.demo_catalog();
        create_dir(&catalog)?;
        let path = catalog.join(reviewed.reference().file_name());
        write(&path, &text)?;
        let recovery: Vec<String> = reviewed
            .recovery
            .iter()
            .map(|rule| format!("{} (max {})", rule.id, rule.max_attempts))
            .collect();
        let outcomes: Vec<String> = reviewed
            .outcomes
            .iter()
            .map(|outcome| outcome.code.to_string())
            .collect();
        let roleless = (
            roleless_queries(&draft.capability),
            roleless_queries(&reviewed),
        );
        let fact = format!(
            "outcome {}; recovery {}; role given to {} of {} role-less label queries; validated and resealed {hash} (draft was {draft_hash}) in {}",
            outcomes.join(", "),
            recovery.join(", "),
            roleless.0.saturating_sub(roleless.1),
            roleless.0,
            path.display()
        );
        demo.reviewed = Some(reviewed);
        Ok(fact)
    })
}

/// Stage 5: members discovery never saw, with zero model calls.
pub(super) fn replay_with_unseen_inputs(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let reviewed = reviewed(demo)?;
        let (fixture, surface) = demo.first_valley()?;
        let base_url = fixture.base_url();
        let mut answers = Vec::new();
        let mut model_calls = 0;
        for member in ["67890", "24680"] {
            let report = demo
                .replay(
                    surface,
                    &base_url,
                    &format!("s05-member-{member}"),
                    member_request(reviewed, &base_url, member)?,
                )
                .await?;
            expect_answer(fixture.handle(), member, &report)?;
            model_calls += llm_calls(&report.evidence_dir)?;
            answers.push(format!(
                "{member}: SUCCESS {} ({} ms)",
                outputs_line(reviewed, &report),
                report.result.duration_ms
            ));
        }
        expect(model_calls == 0, || {
            format!("the replays' traces record {model_calls} model call(s)")
        })?;
        expect_model_untouched(demo)?;
        Ok(format!(
            "{}; 0 model calls (no llm_call in either trace{})",
            answers.join("; "),
            if demo.model_requests_after_discovery.is_some() {
                ", the scripted model answered nothing since discovery"
            } else {
                ""
            }
        ))
    })
}

/// Stage 6: "no such member" is an answer, not a failure.
pub(super) fn business_outcome(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let reviewed = reviewed(demo)?;
        let (fixture, surface) = demo.first_valley()?;
        let base_url = fixture.base_url();
        let report = demo
            .replay(
                surface,
                &base_url,
                "s06-member-99999",
                member_request(reviewed, &base_url, "99999")?,
            )
            .await?;
        let code = report
            .result
            .outcome
            .as_ref()
            .map(|outcome| outcome.code.to_string());
        expect(
            report.result.status == RunStatus::BusinessOutcome
                && code.as_deref() == Some("member_not_found")
                && (crate::commands::replay::exit_of(&report) as u8) == 0,
            || {
                format!(
                    "member 99999 gave {} (exit code {})",
                    describe(&report),
                    (crate::commands::replay::exit_of(&report) as u8)
                )
            },
        )?;
        let returned = report
            .result
            .outcome
            .iter()
            .flat_map(|outcome| &outcome.data)
            .map(|(name, value)| format!("{name}={}", plain(Some(value))))
            .collect::<Vec<_>>()
            .join(" ");
        Ok(format!(
            "member 99999: business_outcome member_not_found (returns {returned}), exit code 0, {} dispatches",
            report.dispatches
        ))
    })
}

/// Stage 7: a gateway error on the first page, cleared by the declared reload.
pub(super) fn injected_502_recovered(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let reviewed = reviewed(demo)?;
        let (fixture, surface) = demo.first_valley()?;
        let base_url = fixture.base_url();
        fixture
            .handle()
            .arm(Fault::TransientLoad, FaultCount::Times(1));
        let report = demo
            .replay(
                surface,
                &base_url,
                "s07-transient-502",
                member_request(reviewed, &base_url, "12345")?,
            )
            .await;
        fixture.handle().disarm(Fault::TransientLoad);
        let report = report?;
        expect_answer(fixture.handle(), "12345", &report)?;
        expect(report.result.recovery_attempts == 1, || {
            format!(
                "recovery_attempts={} (expected 1: the armed 502 fires once)",
                report.result.recovery_attempts
            )
        })?;
        Ok(format!(
            "transient_load armed once: 502 detected, reloaded by the declared recovery; SUCCESS {} with recovery_attempts=1 ({} ms)",
            outputs_line(reviewed, &report),
            report.result.duration_ms
        ))
    })
}

/// Stage 8: an input that breaks its pattern never reaches the application.
pub(super) fn malformed_input_refused(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let reviewed = reviewed(demo)?;
        let (fixture, surface) = demo.first_valley()?;
        let base_url = fixture.base_url();
        let malformed = "12a45";
        let report = demo
            .replay(
                surface,
                &base_url,
                "s08-malformed-input",
                member_request(reviewed, &base_url, malformed)?,
            )
            .await?;
        let code = report.result.error.as_ref().map(|error| error.code);
        expect(
            report.result.status == RunStatus::Failed
                && code == Some(FailureCode::InputValidationFailed)
                && report.dispatches == 0
                && (crate::commands::replay::exit_of(&report) as u8) == 1,
            || {
                format!(
                    "{malformed:?} gave {} with {} dispatches (exit code {})",
                    describe(&report),
                    report.dispatches,
                    (crate::commands::replay::exit_of(&report) as u8)
                )
            },
        )?;
        let pattern = reviewed
            .inputs
            .first()
            .and_then(|input| input.pattern.clone())
            .unwrap_or_default();
        Ok(format!(
            "{}={malformed:?}: failed input_validation_failed (pattern {pattern}), 0 dispatches, exit code 1",
            input_name(reviewed)?
        ))
    })
}

/// Stage 9: a screen nothing declared stops the run instead of being clicked through.
pub(super) fn undeclared_screen_fails_closed(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let reviewed = reviewed(demo)?;
        let (fixture, surface) = demo.first_valley()?;
        let base_url = fixture.base_url();
        fixture
            .handle()
            .arm(Fault::UndeclaredDialog, FaultCount::Times(1));
        let report = demo
            .replay(
                surface,
                &base_url,
                "s09-undeclared-dialog",
                member_request(reviewed, &base_url, "12345")?,
            )
            .await;
        fixture.handle().disarm(Fault::UndeclaredDialog);
        let report = report?;
        let error = report.result.error.as_ref();
        let fails_closed = match report.result.status {
            RunStatus::NeedsHuman => (crate::commands::replay::exit_of(&report) as u8) == 3,
            RunStatus::Failed => (crate::commands::replay::exit_of(&report) as u8) == 1,
            RunStatus::Success | RunStatus::BusinessOutcome => false,
        };
        expect(
            fails_closed && error.is_some_and(|error| error.code == FailureCode::UnexpectedState),
            || {
                format!(
                    "the undeclared dialog gave {} (exit code {})",
                    describe(&report),
                    (crate::commands::replay::exit_of(&report) as u8)
                )
            },
        )?;
        let clicked = report
            .steps
            .iter()
            .filter(|step| step.dispatched && step.step != "entrypoint")
            .count();
        expect(clicked == 0, || {
            format!("{clicked} step action(s) were dispatched on the undeclared screen")
        })?;
        let at = error
            .and_then(|error| error.step_id.as_ref())
            .map_or("-".to_owned(), ToString::to_string);
        let intervention = report
            .result
            .intervention
            .as_ref()
            .map_or(String::new(), |intervention| {
                format!(", intervention {}", intervention.intervention_id)
            });
        Ok(format!(
            "undeclared_dialog armed: {} unexpected_state before step {at}, exit code {}{intervention}; {} dispatch (the entrypoint), nothing clicked through",
            report.result.status.as_str(),
            (crate::commands::replay::exit_of(&report) as u8),
            report.dispatches
        ))
    })
}

/// Stage 10: the reference capability on the second tenant, through its overlay.
pub(super) fn northgate_tenant_via_overlay(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let surface = demo.launch_browser().await?;
        let Some(northgate) = demo.northgate.as_mut() else {
            surface.close().await;
            return Err(failed("the northgate-fcu fixture is not running (stage 1)"));
        };
        northgate.surface = Some(Arc::new(surface));
        let Some(Tenant {
            fixture,
            surface: Some(surface),
        }) = demo.northgate.as_ref()
        else {
            return Err(failed("the northgate-fcu browser went away"));
        };
        let base_url = fixture.base_url();
        let base = demo.reference(SAVINGS_BALANCE)?;
        let binding_path = demo
            .tenants
            .join(NORTHGATE)
            .join(format!("{}.yaml", base.id));
        let binding = TenantBinding::from_yaml(&read(&binding_path)?)
            .map_err(|error| failed(format!("{}: {error}", binding_path.display())))?;
        let hints = base
            .steps
            .iter()
            .filter_map(|step| step.action.target())
            .filter_map(|target| target.hints.css.clone())
            .collect::<Vec<_>>();
        let prepared = PreparedCapability::bind(base, Some(binding), Some(&base_url), None)
            .map_err(|error| failed(format!("applying {}: {error}", binding_path.display())))?;
        let effective = prepared.capability.clone();
        let mut request = RunRequest::new(prepared, super::rig::inputs(&[("member_id", "12345")]));
        request.tenant =
            Some(TenantId::parse(NORTHGATE).map_err(|error| failed(error.to_string()))?);
        let report = demo
            .replay(surface, &base_url, "s10-northgate-fcu", request)
            .await?;
        expect_answer(fixture.handle(), "12345", &report)?;
        let by_hint = report
            .result
            .strategy_mix
            .get(&ResolutionStrategy::HintCached)
            .copied()
            .unwrap_or(0);
        expect(by_hint == 0, || {
            format!("{by_hint} step(s) were found by a CSS hint")
        })?;
        Ok(format!(
            "{} + tenants/{NORTHGATE} on MemberDesk Pro: SUCCESS {}; strategies {}; 0 found by CSS hint (the base's {} is dead here); signed on by the session_expired recovery (recovery_attempts={}); effective hash {}",
            SAVINGS_BALANCE,
            outputs_line(&effective, &report),
            strategy_mix(&report),
            hints.join(", "),
            report.result.recovery_attempts,
            hash_of(&effective)
        ))
    })
}

/// Stage 11: the irreversible capability needs an approval pinned to its hash and the
/// caller's opt-in, and then moves the money exactly once.
pub(super) fn irreversible_transfer_gated(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let (fixture, surface) = demo.first_valley()?;
        let handle = fixture.handle();
        let base_url = fixture.base_url();
        let catalog_dir = demo.demo_catalog();
        create_dir(&catalog_dir)?;
        let file_name = format!("{TRANSFER}.yaml");
        copy(
            &demo.catalog.join(&file_name),
            &catalog_dir.join(&file_name),
        )?;
        let catalog = Catalog::new(CatalogConfig {
            capabilities: catalog_dir.clone(),
            evaluations: demo.out.join("evals"),
            tenants: demo.tenants.clone(),
        });
        let reference =
            CapabilityRef::parse(TRANSFER).map_err(|error| failed(error.to_string()))?;
        let transfer = catalog
            .load(&reference)
            .map_err(|error| failed(error.to_string()))?;
        let (from, to, amount) = ("S-12345-01", "C-12345-02", "10.00");
        let balance = |account: &str| handle.balance(account).map(memberdesk::Money::decimal);
        let before = (balance(from), balance(to));
        let request = |approval, allow_irreversible| -> Result<RunRequest, StageFailure> {
            let prepared =
                PreparedCapability::bind(transfer.clone(), None, Some(&base_url), approval)
                    .map_err(|error| failed(error.to_string()))?;
            let mut request = RunRequest::new(
                prepared,
                inputs(&[
                    ("member_id", "12345"),
                    ("from_account", from),
                    ("to_account", to),
                    ("amount", amount),
                ]),
            );
            request.allow_irreversible = allow_irreversible;
            Ok(request)
        };
        let refused = |report: &ReplayReport| {
            report.result.error.as_ref().map(|error| error.code) == Some(FailureCode::PolicyDenied)
                && report.dispatches == 0
        };

        let unapproved = demo
            .replay(
                surface,
                &base_url,
                "s11-transfer-unapproved",
                request(None, true)?,
            )
            .await?;
        expect(
            refused(&unapproved) && handle.transfers().is_empty(),
            || {
                format!(
                    "without an approval the transfer gave {} with {} dispatches",
                    describe(&unapproved),
                    unapproved.dispatches
                )
            },
        )?;

        let recorded = catalog
            .approve(&ApproveRequest {
                reference: reference.clone(),
                by: "demo-reviewer".to_owned(),
                at: SystemClock.now().to_string(),
                notes: Some("approved by cua demo for the transfer stage".to_owned()),
                from_eval: false,
                tenant: None,
            })
            .map_err(|error| failed(format!("approving {TRANSFER}: {error}")))?;
        let approval = catalog
            .entry(&reference)
            .map_err(|error| failed(error.to_string()))?
            .approval
            .ok_or_else(|| failed("the approval just written is not in the catalog"))?;
        expect(
            approval.state == ApprovalState::Approved
                && Some(&approval.content_hash) == transfer.content_hash.as_ref(),
            || "the approval is not pinned to the transfer's content hash".to_owned(),
        )?;

        let no_opt_in = demo
            .replay(
                surface,
                &base_url,
                "s11-transfer-no-opt-in",
                request(Some(approval.clone()), false)?,
            )
            .await?;
        expect(refused(&no_opt_in) && handle.transfers().is_empty(), || {
            format!(
                "with an approval but no opt-in the transfer gave {}",
                describe(&no_opt_in)
            )
        })?;

        let allowed = demo
            .replay(
                surface,
                &base_url,
                "s11-transfer-approved",
                request(Some(approval.clone()), true)?,
            )
            .await?;
        expect(allowed.result.status == RunStatus::Success, || {
            format!(
                "with an approval and the opt-in the transfer gave {}",
                describe(&allowed)
            )
        })?;
        let transfers = handle.transfers();
        let after = (balance(from), balance(to));
        let moved = |before: &Option<String>, after: &Option<String>, sign: i64| {
            let cents = |text: &Option<String>| {
                text.as_deref()
                    .and_then(|text| text.replace('.', "").parse::<i64>().ok())
            };
            match (cents(before), cents(after)) {
                (Some(before), Some(after)) => after - before == sign * 1_000,
                _ => false,
            }
        };
        expect(
            transfers.len() == 1 && moved(&before.0, &after.0, -1) && moved(&before.1, &after.1, 1),
            || {
                format!(
                    "{} transfer(s) posted; {from} {:?} -> {:?}, {to} {:?} -> {:?}",
                    transfers.len(),
                    before.0,
                    after.0,
                    before.1,
                    after.1
                )
            },
        )?;
        Ok(format!(
            "no approval: refused policy_denied, 0 dispatches; approval pinned to {} ({}) without opt-in: refused, 0 dispatches; approval + opt-in: SUCCESS {} confirmation={}; {from} {} -> {}, {to} {} -> {}, exactly 1 transfer posted",
            approval.content_hash,
            recorded.path.display(),
            allowed.effect.as_str(),
            plain(allowed.result.outputs.get("confirmation_number")),
            before.0.unwrap_or_default(),
            after.0.unwrap_or_default(),
            before.1.unwrap_or_default(),
            after.1.unwrap_or_default(),
        ))
    })
}

/// Stage 12: the reviewed capability through the batch command (`cua replay --inputs`), every
/// row checked against the fixture's truth.
pub(super) fn batch_of_replays(demo: &mut Demo) -> StageFuture<'_> {
    Box::pin(async move {
        let demo: &Demo = demo;
        let reviewed = reviewed(demo)?;
        let (fixture, _) = demo.first_valley()?;
        let input = input_name(reviewed)?;
        let batch_dir = demo.out.join("batch");
        create_dir(&batch_dir)?;
        let members: Vec<&str> = (0..BATCH_ROWS)
            .map(|row| BATCH_MEMBERS[row % BATCH_MEMBERS.len()])
            .collect();
        let rows_path = batch_dir.join("rows.jsonl");
        let rows: String = members
            .iter()
            .map(|member| format!("{}\n", serde_json::json!({ input.as_str(): member })))
            .collect();
        write(&rows_path, &rows)?;
        let capability_path = demo.demo_catalog().join(reviewed.reference().file_name());
        let executable = std::env::current_exe()
            .map_err(|error| failed(format!("cannot find the cua executable: {error}")))?;
        let mut command = tokio::process::Command::new(executable);
        command
            .arg("replay")
            .arg(&capability_path)
            .arg("--inputs")
            .arg(&rows_path)
            .arg("--concurrency")
            .arg(BATCH_PAGES.to_string())
            .arg("--base-url")
            .arg(fixture.base_url())
            .arg("--catalog")
            .arg(&demo.catalog)
            .arg("--tenants")
            .arg(&demo.tenants)
            .arg("--policy")
            .arg(&demo.policy_path)
            .arg("--evidence-dir")
            .arg(batch_dir.join("runs"))
            .arg("--run-id")
            .arg("s12-batch")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        // The batch signs its fresh browser on with the fixture's operator, through the
        // reviewed capability's session_expired recovery.
        let prefix = &demo.policy.config.secrets.env_prefix;
        for (name, value) in fixture_operator() {
            command.env(cua_evidence::env_var(prefix, name.as_str()), value);
        }
        let started = Instant::now();
        let output = command
            .output()
            .await
            .map_err(|error| failed(format!("cannot run `cua replay --inputs`: {error}")))?;
        let elapsed = started.elapsed();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<Value> = stdout
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        expect(output.status.success() && lines.len() == BATCH_ROWS, || {
            format!(
                "`cua replay --inputs` exited {:?} with {} of {BATCH_ROWS} row lines: {}",
                output.status.code(),
                lines.len(),
                stderr.lines().last().unwrap_or("")
            )
        })?;
        let mut tally = BatchTally::default();
        for line in &lines {
            tally.check(fixture.handle(), &members, line)?;
        }
        expect(tally.wrong.is_empty(), || {
            format!(
                "{} of {BATCH_ROWS} rows are wrong: {}",
                tally.wrong.len(),
                tally.wrong.join("; ")
            )
        })?;
        expect(tally.model_calls == 0, || {
            format!(
                "the batch's traces record {} model call(s)",
                tally.model_calls
            )
        })?;
        expect_model_untouched(demo)?;
        let seconds = elapsed.as_secs_f64();
        let per_minute = if seconds > 0.0 {
            BATCH_ROWS as f64 * 60.0 / seconds
        } else {
            0.0
        };
        Ok(format!(
            "`cua replay {} --inputs rows.jsonl --concurrency {BATCH_PAGES}`: {BATCH_ROWS} rows in {seconds:.1} s, browser start included = {per_minute:.0} replays/minute; {} success, {} member_not_found, 0 wrong answers (checked against the fixture), {} sign-on recovery, 0 model calls",
            reviewed.reference(),
            tally.answered,
            tally.not_found,
            tally.recovery_attempts,
        ))
    })
}

/// What the batch's row lines add up to.
#[derive(Default)]
struct BatchTally {
    answered: usize,
    not_found: usize,
    recovery_attempts: u64,
    model_calls: usize,
    wrong: Vec<String>,
}

impl BatchTally {
    /// Checks one row line of `cua replay --inputs` against the fixture's truth.
    fn check(
        &mut self,
        handle: &FixtureHandle,
        members: &[&str],
        line: &Value,
    ) -> Result<(), StageFailure> {
        let row = line["row"].as_u64().unwrap_or(0);
        let member = usize::try_from(row)
            .ok()
            .and_then(|row| row.checked_sub(1))
            .and_then(|index| members.get(index));
        let Some(member) = member else {
            self.wrong.push(format!("a line names row {row}"));
            return Ok(());
        };
        if let Some(dir) = line["evidence_dir"].as_str() {
            self.model_calls += llm_calls(Path::new(dir))?;
        }
        let result = &line["result"];
        self.recovery_attempts += result["recovery_attempts"].as_u64().unwrap_or(0);
        let status = line["status"].as_str().unwrap_or("?");
        if *member == "99999" {
            if status == "business_outcome"
                && result["outcome"]["code"].as_str() == Some("member_not_found")
            {
                self.not_found += 1;
            } else {
                self.wrong.push(format!("row {row} (99999): {status}"));
            }
            return Ok(());
        }
        let expected = truth(handle, member)?;
        let holds = status == "success"
            && expected
                .iter()
                .all(|(name, value)| result["outputs"][*name].as_str() == Some(value.as_str()));
        if holds {
            self.answered += 1;
        } else {
            self.wrong.push(format!(
                "row {row} ({member}): {status} {}",
                result["outputs"]
            ));
        }
        Ok(())
    }
}

/// The reviewed capability stage 4 wrote.
pub(super) fn reviewed(demo: &Demo) -> Result<&Capability, StageFailure> {
    demo.reviewed
        .as_ref()
        .ok_or_else(|| failed("there is no reviewed capability (stage 4)"))
}

/// The reviewed capability's one input.
pub(super) fn input_name(capability: &Capability) -> Result<String, StageFailure> {
    capability
        .inputs
        .first()
        .map(|input| input.name.to_string())
        .ok_or_else(|| failed(format!("{} has no input", capability.reference())))
}

/// A run of `capability` bound to `base_url` for one member.
pub(super) fn member_request(
    capability: &Capability,
    base_url: &str,
    member: &str,
) -> Result<RunRequest, StageFailure> {
    let prepared = PreparedCapability::bind(capability.clone(), None, Some(base_url), None)
        .map_err(|error| failed(format!("binding {}: {error}", capability.reference())))?;
    let name = input_name(capability)?;
    Ok(RunRequest::new(prepared, inputs(&[(&name, member)])))
}

/// What the fixture holds for `member`: the savings balance and status, and the as-of date
/// (ISO, as the `date` transform writes it), by output name.
pub(super) fn truth(
    handle: &FixtureHandle,
    member: &str,
) -> Result<[(&'static str, String); 3], StageFailure> {
    let account = handle
        .member(member)
        .and_then(|member| member.savings().cloned())
        .ok_or_else(|| failed(format!("the fixture has no savings account for {member}")))?;
    let parts: Vec<&str> = memberdesk::AS_OF.split('/').collect();
    let as_of = match parts.as_slice() {
        [month, day, year] => format!("{year}-{month}-{day}"),
        _ => memberdesk::AS_OF.to_owned(),
    };
    Ok([
        ("savings_balance", account.balance.decimal()),
        ("account_status", account.status.label().to_owned()),
        ("as_of", as_of),
    ])
}

/// Checks a run answered what the fixture holds for `member`, all read off the screen.
pub(super) fn expect_answer(
    handle: &FixtureHandle,
    member: &str,
    report: &ReplayReport,
) -> Result<(), StageFailure> {
    expect(report.result.status == RunStatus::Success, || {
        format!("member {member} gave {}", describe(report))
    })?;
    let expected = truth(handle, member)?;
    let outputs = &report.result.outputs;
    let holds = outputs.len() == expected.len()
        && expected
            .iter()
            .all(|(name, value)| plain(outputs.get(*name)) == *value);
    expect(holds, || {
        format!("member {member} read {outputs:?}, but the fixture holds {expected:?}")
    })
}

/// The scripted model has answered nothing since discovery ended.
fn expect_model_untouched(demo: &Demo) -> Result<(), StageFailure> {
    let now = demo.model.as_ref().and_then(Model::scripted_requests);
    expect(now == demo.model_requests_after_discovery, || {
        format!(
            "the scripted model answered {} request(s) after discovery",
            now.unwrap_or(0)
                .saturating_sub(demo.model_requests_after_discovery.unwrap_or(0))
        )
    })
}

pub(super) fn hash_of(capability: &Capability) -> String {
    capability
        .content_hash
        .as_ref()
        .map_or_else(|| "unsealed".to_owned(), ToString::to_string)
}

pub(super) fn read(path: &Path) -> Result<String, StageFailure> {
    cua_fs::read_to_string_bounded(path, crate::limits::DOCUMENT)
        .map_err(|error| failed(error.to_string()))
}

/// Writes a demo file whole, never through a link.
pub(super) fn write(path: &Path, text: &str) -> Result<(), StageFailure> {
    cua_fs::write_atomic(path, text.as_bytes(), FileMode::Readable)
        .map_err(|error| failed(error.to_string()))
}

/// Copies a document (a capability, a generated spec) into the demo's directories.
pub(super) fn copy(from: &Path, to: &Path) -> Result<(), StageFailure> {
    write(to, &read(from)?)
}

pub(super) fn create_dir(path: &Path) -> Result<(), StageFailure> {
    cua_fs::Dir::create_all(path, FileMode::Readable)
        .map(|_| ())
        .map_err(|error| failed(error.to_string()))
}
