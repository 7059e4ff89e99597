//! The immutable UI snapshot that every observation produces, whatever the surface.
//!
//! A [`UiSnapshot`] is a flat list of [`UiNode`]s in document order (frames stitched in the
//! order they appear), with parent and child links by index. Document order is the only tie
//! order anywhere in cua, so nothing here uses a hash map for iteration. The crate also owns
//! the two name normalizations every matcher shares ([`normalize_name`] and [`fold`]), role
//! aliasing ([`normalize_role`]), and snapshot diffs.
//!
//! Architecture invariant: this crate does no I/O, reads no clock and knows no driver. A
//! snapshot is data; backend handles a driver needs to act live outside it, keyed by node id.

mod diff;
mod money;
mod normalize;
mod snapshot;

pub use diff::{SnapshotDiff, diff};
pub use money::{read_money, same_money, shows_money};
pub use normalize::{fold, is_noise_role, normalize_name, normalize_role, squash_whitespace};
pub use snapshot::{Bounds, NodeId, NodeScope, UiNode, UiSnapshot};
