//! The policy engine: allowlist, action allowlist, human-only actions, the session lease and
//! its state machine (see [`Lease`]), and
//! the mint of [`AuthorizedAction`], the only value a surface driver accepts.
//!
//! Architecture invariant: an [`AuthorizedAction`] has private fields and no public
//! constructor; [`PolicyEngine::authorize`] is the only way to obtain one. This crate does no
//! I/O, reads no clock and draws no randomness: decision ids come from a per-engine counter.

mod allowlist;
mod authorized;
mod budget;
mod engine;
mod grant;
mod lease;

pub use allowlist::{Allowlist, AllowlistError, BlockedUrl};
pub use authorized::{
    AuthorizedAction, CommandInvocation, HttpRequest, RawInput, ResolvedTarget, ScrollDirection,
    SurfaceAction,
};
pub use budget::{BudgetExceeded, RunBudget};
pub use engine::{
    ActionRequest, AuthorizationContext, Denial, DenialCode, PolicyEngine, PolicyError,
    PolicyRules, RiskAssessment,
};
pub use grant::{BoundFrom, IrreversibleGrant};
pub use lease::{Lease, LeaseError, LeaseOperation, LeaseState, LeaseTransition};
