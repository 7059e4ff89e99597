//! CDP over a pipe that only this process holds, offered to its own clients through a
//! loopback WebSocket whose path is a secret.
//!
//! Chromium's TCP debugging port answers every user of the machine: `/json/version` names the
//! browser's WebSocket, and whoever connects to it owns the browser, its http-only session
//! cookies included. A launched browser therefore opens no port at all: it speaks CDP on fds 3
//! and 4 (`--remote-debugging-pipe`, messages ended by a NUL byte), inherited from this process
//! and from nobody else.
//!
//! The driver's connection and the console's screencast both connect by a
//! WebSocket URL, so the bridge listens on `127.0.0.1` and completes a handshake only for the
//! path `/devtools/browser/<token>`. The token is 256 random bits that never leave this
//! process (no command line, no file, no discovery endpoint): any other request is answered
//! 404 and closed.
//!
//! Each WebSocket client gets its own browser session (`Target.attachToBrowserTarget`), so
//! Chromium keeps the clients' state apart (target discovery, auto-attach, `Fetch`) as it does
//! for separate connections. The bridge renumbers command ids across clients, adds the
//! client's browser session to its sessionless commands, and hands every answer and event to
//! the client that owns its session; a client naming a session it does not own gets the error
//! Chromium gives for an unknown one.

use std::collections::HashMap;
use std::os::fd::{OwnedFd, RawFd};

use command_fds::{CommandFdExt, FdMapping};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_tungstenite::WebSocketStream;
use async_tungstenite::tokio::TokioAdapter;
use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::handshake::derive_accept_key;
use async_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::cdp::lock;

/// The fd on which Chromium reads commands.
const CHROMIUM_READS: RawFd = 3;
/// The fd on which Chromium writes answers and events.
const CHROMIUM_WRITES: RawFd = 4;

/// The longest request head a client may send before its handshake is refused.
const MAX_HEAD: usize = 8 * 1024;

/// How long a connecting client has to complete its WebSocket handshake.
const HANDSHAKE_PATIENCE: Duration = Duration::from_secs(5);

/// The pipe ends Chromium inherits, held by this process only until the spawn.
pub(crate) struct ChildEnds {
    reads: OwnedFd,
    writes: OwnedFd,
}

/// The pipe ends this process keeps.
pub(crate) struct ParentEnds {
    writes: OwnedFd,
    reads: OwnedFd,
}

/// Creates both pipes, close-on-exec, so that no other child ever inherits them.
pub(crate) fn pipes() -> std::io::Result<(ChildEnds, ParentEnds)> {
    let flags = rustix::pipe::PipeFlags::CLOEXEC;
    let (chromium_reads, parent_writes) = rustix::pipe::pipe_with(flags)?;
    let (parent_reads, chromium_writes) = rustix::pipe::pipe_with(flags)?;
    Ok((
        ChildEnds {
            reads: chromium_reads,
            writes: chromium_writes,
        },
        ParentEnds {
            writes: parent_writes,
            reads: parent_reads,
        },
    ))
}

impl ChildEnds {
    /// Hands the ends to the command, for the child to find on fds 3 and 4 and nowhere else.
    /// The command holds them until it is dropped: drop it right after the spawn, so that
    /// Chromium's exit ends the pipe.
    pub(crate) fn install(self, command: &mut tokio::process::Command) -> std::io::Result<()> {
        let mappings = vec![
            FdMapping {
                parent_fd: self.reads,
                child_fd: CHROMIUM_READS,
            },
            FdMapping {
                parent_fd: self.writes,
                child_fd: CHROMIUM_WRITES,
            },
        ];
        command
            .fd_mappings(mappings)
            .map(|_| ())
            .map_err(std::io::Error::other)
    }
}

/// Why the bridge's own call failed.
#[derive(Debug)]
pub(crate) enum BridgeError {
    /// The pipe closed (Chromium exited); the reason says how.
    Closed(String),
    /// Chromium answered with a protocol error.
    Protocol(String),
}

impl std::fmt::Display for BridgeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Closed(reason) => write!(f, "the DevTools pipe closed: {reason}"),
            Self::Protocol(message) => write!(f, "CDP error: {message}"),
        }
    }
}

type ClientId = u64;

/// Who waits for an answer.
enum Waiter {
    Client { client: ClientId, id: Value },
    Bridge(oneshot::Sender<Result<Value, BridgeError>>),
}

