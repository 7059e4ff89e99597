//! The irreversible capability: refused without an approval, refused without the caller's
//! opt-in, allowed with both, and never dispatched twice (the fixture's own ledger says how
//! many times money moved).

use cua_artifact::{
    ApprovalSchema, ApprovalScope, ApprovalState, CapabilityApproval, EffectVerdict, FailureCode,
    RunStatus,
};
use cua_policy::{Authorized, BrowserAction};
use cua_replay::{PreparedCapability, RunRequest};
use cua_snapshot::UiSnapshot;
use cua_surface::{
    BlockedRequest, DispatchReceipt, Screenshot, ScreenshotRequest, SurfaceDriver, SurfaceError,
    WaitCondition, WaitOutcome,
};
use memberdesk::{Fault, FaultCount, FixtureHandle, Money, Variant};

use crate::live::Live;
use crate::support::{capability, inputs};

const TRANSFER: &str = "corebank.member.transfer_funds@1.0.0";

fn approval_of(capability: &cua_artifact::Capability) -> CapabilityApproval {
    CapabilityApproval {
        schema: ApprovalSchema::default(),
        capability: capability.reference(),
        content_hash: capability.content_hash.clone().unwrap(),
        state: ApprovalState::Approved,
        approved_by: Some("reviewer".to_owned()),
        approved_at: None,
        scope: ApprovalScope {
            unattended_replay: true,
            tenants: Vec::new(),
        },
        notes: String::new(),
    }
}

fn request(prepared: PreparedCapability, allow_irreversible: bool) -> RunRequest {
    let mut request = RunRequest::new(
        prepared,
        inputs(&[
            ("member_id", "12345"),
            ("from_account", "S-12345-01"),
            ("to_account", "C-12345-02"),
            ("amount", "10.00"),
        ]),
    );
    request.allow_irreversible = allow_irreversible;
    request
}

fn bound(live: &Live, base: cua_artifact::Capability, approved: bool) -> PreparedCapability {
    let approval = approved.then(|| approval_of(&base));
    PreparedCapability::bind(base, None, Some(&live.base_url()), approval).unwrap()
}

/// The transfer bound to the fixture, edited in memory (validation would refuse some edits;
/// that is what these tests show the executor doing without it), resealed and approved.
fn edited(live: &Live, edit: impl FnOnce(&mut cua_artifact::Capability)) -> PreparedCapability {
    let mut base = bound(live, capability(TRANSFER), false).capability;
    base.content_hash = None;
    edit(&mut base);
    let base = base.sealed();
    PreparedCapability {
        approval: Some(approval_of(&base)),
        capability: base,
        overlay: None,
    }
}

fn balance(handle: &FixtureHandle, account: &str) -> String {
    handle.balance(account).map(Money::decimal).unwrap()
}

