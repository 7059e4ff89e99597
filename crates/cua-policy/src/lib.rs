//! The policy engine: allowlist, action allowlist, human-only actions, the session lease and
//! its state machine (see [`Lease`]), and
//! the mint of [`AuthorizedAction`], which [`Authorized::into_port`] splits into the witness each
//! port accepts: `Authorized<BrowserAction>` for the surface driver, `Authorized<HttpRequest>`
//! and `Authorized<CommandInvocation>` for the operators.
//!
//! Architecture invariant: an [`Authorized`] has private fields, no public constructor and no
//! `Clone`; [`PolicyEngine::authorize`] is the only way to obtain one. This crate does no
//! I/O, reads no clock and draws no randomness: decision ids come from a per-engine counter.

mod allowlist;
mod authorized;
mod budget;
mod engine;
mod grant;
mod lease;

pub use allowlist::{Allowlist, AllowlistError, BlockedUrl};
pub use authorized::{
    Authorized, AuthorizedAction, BrowserAction, CommandInvocation, ForPort, HttpRequest, RawInput,
    ResolvedTarget, ScrollDirection, SurfaceAction,
};
pub use budget::{BudgetExceeded, RunBudget};
pub use engine::{
    ActionRequest, AuthorizationContext, Denial, DenialCode, PolicyEngine, PolicyError,
    PolicyRules, RiskAssessment,
};
pub use grant::{BoundFrom, IrreversibleGrant};
pub use lease::{Lease, LeaseError, LeaseOperation, LeaseState, LeaseTransition};
