//! MemberDesk through the driver: a snapshot of every page per variant (the seam targeting and
//! compilation stand on), determinism across loads, and every action checked by the app's own
//! state.

use cua_policy::BrowserAction;
use cua_snapshot::{UiNode, UiSnapshot};
use cua_surface::SurfaceDriver;
use memberdesk::{FixtureConfig, RunningFixture, Variant};

use crate::support::{Authority, find, goto, has, in_row, launch, observe_until, render};

/// The labels that differ between the variants (from the fixture's contract).
struct Labels {
    detail: &'static str,
    account_type: &'static str,
    deposit: &'static str,
    open_account: &'static str,
    review: &'static str,
    post: &'static str,
}

fn labels(variant: Variant) -> Labels {
    match variant {
        Variant::FirstValley => Labels {
            detail: "Member Detail",
            account_type: "Account Type",
            deposit: "Initial Deposit",
            open_account: "Open Account",
            review: "Review Transfer",
            post: "Transfer Funds",
        },
        Variant::NorthgateFcu => Labels {
            detail: "Member Profile",
            account_type: "Type of Account",
            deposit: "Opening Deposit",
            open_account: "Submit Request",
            review: "Continue to Review",
            post: "Post Transfer",
        },
    }
}

struct Walk {
    fixture: RunningFixture,
    surface: cua_chromium::ChromiumSurface,
    authority: Authority,
}

impl Walk {
    async fn start(variant: Variant) -> Self {
        let fixture = memberdesk::serve(FixtureConfig::loopback(variant))
            .await
            .expect("fixture serves");
        let entry = fixture.addr().to_string();
        let surface = launch(std::slice::from_ref(&entry)).await;
        Self {
            fixture,
            surface,
            authority: Authority::new(&[entry]),
        }
    }

    /// The page's render with the fixture's port replaced, for a stable snapshot.
    fn render(&self, snapshot: &UiSnapshot) -> String {
        render(snapshot).replace(&self.fixture.addr().to_string(), "FIXTURE")
    }

    async fn act(
        &self,
        action: BrowserAction,
        target: Option<&UiNode>,
    ) -> cua_surface::DispatchReceipt {
        let described = format!("{action:?} on {:?}", target.map(|t| &t.id));
        self.surface
            .dispatch(self.authority.allow(action, target))
            .await
            .unwrap_or_else(|error| panic!("{described}: {error}"))
    }

    async fn click(&self, node: &UiNode) -> cua_surface::DispatchReceipt {
        self.act(BrowserAction::Click, Some(node)).await
    }

    async fn type_into(&self, node: &UiNode, text: &str) {
        let action = BrowserAction::Type {
            text: text.to_string(),
            clear_first: true,
        };
        self.act(action, Some(node)).await;
    }

    async fn select(&self, node: &UiNode, value: &str) {
        self.act(
            BrowserAction::Select {
                value: value.to_string(),
            },
            Some(node),
        )
        .await;
    }

    async fn page(
        &self,
        what: &str,
        predicate: impl Fn(&UiSnapshot) -> bool + Send + Sync,
    ) -> UiSnapshot {
        observe_until(&self.surface, what, predicate).await
    }

    /// From the search page to the member's detail page, pressing Enter in the field.
    async fn search(&self, member: &str, labels: &Labels) -> UiSnapshot {
        let search = self
            .page("the search page", |s| has(s, "textbox", "Member Number"))
            .await;
        let field = find(&search, "textbox", "Member Number");
        self.type_into(field, member).await;
        let typed = self.surface.observe().await.expect("observing");
        assert_eq!(
            find(&typed, "textbox", "Member Number").value.as_deref(),
            Some(member)
        );
        let receipt = self
            .act(
                BrowserAction::PressKey {
                    key: "Enter".into(),
                },
                Some(field),
            )
            .await;
        assert!(receipt.navigated, "Enter submits the search: {receipt:?}");
        assert_eq!(receipt.http_status, Some(200));
        let detail = labels.detail;
        self.page("the member detail page", move |s| {
            has(s, "heading", detail) && has(s, "link", "Transfer Funds")
        })
        .await
    }
}

