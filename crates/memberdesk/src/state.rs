//! The app's in-memory state: seeded members and accounts, sessions, armed faults and posted
//! transfers, behind one mutex shared by every request and by [`FixtureHandle`]. All business
//! rules (guards, transfers, sub-accounts) are plain functions over this state so they can be
//! tested without HTTP.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::fault::ArmedFaults;
use crate::{ClientReference, Fault, FaultCount, FixtureError, Money, Variant};

/// The fixed "as of" date every page shows; the app never reads a clock.
pub const AS_OF: &str = "09/11/2026";

/// The smallest initial deposit a sub-account accepts.
pub const MINIMUM_DEPOSIT: Money = Money::from_cents(2_500);

/// How many transfers the member record's "Recent Transfers" table lists, newest first.
pub(crate) const RECENT_TRANSFERS: usize = 50;

/// Member numbers that exist but that the operator may not view.
const RESTRICTED_MEMBERS: &[&str] = &["55555"];

/// The kind of an account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccountType {
    /// A savings account; account numbers start with `S-`.
    Savings,
    /// A checking account; account numbers start with `C-`.
    Checking,
    /// A certificate of deposit; account numbers start with `D-`.
    Certificate,
}

impl AccountType {
    /// Every type, in the order the sub-account form lists them.
    pub const ALL: [AccountType; 3] = [
        AccountType::Savings,
        AccountType::Checking,
        AccountType::Certificate,
    ];

    /// The label pages show: `Savings`.
    pub const fn label(self) -> &'static str {
        match self {
            AccountType::Savings => "Savings",
            AccountType::Checking => "Checking",
            AccountType::Certificate => "Certificate",
        }
    }

    /// The form value: `savings`.
    pub const fn value(self) -> &'static str {
        match self {
            AccountType::Savings => "savings",
            AccountType::Checking => "checking",
            AccountType::Certificate => "certificate",
        }
    }

    pub(crate) fn from_value(value: &str) -> Option<AccountType> {
        AccountType::ALL
            .into_iter()
            .find(|account_type| account_type.value() == value)
    }

    const fn number_prefix(self) -> &'static str {
        match self {
            AccountType::Savings => "S",
            AccountType::Checking => "C",
            AccountType::Certificate => "D",
        }
    }

    const fn reference_code(self) -> &'static str {
        match self {
            AccountType::Savings => "SAV",
            AccountType::Checking => "CHE",
            AccountType::Certificate => "CER",
        }
    }
}

/// Whether an account can move money.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccountStatus {
    /// Open for transactions.
    Active,
    /// Closed: shown, but refuses transfers in and out.
    Closed,
}

impl AccountStatus {
    /// The label pages show: `Active`.
    pub const fn label(self) -> &'static str {
        match self {
            AccountStatus::Active => "Active",
            AccountStatus::Closed => "Closed",
        }
    }
}

/// One account of a member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// The account number, e.g. `S-12345-01`.
    pub number: String,
    /// The owning member's number.
    pub member_id: String,
    /// The kind of account.
    pub account_type: AccountType,
    /// The current balance.
    pub balance: Money,
    /// Whether it is open.
    pub status: AccountStatus,
}

/// A member and their accounts, in the order the grid shows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The member number, e.g. `12345`.
    pub id: String,
    /// The member's name.
    pub name: String,
    /// The accounts, oldest first.
    pub accounts: Vec<Account>,
}

impl Member {
    /// The first savings account, which the summary table describes.
    pub fn savings(&self) -> Option<&Account> {
        self.accounts
            .iter()
            .find(|account| account.account_type == AccountType::Savings)
    }
}

/// One posted transfer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TransferRecord {
    /// `TF-000001`, sequential from the last reset.
    pub confirmation: String,
    /// The member whose accounts moved money.
    pub member_id: String,
    /// The debited account.
    #[serde(rename = "from")]
    pub from_account: String,
    /// The credited account.
    #[serde(rename = "to")]
    pub to_account: String,
    /// The amount moved.
    pub amount: Money,
    /// The caller's client reference, when the form carried one. Omitted from JSON when absent,
    /// so a transfer without one serializes as it always did. Never unique by itself: the core
    /// system does not deduplicate by it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_reference: Option<ClientReference>,
}

