use cua_policy::{Authorized, BrowserAction};

// Only the policy engine makes a witness, and its fields are private: a granted click cannot
// be turned into another action under the same decision.
fn swap(granted: Authorized<BrowserAction>) -> Authorized<BrowserAction> {
    Authorized {
        action: BrowserAction::Navigate {
            url: "https://attacker.example/".to_owned(),
        },
        ..granted
    }
}

fn main() {}
