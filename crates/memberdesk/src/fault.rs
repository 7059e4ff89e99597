//! Injectable faults: the closed set of ways MemberDesk misbehaves on request, and the armed
//! counters that are consumed one per eligible request.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use crate::FixtureError;

/// A fault the control surface can arm. Which requests are eligible for which fault is
/// described in `CONTRACT.md`; guards consume faults in the fixed order 502, timeout,
/// not-signed-in, dialog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// A 502 "Service Temporarily Unavailable" page instead of the requested one.
    TransientLoad,
    /// The session ends: 303 to `/login` and the cookie is deleted.
    SessionTimeout,
    /// A "System Notice" interstitial with a "Continue" link, before a page.
    UndeclaredDialog,
    /// The sub-account submit is refused as below the minimum deposit.
    ValidationError,
    /// The response is delayed by 1.5 s.
    SlowPage,
    /// The member detail grid gains a near-duplicate row before the real one.
    LookalikeRow,
    /// The member detail grid gains a row for the same member, before the first account, with
    /// a near-identical account number and a balance one cent higher.
    LookalikeAccount,
    /// Help texts and success-page headings quote the app's own refusal messages verbatim.
    QuotedRefusals,
    /// Search, member detail and transfer review gain a same-named control under a heading of
    /// its own, leading to the inert `/decoy` page.
    DecoyControl,
    /// The member detail summary gains a second "Savings Balance" row, with a different amount,
    /// before the real one.
    DuplicateSummaryRow,
}

impl Fault {
    /// Every fault, in declaration order.
    pub const ALL: [Fault; 10] = [
        Fault::TransientLoad,
        Fault::SessionTimeout,
        Fault::UndeclaredDialog,
        Fault::ValidationError,
        Fault::SlowPage,
        Fault::LookalikeRow,
        Fault::LookalikeAccount,
        Fault::QuotedRefusals,
        Fault::DecoyControl,
        Fault::DuplicateSummaryRow,
    ];

    const VALID_NAMES: &'static str = "transient_load, session_timeout, undeclared_dialog, \
                                       validation_error, slow_page, lookalike_row, \
                                       lookalike_account, quoted_refusals, decoy_control, \
                                       duplicate_summary_row";

    /// The fault's name on the control surface and the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Fault::TransientLoad => "transient_load",
            Fault::SessionTimeout => "session_timeout",
            Fault::UndeclaredDialog => "undeclared_dialog",
            Fault::ValidationError => "validation_error",
            Fault::SlowPage => "slow_page",
            Fault::LookalikeRow => "lookalike_row",
            Fault::LookalikeAccount => "lookalike_account",
            Fault::QuotedRefusals => "quoted_refusals",
            Fault::DecoyControl => "decoy_control",
            Fault::DuplicateSummaryRow => "duplicate_summary_row",
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl FromStr for Fault {
    type Err = FixtureError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Fault::ALL
            .into_iter()
            .find(|fault| fault.name() == text)
            .ok_or_else(|| FixtureError::UnknownFault {
                given: text.to_owned(),
                valid: Fault::VALID_NAMES,
            })
    }
}

/// How many more eligible requests an armed fault fires on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultCount {
    /// Fires on this many more eligible requests (at least one).
    Times(u32),
    /// Fires on every eligible request until reset or disarmed.
    Indefinite,
}

impl FaultCount {
    /// Reads the control surface's integer: `-1` is indefinite, `0` disarms (`None`), a
    /// positive number is a count. Anything else is refused.
    pub fn from_wire(count: i64) -> Result<Option<FaultCount>, FixtureError> {
        match count {
            -1 => Ok(Some(FaultCount::Indefinite)),
            0 => Ok(None),
            positive => u32::try_from(positive)
                .map(|times| Some(FaultCount::Times(times)))
                .map_err(|_| FixtureError::InvalidFaultCount { count }),
        }
    }

    /// The control surface's integer: `-1` for indefinite.
    pub fn to_wire(self) -> i64 {
        match self {
            FaultCount::Times(times) => i64::from(times),
            FaultCount::Indefinite => -1,
        }
    }
}

/// A page that display faults can distort. Display faults change only what a page shows, never
/// the state, so each is consumed by rendering a page it is eligible for, one firing per render.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RenderedPage {
    /// The search page, however it is reached (including a member route's unknown or
    /// restricted member).
    Search,
    MemberDetail,
    TransferForm,
    TransferReview,
    TransferDone,
    SubaccountForm,
    SubaccountDone,
    TransferLookup,
}

impl RenderedPage {
    /// The display faults this page is eligible for.
    const fn eligible(self) -> &'static [Fault] {
        match self {
            RenderedPage::Search => &[Fault::QuotedRefusals, Fault::DecoyControl],
            RenderedPage::MemberDetail => &[
                Fault::LookalikeRow,
                Fault::LookalikeAccount,
                Fault::DuplicateSummaryRow,
                Fault::DecoyControl,
            ],
            RenderedPage::TransferReview => &[Fault::DecoyControl],
            RenderedPage::TransferForm
            | RenderedPage::TransferDone
            | RenderedPage::SubaccountForm
            | RenderedPage::SubaccountDone
            | RenderedPage::TransferLookup => &[Fault::QuotedRefusals],
        }
    }
}

/// The display faults that fired for one render of a page. Pages read this instead of the
/// armed faults, so a render consumes each fault at most once, before any markup is built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Distortions {
    fired: BTreeSet<Fault>,
}

