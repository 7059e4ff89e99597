//! MemberDesk: the deliberately awkward legacy back-office web app that every cua test, demo,
//! eval and benchmark runs against. Its UI contract is `CONTRACT.md` beside this crate.
//!
//! The app is an axum server over one in-memory state. It is deterministic: no randomness, no
//! clock (everything is "as of" [`AS_OF`]), sequential session tokens, references and
//! confirmation numbers. Both [`Variant`]s are served by the same code from a per-variant table
//! of labels, field names and classes. Faults are armed through an unlinked control surface
//! (`/_control/*`) or in-process through [`FixtureHandle`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), memberdesk::FixtureError> {
//! let fixture = memberdesk::serve(memberdesk::FixtureConfig::loopback(
//!     memberdesk::Variant::FirstValley,
//! ))
//! .await?;
//! println!("{}", fixture.base_url());
//! fixture.shutdown().await
//! # }
//! ```
//!
//! Architecture invariant: this crate depends on no other cua crate; cua reaches it only over
//! HTTP, like any legacy app.

mod app;
mod client_reference;
mod error;
mod fault;
mod html;
mod money;
mod pages;
mod signature;
mod state;
mod variant;

use std::net::{Ipv4Addr, SocketAddr};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use client_reference::ClientReference;
pub use error::FixtureError;
pub use fault::{Fault, FaultCount};
pub use money::Money;
pub use signature::{PAD_ORIGIN, PAD_SIZE, SIGN_BOX, SIGNATURE_ON_FILE};
pub use state::{
    AS_OF, Account, AccountStatus, AccountType, FixtureHandle, MINIMUM_DEPOSIT, Member, StateView,
    TransferRecord,
};
pub use variant::Variant;

/// The operator ID that signs on.
pub const OPERATOR_ID: &str = "teller01";
/// The password that signs on. Not a secret: it is in the contract.
pub const OPERATOR_PASSWORD: &str = "not-a-real-password";
/// The session cookie's name.
pub const SESSION_COOKIE: &str = app::SESSION_COOKIE;
/// The bearer token `/api` accepts in place of a session.
pub const API_TOKEN: &str = app::API_TOKEN;

/// How to start a fixture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixtureConfig {
    /// Which tenant to render as.
    pub variant: Variant,
    /// Where to listen; port 0 picks a free port.
    pub bind: SocketAddr,
}

impl FixtureConfig {
    /// Listens on 127.0.0.1 on a free port.
    pub fn loopback(variant: Variant) -> Self {
        Self {
            variant,
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        }
    }
}

/// The app, not yet listening: a state and the router over it, for embedding in another
/// server or serving with [`serve`].
#[derive(Clone, Debug)]
pub struct MemberDesk {
    handle: FixtureHandle,
}

impl MemberDesk {
    /// A fresh app with the seeded data and no faults armed.
    pub fn new(variant: Variant) -> Self {
        Self {
            handle: FixtureHandle::new(variant),
        }
    }

    /// The handle on this app's state.
    pub fn handle(&self) -> &FixtureHandle {
        &self.handle
    }

    /// The axum router serving every route of the contract.
    pub fn router(&self) -> axum::Router {
        app::router(self.handle.clone())
    }
}

/// A fixture serving in the background. Dropping it stops the server too, without waiting.
#[derive(Debug)]
pub struct RunningFixture {
    addr: SocketAddr,
    handle: FixtureHandle,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl RunningFixture {
    /// The address actually bound (the real port when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://host:port`, with an unspecified bind address (`0.0.0.0`, `::`) shown as
    /// loopback so the URL can be opened.
    pub fn base_url(&self) -> String {
        let mut addr = self.addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr {
                SocketAddr::V4(_) => Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        format!("http://{addr}")
    }

    /// The variant being served.
    pub fn variant(&self) -> Variant {
        self.handle.variant()
    }

    /// The handle on the served state: balances, faults, transfers.
    pub fn handle(&self) -> &FixtureHandle {
        &self.handle
    }

    /// Stops accepting connections, lets in-flight requests finish, and waits for the server.
    pub async fn shutdown(mut self) -> Result<(), FixtureError> {
        if let Some(shutdown) = self.shutdown.take() {
            // The server may already have stopped on its own; then there is nobody to tell.
            let _ = shutdown.send(());
        }
        match (&mut self.task).await {
            Ok(result) => result.map_err(FixtureError::Serve),
            Err(error) => Err(FixtureError::Task(error)),
        }
    }
}

/// Binds `config.bind` and serves MemberDesk in a background task until
/// [`RunningFixture::shutdown`] or drop.
pub async fn serve(config: FixtureConfig) -> Result<RunningFixture, FixtureError> {
    let desk = MemberDesk::new(config.variant);
    let bind_error = |source| FixtureError::Bind {
        addr: config.bind,
        source,
    };
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .map_err(bind_error)?;
    let addr = listener.local_addr().map_err(bind_error)?;
    let (shutdown, stopped) = oneshot::channel::<()>();
    let router = desk.router();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                // Either an explicit shutdown or the sender being dropped stops the server.
                let _ = stopped.await;
            })
            .await
    });
    Ok(RunningFixture {
        addr,
        handle: desk.handle,
        shutdown: Some(shutdown),
        task,
    })
}
