//! The seams the executor is wired through: where capabilities (and their approvals) come from,
//! and where an escalation goes.

use std::sync::Mutex;

use std::collections::BTreeMap;

use cua_artifact::{
    ArtifactError, Capability, CapabilityApproval, CapabilityRef, FailureCode, Identifier, StepId,
    TenantBinding, TenantBindingSchema, TenantId,
};
use cua_policy::{BoundFrom, IrreversibleGrant};

/// A capability ready to run: the effective document, how it was derived, and its approval.
#[derive(Debug, Clone)]
pub struct PreparedCapability {
    /// The effective capability (a tenant binding already applied).
    pub capability: Capability,
    /// The sealed base and the binding that produced `capability`, when one did. Only through
    /// it can an approval of the base carry over (substitution-only bindings).
    pub overlay: Option<TenantOverlay>,
    /// The approval recorded for the capability (or for its base), if any.
    pub approval: Option<CapabilityApproval>,
}

impl PreparedCapability {
    /// A capability run as it is, with no binding and no approval.
    pub fn plain(capability: Capability) -> Self {
        Self {
            capability,
            overlay: None,
            approval: None,
        }
    }

    /// Prepares a sealed base capability for a run: applies the tenant's binding, if any, with
    /// `base_url` (an invocation's `--base-url`) added to its vars. A `base_url` without a
    /// tenant becomes a substitution-only binding for the tenant [`INVOCATION_TENANT`], so an
    /// approval of the base still carries over to it (unless the approval is scoped to named
    /// tenants). The effective capability is re-validated and resealed by the binding.
    pub fn bind(
        base: Capability,
        binding: Option<TenantBinding>,
        base_url: Option<&str>,
        approval: Option<CapabilityApproval>,
    ) -> Result<Self, ArtifactError> {
        let base_url_var = || Identifier::parse("base_url");
        let binding = match (binding, base_url) {
            (None, None) => {
                return Ok(Self {
                    capability: base,
                    overlay: None,
                    approval,
                });
            }
            (Some(binding), None) => binding,
            (Some(mut binding), Some(url)) => {
                binding.vars.insert(base_url_var()?, url.to_owned());
                binding
            }
            (None, Some(url)) => TenantBinding {
                schema: TenantBindingSchema::default(),
                capability: base.reference(),
                tenant: TenantId::parse(INVOCATION_TENANT)?,
                description: "the base URL given at invocation".to_owned(),
                vars: BTreeMap::from([(base_url_var()?, url.to_owned())]),
                overrides: BTreeMap::new(),
                recovery_extra: Vec::new(),
                checkpoint: None,
                policy: None,
            },
        };
        let capability = binding.apply(&base)?;
        Ok(Self {
            capability,
            overlay: Some(TenantOverlay { base, binding }),
            approval,
        })
    }

    /// The irreversible grant the policy engine checks: the approval matched against the
    /// recomputed hash (or carried through the binding), and the caller's opt-in.
    pub fn grant(&self, caller_opt_in: bool) -> IrreversibleGrant {
        IrreversibleGrant::evaluate(
            &self.capability,
            self.approval.as_ref(),
            self.overlay.as_ref().map(|overlay| BoundFrom {
                base: &overlay.base,
                binding: &overlay.binding,
            }),
            caller_opt_in,
        )
    }
}

/// The tenant id of the binding [`PreparedCapability::bind`] makes for a bare `--base-url`.
pub const INVOCATION_TENANT: &str = "invocation";

/// A sealed base capability and the tenant binding applied to it.
#[derive(Debug, Clone)]
pub struct TenantOverlay {
    pub base: Capability,
    pub binding: TenantBinding,
}

/// Where `run_capability` remedies find the capability they name. The CLI wires the catalog
/// (with the same tenant and `--base-url` binding as the run); tests wire a map.
pub trait CapabilityLoader: Send + Sync {
    /// The capability pinned by `reference`, prepared like the run's own, or why not.
    fn load(&self, reference: &CapabilityRef) -> Result<PreparedCapability, String>;
}

/// A loader that has nothing: every `run_capability` remedy is refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCapabilities;

