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

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> RunBudget {
        RunBudget {
            max_steps: 3,
            max_duration_ms: 1_000,
            max_recovery_attempts: 2,
            recovery_spent: 0,
        }
    }

    #[test]
    fn each_budget_allows_its_limit_and_refuses_one_more() {
        let budget = budget();
        assert_eq!(budget.check_steps(3), Ok(()));
        assert_eq!(
            budget.check_steps(4),
            Err(BudgetExceeded::Steps { steps: 4, max: 3 })
        );
        assert_eq!(budget.check_elapsed(1_000), Ok(()));
        assert_eq!(
            budget.check_elapsed(1_001),
            Err(BudgetExceeded::Duration {
                elapsed_ms: 1_001,
                max: 1_000
            })
        );
    }

    #[test]
    fn recovery_attempts_are_counted_across_a_resume() {
        let mut fresh = budget();
        assert_eq!(fresh.charge_recovery(), Ok(1));
        assert_eq!(fresh.charge_recovery(), Ok(2));
        assert_eq!(fresh.recovery_spent(), 2);
        assert_eq!(
            fresh.charge_recovery(),
            Err(BudgetExceeded::Recovery { spent: 2, max: 2 })
        );
        // A resumed run keeps what it spent: one attempt left, then none.
        let mut resumed = budget().with_recovery_spent(1);
        assert_eq!(resumed.recovery_spent(), 1);
        assert_eq!(resumed.charge_recovery(), Ok(2));
        assert!(resumed.charge_recovery().is_err());
    }
}
