//! The HTTP surface: routes, the guard layer in front of every protected page, sessions,
//! the JSON read API and the unlinked control surface. Handlers hold the state lock only
//! while reading or changing state, never across an await.

use std::collections::HashMap;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::header::{AUTHORIZATION, COOKIE, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{any, delete, get, post};
use axum::{Form, Json};
use serde_json::json;

use crate::fault::RenderedPage;
use crate::pages::{self, Notice, TransferSearch};
use crate::state::{DeskState, GuardVerdict, Lookup, Member, TransferFields, TransferRecord};
use crate::variant::Skin;
use crate::{Fault, FaultCount, FixtureHandle, OPERATOR_ID, OPERATOR_PASSWORD};

/// The session cookie's name.
pub(crate) const SESSION_COOKIE: &str = "md_session";

/// The bearer token the JSON API accepts in place of a session cookie.
pub(crate) const API_TOKEN: &str = "md-api-token";

/// How long `slow_page` holds a response.
const SLOW_PAGE_DELAY: Duration = Duration::from_millis(1_500);

type FormFields = Form<HashMap<String, String>>;

/// Builds the whole app around a state handle.
pub(crate) fn router(handle: FixtureHandle) -> Router {
    let protected = Router::new()
        .route("/search", get(search_page).post(search_submit))
        .route("/member/{id}", get(member_detail))
        .route(
            "/member/{id}/new-subaccount",
            get(subaccount_page).post(subaccount_submit),
        )
        .route(
            "/member/{id}/transfer",
            get(transfer_page).post(transfer_review),
        )
        .route("/member/{id}/transfer/confirm", post(transfer_confirm))
        .route("/transfers/lookup", get(transfer_lookup))
        .route("/signature", get(crate::signature::lookup_page))
        .route(
            "/signature/card",
            get(crate::signature::card_page).post(crate::signature::capture),
        )
        .route_layer(middleware::from_fn_with_state(handle.clone(), guard));
    Router::new()
        .route("/", get(frameset))
        .route("/nav", get(nav))
        .route("/login", get(login_page).post(login_submit))
        .route("/logout", get(logout))
        .route("/reports", get(reports))
        .route("/admin", get(administration))
        .route(pages::DECOY_PATH, any(decoy))
        .route("/api/members/{id}", get(api_member))
        .route("/api/members/{id}/notes", get(api_notes).post(api_add_note))
        .route("/api/members/{id}/notes/{note_id}", delete(api_delete_note))
        .route("/_control/arm", post(control_arm))
        .route("/_control/reset", post(control_reset))
        .route("/_control/state", get(control_state))
        .route("/_control/transfers", get(control_transfers))
        .merge(protected)
        .fallback(not_found)
        .with_state(handle)
}

// ---- the guard layer ----

/// Runs the guards of every protected request, in the fixed order 502, timeout,
/// not-signed-in, dialog, before the handler can have any effect.
async fn guard(State(handle): State<FixtureHandle>, request: Request, next: Next) -> Response {
    let session = session_token(request.headers());
    let navigation = request.method() == Method::GET;
    let decision = handle.with(|state| state.guard(session.as_deref(), navigation));
    if decision.slow {
        tokio::time::sleep(SLOW_PAGE_DELAY).await;
    }
    let skin = handle.variant().skin();
    match decision.verdict {
        GuardVerdict::Unavailable => {
            (StatusCode::BAD_GATEWAY, Html(pages::unavailable(skin))).into_response()
        }
        GuardVerdict::SessionTimeout => {
            ([(SET_COOKIE, clear_cookie())], Redirect::to("/login")).into_response()
        }
        GuardVerdict::NotSignedIn => Redirect::to("/login").into_response(),
        GuardVerdict::Notice => {
            let continue_to = request
                .uri()
                .path_and_query()
                .map_or("/search", |path| path.as_str());
            Html(pages::system_notice(skin, continue_to)).into_response()
        }
        GuardVerdict::Proceed => next.run(request).await,
    }
}

// ---- shell and sign-on ----

async fn frameset(State(handle): State<FixtureHandle>, headers: HeaderMap) -> Html<String> {
    let token = session_token(&headers);
    let signed_in = handle.with(|state| state.is_signed_in(token.as_deref()));
    Html(pages::frameset(handle.variant().skin(), signed_in))
}

async fn nav(State(handle): State<FixtureHandle>) -> Html<String> {
    Html(pages::nav(handle.variant().skin()))
}

async fn login_page(State(handle): State<FixtureHandle>) -> Html<String> {
    Html(pages::login(handle.variant().skin(), "", None))
}

async fn login_submit(State(handle): State<FixtureHandle>, Form(form): FormFields) -> Response {
    let skin = handle.variant().skin();
    let operator_id = field(&form, skin.field_operator_id);
    let password = field(&form, skin.field_password);
    if operator_id.trim() != OPERATOR_ID || password != OPERATOR_PASSWORD {
        return Html(pages::login(
            skin,
            operator_id,
            Some(pages::BAD_CREDENTIALS),
        ))
        .into_response();
    }
    let token = handle.with(|state| state.sign_on());
    let cookie = format!("{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax");
    (
        [(SET_COOKIE, header_value(&cookie))],
        Redirect::to("/search"),
    )
        .into_response()
}

async fn logout(State(handle): State<FixtureHandle>, headers: HeaderMap) -> Response {
    if let Some(token) = session_token(&headers) {
        handle.with(|state| state.sign_off(&token));
    }
    ([(SET_COOKIE, clear_cookie())], Redirect::to("/")).into_response()
}

async fn reports(State(handle): State<FixtureHandle>) -> Html<String> {
    Html(pages::not_available(handle.variant().skin(), "Reports"))
}

async fn administration(State(handle): State<FixtureHandle>) -> Html<String> {
    Html(pages::not_available(
        handle.variant().skin(),
        "Administration",
    ))
}

/// Where every `decoy_control` control leads, whatever the method: counts the hit and changes
/// nothing else. Never faulted and open without a session, so a decoy used at any point is
/// counted.
async fn decoy(State(handle): State<FixtureHandle>) -> Html<String> {
    handle.with(DeskState::record_decoy_hit);
    Html(pages::decoy(handle.variant().skin()))
}

async fn not_found(State(handle): State<FixtureHandle>) -> Response {
    (
        StatusCode::NOT_FOUND,
        Html(pages::not_available(
            handle.variant().skin(),
            "Page Not Found",
        )),
    )
        .into_response()
}

// ---- search and member detail ----

async fn search_page(State(handle): State<FixtureHandle>) -> Html<String> {
    let distortions = handle.with(|state| state.faults.take_for(RenderedPage::Search));
    Html(pages::search(
        handle.variant().skin(),
        "",
        None,
        &distortions,
    ))
}

async fn search_submit(State(handle): State<FixtureHandle>, Form(form): FormFields) -> Response {
    let skin = handle.variant().skin();
    let typed = field(&form, skin.field_member_number);
    let member_id = typed.trim();
    let found = if member_id.is_empty() {
        Err(Notice::Error(pages::ENTER_MEMBER_NUMBER))
    } else {
        handle.with(|state| match state.lookup(member_id) {
            Lookup::Found(member) => Ok(member.id.clone()),
            Lookup::Restricted => Err(Notice::Error(pages::NOT_AUTHORIZED)),
            Lookup::NotFound => Err(Notice::Info(pages::NO_RECORDS)),
        })
    };
    match found {
        Ok(id) => Redirect::to(&format!("/member/{id}")).into_response(),
        Err(notice) => {
            let distortions = handle.with(|state| state.faults.take_for(RenderedPage::Search));
            Html(pages::search(skin, typed, Some(notice), &distortions)).into_response()
        }
    }
}

async fn member_detail(State(handle): State<FixtureHandle>, Path(id): Path<String>) -> Response {
    let skin = handle.variant().skin();
    with_member(&handle, &id, |state, member| {
        let distortions = state.faults.take_for(RenderedPage::MemberDetail);
        let recent_transfers = state.recent_transfers(&member.id);
        pages::member_detail(skin, member, &recent_transfers, &distortions)
    })
}

// ---- sub-accounts ----

async fn subaccount_page(State(handle): State<FixtureHandle>, Path(id): Path<String>) -> Response {
    let skin = handle.variant().skin();
    with_member(&handle, &id, |state, member| {
        let distortions = state.faults.take_for(RenderedPage::SubaccountForm);
        pages::subaccount_form(skin, member, "", "", None, &distortions)
    })
}

async fn subaccount_submit(
    State(handle): State<FixtureHandle>,
    Path(id): Path<String>,
    Form(form): FormFields,
) -> Response {
    let skin = handle.variant().skin();
    let account_type = field(&form, skin.field_account_type);
    let deposit = field(&form, skin.field_initial_deposit);
    with_member(&handle, &id, |state, _| {
        let opened = state.open_subaccount(&id, account_type, deposit);
        let member = current_member(state, &id);
        match opened {
            Ok(opened) => {
                let distortions = state.faults.take_for(RenderedPage::SubaccountDone);
                pages::subaccount_done(skin, &member, &opened, &distortions)
            }
            Err(refusal) => {
                let distortions = state.faults.take_for(RenderedPage::SubaccountForm);
                pages::subaccount_form(
                    skin,
                    &member,
                    account_type,
                    deposit,
                    Some(refusal.message()),
                    &distortions,
                )
            }
        }
    })
}

// ---- transfers ----

async fn transfer_page(State(handle): State<FixtureHandle>, Path(id): Path<String>) -> Response {
    let skin = handle.variant().skin();
    with_member(&handle, &id, |state, member| {
        let distortions = state.faults.take_for(RenderedPage::TransferForm);
        pages::transfer_form(skin, member, TransferFields::default(), None, &distortions)
    })
}

async fn transfer_review(
    State(handle): State<FixtureHandle>,
    Path(id): Path<String>,
    Form(form): FormFields,
) -> Response {
    let skin = handle.variant().skin();
    let fields = transfer_fields(skin, &form);
    with_member(&handle, &id, |state, member| {
        match state.review_transfer(&id, fields) {
            Ok(reviewed) => {
                let distortions = state.faults.take_for(RenderedPage::TransferReview);
                pages::transfer_review(skin, member, &reviewed, &distortions)
            }
            Err(refusal) => {
                let distortions = state.faults.take_for(RenderedPage::TransferForm);
                let error = Some(refusal.message());
                pages::transfer_form(skin, member, fields, error, &distortions)
            }
        }
    })
}

async fn transfer_confirm(
    State(handle): State<FixtureHandle>,
    Path(id): Path<String>,
    Form(form): FormFields,
) -> Response {
    let skin = handle.variant().skin();
    let fields = transfer_fields(skin, &form);
    with_member(&handle, &id, |state, _| {
        let posted = state.post_transfer(&id, fields);
        let member = current_member(state, &id);
        match posted {
            Ok(record) => {
                let distortions = state.faults.take_for(RenderedPage::TransferDone);
                pages::transfer_done(skin, &member, &record, &distortions)
            }
            Err(refusal) => pages::transfer_failed(skin, &member, refusal),
        }
    })
}

/// `GET /transfers/lookup[?{client reference field}=REF]`: every member's transfers carrying
/// exactly `REF` (surrounding spaces ignored), oldest first.
async fn transfer_lookup(
    State(handle): State<FixtureHandle>,
    Query(query): Query<HashMap<String, String>>,
) -> Html<String> {
    let skin = handle.variant().skin();
    let distortions = handle.with(|state| state.faults.take_for(RenderedPage::TransferLookup));
    let page = match query.get(skin.field_client_reference) {
        None => pages::transfer_lookup(skin, "", TransferSearch::NotAsked, &distortions),
        Some(typed) if typed.trim().is_empty() => {
            pages::transfer_lookup(skin, typed, TransferSearch::Blank, &distortions)
        }
        Some(typed) => {
            let found = handle.transfers_with_client_reference(typed.trim());
            let search = TransferSearch::Found(&found);
            pages::transfer_lookup(skin, typed, search, &distortions)
        }
    };
    Html(page)
}

// ---- JSON read API ----

/// `GET /api/members/{id}`: the member and their accounts, for a signed-in session or the
/// bearer token. Faults never apply here.
async fn api_member(
    State(handle): State<FixtureHandle>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !api_authorized(&handle, &headers) {
        return api_error(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    handle.with(|state| match state.lookup(&id) {
        Lookup::Found(member) => Json(json!({
            "member_id": member.id,
            "name": member.name,
            "accounts": member.accounts.iter().map(|account| json!({
                "account": account.number,
                "type": account.account_type.label(),
                "balance": account.balance,
                "status": account.status.label(),
            })).collect::<Vec<_>>(),
        }))
        .into_response(),
        Lookup::Restricted => api_error(StatusCode::FORBIDDEN, "permission_denied"),
        Lookup::NotFound => api_error(StatusCode::NOT_FOUND, "member_not_found"),
    })
}

/// `GET /api/members/{id}/notes` (bearer or session): `{member_id, notes: [{note_id, text}]}`.
async fn api_notes(
    State(handle): State<FixtureHandle>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !api_authorized(&handle, &headers) {
        return api_error(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    handle.with(|state| match state.lookup(&id) {
        Lookup::Found(_) => Json(json!({
            "member_id": id,
            "notes": state.notes(&id).iter().map(|note| json!({
                "note_id": note.note_id,
                "text": note.text,
            })).collect::<Vec<_>>(),
        }))
        .into_response(),
        Lookup::Restricted => api_error(StatusCode::FORBIDDEN, "permission_denied"),
        Lookup::NotFound => api_error(StatusCode::NOT_FOUND, "member_not_found"),
    })
}

/// `POST /api/members/{id}/notes` with `{"text": "…"}` (1 to 500 characters): `201 Created`
/// with `{note_id, member_id, text}`; 400 `invalid_note`.
async fn api_add_note(
    State(handle): State<FixtureHandle>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct NewNote {
        text: String,
    }
    if !api_authorized(&handle, &headers) {
        return api_error(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    let note = match serde_json::from_slice::<NewNote>(&body) {
        Ok(note) if !note.text.trim().is_empty() && note.text.chars().count() <= 500 => note,
        _ => return api_error(StatusCode::BAD_REQUEST, "invalid_note"),
    };
    handle.with(|state| match state.lookup(&id) {
        Lookup::Found(_) => {
            let note = state.add_note(&id, &note.text);
            (
                StatusCode::CREATED,
                Json(json!({
                    "note_id": note.note_id,
                    "member_id": note.member_id,
                    "text": note.text,
                })),
            )
                .into_response()
        }
        Lookup::Restricted => api_error(StatusCode::FORBIDDEN, "permission_denied"),
        Lookup::NotFound => api_error(StatusCode::NOT_FOUND, "member_not_found"),
    })
}

/// `DELETE /api/members/{id}/notes/{note_id}`: `204 No Content`, or 404 `note_not_found`.
async fn api_delete_note(
    State(handle): State<FixtureHandle>,
    Path((id, note_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if !api_authorized(&handle, &headers) {
        return api_error(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    handle.with(|state| {
        if state.delete_note(&id, &note_id) {
            StatusCode::NO_CONTENT.into_response()
        } else {
            api_error(StatusCode::NOT_FOUND, "note_not_found")
        }
    })
}

/// The bearer token or a signed-in session.
fn api_authorized(handle: &FixtureHandle, headers: &HeaderMap) -> bool {
    let bearer = headers
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    let token = session_token(headers);
    bearer == Some(API_TOKEN) || handle.with(|state| state.is_signed_in(token.as_deref()))
}

// ---- control surface (linked from nowhere) ----

/// `POST /_control/arm` with `{"fault": name, "count": n}`; `count` defaults to 1, `-1` is
/// indefinite and `0` disarms. Answers with the new state.
async fn control_arm(State(handle): State<FixtureHandle>, body: Bytes) -> Response {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ArmRequest {
        fault: String,
        #[serde(default = "one")]
        count: i64,
    }
    fn one() -> i64 {
        1
    }
    let request: ArmRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(error) => {
            return api_error(
                StatusCode::BAD_REQUEST,
                &format!("invalid request: {error}"),
            );
        }
    };
    let armed = request
        .fault
        .parse::<Fault>()
        .and_then(|fault| FaultCount::from_wire(request.count).map(|count| (fault, count)));
    match armed {
        Ok((fault, Some(count))) => handle.arm(fault, count),
        Ok((fault, None)) => handle.disarm(fault),
        Err(error) => return api_error(StatusCode::BAD_REQUEST, &error.to_string()),
    }
    Json(handle.view()).into_response()
}

async fn control_reset(State(handle): State<FixtureHandle>) -> Response {
    handle.reset();
    Json(handle.view()).into_response()
}

async fn control_state(State(handle): State<FixtureHandle>) -> Response {
    Json(handle.view()).into_response()
}

/// `GET /_control/transfers[?client_reference=REF]`: the posted transfers (only those carrying
/// exactly `REF` when given), oldest first, with their count and the count per client reference,
/// so a harness can assert that no reference was posted twice.
async fn control_transfers(
    State(handle): State<FixtureHandle>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let transfers: Vec<TransferRecord> = match query.get("client_reference") {
        Some(reference) => handle.transfers_with_client_reference(reference),
        None => handle.transfers(),
    };
    Json(json!({
        "count": transfers.len(),
        "by_client_reference": crate::state::client_reference_counts(&transfers),
        "transfers": transfers,
    }))
    .into_response()
}

// ---- helpers ----

/// Renders a member-scoped page, or the search page with "No records found" / not authorized
/// when the member in the path cannot be shown. The closure runs under the state lock.
fn with_member(
    handle: &FixtureHandle,
    member_id: &str,
    render: impl FnOnce(&mut DeskState, &Member) -> String,
) -> Response {
    let skin = handle.variant().skin();
    let page = handle.with(|state| {
        let notice = match state.lookup(member_id) {
            Lookup::Found(member) => {
                let member = member.clone();
                return render(state, &member);
            }
            Lookup::Restricted => Notice::Error(pages::NOT_AUTHORIZED),
            Lookup::NotFound => Notice::Info(pages::NO_RECORDS),
        };
        let distortions = state.faults.take_for(RenderedPage::Search);
        pages::search(skin, member_id, Some(notice), &distortions)
    });
    Html(page).into_response()
}

/// The member as it is now, after a change made under the same lock.
fn current_member(state: &DeskState, member_id: &str) -> Member {
    match state.lookup(member_id) {
        Lookup::Found(member) => member.clone(),
        Lookup::Restricted | Lookup::NotFound => Member {
            id: member_id.to_owned(),
            name: String::new(),
            accounts: Vec::new(),
        },
    }
}

fn transfer_fields<'a>(skin: &Skin, form: &'a HashMap<String, String>) -> TransferFields<'a> {
    TransferFields {
        from: field(form, skin.field_from_account),
        to: field(form, skin.field_to_account),
        amount: field(form, skin.field_amount),
        client_reference: field(form, skin.field_client_reference),
    }
}

fn field<'a>(form: &'a HashMap<String, String>, name: &str) -> &'a str {
    form.get(name).map_or("", String::as_str)
}

/// The `md_session` cookie's value, if the request carries one.
fn session_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.to_owned())
}

fn clear_cookie() -> HeaderValue {
    header_value(&format!(
        "{SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax"
    ))
}

fn header_value(text: &str) -> HeaderValue {
    // Cookie values here are built from constants and `md-` plus digits, always valid.
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

fn api_error(status: StatusCode, error: &str) -> Response {
    (status, Json(json!({ "error": error }))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_cookie(cookies: &[&str], expect: Option<&str>) {
        let mut headers = HeaderMap::new();
        for cookie in cookies {
            headers.append(COOKIE, HeaderValue::from_str(cookie).expect("valid header"));
        }
        assert_eq!(session_token(&headers).as_deref(), expect, "{cookies:?}");
    }

    #[test]
    fn reads_the_session_cookie() {
        check_cookie(&[], None);
        check_cookie(&["md_session=md-00000001"], Some("md-00000001"));
        check_cookie(&["a=1; md_session=md-2; b=3"], Some("md-2"));
        check_cookie(&["a=1", "md_session=md-3"], Some("md-3"));
        check_cookie(&["xmd_session=md-4"], None);
        check_cookie(&["md_session="], Some(""));
    }
}