#[derive(Default)]
struct Router {
    clients: HashMap<ClientId, (String, mpsc::UnboundedSender<String>)>,
    /// Every live session, with the client that owns it.
    owners: HashMap<String, ClientId>,
    waiting: HashMap<u64, Waiter>,
    next_id: u64,
    next_client: ClientId,
    closed: Option<String>,
}

/// The bridge: owns the pipe's tasks and the listener. Dropping it stops them all, which
/// closes every client's WebSocket.
pub(crate) struct Bridge {
    router: Arc<Mutex<Router>>,
    to_chromium: mpsc::UnboundedSender<Vec<u8>>,
    endpoint: String,
    tasks: Vec<JoinHandle<()>>,
}

impl Bridge {
    /// Starts serving the pipe ends this process kept after the spawn.
    pub(crate) async fn start(ends: ParentEnds) -> std::io::Result<Self> {
        let writer = pipe::Sender::from_owned_fd(ends.writes)?;
        let reader = pipe::Receiver::from_owned_fd(ends.reads)?;
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let token = token()?;
        let path = format!("/devtools/browser/{token}");
        let endpoint = format!("ws://127.0.0.1:{port}{path}");
        let router = Arc::new(Mutex::new(Router::default()));
        let (to_chromium, outgoing) = mpsc::unbounded_channel();
        let mut bridge = Self {
            router: Arc::clone(&router),
            to_chromium: to_chromium.clone(),
            endpoint,
            tasks: Vec::new(),
        };
        bridge
            .tasks
            .push(tokio::spawn(write_loop(writer, outgoing)));
        bridge.tasks.push(tokio::spawn(read_loop(
            reader,
            Arc::clone(&router),
            to_chromium.clone(),
        )));
        bridge.tasks.push(tokio::spawn(accept_loop(
            listener,
            Arc::from(path),
            router,
            to_chromium,
        )));
        Ok(bridge)
    }

    /// The WebSocket URL of the browser, secret path included. Only for this process.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// One call on the root session, for the bridge's own use (the readiness check).
    pub(crate) async fn call(&self, method: &str, params: Value) -> Result<Value, BridgeError> {
        call(&self.router, &self.to_chromium, method, params).await
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        close_all(&self.router, "the browser is gone");
    }
}

async fn call(
    router: &Mutex<Router>,
    to_chromium: &mpsc::UnboundedSender<Vec<u8>>,
    method: &str,
    params: Value,
) -> Result<Value, BridgeError> {
    let (tx, rx) = oneshot::channel();
    {
        let mut router = lock(router);
        if let Some(reason) = &router.closed {
            return Err(BridgeError::Closed(reason.clone()));
        }
        let id = router.next_id();
        router.waiting.insert(id, Waiter::Bridge(tx));
        let message = json!({ "id": id, "method": method, "params": params });
        send(to_chromium, &message);
    }
    rx.await
        .unwrap_or_else(|_| Err(BridgeError::Closed("the bridge stopped".into())))
}

impl Router {
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// A command from a client, renumbered and put on its session, or the refusal to send
    /// back to it.
    fn route_command(&mut self, client: ClientId, text: &str) -> Result<Value, String> {
        let mut message: Value = serde_json::from_str(text)
            .map_err(|_| refusal(&Value::Null, "Message must be JSON"))?;
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        if !id.is_u64() || message.get("method").and_then(Value::as_str).is_none() {
            return Err(refusal(&id, "Message must have an integer id and a method"));
        }
        let Some((browser_session, _)) = self.clients.get(&client) else {
            return Err(refusal(&id, "Client is gone"));
        };
        match message.get("sessionId").and_then(Value::as_str) {
            Some(session) => {
                let owned = self
                    .owners
                    .get(session)
                    .is_some_and(|owner| *owner == client);
                if !owned {
                    return Err(refusal(&id, "Session with given id not found."));
                }
            }
            None => message["sessionId"] = Value::String(browser_session.clone()),
        }
        let global = self.next_id();
        message["id"] = Value::from(global);
        self.waiting.insert(global, Waiter::Client { client, id });
        Ok(message)
    }

