//! The evidence root's ledger, `ledger.jsonl`: one line per finished run, naming the head of its
//! chain, chained itself and optionally signed with the installation's ed25519 key.
//!
//! A run's chain proves its lines were not edited one by one, but not that the whole run was not
//! rewritten: whoever can write the run directory can re-chain every line from the genesis with
//! a balance changed, and the result verifies. The ledger pins each run's head at the moment it
//! ended, in a file shared by every run of the root, so a re-chained run no longer matches what
//! was recorded. A forger who can also rewrite the ledger can re-chain it as well; a signed
//! ledger closes that door for anyone without the installation's private key, and the verifier
//! checks the signatures when given the public key.
//!
//! A line: `{"seq":N,"run_id":…,"head":…,"events":N,"prev_hash":…,"line_hash":…,"signature":…}`.
//! `line_hash` is `blake3:` + hex(BLAKE3(`cua.ledger/v1\n` + the line's JSON without
//! `line_hash` and `signature`)); `prev_hash` is the previous line's `line_hash` (the first
//! line's is BLAKE3 of the domain alone); `signature` is hex(ed25519(`line_hash`)).
//!
//! Appends take an exclusive `flock` on the file, so concurrent runs of a batch append in turn.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use cua_fs::{Create, Dir, FileMode};

use ed25519_dalek::{Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::chain::HASH_PREFIX;
use crate::error::EvidenceError;

/// The ledger's file name in an evidence root.
pub const LEDGER_FILE: &str = "ledger.jsonl";

/// The domain-separation prefix of every ledger hash.
const LEDGER_DOMAIN: &str = "cua.ledger/v1\n";

/// The largest ledger read: a million runs' lines, give or take.
const MAX_LEDGER_BYTES: u64 = 512 * 1024 * 1024;

/// One line of the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerEntry {
    pub seq: u64,
    pub run_id: String,
    /// The `line_hash` of the run's last line (its `run_end`).
    pub head: String,
    /// How many lines the run's trace has.
    pub events: u64,
    pub prev_hash: String,
    pub line_hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// What is hashed: the entry without its seal, in this field order.
#[derive(Serialize)]
struct Unsealed<'a> {
    seq: u64,
    run_id: &'a str,
    head: &'a str,
    events: u64,
    prev_hash: &'a str,
}

impl LedgerEntry {
    fn computed_hash(&self) -> String {
        let unsealed = Unsealed {
            seq: self.seq,
            run_id: &self.run_id,
            head: &self.head,
            events: self.events,
            prev_hash: &self.prev_hash,
        };
        let json = serde_json::to_vec(&unsealed).unwrap_or_default();
        let mut hasher = blake3::Hasher::new();
        hasher.update(LEDGER_DOMAIN.as_bytes());
        hasher.update(&json);
        format!("{HASH_PREFIX}{}", hasher.finalize().to_hex())
    }
}

/// The `prev_hash` of the ledger's first line.
pub fn ledger_genesis() -> String {
    format!(
        "{HASH_PREFIX}{}",
        blake3::hash(LEDGER_DOMAIN.as_bytes()).to_hex()
    )
}

/// The installation's private signing key (32 bytes, kept as hex in a mode-0600 file).
pub struct InstallationKey(SigningKey);

impl std::fmt::Debug for InstallationKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("InstallationKey")
            .field(&self.public().to_hex())
            .finish()
    }
}

impl InstallationKey {
    /// A new key from the operating system's randomness.
    pub fn generate() -> Result<Self, EvidenceError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|error| EvidenceError::Key {
            reason: format!("no randomness for a new key: {error}"),
        })?;
        Ok(Self(SigningKey::from_bytes(&seed)))
    }

    /// Reads a key written by [`InstallationKey::to_hex`].
    pub fn from_hex(text: &str) -> Result<Self, EvidenceError> {
        let bytes = hex32(text.trim()).ok_or_else(|| EvidenceError::Key {
            reason: "a signing key is 64 hex digits".to_owned(),
        })?;
        Ok(Self(SigningKey::from_bytes(&bytes)))
    }

    /// The private key as 64 hex digits.
    pub fn to_hex(&self) -> String {
        hex(&self.0.to_bytes())
    }

    /// The matching public key.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }
}