/// What `GET /_control/state` returns, and what [`FixtureHandle::view`] gives tests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StateView {
    /// The variant being served.
    pub variant: Variant,
    /// Armed faults by name with their remaining count (`-1` for indefinite).
    pub armed: BTreeMap<String, i64>,
    /// Every account's balance by account number.
    pub balances: BTreeMap<String, Money>,
    /// Posted transfers, oldest first.
    pub transfers: Vec<TransferRecord>,
    /// How many sessions are signed in.
    pub sessions: usize,
    /// How many requests reached the inert `/decoy` page since the last reset: each is a
    /// `decoy_control` decoy that was used instead of the real control.
    pub decoy_hits: u64,
}

/// A cheap, cloneable handle on a running app's state, for tests and tools in the same
/// process. Every method takes the state lock briefly and never across an await.
#[derive(Clone, Debug)]
pub struct FixtureHandle {
    variant: Variant,
    state: Arc<Mutex<DeskState>>,
}

impl FixtureHandle {
    pub(crate) fn new(variant: Variant) -> Self {
        Self {
            variant,
            state: Arc::new(Mutex::new(DeskState::seeded())),
        }
    }

    /// The variant being served.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// Arms a fault, replacing any count it had.
    pub fn arm(&self, fault: Fault, count: FaultCount) {
        self.with(|state| state.faults.set(fault, Some(count)));
    }

    /// Disarms a fault.
    pub fn disarm(&self, fault: Fault) {
        self.with(|state| state.faults.set(fault, None));
    }

    /// The armed faults and their remaining counts.
    pub fn armed(&self) -> BTreeMap<Fault, FaultCount> {
        self.with(|state| state.faults.snapshot())
    }

    /// Restores the seeded members and balances, clears faults, transfers (so confirmation
    /// numbers restart at `TF-000001`) and the decoy hits. Signed-in sessions survive.
    pub fn reset(&self) {
        self.with(DeskState::reset);
    }

    /// The current balance of an account.
    pub fn balance(&self, account: &str) -> Option<Money> {
        self.with(|state| state.account(account).map(|found| found.balance))
    }

    /// Overwrites an account's balance.
    pub fn set_balance(&self, account: &str, balance: Money) -> Result<(), FixtureError> {
        self.with(|state| {
            state.account_mut(account)?.balance = balance;
            Ok(())
        })
    }

    /// Opens or closes an account.
    pub fn set_status(&self, account: &str, status: AccountStatus) -> Result<(), FixtureError> {
        self.with(|state| {
            state.account_mut(account)?.status = status;
            Ok(())
        })
    }

    /// A copy of a member, restricted and unknown members are `None`.
    pub fn member(&self, member_id: &str) -> Option<Member> {
        self.with(|state| match state.lookup(member_id) {
            Lookup::Found(member) => Some(member.clone()),
            Lookup::Restricted | Lookup::NotFound => None,
        })
    }

    /// Posted transfers, oldest first.
    pub fn transfers(&self) -> Vec<TransferRecord> {
        self.with(|state| state.transfers.clone())
    }

    /// The posted transfers whose client reference is exactly `client_reference`, oldest
    /// first. More than one means the same reference was posted more than once.
    pub fn transfers_with_client_reference(&self, client_reference: &str) -> Vec<TransferRecord> {
        self.with(|state| state.transfers_with_client_reference(client_reference))
    }

    /// How many posted transfers carry each client reference (transfers without one are not
    /// counted). A count above 1 is a reference posted more than once.
    pub fn client_reference_counts(&self) -> BTreeMap<String, usize> {
        self.with(|state| client_reference_counts(&state.transfers))
    }

    /// How many signatures were captured for a member since the last reset.
    pub fn signature_count(&self, member_id: &str) -> usize {
        self.with(|state| {
            state
                .signatures
                .iter()
                .filter(|signed| *signed == member_id)
                .count()
        })
    }

    /// The texts of a member's notes made through the API, oldest first.
    pub fn note_texts(&self, member_id: &str) -> Vec<String> {
        self.with(|state| {
            state
                .notes(member_id)
                .into_iter()
                .map(|note| note.text)
                .collect()
        })
    }

    /// How many requests reached the inert `/decoy` page since the last reset, that is how
    /// many times a `decoy_control` decoy was used instead of the real control.
    pub fn decoy_hits(&self) -> u64 {
        self.with(|state| state.decoy_hits)
    }

    /// Everything the control surface reports.
    pub fn view(&self) -> StateView {
        self.with(|state| state.view(self.variant))
    }