fn post_transfer_dispatches(run_dir: &std::path::Path) -> usize {
    cua_evidence::read_trace(run_dir)
        .unwrap()
        .iter()
        .filter(|line| {
            matches!(&line.event, cua_evidence::Event::Dispatch(dispatch)
                if !dispatch.refused
                    && dispatch.step.as_ref().is_some_and(|step| step.as_str() == "post_transfer"))
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_is_gated_then_moves_money_exactly_once() {
    let live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    let handle = live.fixture.handle();

    // No approval, opt-in given: refused before the browser moves.
    let (report, _) = live
        .run(request(bound(&live, capability(TRANSFER), false), true))
        .await;
    let error = report.result.error.clone().unwrap();
    assert_eq!(
        (report.result.status, error.code, report.dispatches),
        (RunStatus::Failed, FailureCode::PolicyDenied, 0)
    );
    assert!(
        error.message.contains("no approval is recorded"),
        "{}",
        error.message
    );

    // Approval, no opt-in: refused the same way.
    let (report, _) = live
        .run(request(bound(&live, capability(TRANSFER), true), false))
        .await;
    let error = report.result.error.clone().unwrap();
    assert_eq!(
        (error.code, report.dispatches),
        (FailureCode::PolicyDenied, 0)
    );
    assert!(
        error.message.contains("did not opt in"),
        "{}",
        error.message
    );
    assert!(handle.transfers().is_empty());

    // An approval pinned to another hash does not count.
    let mut stale = approval_of(&capability(TRANSFER));
    stale.content_hash = capability("corebank.member.savings_balance@1.0.0")
        .content_hash
        .unwrap();
    let prepared = PreparedCapability::bind(
        capability(TRANSFER),
        None,
        Some(&live.base_url()),
        Some(stale),
    )
    .unwrap();
    let (report, _) = live.run(request(prepared, true)).await;
    assert_eq!(report.result.error.unwrap().code, FailureCode::PolicyDenied);
    assert_eq!(report.dispatches, 0);

    // Both: the money moves once, confirmed by the confirmation number on screen.
    let (report, run_dir) = live
        .run(request(bound(&live, capability(TRANSFER), true), true))
        .await;
    assert_eq!(
        report.result.status,
        RunStatus::Success,
        "{:?} ({})",
        report.result.error,
        run_dir.display()
    );
    assert_eq!(report.result.outputs["confirmation_number"], "TF-000001");
    assert_eq!(report.result.outputs["from_balance_before"], "4210.55");
    assert_eq!(report.effect, EffectVerdict::Confirmed);
    let post = report
        .steps
        .iter()
        .find(|step| step.step == "post_transfer")
        .unwrap();
    assert_eq!(post.verdict, EffectVerdict::Confirmed);
    assert_eq!(post_transfer_dispatches(&run_dir), 1);
    assert_eq!(handle.transfers().len(), 1);
    assert_eq!(balance(handle, "S-12345-01"), "4200.55");
    assert_eq!(balance(handle, "C-12345-02"), "822.30");
    let trace = cua_evidence::read_trace(&run_dir).unwrap();
    let approved = trace.iter().any(|line| {
        matches!(&line.event, cua_evidence::Event::Authorize(authorize)
            if authorize.granted && authorize.approval.is_some())
    });
    assert!(
        approved,
        "the irreversible authorization names its approval"
    );
}

/// Arms a fault on the fixture the moment a click on a named button is dispatched, so the
/// fault hits the very request that click sends.
struct ArmOnClick<'a> {
    inner: &'a cua_chromium::ChromiumSurface,
    handle: FixtureHandle,
    control: &'static str,
    fault: Fault,
}

impl SurfaceDriver for ArmOnClick<'_> {
    async fn observe(&self) -> Result<UiSnapshot, SurfaceError> {
        self.inner.observe().await
    }

    async fn dispatch(
        &self,
        action: Authorized<BrowserAction>,
    ) -> Result<DispatchReceipt, SurfaceError> {
        let clicking = matches!(action.action(), BrowserAction::Click)
            && action
                .target()
                .is_some_and(|target| target.role == "button" && target.name == self.control);
        if clicking {
            self.handle.arm(self.fault, FaultCount::Times(1));
        }
        self.inner.dispatch(action).await
    }

    async fn wait(
        &self,
        condition: WaitCondition,
        timeout: std::time::Duration,
    ) -> Result<WaitOutcome, SurfaceError> {
        self.inner.wait(condition, timeout).await
    }

    async fn wait_until<P>(
        &self,
        predicate: P,
        timeout: std::time::Duration,
    ) -> Result<WaitOutcome, SurfaceError>
    where
        P: Fn(&UiSnapshot) -> bool + Send + Sync,
    {
        self.inner.wait_until(predicate, timeout).await
    }

    async fn screenshot(&self, request: ScreenshotRequest) -> Result<Screenshot, SurfaceError> {
        self.inner.screenshot(request).await
    }

    fn take_blocked_requests(&self) -> Vec<BlockedRequest> {
        self.inner.take_blocked_requests()
    }
}

/// A transfer whose confirm has no postcondition and whose reload rule watches every step: the
/// 502 after the confirm would be "recovered" by reloading, which could post the transfer
/// again. The mutation mark refuses that reload; the run stops for a human instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatched_mutation_is_never_retried_by_recovery() {
    let live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    // Validation would refuse an irreversible step without a postcondition.
    let prepared = edited(&live, |base| {
        for step in &mut base.steps {
            if step.id.as_str() == "post_transfer" {
                step.postcondition = None;
            }
        }
        for rule in &mut base.recovery {
            rule.scope = cua_artifact::RecoveryScope::AnyStep;
            rule.steps.clear();
        }
    });
    let surface = ArmOnClick {
        inner: &live.surface,
        handle: live.fixture.handle().clone(),
        control: "Transfer Funds",
        fault: Fault::TransientLoad,
    };
    let (report, run_dir) = live.harness.run(&surface, request(prepared, true)).await;
    let report = report.unwrap();
    let error = report.result.error.clone().unwrap();
    assert_eq!(
        (report.result.status, error.code),
        (RunStatus::NeedsHuman, FailureCode::RecoveryExhausted),
        "{error:?} ({})",
        run_dir.display()
    );
    assert!(error.message.contains("never retried"), "{}", error.message);
    assert_eq!(post_transfer_dispatches(&run_dir), 1);
    assert_eq!(report.effect, EffectVerdict::Unverifiable);
    let reloads_after_confirm = cua_evidence::read_trace(&run_dir)
        .unwrap()
        .iter()
        .skip_while(|line| {
            !matches!(&line.event, cua_evidence::Event::Dispatch(dispatch)
                if dispatch.step.as_ref().is_some_and(|step| step.as_str() == "post_transfer"))
        })
        .filter(|line| {
            matches!(&line.event, cua_evidence::Event::Dispatch(dispatch)
                if dispatch.action_type == cua_artifact::ActionKind::Reload)
        })
        .count();
    assert_eq!(reloads_after_confirm, 0);
    // The 502 answered the confirm, so the fixture moved nothing, and nothing tried again.
    assert!(live.fixture.handle().transfers().is_empty());
}