/// The installation's public key, to verify a ledger's signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// Reads a key written by [`PublicKey::to_hex`].
    pub fn from_hex(text: &str) -> Result<Self, EvidenceError> {
        let invalid = || EvidenceError::Key {
            reason: "a public key is 64 hex digits naming a valid ed25519 point".to_owned(),
        };
        let bytes = hex32(text.trim()).ok_or_else(invalid)?;
        VerifyingKey::from_bytes(&bytes)
            .map(Self)
            .map_err(|_| invalid())
    }

    /// The public key as 64 hex digits.
    pub fn to_hex(&self) -> String {
        hex(self.0.as_bytes())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn hex32(text: &str) -> Option<[u8; 32]> {
    hex_bytes(text)?.try_into().ok()
}

fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).ok())
        .collect()
}

fn ledger_error(path: &Path, reason: impl Into<String>) -> EvidenceError {
    EvidenceError::Ledger {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// Creates the evidence root's ledger, empty, when it has none (mode 0600, never through a link).
pub(crate) fn ensure(root: &Dir) -> Result<(), EvidenceError> {
    root.open_append(LEDGER_FILE, Create::IfMissing, FileMode::Private)?;
    Ok(())
}

/// Appends the head of a finished run to the ledger of `root`, signed when a key is given.
/// The file is created (mode 0600) when missing, must otherwise be a regular file of ours
/// (never a link), and is locked while the last line is read and the new one written. An
/// unterminated last line (a write cut short by a crash) is cut off before the new line, so one
/// torn append never breaks the ledger for every run after it.
pub fn append(
    root: &Path,
    run_id: &str,
    head: &str,
    events: u64,
    key: Option<&InstallationKey>,
) -> Result<LedgerEntry, EvidenceError> {
    let path = root.join(LEDGER_FILE);
    let io = |error: std::io::Error| ledger_error(&path, error.to_string());
    let mut file =
        Dir::open(root)?.open_append(LEDGER_FILE, Create::IfMissing, FileMode::Private)?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|error| io(error.into()))?;
    let bytes = read_all(&path, &mut file, MAX_LEDGER_BYTES)?;
    let whole = bytes
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |at| at + 1);
    if whole < bytes.len() {
        file.set_len(whole as u64).map_err(io)?;
    }
    let entries = parse_entries(&path, &bytes[..whole])?;
    let (seq, prev_hash) = entries.last().map_or((1, ledger_genesis()), |last| {
        (last.seq + 1, last.line_hash.clone())
    });
    let mut entry = LedgerEntry {
        seq,
        run_id: run_id.to_owned(),
        head: head.to_owned(),
        events,
        prev_hash,
        line_hash: String::new(),
        signature: None,
    };
    entry.line_hash = entry.computed_hash();
    entry.signature = key.map(|key| hex(&key.0.sign(entry.line_hash.as_bytes()).to_bytes()));
    let mut line = serde_json::to_vec(&entry).map_err(|source| EvidenceError::Serialize {
        what: "a ledger line",
        source,
    })?;
    line.push(b'\n');
    file.write_all(&line).map_err(io)?;
    file.sync_data().map_err(io)?;
    // The lock goes with the file.
    Ok(entry)
}

/// The whole of `file`, refused when longer than `limit` bytes: a ledger read in part would
/// lose its tail at the next append, which cuts the file after the last whole line it read.
fn read_all(path: &Path, file: &mut std::fs::File, limit: u64) -> Result<Vec<u8>, EvidenceError> {
    let io = |error: std::io::Error| ledger_error(path, error.to_string());
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(ledger_error(
            path,
            format!("larger than {limit} bytes; start a new evidence root"),
        ));
    }
    Ok(bytes)
}

/// The entries of the ledger's complete lines; an unterminated last line is not an entry.
fn parse_entries(path: &Path, bytes: &[u8]) -> Result<Vec<LedgerEntry>, EvidenceError> {
    let mut entries = Vec::new();
    for (index, line) in bytes.split_inclusive(|&byte| byte == b'\n').enumerate() {
        let Some(line) = line.strip_suffix(b"\n") else {
            break;
        };
        let entry: LedgerEntry = serde_json::from_slice(line).map_err(|error| {
            ledger_error(
                path,
                format!("line {} is not a ledger entry: {error}", index + 1),
            )
        })?;
        entries.push(entry);
    }
    Ok(entries)
}

