//! Turns an attach endpoint into a DevTools WebSocket URL: a `ws://` URL is used as is; an
//! `http://host:port` endpoint is asked for `/json/version` over one plain HTTP/1.1 request.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::LaunchError;

/// The largest `/json/version` answer read.
const MAX_ANSWER: usize = 64 * 1024;

/// Resolves `endpoint` to the browser's WebSocket URL within `timeout`.
pub(crate) async fn resolve(endpoint: &str, timeout: Duration) -> Result<String, LaunchError> {
    let unreachable = |reason: String| LaunchError::Unreachable {
        endpoint: endpoint.to_string(),
        reason,
    };
    if endpoint.starts_with("ws://") {
        return Ok(endpoint.to_string());
    }
    let Some(rest) = endpoint.strip_prefix("http://") else {
        return Err(unreachable(
            "expected a ws:// or http:// endpoint".to_string(),
        ));
    };
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() {
        return Err(unreachable("the endpoint has no host".to_string()));
    }
    let exchange = async {
        let mut stream = TcpStream::connect(authority)
            .await
            .map_err(|e| e.to_string())?;
        let request = format!(
            "GET /json/version HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        // Chromium keeps the connection open whatever the request says, so the answer ends
        // where its Content-Length says, not at end of stream.
        let mut answer = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let read = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
            answer.extend_from_slice(&chunk[..read]);
            if read == 0 || answer.len() > MAX_ANSWER || complete(&answer) {
                break;
            }
        }
        Ok::<_, String>(answer)
    };
    let answer = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| unreachable(format!("no answer within {timeout:?}")))?
        .map_err(unreachable)?;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        let status = head.lines().next().unwrap_or_default().to_string();
        return Err(unreachable(format!("/json/version answered `{status}`")));
    }
    let version: Value = serde_json::from_str(body.trim())
        .map_err(|_| unreachable("/json/version is not JSON".to_string()))?;
    version["webSocketDebuggerUrl"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| unreachable("/json/version has no webSocketDebuggerUrl".to_string()))
}

/// Whether an HTTP/1.1 answer has its whole body, by `Content-Length`.
fn complete(answer: &[u8]) -> bool {
    let Some(end) = answer.windows(4).position(|window| window == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&answer[..end]);
    let length = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse::<usize>().ok())?
    });
    length.is_some_and(|length| answer.len() >= end + 4 + length)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_end_at_their_content_length() {
        assert!(!complete(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n"));
        assert!(!complete(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n{}"));
        assert!(complete(
            b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n{  }"
        ));
        assert!(!complete(b"HTTP/1.1 200 OK\r\n\r\n{}"));
    }

    #[tokio::test]
    async fn other_schemes_are_refused() {
        let error = resolve("ftp://127.0.0.1:9", Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("expected a ws:// or http:// endpoint"),
            "{error}"
        );
    }
}
