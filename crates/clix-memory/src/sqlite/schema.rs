//! The SQLite file itself: opening it for several processes at once
//! (WAL, busy timeout), the SQL functions and extensions every connection
//! gets, and the schema with its migrations.

use std::path::Path;
use std::sync::Once;
use std::time::{Duration, Instant};

use rusqlite::functions::FunctionFlags;
use rusqlite::{Connection, ErrorCode, TransactionBehavior};

/// Bumped with every migration; stored in `PRAGMA user_version`.
pub(crate) const SCHEMA_VERSION: i32 = 4;

/// How long a connection waits for another one's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens `path` ready for use: extensions and functions registered, WAL,
/// migrated. Returns the file's schema version (newer than this clix's
/// when another, newer clix wrote it).
pub(crate) fn connect(path: &Path) -> rusqlite::Result<(Connection, i32)> {
    register_sqlite_vec();
    let db = Connection::open(path)?;
    db.busy_timeout(BUSY_TIMEOUT)?;
    // The query planner's stability guarantee: a plan does not depend on
    // the values bound to it. Without it this build of SQLite (STAT4)
    // prepares some cached statements again at every new binding (the
    // postings' block lookups, the topic number's): 12% of a store's time.
    db.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    register_contains(&db)?;
    wal(&db)?;
    db.execute_batch("PRAGMA synchronous = NORMAL;")?;
    let version = migrate(&db)?;
    Ok((db, version))
}

/// sqlite-vec is compiled in and registered for every connection of the
/// process, embedder or not: the triggers that keep vector tables in step
/// on `forget` need the `vec0` module even where no embedder is configured.
fn register_sqlite_vec() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: sqlite3_vec_init has the signature of an SQLite extension
        // entry point; sqlite3_auto_extension expects exactly that.
        unsafe {
            type Entry = unsafe extern "C" fn(
                *mut rusqlite::ffi::sqlite3,
                *mut *mut std::os::raw::c_char,
                *const rusqlite::ffi::sqlite3_api_routines,
            ) -> std::os::raw::c_int;
            let entry: Entry = std::mem::transmute(sqlite_vec::sqlite3_vec_init as *const ());
            rusqlite::ffi::sqlite3_auto_extension(Some(entry));
        }
    });
}

/// `clix_contains(text, keyword)`: whether `text` contains `keyword`,
/// ignoring case beyond ASCII (SQLite's `lower()` folds ASCII only).
fn register_contains(db: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    db.create_scalar_function("clix_contains", 2, flags, |ctx| {
        let text = ctx.get_raw(0).as_str().unwrap_or_default();
        let keyword = ctx.get_raw(1).as_str().unwrap_or_default();
        Ok(text.to_lowercase().contains(&keyword.to_lowercase()))
    })
}

/// Puts the file in WAL mode. Switching a new file takes a lock SQLite does
/// not wait for (the busy timeout does not apply: two processes opening it
/// at once would see "database is locked"), so a busy answer is retried
/// with a short backoff, for up to the busy timeout.
fn wal(db: &Connection) -> rusqlite::Result<()> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        let mode = db.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0)).and_then(|mode| {
            if mode.eq_ignore_ascii_case("wal") {
                Ok(mode)
            } else {
                db.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            }
        });
        match mode {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == ErrorCode::DatabaseBusy && Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            result => return result.map(|_| ()),
        }
    }
}

