//! Plan approvals: what lets an irreversible capability run from a tool call.
//!
//! A `<tool>__plan` call returns an approval request: a token that binds the tool, the
//! capability, the sealed artifact's content hash, the hash of the tenant overlay it runs
//! through, the digest of the exact inputs, and an expiry read from the injected clock. The run
//! call recomputes every one of those from the catalog and the arguments it is given and
//! refuses unless the token matches all of them, has not expired, and has not been used.
//!
//! The token is `cua-plan-v1.<claims>.<mac>`: the claims as base64url JSON, and a keyed BLAKE3
//! MAC over everything before the last dot with a key drawn from the operating system when the
//! server starts. A client can read the claims but cannot write a token the server accepts, and
//! a token from another server process (another key) is refused as not issued here. Single use
//! is kept server-side ([`PlanBook`]): a token is spent the moment its run starts.
//!
//! A plan approval is the caller's opt-in to irreversible steps, nothing more: the capability's
//! own approval in the catalog and the policy's replay gates are checked again by the run.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use cua_artifact::{ContentHash, Identifier, TenantBinding, canonical_json};
use cua_evidence::Timestamp;
use serde::{Deserialize, Serialize};

use crate::error::McpError;

/// The version tag every token starts with.
pub const TOKEN_PREFIX: &str = "cua-plan-v1";

/// How long a plan approval is valid when the server is not told otherwise.
pub const DEFAULT_PLAN_TTL: Duration = Duration::from_secs(300);

/// The server-side secret plan tokens are authenticated with. Never printed.
#[derive(Clone)]
pub struct PlanKey([u8; 32]);

/// What a plan approval is bound to. The run call recomputes it and compares field by field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanBinding {
    /// The run tool the plan is for.
    pub tool: String,
    /// `id@version`.
    pub capability: String,
    /// The sealed content hash of the capability in the catalog (the base, for a tenant).
    pub artifact_hash: String,
    /// The hash of the tenant overlay (binding) the capability runs through; `None` when it
    /// runs as sealed.
    pub overlay_hash: Option<String>,
    /// `blake3:` over the canonical JSON of the validated inputs (defaults filled in).
    pub input_digest: String,
    /// The tenant the server runs for.
    pub tenant: Option<String>,
}

/// The claims a token carries: the binding, an id and an expiry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanClaims {
    /// Unique within the server process; single use is tracked by it.
    pub plan_id: String,
    #[serde(flatten)]
    pub binding: PlanBinding,
    pub expires_at: Timestamp,
}

/// Why a run call's plan approval is refused. Each names what the caller should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanRefusal {
    /// No `approval_token` was passed.
    Missing,
    /// The token is not of the form this server issues.
    Malformed { reason: String },
    /// The MAC does not verify: the token was altered, or issued by another server process.
    NotIssuedHere,
    /// A field of the binding differs from what the run call recomputed.
    Mismatch {
        field: &'static str,
        planned: String,
        current: String,
    },
    /// The token's expiry has passed.
    Expired {
        expired_at: Timestamp,
        now: Timestamp,
    },
    /// The token was already used for a run.
    AlreadyUsed { plan_id: String },
}

/// Issues plan approvals and remembers which were used.
pub struct PlanBook {
    key: PlanKey,
    ttl: Duration,
    issued: AtomicU64,
    /// Spent plan ids and their expiry; an entry is dropped once its token could not verify
    /// anyway.
    spent: Mutex<BTreeMap<String, Timestamp>>,
}

impl PlanKey {
    /// A fresh key from the operating system's randomness.
    pub fn generate() -> Result<Self, McpError> {
        let mut bytes = [0_u8; 32];
        getrandom::fill(&mut bytes).map_err(|error| McpError::Randomness {
            reason: error.to_string(),
        })?;
        Ok(Self(bytes))
    }

    /// A key from given bytes (tests).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Writes a token for `claims`.
    pub fn seal(&self, claims: &PlanClaims) -> String {
        let json = serde_json::to_vec(claims).expect("plan claims are strings and a timestamp");
        let payload = format!("{TOKEN_PREFIX}.{}", URL_SAFE_NO_PAD.encode(json));
        let mac = blake3::keyed_hash(&self.0, payload.as_bytes());
        format!("{payload}.{}", URL_SAFE_NO_PAD.encode(mac.as_bytes()))
    }

