//! Who may use a server cua runs on this machine (the operator console, `cua console`, and the
//! MCP tool server, `cua serve`): both answer only operators who present a bearer token, only
//! under the names they listen on, and only to pages of their own origin. One crate holds it so
//! the two servers cannot drift apart.
//!
//! * [`Access`]: the operators and their tokens, generated at start or read from an operators
//!   file (`name: token` per line); a presented token is compared with every token in constant
//!   time.
//! * [`ServedNames`]: the `Host` values a server answers to (its loopback names with its port,
//!   so a DNS-rebinding page cannot reach it under another name) and the `Origin`s it accepts.
//! * [`check_bind`]: a non-loopback address is refused unless remote access was asked for with
//!   `--allow-remote`.
//! * [`Refusal`]: why a request was turned away, with the HTTP status and a stable code each
//!   server renders in its own body.
//!
//! Architecture invariant: no server, no I/O and no clock here; the only effect is drawing a
//! generated token from the operating system's randomness.

mod error;
mod names;
mod tokens;

pub use error::{AccessError, Refusal};
pub use names::{ALLOW_REMOTE_FLAG, ServedNames, check_bind};
pub use tokens::{Access, MIN_TOKEN_CHARS, bearer_token};
