//! The server over raw HTTP: tokens, origins, hosts, traversal, and redaction of everything
//! it answers, frames included.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine;
use cua_console::{Access, ConsoleConfig, NoCatalog, RunningConsole};
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use cua_fs::testing::{plant_directory, plant_symlink, share};

use crate::support::{CANARY, World};

const TOKEN_OF_ADA: &str = "ada-token-0123456789abcdefghij";

async fn start(world: &World) -> RunningConsole {
    cua_console::serve(
        Arc::clone(&world.broker),
        ConsoleConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            allow_remote: false,
            access: Access::named(vec![("ada".to_owned(), TOKEN_OF_ADA.to_owned())]).unwrap(),
            catalog: Arc::new(NoCatalog),
            settings: serde_json::json!({ "policy": "read-only", "note": format!("Ada {CANARY}") }),
            redactor: world.redactor.clone(),
        },
    )
    .await
    .unwrap()
}

/// One raw HTTP/1.1 exchange (the path is sent exactly as given: no client normalizes it).
async fn http(address: SocketAddr, request: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).await.unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let status = text.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
    (status, text)
}

fn request(method: &str, path: &str, address: SocketAddr, extra: &[&str]) -> String {
    let mut text = format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for header in extra {
        text.push_str(header);
        text.push_str("\r\n");
    }
    if method == "POST" {
        text.push_str("Content-Length: 0\r\n");
    }
    text.push_str("\r\n");
    text
}

const WITH_TOKEN: &str = "X-Cua-Token: ada-token-0123456789abcdefghij";

