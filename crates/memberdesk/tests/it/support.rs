//! A minimal HTTP/1.1 client over a raw loopback socket, sessions that carry the
//! `md_session` cookie, and a tiny HTML reader for tables and text. No redirects are followed
//! implicitly: tests assert them.

use std::net::SocketAddr;

use memberdesk::{FixtureConfig, RunningFixture, Variant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Starts a fixture on 127.0.0.1:0.
pub(crate) async fn start(variant: Variant) -> RunningFixture {
    memberdesk::serve(FixtureConfig::loopback(variant))
        .await
        .expect("the fixture starts on loopback")
}

/// One HTTP response.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub(crate) fn location(&self) -> Option<&str> {
        self.header("location")
    }

    /// The visible text of the page, tags removed, entities decoded, whitespace squashed.
    pub(crate) fn text(&self) -> String {
        visible_text(&self.body)
    }

    /// The leaf table rows of the page (rows that contain no nested row), as cell texts.
    pub(crate) fn rows(&self) -> Vec<Vec<String>> {
        leaf_rows(&self.body)
    }

    /// For every occurrence of `needle` in the markup, the text of the nearest heading
    /// (`<h1>`…`<h6>`) before it: the region a reader would say the occurrence belongs to.
    /// An occurrence before any heading has the region "".
    pub(crate) fn regions_of(&self, needle: &str) -> Vec<String> {
        self.body
            .match_indices(needle)
            .map(|(position, _)| {
                let before = &self.body[..position];
                let start = (1..=6)
                    .filter_map(|level| before.rfind(&format!("<h{level}")))
                    .max();
                start.map_or_else(String::new, |start| {
                    let end = self.body[start..]
                        .find("</h")
                        .map_or(self.body.len(), |end| start + end);
                    visible_text(&self.body[start..end])
                })
            })
            .collect()
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("the body is JSON")
    }

    /// The text of the page's `<h1>`.
    pub(crate) fn heading(&self) -> String {
        let start = self.body.find("<h1").expect("the page has a heading");
        let end = self.body[start..]
            .find("</h1>")
            .expect("the heading closes")
            + start;
        visible_text(&self.body[start..end + 5])
    }
}

/// Sends one request on a fresh connection and reads the whole response.
pub(crate) async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, String)>,
) -> Reply {
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request += &format!("{name}: {value}\r\n");
    }
    let payload = match body {
        Some((content_type, payload)) => {
            request += &format!(
                "Content-Type: {content_type}\r\nContent-Length: {}\r\n",
                payload.len()
            );
            payload
        }
        None => String::new(),
    };
    request += "\r\n";
    request += &payload;
    let mut stream = TcpStream::connect(addr).await.expect("the fixture accepts");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("the request is written");
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .await
        .expect("the response is read");
    parse_reply(&raw)
}

fn parse_reply(raw: &[u8]) -> Reply {
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .expect("the response has a header block");
    let head = String::from_utf8(raw[..split].to_vec()).expect("headers are UTF-8");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("a status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status code");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked")
    });
    if chunked {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body: String::from_utf8(body).expect("the body is UTF-8"),
    }
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|window| window == b"\r\n")
            .expect("a chunk size line");
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
            .expect("a hex chunk size");
        if size == 0 {
            return body;
        }
        let start = line_end + 2;
        body.extend_from_slice(&rest[start..start + size]);
        rest = &rest[start + size + 2..];
    }
}

/// A browser-like session: remembers the `md_session` cookie the server sets or clears.
pub(crate) struct Session {
    pub(crate) addr: SocketAddr,
    pub(crate) cookie: Option<String>,
}

impl Session {
    pub(crate) fn new(fixture: &RunningFixture) -> Self {
        Self {
            addr: fixture.addr(),
            cookie: None,
        }
    }

    /// A session that has signed on with the contract's credentials.
    pub(crate) async fn signed_on(fixture: &RunningFixture) -> Self {
        let mut session = Self::new(fixture);
        let reply = session.sign_on().await;
        assert_eq!(
            (reply.status, reply.location()),
            (303, Some("/search")),
            "sign-on succeeds"
        );
        session
    }