impl CapabilityLoader for NoCapabilities {
    fn load(&self, reference: &CapabilityRef) -> Result<PreparedCapability, String> {
        Err(format!(
            "no capability source is configured to load {reference}"
        ))
    }
}

/// A loader over a fixed list of prepared capabilities.
#[derive(Debug, Clone, Default)]
pub struct CapabilityList {
    entries: Vec<PreparedCapability>,
}

impl CapabilityList {
    /// A list of capabilities, found by their `id@version`.
    pub fn new(entries: Vec<PreparedCapability>) -> Self {
        Self { entries }
    }
}

impl CapabilityLoader for CapabilityList {
    fn load(&self, reference: &CapabilityRef) -> Result<PreparedCapability, String> {
        self.entries
            .iter()
            .find(|entry| entry.capability.reference() == *reference)
            .cloned()
            .ok_or_else(|| format!("{reference} is not in the capability list"))
    }
}

/// What a run that needs a human hands over.
#[derive(Debug, Clone, PartialEq)]
pub struct EscalationRequest {
    pub run_id: String,
    pub capability: CapabilityRef,
    pub failure_code: FailureCode,
    pub reason: String,
    pub step: Option<StepId>,
    pub step_index: Option<u32>,
    /// The last snapshot written before the escalation, relative to the run directory.
    pub snapshot_ref: Option<String>,
    pub screenshot_ref: Option<String>,
}

/// Where an escalation goes. The console attaches a broker here later; it answers with the
/// intervention id the operator will see.
pub trait EscalationSink: Send + Sync {
    /// Opens an intervention for the request and returns its id.
    fn escalate(&self, request: &EscalationRequest) -> String;

    /// Whether this sink supervises the run (the console's broker does). A supervising
    /// sink keeps an escalated run open: the executor waits in
    /// [`EscalationSink::handed_back`] and resumes in the same trace. The default supervises
    /// nothing, and an escalation ends the run as `needs_human`.
    fn supervises(&self) -> bool {
        false
    }

    /// Waits until the operator hands the session of `intervention` back, with the epoch
    /// automation now holds; `None` gives the run up (it ends as `needs_human`). Called only
    /// when [`EscalationSink::supervises`] says so, after [`EscalationSink::escalate`].
    fn handed_back<'a>(&'a self, intervention: &'a str) -> crate::resume::HandbackFuture<'a> {
        let _ = intervention;
        Box::pin(std::future::ready(None))
    }
}

/// The default sink: it opens nothing and only keeps what it was handed. The intervention id
/// is derived from the run id (`int-<run_id>-<n>`), so it is deterministic.
#[derive(Debug, Default)]
pub struct RecordedEscalations {
    requests: Mutex<Vec<EscalationRequest>>,
}

impl RecordedEscalations {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every request handed to this sink, in order.
    pub fn requests(&self) -> Vec<EscalationRequest> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<EscalationRequest>> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl EscalationSink for RecordedEscalations {
    fn escalate(&self, request: &EscalationRequest) -> String {
        let mut requests = self.lock();
        requests.push(request.clone());
        format!("int-{}-{}", request.run_id, requests.len())
    }
}

/// Where the executor draws the random bytes it needs (the 256 bits of a visual observation
/// ref). Injected, so the executor itself draws no randomness.
pub trait Entropy: Send + Sync + std::fmt::Debug {
    /// Fills `bytes` from a cryptographically secure source.
    fn fill(&self, bytes: &mut [u8; 32]) -> std::io::Result<()>;
}

/// The operating system's CSPRNG, read from `/dev/urandom`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemEntropy;

impl Entropy for SystemEntropy {
    fn fill(&self, bytes: &mut [u8; 32]) -> std::io::Result<()> {
        use std::io::Read;
        std::fs::File::open("/dev/urandom")?.read_exact(bytes)
    }
}

/// A request to stop, raised from outside the run (the binary raises it on SIGINT or SIGTERM).
/// The executor checks it before every authorization: once raised, nothing more is handed to a
/// surface or operator, while an action already handed over settles (its wait and
/// postcondition run) and reads on the screen it left still run; the next action ends the run
/// with `interrupted`.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Interrupt {
    /// A flag nobody has raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every run holding a clone of this flag to stop before its next dispatch.
    pub fn raise(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether a stop was asked for.
    pub fn is_raised(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}