/// What the ledger says about one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum LedgerCheck {
    /// The root has no ledger, so nothing pins the run's head: it was deleted, or the run was
    /// copied out of its evidence root.
    NoLedger,
    /// The ledger is intact and records this head for the run (signed, when a key was given).
    Recorded { seq: u64, signed: bool },
    /// The ledger never recorded the run.
    NotRecorded,
    /// The ledger recorded another head: the run was rewritten after it ended.
    HeadDiffers { recorded: String },
    /// The ledger itself was edited, or a signature does not verify.
    Broken { line: u64, reason: String },
}

impl LedgerCheck {
    /// Whether this outcome means a finished run may not be trusted.
    pub fn is_failure(&self) -> bool {
        !matches!(self, Self::Recorded { .. })
    }
}

/// The evidence root a run directory lives in: the parent of its canonical path, so `.` or a
/// path with `..` finds the same ledger as the run's full path.
pub fn root_of(run_dir: &Path) -> Result<PathBuf, EvidenceError> {
    let canonical = std::fs::canonicalize(run_dir).map_err(|error| EvidenceError::NotARunDir {
        path: run_dir.to_owned(),
        reason: format!("its path cannot be resolved: {error}"),
    })?;
    Ok(canonical
        .parent()
        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf))
}

/// Checks the ledger of the evidence root `root`: its chain and seals, every signature a line
/// carries and, with `public`, that the line recording `run_id` is signed by that key; and what
/// it records for `run_id`. A run recorded more than once (its id reused after its directory
/// was removed) is judged by its latest line. The ledger is read bounded and never through a
/// link.
pub fn check(
    root: &Path,
    run_id: &str,
    head: &str,
    public: Option<&PublicKey>,
) -> Result<LedgerCheck, EvidenceError> {
    let path = root.join(LEDGER_FILE);
    let limit = cua_fs::Limit {
        bytes: MAX_LEDGER_BYTES,
        what: "the evidence ledger",
    };
    let bytes = match Dir::open(root).and_then(|dir| dir.read(LEDGER_FILE, limit)) {
        Ok(bytes) => bytes,
        Err(error) if error.is_not_found() => return Ok(LedgerCheck::NoLedger),
        Err(error) => {
            return Ok(LedgerCheck::Broken {
                line: 0,
                reason: error.to_string(),
            });
        }
    };
    let entries = match parse_entries(&path, &bytes) {
        Ok(entries) => entries,
        Err(EvidenceError::Ledger { reason, .. }) => {
            return Ok(LedgerCheck::Broken { line: 0, reason });
        }
        Err(other) => return Err(other),
    };
    let mut prev = ledger_genesis();
    let mut latest = None;
    for (index, entry) in entries.iter().enumerate() {
        let line = index as u64 + 1;
        let broken = |reason: &str| {
            Ok(LedgerCheck::Broken {
                line,
                reason: reason.to_owned(),
            })
        };
        if entry.seq != line {
            return broken(&format!("seq is {}, expected {line}", entry.seq));
        }
        if entry.prev_hash != prev {
            return broken("prev_hash is not the previous line's hash");
        }
        if entry.line_hash != entry.computed_hash() {
            return broken("the line was edited after it was sealed");
        }
        if let Some(public) = public {
            match entry.signature.as_deref() {
                Some(signature) if !signed_by(public, &entry.line_hash, signature) => {
                    return broken("the signature does not verify with the public key");
                }
                None if entry.run_id == run_id => {
                    return broken("the line recording this run is not signed");
                }
                _ => {}
            }
        }
        if entry.run_id == run_id {
            latest = Some(entry);
        }
        prev = entry.line_hash.clone();
    }
    Ok(match latest {
        None => LedgerCheck::NotRecorded,
        Some(entry) if entry.head == head => LedgerCheck::Recorded {
            seq: entry.seq,
            signed: public.is_some(),
        },
        Some(entry) => LedgerCheck::HeadDiffers {
            recorded: entry.head.clone(),
        },
    })
}

