//! The crate's one error type.

use crate::axes::{LogicalAction, Platform, ProviderKind, RouteName};
use crate::observation::ObservationRejection;
use crate::plan::RouteUnavailable;

/// Everything that can go wrong in `cua-route`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RouteError {
    #[error("unknown {kind} `{name}`")]
    UnknownName { kind: &'static str, name: String },

    #[error("unknown route `{input}`: use api, browser, process, native, driver or visual")]
    UnknownRoute { input: String },

    #[error("provider profile {provider} is invalid: {problem}")]
    InvalidProfile {
        provider: ProviderKind,
        problem: &'static str,
    },

    #[error("provider profile {provider} binds {action} twice")]
    DuplicateBinding {
        provider: ProviderKind,
        action: LogicalAction,
    },

    #[error(
        "provider profile {provider} is implicit but {action} places input at coordinates; \
         coordinate routes are only ever selected explicitly"
    )]
    ImplicitCoordinateBinding {
        provider: ProviderKind,
        action: LogicalAction,
    },

    #[error("provider {provider} is registered twice")]
    DuplicateProvider { provider: ProviderKind },

    #[error("route {route} on {platform} is claimed by both {first} and {second}")]
    RouteCollision {
        route: RouteName,
        platform: Platform,
        first: ProviderKind,
        second: ProviderKind,
    },

    #[error("{first} and {second} both claim to be the {platform} default for {action}")]
    PlatformDefaultCollision {
        platform: Platform,
        action: LogicalAction,
        first: ProviderKind,
        second: ProviderKind,
    },

    #[error("`{input}` is not a durable ref: {problem}")]
    InvalidDurableRef {
        input: String,
        problem: &'static str,
    },

    #[error("`{input}` is not a visual observation ref")]
    InvalidObservationRef { input: String },

    #[error("an observation must have a non-empty pixel and action space")]
    EmptyObservation,

    #[error("an observation ref with these bytes is already live")]
    DuplicateObservationRef,

    #[error("observation ref rejected: {0}")]
    ObservationRejected(ObservationRejection),

    #[error("{0}")]
    RouteUnavailable(Box<RouteUnavailable>),
}

impl From<RouteUnavailable> for RouteError {
    fn from(unavailable: RouteUnavailable) -> Self {
        RouteError::RouteUnavailable(Box::new(unavailable))
    }
}