    pub(crate) fn with<R>(&self, action: impl FnOnce(&mut DeskState) -> R) -> R {
        // A panic while holding the lock cannot leave the state half-written in a way that
        // matters to a test fixture, so a poisoned lock is simply taken over.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        action(&mut state)
    }
}

/// The state proper. Only the app and [`FixtureHandle`] touch it, always under the lock.
#[derive(Debug)]
pub(crate) struct DeskState {
    members: Vec<Member>,
    sessions: BTreeSet<String>,
    sessions_issued: u64,
    pub(crate) faults: ArmedFaults,
    transfers: Vec<TransferRecord>,
    notes: Vec<MemberNote>,
    notes_issued: u64,
    /// Captured signatures, by member, in capture order.
    signatures: Vec<String>,
    /// Requests that reached `/decoy`.
    decoy_hits: u64,
}

/// A free-text note on a member, made through the JSON API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemberNote {
    pub(crate) note_id: String,
    pub(crate) member_id: String,
    pub(crate) text: String,
}

/// The result of looking a member number up.
#[derive(Debug)]
pub(crate) enum Lookup<'a> {
    Found(&'a Member),
    Restricted,
    NotFound,
}

/// What the guards decided for one protected request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GuardDecision {
    /// Whether `slow_page` fired: the response is delayed whatever it is.
    pub(crate) slow: bool,
    pub(crate) verdict: GuardVerdict,
}

/// The guards' verdict, in the fixed order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GuardVerdict {
    /// `transient_load`: answer 502.
    Unavailable,
    /// `session_timeout`: the session was ended; redirect to sign-on and delete the cookie.
    SessionTimeout,
    /// No valid session: redirect to sign-on.
    NotSignedIn,
    /// `undeclared_dialog`: show the System Notice interstitial.
    Notice,
    /// Serve the page.
    Proceed,
}

/// Why a sub-account was not opened. The messages are the page text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SubaccountRefusal {
    BelowMinimum,
    InvalidDeposit,
    UnknownType,
    UnknownMember,
}

impl SubaccountRefusal {
    pub(crate) const fn message(self) -> &'static str {
        match self {
            SubaccountRefusal::BelowMinimum => {
                "Initial deposit is below the minimum required for this account type."
            }
            SubaccountRefusal::InvalidDeposit => {
                "Enter the deposit as an amount, for example 100.00."
            }
            SubaccountRefusal::UnknownType => "Select an account type.",
            SubaccountRefusal::UnknownMember => "No records found",
        }
    }
}

/// A newly opened sub-account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OpenedAccount {
    pub(crate) reference: String,
    pub(crate) account: Account,
}

/// Why a transfer was not reviewed or not posted. The messages are the page text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TransferRefusal {
    UnknownAccount,
    SameAccount,
    InvalidAmount,
    InvalidClientReference,
    AccountClosed,
    InsufficientFunds,
}

impl TransferRefusal {
    pub(crate) const fn message(self) -> &'static str {
        match self {
            TransferRefusal::UnknownAccount => "Select an account of this member.",
            TransferRefusal::SameAccount => "From and To accounts must differ.",
            TransferRefusal::InvalidAmount => {
                "Enter the amount as a positive amount, for example 100.00."
            }
            TransferRefusal::InvalidClientReference => {
                "Client reference may hold up to 40 letters, digits and dashes"
            }
            TransferRefusal::AccountClosed => "Account is closed",
            TransferRefusal::InsufficientFunds => "Insufficient funds",
        }
    }
}

/// The values a transfer form was filled with, as typed; echoed back on a re-render.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TransferFields<'a> {
    pub(crate) from: &'a str,
    pub(crate) to: &'a str,
    pub(crate) amount: &'a str,
    /// Optional: blank (or only spaces) means no reference.
    pub(crate) client_reference: &'a str,
}

/// A transfer that passed the form checks, ready to review.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReviewedTransfer {
    pub(crate) from: Account,
    pub(crate) to: Account,
    pub(crate) amount: Money,
    pub(crate) client_reference: Option<ClientReference>,
}

impl DeskState {
    pub(crate) fn seeded() -> Self {
        Self {
            members: seeded_members(),
            sessions: BTreeSet::new(),
            sessions_issued: 0,
            faults: ArmedFaults::default(),
            transfers: Vec::new(),
            notes: Vec::new(),
            notes_issued: 0,
            signatures: Vec::new(),
            decoy_hits: 0,
        }
    }

