//! Every file cua reads or writes goes through this crate, so that a hostile file or a second
//! local user cannot make cua read without end, write where they chose, or serve what they
//! linked.
//!
//! # Reading
//!
//! [`read_bounded`] (and [`Dir::read`] inside a directory) opens without blocking, checks with
//! `fstat` that it holds a regular file no larger than the caller's limit, then reads at most
//! one byte more than the limit, so a device (`/dev/zero`), a FIFO, a directory or a file that
//! grows while it is read is refused with an error naming the file and the limit instead of
//! exhausting memory or hanging. A path the user named may pass through symbolic links: that is
//! the user's choice. Inside a directory cua owns (a run's evidence), no component may be one.
//! [`read_trusted`] reads a file whose content decides what cua does (a project's `cua.toml`):
//! never through a link, and only when the current user or root owns it and no one else may
//! write it.
//!
//! # Writing
//!
//! Files are written whole or not at all, and never through a link:
//!
//! - [`Dir::write_atomic`] (and [`write_atomic`] for a path the user named) creates a temporary
//!   file in the target's own directory with `O_CREAT | O_EXCL | O_NOFOLLOW` under a random
//!   name, so nothing planted there is opened; writes and syncs it; refuses when the target
//!   name is a symbolic link or not a regular file; renames it into place (a rename replaces a
//!   link, it never follows one) and syncs the directory.
//! - [`Dir::write_new`] does the same but links the temporary file under its name instead of
//!   renaming it, which fails if anything (a file, a link) already has that name: evidence is
//!   never overwritten.
//! - [`Dir::open_append`] opens a log (a trace, a batch's state) with `O_NOFOLLOW`, and refuses
//!   anything but a regular file owned by the current user.
//!
//! Directories are held open ([`Dir`]) and everything inside them is reached with `openat`
//! relative to that descriptor, one plain component at a time ([`check_name`]), each opened
//! with `O_NOFOLLOW`: a directory swapped for a link after it was checked is not followed.
//! [`Dir::open`] and [`Dir::create_all`] refuse a path whose last component is a symbolic link;
//! the components before it are the user's.
//!
//! Architecture invariant: no other cua crate opens a file for writing or reads one whole
//! except through this crate (tests and benches aside). It depends on no cua crate.

mod dir;
mod error;
mod modeline;
mod name;
mod read;
#[cfg(feature = "testing")]
pub mod testing;

pub use dir::{Create, Dir, FileMode, write_atomic};
pub use error::FsError;
pub use modeline::schema_modeline;
pub use name::{MAX_NAME_BYTES, check_name};
pub use read::{Limit, read_bounded, read_open, read_to_string_bounded, read_trusted};
