//! A capability's routes: every step read as a [`RouteRequest`] (its logical action, its
//! declared effect and the exact target evidence the artifact holds) and explained by the
//! planner. Nothing here opens a provider; explaining a capability is planning it.

use cua_artifact::{Action, Capability, RiskTier, Step, SurfaceKind};
use serde::Serialize;

use crate::axes::{Effect, LogicalAction, Platform};
use crate::explain::{RouteExplanation, explain};
use crate::registry::ProviderRegistry;
use crate::request::{RouteRequest, TargetEvidence};

/// The schema version of a serialized capability explanation.
pub const CAPABILITY_ROUTES_SCHEMA: &str = "cua.capability-routes/v1";

/// The routes of a capability's steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapabilityRoutes {
    schema_version: &'static str,
    capability: String,
    platform: Platform,
    steps: Vec<StepRoute>,
}

/// One step's route, or why it has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepRoute {
    step: String,
    action: &'static str,
    #[serde(flatten)]
    route: StepRouting,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum StepRouting {
    /// The planner's explanation.
    Explanation(RouteExplanation),
    /// The action has no logical action a provider could perform (`raw_input`).
    Unroutable(String),
}

impl CapabilityRoutes {
    /// The steps, in order.
    pub fn steps(&self) -> &[StepRoute] {
        &self.steps
    }

    /// Whether every step has exactly one route.
    pub fn all_selected(&self) -> bool {
        self.steps.iter().all(|step| {
            matches!(
                &step.route,
                StepRouting::Explanation(RouteExplanation::Selected(_))
            )
        })
    }
}

impl StepRoute {
    /// The step id.
    pub fn step(&self) -> &str {
        &self.step
    }

    /// The planner's explanation, unless the step cannot be routed at all.
    pub fn explanation(&self) -> Option<&RouteExplanation> {
        match &self.route {
            StepRouting::Explanation(explanation) => Some(explanation),
            StepRouting::Unroutable(_) => None,
        }
    }
}

/// Plans every step of `capability` (or only `only`, a step id) on `platform`. `None` when
/// `only` names no step.
pub fn explain_capability(
    capability: &Capability,
    platform: Platform,
    only: Option<&str>,
    registry: &ProviderRegistry,
) -> Option<CapabilityRoutes> {
    let steps: Vec<&Step> = match only {
        None => capability.steps.iter().collect(),
        Some(id) => vec![capability.step(id)?],
    };
    let steps = steps
        .into_iter()
        .map(|step| StepRoute {
            step: step.id.to_string(),
            action: step.action.kind().as_str(),
            route: match step_request(capability, step, platform) {
                Some(request) => StepRouting::Explanation(explain(&request, registry)),
                None => StepRouting::Unroutable(format!(
                    "`{}` is an operator's gesture; no provider performs it for a capability",
                    step.action.kind().as_str()
                )),
            },
        })
        .collect();
    Some(CapabilityRoutes {
        schema_version: CAPABILITY_ROUTES_SCHEMA,
        capability: capability.reference().to_string(),
        platform,
        steps,
    })
}

/// The planning request of one step: its logical action, the effect the artifact declares
/// (reads are reads; a step declared above `safe` is a mutation of unknown kind, left to the
/// binding's default), and the target evidence the artifact names: the entrypoint's renderer
/// and the described element for a web surface, the request URL for `http`, the declared
/// executable for `command`. `None` for an action no provider performs (`raw_input`).
pub fn step_request(
    capability: &Capability,
    step: &Step,
    platform: Platform,
) -> Option<RouteRequest> {
    let web = matches!(
        capability.surface.kind,
        SurfaceKind::Web | SurfaceKind::LegacyWeb
    );
    let renderer = || {
        let evidence = TargetEvidence::default();
        if web {
            evidence.renderer(capability.entrypoint.url.clone())
        } else {
            evidence
        }
    };
    let (action, evidence, read) = match &step.action {
        Action::Click { .. } => (LogicalAction::Click, renderer(), false),
        Action::Type { .. } => (LogicalAction::Type, renderer(), false),
        Action::Select { .. } => (LogicalAction::Select, renderer(), false),
        Action::PressKey { .. } => (LogicalAction::PressKey, renderer(), false),
        Action::Navigate { .. } => (LogicalAction::Navigate, renderer(), true),
        Action::Reload {} => (LogicalAction::Reload, renderer(), true),
        Action::Scroll { .. } => (LogicalAction::Scroll, renderer(), true),
        Action::WaitFor { .. } => (LogicalAction::WaitFor, renderer(), true),
        Action::Extract { .. } => (LogicalAction::Extract, renderer(), true),
        Action::Assert { .. } => (LogicalAction::Assert, renderer(), true),
        Action::Http(call) => {
            let action = if call.method.is_safe() {
                LogicalAction::HttpRead
            } else {
                LogicalAction::HttpWrite
            };
            let evidence = TargetEvidence::default().service(call.url.clone());
            (action, evidence, call.method.is_safe())
        }
        Action::Command(call) => (
            LogicalAction::RunCommand,
            TargetEvidence::default().executable(call.executable.clone()),
            call.read_only,
        ),
        Action::RawInput { .. } => return None,
    };
    let evidence = match (web, step.action.target()) {
        (true, Some(target)) => evidence.element(target.describe()),
        _ => evidence,
    };
    let mut request = RouteRequest::new(action, platform).evidence(evidence);
    if read && step.risk == RiskTier::Safe {
        request = request.effect(Effect::Read);
    }
    Some(request)
}

impl std::fmt::Display for CapabilityRoutes {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            formatter,
            "routes of {} on {} (no provider was opened)",
            self.capability, self.platform
        )?;
        for step in &self.steps {
            writeln!(formatter)?;
            writeln!(formatter, "step {} ({})", step.step, step.action)?;
            match &step.route {
                StepRouting::Explanation(explanation) => {
                    for line in explanation.to_string().lines() {
                        writeln!(formatter, "  {line}")?;
                    }
                }
                StepRouting::Unroutable(reason) => writeln!(formatter, "  unroutable: {reason}")?,
            }
        }
        Ok(())
    }
}
