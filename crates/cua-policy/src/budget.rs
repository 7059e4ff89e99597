//! Run budgets: steps, wall time and total recovery attempts, the smaller of the policy's and
//! the capability's. Time is passed in; this module reads no clock.

use cua_artifact::{Budgets, Capability};

/// Which budget ran out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetExceeded {
    #[error("the capability has {steps} steps but the budget allows {max}")]
    Steps { steps: usize, max: u32 },
    #[error("the run took {elapsed_ms} ms, over its budget of {max} ms")]
    Duration { elapsed_ms: u64, max: u64 },
    #[error("recovery attempts exhausted: {spent} of {max} allowed in one run")]
    Recovery { spent: u32, max: u32 },
}

/// The effective budget of one run and what it has spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunBudget {
    max_steps: u32,
    max_duration_ms: u64,
    max_recovery_attempts: u32,
    recovery_spent: u32,
}

impl RunBudget {
    /// The smaller of the policy's budgets and the capability's caps.
    pub fn for_capability(policy: &Budgets, capability: &Capability) -> Self {
        Self {
            max_steps: policy.max_steps.min(capability.policy.max_steps),
            max_duration_ms: policy
                .max_duration_ms
                .min(capability.policy.max_duration_ms),
            max_recovery_attempts: policy.max_recovery_attempts_total,
            recovery_spent: 0,
        }
    }

    /// Carries recovery attempts already spent (a resumed run keeps what it spent).
    pub fn with_recovery_spent(mut self, spent: u32) -> Self {
        self.recovery_spent = spent;
        self
    }

    pub fn max_duration_ms(&self) -> u64 {
        self.max_duration_ms
    }

    pub fn recovery_spent(&self) -> u32 {
        self.recovery_spent
    }

    /// Checked once before the first action.
    pub fn check_steps(&self, steps: usize) -> Result<(), BudgetExceeded> {
        if steps > self.max_steps as usize {
            return Err(BudgetExceeded::Steps {
                steps,
                max: self.max_steps,
            });
        }
        Ok(())
    }

    /// Checked before every step.
    pub fn check_elapsed(&self, elapsed_ms: u64) -> Result<(), BudgetExceeded> {
        if elapsed_ms > self.max_duration_ms {
            return Err(BudgetExceeded::Duration {
                elapsed_ms,
                max: self.max_duration_ms,
            });
        }
        Ok(())
    }

    /// Spends one recovery attempt, refusing when none is left.
    pub fn charge_recovery(&mut self) -> Result<u32, BudgetExceeded> {
        if self.recovery_spent >= self.max_recovery_attempts {
            return Err(BudgetExceeded::Recovery {
                spent: self.recovery_spent,
                max: self.max_recovery_attempts,
            });
        }
        self.recovery_spent += 1;
        Ok(self.recovery_spent)
    }
}
