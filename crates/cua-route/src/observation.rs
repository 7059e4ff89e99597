//! Visual observation refs: the coordinate authority a screenshot confers.
//!
//! A ref is 256 bits the caller draws (this crate draws none), valid for 30 seconds from the
//! caller-supplied `now`, claimable once, and bound to the provider that captured it, the scope
//! and session it was captured in, and the screenshot's pixel bounds. Every claim check happens
//! before dispatch. The ledger cannot detect a human changing the screen after capture; the
//! short lifetime is the mitigation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::RouteError;
use crate::axes::{ProviderKind, TargetScope};
use crate::wire::wire_enum;

/// How long an observation ref stays claimable, in milliseconds.
pub const OBSERVATION_TTL_MILLIS: u64 = 30_000;

/// How many unclaimed refs the ledger keeps; issuing past this evicts the oldest.
pub const MAX_LIVE_OBSERVATIONS: usize = 64;

const PREFIX: &str = "visual-observation:";

/// A caller-supplied monotonic clock reading in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Millis(pub u64);

/// A point in screenshot pixel space, origin top-left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PixelPoint {
    pub x: u32,
    pub y: u32,
}

/// A point in the provider's action space (CSS pixels for a browser viewport).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ActionPoint {
    pub x: f64,
    pub y: f64,
}

/// An opaque 256-bit observation ref, `visual-observation:<64 hex>`. `Debug` shows only a
/// prefix, because the ref is a bearer capability.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObservationRef([u8; 32]);

impl ObservationRef {
    /// Parses `visual-observation:<64 lowercase hex>`.
    pub fn parse(input: &str) -> Result<ObservationRef, RouteError> {
        let invalid = || RouteError::InvalidObservationRef {
            input: input.chars().take(PREFIX.len() + 8).collect(),
        };
        let hex = input.strip_prefix(PREFIX).ok_or_else(invalid)?;
        if hex.len() != 64 {
            return Err(invalid());
        }
        let mut bytes = [0u8; 32];
        for (index, byte) in bytes.iter_mut().enumerate() {
            let pair = hex.get(index * 2..index * 2 + 2).ok_or_else(invalid)?;
            if pair
                .bytes()
                .any(|digit| !matches!(digit, b'0'..=b'9' | b'a'..=b'f'))
            {
                return Err(invalid());
            }
            *byte = u8::from_str_radix(pair, 16).map_err(|_| invalid())?;
        }
        Ok(ObservationRef(bytes))
    }
}

impl std::fmt::Display for ObservationRef {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(PREFIX)?;
        for byte in self.0 {
            write!(formatter, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for ObservationRef {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{PREFIX}{:02x}{:02x}{:02x}{:02x}…",
            self.0[0], self.0[1], self.0[2], self.0[3]
        )
    }
}

impl Serialize for ObservationRef {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ObservationRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let input = String::deserialize(deserializer)?;
        ObservationRef::parse(&input).map_err(serde::de::Error::custom)
    }
}

/// The exact scope an observation was captured in: the target scope and the concrete target
/// within it (a page target id, say).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationScope {
    pub target_scope: TargetScope,
    pub target: String,
}

/// Everything an observation ref is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ObservationBinding {
    provider: ProviderKind,
    scope: ObservationScope,
    session: String,
    pixel_width: u32,
    pixel_height: u32,
    action_width: u32,
    action_height: u32,
}

impl ObservationBinding {
    /// Binds a screenshot of `pixel_width` × `pixel_height` pixels whose action space (where
    /// input lands) is `action_width` × `action_height`. Both must be non-empty.
    pub fn new(
        provider: ProviderKind,
        scope: ObservationScope,
        session: impl Into<String>,
        pixel_size: (u32, u32),
        action_size: (u32, u32),
    ) -> Result<Self, RouteError> {
        if pixel_size.0 == 0 || pixel_size.1 == 0 || action_size.0 == 0 || action_size.1 == 0 {
            return Err(RouteError::EmptyObservation);
        }
        Ok(ObservationBinding {
            provider,
            scope,
            session: session.into(),
            pixel_width: pixel_size.0,
            pixel_height: pixel_size.1,
            action_width: action_size.0,
            action_height: action_size.1,
        })
    }

    pub fn provider(&self) -> ProviderKind {
        self.provider
    }

    pub fn scope(&self) -> &ObservationScope {
        &self.scope
    }

    pub fn session(&self) -> &str {
        &self.session
    }

    /// The screenshot's size in pixels.
    pub fn pixel_size(&self) -> (u32, u32) {
        (self.pixel_width, self.pixel_height)
    }

    /// Whether `point` lies inside the screenshot.
    pub fn contains(&self, point: PixelPoint) -> bool {
        point.x < self.pixel_width && point.y < self.pixel_height
    }

