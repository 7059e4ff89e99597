//! How a run stops early, inside the executor: a failure code with its detail (`Stop`), or an
//! error that means there is no trustworthy run left to report (`Halt::Fatal`).

use cua_artifact::{FailureCode, FailureDetail, ResolutionDebug, StepId};
use cua_evidence::EvidenceError;
use cua_surface::SurfaceError;

use crate::error::ReplayError;

/// A run that stops with a failure code. It becomes a `failed` or `needs_human` result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stop {
    pub(crate) code: FailureCode,
    pub(crate) message: String,
    pub(crate) step: Option<StepId>,
    /// The step's position, for resuming after an intervention.
    pub(crate) step_index: Option<u32>,
    /// What was expected and seen instead, and what the resolver tried; boxed, since most
    /// stops carry none of it.
    pub(crate) context: Option<Box<StopContext>>,
}

/// The optional detail of a [`Stop`].
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StopContext {
    pub(crate) expected: Option<String>,
    pub(crate) observed: Option<String>,
    pub(crate) resolution: Option<ResolutionDebug>,
}

impl Stop {
    pub(crate) fn new(code: FailureCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            step: None,
            step_index: None,
            context: None,
        }
    }

    /// Places the stop at a step, unless it was placed already (a remedy's own step wins).
    pub(crate) fn at(mut self, position: &Position) -> Self {
        if self.step.is_none() {
            self.step = Some(position.id.clone());
            self.step_index = Some(position.index);
        }
        self
    }

    pub(crate) fn expected(mut self, expected: impl Into<String>) -> Self {
        self.context_mut().expected = Some(expected.into());
        self
    }

    pub(crate) fn observed(mut self, observed: impl Into<String>) -> Self {
        self.context_mut().observed = Some(observed.into());
        self
    }

    pub(crate) fn resolution(mut self, resolution: ResolutionDebug) -> Self {
        self.context_mut().resolution = Some(resolution);
        self
    }

    fn context_mut(&mut self) -> &mut StopContext {
        self.context.get_or_insert_with(Box::default)
    }

    /// The surface failed: which failure that is.
    pub(crate) fn surface(error: &SurfaceError, doing: &str) -> Self {
        let code = match error {
            SurfaceError::Unavailable { .. } => FailureCode::SurfaceUnavailable,
            SurfaceError::NodeGone { .. } | SurfaceError::ActionFailed { .. } => {
                FailureCode::ActionFailed
            }
            SurfaceError::NavigationBlocked { .. } => FailureCode::NavigationBlocked,
            SurfaceError::Timeout { .. } => FailureCode::Timeout,
        };
        Self::new(code, format!("{doing}: {error}"))
    }

    pub(crate) fn detail(&self) -> FailureDetail {
        FailureDetail {
            code: self.code,
            message: self.message.clone(),
            step_id: self.step.clone(),
            expected: self
                .context
                .as_ref()
                .and_then(|context| context.expected.clone()),
            observed: self
                .context
                .as_ref()
                .and_then(|context| context.observed.clone()),
            resolution: self
                .context
                .as_ref()
                .and_then(|context| context.resolution.clone()),
        }
    }
}

/// Where in a capability the executor is: a step, or the checkpoint after the last step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Position {
    pub(crate) id: StepId,
    /// The step's index; the checkpoint is `steps.len()`.
    pub(crate) index: u32,
    pub(crate) checkpoint: bool,
}

/// Why the executor left the normal path.
#[derive(Debug)]
pub(crate) enum Halt {
    /// The run stops with a failure code.
    Stop(Box<Stop>),
    /// Evidence could not be written: nothing more is done.
    Fatal(ReplayError),
}

impl From<Stop> for Halt {
    fn from(stop: Stop) -> Self {
        Self::Stop(Box::new(stop))
    }
}

impl From<EvidenceError> for Halt {
    fn from(error: EvidenceError) -> Self {
        Self::Fatal(ReplayError::Evidence(error))
    }
}

impl From<ReplayError> for Halt {
    fn from(error: ReplayError) -> Self {
        Self::Fatal(error)
    }
}

/// Places a halt at a position (see [`Stop::at`]).
pub(crate) fn placed(halt: Halt, position: &Position) -> Halt {
    match halt {
        Halt::Stop(stop) => Halt::Stop(Box::new(stop.at(position))),
        fatal @ Halt::Fatal(_) => fatal,
    }
}
