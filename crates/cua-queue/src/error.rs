//! What can go wrong with the queue, each naming what to do.

/// A queue operation that did not happen.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error(
        "the queue URL is not one PostgreSQL understands ({reason}); give postgres://user@host:port/database"
    )]
    Url { reason: String },

    #[error(
        "the queue's database cannot be reached: {reason}; check that PostgreSQL runs and the URL (or CUA_QUEUE_URL) names it"
    )]
    Unavailable { reason: String },

    #[error("the queue's database refused, or answered what cua cannot read: {reason}")]
    Database { reason: String },

    #[error("batch `{batch}` was submitted already; a batch is submitted once (pass another --id)")]
    BatchExists { batch: String },

    #[error("no batch `{batch}` in the queue")]
    NoBatch { batch: String },

    #[error(
        "refused to {what} for row {row} of batch {batch} at epoch {epoch}: {now}; this worker no \
         longer holds the row, and whatever it would write is another worker's to write"
    )]
    Fenced {
        what: String,
        batch: String,
        row: u32,
        epoch: u64,
        now: String,
    },

    #[error("the queue holds {what} that cannot be read ({reason}); it was not written by cua")]
    Corrupt { what: String, reason: String },

    #[error(
        "the queue's database is at schema version {found}, newer than this cua knows ({known}); \
         upgrade cua before running it against this queue"
    )]
    NewerSchema { found: i32, known: i32 },
}

impl QueueError {
    pub(crate) fn from_pool(error: deadpool_postgres::PoolError) -> Self {
        Self::Unavailable {
            reason: match error {
                deadpool_postgres::PoolError::Backend(error) => describe(&error),
                other => other.to_string(),
            },
        }
    }

    /// Whether it is the database that could not be reached (exit 69), not a refusal.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }
}

impl From<tokio_postgres::Error> for QueueError {
    fn from(error: tokio_postgres::Error) -> Self {
        let reason = describe(&error);
        let unavailable = match error.as_db_error() {
            // Connection exceptions, too many connections, a server shutting down or starting.
            Some(db) => {
                let code = db.code().code();
                code.starts_with("08") || code.starts_with("53") || code.starts_with("57P")
            }
            None => {
                error.is_closed()
                    || std::error::Error::source(&error)
                        .is_some_and(|source| source.is::<std::io::Error>())
                    || reason.contains("timed out")
            }
        };
        if unavailable {
            Self::Unavailable { reason }
        } else {
            Self::Database { reason }
        }
    }
}

/// The error with its source: tokio-postgres puts the useful part (the server's message, the
/// refused connection) in the source.
fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => match std::error::Error::source(error) {
            Some(source) => format!("{error}: {source}"),
            None => error.to_string(),
        },
    }
}
