//! The byte-level form of a trace line and its hash chain (defined in the crate documentation).

use cua_artifact::Actor;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::clock::Timestamp;
use crate::error::EvidenceError;

/// The prefix of every hash in a trace.
pub const HASH_PREFIX: &str = "blake3:";

/// The domain-separation prefix of the genesis hash.
pub const GENESIS_DOMAIN: &str = "cua.trace/v1\n";

/// The keys of a trace line's envelope, in the order they are written. A payload may not use
/// any of them.
pub const ENVELOPE_KEYS: [&str; 8] = [
    "seq",
    "at",
    "run_id",
    "event",
    "actor",
    "lease_epoch",
    "prev_hash",
    "line_hash",
];

/// The `prev_hash` of a run's first line: `blake3:` + hex(BLAKE3(`cua.trace/v1\n` + run id)).
/// Binding the chain to the run id means a trace moved under another run id does not verify.
pub fn genesis_hash(run_id: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(GENESIS_DOMAIN.as_bytes());
    hasher.update(run_id.as_bytes());
    format!("{HASH_PREFIX}{}", hasher.finalize().to_hex())
}

/// The envelope of one line, before it is sealed.
pub(crate) struct Envelope<'a> {
    pub(crate) seq: u64,
    pub(crate) at: Timestamp,
    pub(crate) run_id: &'a str,
    pub(crate) event: &'a str,
    pub(crate) actor: Actor,
    pub(crate) lease_epoch: u64,
    pub(crate) prev_hash: &'a str,
}

/// A sealed line: its bytes (with the trailing newline) and its `line_hash`.
pub(crate) struct SealedLine {
    pub(crate) bytes: Vec<u8>,
    pub(crate) line_hash: String,
}

/// Writes the envelope, then the payload's members in key order, then seals the line.
pub(crate) fn seal(
    envelope: &Envelope<'_>,
    payload: &Map<String, Value>,
) -> Result<SealedLine, EvidenceError> {
    #[derive(Serialize)]
    struct Unsealed<'a> {
        seq: u64,
        at: Timestamp,
        run_id: &'a str,
        event: &'a str,
        actor: Actor,
        lease_epoch: u64,
        prev_hash: &'a str,
        #[serde(flatten)]
        payload: &'a Map<String, Value>,
    }
    let unsealed = serde_json::to_vec(&Unsealed {
        seq: envelope.seq,
        at: envelope.at,
        run_id: envelope.run_id,
        event: envelope.event,
        actor: envelope.actor,
        lease_epoch: envelope.lease_epoch,
        prev_hash: envelope.prev_hash,
        payload,
    })
    .map_err(|source| EvidenceError::Serialize {
        what: "a trace line",
        source,
    })?;
    let line_hash = hash_bytes(&unsealed);
    // `unsealed` is a JSON object with at least the envelope, so it ends with `}`.
    let mut bytes = unsealed;
    bytes.pop();
    bytes.extend_from_slice(SEAL_KEY.as_bytes());
    bytes.extend_from_slice(line_hash.as_bytes());
    bytes.extend_from_slice(b"\"}\n");
    Ok(SealedLine { bytes, line_hash })
}

/// What a line's seal says about it.
pub(crate) enum Seal {
    /// The line ends with a well-formed `line_hash` member; `claimed` is its value and
    /// `computed` the hash of the line without it.
    Present { claimed: String, computed: String },
    /// The line does not end with a `line_hash` member.
    Missing,
}

/// Reads a line's seal (the line without its newline).
pub(crate) fn unseal(line: &[u8]) -> Seal {
    let Some(body_len) = line.len().checked_sub(SEAL_LEN) else {
        return Seal::Missing;
    };
    let (body, seal) = line.split_at(body_len);
    let Some(hex) = seal
        .strip_prefix(SEAL_KEY.as_bytes())
        .and_then(|rest| rest.strip_prefix(HASH_PREFIX.as_bytes()))
        .and_then(|rest| rest.strip_suffix(b"\"}"))
    else {
        return Seal::Missing;
    };
    if !hex
        .iter()
        .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(byte))
    {
        return Seal::Missing;
    }
    let mut unsealed = Vec::with_capacity(body.len() + 1);
    unsealed.extend_from_slice(body);
    unsealed.push(b'}');
    Seal::Present {
        claimed: format!("{HASH_PREFIX}{}", String::from_utf8_lossy(hex)),
        computed: hash_bytes(&unsealed),
    }
}

fn hash_bytes(bytes: &[u8]) -> String {
    format!("{HASH_PREFIX}{}", blake3::hash(bytes).to_hex())
}

/// The last member of every line, up to its value.
const SEAL_KEY: &str = ",\"line_hash\":\"";

/// The length of the seal: the key, `blake3:`, 64 hex digits, the closing quote and brace.
const SEAL_LEN: usize = SEAL_KEY.len() + HASH_PREFIX.len() + 64 + 2;