    /// An answer or event from Chromium, to whoever owns it.
    fn route_reply(&mut self, mut message: Value) {
        let session = message
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            match self.waiting.remove(&id) {
                Some(Waiter::Bridge(tx)) => {
                    let _ = tx.send(answer(message));
                }
                Some(Waiter::Client { client, id }) => {
                    // An attach answers with the new session, which its asker now owns.
                    if let Some(new) = message["result"]["sessionId"].as_str() {
                        self.owners.insert(new.to_owned(), client);
                    }
                    message["id"] = id;
                    self.deliver(client, session.as_deref(), message);
                }
                None => {}
            }
            return;
        }
        // Events on the root session: the bridge enables nothing there.
        let Some(session) = session else { return };
        let Some(owner) = self.owners.get(&session).copied() else {
            return;
        };
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        let child = message["params"]["sessionId"].as_str().map(str::to_owned);
        if method == "Target.attachedToTarget"
            && let Some(child) = &child
        {
            self.owners.insert(child.clone(), owner);
        }
        self.deliver(owner, Some(&session), message);
        if method == "Target.detachedFromTarget"
            && let Some(child) = child
        {
            self.owners.remove(&child);
        }
    }

    fn deliver(&mut self, client: ClientId, session: Option<&str>, mut message: Value) {
        let Some((browser_session, tx)) = self.clients.get(&client) else {
            return;
        };
        // The client's browser session stands for its root: it never sees that id.
        if session == Some(browser_session.as_str())
            && let Some(object) = message.as_object_mut()
        {
            object.remove("sessionId");
        }
        let _ = tx.send(message.to_string());
    }

    fn forget(&mut self, client: ClientId) -> Option<String> {
        let (browser_session, _) = self.clients.remove(&client)?;
        self.owners.retain(|_, owner| *owner != client);
        self.waiting.retain(|_, waiter| match waiter {
            Waiter::Client { client: asker, .. } => *asker != client,
            Waiter::Bridge(_) => true,
        });
        Some(browser_session)
    }
}

fn refusal(id: &Value, message: &str) -> String {
    json!({ "id": id, "error": { "code": -32001, "message": message } }).to_string()
}

fn answer(mut message: Value) -> Result<Value, BridgeError> {
    match message.get("error") {
        Some(error) => Err(BridgeError::Protocol(
            error["message"].as_str().unwrap_or("unknown").to_owned(),
        )),
        None => Ok(message
            .get_mut("result")
            .map(Value::take)
            .unwrap_or(Value::Null)),
    }
}

fn send(to_chromium: &mpsc::UnboundedSender<Vec<u8>>, message: &Value) {
    let mut bytes = message.to_string().into_bytes();
    bytes.push(0);
    // A closed writer means the pipe is gone; the reader reports that to everyone.
    let _ = to_chromium.send(bytes);
}

fn close_all(router: &Mutex<Router>, reason: &str) {
    let mut router = lock(router);
    if router.closed.is_none() {
        router.closed = Some(reason.to_owned());
    }
    // Dropping the senders ends every client task, which closes its WebSocket.
    router.clients.clear();
    router.owners.clear();
    for (_, waiter) in router.waiting.drain() {
        if let Waiter::Bridge(tx) = waiter {
            let _ = tx.send(Err(BridgeError::Closed(reason.to_owned())));
        }
    }
}

fn token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

async fn write_loop(mut writer: pipe::Sender, mut outgoing: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(bytes) = outgoing.recv().await {
        if writer.write_all(&bytes).await.is_err() {
            break;
        }
    }
}

async fn read_loop(
    reader: pipe::Receiver,
    router: Arc<Mutex<Router>>,
    to_chromium: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut reader = BufReader::new(reader);
    let mut buffer = Vec::new();
    let reason = loop {
        buffer.clear();
        match reader.read_until(0, &mut buffer).await {
            Ok(0) => break "Chromium closed its end".to_owned(),
            Ok(_) => {}
            Err(error) => break format!("reading the pipe failed: {error}"),
        }
        if buffer.last() == Some(&0) {
            buffer.pop();
        }
        let Ok(message) = serde_json::from_slice::<Value>(&buffer) else {
            continue;
        };
        lock(&router).route_reply(message);
    };
    drop(to_chromium);
    close_all(&router, &reason);
}

async fn accept_loop(
    listener: TcpListener,
    path: Arc<str>,
    router: Arc<Mutex<Router>>,
    to_chromium: mpsc::UnboundedSender<Vec<u8>>,
) {
    while let Ok((stream, _)) = listener.accept().await {
        // A CDP answer is written as a frame header and a payload: with Nagle's algorithm on,
        // the payload waits for the client's delayed acknowledgement of the header (40 ms).
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve_client(
            stream,
            Arc::clone(&path),
            Arc::clone(&router),
            to_chromium.clone(),
        ));
    }
}