/// Two look-alikes before the member's first account: another member's row, and the member's
/// own account one digit off with a balance one cent off and the same Member cell. The balance
/// read is keyed by the from account, so neither is read, and the money moves once, between the
/// accounts the caller named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lookalike_rows_are_never_read() {
    let live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    for (fault, confirmation, before) in [
        (Fault::LookalikeRow, "TF-000001", "4210.55"),
        (Fault::LookalikeAccount, "TF-000002", "4200.55"),
    ] {
        live.fixture.handle().arm(fault, FaultCount::Indefinite);
        let (report, run_dir) = live
            .run(request(bound(&live, capability(TRANSFER), true), true))
            .await;
        live.fixture.handle().disarm(fault);
        assert_eq!(
            report.result.status,
            RunStatus::Success,
            "{fault}: {:?} ({})",
            report.result.error,
            run_dir.display()
        );
        assert_eq!(
            report.result.outputs["from_balance_before"], before,
            "{fault}"
        );
        assert_eq!(report.result.outputs["confirmation_number"], confirmation);
    }
    let posted = posted(live.fixture.handle());
    let once = (
        "S-12345-01".to_owned(),
        "C-12345-02".to_owned(),
        "$10.00".to_owned(),
    );
    assert_eq!(posted, [once.clone(), once]);
}

/// The posted transfers, oldest first, as (from, to, amount).
fn posted(handle: &FixtureHandle) -> Vec<(String, String, String)> {
    handle
        .transfers()
        .into_iter()
        .map(|record| {
            (
                record.from_account,
                record.to_account,
                record.amount.to_string(),
            )
        })
        .collect()
}

