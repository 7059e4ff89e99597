//! The fixtures file (`fixtures.ts`, written beside every spec): the `test` and `expect` and the
//! helper functions generated specs import, each imported only where called.

/// The fixtures file every generated spec imports its `test`, `expect` and helpers from.
pub(super) const FIXTURES: &str = include_str!("fixtures.ts");

/// The file name the fixtures are written under, beside the spec.
pub const FIXTURES_FILE: &str = "cua.fixtures.ts";

/// The names of the functions the fixtures file exports.
pub(super) fn exported() -> impl Iterator<Item = &'static str> {
    FIXTURES.lines().filter_map(|line| {
        let rest = line
            .strip_prefix("export async function ")
            .or_else(|| line.strip_prefix("export function "))?;
        rest.split('(').next()
    })
}

#[cfg(test)]
mod tests {
    use super::{FIXTURES, exported};

    #[test]
    fn the_fixtures_file_exports_the_helpers_specs_call() {
        let names: Vec<&str> = exported().collect();
        for name in [
            "input",
            "secret",
            "squash",
            "byRole",
            "keyedRecord",
            "settled",
            "sessionFile",
        ] {
            assert!(names.contains(&name), "{name} is not among {names:?}");
        }
        assert!(
            names.iter().all(|name| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric())
            })
        );
    }

    #[test]
    fn the_fixtures_file_is_marked_as_generated_and_names_the_sessions_directory() {
        assert!(FIXTURES.starts_with(super::super::GENERATED_MARK));
        assert!(FIXTURES.contains(&format!(
            "return `{}/${{reference}}.json`;",
            super::super::SESSIONS_DIR
        )));
    }
}
