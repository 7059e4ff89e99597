//! One failing document per rule under `invalid/`, named after the code it must raise. Every
//! diagnostic the file produces is snapshotted in its plain rendering: code, message,
//! `file:line:column`, document path, the source line with its span underlined, and the help.

use cua_artifact::{Document, check_binding, check_source, render_plain};

use crate::support::reference;

#[test]
fn every_rule_has_a_failing_document_with_placed_diagnostics() {
    let (directory, names) = crate::support::yaml_fixtures("invalid");
    assert!(
        names.len() >= 30,
        "one fixture per rule, found {}",
        names.len()
    );
    for name in names {
        let text = std::fs::read_to_string(directory.join(&name)).expect("a readable fixture");
        let file = format!("invalid/{name}");
        let checked = check_source(&file, &text);
        let mut diagnostics = checked.diagnostics;
        if let (Some(Document::TenantBinding(binding)), true) =
            (&checked.document, diagnostics.is_empty())
        {
            let base = reference(&binding.capability.file_name());
            if let Err(found) = check_binding(&file, &text, binding, &base) {
                diagnostics.extend(found);
            }
        }
        let expected = format!("cua::{}", name.trim_end_matches(".yaml"));
        assert!(
            diagnostics
                .iter()
                .any(|diagnostic| diagnostic.code.as_str() == expected),
            "{name} must raise {expected}; got {:?}",
            diagnostics
                .iter()
                .map(|d| d.code.as_str())
                .collect::<Vec<_>>()
        );
        assert!(
            diagnostics.iter().all(
                |diagnostic| diagnostic.location.is_some() || name == "document_too_large.yaml"
            ),
            "{name}: every diagnostic is placed in the text"
        );
        insta::with_settings!({ snapshot_path => "snapshots/invalid", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!(name.trim_end_matches(".yaml"), render_plain(&diagnostics));
        });
    }
}
