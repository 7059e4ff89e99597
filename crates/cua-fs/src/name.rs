//! What a name inside a directory may be: one plain component.

use crate::error::FsError;

/// The longest file name Linux file systems take (`NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;

/// Checks that `name` names an entry of a directory and nothing else: not empty, not `.` or
/// `..`, no `/`, no NUL, at most [`MAX_NAME_BYTES`]. Whatever else the caller allows (a run id
/// is stricter) is the caller's rule.
pub fn check_name(name: &str) -> Result<(), FsError> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name == "." || name == ".." {
        Some("`.` and `..` name directories around it")
    } else if name.contains('/') {
        Some("it holds a `/`")
    } else if name.contains('\0') {
        Some("it holds a NUL")
    } else if name.len() > MAX_NAME_BYTES {
        Some("it is longer than 255 bytes")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(FsError::InvalidName {
            name: name.escape_debug().to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_plain_component_is_a_name() {
        for good in ["trace.jsonl", ".hidden", "a..b", "run-1", &"x".repeat(255)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "/etc",
            "../x",
            "a\0b",
            &"x".repeat(256),
        ] {
            assert!(
                matches!(check_name(bad), Err(FsError::InvalidName { .. })),
                "{bad:?}"
            );
        }
    }
}