    /// Reads a token this key sealed, verifying its MAC before trusting a byte of it.
    pub fn open(&self, token: &str) -> Result<PlanClaims, PlanRefusal> {
        let malformed = |reason: &str| PlanRefusal::Malformed {
            reason: reason.to_owned(),
        };
        let (payload, mac_text) = token
            .trim()
            .rsplit_once('.')
            .ok_or_else(|| malformed("it has no MAC"))?;
        let Some(claims_text) = payload
            .strip_prefix(TOKEN_PREFIX)
            .and_then(|rest| rest.strip_prefix('.'))
        else {
            return Err(malformed(&format!(
                "it does not start with `{TOKEN_PREFIX}.`"
            )));
        };
        let mac_bytes: [u8; 32] = URL_SAFE_NO_PAD
            .decode(mac_text)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| malformed("its MAC is not 32 bytes of base64url"))?;
        // `blake3::Hash` compares in constant time.
        if blake3::keyed_hash(&self.0, payload.as_bytes()) != blake3::Hash::from_bytes(mac_bytes) {
            return Err(PlanRefusal::NotIssuedHere);
        }
        let json = URL_SAFE_NO_PAD
            .decode(claims_text)
            .map_err(|_| malformed("its claims are not base64url"))?;
        serde_json::from_slice(&json).map_err(|error| PlanRefusal::Malformed {
            reason: format!("its claims do not parse: {error}"),
        })
    }
}

impl std::fmt::Debug for PlanKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("PlanKey(<secret>)")
    }
}

impl PlanClaims {
    /// Checks the claims against what the run call recomputed, at `now`: every bound field,
    /// then the expiry. Single use is the [`PlanBook`]'s to check.
    pub fn check(&self, current: &PlanBinding, now: Timestamp) -> Result<(), PlanRefusal> {
        let planned = &self.binding;
        let none = || "none".to_owned();
        let fields: [(&'static str, String, String); 6] = [
            ("tool", planned.tool.clone(), current.tool.clone()),
            (
                "capability",
                planned.capability.clone(),
                current.capability.clone(),
            ),
            (
                "artifact_hash",
                planned.artifact_hash.clone(),
                current.artifact_hash.clone(),
            ),
            (
                "overlay_hash",
                planned.overlay_hash.clone().unwrap_or_else(none),
                current.overlay_hash.clone().unwrap_or_else(none),
            ),
            (
                "input_digest",
                planned.input_digest.clone(),
                current.input_digest.clone(),
            ),
            (
                "tenant",
                planned.tenant.clone().unwrap_or_else(none),
                current.tenant.clone().unwrap_or_else(none),
            ),
        ];
        for (field, planned, current) in fields {
            if planned != current {
                return Err(PlanRefusal::Mismatch {
                    field,
                    planned,
                    current,
                });
            }
        }
        if now >= self.expires_at {
            return Err(PlanRefusal::Expired {
                expired_at: self.expires_at,
                now,
            });
        }
        Ok(())
    }
}

impl PlanRefusal {
    /// The stable code the tool error carries.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing => "plan_approval_required",
            Self::Malformed { .. } | Self::NotIssuedHere => "plan_approval_invalid",
            Self::Mismatch { .. } => "plan_approval_mismatch",
            Self::Expired { .. } => "plan_approval_expired",
            Self::AlreadyUsed { .. } => "plan_approval_used",
        }
    }

    /// Why, in words, with what to do next (`plan_tool` is the companion to call).
    pub fn message(&self, plan_tool: &str) -> String {
        let again = format!(
            "call {plan_tool} with the inputs you mean to run, have the plan approved, and pass \
             its approval_token"
        );
        match self {
            Self::Missing => format!(
                "refused: this capability is irreversible and runs only with a plan approval; \
                 {again}"
            ),
            Self::Malformed { reason } => {
                format!("refused: the approval_token is malformed ({reason}); {again}")
            }
            Self::NotIssuedHere => format!(
                "refused: the approval_token was not issued by this server (altered, or from \
                 another server process); {again}"
            ),
            Self::Mismatch {
                field,
                planned,
                current,
            } => {
                let what = match *field {
                    "tool" => "the plan is for another tool",
                    "capability" => "the plan is for another capability",
                    "artifact_hash" => "the capability changed since it was planned",
                    "overlay_hash" => "the tenant overlay changed since it was planned",
                    "input_digest" => "the inputs differ from the planned inputs",
                    _ => "the plan is for another tenant",
                };
                format!(
                    "refused: {what} ({field}: planned {planned}, now {current}); nothing ran; \
                     {again}"
                )
            }
            Self::Expired { expired_at, now } => format!(
                "refused: the plan approval expired at {expired_at} (now {now}); nothing ran; \
                 {again}"
            ),
            Self::AlreadyUsed { plan_id } => format!(
                "refused: the plan approval {plan_id} was already used for a run, and one \
                 approval runs once; {again}"
            ),
        }
    }
}

