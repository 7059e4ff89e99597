//! The real thing: the MemberDesk fixture served in-process and Debian's Chromium driven over
//! CDP. These tests never skip: a missing Chromium fails them with the install step.

use cua_artifact::{FailureCode, RunStatus};
use cua_chromium::{ChromiumConfig, ChromiumSurface, LaunchError};
use cua_replay::{ReplayReport, RunRequest};
use memberdesk::{FixtureConfig, RunningFixture, Variant};

use crate::support::{Harness, inputs, prepared};

/// One fixture, one browser, one harness.
pub(crate) struct Live {
    pub(crate) fixture: RunningFixture,
    pub(crate) surface: ChromiumSurface,
    pub(crate) harness: Harness,
}

impl Live {
    /// Serves MemberDesk as `variant` and launches Chromium under the policy's allowlist.
    pub(crate) async fn start(variant: Variant) -> Self {
        let harness = Harness::new();
        let fixture = memberdesk::serve(FixtureConfig::loopback(variant))
            .await
            .unwrap();
        let allowlist = harness.policy.allowlist().clone();
        let surface = match ChromiumSurface::launch(ChromiumConfig::from_env(allowlist)).await {
            Ok(surface) => surface,
            Err(error @ LaunchError::ChromiumMissing { .. }) => panic!(
                "replay tests drive a real browser: {error}. Install it with `apt-get install -y chromium`"
            ),
            Err(error) => panic!("launching Chromium failed: {error}"),
        };
        Self {
            fixture,
            surface,
            harness,
        }
    }

    pub(crate) fn base_url(&self) -> String {
        self.fixture.base_url()
    }

    /// A catalog capability bound to this fixture.
    pub(crate) fn prepared(
        &self,
        reference: &str,
        tenant: Option<&str>,
    ) -> cua_replay::PreparedCapability {
        prepared(reference, tenant, &self.base_url(), None)
    }

    /// Signs the browser on by replaying the sign-on capability; already signed on is fine.
    pub(crate) async fn sign_on(&self) {
        let request = RunRequest::new(
            self.prepared("corebank.auth.sign_on@1.0.0", None),
            inputs(&[]),
        );
        let (report, run_dir) = self.harness.run(&self.surface, request).await;
        let report = report.unwrap();
        let signed_on = report.result.status == RunStatus::Success;
        let already = report
            .result
            .error
            .as_ref()
            .is_some_and(|error| error.code == FailureCode::UnexpectedState)
            && report.dispatches == 1;
        assert!(
            signed_on || already,
            "signing on failed ({}): {:?}",
            run_dir.display(),
            report.result
        );
    }

    /// Runs one replay and returns its report and run directory.
    pub(crate) async fn run(&self, request: RunRequest) -> (ReplayReport, std::path::PathBuf) {
        let (report, run_dir) = self.harness.run(&self.surface, request).await;
        match report {
            Ok(report) => (report, run_dir),
            Err(error) => {
                let mut chain = error.to_string();
                let mut source = std::error::Error::source(&error);
                while let Some(cause) = source {
                    chain.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                panic!("replay refused ({}): {chain}", run_dir.display())
            }
        }
    }
}
