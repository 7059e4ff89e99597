//! The streamable HTTP transport over raw HTTP/1.1 (no client normalizes what is sent): a
//! request needs the bearer token, a `Host` that is exactly one of the server's loopback names
//! with its port, and, when it says one, an `Origin` that is the server itself. Anything else
//! is refused before the MCP session sees it, so a refused caller never obtains a plan approval.

use std::net::SocketAddr;
use std::time::Duration;

use cua_mcp::{Access, HttpConfig, REFUSED_CODE, RunningHttp};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Harness, SAVINGS, TRANSFER, TempCatalog};

const TOKEN: &str = "agent-token-0123456789abcdefghij";
const PLAN_TOOL: &str = "corebank_member_transfer_funds__plan";

/// A served tool server with the savings and transfer capabilities approved.
struct Served {
    running: RunningHttp,
    _harness: Harness,
    _catalog: TempCatalog,
}

impl Served {
    async fn start() -> Self {
        let catalog = TempCatalog::with_approved(&[SAVINGS, TRANSFER]);
        let harness = Harness::new(&catalog);
        let running = cua_mcp::serve_http(harness.server.clone(), config(loopback()))
            .await
            .unwrap();
        Self {
            running,
            _harness: harness,
            _catalog: catalog,
        }
    }

    fn address(&self) -> SocketAddr {
        self.running.address()
    }

    fn port(&self) -> u16 {
        self.address().port()
    }

    /// `127.0.0.1:<port>`, the name a client normally uses.
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port())
    }

    /// One POST to `/mcp` with `host` as the `Host` header and `headers` added.
    async fn post(&self, host: &str, headers: &[&str], body: &Value) -> Answer {
        let body = body.to_string();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: \
             application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: \
             {}\r\n",
            body.len()
        );
        for header in headers {
            request.push_str(header);
            request.push_str("\r\n");
        }
        request.push_str("\r\n");
        request.push_str(&body);
        exchange(self.address(), &request).await
    }

    /// Initializes a session (with `headers`, under `host`) and returns its id.
    async fn session(&self, host: &str, headers: &[&str]) -> String {
        let answer = self.post(host, headers, &initialize()).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let session = answer
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("no session id: {}", answer.text))
            .to_owned();
        let session_header = format!("Mcp-Session-Id: {session}");
        let mut with_session = headers.to_vec();
        with_session.push(&session_header);
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let answer = self.post(host, &with_session, &initialized).await;
        assert_eq!(answer.status, 202, "{}", answer.text);
        session
    }

    async fn shutdown(self) {
        self.running.shutdown().await.unwrap();
    }
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

fn config(bind: SocketAddr) -> HttpConfig {
    HttpConfig {
        bind,
        allow_remote: false,
        access: Access::named(vec![("agent".to_owned(), TOKEN.to_owned())]).unwrap(),
    }
}

fn bearer() -> String {
    format!("Authorization: Bearer {TOKEN}")
}

fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "raw-http-test", "version": "0" },
        },
    })
}

fn list_tools() -> Value {
    json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" })
}

fn plan_transfer() -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": PLAN_TOOL,
            "arguments": {
                "member_id": "12345",
                "from_account": "S-12345-01",
                "to_account": "C-12345-02",
                "amount": "100.00",
            },
        },
    })
}

/// An HTTP response: status, head and body (chunked transfer decoded).
struct Answer {
    status: u16,
    head: String,
    body: String,
    /// Everything received, for failure messages.
    text: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then_some(value.trim())
        })
    }

    /// The JSON-RPC messages in the body: one JSON document, or the `data:` lines of an
    /// event stream.
    fn messages(&self) -> Vec<Value> {
        if let Ok(value) = serde_json::from_str::<Value>(&self.body) {
            return vec![value];
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect()
    }

    /// Asserts a refusal with `status`, a JSON-RPC error body naming `reason`, and nothing an
    /// MCP session would have answered.
    fn assert_refused(&self, status: u16, reason: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        let messages = self.messages();
        assert_eq!(messages.len(), 1, "{}", self.text);
        let error = &messages[0]["error"];
        assert_eq!(messages[0]["jsonrpc"], "2.0", "{}", self.text);
        assert_eq!(error["code"], REFUSED_CODE, "{}", self.text);
        assert_eq!(error["data"]["status"], status, "{}", self.text);
        assert_eq!(error["data"]["reason"], reason, "{}", self.text);
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{}",
            self.text
        );
        assert!(self.header("mcp-session-id").is_none(), "{}", self.text);
        assert!(!self.text.contains("approval_token"), "{}", self.text);
        assert!(
            !self.text.contains(TOKEN),
            "the token was echoed: {}",
            self.text
        );
    }
}

/// One raw HTTP/1.1 exchange; the server closes the connection after answering.
async fn exchange(address: SocketAddr, request: &str) -> Answer {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut bytes))
        .await
        .expect("the server answers and closes within 30 s")
        .unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, raw_body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or(0);
    let chunked = head.lines().any(|line| {
        line.to_ascii_lowercase()
            .replace(' ', "")
            .starts_with("transfer-encoding:chunked")
    });
    let body = if chunked {
        dechunk(raw_body)
    } else {
        raw_body.to_owned()
    };
    Answer {
        status,
        head: head.to_owned(),
        body,
        text: text.clone(),
    }
}

fn dechunk(mut raw: &str) -> String {
    let mut body = String::new();
    while let Some((size, rest)) = raw.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        body.push_str(&rest[..size]);
        raw = rest[size..].strip_prefix("\r\n").unwrap_or(&rest[size..]);
    }
    body
}

