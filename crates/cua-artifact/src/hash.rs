//! Content addressing. A capability's hash is blake3 over its canonical bytes: the typed model
//! serialized to its wire form, minus `content_hash`, as compact JSON with every object's keys
//! sorted.
//!
//! Because the hash is computed from the typed model and not from the YAML text, layout,
//! comments, quoting style and key order do not change it, and neither does writing a default
//! explicitly instead of leaving it out: both parse to the same model. Any change of meaning
//! changes the model and so the hash.

use std::fmt::Write as _;

use crate::capability::Capability;
use crate::error::ArtifactError;
use crate::identifiers::ContentHash;

/// Whether a capability's declared hash is present and right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SealState {
    /// No hash yet: a draft. Accepted for review, never for unattended replay.
    Draft,
    /// The declared hash is the computed one.
    Sealed(ContentHash),
    /// The declared hash is not the computed one: the content changed after sealing.
    Tampered {
        declared: ContentHash,
        computed: ContentHash,
    },
}

impl SealState {
    /// The wire-ish name: `draft`, `sealed`, `tampered`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Sealed(_) => "sealed",
            Self::Tampered { .. } => "tampered",
        }
    }
}

impl Capability {
    /// The canonical bytes the hash is computed over.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut value = serde_json::to_value(self)
            .expect("a capability holds only strings, numbers, booleans, lists and maps");
        if let Some(object) = value.as_object_mut() {
            object.remove("content_hash");
        }
        canonical_json(&value).into_bytes()
    }

    /// The hash of the content as it is now.
    pub fn compute_hash(&self) -> ContentHash {
        ContentHash::of_bytes(&self.canonical_bytes())
    }

    /// Compares the declared hash with the computed one.
    pub fn seal_state(&self) -> SealState {
        match &self.content_hash {
            None => SealState::Draft,
            Some(declared) => {
                let computed = self.compute_hash();
                if *declared == computed {
                    SealState::Sealed(computed)
                } else {
                    SealState::Tampered {
                        declared: declared.clone(),
                        computed,
                    }
                }
            }
        }
    }

    /// Refuses a tampered capability; a draft passes.
    pub fn verify_hash(&self) -> Result<(), ArtifactError> {
        match self.seal_state() {
            SealState::Tampered { declared, computed } => Err(ArtifactError::Tampered {
                reference: Box::new(self.reference()),
                declared,
                computed,
            }),
            SealState::Draft | SealState::Sealed(_) => Ok(()),
        }
    }

    /// The same capability with its hash set to the hash of its content.
    pub fn sealed(mut self) -> Self {
        self.content_hash = Some(self.compute_hash());
        self
    }
}

/// Compact JSON with object keys sorted by their UTF-8 bytes, at every depth. Written here rather
/// than left to `serde_json` so the canonical form does not depend on whether some other crate in
/// the build turns on `serde_json/preserve_order`.
pub fn canonical_json(value: &serde_json::Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::Object(object) => {
            let mut entries: Vec<_> = object.iter().collect();
            entries.sort_by(|(left, _), (right, _)| left.as_bytes().cmp(right.as_bytes()));
            out.push('{');
            for (position, (key, value)) in entries.into_iter().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        serde_json::Value::String(text) => write_string(text, out),
        // Numbers, booleans and null have one compact spelling in serde_json.
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

fn write_string(text: &str, out: &mut String) {
    out.push_str(&serde_json::Value::from(text).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let value =
            serde_json::json!({"b": 1, "a": {"z": [true, null, "x"], "$input": "q"}, "é": 1.5});
        assert_eq!(
            canonical_json(&value),
            r#"{"a":{"$input":"q","z":[true,null,"x"]},"b":1,"é":1.5}"#
        );
    }
}
