//! The shared records: rate-limit windows, locks, audit lines and saved
//! documents, on one connection of the process.

use std::time::Duration;

use postgres::Client;

use crate::conn::{classify, close};
use crate::schema::Component;
use crate::{Connection, StoreError};

/// The `shared` component's schema.
///
/// - `clix_rate_windows`: per limited name (a hub tool), the times (the
///   server's clock, milliseconds) of the calls in the last window, so the
///   limit is a sliding window as on one machine, whoever's clock is off.
/// - `clix_audit`: one row per audit line, the whole line as JSON beside
///   the envelope's fields a reader filters by.
/// - `clix_documents`: a JSON document per kind and key (a plan's
///   checkpoint, an eval run's results), replaced as a whole when saved.
pub const SCHEMA: Component = Component {
    name: "shared",
    steps: &["
    CREATE TABLE clix_rate_windows (
        name TEXT PRIMARY KEY,
        calls BIGINT[] NOT NULL DEFAULT '{}'
    );
    CREATE TABLE clix_audit (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        ts_ms BIGINT NOT NULL,
        kind TEXT NOT NULL,
        session TEXT NOT NULL,
        line JSONB NOT NULL
    );
    CREATE INDEX clix_audit_kind ON clix_audit (kind, id);
    CREATE TABLE clix_documents (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        saved_ms BIGINT NOT NULL,
        body JSONB NOT NULL,
        PRIMARY KEY (kind, key)
    );
"],
};

/// The server's clock in Unix milliseconds: one clock for every replica.
const NOW_MS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// The shared records of one database, for one process.
pub struct SharedStore {
    connection: Connection,
}

/// Shows the store's URL, password as `***`.
impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SharedStore").field(&self.shown()).finish()
    }
}

/// One audit line as stored: the envelope's fields and the whole line.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRow {
    /// When it was written, Unix milliseconds.
    pub ts_ms: i64,
    /// Its kind (`hub`, `os`, …).
    pub kind: String,
    /// The session that wrote it.
    pub session: String,
    /// The whole line, JSON.
    pub line: String,
}

impl SharedStore {
    /// Connects to the database at `url`, which must hold this clix's
    /// `shared` schema (else an error saying to run `clix storage migrate`).
    pub fn connect(url: &str) -> Result<SharedStore, StoreError> {
        let connection = Connection::open(url)?;
        SCHEMA.check(&connection)?;
        Ok(SharedStore { connection })
    }

    /// Brings the database at `url` to this clix's `shared` schema;
    /// (version before, after).
    pub fn migrate(url: &str) -> Result<(i32, i32), StoreError> {
        SCHEMA.migrate(&Connection::open(url)?, |_| Ok::<(), StoreError>(()))
    }

    /// The store as messages name it (password as `***`).
    pub fn shown(&self) -> &str {
        self.connection.shown()
    }

    /// Counts a call of `name` against `per_minute` in the sliding minute
    /// before now (the server's clock): `Ok(Err(wait))` when the window
    /// is full, saying when its oldest call leaves it. The count and the
    /// new call are one step for every process on every machine (the row
    /// is locked between them).
    pub fn take_call_slot(&self, name: &str, per_minute: u32) -> Result<Result<(), Duration>, StoreError> {
        let limit = usize::try_from(per_minute).unwrap_or(usize::MAX);
        self.connection.with(|client| {
            let mut tx = client.transaction()?;
            tx.execute("INSERT INTO clix_rate_windows (name) VALUES ($1) ON CONFLICT DO NOTHING", &[&name])?;
            let row = tx.query_one(
                &format!("SELECT calls, {NOW_MS} FROM clix_rate_windows WHERE name = $1 FOR UPDATE"),
                &[&name],
            )?;
            let (calls, now): (Vec<i64>, i64) = (row.get(0), row.get(1));
            let mut kept: Vec<i64> = calls.into_iter().filter(|&t| t > now - WINDOW_MS).collect();
            let slot = if kept.len() < limit {
                kept.push(now);
                Ok(())
            } else {
                let oldest = kept.iter().copied().min().unwrap_or(now);
                Err(Duration::from_millis(u64::try_from(oldest + WINDOW_MS - now).unwrap_or(0).max(1)))
            };
            tx.execute("UPDATE clix_rate_windows SET calls = $2 WHERE name = $1", &[&name, &kept])?;
            tx.commit()?;
            Ok(slot)
        })
    }

