//! The first line of a YAML document cua writes: the yaml-language-server modeline that points
//! an editor at the document's JSON Schema, by a path relative to the file.

use std::path::{Path, PathBuf};

/// `# yaml-language-server: $schema=<path>` for a file to be written at `file`, where `<path>`
/// leads from the file's directory to `schema` (such as `schemas/capability.schema.json`) in
/// the nearest directory above it that holds one (a project's root). `None` when no directory
/// above does: a modeline to nowhere would only make an editor complain.
pub fn schema_modeline(file: &Path, schema: &str) -> Option<String> {
    let directory = file.parent().unwrap_or(Path::new(""));
    let absolute: PathBuf = if directory.is_absolute() {
        directory.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(directory)
    };
    absolute
        .ancestors()
        .enumerate()
        .find(|(_, ancestor)| ancestor.join(schema).is_file())
        .map(|(depth, _)| {
            format!(
                "# yaml-language-server: $schema={}{schema}\n",
                "../".repeat(depth)
            )
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

    use super::*;

    #[test]
    fn the_modeline_leads_to_the_nearest_schema_above() {
        let root = tempfile::tempdir().unwrap();
        let schema = "schemas/capability.schema.json";
        assert_eq!(
            schema_modeline(&root.path().join("capabilities/x.yaml"), schema),
            None,
            "no schema anywhere above"
        );
        std::fs::create_dir_all(root.path().join("schemas")).unwrap();
        std::fs::write(root.path().join(schema), "{}").unwrap();
        assert_eq!(
            schema_modeline(&root.path().join("x.yaml"), schema).unwrap(),
            "# yaml-language-server: $schema=schemas/capability.schema.json\n"
        );
        assert_eq!(
            schema_modeline(&root.path().join("tenants/acme/x.yaml"), schema).unwrap(),
            "# yaml-language-server: $schema=../../schemas/capability.schema.json\n"
        );
    }
}
