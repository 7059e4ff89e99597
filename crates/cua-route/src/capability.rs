//! A capability's routes: every step read as a [`RouteRequest`] (its logical action, its
//! declared effect and the exact target evidence the artifact holds) and explained by the
//! planner. Nothing here opens a provider; explaining a capability is planning it.

use cua_artifact::{Action, ActionKind, Capability, RiskTier, Step, SurfaceKind};
use serde::Serialize;

use crate::axes::{Effect, LogicalAction, Platform, ProviderKind, RouteName, TargetScope};
use crate::explain::{RouteExplanation, explain};
use crate::registry::ProviderRegistry;
use crate::request::{ObservationEvidence, RouteRequest, TargetEvidence};

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
                Ok(request) => StepRouting::Explanation(explain(&request, registry)),
                Err(reason) => StepRouting::Unroutable(reason),
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

/// The logical actions a step of `kind` may plan as: the route planner's vocabulary for the
/// capability's. Empty for `raw_input`, an operator's gesture no provider performs for a
/// capability. Exhaustive, so a new kind is placed here before it compiles.
pub fn logical_actions(kind: ActionKind) -> &'static [LogicalAction] {
    match kind {
        ActionKind::Click => &[LogicalAction::Click],
        ActionKind::Type => &[LogicalAction::Type],
        ActionKind::Select => &[LogicalAction::Select],
        ActionKind::PressKey => &[LogicalAction::PressKey],
        ActionKind::Navigate => &[LogicalAction::Navigate],
        ActionKind::Reload => &[LogicalAction::Reload],
        ActionKind::Scroll => &[LogicalAction::Scroll],
        ActionKind::WaitFor => &[LogicalAction::WaitFor],
        ActionKind::Extract => &[LogicalAction::Extract],
        ActionKind::Assert => &[LogicalAction::Assert],
        ActionKind::Http => &[LogicalAction::HttpRead, LogicalAction::HttpWrite],
        ActionKind::Command => &[LogicalAction::RunCommand],
        ActionKind::Screenshot => &[LogicalAction::Screenshot],
        ActionKind::ClickAt => &[LogicalAction::PointClick],
        ActionKind::RawInput => &[],
    }
}

/// The session name a capability's static explanation gives the observation a `click_at`
/// claims; at run time the replay engine plans with the live observation's binding instead.
pub const THIS_RUN: &str = "this-run";

/// The planning request of one step: its logical action, its explicit route (`via`), the effect
/// the artifact declares (reads are reads; a step declared above `safe` is a mutation of
/// unknown kind, left to the binding's default), and the target evidence the artifact names:
/// the entrypoint's renderer and the described element for a web surface, the request URL for
/// `http`, the declared executable for `command`, and for `click_at` the visual observation it
/// claims (issued in [`THIS_RUN`]) and its pixel coordinates. An error, saying why, for an
/// action no provider performs (`raw_input`) or a `via` that names no route.
pub fn step_request(
    capability: &Capability,
    step: &Step,
    platform: Platform,
) -> Result<RouteRequest, String> {
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
    let kind = step.action.kind();
    let action = match (&step.action, logical_actions(kind)) {
        (Action::Http(call), _) if call.method.is_safe() => LogicalAction::HttpRead,
        (Action::Http(_), _) => LogicalAction::HttpWrite,
        (_, [action]) => *action,
        _ => {
            return Err(format!(
                "`{}` is an operator's gesture; no provider performs it for a capability",
                kind.as_str()
            ));
        }
    };
    // What the planner is told of the target, and whether the step is a read by its nature.
    let (evidence, read) = match &step.action {
        Action::Http(call) => (
            TargetEvidence::default().service(call.url.clone()),
            call.method.is_safe(),
        ),
        Action::Command(call) => (
            TargetEvidence::default().executable(call.executable.clone()),
            call.read_only,
        ),
        Action::ClickAt { x, y, .. } => (
            renderer()
                .observation(ObservationEvidence {
                    issuer: ProviderKind::Visual,
                    target_scope: TargetScope::BrowserRenderer,
                    session: THIS_RUN.to_owned(),
                })
                .session(THIS_RUN)
                .coordinates(*x, *y),
            false,
        ),
        Action::Navigate { .. }
        | Action::Reload {}
        | Action::Scroll { .. }
        | Action::WaitFor { .. }
        | Action::Extract { .. }
        | Action::Assert { .. }
        | Action::Screenshot {} => (renderer(), true),
        Action::Click { .. }
        | Action::Type { .. }
        | Action::Select { .. }
        | Action::PressKey { .. }
        | Action::RawInput { .. } => (renderer(), false),
    };
    let evidence = match (web, step.action.target()) {
        (true, Some(target)) => evidence.element(target.describe()),
        _ => evidence,
    };
    let mut request = RouteRequest::new(action, platform).evidence(evidence);
    if let Some(via) = &step.via {
        let route = RouteName::parse_alias(via.as_str()).map_err(|_| {
            format!(
                "`via: {via}` names no route; routes are {}",
                RouteName::ALL
                    .iter()
                    .map(|route| route.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        request = request.via(route);
    }
    if read && step.risk == RiskTier::Safe {
        request = request.effect(Effect::Read);
    }
    Ok(request)
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
