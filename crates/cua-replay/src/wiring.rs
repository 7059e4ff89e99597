//! One way to wire a run. The product's runs (`cua replay` and its batches, the console's
//! supervised run, eval, the MCP server) open their run directory, redactor, secret resolver,
//! clock and lease here, then borrow a [`Replayer`] from it, so none forgets the policy's
//! redaction on the bus or gives the secrets a redactor the bus does not share. (The demo and the
//! test harnesses still wire a `Replayer` by hand, to inject their own clocks and sinks.)

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use cua_artifact::{Actor, PolicyConfig};
use cua_evidence::{
    Clock, EvidenceBus, EvidenceError, InstallationKey, IntentJournal, Redactor, RunId,
    SecretResolver,
};
use cua_policy::{Lease, PolicyEngine};
use cua_surface::SurfaceDriver;

use crate::clock::TokioClock;
use crate::executor::{ReplayConfig, Replayer};
use crate::ports::{CapabilityLoader, EscalationSink};

/// What a run's wiring is made from.
pub struct RunSetup<'a> {
    /// The evidence root; the run's directory is created in it.
    pub evidence_root: &'a Path,
    pub run_id: RunId,
    /// Its redaction rules redact the trace, and its secret prefix names the variables
    /// `{$secret: …}` values are read from.
    pub policy: &'a PolicyConfig,
    /// Where secrets are looked up by variable name: the process environment, or a map.
    pub environment: BTreeMap<String, String>,
    /// What the trace's timestamps read.
    pub wall_clock: Arc<dyn Clock>,
    /// Signs the run's ledger line when given.
    pub signing_key: Option<Arc<InstallationKey>>,
    /// A lease shared with whoever may take the session over; a fresh automation lease when
    /// absent.
    pub lease: Option<Arc<Mutex<Lease>>>,
    /// A redactor shared with another sink (the console's server), so every secret the run
    /// resolves is scrubbed there too; a fresh one from the policy when absent.
    pub redactor: Option<Redactor>,
    /// Where each write-ahead intent is recorded besides the trace (a batch queue's database),
    /// before its mutation may leave.
    pub intent_journal: Option<Arc<dyn IntentJournal>>,
    /// Told the name of every event once it is in the trace (an MCP client's progress).
    pub observer: Option<Arc<dyn Fn(&'static str) + Send + Sync>>,
}

impl<'a> RunSetup<'a> {
    /// A setup with a fresh lease, no signing key and the system clock for timestamps.
    pub fn new(
        evidence_root: &'a Path,
        run_id: RunId,
        policy: &'a PolicyConfig,
        environment: BTreeMap<String, String>,
    ) -> Self {
        Self {
            evidence_root,
            run_id,
            policy,
            environment,
            wall_clock: Arc::new(cua_evidence::SystemClock),
            signing_key: None,
            lease: None,
            redactor: None,
            intent_journal: None,
            observer: None,
        }
    }
}

/// What one run owns besides its driver, policy engine, remedies and escalations.
pub struct RunWiring {
    bus: Arc<EvidenceBus>,
    secrets: SecretResolver,
    clock: TokioClock,
    lease: Arc<Mutex<Lease>>,
}

impl RunWiring {
    /// Creates the run directory with the policy's redaction, and the secret resolver that
    /// registers every value it issues with that same redactor.
    pub fn open(setup: RunSetup<'_>) -> Result<Self, EvidenceError> {
        let redactor = match setup.redactor {
            Some(shared) => shared,
            None => Redactor::from_policy(&setup.policy.redaction)?,
        };
        let bus = EvidenceBus::create(
            setup.evidence_root,
            setup.run_id,
            setup.wall_clock,
            redactor.clone(),
        )?;
        let bus = match setup.signing_key {
            Some(key) => bus.with_signing_key(key),
            None => bus,
        };
        let bus = match setup.intent_journal {
            Some(journal) => bus.with_intent_journal(journal),
            None => bus,
        };
        let bus = match setup.observer {
            Some(observer) => bus.with_observer(observer),
            None => bus,
        };
        let secrets = SecretResolver::new(
            setup.policy.secrets.env_prefix.clone(),
            setup.environment,
            redactor,
        );
        Ok(Self {
            bus: Arc::new(bus),
            secrets,
            clock: TokioClock::new(),
            lease: setup
                .lease
                .unwrap_or_else(|| Arc::new(Mutex::new(Lease::new(Actor::Automation)))),
        })
    }

    /// The run's evidence bus.
    pub fn bus(&self) -> &Arc<EvidenceBus> {
        &self.bus
    }

    /// The session lease the run acts under.
    pub fn lease(&self) -> &Arc<Mutex<Lease>> {
        &self.lease
    }

    /// The executor for this run on `driver`, deciding with `policy`, taking remedies from
    /// `capabilities` and escalating to `escalations`.
    pub fn replayer<'r, D: SurfaceDriver>(
        &'r self,
        driver: &'r D,
        policy: &'r PolicyEngine,
        capabilities: &'r dyn CapabilityLoader,
        escalations: &'r dyn EscalationSink,
        config: ReplayConfig,
    ) -> Replayer<'r, D> {
        Replayer {
            driver,
            policy,
            bus: &self.bus,
            clock: &self.clock,
            secrets: &self.secrets,
            capabilities,
            escalations,
            lease: Arc::clone(&self.lease),
            config,
        }
    }
}