    fn reset(&mut self) {
        self.members = seeded_members();
        self.faults.clear();
        self.transfers.clear();
        self.notes.clear();
        self.notes_issued = 0;
        self.signatures.clear();
        self.decoy_hits = 0;
    }

    /// Counts one request to `/decoy`; the only thing a decoy control changes.
    pub(crate) fn record_decoy_hit(&mut self) {
        self.decoy_hits += 1;
    }

    /// Records a signature for a member (looked up by the caller); references are
    /// `SIG-0001`, … within a reset.
    pub(crate) fn capture_signature(&mut self, member_id: &str) -> String {
        self.signatures.push(member_id.to_owned());
        format!("SIG-{:04}", self.signatures.len())
    }

    /// Adds a note to a member (looked up by the caller); ids are `NT-000001`, … and never
    /// reused within a reset.
    pub(crate) fn add_note(&mut self, member_id: &str, text: &str) -> MemberNote {
        self.notes_issued += 1;
        let note = MemberNote {
            note_id: format!("NT-{:06}", self.notes_issued),
            member_id: member_id.to_owned(),
            text: text.to_owned(),
        };
        self.notes.push(note.clone());
        note
    }

    /// The member's notes, oldest first.
    pub(crate) fn notes(&self, member_id: &str) -> Vec<MemberNote> {
        self.notes
            .iter()
            .filter(|note| note.member_id == member_id)
            .cloned()
            .collect()
    }

    /// Deletes one of the member's notes; whether it existed.
    pub(crate) fn delete_note(&mut self, member_id: &str, note_id: &str) -> bool {
        let before = self.notes.len();
        self.notes
            .retain(|note| !(note.member_id == member_id && note.note_id == note_id));
        self.notes.len() != before
    }