impl Distortions {
    /// Whether the fault fired for this render.
    pub(crate) fn shows(&self, fault: Fault) -> bool {
        self.fired.contains(&fault)
    }
}

/// The armed faults and their remaining counts.
#[derive(Clone, Debug, Default)]
pub(crate) struct ArmedFaults {
    remaining: BTreeMap<Fault, FaultCount>,
}

impl ArmedFaults {
    /// Arms a fault, replacing any count it had; `None` disarms it.
    pub(crate) fn set(&mut self, fault: Fault, count: Option<FaultCount>) {
        match count {
            Some(FaultCount::Times(0)) | None => {
                self.remaining.remove(&fault);
            }
            Some(count) => {
                self.remaining.insert(fault, count);
            }
        }
    }

    /// Consumes one firing of the fault: `true` when it was armed (and so fires now).
    pub(crate) fn take(&mut self, fault: Fault) -> bool {
        match self.remaining.get(&fault).copied() {
            None => false,
            Some(FaultCount::Indefinite) => true,
            Some(FaultCount::Times(times)) => {
                self.set(fault, Some(FaultCount::Times(times.saturating_sub(1))));
                true
            }
        }
    }

    /// Consumes one firing of every armed fault the page is eligible for.
    pub(crate) fn take_for(&mut self, page: RenderedPage) -> Distortions {
        Distortions {
            fired: page
                .eligible()
                .iter()
                .copied()
                .filter(|&fault| self.take(fault))
                .collect(),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.remaining.clear();
    }

    pub(crate) fn snapshot(&self) -> BTreeMap<Fault, FaultCount> {
        self.remaining.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_fault_name_and_refuses_others() {
        for fault in Fault::ALL {
            assert_eq!(fault.name().parse::<Fault>().ok(), Some(fault));
        }
        let error = "flaky".parse::<Fault>().expect_err("not a fault");
        assert_eq!(
            error.to_string(),
            "unknown fault `flaky` (valid faults: transient_load, session_timeout, \
             undeclared_dialog, validation_error, slow_page, lookalike_row, lookalike_account, \
             quoted_refusals, decoy_control, duplicate_summary_row)"
        );
    }

    fn check_wire(count: i64, expect: Result<Option<FaultCount>, &str>) {
        let parsed = FaultCount::from_wire(count).map_err(|error| error.to_string());
        assert_eq!(parsed, expect.map_err(str::to_owned), "count {count}");
    }

    #[test]
    fn reads_wire_counts() {
        check_wire(-1, Ok(Some(FaultCount::Indefinite)));
        check_wire(0, Ok(None));
        check_wire(3, Ok(Some(FaultCount::Times(3))));
        check_wire(
            -2,
            Err("invalid fault count -2 (use -1 for indefinite, 0 to disarm, or a positive count)"),
        );
        check_wire(
            i64::from(u32::MAX) + 1,
            Err(
                "invalid fault count 4294967296 (use -1 for indefinite, 0 to disarm, or a positive count)",
            ),
        );
        assert_eq!(FaultCount::Indefinite.to_wire(), -1);
        assert_eq!(FaultCount::Times(2).to_wire(), 2);
    }

    #[test]
    fn counted_faults_are_consumed_and_indefinite_ones_are_not() {
        let mut armed = ArmedFaults::default();
        armed.set(Fault::TransientLoad, Some(FaultCount::Times(2)));
        armed.set(Fault::SlowPage, Some(FaultCount::Indefinite));
        let fired: Vec<(bool, bool, bool)> = (0..3)
            .map(|_| {
                (
                    armed.take(Fault::TransientLoad),
                    armed.take(Fault::SlowPage),
                    armed.take(Fault::LookalikeRow),
                )
            })
            .collect();
        assert_eq!(
            fired,
            [
                (true, true, false),
                (true, true, false),
                (false, true, false)
            ]
        );
        assert_eq!(
            armed.snapshot().into_iter().collect::<Vec<_>>(),
            [(Fault::SlowPage, FaultCount::Indefinite)]
        );
        armed.set(Fault::SlowPage, None);
        assert!(armed.snapshot().is_empty());
    }

    #[test]
    fn a_render_consumes_only_the_faults_its_page_is_eligible_for() {
        let mut armed = ArmedFaults::default();
        for fault in [
            Fault::QuotedRefusals,
            Fault::DecoyControl,
            Fault::LookalikeAccount,
            Fault::ValidationError,
        ] {
            armed.set(fault, Some(FaultCount::Times(1)));
        }
        let review = armed.take_for(RenderedPage::TransferReview);
        assert!(review.shows(Fault::DecoyControl));
        assert!(!review.shows(Fault::QuotedRefusals));
        let done = armed.take_for(RenderedPage::TransferDone);
        assert!(done.shows(Fault::QuotedRefusals));
        assert_eq!(
            armed.take_for(RenderedPage::Search),
            Distortions::default(),
            "both search faults were consumed by the earlier renders"
        );
        assert!(
            armed
                .take_for(RenderedPage::MemberDetail)
                .shows(Fault::LookalikeAccount)
        );
        assert_eq!(
            armed.snapshot().into_iter().collect::<Vec<_>>(),
            [(Fault::ValidationError, FaultCount::Times(1))],
            "no page render consumes a request fault"
        );
    }

    #[test]
    fn every_fault_name_is_listed_in_the_valid_names() {
        let listed: Vec<&str> = Fault::VALID_NAMES.split(", ").collect();
        let names: Vec<&str> = Fault::ALL.iter().map(|fault| fault.name()).collect();
        assert_eq!(listed, names);
    }
}