impl PlanBook {
    /// A book that issues tokens valid for `ttl`, authenticated with `key`.
    pub fn new(key: PlanKey, ttl: Duration) -> Self {
        Self {
            key,
            ttl,
            issued: AtomicU64::new(0),
            spent: Mutex::new(BTreeMap::new()),
        }
    }

    /// How long an issued token is valid.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Issues a token for `binding`, valid from `now` for the book's time to live.
    pub fn issue(&self, binding: PlanBinding, now: Timestamp) -> (String, PlanClaims) {
        let sequence = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
        let ttl_micros = i64::try_from(self.ttl.as_micros()).unwrap_or(i64::MAX);
        let expires_at = Timestamp::from_unix_micros(now.unix_micros().saturating_add(ttl_micros))
            .unwrap_or(now);
        let claims = PlanClaims {
            plan_id: format!("plan-{sequence:06}"),
            binding,
            expires_at,
        };
        (self.key.seal(&claims), claims)
    }

    /// Verifies a token against the recomputed binding at `now` without spending it.
    pub fn verify(
        &self,
        token: Option<&str>,
        current: &PlanBinding,
        now: Timestamp,
    ) -> Result<PlanClaims, PlanRefusal> {
        let token = token
            .filter(|token| !token.trim().is_empty())
            .ok_or(PlanRefusal::Missing)?;
        let claims = self.key.open(token)?;
        claims.check(current, now)?;
        if self.lock().contains_key(&claims.plan_id) {
            return Err(PlanRefusal::AlreadyUsed {
                plan_id: claims.plan_id,
            });
        }
        Ok(claims)
    }