    pub(crate) fn lookup(&self, member_id: &str) -> Lookup<'_> {
        if RESTRICTED_MEMBERS.contains(&member_id) {
            return Lookup::Restricted;
        }
        self.members
            .iter()
            .find(|member| member.id == member_id)
            .map_or(Lookup::NotFound, Lookup::Found)
    }

    pub(crate) fn sign_on(&mut self) -> String {
        self.sessions_issued += 1;
        let token = format!("md-{:08}", self.sessions_issued);
        self.sessions.insert(token.clone());
        token
    }

    pub(crate) fn sign_off(&mut self, token: &str) {
        self.sessions.remove(token);
    }

    pub(crate) fn is_signed_in(&self, token: Option<&str>) -> bool {
        token.is_some_and(|token| self.sessions.contains(token))
    }

    /// Runs the guards of a protected request in their fixed order, consuming at most one
    /// firing of each fault it reaches. `navigation` is true for GET requests, the only ones
    /// the System Notice interrupts (a notice's "Continue" link can only repeat a GET).
    pub(crate) fn guard(&mut self, session: Option<&str>, navigation: bool) -> GuardDecision {
        let slow = self.faults.take(Fault::SlowPage);
        let verdict = if self.faults.take(Fault::TransientLoad) {
            GuardVerdict::Unavailable
        } else if self.faults.take(Fault::SessionTimeout) {
            if let Some(token) = session {
                self.sign_off(token);
            }
            GuardVerdict::SessionTimeout
        } else if !self.is_signed_in(session) {
            GuardVerdict::NotSignedIn
        } else if navigation && self.faults.take(Fault::UndeclaredDialog) {
            GuardVerdict::Notice
        } else {
            GuardVerdict::Proceed
        };
        GuardDecision { slow, verdict }
    }

    pub(crate) fn open_subaccount(
        &mut self,
        member_id: &str,
        account_type: &str,
        deposit: &str,
    ) -> Result<OpenedAccount, SubaccountRefusal> {
        let forced = self.faults.take(Fault::ValidationError);
        let account_type =
            AccountType::from_value(account_type).ok_or(SubaccountRefusal::UnknownType)?;
        let deposit: Money = deposit
            .parse()
            .map_err(|_| SubaccountRefusal::InvalidDeposit)?;
        if forced || deposit < MINIMUM_DEPOSIT {
            return Err(SubaccountRefusal::BelowMinimum);
        }
        if !matches!(self.lookup(member_id), Lookup::Found(_)) {
            return Err(SubaccountRefusal::UnknownMember);
        }
        let member = self
            .members
            .iter_mut()
            .find(|member| member.id == member_id)
            .ok_or(SubaccountRefusal::UnknownMember)?;
        let account = Account {
            number: format!(
                "{}-{}-{:02}",
                account_type.number_prefix(),
                member.id,
                member.accounts.len() + 1
            ),
            member_id: member.id.clone(),
            account_type,
            balance: deposit,
            status: AccountStatus::Active,
        };
        member.accounts.push(account.clone());
        Ok(OpenedAccount {
            reference: format!("SA-{}-{}", member.id, account_type.reference_code()),
            account,
        })
    }

    /// The checks the review page makes: both accounts belong to the member, they differ, the
    /// amount is positive, and the client reference, if any, is valid (checked last, so the
    /// older refusals keep their precedence). Balances and statuses are checked only when
    /// posting.
    pub(crate) fn review_transfer(
        &self,
        member_id: &str,
        fields: TransferFields<'_>,
    ) -> Result<ReviewedTransfer, TransferRefusal> {
        let TransferFields {
            from,
            to,
            amount,
            client_reference,
        } = fields;
        let Lookup::Found(member) = self.lookup(member_id) else {
            return Err(TransferRefusal::UnknownAccount);
        };
        let find = |number: &str| {
            member
                .accounts
                .iter()
                .find(|account| account.number == number)
                .cloned()
                .ok_or(TransferRefusal::UnknownAccount)
        };
        let (from, to) = (find(from)?, find(to)?);
        if from.number == to.number {
            return Err(TransferRefusal::SameAccount);
        }
        let amount: Money = amount.parse().map_err(|_| TransferRefusal::InvalidAmount)?;
        if amount <= Money::default() {
            return Err(TransferRefusal::InvalidAmount);
        }
        let client_reference = match client_reference.trim() {
            "" => None,
            typed => Some(
                typed
                    .parse::<ClientReference>()
                    .map_err(|_| TransferRefusal::InvalidClientReference)?,
            ),
        };
        Ok(ReviewedTransfer {
            from,
            to,
            amount,
            client_reference,
        })
    }

    /// Posts a transfer: every call that passes the checks moves the money again. The client
    /// reference is stored, never used to deduplicate, so a double submit is visible in the
    /// balances whether or not it carries the same reference.
    pub(crate) fn post_transfer(
        &mut self,
        member_id: &str,
        fields: TransferFields<'_>,
    ) -> Result<TransferRecord, TransferRefusal> {
        let reviewed = self.review_transfer(member_id, fields)?;
        if reviewed.from.status == AccountStatus::Closed
            || reviewed.to.status == AccountStatus::Closed
        {
            return Err(TransferRefusal::AccountClosed);
        }
        let debited = reviewed
            .from
            .balance
            .checked_sub(reviewed.amount)
            .filter(|balance| *balance >= Money::default())
            .ok_or(TransferRefusal::InsufficientFunds)?;
        let credited = reviewed
            .to
            .balance
            .checked_add(reviewed.amount)
            .ok_or(TransferRefusal::InvalidAmount)?;
        for (number, balance) in [
            (&reviewed.from.number, debited),
            (&reviewed.to.number, credited),
        ] {
            if let Ok(account) = self.account_mut(number) {
                account.balance = balance;
            }
        }
        let record = TransferRecord {
            confirmation: format!("TF-{:06}", self.transfers.len() + 1),
            member_id: member_id.to_owned(),
            from_account: reviewed.from.number,
            to_account: reviewed.to.number,
            amount: reviewed.amount,
            client_reference: reviewed.client_reference,
        };
        self.transfers.push(record.clone());
        Ok(record)
    }

    /// The member's [`RECENT_TRANSFERS`] most recent transfers, newest first.
    pub(crate) fn recent_transfers(&self, member_id: &str) -> Vec<TransferRecord> {
        self.transfers
            .iter()
            .rev()
            .filter(|record| record.member_id == member_id)
            .take(RECENT_TRANSFERS)
            .cloned()
            .collect()
    }

    /// Every member's transfers whose client reference is exactly `client_reference`, oldest
    /// first.
    pub(crate) fn transfers_with_client_reference(
        &self,
        client_reference: &str,
    ) -> Vec<TransferRecord> {
        self.transfers
            .iter()
            .filter(|record| {
                record
                    .client_reference
                    .as_ref()
                    .is_some_and(|reference| reference.as_str() == client_reference)
            })
            .cloned()
            .collect()
    }

    fn account(&self, number: &str) -> Option<&Account> {
        self.members
            .iter()
            .flat_map(|member| &member.accounts)
            .find(|account| account.number == number)
    }

    fn account_mut(&mut self, number: &str) -> Result<&mut Account, FixtureError> {
        self.members
            .iter_mut()
            .flat_map(|member| &mut member.accounts)
            .find(|account| account.number == number)
            .ok_or_else(|| FixtureError::UnknownAccount {
                account: number.to_owned(),
            })
    }

    fn view(&self, variant: Variant) -> StateView {
        StateView {
            variant,
            armed: self
                .faults
                .snapshot()
                .into_iter()
                .map(|(fault, count)| (fault.name().to_owned(), count.to_wire()))
                .collect(),
            balances: self
                .members
                .iter()
                .flat_map(|member| &member.accounts)
                .map(|account| (account.number.clone(), account.balance))
                .collect(),
            transfers: self.transfers.clone(),
            sessions: self.sessions.len(),
            decoy_hits: self.decoy_hits,
        }
    }
}