/// What one hostile run did: its status, its failure code, and the transfers it posted.
type HostileRun = (
    RunStatus,
    Option<FailureCode>,
    Vec<(String, String, String)>,
);

/// The transfer under each hostile fault (and all of them at once), from the seeded state each
/// time: every run either posts exactly the requested transfer and reports the right before-
/// balance, or refuses before anything moves. Help text and success-page headings that quote
/// the app's refusals never turn into an outcome, a same-named decoy control is never pressed,
/// and an amount of a thousand or more is checked on the review page as money.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_pages_get_a_right_answer_or_a_refusal_never_a_wrong_one() {
    let live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    let hostile = [
        Fault::LookalikeRow,
        Fault::LookalikeAccount,
        Fault::QuotedRefusals,
        Fault::DecoyControl,
        Fault::DuplicateSummaryRow,
    ];
    let mut variants: Vec<(String, Vec<Fault>, &str)> =
        vec![("none".to_owned(), Vec::new(), "10.00")];
    variants.extend(
        hostile
            .iter()
            .map(|&fault| (fault.to_string(), vec![fault], "10.00")),
    );
    variants.push(("all".to_owned(), hostile.to_vec(), "10.00"));
    variants.push(("none, 1500.00".to_owned(), Vec::new(), "1500.00"));
    variants.push((
        "quoted_refusals, 1500.00".to_owned(),
        vec![Fault::QuotedRefusals],
        "1500.00",
    ));
    let mut runs: Vec<(String, HostileRun)> = Vec::new();
    for (label, faults, amount) in variants {
        let handle = live.fixture.handle();
        handle.reset();
        for &fault in &faults {
            handle.arm(fault, FaultCount::Indefinite);
        }
        let mut request = request(bound(&live, capability(TRANSFER), true), true);
        request
            .inputs
            .insert("amount".to_owned(), serde_json::json!(amount));
        let (report, run_dir) = live.run(request).await;
        let posted = posted(handle);
        assert_eq!(handle.decoy_hits(), 0, "{label}: a decoy was pressed");
        match report.result.status {
            RunStatus::Success => {
                assert_eq!(
                    report.result.outputs["from_balance_before"],
                    "4210.55",
                    "{label} ({})",
                    run_dir.display()
                );
                assert_eq!(report.result.outputs["confirmation_number"], "TF-000001");
                let money = format!("${}", amount.replace("1500", "1,500"));
                assert_eq!(
                    posted,
                    [("S-12345-01".to_owned(), "C-12345-02".to_owned(), money)],
                    "{label}"
                );
            }
            RunStatus::NeedsHuman => {
                assert!(posted.is_empty(), "{label}: refused after moving money")
            }
            other => panic!(
                "{label}: {other:?} is neither an answer nor a refusal ({})",
                run_dir.display()
            ),
        }
        runs.push((
            label,
            (
                report.result.status,
                report.result.error.map(|error| error.code),
                posted,
            ),
        ));
    }
    let summary: Vec<String> = runs
        .iter()
        .map(|(label, (status, code, _))| {
            format!(
                "{label}: {}{}",
                status.as_str(),
                code.map_or(String::new(), |code| format!(" {}", code.as_str()))
            )
        })
        .collect();
    insta::assert_snapshot!(summary.join("\n"), @r"
    none: success
    lookalike_row: success
    lookalike_account: success
    quoted_refusals: success
    decoy_control: success
    duplicate_summary_row: success
    all: success
    none, 1500.00: success
    quoted_refusals, 1500.00: success
    ");
}

