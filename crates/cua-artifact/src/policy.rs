//! The policy file (`cua.policy/v1`): where automation may go, what it may do, how risky each
//! action is, what each actor may do at each risk tier, what an irreversible replay needs,
//! budgets, redaction and where secrets come from. `cua-policy` enforces it; this module owns its
//! shape and its load-time checks.

use std::collections::BTreeMap;

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostic::{DiagnosticCode, Problem};
use crate::document::PolicySchema;
use crate::source_map::DocPath;
use crate::vocabulary::{ActionKind, Actor, RiskTier};

/// The policy file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "cua policy (cua.policy/v1)")]
pub struct PolicyConfig {
    pub schema: PolicySchema,
    pub allowlist: Allowlist,
    pub actions: ActionRules,
    pub risk: RiskRules,
    pub dispositions: Dispositions,
    pub replay_gates: ReplayGates,
    pub budgets: Budgets,
    pub redaction: Redaction,
    pub secrets: SecretSource,
    /// The executables a `command` step may run. None unless listed.
    #[serde(default, skip_serializing_if = "CommandRules::is_empty")]
    pub commands: CommandRules,
    /// What a run keeps of the screen besides its snapshots.
    #[serde(default)]
    pub evidence: EvidenceRules,
}

/// What a run keeps of the screen besides its snapshots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvidenceRules {
    /// Which screenshots a run takes. Each is painted over where a secret or a sensitive value
    /// shows, and one that still carries a registered secret is withheld.
    #[serde(default)]
    pub screenshots: Screenshots,
}

/// Which screenshots a run takes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Screenshots {
    /// None.
    Never,
    /// One of the screen a failed or escalated run stopped on.
    #[default]
    OnFailure,
    /// That one, and one of the last screen of every step that dispatched an action.
    EveryDispatchedStep,
}

/// The executables `command` steps may run, by name. A step names one of these, never a path,
/// and the program is started from its argv, never through a shell.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandRules {
    pub allowed: Vec<DeclaredCommand>,
}

impl CommandRules {
    /// Whether no executable is declared.
    pub fn is_empty(&self) -> bool {
        self.allowed.is_empty()
    }

    /// The declaration named `name`.
    pub fn get(&self, name: &str) -> Option<&DeclaredCommand> {
        self.allowed.iter().find(|command| command.name == name)
    }
}

/// One executable a `command` step may run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeclaredCommand {
    /// What a step calls it (`member-risk`).
    pub name: String,
    /// The program: absolute, or relative to the directory of the policy file.
    pub path: String,
}

/// Where navigation may go. A URL is allowed when its `host[:port]` is listed, or when the whole
/// URL matches one of the patterns (anchored at the start).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Allowlist {
    pub hosts: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub url_patterns: Vec<String>,
}

/// Which actions exist for automation and which only for a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActionRules {
    pub allowed: Vec<ActionKind>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub human_only: Vec<ActionKind>,
}

/// Risk classification: the highest of the action's tier, the lexicon's verdict on the
/// control's name, and the step's declared risk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RiskRules {
    #[serde(default)]
    pub default_tier: RiskTier,
    pub tiers_by_action: BTreeMap<ActionKind, RiskTier>,
    pub lexicon: RiskLexicon,
}

/// Words that make a control risky, matched as whole words (case-insensitive, punctuation
/// ignored) against the accessible name of a control whose role is listed in `roles`.
///
/// Matching whole phrases on submitting controls, rather than any substring on any control, is
/// deliberate: a substring `transfer` makes the harmless "Review Transfer" button irreversible,
/// and a reviewer who sees every step flagged stops reading the flags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RiskLexicon {
    pub roles: Vec<String>,
    pub elevated: Vec<String>,
    pub irreversible: Vec<String>,
}

impl RiskLexicon {
    /// The tier a control's name implies, with the phrase that matched. Irreversible phrases are
    /// checked first.
    pub fn classify(&self, role: &str, name: &str) -> Option<(RiskTier, String)> {
        if !self.roles.iter().any(|listed| listed == role) {
            return None;
        }
        let words = format!(" {} ", fold_words(name));
        let hit = |phrases: &[String]| {
            phrases
                .iter()
                .find(|phrase| words.contains(&format!(" {} ", fold_words(phrase))))
                .cloned()
        };
        if let Some(phrase) = hit(&self.irreversible) {
            return Some((RiskTier::Irreversible, phrase));
        }
        hit(&self.elevated).map(|phrase| (RiskTier::Elevated, phrase))
    }
}

