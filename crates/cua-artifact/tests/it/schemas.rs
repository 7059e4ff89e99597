//! The committed JSON Schemas under `schemas/` are exactly what `cua schema <document>` prints.
//! Regenerate them with `CUA_UPDATE_SCHEMAS=1 cargo test -p cua-artifact schemas`.

use cua_artifact::DocumentKind;

use crate::support::workspace_root;

#[test]
fn committed_schemas_are_fresh() {
    let update = std::env::var_os("CUA_UPDATE_SCHEMAS").is_some();
    let mut stale = Vec::new();
    for kind in DocumentKind::ALL {
        let path = workspace_root()
            .join("schemas")
            .join(format!("{}.schema.json", kind.name()));
        let generated = kind.json_schema_text();
        if update {
            std::fs::write(&path, &generated).expect("schemas/ is writable");
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != generated {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale JSON Schemas: {stale:?}; regenerate with `CUA_UPDATE_SCHEMAS=1 cargo test -p cua-artifact schemas` \
         (or `cua schema <document> > schemas/<document>.schema.json`)"
    );
}

#[test]
fn schemas_close_every_object_and_pin_the_discriminator() {
    let schema: serde_json::Value =
        serde_json::from_str(&DocumentKind::Capability.json_schema_text()).expect("valid JSON");
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["properties"]["schema"]["$ref"],
        "#/definitions/CapabilitySchema"
    );
    assert_eq!(
        schema["definitions"]["CapabilitySchema"]["enum"],
        serde_json::json!(["cua.capability/v1"])
    );
    // Every object definition refuses unknown keys, as the loader does.
    fn walk(value: &serde_json::Value, path: &str, open: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(object) => {
                let is_object = object.get("type") == Some(&serde_json::json!("object"));
                let has_properties = object.contains_key("properties");
                if is_object
                    && has_properties
                    && object.get("additionalProperties") != Some(&serde_json::json!(false))
                {
                    open.push(path.to_owned());
                }
                for (key, child) in object {
                    walk(child, &format!("{path}/{key}"), open);
                }
            }
            serde_json::Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    walk(child, &format!("{path}/{index}"), open);
                }
            }
            _ => {}
        }
    }
    for kind in DocumentKind::ALL {
        let schema: serde_json::Value =
            serde_json::from_str(&kind.json_schema_text()).expect("valid JSON");
        let mut open = Vec::new();
        walk(&schema, kind.name(), &mut open);
        assert!(
            open.is_empty(),
            "objects that accept unknown keys: {open:?}"
        );
    }
}