    /// Spends a verified plan: the first caller wins, any later one is refused. Called right
    /// before the run starts.
    pub fn spend(&self, claims: &PlanClaims, now: Timestamp) -> Result<(), PlanRefusal> {
        let mut spent = self.lock();
        spent.retain(|_, expires_at| *expires_at > now);
        if spent.contains_key(&claims.plan_id) {
            return Err(PlanRefusal::AlreadyUsed {
                plan_id: claims.plan_id.clone(),
            });
        }
        spent.insert(claims.plan_id.clone(), claims.expires_at);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Timestamp>> {
        self.spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `blake3:` over the canonical JSON object of the inputs (name → text), so the same inputs
/// give the same digest whatever order or JSON spelling they arrived in.
pub fn input_digest(inputs: &BTreeMap<Identifier, String>) -> String {
    let object: serde_json::Map<String, serde_json::Value> = inputs
        .iter()
        .map(|(name, value)| (name.to_string(), serde_json::Value::from(value.clone())))
        .collect();
    ContentHash::of_bytes(canonical_json(&serde_json::Value::Object(object)).as_bytes()).to_string()
}

/// `blake3:` over the canonical JSON of a tenant binding (its vars, overrides and narrowing).
pub fn overlay_hash(binding: &TenantBinding) -> String {
    let value =
        serde_json::to_value(binding).expect("a binding holds only strings, lists and maps");
    ContentHash::of_bytes(canonical_json(&value).as_bytes()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding() -> PlanBinding {
        PlanBinding {
            tool: "corebank_member_transfer_funds".to_owned(),
            capability: "corebank.member.transfer_funds@1.0.0".to_owned(),
            artifact_hash: "blake3:aaaa".to_owned(),
            overlay_hash: Some("blake3:bbbb".to_owned()),
            input_digest: "blake3:cccc".to_owned(),
            tenant: None,
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_unix_micros(1_800_000_000_000_000 + seconds * 1_000_000)
            .expect("a representable instant")
    }

    fn book() -> PlanBook {
        PlanBook::new(PlanKey::from_bytes([7; 32]), Duration::from_secs(300))
    }

    #[test]
    fn a_plan_verifies_for_exactly_what_it_was_issued_for_then_runs_once() {
        let book = book();
        let (token, claims) = book.issue(binding(), at(0));
        assert!(token.starts_with("cua-plan-v1."), "{token}");
        assert_eq!(claims.expires_at, at(300));
        let verified = book
            .verify(Some(&token), &binding(), at(299))
            .expect("a fresh token for the same binding verifies");
        assert_eq!(verified, claims);
        book.spend(&verified, at(299)).expect("first use");
        assert_eq!(
            book.verify(Some(&token), &binding(), at(299)),
            Err(PlanRefusal::AlreadyUsed {
                plan_id: "plan-000001".to_owned()
            })
        );
        assert_eq!(
            book.spend(&verified, at(299))
                .map_err(|refusal| refusal.code()),
            Err("plan_approval_used")
        );
    }

    #[test]
    fn each_bound_field_that_differs_is_refused_by_name() {
        let book = book();
        let (token, _) = book.issue(binding(), at(0));
        type Change = fn(&mut PlanBinding);
        let cases: [(&str, Change); 6] = [
            ("tool", |binding| binding.tool = "other_tool".to_owned()),
            ("capability", |binding| {
                binding.capability = "corebank.member.transfer_funds@1.0.1".to_owned();
            }),
            ("artifact_hash", |binding| {
                binding.artifact_hash = "blake3:dddd".to_owned();
            }),
            ("overlay_hash", |binding| binding.overlay_hash = None),
            ("input_digest", |binding| {
                binding.input_digest = "blake3:eeee".to_owned();
            }),
            ("tenant", |binding| {
                binding.tenant = Some("northgate-fcu".to_owned());
            }),
        ];
        for (expected, change) in cases {
            let mut current = binding();
            change(&mut current);
            match book.verify(Some(&token), &current, at(1)) {
                Err(PlanRefusal::Mismatch { field, .. }) => assert_eq!(field, expected),
                other => panic!("{expected}: expected a mismatch, got {other:?}"),
            }
        }
    }

    #[test]
    fn an_expired_plan_is_refused_at_and_after_its_expiry() {
        let book = book();
        let (token, _) = book.issue(binding(), at(0));
        for now in [at(300), at(301), at(10_000)] {
            let refusal = book
                .verify(Some(&token), &binding(), now)
                .expect_err("expired");
            assert_eq!(
                refusal,
                PlanRefusal::Expired {
                    expired_at: at(300),
                    now
                }
            );
            assert_eq!(refusal.code(), "plan_approval_expired");
        }
    }

    #[test]
    fn tokens_cannot_be_forged_altered_or_carried_to_another_server() {
        let book = book();
        let (token, claims) = book.issue(binding(), at(0));
        // Another process has another key.
        let other = PlanBook::new(PlanKey::from_bytes([8; 32]), Duration::from_secs(300));
        assert_eq!(
            other.verify(Some(&token), &binding(), at(1)),
            Err(PlanRefusal::NotIssuedHere)
        );
        // Rewriting the claims (a later expiry) without the key breaks the MAC.
        let mut longer = claims.clone();
        longer.expires_at = at(100_000);
        let forged_claims = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&longer).expect("json"));
        let mac = token.rsplit_once('.').expect("a mac").1;
        let forged = format!("{TOKEN_PREFIX}.{forged_claims}.{mac}");
        assert_eq!(
            book.verify(Some(&forged), &binding(), at(1)),
            Err(PlanRefusal::NotIssuedHere)
        );
        for (text, code) in [
            ("", "plan_approval_required"),
            ("   ", "plan_approval_required"),
            ("nonsense", "plan_approval_invalid"),
            ("cua-plan-v1.e30.AAAA", "plan_approval_invalid"),
            ("other-v9.e30.AAAA", "plan_approval_invalid"),
        ] {
            let refusal = book
                .verify(Some(text), &binding(), at(1))
                .expect_err("refused");
            assert_eq!(refusal.code(), code, "{text:?}: {refusal:?}");
        }
        assert_eq!(
            book.verify(None, &binding(), at(1)),
            Err(PlanRefusal::Missing)
        );
    }

    #[test]
    fn refusals_say_why_and_what_to_do() {
        let refusal = PlanRefusal::Mismatch {
            field: "input_digest",
            planned: "blake3:aa".to_owned(),
            current: "blake3:bb".to_owned(),
        };
        assert_eq!(
            refusal.message("x__plan"),
            "refused: the inputs differ from the planned inputs (input_digest: planned \
             blake3:aa, now blake3:bb); nothing ran; call x__plan with the inputs you mean to \
             run, have the plan approved, and pass its approval_token"
        );
    }

    #[test]
    fn digests_ignore_spelling_but_not_values() {
        let id = |name: &str| Identifier::parse(name).expect("an identifier");
        let one = BTreeMap::from([
            (id("member_id"), "12345".to_owned()),
            (id("amount"), "10.00".to_owned()),
        ]);
        let same = BTreeMap::from([
            (id("amount"), "10.00".to_owned()),
            (id("member_id"), "12345".to_owned()),
        ]);
        let other = BTreeMap::from([
            (id("member_id"), "12345".to_owned()),
            (id("amount"), "10.01".to_owned()),
        ]);
        assert_eq!(input_digest(&one), input_digest(&same));
        assert_ne!(input_digest(&one), input_digest(&other));
        assert!(input_digest(&one).starts_with("blake3:"));
    }

    #[test]
    fn the_key_is_never_printed() {
        assert_eq!(
            format!("{:?}", PlanKey::from_bytes([1; 32])),
            "PlanKey(<secret>)"
        );
    }
}
