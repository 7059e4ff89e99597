//! A throwaway database on the test server (`scripts/postgres.sh up`), dropped when the test
//! ends. Tests never skip without a server: they fail, saying how to start one.

use std::sync::atomic::{AtomicU32, Ordering};

/// The URL of the test server's `postgres` database as the `cua` role:
/// `CUA_TEST_POSTGRES_URL`, else the file `scripts/postgres.sh up` writes in its state
/// directory (`CUA_POSTGRES_STATE`, by default the workspace's `target/postgres`).
pub fn server_url() -> String {
    if let Ok(url) = std::env::var("CUA_TEST_POSTGRES_URL") {
        return url;
    }
    let state = std::env::var("CUA_POSTGRES_STATE").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/postgres").to_owned()
    });
    let file = std::path::Path::new(&state).join("url");
    match std::fs::read_to_string(&file) {
        Ok(url) => url.trim().to_owned(),
        Err(error) => panic!(
            "no test PostgreSQL: {} cannot be read ({error}); run `scripts/postgres.sh up` \
             (`make test` does), or set CUA_TEST_POSTGRES_URL",
            file.display()
        ),
    }
}

/// A database of its own for one test, dropped (with its connections) when this is dropped.
pub struct TestDatabase {
    /// Its URL, for `Queue::connect` or `--queue`.
    pub url: String,
    name: String,
    server: String,
}

impl TestDatabase {
    /// Creates `cua_test_<pid>_<n>` on the test server.
    pub fn create() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let server = server_url();
        let name = format!(
            "cua_test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        admin(
            &server,
            format!("DROP DATABASE IF EXISTS {name} WITH (FORCE); CREATE DATABASE {name}"),
        );
        let (base, _) = server
            .rsplit_once('/')
            .unwrap_or_else(|| panic!("the test server's URL names no database: {server}"));
        Self {
            url: format!("{base}/{name}"),
            name,
            server,
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        admin(
            &self.server,
            format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

/// Runs `sql` on the server's `postgres` database, on a thread of its own so it works from a
/// test's runtime as well as outside one.
fn admin(server: &str, sql: String) {
    let server = server.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|error| panic!("a runtime: {error}"));
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&server, tokio_postgres::NoTls)
                .await
                .unwrap_or_else(|error| {
                    panic!(
                        "the test PostgreSQL does not answer ({error}); run `scripts/postgres.sh up`"
                    )
                });
            tokio::spawn(connection);
            for statement in sql.split("; ") {
                client
                    .batch_execute(statement)
                    .await
                    .unwrap_or_else(|error| panic!("{statement}: {error}"));
            }
        });
    })
    .join()
    .unwrap_or_else(|_| panic!("the test database could not be set up"));
}