    /// A connection of its own for taking a lock ([`LockSession::try_lock`]).
    pub fn lock_session(&self) -> Result<LockSession, StoreError> {
        let client = self.connection.open_another()?;
        Ok(LockSession { client: Some(client), shown: self.shown().to_string() })
    }

    /// Appends one audit line.
    pub fn append_audit(&self, ts_ms: i64, kind: &str, session: &str, line: &str) -> Result<(), StoreError> {
        self.connection.with(|client| {
            client.execute(
                "INSERT INTO clix_audit (ts_ms, kind, session, line) VALUES ($1, $2, $3, $4::text::jsonb)",
                &[&ts_ms, &kind, &session, &line],
            )?;
            Ok(())
        })
    }

    /// The audit lines of `kind`, oldest first.
    pub fn audit(&self, kind: &str) -> Result<Vec<AuditRow>, StoreError> {
        self.connection.with(|client| {
            let rows = client.query(
                "SELECT ts_ms, kind, session, line::text FROM clix_audit WHERE kind = $1 ORDER BY id",
                &[&kind],
            )?;
            Ok(rows
                .iter()
                .map(|r| AuditRow { ts_ms: r.get(0), kind: r.get(1), session: r.get(2), line: r.get(3) })
                .collect())
        })
    }

    /// Saves `body` (JSON) as the document `key` of `kind`, replacing it.
    pub fn save_document(&self, kind: &str, key: &str, body: &str) -> Result<(), StoreError> {
        self.connection.with(|client| {
            client.execute(
                &format!(
                    "INSERT INTO clix_documents (kind, key, saved_ms, body) VALUES ($1, $2, {NOW_MS}, $3::text::jsonb)
                     ON CONFLICT (kind, key) DO UPDATE SET saved_ms = excluded.saved_ms, body = excluded.body"
                ),
                &[&kind, &key, &body],
            )?;
            Ok(())
        })
    }

    /// The document `key` of `kind`, JSON.
    pub fn document(&self, kind: &str, key: &str) -> Result<Option<String>, StoreError> {
        self.connection.with(|client| {
            let row = client
                .query_opt("SELECT body::text FROM clix_documents WHERE kind = $1 AND key = $2", &[&kind, &key])?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    /// The keys of `kind`'s documents, sorted.
    pub fn document_keys(&self, kind: &str) -> Result<Vec<String>, StoreError> {
        self.connection.with(|client| {
            let rows = client.query("SELECT key FROM clix_documents WHERE kind = $1 ORDER BY key", &[&kind])?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }
}

/// A rate limit counts calls per this window, milliseconds.
const WINDOW_MS: i64 = 60_000;

/// A connection that may hold one lock (a PostgreSQL session-level
/// advisory lock): the lock lasts until the session is dropped, or until
/// the process dies and the server sees the connection end.
pub struct LockSession {
    /// `None` only while being dropped.
    client: Option<Client>,
    shown: String,
}

impl LockSession {
    /// Takes the lock on `name` within `scope` if it is free: whether it
    /// was. Never waits: a caller that waits sleeps between tries.
    pub fn try_lock(&mut self, scope: &str, name: &str) -> Result<bool, StoreError> {
        let shown = self.shown.clone();
        let Some(client) = self.client.as_mut() else {
            return Err(StoreError::Unreachable { url: shown, message: "the lock's connection is closed".into() });
        };
        crate::off_runtime(|| {
            client
                .query_one("SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))", &[&scope, &name])
                .map(|r| r.get(0))
                .map_err(|e| classify(&shown, &e))
        })
    }
}

impl Drop for LockSession {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            close(client);
        }
    }
}