#[tokio::test]
async fn without_the_token_nothing_is_answered_and_no_plan_is_issued() {
    let served = Served::start().await;
    let host = served.host();
    for body in [initialize(), list_tools(), plan_transfer()] {
        let answer = served.post(&host, &[], &body).await;
        answer.assert_refused(401, "missing_token");
        assert_eq!(
            answer.header("www-authenticate"),
            Some("Bearer realm=\"cua serve\""),
            "{}",
            answer.text
        );
        let message = answer.messages()[0]["error"]["message"].to_string();
        assert!(message.contains("Authorization: Bearer"), "{message}");
    }
    // A session someone else opened does not let a caller without the token in.
    let session = served.session(&host, &[&bearer()]).await;
    let session_header = format!("Mcp-Session-Id: {session}");
    let answer = served
        .post(&host, &[&session_header], &plan_transfer())
        .await;
    answer.assert_refused(401, "missing_token");
    // Neither does another scheme, a bare token, or a token in another header.
    for header in [
        format!("Authorization: Basic {TOKEN}"),
        format!("Authorization: {TOKEN}"),
        format!("X-Cua-Token: {TOKEN}"),
        format!("Cookie: token={TOKEN}"),
    ] {
        let answer = served
            .post(&host, &[&header, &session_header], &plan_transfer())
            .await;
        answer.assert_refused(401, "missing_token");
    }
    served.shutdown().await;
}

#[tokio::test]
async fn a_wrong_token_is_refused() {
    let served = Served::start().await;
    let host = served.host();
    for token in [
        "agent-token-0123456789abcdefghiJ",
        "agent-token-0123456789abcdefghi",
        "agent-token-0123456789abcdefghijk",
        "x",
    ] {
        let header = format!("Authorization: Bearer {token}");
        let answer = served.post(&host, &[&header], &initialize()).await;
        answer.assert_refused(401, "wrong_token");
        assert_eq!(
            answer.header("www-authenticate"),
            Some("Bearer realm=\"cua serve\", error=\"invalid_token\""),
            "{}",
            answer.text
        );
    }
    served.shutdown().await;
}

#[tokio::test]
async fn the_right_token_lists_the_tools_and_plans_under_every_loopback_name() {
    let served = Served::start().await;
    let port = served.port();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        // A browser on the server's own page says its origin; a loopback origin with the
        // server's port is the server itself.
        let origin = format!("Origin: http://{host}");
        let headers = [bearer(), origin];
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        let session = served.session(&host, &headers).await;
        let session_header = format!("Mcp-Session-Id: {session}");
        let mut with_session = headers.clone();
        with_session.push(&session_header);
        let answer = served.post(&host, &with_session, &list_tools()).await;
        assert_eq!(answer.status, 200, "{host}: {}", answer.text);
        let tools: Vec<String> = answer.messages()[0]["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{host}: no tools: {}", answer.text))
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect();
        assert!(tools.contains(&PLAN_TOOL.to_owned()), "{host}: {tools:?}");
        let answer = served.post(&host, &with_session, &plan_transfer()).await;
        assert_eq!(answer.status, 200, "{host}: {}", answer.text);
        let result = &answer.messages()[0]["result"]["structuredContent"];
        assert!(
            result["approval_request"]["approval_token"].is_string(),
            "{host}: {}",
            answer.text
        );
    }
    served.shutdown().await;
}

#[tokio::test]
async fn hosts_other_than_the_bound_loopback_names_are_refused() {
    let served = Served::start().await;
    let port = served.port();
    let other = port.wrapping_add(1).max(1);
    for host in [
        format!("127.0.0.1:{other}"),
        "127.0.0.1".to_owned(),
        format!("evil:{port}@127.0.0.1"),
        format!("evil:1@127.0.0.1:{port}"),
        "evil:1@127.0.0.1".to_owned(),
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        format!("LOCALHOST:{port}"),
        format!("127.0.0.2:{port}"),
        format!("0.0.0.0:{port}"),
        format!("[::1]:{other}"),
        format!("127.0.0.1:{port}."),
        String::new(),
    ] {
        let answer = served.post(&host, &[&bearer()], &initialize()).await;
        answer.assert_refused(421, "bad_host");
    }
    // A second Host header does not hide behind a good first one.
    let second = "Host: evil.example".to_owned();
    let answer = served
        .post(&served.host(), &[&bearer(), &second], &initialize())
        .await;
    answer.assert_refused(421, "bad_host");
    served.shutdown().await;
}

#[tokio::test]
async fn origins_other_than_this_server_are_refused() {
    let served = Served::start().await;
    let port = served.port();
    let other = port.wrapping_add(1).max(1);
    for origin in [
        "http://evil.example".to_owned(),
        format!("http://evil.example:{port}"),
        format!("http://127.0.0.1:{other}"),
        "http://127.0.0.1".to_owned(),
        format!("https://127.0.0.1:{port}"),
        format!("http://evil:1@127.0.0.1:{port}"),
        "null".to_owned(),
        String::new(),
    ] {
        let header = format!("Origin: {origin}");
        let answer = served
            .post(&served.host(), &[&bearer(), &header], &initialize())
            .await;
        answer.assert_refused(403, "bad_origin");
    }
    served.shutdown().await;
}

#[tokio::test]
async fn a_non_loopback_bind_is_refused_without_allow_remote() {
    let catalog = TempCatalog::with_approved(&[SAVINGS]);
    let harness = Harness::new(&catalog);
    let refused = cua_mcp::serve_http(
        harness.server.clone(),
        config(SocketAddr::from(([0, 0, 0, 0], 0))),
    )
    .await
    .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "0.0.0.0:0 is not a loopback address: pass --allow-remote to serve the MCP tool server \
         beyond this machine"
    );
}
