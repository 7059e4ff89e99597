use cua_policy::AuthorizedAction;

// A granted decision is dispatched at most once: its witness cannot be copied.
fn send_twice(authorized: AuthorizedAction) -> (AuthorizedAction, AuthorizedAction) {
    (authorized.clone(), authorized)
}

fn main() {}