async fn serve_client(
    stream: TcpStream,
    path: Arc<str>,
    router: Arc<Mutex<Router>>,
    to_chromium: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut stream = stream;
    let admitted = tokio::time::timeout(HANDSHAKE_PATIENCE, handshake(&mut stream, &path)).await;
    if !matches!(admitted, Ok(Ok(true))) {
        return;
    }
    let config = WebSocketConfig::default()
        .max_message_size(None)
        .max_frame_size(None);
    let socket =
        WebSocketStream::from_raw_socket(TokioAdapter::new(stream), Role::Server, Some(config))
            .await;
    let (mut sink, mut source) = socket.split();
    let Ok(answer) = call(
        &router,
        &to_chromium,
        "Target.attachToBrowserTarget",
        json!({}),
    )
    .await
    else {
        let _ = sink.close(None).await;
        return;
    };
    let Some(browser_session) = answer["sessionId"].as_str().map(str::to_owned) else {
        let _ = sink.close(None).await;
        return;
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let client = {
        let mut router = lock(&router);
        if router.closed.is_some() {
            return;
        }
        router.next_client += 1;
        let client = router.next_client;
        router.owners.insert(browser_session.clone(), client);
        router.clients.insert(client, (browser_session, tx));
        client
    };
    loop {
        tokio::select! {
            incoming = source.next() => {
                let text = match incoming {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                    Some(Ok(_)) => continue,
                };
                let routed = lock(&router).route_command(client, text.as_str());
                match routed {
                    Ok(message) => send(&to_chromium, &message),
                    Err(refusal) => {
                        if sink.send(Message::text(refusal)).await.is_err() {
                            break;
                        }
                    }
                }
            }
            outgoing = rx.recv() => {
                let Some(text) = outgoing else {
                    let _ = sink.close(None).await;
                    break;
                };
                if sink.send(Message::text(text)).await.is_err() {
                    break;
                }
            }
        }
    }
    let gone = lock(&router).forget(client);
    if let Some(browser_session) = gone {
        // Detaching the browser session ends the sessions attached through it.
        let detach = json!({ "sessionId": browser_session });
        let mut router = lock(&router);
        if router.closed.is_none() {
            let id = router.next_id();
            let message =
                json!({ "id": id, "method": "Target.detachFromTarget", "params": detach });
            send(&to_chromium, &message);
        }
    }
}

/// Reads one HTTP request head and answers it: `101` (and `true`) for a WebSocket upgrade of
/// exactly the secret path, `404` for anything else. The head is read byte by byte, so nothing
/// after it is consumed before the WebSocket takes the stream over.
async fn handshake(stream: &mut TcpStream, path: &str) -> std::io::Result<bool> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() == MAX_HEAD {
            return refuse(stream, "431 Request Header Fields Too Large").await;
        }
        head.push(stream.read_u8().await?);
    }
    let head = String::from_utf8_lossy(&head);
    let mut lines = head.split("\r\n");
    let mut request = lines.next().unwrap_or_default().split(' ');
    let (method, target) = (request.next(), request.next().unwrap_or_default());
    let mut upgrade = false;
    let mut key = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("upgrade") {
            upgrade = value.eq_ignore_ascii_case("websocket");
        } else if name.eq_ignore_ascii_case("sec-websocket-key") {
            key = Some(value.to_owned());
        }
    }
    let admitted = method == Some("GET") && same_secret(target, path) && upgrade;
    let Some(key) = key.filter(|_| admitted) else {
        return refuse(stream, "404 Not Found").await;
    };
    let answer = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        derive_accept_key(key.as_bytes())
    );
    stream.write_all(answer.as_bytes()).await?;
    Ok(true)
}

async fn refuse(stream: &mut TcpStream, status: &str) -> std::io::Result<bool> {
    let answer = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    stream.write_all(answer.as_bytes()).await?;
    Ok(false)
}

/// Compares a requested path with the secret one in time that depends on their lengths only,
/// so that a stranger cannot find the token a byte at a time.
fn same_secret(requested: &str, secret: &str) -> bool {
    requested.len() == secret.len()
        && requested
            .bytes()
            .zip(secret.bytes())
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}