/// Write-ahead: the confirm's `intent` is in the trace after its `authorize` and before its
/// `dispatch`, for the same decision, carrying the run's idempotency key, which the transfer
/// also passed to the core system as its client reference. Safe steps announce nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_confirm_is_announced_durably_before_it_is_dispatched() {
    let live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    let (report, run_dir) = live
        .run(request(bound(&live, capability(TRANSFER), true), true))
        .await;
    assert_eq!(
        report.result.status,
        RunStatus::Success,
        "{:?}",
        report.result.error
    );
    let trace = cua_evidence::read_trace(&run_dir).unwrap();
    let at = |wanted: &str| {
        trace
            .iter()
            .position(|line| {
                line.event.name() == wanted
                    && match &line.event {
                        cua_evidence::Event::Authorize(event) => event.step.as_ref(),
                        cua_evidence::Event::Intent(event) => event.step.as_ref(),
                        cua_evidence::Event::Dispatch(event) => event.step.as_ref(),
                        _ => None,
                    }
                    .is_some_and(|step| step.as_str() == "post_transfer")
            })
            .unwrap_or_else(|| panic!("no {wanted} for post_transfer"))
    };
    let (authorize, intent, dispatch) = (at("authorize"), at("intent"), at("dispatch"));
    assert!(
        authorize < intent && intent < dispatch,
        "{authorize} {intent} {dispatch}"
    );
    let cua_evidence::Event::Intent(announced) = &trace[intent].event else {
        unreachable!("position found an intent")
    };
    let cua_evidence::Event::Dispatch(sent) = &trace[dispatch].event else {
        unreachable!("position found a dispatch")
    };
    assert_eq!(announced.decision_id, sent.decision_id);
    assert_eq!(announced.risk, cua_artifact::RiskTier::Irreversible);
    assert_eq!(announced.attempt, 1);
    let key = cua_evidence::idempotency_key(run_dir.file_name().unwrap().to_str().unwrap(), None);
    assert_eq!(announced.idempotency_key, key);
    // The core system holds exactly one transfer under that key, and only the confirm was
    // announced: typing, selecting and the safe clicks write no intent.
    assert_eq!(
        live.fixture
            .handle()
            .transfers_with_client_reference(&key)
            .len(),
        1
    );
    let intents = cua_evidence::intents(&trace);
    assert_eq!(intents.len(), 1, "{intents:?}");
    assert_eq!(intents[0].state, cua_evidence::IntentState::Confirmed);
}

/// A run that moved money and then failed (here: the confirmation number cannot be read, and
/// the capability escalates nothing) ends `needs_human` naming the confirmed mutation, never
/// plain `failed`, which callers read as "nothing happened".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_mutated_then_failed_needs_a_human_never_plain_failed() {
    let live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    let prepared = edited(&live, |base| {
        base.escalation.triggers.clear();
        base.escalation.policy = cua_artifact::EscalationPolicy::FailClosed;
        for step in &mut base.steps {
            if step.id.as_str() == "read_confirmation"
                && let cua_artifact::Action::Extract { target, .. } = &mut step.action
                && let Some(anchor) = target.anchor.as_mut()
            {
                anchor.text = "Confirmation Code".to_owned();
            }
        }
    });
    let (report, run_dir) = live.run(request(prepared, true)).await;
    let error = report.result.error.clone().unwrap();
    assert_eq!(
        (report.result.status, error.code),
        (RunStatus::NeedsHuman, FailureCode::TargetNotFound),
        "{error:?} ({})",
        run_dir.display()
    );
    assert!(
        error.message.contains("`post_transfer` (confirmed)"),
        "{}",
        error.message
    );
    assert_eq!(live.fixture.handle().transfers().len(), 1);
}

/// A read-only run (a reconciliation) dispatches nothing that needs an intent: the transfer,
/// run read-only, reads the balance and walks the form, and its confirm is refused at the
/// dispatch (`policy_denied`), with no intent written and no money moved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_run_refuses_the_confirm_at_its_dispatch() {
    let mut live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    live.harness.config.read_only = true;
    let (report, run_dir) = live
        .run(request(bound(&live, capability(TRANSFER), true), true))
        .await;
    let error = report.result.error.clone().unwrap();
    assert_eq!(
        (error.code, error.step_id.as_ref().map(|s| s.as_str())),
        (FailureCode::PolicyDenied, Some("post_transfer")),
        "{error:?} ({})",
        run_dir.display()
    );
    assert!(error.message.contains("read-only run"), "{}", error.message);
    let trace = cua_evidence::read_trace(&run_dir).unwrap();
    assert!(cua_evidence::intents(&trace).is_empty());
    assert_eq!(post_transfer_dispatches(&run_dir), 0);
    assert!(live.fixture.handle().transfers().is_empty());
}

