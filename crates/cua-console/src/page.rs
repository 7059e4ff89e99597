//! The console's page: static HTML, CSS and a little vanilla JavaScript. Nothing is
//! interpolated on the server; the script builds every text with `textContent`, so nothing a
//! run, a page under automation or an operator typed is ever interpreted as HTML.
//!
//! The token arrives once in the URL fragment (`#token=…`, which is never sent to a server),
//! is kept in `sessionStorage`, and is sent in the `X-Cua-Token` header (the live view's
//! WebSocket: in its subprotocol list).

/// The page.
pub(crate) const INDEX_HTML: &str = include_str!("../assets/console.html");

/// The style sheet.
pub(crate) const APP_CSS: &str = include_str!("../assets/console.css");

/// The script.
pub(crate) const APP_JS: &str = include_str!("../assets/console.js");
