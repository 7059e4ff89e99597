//! The MemberDesk fixture as eval sees it: start one on loopback for a suite that names a
//! `fixture:`, arm its faults per case, stop it. A build without the `fixture` feature links no
//! fixture, and every entry here refuses, naming the feature, so a suite that needs one is
//! reported invalid instead of run against nothing.

/// Why a build has no fixture to offer.
#[cfg(not(feature = "fixture"))]
const WITHOUT: &str = "this cua was built without the MemberDesk fixture (cargo feature \
                       `fixture`); give the suite a `base_url` of a running application";

/// A fixture serving on loopback.
#[cfg(feature = "fixture")]
pub(crate) struct FixtureApp(memberdesk::RunningFixture);

/// No fixture can be started in this build.
#[cfg(not(feature = "fixture"))]
pub(crate) enum FixtureApp {}

/// Why a fixture did not start.
pub(crate) enum NotStarted {
    /// The suite names what this build cannot serve.
    Invalid(String),
    /// It could not listen.
    #[cfg_attr(
        not(feature = "fixture"),
        expect(dead_code, reason = "no fixture listens in this build")
    )]
    Unavailable(String),
}

#[cfg(feature = "fixture")]
impl FixtureApp {
    /// Serves the `variant` tenant on a free loopback port.
    pub(crate) async fn start(variant: &str) -> Result<Self, NotStarted> {
        let variant: memberdesk::Variant = variant
            .parse()
            .map_err(|error: memberdesk::FixtureError| NotStarted::Invalid(error.to_string()))?;
        memberdesk::serve(memberdesk::FixtureConfig::loopback(variant))
            .await
            .map(Self)
            .map_err(|error| NotStarted::Unavailable(error.to_string()))
    }

    pub(crate) fn base_url(&self) -> String {
        self.0.base_url()
    }

    /// Disarms every fault, then arms `faults`, each firing until the next reset.
    pub(crate) fn arm_only(&self, faults: &[String]) -> Result<(), String> {
        let handle = self.0.handle();
        handle.reset();
        for fault in faults {
            let fault: memberdesk::Fault = fault.parse().map_err(|error| format!("{error}"))?;
            handle.arm(fault, memberdesk::FaultCount::Indefinite);
        }
        Ok(())
    }

    pub(crate) async fn shutdown(self) {
        let _ = self.0.shutdown().await;
    }
}

#[cfg(not(feature = "fixture"))]
impl FixtureApp {
    #[expect(
        clippy::unused_async,
        reason = "the same signature as with the fixture"
    )]
    pub(crate) async fn start(_variant: &str) -> Result<Self, NotStarted> {
        Err(NotStarted::Invalid(WITHOUT.to_owned()))
    }

    pub(crate) fn base_url(&self) -> String {
        match *self {}
    }

    pub(crate) fn arm_only(&self, _faults: &[String]) -> Result<(), String> {
        match *self {}
    }

    #[expect(
        clippy::unused_async,
        reason = "the same signature as with the fixture"
    )]
    pub(crate) async fn shutdown(self) {
        match self {}
    }
}

/// Checks a suite's `fixture:` names a variant this build can serve.
pub(crate) fn check_variant(variant: &str) -> Result<(), String> {
    #[cfg(feature = "fixture")]
    return variant
        .parse::<memberdesk::Variant>()
        .map(drop)
        .map_err(|error| error.to_string());
    #[cfg(not(feature = "fixture"))]
    return Err(format!("`{variant}`: {WITHOUT}"));
}

/// Checks a case's fault is one the fixture can arm.
pub(crate) fn check_fault(fault: &str) -> Result<(), String> {
    #[cfg(feature = "fixture")]
    return fault
        .parse::<memberdesk::Fault>()
        .map(drop)
        .map_err(|error| error.to_string());
    #[cfg(not(feature = "fixture"))]
    return Err(format!("`{fault}`: {WITHOUT}"));
}