/// A result page that quotes a refusal: here the insufficient-funds detector also matches the
/// confirmation page (as a heading "Insufficient funds? Call us" would). Once the confirm was
/// handed over and changed the screen, the outcome cannot mean "nothing moved": the run stops
/// `ambiguous_screen` and goes to a person naming the confirmed transfer, never exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_after_a_mutation_is_an_ambiguous_screen_never_an_answer() {
    let live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    let prepared = edited(&live, |base| {
        for outcome in &mut base.outcomes {
            if outcome.code.as_str() == "insufficient_funds" {
                outcome.detect = cua_artifact::Predicate::TextPresent {
                    value: cua_artifact::ValueExpr::String("Confirmation Number".to_owned()),
                };
            }
        }
    });
    let (report, run_dir) = live.run(request(prepared, true)).await;
    let error = report.result.error.clone().unwrap();
    assert_eq!(
        (report.result.status, error.code),
        (RunStatus::NeedsHuman, FailureCode::AmbiguousScreen),
        "{error:?} ({})",
        run_dir.display()
    );
    assert!(
        error.message.contains("insufficient_funds")
            && error.message.contains("`post_transfer` (confirmed)"),
        "{}",
        error.message
    );
    assert!(report.result.outcome.is_none());
    assert_eq!(live.fixture.handle().transfers().len(), 1);
}

/// Northgate's overlay renames the confirm, so an approval of the base cannot carry over. The
/// tenant's own approval, pinned to what `cua validate` prints for the binding and scoped to the
/// tenant, lets the transfer run there, once; the base approval, or the tenant approval scoped
/// to another tenant, does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_approves_its_own_overlay() {
    let live = Live::start(Variant::NorthgateFcu).await;
    live.sign_on().await;
    let base = capability(TRANSFER);
    let binding = crate::support::binding("northgate-fcu", "corebank.member.transfer_funds");
    let reviewed = binding.apply(&base).unwrap();
    let scoped = |tenant: &str, hash: &cua_artifact::ContentHash| {
        let mut approval = approval_of(&base);
        approval.content_hash = hash.clone();
        approval.scope.tenants = vec![tenant.parse().unwrap()];
        approval
    };
    let tenant_hash = reviewed.content_hash.clone().unwrap();
    let attempts = [
        ("base approval", approval_of(&base)),
        ("another tenant's", scoped("first-valley", &tenant_hash)),
        ("the tenant's own", scoped("northgate-fcu", &tenant_hash)),
    ];
    let mut outcomes = Vec::new();
    for (label, approval) in attempts {
        let prepared = PreparedCapability::bind(
            base.clone(),
            Some(binding.clone()),
            Some(&live.base_url()),
            Some(approval),
        )
        .unwrap();
        let (report, run_dir) = live.run(request(prepared, true)).await;
        outcomes.push(format!(
            "{label}: {} {}",
            report.result.status.as_str(),
            report
                .result
                .error
                .as_ref()
                .map_or(String::new(), |error| error.code.as_str().to_owned())
        ));
        if label == "the tenant's own" {
            assert_eq!(
                report.result.status,
                RunStatus::Success,
                "{:?} ({})",
                report.result.error,
                run_dir.display()
            );
        }
    }
    assert_eq!(
        outcomes,
        [
            "base approval: failed policy_denied",
            "another tenant's: failed policy_denied",
            "the tenant's own: success ",
        ]
    );
    assert_eq!(posted(live.fixture.handle()).len(), 1);
}
