//! The operator console and session broker: when replay meets a screen it does not
//! understand, it pauses, a human takes over the same live session, and control comes back.
//!
//! * [`Broker`] owns the live sessions, their leases (the state machine is
//!   [`cua_policy::Lease`]), the intervention queue (persisted in each run's evidence
//!   directory, [`intervention`]), the human's gestures through the same resolve → authorize
//!   → dispatch → evidence path as every actor, the hand-back that resumes the run, and
//!   recording by demonstration.
//! * [`serve`] is the web console (axum): the queue, the live view (continuous, redacted
//!   frames over a WebSocket), runs and their evidence, capabilities, read-only settings.
//! * [`paint`] paints sensitive regions over live frames in this process, before they leave
//!   it.
//!
//! Architecture invariant: the console depends on no concrete surface and no model client.
//! The binary injects the browser ([`LiveSurface`]) and the catalog ([`CatalogView`]). Every
//! human action reaches the surface only as an `Authorized<BrowserAction>` minted by the policy engine
//! for actor `human` at the lease epoch the operator holds.

mod broker;
mod error;
mod files;
pub mod intervention;
mod live;
mod page;
pub mod paint;
mod server;
pub mod show;

pub use broker::{
    Broker, BrokerConfig, ClaimAnswer, ConsoleClock, Gesture, GestureAnswer, InterventionCard,
    RecordingSummary, ReleaseAnswer, RunAttachment, Session, SessionConfig, SessionMode,
    SessionSink, SessionView, WallClock, recorded_as,
};
pub use cua_access::{Access, MIN_TOKEN_CHARS};
pub use error::ConsoleError;
pub use files::{EvidenceFile, read_evidence_file};
pub use intervention::{Intervention, InterventionState};
pub use live::{BoxFuture, FrameStream, LiveFrame, LiveSurface};
pub use server::{
    CapabilityRow, CatalogView, ConsoleConfig, NoCatalog, RunningConsole, WS_PROTOCOL,
    WS_TOKEN_PREFIX, serve,
};
