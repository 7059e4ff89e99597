//! The MCP tool server: every approved capability in the catalog is one typed tool an agent can
//! find and call, over stdio (`cua mcp`) or streamable HTTP (`cua serve`).
//!
//! # The tool contract
//!
//! * **Which tools.** Each sealed capability whose approval covers its recomputed hash (for the
//!   server's tenant) is a tool named after its id (`.` → `_`); drafts, tampered, unapproved
//!   and unbindable ones are withheld, and calling one by name says why ([`tools`]).
//! * **Schemas.** The input schema is the capability's inputs (types, patterns, enums,
//!   required, `additionalProperties: false`); the output schema covers the two successful
//!   shapes, `{status: "success", outputs}` and `{status: "business_outcome", outcome}`.
//! * **Annotations** come from the policy's assessment of every step: `readOnlyHint` when every
//!   step is safe, `destructiveHint` when any is irreversible.
//! * **Results**: a business outcome is a successful result; `failed` and
//!   `needs_human` are tool errors with the failure code, the intervention id and the evidence
//!   directory; refusals before anything ran are tool errors with `status: "refused"`.
//! * **Progress and cancellation** ([`CallHooks`]): a call that carries a progress token is
//!   told after each step its run ends; a cancelled call raises its own run's interrupt, so the
//!   run stops before its next dispatch and its evidence says `interrupted`.
//! * **List changes**: one poller per server reads the catalog each second, and every session
//!   is sent `notifications/tools/list_changed` when what it would list changes.
//! * **Plan-then-run** ([`plan`]): an irreversible capability also has a `<name>__plan` tool,
//!   and its run tool refuses without the approval token that plan issued for exactly the same
//!   capability hash, tenant overlay and inputs, before its expiry, once. The capability's own
//!   approval and the policy's gates still apply to the run.
//! * **Who may call** over HTTP ([`serve_http`]): a request needs an operator's bearer token, a
//!   `Host` that is one of the server's loopback names with its port, and, when it has one, an
//!   `Origin` that is the server itself, all checked by `cua-access` as the console checks
//!   them; anything else is refused before the MCP session sees it.
//!
//! Architecture invariant: this crate names no concrete surface and no model client. The binary
//! injects the browser through [`SurfaceFactory`]; runs go through `cua-replay`'s executor and
//! so through the policy engine's chokepoint like every other replay.

mod call;
mod error;
pub mod plan;
mod server;
mod surface;
pub mod tools;
mod transport;

pub use call::CallHooks;
pub use cua_access::{Access, AccessError};
pub use error::McpError;
pub use plan::{
    DEFAULT_PLAN_TTL, PlanBinding, PlanBook, PlanClaims, PlanKey, PlanRefusal, input_digest,
    overlay_hash,
};
pub use server::{CapabilityServer, McpConfig};
pub use surface::{SurfaceFactory, SurfaceUnavailable};
pub use tools::{
    APPROVAL_TOKEN, OfferedCapability, PLAN_SUFFIX, StepRisk, ToolKind, ToolSet, ToolSetSource,
    Withheld,
};
pub use transport::{HttpConfig, MCP_PATH, REFUSED_CODE, RunningHttp, serve_http, serve_stdio};