    /// `point` transformed from screenshot pixels to action space.
    pub fn to_action_space(&self, point: PixelPoint) -> ActionPoint {
        ActionPoint {
            x: f64::from(point.x) * f64::from(self.action_width) / f64::from(self.pixel_width),
            y: f64::from(point.y) * f64::from(self.action_height) / f64::from(self.pixel_height),
        }
    }
}

/// What a coordinate action presents when it claims a ref.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CoordinateClaim {
    pub provider: ProviderKind,
    pub scope: ObservationScope,
    pub session: String,
    pub point: PixelPoint,
}

/// A successful claim: the binding and the point in both spaces.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaimedObservation {
    pub binding: ObservationBinding,
    pub point: PixelPoint,
    pub action_point: ActionPoint,
}

wire_enum! {
    /// Why a claim failed. Every one fails before dispatch.
    pub enum ObservationRejection: "observation rejection" {
        /// Unknown, already claimed, evicted, or pruned after expiry.
        NotFound => "not_found",
        Expired => "expired",
        ProviderMismatch => "provider_mismatch",
        ScopeMismatch => "scope_mismatch",
        SessionMismatch => "session_mismatch",
        OutOfBounds => "out_of_bounds",
    }
}

/// The live observation refs. Pure: the caller supplies the random bytes of each ref and the
/// clock reading of each call.
#[derive(Debug, Clone, Default)]
pub struct ObservationLedger {
    live: BTreeMap<ObservationRef, LiveObservation>,
}

#[derive(Debug, Clone)]
struct LiveObservation {
    binding: ObservationBinding,
    issued_at: Millis,
}

impl ObservationLedger {
    pub fn new() -> Self {
        ObservationLedger::default()
    }

    /// Issues a ref made of `random_bytes` (256 bits the caller drew from a CSPRNG), bound to
    /// `binding` and valid for [`OBSERVATION_TTL_MILLIS`] from `now`.
    pub fn issue(
        &mut self,
        random_bytes: [u8; 32],
        now: Millis,
        binding: ObservationBinding,
    ) -> Result<ObservationRef, RouteError> {
        self.prune(now);
        let reference = ObservationRef(random_bytes);
        if self.live.contains_key(&reference) {
            return Err(RouteError::DuplicateObservationRef);
        }
        if self.live.len() >= MAX_LIVE_OBSERVATIONS {
            let oldest = self
                .live
                .iter()
                .min_by_key(|(reference, live)| (live.issued_at, (*reference).clone()))
                .map(|(reference, _)| reference.clone());
            if let Some(oldest) = oldest {
                self.live.remove(&oldest);
            }
        }
        self.live.insert(
            reference.clone(),
            LiveObservation {
                binding,
                issued_at: now,
            },
        );
        Ok(reference)
    }

    /// The binding of a live ref, without claiming it: what the planner's
    /// [`ObservationEvidence`](crate::ObservationEvidence) is made from.
    pub fn peek(&self, reference: &ObservationRef, now: Millis) -> Option<&ObservationBinding> {
        self.live
            .get(reference)
            .filter(|live| is_fresh(live.issued_at, now))
            .map(|live| &live.binding)
    }

    /// Claims a ref for one coordinate action. The ref is consumed by the attempt, whether or
    /// not the claim succeeds, so it can neither be replayed nor probed.
    pub fn claim(
        &mut self,
        reference: &ObservationRef,
        claim: &CoordinateClaim,
        now: Millis,
    ) -> Result<ClaimedObservation, RouteError> {
        let reject = |rejection| Err(RouteError::ObservationRejected(rejection));
        let Some(live) = self.live.remove(reference) else {
            return reject(ObservationRejection::NotFound);
        };
        let binding = live.binding;
        if !is_fresh(live.issued_at, now) {
            return reject(ObservationRejection::Expired);
        }
        if binding.provider != claim.provider {
            return reject(ObservationRejection::ProviderMismatch);
        }
        if binding.scope != claim.scope {
            return reject(ObservationRejection::ScopeMismatch);
        }
        if binding.session != claim.session {
            return reject(ObservationRejection::SessionMismatch);
        }
        if !binding.contains(claim.point) {
            return reject(ObservationRejection::OutOfBounds);
        }
        Ok(ClaimedObservation {
            action_point: binding.to_action_space(claim.point),
            point: claim.point,
            binding,
        })
    }

    /// Drops every ref that can no longer be claimed.
    pub fn prune(&mut self, now: Millis) {
        self.live.retain(|_, live| is_fresh(live.issued_at, now));
    }

    /// How many refs are live (including any that expired since the last prune).
    pub fn len(&self) -> usize {
        self.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }
}

/// A ref is fresh from its issue instant for the TTL. A clock reading before the issue instant
/// means the caller's clock is not monotonic, and the ref fails closed.
fn is_fresh(issued_at: Millis, now: Millis) -> bool {
    now.0
        .checked_sub(issued_at.0)
        .is_some_and(|elapsed| elapsed < OBSERVATION_TTL_MILLIS)
}
