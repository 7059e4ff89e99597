//! The queue's schema, applied in order, each migration once.

/// Every migration, by version: the schema a database at version `n` has is the first `n`.
pub const MIGRATIONS: [(i32, &str); 1] = [(1, include_str!("../migrations/0001_queue.sql"))];

/// The key of the advisory lock migrations are applied under.
const MIGRATION_LOCK: i64 = 0x6375_615f_7175_6575; // "cua_queu"

pub(crate) async fn run(client: &mut deadpool_postgres::Object) -> Result<(), crate::QueueError> {
    let transaction = client.transaction().await?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    transaction
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS cua_schema_migrations ( \
               version integer PRIMARY KEY, \
               applied_at timestamptz NOT NULL DEFAULT clock_timestamp())",
        )
        .await?;
    let applied: i32 = transaction
        .query_one(
            "SELECT coalesce(max(version), 0) FROM cua_schema_migrations",
            &[],
        )
        .await?
        .get(0);
    let known = MIGRATIONS.last().map_or(0, |(version, _)| *version);
    if applied > known {
        return Err(crate::QueueError::NewerSchema {
            found: applied,
            known,
        });
    }
    for (version, sql) in MIGRATIONS {
        if version <= applied {
            continue;
        }
        transaction.batch_execute(sql).await?;
        transaction
            .execute(
                "INSERT INTO cua_schema_migrations (version) VALUES ($1)",
                &[&version],
            )
            .await?;
    }
    transaction.commit().await?;
    Ok(())
}