/// How many of `transfers` carry each client reference.
pub(crate) fn client_reference_counts(transfers: &[TransferRecord]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for reference in transfers
        .iter()
        .filter_map(|record| record.client_reference.as_ref())
    {
        *counts.entry(reference.as_str().to_owned()).or_insert(0) += 1;
    }
    counts
}

/// The seeded members, as of [`AS_OF`]. The search page's training table lists these seeded
/// values, never the live ones.
pub(crate) fn seeded_members() -> Vec<Member> {
    use AccountStatus::{Active, Closed};
    use AccountType::{Checking, Savings};
    let member =
        |id: &str, name: &str, accounts: &[(&str, AccountType, i64, AccountStatus)]| Member {
            id: id.to_owned(),
            name: name.to_owned(),
            accounts: accounts
                .iter()
                .map(|&(number, account_type, cents, status)| Account {
                    number: number.to_owned(),
                    member_id: id.to_owned(),
                    account_type,
                    balance: Money::from_cents(cents),
                    status,
                })
                .collect(),
        };
    vec![
        member(
            "12345",
            "Ada Lovelace",
            &[
                ("S-12345-01", Savings, 421_055, Active),
                ("C-12345-02", Checking, 81_230, Active),
            ],
        ),
        member(
            "67890",
            "Grace Hopper",
            &[("S-67890-01", Savings, 1_873_000, Active)],
        ),
        member(
            "24680",
            "Alan Turing",
            &[("S-24680-01", Savings, 0, Closed)],
        ),
        member(
            "13579",
            "Katherine Johnson",
            &[("C-13579-01", Checking, 102_000, Active)],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_with(faults: &[(Fault, FaultCount)]) -> DeskState {
        let mut state = DeskState::seeded();
        for &(fault, count) in faults {
            state.faults.set(fault, Some(count));
        }
        state
    }

    /// Runs a sequence of requests (signed in?, GET?) and records each verdict.
    fn check_guards(
        faults: &[(Fault, FaultCount)],
        requests: &[(bool, bool)],
        expect: &[(bool, GuardVerdict)],
    ) {
        let mut state = state_with(faults);
        let token = state.sign_on();
        let decisions: Vec<(bool, GuardVerdict)> = requests
            .iter()
            .map(|&(signed_in, navigation)| {
                let session = signed_in.then_some(token.as_str());
                let decision = state.guard(session, navigation);
                (decision.slow, decision.verdict)
            })
            .collect();
        assert_eq!(decisions, expect, "faults {faults:?}");
    }

    #[test]
    fn guards_run_in_the_fixed_order_and_consume_one_per_request() {
        use FaultCount::{Indefinite, Times};
        use GuardVerdict::{NotSignedIn, Notice, Proceed, SessionTimeout, Unavailable};
        let get = (true, true);
        let post = (true, false);
        let anonymous = (false, true);
        check_guards(
            &[],
            &[get, post, anonymous],
            &[(false, Proceed), (false, Proceed), (false, NotSignedIn)],
        );
        // All four guard faults armed once: each request stops at the first one still armed.
        check_guards(
            &[
                (Fault::UndeclaredDialog, Times(1)),
                (Fault::SessionTimeout, Times(1)),
                (Fault::TransientLoad, Times(1)),
            ],
            &[get, get, get],
            &[
                (false, Unavailable),
                (false, SessionTimeout),
                (false, NotSignedIn),
            ],
        );
        // The notice interrupts only navigations, and a POST does not consume it.
        check_guards(
            &[(Fault::UndeclaredDialog, Times(1))],
            &[post, get, get],
            &[(false, Proceed), (false, Notice), (false, Proceed)],
        );
        // Not signed in stops before the notice, which stays armed.
        check_guards(
            &[(Fault::UndeclaredDialog, Times(1))],
            &[anonymous, get],
            &[(false, NotSignedIn), (false, Notice)],
        );
        // A 502 fires even for a request that is not signed in.
        check_guards(
            &[(Fault::TransientLoad, Times(1))],
            &[anonymous, anonymous],
            &[(false, Unavailable), (false, NotSignedIn)],
        );
        // Slowness is independent of the verdict.
        check_guards(
            &[
                (Fault::SlowPage, Times(2)),
                (Fault::TransientLoad, Indefinite),
            ],
            &[get, post, get],
            &[
                (true, Unavailable),
                (true, Unavailable),
                (false, Unavailable),
            ],
        );
    }

    #[test]
    fn session_timeout_ends_the_session() {
        let mut state = state_with(&[(Fault::SessionTimeout, FaultCount::Times(1))]);
        let token = state.sign_on();
        assert!(state.is_signed_in(Some(&token)));
        let decision = state.guard(Some(&token), true);
        assert_eq!(decision.verdict, GuardVerdict::SessionTimeout);
        assert!(!state.is_signed_in(Some(&token)));
    }

    #[test]
    fn session_tokens_are_sequential() {
        let mut state = DeskState::seeded();
        assert_eq!(
            [state.sign_on(), state.sign_on()],
            ["md-00000001", "md-00000002"]
        );
    }

    fn check_transfer(from: &str, to: &str, amount: &str, expect: Result<&str, TransferRefusal>) {
        let mut state = DeskState::seeded();
        let fields = TransferFields {
            from,
            to,
            amount,
            client_reference: "",
        };
        let posted = state
            .post_transfer("12345", fields)
            .map(|record| record.confirmation);
        assert_eq!(posted, expect.map(str::to_owned), "{from} -> {to} {amount}");
    }

    #[test]
    fn transfers_check_accounts_amounts_and_funds() {
        check_transfer("S-12345-01", "C-12345-02", "100.00", Ok("TF-000001"));
        check_transfer("S-12345-01", "C-12345-02", "4210.55", Ok("TF-000001"));
        check_transfer(
            "S-12345-01",
            "C-12345-02",
            "4210.56",
            Err(TransferRefusal::InsufficientFunds),
        );
        check_transfer(
            "S-12345-01",
            "S-12345-01",
            "1",
            Err(TransferRefusal::SameAccount),
        );
        check_transfer(
            "S-67890-01",
            "C-12345-02",
            "1",
            Err(TransferRefusal::UnknownAccount),
        );
        check_transfer(
            "S-12345-01",
            "C-12345-02",
            "0",
            Err(TransferRefusal::InvalidAmount),
        );
        check_transfer(
            "S-12345-01",
            "C-12345-02",
            "ten",
            Err(TransferRefusal::InvalidAmount),
        );
    }

    fn check_client_reference(
        amount: &str,
        typed: &str,
        expect: Result<Option<&str>, TransferRefusal>,
    ) {
        let state = DeskState::seeded();
        let fields = TransferFields {
            from: "S-12345-01",
            to: "C-12345-02",
            amount,
            client_reference: typed,
        };
        let reviewed = state.review_transfer("12345", fields).map(|reviewed| {
            reviewed
                .client_reference
                .map(|reference| reference.as_str().to_owned())
        });
        assert_eq!(
            reviewed,
            expect.map(|reference| reference.map(str::to_owned)),
            "{amount} {typed:?}"
        );
    }

    #[test]
    fn client_references_are_optional_trimmed_and_checked_after_the_amount() {
        let refused = Err(TransferRefusal::InvalidClientReference);
        check_client_reference("1", "", Ok(None));
        check_client_reference("1", "   ", Ok(None));
        check_client_reference("1", "idem-7f3a", Ok(Some("idem-7f3a")));
        check_client_reference("1", " idem-7f3a ", Ok(Some("idem-7f3a")));
        check_client_reference("1", &"9".repeat(40), Ok(Some(&"9".repeat(40))));
        check_client_reference("1", &"9".repeat(41), refused);
        check_client_reference("1", "idem 7f3a", refused);
        check_client_reference("1", "idem_7f3a", refused);
        check_client_reference("0", "idem_7f3a", Err(TransferRefusal::InvalidAmount));
    }

    #[test]
    fn recent_transfers_are_the_members_last_50_newest_first() {
        let mut state = DeskState::seeded();
        for index in 0..52 {
            let (from, to) = if index % 2 == 0 {
                ("S-12345-01", "C-12345-02")
            } else {
                ("C-12345-02", "S-12345-01")
            };
            let reference = format!("r{index}");
            let fields = TransferFields {
                from,
                to,
                amount: "1.00",
                client_reference: &reference,
            };
            state.post_transfer("12345", fields).expect("funds suffice");
        }
        let recent = state.recent_transfers("12345");
        assert_eq!(recent.len(), RECENT_TRANSFERS);
        assert_eq!(recent[0].confirmation, "TF-000052");
        assert_eq!(recent[49].confirmation, "TF-000003");
        assert!(state.recent_transfers("67890").is_empty());
        assert_eq!(
            state
                .transfers_with_client_reference("r7")
                .iter()
                .map(|record| record.confirmation.as_str())
                .collect::<Vec<_>>(),
            ["TF-000008"]
        );
        assert!(state.transfers_with_client_reference("R7").is_empty());
        assert_eq!(client_reference_counts(&state.transfers).len(), 52);
    }

    #[test]
    fn closed_accounts_refuse_transfers_both_ways() {
        let mut state = DeskState::seeded();
        let opened = state
            .open_subaccount("24680", "checking", "50")
            .expect("a valid deposit opens the account");
        assert_eq!(opened.reference, "SA-24680-CHE");
        assert_eq!(opened.account.number, "C-24680-02");
        for (from, to) in [("S-24680-01", "C-24680-02"), ("C-24680-02", "S-24680-01")] {
            let fields = TransferFields {
                from,
                to,
                amount: "1.00",
                client_reference: "",
            };
            assert_eq!(
                state.post_transfer("24680", fields),
                Err(TransferRefusal::AccountClosed)
            );
        }
    }

    fn check_subaccount(
        account_type: &str,
        deposit: &str,
        expect: Result<&str, SubaccountRefusal>,
    ) {
        let mut state = DeskState::seeded();
        let opened = state
            .open_subaccount("12345", account_type, deposit)
            .map(|opened| format!("{} {}", opened.reference, opened.account.number));
        assert_eq!(
            opened,
            expect.map(str::to_owned),
            "{account_type} {deposit}"
        );
    }

    #[test]
    fn sub_accounts_need_a_type_and_the_minimum_deposit() {
        check_subaccount("savings", "25.00", Ok("SA-12345-SAV S-12345-03"));
        check_subaccount("checking", "$1,000", Ok("SA-12345-CHE C-12345-03"));
        check_subaccount("certificate", "500", Ok("SA-12345-CER D-12345-03"));
        check_subaccount("savings", "24.99", Err(SubaccountRefusal::BelowMinimum));
        check_subaccount("savings", "", Err(SubaccountRefusal::InvalidDeposit));
        check_subaccount("bonds", "100", Err(SubaccountRefusal::UnknownType));
    }

    #[test]
    fn reset_restores_seeded_data_and_keeps_sessions() {
        let mut state = state_with(&[(Fault::LookalikeRow, FaultCount::Indefinite)]);
        let token = state.sign_on();
        let fields = TransferFields {
            from: "S-12345-01",
            to: "C-12345-02",
            amount: "10",
            client_reference: "idem-1",
        };
        state.post_transfer("12345", fields).expect("funds suffice");
        state.record_decoy_hit();
        state.reset();
        assert_eq!(
            state.view(Variant::FirstValley),
            StateView {
                variant: Variant::FirstValley,
                armed: BTreeMap::new(),
                balances: [
                    ("C-12345-02", 81_230),
                    ("C-13579-01", 102_000),
                    ("S-12345-01", 421_055),
                    ("S-24680-01", 0),
                    ("S-67890-01", 1_873_000),
                ]
                .into_iter()
                .map(|(number, cents)| (number.to_owned(), Money::from_cents(cents)))
                .collect(),
                transfers: Vec::new(),
                sessions: 1,
                decoy_hits: 0,
            }
        );
        assert!(state.is_signed_in(Some(&token)));
    }
}