async fn walk_every_page(variant: Variant) {
    let labels = labels(variant);
    let walk = Walk::start(variant).await;
    let name = variant.name();
    let base = walk.fixture.base_url();

    goto(&walk.surface, &walk.authority, &format!("{base}/")).await;
    let login = walk
        .page("the sign-on page", |s| has(s, "button", "Sign On"))
        .await;
    insta::assert_snapshot!(format!("{name}__1_login"), walk.render(&login));
    walk.type_into(
        find(&login, "textbox", "Operator ID"),
        memberdesk::OPERATOR_ID,
    )
    .await;
    walk.type_into(
        find(&login, "textbox", "Password"),
        memberdesk::OPERATOR_PASSWORD,
    )
    .await;
    let filled = walk.surface.observe().await.expect("observing");
    let password = find(&filled, "textbox", "Password")
        .value
        .clone()
        .unwrap_or_default();
    assert!(
        !password.contains(memberdesk::OPERATOR_PASSWORD),
        "a password is never observed"
    );
    assert_eq!(
        password.chars().count(),
        memberdesk::OPERATOR_PASSWORD.chars().count()
    );
    let receipt = walk.click(find(&filled, "button", "Sign On")).await;
    assert!(
        receipt.navigated && receipt.http_status == Some(200),
        "{receipt:?}"
    );

    let search = walk
        .page("the search page", |s| has(s, "textbox", "Member Number"))
        .await;
    insta::assert_snapshot!(format!("{name}__2_search"), walk.render(&search));

    let detail = walk.search("12345", &labels).await;
    insta::assert_snapshot!(format!("{name}__3_member_detail"), walk.render(&detail));

    // Determinism: the same page reached the same way again gives the same bytes.
    let nav = find(&detail, "link", "Member Search");
    walk.click(nav).await;
    let again = walk.search("12345", &labels).await;
    assert_eq!(
        again.to_json_bytes(),
        detail.to_json_bytes(),
        "{}",
        walk.render(&again)
    );

    // Open a sub-account: select by option value, type the deposit, submit.
    walk.click(find(&again, "link", "Open Sub-Account")).await;
    let account_type = labels.account_type;
    let form = walk
        .page("the sub-account form", move |s| {
            has(s, "cell", account_type)
        })
        .await;
    insta::assert_snapshot!(format!("{name}__4_sub_account"), walk.render(&form));
    walk.select(in_row(&form, labels.account_type, "combobox"), "checking")
        .await;
    walk.type_into(in_row(&form, labels.deposit, "textbox"), "50.00")
        .await;
    let filled = walk.surface.observe().await.expect("observing");
    assert_eq!(
        in_row(&filled, labels.account_type, "combobox")
            .value
            .as_deref(),
        Some("Checking")
    );
    assert_eq!(
        in_row(&filled, labels.deposit, "textbox").value.as_deref(),
        Some("50.00")
    );
    let accounts_before = walk
        .fixture
        .handle()
        .member("12345")
        .expect("a seeded member")
        .accounts
        .len();
    walk.click(find(&filled, "button", labels.open_account))
        .await;
    let done = walk
        .page("the confirmation", |s| has(s, "cell", "SA-12345-CHE"))
        .await;
    let member = walk
        .fixture
        .handle()
        .member("12345")
        .expect("a seeded member");
    assert_eq!(
        member.accounts.len(),
        accounts_before + 1,
        "the app opened the account"
    );

    // Transfer funds: select by visible label, review, confirm; the balance really moves.
    walk.click(find(&done, "link", "Return to Member")).await;
    let detail = walk
        .page("the member page", |s| has(s, "link", "Transfer Funds"))
        .await;
    walk.click(find(&detail, "link", "Transfer Funds")).await;
    let form = walk
        .page("the transfer form", |s| has(s, "cell", "From Account"))
        .await;
    insta::assert_snapshot!(format!("{name}__5_transfer"), walk.render(&form));
    walk.select(
        in_row(&form, "From Account", "combobox"),
        "S-12345-01 Savings",
    )
    .await;
    walk.select(in_row(&form, "To Account", "combobox"), "C-12345-02")
        .await;
    walk.type_into(in_row(&form, "Amount", "textbox"), "100.00")
        .await;
    let filled = walk.surface.observe().await.expect("observing");
    walk.click(find(&filled, "button", labels.review)).await;
    let post = labels.post;
    let review = walk
        .page("the review page", move |s| has(s, "button", post))
        .await;
    insta::assert_snapshot!(format!("{name}__6_review"), walk.render(&review));
    let savings = |w: &Walk| {
        w.fixture
            .handle()
            .balance("S-12345-01")
            .expect("a seeded account")
            .to_string()
    };
    let checking = |w: &Walk| {
        w.fixture
            .handle()
            .balance("C-12345-02")
            .expect("a seeded account")
            .to_string()
    };
    assert_eq!(
        (savings(&walk), checking(&walk)),
        ("$4,210.55".into(), "$812.30".into())
    );
    let receipt = walk.click(find(&review, "button", labels.post)).await;
    assert!(
        receipt.navigated && receipt.http_status == Some(200),
        "{receipt:?}"
    );
    walk.page("the transfer confirmation", |s| has(s, "cell", "TF-000001"))
        .await;
    assert_eq!(
        (savings(&walk), checking(&walk)),
        ("$4,110.55".into(), "$912.30".into())
    );
    assert_eq!(walk.fixture.handle().transfers().len(), 1);
    assert!(
        walk.surface.take_blocked_requests().is_empty(),
        "the fixture stays on its host"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_valley_pages_and_actions() {
    walk_every_page(Variant::FirstValley).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn northgate_pages_and_actions() {
    walk_every_page(Variant::NorthgateFcu).await;
}