impl Default for RiskLexicon {
    /// The lexicon `config/policy.yaml` ships with (a test keeps the two equal).
    fn default() -> Self {
        let words = |list: &[&str]| list.iter().map(|word| (*word).to_owned()).collect();
        Self {
            roles: words(&["button", "menuitem"]),
            elevated: words(&[
                "submit",
                "save",
                "update",
                "create",
                "open account",
                "confirm",
                "submit request",
            ]),
            irreversible: words(&[
                "transfer funds",
                "post",
                "delete",
                "remove",
                "close account",
                "withdraw",
                "authorize payment",
                "wire",
                "void",
                "reverse",
            ]),
        }
    }
}

/// What each actor may do at each tier. There is deliberately no entry for `system`: it
/// observes and escalates, it never acts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dispositions {
    pub automation: DispositionTable,
    pub agent: DispositionTable,
    pub human: DispositionTable,
}

impl Dispositions {
    /// The disposition of an actor at a tier; `system` is always `block_and_escalate`.
    pub fn disposition(&self, actor: Actor, tier: RiskTier) -> Disposition {
        let table = match actor {
            Actor::Automation => &self.automation,
            Actor::Agent => &self.agent,
            Actor::Human => &self.human,
            Actor::System => return Disposition::BlockAndEscalate,
        };
        match tier {
            RiskTier::Safe => table.safe,
            RiskTier::Elevated => table.elevated,
            RiskTier::Irreversible => table.irreversible,
        }
    }
}

/// One actor's dispositions by tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DispositionTable {
    pub safe: Disposition,
    pub elevated: Disposition,
    pub irreversible: Disposition,
}

/// What happens to an action of some tier. A closed set: a misspelling fails at load rather
/// than permitting.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    Allow,
    /// Allowed when the artifact declares at least this risk on the step.
    AllowIfDeclared,
    /// Allowed when declared, approved (hash-pinned) and opted into per `replay_gates`.
    AllowIfApproved,
    /// A human must confirm this very action.
    RequireConfirmation,
    BlockAndEscalate,
}

impl Disposition {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::AllowIfDeclared => "allow_if_declared",
            Self::AllowIfApproved => "allow_if_approved",
            Self::RequireConfirmation => "require_confirmation",
            Self::BlockAndEscalate => "block_and_escalate",
        }
    }
}

/// What `allow_if_approved` requires of an irreversible step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayGates {
    /// An approval pinned to the exact content hash.
    pub irreversible_requires_approval: bool,
    /// An explicit opt-in on the invocation (`--allow-irreversible`).
    pub irreversible_requires_caller_optin: bool,
}

/// Global budgets; a capability may only lower them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    pub max_steps: u32,
    pub max_duration_ms: u64,
    pub max_recovery_attempts_total: u32,
}

/// Redaction applied at every sink.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Redaction {
    /// `<redacted:string[5]>` instead of `<redacted>`: a debugger still sees the shape.
    #[serde(default = "crate::capability::yes")]
    pub preserve_shape: bool,
    /// Keys whose values are always masked, whatever they hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Patterns masked wherever they appear in text.
    pub rules: Vec<RedactionRule>,
    #[serde(default = "crate::capability::yes")]
    pub always_redact_sensitive_inputs: bool,
    #[serde(default = "crate::capability::yes")]
    pub blur_sensitive_regions_in_screenshots: bool,
}

/// One named pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedactionRule {
    pub name: String,
    pub pattern: String,
}

/// Where `{$secret: name}` values come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretSource {
    /// `{$secret: corebank.operator_id}` is read from `<prefix>COREBANK_OPERATOR_ID`.
    pub env_prefix: String,
}

