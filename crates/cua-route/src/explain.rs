//! Route explanations: the selection or the refusal, every candidate with the constraint that
//! decided its fate, and the recovery policy, as one typed value that serializes to JSON and
//! renders to text. Explaining opens no provider: it is [`plan`] and nothing else.

use serde::Serialize;
use serde::ser::SerializeStruct;

use crate::plan::{Candidate, CandidateStatus, RoutePlan, RouteUnavailable, plan};
use crate::registry::ProviderRegistry;
use crate::request::RouteRequest;

/// The schema version of a serialized explanation.
pub const EXPLANATION_SCHEMA: &str = "cua.route-explanation/v1";

/// What recovery does when the selected provider fails, stated once in every explanation.
pub const PROVIDER_RECOVERY: &str =
    "a provider failure never calls another provider: a new route is an explicit replan";

/// The explanation of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteExplanation {
    Selected(RoutePlan),
    Unavailable(RouteUnavailable),
}

/// Plans `request` and explains the result.
pub fn explain(request: &RouteRequest, registry: &ProviderRegistry) -> RouteExplanation {
    match plan(request, registry) {
        Ok(plan) => RouteExplanation::Selected(plan),
        Err(unavailable) => RouteExplanation::Unavailable(unavailable),
    }
}

impl RouteExplanation {
    pub fn request(&self) -> &RouteRequest {
        match self {
            RouteExplanation::Selected(plan) => plan.request(),
            RouteExplanation::Unavailable(unavailable) => unavailable.request(),
        }
    }

    pub fn candidates(&self) -> &[Candidate] {
        match self {
            RouteExplanation::Selected(plan) => plan.candidates(),
            RouteExplanation::Unavailable(unavailable) => unavailable.candidates(),
        }
    }
}

impl From<Result<RoutePlan, RouteUnavailable>> for RouteExplanation {
    fn from(result: Result<RoutePlan, RouteUnavailable>) -> Self {
        match result {
            Ok(plan) => RouteExplanation::Selected(plan),
            Err(unavailable) => RouteExplanation::Unavailable(unavailable),
        }
    }
}

impl Serialize for RouteExplanation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("RouteExplanation", 7)?;
        state.serialize_field("schema_version", EXPLANATION_SCHEMA)?;
        state.serialize_field("request", self.request())?;
        match self {
            RouteExplanation::Selected(plan) => {
                state.serialize_field("status", "selected")?;
                state.serialize_field("selection", plan.selection())?;
                state.skip_field("error")?;
            }
            RouteExplanation::Unavailable(unavailable) => {
                #[derive(Serialize)]
                struct ErrorView {
                    code: &'static str,
                    #[serde(skip_serializing_if = "Option::is_none")]
                    excluded_by: Option<crate::plan::Constraint>,
                    reason: String,
                    suggestion: &'static str,
                }
                state.serialize_field("status", "unavailable")?;
                state.skip_field("selection")?;
                state.serialize_field(
                    "error",
                    &ErrorView {
                        code: RouteUnavailable::CODE,
                        excluded_by: unavailable.reason().constraint(),
                        reason: unavailable.reason().to_string(),
                        suggestion: unavailable.reason().suggestion(),
                    },
                )?;
            }
        }
        state.serialize_field("candidates", self.candidates())?;
        state.serialize_field("provider_recovery", PROVIDER_RECOVERY)?;
        state.end()
    }
}

impl std::fmt::Display for RouteExplanation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let request = self.request();
        write!(
            formatter,
            "route {} on {}",
            request.action, request.platform
        )?;
        if let Some(via) = request.via {
            write!(formatter, " via {via}")?;
        }
        if let Some(effect) = request.effect {
            write!(formatter, " (effect {effect})")?;
        }
        writeln!(formatter)?;
        let evidence = render_evidence(request);
        if !evidence.is_empty() {
            writeln!(formatter, "  evidence: {evidence}")?;
        }
        match self {
            RouteExplanation::Selected(plan) => {
                let selection = plan.selection();
                let axes = selection.axes();
                writeln!(
                    formatter,
                    "selected: {} ({} route): {}",
                    selection.provider(),
                    selection.route(),
                    selection.reason()
                )?;
                writeln!(
                    formatter,
                    "  physical action: {}",
                    selection.physical_action()
                )?;
                writeln!(
                    formatter,
                    "  axes: {} · {} · {} · {} · {} · {}",
                    axes.operator,
                    axes.perception,
                    axes.actuation,
                    axes.target_scope,
                    axes.verification,
                    axes.interaction_impact
                )?;
                let effect = selection.effect();
                let class = match (selection.mutates(), effect.mutates()) {
                    (false, _) => "",
                    (true, true) => " (mutation)",
                    (true, false) => " (the primitive may change state: treated as a mutation)",
                };
                writeln!(formatter, "  effect: {effect}{class}")?;
                writeln!(formatter, "  recovery: {}", selection.recovery())?;
            }
            RouteExplanation::Unavailable(unavailable) => {
                writeln!(
                    formatter,
                    "{}: {}",
                    RouteUnavailable::CODE,
                    unavailable.reason()
                )?;
                writeln!(
                    formatter,
                    "  suggestion: {}",
                    unavailable.reason().suggestion()
                )?;
            }
        }
        writeln!(formatter, "  {PROVIDER_RECOVERY}")?;
        let candidates = self.candidates();
        if candidates.is_empty() {
            return writeln!(formatter, "candidates: none");
        }
        writeln!(formatter, "candidates:")?;
        let provider_width = candidates
            .iter()
            .map(|candidate| candidate.provider().as_str().len())
            .max()
            .unwrap_or(0);
        let action_width = candidates
            .iter()
            .map(|candidate| candidate.physical_action().as_str().len())
            .max()
            .unwrap_or(0);
        for candidate in candidates {
            let (mark, reason) = match candidate.status() {
                CandidateStatus::Selected(reason) => ("selected", reason.to_string()),
                CandidateStatus::Tied => ("tied", "feasible, and so is another".to_owned()),
                CandidateStatus::Excluded(exclusion) => (
                    "excluded",
                    format!("{}: {exclusion}", exclusion.constraint()),
                ),
            };
            writeln!(
                formatter,
                "  {mark:<8}  {:<provider_width$}  {:<action_width$}  {reason}",
                candidate.provider().as_str(),
                candidate.physical_action().as_str(),
            )?;
        }
        Ok(())
    }
}

fn render_evidence(request: &RouteRequest) -> String {
    let evidence = &request.evidence;
    let mut parts = Vec::new();
    if let Some(durable_ref) = &evidence.durable_ref {
        parts.push(format!("durable ref {durable_ref}"));
    }
    let named = [
        ("renderer", &evidence.renderer),
        ("element", &evidence.element),
        ("native window", &evidence.native_window),
        ("service", &evidence.service),
        ("executable", &evidence.executable),
        ("session", &evidence.session),
    ];
    for (name, value) in named {
        if let Some(value) = value {
            parts.push(format!("{name} {value:?}"));
        }
    }
    if let Some(observation) = &evidence.observation {
        parts.push(format!(
            "observation from {} ({}, session {:?})",
            observation.issuer, observation.target_scope, observation.session
        ));
    }
    if let Some(point) = evidence.coordinates {
        parts.push(format!("coordinates ({}, {})", point.x, point.y));
    }
    parts.join(", ")
}
