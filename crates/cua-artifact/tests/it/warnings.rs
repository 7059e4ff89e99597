//! One document per warning under `warnings/`, named after the code it must raise. The document
//! is valid (a warning never invalidates it) and every warning is snapshotted in its plain
//! rendering.

use cua_artifact::{check_source, render_plain};

#[test]
fn every_warning_has_a_valid_document_that_raises_it() {
    let (directory, names) = crate::support::yaml_fixtures("warnings");
    assert_eq!(
        names,
        ["literal_identity_key.yaml", "unscoped_detector.yaml"]
    );
    for name in names {
        let text = std::fs::read_to_string(directory.join(&name)).expect("a readable fixture");
        let checked = check_source(&format!("warnings/{name}"), &text);
        assert!(
            checked.is_valid(),
            "{name}: {}",
            render_plain(&checked.diagnostics)
        );
        let expected = format!("cua::{}", name.trim_end_matches(".yaml"));
        let codes: Vec<&str> = checked
            .warnings
            .iter()
            .map(|warning| warning.code.as_str())
            .collect();
        assert_eq!(codes, [expected.as_str()], "{name}");
        assert!(
            checked
                .warnings
                .iter()
                .all(|warning| warning.code.is_warning())
        );
        insta::with_settings!({ snapshot_path => "snapshots/warnings", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!(name.trim_end_matches(".yaml"), render_plain(&checked.warnings));
        });
    }
}