impl PolicyConfig {
    /// Load-time checks beyond types; empty means valid.
    pub fn validate(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        let root = DocPath::root();
        let mut regex = |path: DocPath, pattern: &str| {
            if let Err(error) = Regex::new(pattern) {
                let reason = error
                    .to_string()
                    .lines()
                    .last()
                    .unwrap_or_default()
                    .trim()
                    .to_owned();
                problems.push(Problem::new(
                    DiagnosticCode::InvalidRegex,
                    path,
                    format!(
                        "the regex {pattern:?} does not compile: {}",
                        reason.trim_start_matches("error: ")
                    ),
                    "regexes use the Rust `regex` crate's syntax",
                ));
            }
        };
        for (index, pattern) in self.allowlist.url_patterns.iter().enumerate() {
            regex(
                root.key("allowlist").key("url_patterns").index(index),
                pattern,
            );
        }
        for (index, rule) in self.redaction.rules.iter().enumerate() {
            regex(
                root.key("redaction")
                    .key("rules")
                    .index(index)
                    .key("pattern"),
                &rule.pattern,
            );
        }
        for (index, action) in self.actions.allowed.iter().enumerate() {
            if action.is_human_only() || self.actions.human_only.contains(action) {
                problems.push(Problem::new(
                    DiagnosticCode::HumanOnlyActionAllowed,
                    root.key("actions").key("allowed").index(index),
                    format!(
                        "`{}` is human-only but listed under `actions.allowed`",
                        action.as_str()
                    ),
                    "list it under `actions.human_only` only; automation may never originate it",
                ));
            }
        }
        for (actor, table) in [
            ("automation", &self.dispositions.automation),
            ("agent", &self.dispositions.agent),
        ] {
            for (tier, disposition) in [
                ("safe", table.safe),
                ("elevated", table.elevated),
                ("irreversible", table.irreversible),
            ] {
                if disposition == Disposition::RequireConfirmation {
                    problems.push(Problem::new(
                        DiagnosticCode::DispositionInvalid,
                        root.key("dispositions").key(actor).key(tier),
                        format!(
                            "`require_confirmation` for {actor}, which cannot confirm anything"
                        ),
                        "only a human confirms; use allow_if_approved or block_and_escalate",
                    ));
                }
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for (index, command) in self.commands.allowed.iter().enumerate() {
            let path = root.key("commands").key("allowed").index(index);
            let valid_name = !command.name.is_empty()
                && command
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !valid_name {
                problems.push(Problem::new(
                    DiagnosticCode::InvalidValue,
                    path.key("name"),
                    format!("command name {:?} is not a plain name", command.name),
                    "use letters, digits, `-`, `_` and `.`; a step names the command, never a path",
                ));
            } else if !names.insert(command.name.as_str()) {
                problems.push(Problem::new(
                    DiagnosticCode::DuplicateId,
                    path.key("name"),
                    format!("command `{}` is declared twice", command.name),
                    "declare each executable once",
                ));
            }
            if command.path.trim().is_empty() {
                problems.push(Problem::new(
                    DiagnosticCode::InvalidValue,
                    path.key("path"),
                    format!("command `{}` has an empty path", command.name),
                    "give the program's path, absolute or relative to the policy file",
                ));
            }
        }
        let agent = &self.dispositions.agent;
        if agent.irreversible == Disposition::Allow
            || agent.irreversible == Disposition::AllowIfDeclared
        {
            problems.push(Problem::new(
                DiagnosticCode::DispositionInvalid,
                root.key("dispositions").key("agent").key("irreversible"),
                "a discovering agent may take irreversible actions",
                "discovery runs under no approval; irreversible must be block_and_escalate for the agent",
            ));
        }
        problems
    }
}

/// Lower-case, punctuation to spaces, whitespace collapsed.
fn fold_words(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexicon_matches_whole_phrases_on_listed_roles() {
        let lexicon = RiskLexicon::default();
        let tier = |role: &str, name: &str| lexicon.classify(role, name).map(|(tier, _)| tier);
        assert_eq!(
            tier("button", "Transfer Funds"),
            Some(RiskTier::Irreversible)
        );
        assert_eq!(
            tier("button", "Post Transfer"),
            Some(RiskTier::Irreversible)
        );
        assert_eq!(tier("button", "Review Transfer"), None);
        assert_eq!(tier("button", "Open Account"), Some(RiskTier::Elevated));
        assert_eq!(tier("button", "Submit Request"), Some(RiskTier::Elevated));
        assert_eq!(tier("button", "Search"), None);
        assert_eq!(tier("button", "Postal code lookup"), None);
        assert_eq!(tier("link", "Transfer Funds"), None);
    }
}
