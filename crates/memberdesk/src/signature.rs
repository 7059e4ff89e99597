//! The signature pad: a legacy widget with no semantic handle at all. The pad is a `<canvas>`;
//! its "Sign here" box is drawn pixels, invisible to the accessibility tree, and only a click
//! inside the box captures the signature. It is the fixture's case for the visual operators: a
//! screenshot, then a click at pixel coordinates, on an explicit route.
//!
//! `GET /signature` asks for a member number; `GET /signature/card?member=N` shows the pad
//! (top-level, at fixed CSS pixel positions); `POST /signature/card` with `member` and the
//! `point` the page's script filled in records the signature and shows "Signature on file".

use std::collections::HashMap;

use axum::Form;
use axum::extract::{Query, State};
use axum::response::{Html, IntoResponse, Response};

use crate::FixtureHandle;
use crate::html::esc;
use crate::state::Lookup;

/// The pad's position in the page, in CSS pixels: top-left corner and size.
pub const PAD_ORIGIN: (u32, u32) = (0, 100);
pub const PAD_SIZE: (u32, u32) = (600, 240);
/// The drawn "Sign here" box, in pad coordinates: left, top, right, bottom (inclusive).
pub const SIGN_BOX: (u32, u32, u32, u32) = (50, 40, 550, 200);

/// Text of the page after a captured signature.
pub const SIGNATURE_ON_FILE: &str = "Signature on file";

pub(crate) async fn lookup_page() -> Html<String> {
    Html(page(
        "Signature Cards",
        "<form method=\"get\" action=\"/signature/card\">\
         <p style=\"position:absolute;left:16px;top:48px;margin:0\">Member Number \
         <input type=\"text\" name=\"member\" title=\"Member Number\" value=\"\"> \
         <input type=\"submit\" value=\"Open Card\"></p></form>",
    ))
}

pub(crate) async fn card_page(
    State(handle): State<FixtureHandle>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let member_id = query.get("member").map(String::as_str).unwrap_or_default();
    let body = handle.with(|state| match state.lookup(member_id) {
        Lookup::Found(member) => pad(&member.id, &member.name),
        Lookup::Restricted => notice("You are not authorized to view this member record."),
        Lookup::NotFound => notice("No records found"),
    });
    Html(page("Signature Card", &body)).into_response()
}

pub(crate) async fn capture(
    State(handle): State<FixtureHandle>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let member_id = form.get("member").map(String::as_str).unwrap_or_default();
    let point = form.get("point").and_then(|point| parse_point(point));
    let body = handle.with(|state| match (state.lookup(member_id), point) {
        (Lookup::Found(member), Some(_)) => {
            let (id, name) = (member.id.clone(), member.name.clone());
            let reference = state.capture_signature(&id);
            format!(
                "<p style=\"position:absolute;left:16px;top:48px;margin:0\" role=\"status\">\
                 {SIGNATURE_ON_FILE} for member {}: {}. Reference {}.</p>",
                esc(&id),
                esc(&name),
                esc(&reference)
            )
        }
        (Lookup::Found(_), None) => notice("The signature was not inside the box."),
        (Lookup::Restricted, _) => notice("You are not authorized to view this member record."),
        (Lookup::NotFound, _) => notice("No records found"),
    });
    Html(page("Signature Card", &body)).into_response()
}

/// `x,y` inside the sign box, or nothing.
fn parse_point(text: &str) -> Option<(u32, u32)> {
    let (x, y) = text.split_once(',')?;
    let (x, y) = (x.trim().parse::<u32>().ok()?, y.trim().parse::<u32>().ok()?);
    let (left, top, right, bottom) = SIGN_BOX;
    ((left..=right).contains(&x) && (top..=bottom).contains(&y)).then_some((x, y))
}

fn notice(text: &str) -> String {
    format!(
        "<p style=\"position:absolute;left:16px;top:48px;margin:0\">{}</p>",
        esc(text)
    )
}

fn pad(member_id: &str, name: &str) -> String {
    let (left, top) = PAD_ORIGIN;
    let (width, height) = PAD_SIZE;
    let (box_left, box_top, box_right, box_bottom) = SIGN_BOX;
    format!(
        "<p style=\"position:absolute;left:16px;top:48px;margin:0\">Member {id}: {name}</p>\n\
         <canvas id=\"pad\" width=\"{width}\" height=\"{height}\" \
         style=\"position:absolute;left:{left}px;top:{top}px\"></canvas>\n\
         <form id=\"sig\" method=\"post\" action=\"/signature/card\">\
         <input type=\"hidden\" name=\"member\" value=\"{id}\">\
         <input type=\"hidden\" name=\"point\" value=\"\"></form>\n\
         <script>\n\
         const pad = document.getElementById('pad');\n\
         const g = pad.getContext('2d');\n\
         g.fillStyle = '#f4f1e8'; g.fillRect(0, 0, {width}, {height});\n\
         g.strokeStyle = '#333'; g.lineWidth = 2;\n\
         g.strokeRect({box_left}, {box_top}, {box_w}, {box_h});\n\
         g.fillStyle = '#333'; g.font = '18px sans-serif'; g.fillText('Sign here', {text_x}, {text_y});\n\
         pad.addEventListener('click', (event) => {{\n\
           const x = Math.round(event.offsetX), y = Math.round(event.offsetY);\n\
           if (x < {box_left} || x > {box_right} || y < {box_top} || y > {box_bottom}) return;\n\
           const form = document.getElementById('sig');\n\
           form.point.value = x + ',' + y;\n\
           form.submit();\n\
         }});\n\
         </script>",
        id = esc(member_id),
        name = esc(name),
        box_w = box_right - box_left,
        box_h = box_bottom - box_top,
        text_x = (box_left + box_right) / 2 - 40,
        text_y = (box_top + box_bottom) / 2,
    )
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body {{ margin: 0; font-family: sans-serif; }} \
         h1 {{ position: absolute; left: 16px; top: 8px; margin: 0; font-size: 20px; }}</style>\
         </head>\n<body><h1>{title}</h1>\n{body}\n</body></html>\n",
        title = esc(title),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_point_inside_the_box_is_a_signature() {
        let check = |text: &str, expect: Option<(u32, u32)>| {
            assert_eq!(parse_point(text), expect, "{text}");
        };
        check("300,120", Some((300, 120)));
        check("50,40", Some((50, 40)));
        check("550,200", Some((550, 200)));
        check("49,120", None);
        check("300,201", None);
        check("300", None);
        check("-1,5", None);
        check("", None);
    }
}
