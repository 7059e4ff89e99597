//! A temporary copy of the repository's catalog with approvals recorded, a clock the test
//! moves, and a surface factory whose surfaces are always unavailable.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use cua_artifact::{CapabilityRef, PolicyConfig};
use cua_catalog::{ApproveRequest, Catalog, CatalogConfig};
use cua_evidence::{Clock, Timestamp};
use cua_mcp::{CapabilityServer, McpConfig, PlanKey, SurfaceFactory, SurfaceUnavailable};
use cua_policy::{Allowlist, Authorized, BrowserAction};
use cua_snapshot::UiSnapshot;
use cua_surface::{
    BlockedRequest, DispatchReceipt, Screenshot, ScreenshotRequest, SurfaceDriver, SurfaceError,
    WaitCondition, WaitOutcome,
};
use tempfile::TempDir;

pub(crate) const BASE_URL: &str = "http://127.0.0.1:8811";
pub(crate) const SAVINGS: &str = "corebank.member.savings_balance@1.0.0";
pub(crate) const TRANSFER: &str = "corebank.member.transfer_funds@1.0.0";

pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A copy of `capabilities/` and `tenants/` with the given capabilities approved.
pub(crate) struct TempCatalog {
    pub(crate) dir: TempDir,
}

impl TempCatalog {
    pub(crate) fn with_approved(references: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = workspace_root();
        copy_tree(&root.join("capabilities"), &dir.path().join("capabilities"));
        copy_tree(&root.join("tenants"), &dir.path().join("tenants"));
        let catalog = TempCatalog { dir };
        for reference in references {
            catalog.approve(reference);
        }
        catalog
    }

    pub(crate) fn config(&self) -> CatalogConfig {
        CatalogConfig::rooted_at(self.dir.path())
    }

    pub(crate) fn approve(&self, reference: &str) {
        Catalog::new(self.config())
            .approve(&ApproveRequest {
                reference: CapabilityRef::parse(reference).unwrap(),
                by: "reviewer".to_owned(),
                at: "2026-11-30T00:00:00Z".to_owned(),
                notes: None,
                from_eval: false,
                tenant: None,
            })
            .unwrap();
    }

    pub(crate) fn capability_path(&self, reference: &str) -> PathBuf {
        self.dir
            .path()
            .join("capabilities")
            .join(format!("{reference}.yaml"))
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else if entry.file_name().to_string_lossy().ends_with(".yaml")
            && !entry
                .file_name()
                .to_string_lossy()
                .ends_with(".approval.yaml")
        {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A clock the test sets.
#[derive(Debug, Default)]
pub(crate) struct TestClock {
    seconds: AtomicI64,
}

impl TestClock {
    pub(crate) fn advance(&self, by: Duration) {
        self.seconds
            .fetch_add(i64::try_from(by.as_secs()).unwrap(), Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        let seconds = 1_796_000_000 + self.seconds.load(Ordering::SeqCst);
        Timestamp::from_unix_micros(seconds * 1_000_000).unwrap()
    }
}

/// Surfaces that open (counted) and then answer nothing: every observation is unavailable.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeadSurfaces {
    pub(crate) opened: Arc<AtomicUsize>,
    pub(crate) refuse_to_open: bool,
}

pub(crate) struct DeadSurface;

impl SurfaceFactory for DeadSurfaces {
    type Surface = DeadSurface;

    async fn open(&self, _allowlist: Allowlist) -> Result<DeadSurface, SurfaceUnavailable> {
        if self.refuse_to_open {
            return Err(SurfaceUnavailable {
                code: "chromium_missing".to_owned(),
                message: "Chromium is missing: apt-get install -y chromium".to_owned(),
            });
        }
        self.opened.fetch_add(1, Ordering::SeqCst);
        Ok(DeadSurface)
    }

    async fn close(&self, _surface: DeadSurface) {}
}

fn gone() -> SurfaceError {
    SurfaceError::Unavailable {
        reason: "the test surface answers nothing".to_owned(),
    }
}

impl SurfaceDriver for DeadSurface {
    async fn observe(&self) -> Result<UiSnapshot, SurfaceError> {
        Err(gone())
    }

    async fn dispatch(
        &self,
        _action: Authorized<BrowserAction>,
    ) -> Result<DispatchReceipt, SurfaceError> {
        Err(gone())
    }

    async fn wait(
        &self,
        _condition: WaitCondition,
        _timeout: Duration,
    ) -> Result<WaitOutcome, SurfaceError> {
        Err(gone())
    }

    async fn wait_until<P>(
        &self,
        _predicate: P,
        _timeout: Duration,
    ) -> Result<WaitOutcome, SurfaceError>
    where
        P: Fn(&UiSnapshot) -> bool + Send + Sync,
    {
        Err(gone())
    }

    async fn screenshot(&self, _request: ScreenshotRequest) -> Result<Screenshot, SurfaceError> {
        Err(gone())
    }

    fn take_blocked_requests(&self) -> Vec<BlockedRequest> {
        Vec::new()
    }
}

pub(crate) fn policy() -> PolicyConfig {
    let text = std::fs::read_to_string(workspace_root().join("config/policy.yaml")).unwrap();
    PolicyConfig::from_yaml(&text).unwrap()
}

/// A server over `catalog` with the base URL bound, a test clock and a fixed key.
pub(crate) struct Harness {
    pub(crate) server: CapabilityServer<DeadSurfaces>,
    pub(crate) surfaces: DeadSurfaces,
    pub(crate) clock: Arc<TestClock>,
    _evidence: TempDir,
}

impl Harness {
    pub(crate) fn new(catalog: &TempCatalog) -> Self {
        Self::with(catalog, BASE_URL, DeadSurfaces::default())
    }

    pub(crate) fn with(catalog: &TempCatalog, base_url: &str, surfaces: DeadSurfaces) -> Self {
        let evidence = tempfile::tempdir().unwrap();
        let mut config = McpConfig::new(policy());
        config.catalog = catalog.config();
        config.base_url = Some(cua_artifact::Origin::parse(base_url).expect("a valid origin"));
        config.evidence_dir = evidence.path().to_path_buf();
        config.replay.entry_settle = Duration::from_millis(10);
        config.replay.screenshots = cua_artifact::Screenshots::Never;
        let clock = Arc::new(TestClock::default());
        let server = CapabilityServer::new(
            config,
            surfaces.clone(),
            Arc::clone(&clock) as Arc<dyn Clock>,
            PlanKey::from_bytes([42; 32]),
        )
        .unwrap();
        Self {
            server,
            surfaces,
            clock,
            _evidence: evidence,
        }
    }

    pub(crate) fn opened(&self) -> usize {
        self.surfaces.opened.load(Ordering::SeqCst)
    }
}
