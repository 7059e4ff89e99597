//! The seams the executor is wired through: where capabilities (and their approvals) come from,
//! and where an escalation goes.

use std::sync::Mutex;

use cua_artifact::{CapabilityRef, FailureCode, Origin, PreparedCapability, StepId, TenantId};
use cua_catalog::Catalog;

/// Where `run_capability` remedies find the capability they name. The CLI wires the catalog
/// (with the same tenant and `--base-url` binding as the run); tests wire a map.
pub trait CapabilityLoader: Send + Sync {
    /// The capability pinned by `reference`, prepared like the run's own, or why not.
    fn load(&self, reference: &CapabilityRef) -> Result<PreparedCapability, String>;
}

/// Remedies from the catalog, prepared as the run is: with the run's tenant (its binding of the
/// remedy, when it has one) and the run's origin, with the approval the catalog records.
#[derive(Debug, Clone)]
pub struct CatalogCapabilities {
    catalog: Catalog,
    tenant: Option<TenantId>,
    base_url: Option<Origin>,
}

impl CatalogCapabilities {
    pub fn new(catalog: Catalog, tenant: Option<TenantId>, base_url: Option<Origin>) -> Self {
        Self {
            catalog,
            tenant,
            base_url,
        }
    }
}

impl CapabilityLoader for CatalogCapabilities {
    fn load(&self, reference: &CapabilityRef) -> Result<PreparedCapability, String> {
        self.catalog
            .prepare(reference, self.tenant.as_ref(), self.base_url.as_ref())
            .map_err(|error| error.to_string())
    }
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