fn signed_by(public: &PublicKey, line_hash: &str, signature: &str) -> bool {
    hex_bytes(signature)
        .and_then(|bytes| <[u8; 64]>::try_from(bytes).ok())
        .map(|bytes| ed25519_dalek::Signature::from_bytes(&bytes))
        .is_some_and(|signature| public.0.verify(line_hash.as_bytes(), &signature).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> tempfile::TempDir {
        tempfile::tempdir().expect("a scratch root")
    }

    #[test]
    fn a_recorded_head_checks_and_any_change_is_caught() {
        let root = root();
        let key = InstallationKey::generate().unwrap();
        append(root.path(), "run-a", "blake3:aa", 5, Some(&key)).unwrap();
        append(root.path(), "run-b", "blake3:bb", 7, Some(&key)).unwrap();
        let path = root.path().join(LEDGER_FILE);
        let root = root.path();
        let public = key.public();
        assert_eq!(
            check(root, "run-a", "blake3:aa", Some(&public)).unwrap(),
            LedgerCheck::Recorded {
                seq: 1,
                signed: true
            }
        );
        assert_eq!(
            check(root, "run-b", "blake3:forged", None).unwrap(),
            LedgerCheck::HeadDiffers {
                recorded: "blake3:bb".into()
            }
        );
        assert_eq!(
            check(root, "run-c", "blake3:cc", None).unwrap(),
            LedgerCheck::NotRecorded
        );
        // Rewriting a recorded head, even re-sealed, breaks the signature.
        let text = std::fs::read_to_string(&path).unwrap();
        let mut forged: LedgerEntry = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
        forged.head = "blake3:forged".into();
        forged.line_hash = forged.computed_hash();
        let rewritten = format!(
            "{}\n{}\n",
            text.lines().next().unwrap(),
            serde_json::to_string(&forged).unwrap()
        );
        std::fs::write(&path, rewritten).unwrap();
        assert_eq!(
            check(root, "run-b", "blake3:forged", None).unwrap(),
            LedgerCheck::Recorded {
                seq: 2,
                signed: false
            },
            "without the public key a re-sealed ledger cannot be told apart"
        );
        assert!(matches!(
            check(root, "run-b", "blake3:forged", Some(&public)).unwrap(),
            LedgerCheck::Broken { line: 2, .. }
        ));
        let other = InstallationKey::generate().unwrap().public();
        assert!(matches!(
            check(root, "run-a", "blake3:aa", Some(&other)).unwrap(),
            LedgerCheck::Broken { line: 1, .. }
        ));
    }

    /// A ledger grows by a line per run and is never rotated: a few thousand runs (megabytes)
    /// must read and extend as well as two.
    #[test]
    fn a_ledger_of_thousands_of_runs_is_read_and_extended() {
        let root = root();
        let mut ledger = Vec::new();
        let mut prev_hash = ledger_genesis();
        for seq in 1..=8_000 {
            let mut entry = LedgerEntry {
                seq,
                run_id: format!("run-20261202-{seq:09}"),
                head: format!("blake3:{:064x}", seq),
                events: 40,
                prev_hash,
                line_hash: String::new(),
                signature: None,
            };
            entry.line_hash = entry.computed_hash();
            prev_hash = entry.line_hash.clone();
            ledger.extend(serde_json::to_vec(&entry).unwrap());
            ledger.push(b'\n');
        }
        assert!(ledger.len() > 2 * 1024 * 1024, "{} bytes", ledger.len());
        std::fs::write(root.path().join(LEDGER_FILE), &ledger).unwrap();
        let head = format!("blake3:{:064x}", 17);
        assert_eq!(
            check(root.path(), "run-20261202-000000017", &head, None).unwrap(),
            LedgerCheck::Recorded {
                seq: 17,
                signed: false
            }
        );
        let next = append(root.path(), "run-next", "blake3:ff", 3, None).unwrap();
        assert_eq!((next.seq, next.prev_hash), (8_001, prev_hash));
    }

    #[test]
    fn a_ledger_over_the_limit_is_refused_whole_never_read_in_part() {
        let root = root();
        let path = root.path().join(LEDGER_FILE);
        for (len, fits) in [(9, true), (10, true), (11, false), (30, false)] {
            std::fs::write(&path, vec![b'x'; len]).unwrap();
            let mut file = std::fs::File::open(&path).unwrap();
            match read_all(&path, &mut file, 10) {
                Ok(bytes) => assert!(fits && bytes.len() == len, "{len} bytes read"),
                Err(error) => assert!(
                    !fits && error.to_string().contains("larger than 10 bytes"),
                    "{len} bytes: {error}"
                ),
            }
        }
    }

    #[test]
    fn no_ledger_is_told_apart_from_a_broken_one() {
        let root = root();
        assert_eq!(
            check(root.path(), "run-a", "blake3:aa", None).unwrap(),
            LedgerCheck::NoLedger
        );
        std::fs::create_dir(root.path().join(LEDGER_FILE)).unwrap();
        assert!(matches!(
            check(root.path(), "run-a", "blake3:aa", None).unwrap(),
            LedgerCheck::Broken { line: 0, .. }
        ));
    }

    /// Every ledger written so far starts from this value: changing it breaks them all.
    #[test]
    fn the_genesis_is_fixed() {
        assert_eq!(
            ledger_genesis(),
            "blake3:ca9437b8896b1c6242e544f3d7a01fa0488f1ae88c0e27e29dce4ad73db8184e"
        );
    }

    /// The private half never reaches a log through `{:?}`; the public half names the key.
    #[test]
    fn a_keys_debug_form_shows_only_its_public_half() {
        let key = InstallationKey::generate().unwrap();
        let shown = format!("{key:?}");
        assert!(shown.contains(&key.public().to_hex()), "{shown}");
        assert!(!shown.contains(&key.to_hex()), "{shown}");
    }

    #[test]
    fn keys_round_trip_through_hex_and_bad_ones_are_refused() {
        let key = InstallationKey::generate().unwrap();
        let again = InstallationKey::from_hex(&key.to_hex()).unwrap();
        assert_eq!(again.public(), key.public());
        assert_eq!(
            PublicKey::from_hex(&key.public().to_hex()).unwrap(),
            key.public()
        );
        assert!(InstallationKey::from_hex("abc").is_err());
        assert!(PublicKey::from_hex(&"zz".repeat(32)).is_err());
    }

    #[test]
    fn a_torn_last_line_is_cut_off_by_the_next_append() {
        let root = root();
        append(root.path(), "run-a", "blake3:aa", 1, None).unwrap();
        let path = root.path().join(LEDGER_FILE);
        let mut torn = std::fs::read(&path).unwrap();
        torn.extend_from_slice(b"{\"seq\":2,\"run_id\":\"run-b\",\"he");
        std::fs::write(&path, &torn).unwrap();
        assert_eq!(
            check(root.path(), "run-a", "blake3:aa", None).unwrap(),
            LedgerCheck::Recorded {
                seq: 1,
                signed: false
            },
            "a torn tail is not an entry"
        );
        let entry = append(root.path(), "run-c", "blake3:cc", 1, None).unwrap();
        assert_eq!(entry.seq, 2);
        assert_eq!(
            check(root.path(), "run-c", "blake3:cc", None).unwrap(),
            LedgerCheck::Recorded {
                seq: 2,
                signed: false
            }
        );
    }

    #[test]
    fn a_reused_run_id_is_judged_by_its_latest_line() {
        let root = root();
        append(root.path(), "run-a", "blake3:first", 1, None).unwrap();
        append(root.path(), "run-a", "blake3:again", 1, None).unwrap();
        assert_eq!(
            check(root.path(), "run-a", "blake3:again", None).unwrap(),
            LedgerCheck::Recorded {
                seq: 2,
                signed: false
            }
        );
        assert!(matches!(
            check(root.path(), "run-a", "blake3:first", None).unwrap(),
            LedgerCheck::HeadDiffers { .. }
        ));
    }

    #[test]
    fn with_a_key_only_the_runs_own_line_must_be_signed() {
        let root = root();
        let key = InstallationKey::generate().unwrap();
        append(root.path(), "run-unsigned", "blake3:aa", 1, None).unwrap();
        append(root.path(), "run-signed", "blake3:bb", 1, Some(&key)).unwrap();
        let public = key.public();
        assert!(matches!(
            check(root.path(), "run-signed", "blake3:bb", Some(&public)).unwrap(),
            LedgerCheck::Recorded { signed: true, .. }
        ));
        assert!(matches!(
            check(root.path(), "run-unsigned", "blake3:aa", Some(&public)).unwrap(),
            LedgerCheck::Broken { line: 1, .. }
        ));
    }

    #[test]
    fn a_symlinked_ledger_is_refused() {
        let root = root();
        let victim = root.path().join("victim");
        std::fs::write(&victim, "untouched\n").unwrap();
        std::os::unix::fs::symlink(&victim, root.path().join(LEDGER_FILE)).unwrap();
        assert!(append(root.path(), "run-a", "blake3:aa", 1, None).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched\n");
        assert!(matches!(
            check(root.path(), "run-a", "blake3:aa", None).unwrap(),
            LedgerCheck::Broken { line: 0, .. }
        ));
    }
}
