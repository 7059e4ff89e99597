//! Recovery policies and the `recovery_trace` every executed route reports.
//!
//! There are exactly two policies. A read may be dispatched a second time through the same
//! provider, physical action and target after a retryable failure; a mutation is dispatched at
//! most once. No policy names another provider: recovery never changes the route.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::axes::ProviderKind;
use crate::profile::PhysicalAction;
use crate::walk::RecoveryState;
use crate::wire::wire_enum;

wire_enum! {
    /// How a failed attempt may be recovered automatically.
    pub enum RecoveryStrategy: "recovery strategy" {
        None => "none",
        SamePrimitiveRetry => "same-primitive-retry",
    }
}

wire_enum! {
    /// What a retry keeps fixed: all of it. A retry that changed any of these would be a new
    /// route, and a new route is an explicit decision.
    pub enum Preserved: "preserved dimension" {
        Provider => "provider",
        Operator => "operator",
        Perception => "perception",
        Actuation => "actuation",
        TargetScope => "target_scope",
        PhysicalAction => "physical_action",
        Target => "target",
    }
}

wire_enum! {
    /// Why an attempt failed, as the recovery trace records it.
    pub enum FailureKind: "failure kind" {
        /// A read failed and the provider says the same primitive may be repeated.
        RetryableReadFailure => "retryable-read-failure",
        /// A read failed and repeating it would not help.
        ReadFailure => "read-failure",
        /// A mutation was refused before anything was sent.
        PreDispatchRejection => "pre-dispatch-rejection",
        /// A mutation failed after it was sent: its outcome is unknown.
        OutcomeAmbiguous => "outcome-ambiguous",
        /// The provider reported, or fresh state showed, that nothing changed.
        SuspectedNoop => "suspected-noop",
    }
}

/// A recovery policy. Only these two exist, so no profile can declare a third attempt or a
/// retrying mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecoveryPolicy {
    /// One attempt. Every mutation has this policy.
    NoAutomaticRecovery,
    /// Up to two attempts of the same primitive, after a retryable read failure only.
    SafeReadRetry,
}

impl RecoveryPolicy {
    /// The strategy name.
    pub fn strategy(self) -> RecoveryStrategy {
        match self {
            RecoveryPolicy::NoAutomaticRecovery => RecoveryStrategy::None,
            RecoveryPolicy::SafeReadRetry => RecoveryStrategy::SamePrimitiveRetry,
        }
    }

    /// How many dispatches the policy allows in total.
    pub fn max_attempts(self) -> u8 {
        match self {
            RecoveryPolicy::NoAutomaticRecovery => 1,
            RecoveryPolicy::SafeReadRetry => 2,
        }
    }

    /// The failures that allow another attempt.
    pub fn triggers(self) -> &'static [FailureKind] {
        match self {
            RecoveryPolicy::NoAutomaticRecovery => &[],
            RecoveryPolicy::SafeReadRetry => &[FailureKind::RetryableReadFailure],
        }
    }

    /// Whether another attempt is allowed after `failure` when `attempts` have been made.
    pub fn permits_retry(self, failure: FailureKind, attempts: u8) -> bool {
        attempts < self.max_attempts() && self.triggers().contains(&failure)
    }

    /// What every retry keeps fixed.
    pub fn preserves(self) -> &'static [Preserved] {
        Preserved::ALL
    }
}

impl std::fmt::Display for RecoveryPolicy {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecoveryPolicy::NoAutomaticRecovery => {
                formatter.write_str("none: one attempt, never retried")
            }
            RecoveryPolicy::SafeReadRetry => formatter.write_str(
                "same-primitive-retry: at most 2 attempts, after a retryable read failure, \
                 same provider, physical action and target",
            ),
        }
    }
}

impl Serialize for RecoveryPolicy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("RecoveryPolicy", 4)?;
        state.serialize_field("strategy", &self.strategy())?;
        state.serialize_field("max_attempts", &self.max_attempts())?;
        state.serialize_field("triggers", self.triggers())?;
        state.serialize_field("preserves", self.preserves())?;
        state.end()
    }
}

/// One failed attempt in a recovery trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecoveryFailure {
    pub provider: ProviderKind,
    pub attempt: u8,
    pub kind: FailureKind,
    pub reason: String,
}

/// A route the walk left through an explicit replan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Replan {
    pub from_provider: ProviderKind,
    pub from_physical_action: PhysicalAction,
    pub to_provider: ProviderKind,
    pub to_physical_action: PhysicalAction,
}

/// What recovery did for one step: the provider and physical action it used, how many times it
/// dispatched, every failure, every state it passed through, and every explicit replan. Only a
/// [`RecoveryWalk`](crate::RecoveryWalk) builds one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecoveryTrace {
    provider: ProviderKind,
    physical_action: PhysicalAction,
    strategy: RecoveryStrategy,
    max_attempts: u8,
    attempts: u8,
    recovered: bool,
    failures: Vec<RecoveryFailure>,
    path: Vec<RecoveryState>,
    replans: Vec<Replan>,
}

impl RecoveryTrace {
    pub(crate) fn new(
        provider: ProviderKind,
        physical_action: PhysicalAction,
        policy: RecoveryPolicy,
    ) -> Self {
        RecoveryTrace {
            provider,
            physical_action,
            strategy: policy.strategy(),
            max_attempts: policy.max_attempts(),
            attempts: 0,
            recovered: false,
            failures: Vec::new(),
            path: vec![RecoveryState::Planned],
            replans: Vec::new(),
        }
    }

    /// The provider of the current route.
    pub fn provider(&self) -> ProviderKind {
        self.provider
    }

    /// The physical action of the current route.
    pub fn physical_action(&self) -> &PhysicalAction {
        &self.physical_action
    }

    /// The recovery strategy of the current route.
    pub fn strategy(&self) -> RecoveryStrategy {
        self.strategy
    }

    /// Dispatches made through the current route.
    pub fn attempts(&self) -> u8 {
        self.attempts
    }

    /// Whether a retry happened and the walk then reached `confirmed`.
    pub fn recovered(&self) -> bool {
        self.recovered
    }

    /// Every failed attempt, in order.
    pub fn failures(&self) -> &[RecoveryFailure] {
        &self.failures
    }

    /// Every state visited, starting at `planned`.
    pub fn path(&self) -> &[RecoveryState] {
        &self.path
    }

    /// Every explicit replan, in order.
    pub fn replans(&self) -> &[Replan] {
        &self.replans
    }

    pub(crate) fn enter(&mut self, state: RecoveryState) {
        self.path.push(state);
    }

    pub(crate) fn record_attempt(&mut self) {
        self.attempts = self.attempts.saturating_add(1);
    }

    pub(crate) fn record_failure(&mut self, kind: FailureKind, reason: String) {
        self.failures.push(RecoveryFailure {
            provider: self.provider,
            attempt: self.attempts,
            kind,
            reason,
        });
    }

    pub(crate) fn record_confirmation(&mut self) {
        self.recovered = self.attempts > 1;
    }

    pub(crate) fn record_replan(
        &mut self,
        provider: ProviderKind,
        physical_action: PhysicalAction,
        policy: RecoveryPolicy,
    ) {
        let from_physical_action = std::mem::replace(&mut self.physical_action, physical_action);
        self.replans.push(Replan {
            from_provider: self.provider,
            from_physical_action,
            to_provider: provider,
            to_physical_action: self.physical_action.clone(),
        });
        self.provider = provider;
        self.strategy = policy.strategy();
        self.max_attempts = policy.max_attempts();
        self.attempts = 0;
    }
}