#[tokio::test]
async fn requests_need_a_token_the_right_origin_and_host() {
    let world = World::new();
    let id = world.escalate();
    let console = start(&world).await;
    let address = console.address;
    // The page itself is public and holds nothing; every API needs a token.
    assert_eq!(
        http(address, &request("GET", "/", address, &[])).await.0,
        200
    );
    assert_eq!(
        http(address, &request("GET", "/api/state", address, &[]))
            .await
            .0,
        401
    );
    assert_eq!(
        http(
            address,
            &request(
                "GET",
                "/api/state",
                address,
                &["X-Cua-Token: wrong-token-0123456789abcdef"]
            )
        )
        .await
        .0,
        401
    );
    assert_eq!(
        http(
            address,
            &request(
                "GET",
                "/api/state",
                address,
                &["Cookie: token=ada-token-0123456789abcdefghij"]
            )
        )
        .await
        .0,
        401,
        "a cookie is not a token"
    );
    let (status, body) = http(
        address,
        &request("GET", "/api/state", address, &[WITH_TOKEN]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"operator\":\"ada\""));
    // A cross-site page cannot claim, even with a token it somehow learned.
    let claim = format!("/api/interventions/{id}/claim");
    for header in [
        "Origin: http://evil.example",
        "Origin: null",
        "Sec-Fetch-Site: cross-site",
    ] {
        let (status, body) = http(
            address,
            &request("POST", &claim, address, &[WITH_TOKEN, header]),
        )
        .await;
        assert_eq!(status, 403, "{header}: {body}");
    }
    // Another host name (DNS rebinding) is not answered.
    let rebound = format!(
        "GET /api/state HTTP/1.1\r\nHost: evil.example:{}\r\nConnection: close\r\n{WITH_TOKEN}\r\n\r\n",
        address.port()
    );
    assert_eq!(http(address, &rebound).await.0, 421);
    // The same origin may.
    let origin = format!("Origin: http://{address}");
    let (status, body) = http(
        address,
        &request("POST", &claim, address, &[WITH_TOKEN, &origin]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = http(
        address,
        &request("POST", &claim, address, &[WITH_TOKEN, &origin]),
    )
    .await;
    assert_eq!(status, 409, "a second claim conflicts");
    console.shutdown().await;
}

#[tokio::test]
async fn evidence_paths_cannot_leave_the_run() {
    let world = World::new();
    world.escalate();
    std::fs::write(world.root.path().join("outside.txt"), CANARY).unwrap();
    let console = start(&world).await;
    let address = console.address;
    let (status, body) = http(
        address,
        &request(
            "GET",
            "/api/runs/run-1/files/trace.jsonl",
            address,
            &[WITH_TOKEN],
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for path in [
        "/api/runs/run-1/files/../outside.txt",
        "/api/runs/run-1/files/../../etc/passwd",
        "/api/runs/run-1/files/%2e%2e/outside.txt",
        "/api/runs/run-1/files/snapshots/..%2f..%2foutside.txt",
        "/api/runs/run-1/files//etc/passwd",
        "/api/runs/..%2f/files/outside.txt",
    ] {
        let (status, body) = http(address, &request("GET", path, address, &[WITH_TOKEN])).await;
        assert!(matches!(status, 400 | 404), "{path}: {status} {body}");
        assert!(!body.contains(CANARY), "{path} leaked: {body}");
    }
    console.shutdown().await;
}

/// What only the victim's files hold: not a secret the redactor knows, so only refusing to
/// read them keeps it out of a response.
const VICTIM_BYTES: &str = "root:x:0:0:victim-only-bytes";

#[tokio::test]
async fn nothing_is_served_from_a_link_planted_in_the_evidence_root() {
    let world = World::new();
    world.escalate();
    // The evidence root is shared, as /tmp is; the attacker plants a run directory that is a
    // link to the victim's directory (with a trace, so it looks like a run), and makes a run
    // directory of their own whose files are links to the victim's.
    share(world.root.path());
    let victim = tempfile::tempdir().unwrap();
    std::fs::write(victim.path().join("passwd"), VICTIM_BYTES).unwrap();
    std::fs::copy(
        world.root.path().join("run-1/trace.jsonl"),
        victim.path().join("trace.jsonl"),
    )
    .unwrap();
    plant_symlink(victim.path(), &world.root.path().join("run-linked"));
    let made = world.root.path().join("run-made");
    plant_directory(&made);
    plant_symlink(&victim.path().join("passwd"), &made.join("passwd.json"));
    plant_symlink(
        &victim.path().join("trace.jsonl"),
        &made.join("trace.jsonl"),
    );
    let console = start(&world).await;
    let address = console.address;
    for path in [
        "/api/runs/run-linked/files/passwd",
        "/api/runs/run-linked/files/trace.jsonl",
        "/api/runs/run-linked",
        "/api/runs/run-made/files/passwd.json",
        "/api/runs/run-made/files/trace.jsonl",
        "/api/runs/run-made",
    ] {
        let (status, body) = http(address, &request("GET", path, address, &[WITH_TOKEN])).await;
        assert!(matches!(status, 400 | 404), "{path}: {status} {body}");
        assert!(!body.contains("victim-only-bytes"), "{path} leaked: {body}");
    }
    let (status, body) = http(
        address,
        &request("GET", "/api/runs", address, &[WITH_TOKEN]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("run-1"), "{body}");
    assert!(
        !body.contains("run-linked") && !body.contains("run-made"),
        "a planted run is listed: {body}"
    );
    // The real run is still served.
    let (status, body) = http(
        address,
        &request(
            "GET",
            "/api/runs/run-1/files/trace.jsonl",
            address,
            &[WITH_TOKEN],
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    console.shutdown().await;
}

#[tokio::test]
async fn no_response_and_no_frame_carries_the_canary() {
    let world = World::new();
    let id = world.escalate();
    world.broker.claim(&id, "ada", None).await.unwrap();
    let console = start(&world).await;
    let address = console.address;
    for path in [
        "/api/state".to_owned(),
        "/api/interventions".to_owned(),
        format!("/api/interventions/{id}"),
        "/api/sessions/live-1/snapshot".to_owned(),
        "/api/runs".to_owned(),
        "/api/runs/run-1".to_owned(),
        "/api/runs/run-1/files/trace.jsonl".to_owned(),
        "/api/settings".to_owned(),
        "/".to_owned(),
        "/app.js".to_owned(),
    ] {
        let (status, body) = http(address, &request("GET", &path, address, &[WITH_TOKEN])).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert!(!body.contains(CANARY), "{path} leaked the canary: {body}");
    }
    // The live view: the WebSocket needs the token and our origin, and its frame is painted
    // over the canary's cell before it leaves the process.
    let url = format!("ws://{address}/ws/sessions/live-1");
    let mut refused = url.clone().into_client_request().unwrap();
    refused
        .headers_mut()
        .insert("Origin", "http://evil.example".parse().unwrap());
    refused.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        format!("cua-console, cua-token.{TOKEN_OF_ADA}")
            .parse()
            .unwrap(),
    );
    assert!(
        tokio_tungstenite::connect_async(refused).await.is_err(),
        "another origin"
    );
    let mut anonymous = url.clone().into_client_request().unwrap();
    anonymous
        .headers_mut()
        .insert("Origin", format!("http://{address}").parse().unwrap());
    anonymous
        .headers_mut()
        .insert("Sec-WebSocket-Protocol", "cua-console".parse().unwrap());
    assert!(
        tokio_tungstenite::connect_async(anonymous).await.is_err(),
        "no token"
    );
    let mut allowed = url.into_client_request().unwrap();
    allowed
        .headers_mut()
        .insert("Origin", format!("http://{address}").parse().unwrap());
    allowed.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        format!("cua-console, cua-token.{TOKEN_OF_ADA}")
            .parse()
            .unwrap(),
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(allowed).await.unwrap();
    let frame = loop {
        let message = socket.next().await.unwrap().unwrap();
        let text = message.into_text().unwrap();
        assert!(!text.contains(CANARY));
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        if value["type"] == "frame" {
            break value;
        }
    };
    assert_eq!(
        frame["painted_regions"], 2,
        "the canary cell on the snapshots before and after"
    );
    let jpeg = base64::engine::general_purpose::STANDARD
        .decode(frame["jpeg"].as_str().unwrap())
        .unwrap();
    let (pixels, width, _) = cua_console::paint::decode_rgb(&jpeg).unwrap();
    // The canary cell is at (10, 60, 200×20) on a 640×400 page shown 640×400: painted black.
    let luminance = |x: usize, y: usize| pixels[(y * width + x) * 3];
    for (x, y) in [(12, 62), (100, 70), (205, 78)] {
        assert!(
            luminance(x, y) < 24,
            "({x}, {y}) shows through: {}",
            luminance(x, y)
        );
    }
    assert!(
        luminance(400, 300) > 230,
        "the rest of the frame is untouched"
    );
    // A gesture over the socket goes through the chokepoint like any other.
    let gesture = serde_json::json!({ "type": "gesture", "gesture": { "kind": "click", "x": 30.0, "y": 160.0 } });
    socket
        .send(tokio_tungstenite::tungstenite::Message::text(
            gesture.to_string(),
        ))
        .await
        .unwrap();
    let answer = loop {
        let text = socket.next().await.unwrap().unwrap().into_text().unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        if value["type"] == "answer" {
            break value;
        }
    };
    assert_eq!(
        answer["answer"]["outcome"], "needs_confirmation",
        "{answer}"
    );
    assert!(world.surface.dispatched().is_empty());
    console.shutdown().await;
}

use tokio_tungstenite::tungstenite::client::IntoClientRequest;

#[tokio::test]
async fn a_non_loopback_address_needs_remote_access_allowed() {
    let world = World::new();
    let refused = cua_console::serve(
        Arc::clone(&world.broker),
        ConsoleConfig {
            bind: SocketAddr::from(([0, 0, 0, 0], 0)),
            allow_remote: false,
            access: Access::named(vec![("ada".to_owned(), TOKEN_OF_ADA.to_owned())]).unwrap(),
            catalog: Arc::new(NoCatalog),
            settings: serde_json::Value::Null,
            redactor: world.redactor.clone(),
        },
    )
    .await;
    let error = refused
        .err()
        .expect("0.0.0.0 without --allow-remote is refused");
    assert!(error.to_string().contains("--allow-remote"), "{error}");
}