/// The schema, one step per version: step n brings a file from version
/// n - 1 to n.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    "CREATE TABLE IF NOT EXISTS memories (
         id INTEGER PRIMARY KEY,
         topic TEXT NOT NULL,
         kind TEXT NOT NULL CHECK (kind IN ('note', 'fact', 'summary')),
         text TEXT NOT NULL,
         created_at INTEGER NOT NULL DEFAULT (unixepoch()),
         session TEXT NOT NULL DEFAULT ''
     );
     CREATE INDEX IF NOT EXISTS memories_topic ON memories (topic, created_at);
     CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (
         text, content = 'memories', content_rowid = 'id', tokenize = 'porter unicode61'
     );
     CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
         INSERT INTO memories_fts (rowid, text) VALUES (new.id, new.text);
     END;
     CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
         INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
     END;",
    // Vector spaces: one vec0 table per (embedder, dimension), created
    // when first needed, and which memories each space holds.
    "CREATE TABLE IF NOT EXISTS embedders (
         id INTEGER PRIMARY KEY,
         key TEXT NOT NULL,
         dim INTEGER NOT NULL,
         created_at INTEGER NOT NULL DEFAULT (unixepoch()),
         UNIQUE (key, dim)
     );
     CREATE TABLE IF NOT EXISTS embedded (
         embedder INTEGER NOT NULL,
         id INTEGER NOT NULL,
         PRIMARY KEY (embedder, id)
     ) WITHOUT ROWID;
     CREATE INDEX IF NOT EXISTS embedded_id ON embedded (id);
     CREATE TRIGGER IF NOT EXISTS memories_embedded_ad AFTER DELETE ON memories BEGIN
         DELETE FROM embedded WHERE id = old.id;
     END;",
    // Memories a space has no vector for (rejected by the embedder, or a
    // zero vector): found by their words only, not embedded again.
    "CREATE TABLE IF NOT EXISTS embed_failed (
         embedder INTEGER NOT NULL,
         id INTEGER NOT NULL,
         PRIMARY KEY (embedder, id)
     ) WITHOUT ROWID;
     CREATE INDEX IF NOT EXISTS embed_failed_id ON embed_failed (id);
     CREATE TRIGGER IF NOT EXISTS memories_embed_failed_ad AFTER DELETE ON memories BEGIN
         DELETE FROM embed_failed WHERE id = old.id;
     END;",
    // clix's own postings beside FTS5 (`postings.rs`), filled from the
    // memories already there once the tables exist (`migrate`).
    "CREATE TABLE IF NOT EXISTS ft_topics (
         id INTEGER PRIMARY KEY,
         topic TEXT NOT NULL
     );
     CREATE INDEX IF NOT EXISTS ft_topics_topic ON ft_topics (topic);
     CREATE TABLE IF NOT EXISTS ft_blocks (
         term BLOB NOT NULL,
         first INTEGER NOT NULL,
         last INTEGER NOT NULL,
         n INTEGER NOT NULL,
         data BLOB NOT NULL,
         PRIMARY KEY (term, first)
     ) WITHOUT ROWID;
     CREATE TABLE IF NOT EXISTS ft_pending (
         id INTEGER PRIMARY KEY,
         topic INTEGER NOT NULL,
         len INTEGER NOT NULL,
         terms BLOB NOT NULL
     );
     CREATE TABLE IF NOT EXISTS ft_stats (
         id INTEGER PRIMARY KEY CHECK (id = 1),
         docs INTEGER NOT NULL,
         tokens INTEGER NOT NULL
     );",
];

/// The step whose tables are filled from the memories already stored.
const POSTINGS_STEP: i32 = 4;

/// Brings the file to [`SCHEMA_VERSION`], each step in its own write
/// transaction; returns the version found (newer than this clix's: left
/// alone). The version is read again once the transaction holds the write
/// lock: another process may have migrated the file meanwhile, and its
/// steps are not run twice (nor its newer version overwritten).
fn migrate(db: &Connection) -> rusqlite::Result<i32> {
    let version = |db: &Connection| db.query_row("PRAGMA user_version", [], |r| r.get::<_, i32>(0));
    let mut found = version(db)?;
    for (step, sql) in (1..).zip(MIGRATIONS) {
        if found >= step {
            continue;
        }
        let tx = rusqlite::Transaction::new_unchecked(db, TransactionBehavior::Immediate)?;
        found = version(&tx)?;
        if found < step {
            tx.execute_batch(sql)?;
            if step == POSTINGS_STEP {
                super::postings::rebuild(&tx)?;
            }
            tx.pragma_update(None, "user_version", step)?;
            found = step;
        }
        tx.commit()?;
    }
    Ok(found)
}

/// The schema version of the file at `path` (0 for a new file), read
/// without migrating it.
pub(crate) fn version_of(path: &Path) -> rusqlite::Result<i32> {
    let db = Connection::open(path)?;
    db.busy_timeout(BUSY_TIMEOUT)?;
    db.query_row("PRAGMA user_version", [], |r| r.get(0))
}
