//! How much the binary reads of each kind of file it is handed, and why. Every such read goes
//! through `cua_fs::read_bounded` (or a `cua_fs::Dir`) with one of these, so a device, a FIFO, a
//! directory or a file that never ends is refused at once with an error naming the file and the
//! limit. Evidence has its own limits in `cua-evidence`.

use cua_fs::Limit;

/// Capabilities, tenant bindings, approvals, the policy, eval suites and the model
/// configuration: YAML documents, which the parser refuses above this size in any case.
pub(crate) const DOCUMENT: Limit = Limit {
    bytes: cua_artifact::yaml::MAX_DOCUMENT_BYTES as u64,
    what: "a YAML document",
};

/// A batch's rows (`--inputs rows.jsonl`), held whole and digested before the first row runs.
/// A row is an object of a few inputs, well under a kilobyte, so this is a hundred thousand
/// rows and more; a larger batch is split with `--shard`.
pub(crate) const ROWS: Limit = Limit {
    bytes: 64 * 1024 * 1024,
    what: "a batch's rows",
};

/// A batch's state file: a `started` and a `done` line (with the row's result line) per row,
/// a few kilobytes at most each, for as many rows as [`ROWS`] allows.
pub(crate) const BATCH_STATE: Limit = Limit {
    bytes: 256 * 1024 * 1024,
    what: "a batch's state file",
};

/// The console's operators file: one `name: token` line per operator.
pub(crate) const OPERATORS: Limit = Limit {
    bytes: 64 * 1024,
    what: "an operators file",
};

/// The JSON report Playwright Test writes for the demo's generated specs: a few suites.
#[cfg_attr(
    not(feature = "fixture"),
    expect(dead_code, reason = "the demo reads Playwright's report")
)]
pub(crate) const PLAYWRIGHT_REPORT: Limit = Limit {
    bytes: 16 * 1024 * 1024,
    what: "a Playwright report",
};

/// A key file: 64 hex digits and a newline, with room for a comment.
pub(crate) const KEY: Limit = Limit {
    bytes: 4 * 1024,
    what: "a key file",
};