    pub(crate) async fn sign_on(&mut self) -> Reply {
        let variant = self.variant().await;
        let (user, password) = match variant.as_str() {
            "first-valley" => ("user", "pw"),
            _ => ("opr_id", "opr_pass"),
        };
        self.post_form(
            "/login",
            &[
                (user, memberdesk::OPERATOR_ID),
                (password, memberdesk::OPERATOR_PASSWORD),
            ],
        )
        .await
    }

    async fn variant(&self) -> String {
        let state = send(self.addr, "GET", "/_control/state", &[], None).await;
        state.json()["variant"]
            .as_str()
            .expect("the state names its variant")
            .to_owned()
    }

    pub(crate) async fn get(&mut self, path: &str) -> Reply {
        self.request("GET", path, None).await
    }

    pub(crate) async fn post_form(&mut self, path: &str, fields: &[(&str, &str)]) -> Reply {
        let encoded = fields
            .iter()
            .map(|(name, value)| format!("{}={}", url_encode(name), url_encode(value)))
            .collect::<Vec<_>>()
            .join("&");
        self.request(
            "POST",
            path,
            Some(("application/x-www-form-urlencoded", encoded)),
        )
        .await
    }

    async fn request(&mut self, method: &str, path: &str, body: Option<(&str, String)>) -> Reply {
        let cookie_header = self
            .cookie
            .as_ref()
            .map(|token| format!("{}={token}", memberdesk::SESSION_COOKIE));
        let headers: Vec<(&str, &str)> = cookie_header
            .as_deref()
            .map(|cookie| ("Cookie", cookie))
            .into_iter()
            .collect();
        let reply = send(self.addr, method, path, &headers, body).await;
        if let Some(set_cookie) = reply.header("set-cookie") {
            let value = set_cookie
                .split(';')
                .next()
                .and_then(|pair| pair.strip_prefix("md_session="))
                .expect("only md_session is ever set");
            self.cookie = (!value.is_empty()).then(|| value.to_owned());
        }
        reply
    }
}

/// POSTs JSON to the control surface.
pub(crate) async fn control(fixture: &RunningFixture, path: &str, json: &str) -> Reply {
    send(
        fixture.addr(),
        "POST",
        path,
        &[],
        Some(("application/json", json.to_owned())),
    )
    .await
}

/// Arms a fault over HTTP, as an eval harness would.
pub(crate) async fn arm(fixture: &RunningFixture, fault: &str, count: i64) {
    let reply = control(
        fixture,
        "/_control/arm",
        &format!(r#"{{"fault": "{fault}", "count": {count}}}"#),
    )
    .await;
    assert_eq!(reply.status, 200, "arming {fault}: {}", reply.body);
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (byte as char).to_string()
            }
            b' ' => "+".to_owned(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

fn visible_text(html: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    let mut in_style = false;
    let mut rest = html;
    while let Some(character) = rest.chars().next() {
        if rest.starts_with("<style") {
            in_style = true;
        } else if rest.starts_with("</style>") {
            in_style = false;
        }
        match character {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag && !in_style => text.push(character),
            _ => {}
        }
        rest = &rest[character.len_utf8()..];
    }
    let decoded = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn leaf_rows(html: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut offset = 0;
    while let Some(found) = html[offset..].find("<tr") {
        let start = offset + found;
        let Some(length) = html[start..].find("</tr>") else {
            break;
        };
        let row = &html[start + 3..start + length];
        offset = start + 3;
        if row.contains("<tr") {
            continue;
        }
        let cells = row
            .split("<t")
            .skip(1)
            .filter(|cell| cell.starts_with('d') || cell.starts_with('h'))
            .map(|cell| visible_text(&format!("<t{cell}")))
            .collect();
        rows.push(cells);
    }
    rows
}

/// Whether `rows` contains a row that starts with these cells.
pub(crate) fn has_row(rows: &[Vec<String>], cells: &[&str]) -> bool {
    rows.iter()
        .any(|row| row.len() >= cells.len() && row.iter().zip(cells).all(|(a, b)| a == b))
}
