//! The agent's memory: one SQLite file of notes, facts and summaries with a
//! full-text index (FTS5, porter + unicode61, BM25 ranking).
//!
//! This crate owns the schema and its migrations, storing, searching
//! (keyword and topic filters apply before ranking), listing and forgetting.
//! It must not know about the shell or the model: the `memory` command and
//! the agent's recall are built on top of it. Vector search and embedders
//! are not here yet (issue 7).

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

/// Bumped with every migration; stored in `PRAGMA user_version`.
const SCHEMA_VERSION: i32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("memory store {path}: {source}")]
    Sqlite { path: String, source: rusqlite::Error },
    #[error("memory store {path} has schema version {found}, newer than this clix ({SCHEMA_VERSION}); upgrade clix")]
    TooNew { path: String, found: i32 },
    #[error("kind must be note, fact or summary, not {0:?}")]
    Kind(String),
}

/// What a memory is.
pub const KINDS: &[&str] = &["note", "fact", "summary"];

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Memory {
    pub id: i64,
    pub topic: String,
    pub kind: String,
    pub text: String,
    /// Unix seconds.
    pub created_at: i64,
    /// `created_at` as a UTC date, `2026-11-30`.
    pub date: String,
    pub session: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    #[serde(flatten)]
    pub memory: Memory,
    /// Higher is better (negated BM25).
    pub score: f64,
    /// The matching part, matches in [brackets].
    pub snippet: String,
}

/// Filters of a search; empty strings mean "any".
#[derive(Debug, Clone, Default)]
pub struct Filter<'a> {
    pub topic: &'a str,
    /// Plain substring the memory must contain (case-insensitive).
    pub keyword: &'a str,
}

pub struct Store {
    db: Connection,
    path: String,
}

impl Store {
    /// Opens (creating and migrating) the store. Several processes may use
    /// the same file at once: WAL mode and a busy timeout.
    pub fn open(path: &Path) -> Result<Self, MemoryError> {
        let shown = path.display().to_string();
        let fail = |source| MemoryError::Sqlite { path: shown.clone(), source };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let db = Connection::open(path).map_err(fail)?;
        db.busy_timeout(Duration::from_secs(10)).map_err(fail)?;
        db.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;").map_err(fail)?;
        let version: i32 = db.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(fail)?;
        if version > SCHEMA_VERSION {
            return Err(MemoryError::TooNew { path: shown, found: version });
        }
        if version < 1 {
            db.execute_batch(
                "BEGIN;
                 CREATE TABLE memories (
                     id INTEGER PRIMARY KEY,
                     topic TEXT NOT NULL,
                     kind TEXT NOT NULL CHECK (kind IN ('note', 'fact', 'summary')),
                     text TEXT NOT NULL,
                     created_at INTEGER NOT NULL DEFAULT (unixepoch()),
                     session TEXT NOT NULL DEFAULT ''
                 );
                 CREATE INDEX memories_topic ON memories (topic, created_at);
                 CREATE VIRTUAL TABLE memories_fts USING fts5 (
                     text, content = 'memories', content_rowid = 'id', tokenize = 'porter unicode61'
                 );
                 CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
                     INSERT INTO memories_fts (rowid, text) VALUES (new.id, new.text);
                 END;
                 CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
                     INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
                 END;
                 PRAGMA user_version = 1;
                 COMMIT;",
            )
            .map_err(fail)?;
        }
        Ok(Store { db, path: path.display().to_string() })
    }

    fn fail(&self, source: rusqlite::Error) -> MemoryError {
        MemoryError::Sqlite { path: self.path.clone(), source }
    }

    /// Stores `text`; returns its id once it is durable.
    pub fn store(&self, text: &str, topic: &str, kind: &str, session: &str) -> Result<i64, MemoryError> {
        if !KINDS.contains(&kind) {
            return Err(MemoryError::Kind(kind.to_string()));
        }
        self.db
            .execute(
                "INSERT INTO memories (topic, kind, text, session) VALUES (?1, ?2, ?3, ?4)",
                params![topic, kind, text, session],
            )
            .map_err(|e| self.fail(e))?;
        Ok(self.db.last_insert_rowid())
    }

    /// The best `limit` matches of `query` by BM25, filters applied first.
    pub fn search(&self, query: &str, filter: &Filter<'_>, limit: usize) -> Result<Vec<Hit>, MemoryError> {
        let Some(fts) = fts_query(query) else { return Ok(Vec::new()) };
        let mut stmt = self
            .db
            .prepare(
                "SELECT m.id, m.topic, m.kind, m.text, m.created_at, date(m.created_at, 'unixepoch'), m.session,
                        -bm25(memories_fts) AS score,
                        snippet(memories_fts, 0, '[', ']', '…', 12)
                 FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
                 WHERE memories_fts MATCH ?1
                   AND (?2 = '' OR m.topic = ?2)
                   AND (?3 = '' OR instr(lower(m.text), lower(?3)) > 0)
                 ORDER BY bm25(memories_fts) LIMIT ?4",
            )
            .map_err(|e| self.fail(e))?;
        let rows = stmt
            .query_map(params![fts, filter.topic, filter.keyword, limit as i64], |r| {
                Ok(Hit { memory: memory(r)?, score: r.get(7)?, snippet: r.get(8)? })
            })
            .map_err(|e| self.fail(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.fail(e))
    }

    /// The newest `limit` memories, of one topic or all.
    pub fn recent(&self, limit: usize, topic: &str) -> Result<Vec<Memory>, MemoryError> {
        self.list("(?1 = '' OR topic = ?1)", topic, limit)
    }

    /// Every fact of a topic (or all), newest first.
    pub fn facts(&self, topic: &str) -> Result<Vec<Memory>, MemoryError> {
        self.list("kind = 'fact' AND (?1 = '' OR topic = ?1)", topic, usize::MAX >> 1)
    }

    fn list(&self, condition: &str, topic: &str, limit: usize) -> Result<Vec<Memory>, MemoryError> {
        let sql = format!(
            "SELECT id, topic, kind, text, created_at, date(created_at, 'unixepoch'), session FROM memories WHERE {condition} \
             ORDER BY created_at DESC, id DESC LIMIT ?2"
        );
        let mut stmt = self.db.prepare(&sql).map_err(|e| self.fail(e))?;
        let rows = stmt.query_map(params![topic, limit as i64], memory).map_err(|e| self.fail(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.fail(e))
    }

    /// Removes a memory and its index entry; `false` if there was none.
    pub fn forget(&self, id: i64) -> Result<bool, MemoryError> {
        let n = self.db.execute("DELETE FROM memories WHERE id = ?1", params![id]).map_err(|e| self.fail(e))?;
        Ok(n > 0)
    }

    pub fn get(&self, id: i64) -> Result<Option<Memory>, MemoryError> {
        self.db
            .query_row(
                "SELECT id, topic, kind, text, created_at, date(created_at, 'unixepoch'), session FROM memories WHERE id = ?1",
                params![id],
                memory,
            )
            .optional()
            .map_err(|e| self.fail(e))
    }

    /// Rows in the full-text index (for tests and `integrity` checks).
    pub fn indexed(&self, query: &str) -> Result<usize, MemoryError> {
        let Some(fts) = fts_query(query) else { return Ok(0) };
        self.db
            .query_row("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1", params![fts], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as usize)
            .map_err(|e| self.fail(e))
    }
}

fn memory(r: &rusqlite::Row<'_>) -> rusqlite::Result<Memory> {
    Ok(Memory {
        id: r.get(0)?,
        topic: r.get(1)?,
        kind: r.get(2)?,
        text: r.get(3)?,
        created_at: r.get(4)?,
        date: r.get(5)?,
        session: r.get(6)?,
    })
}

/// A user's words as an FTS5 query: each word quoted (so `-`, `:` or `"`
/// in it are never FTS syntax), any word may match; BM25 ranks documents
/// matching more and rarer words first.
fn fts_query(query: &str) -> Option<String> {
    let words: Vec<String> =
        query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| format!("\"{w}\"")).collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("memory.sqlite")).unwrap();
        (dir, s)
    }

    #[test]
    fn store_search_filter_and_forget_everywhere() {
        let (_dir, s) = store();
        let a = s.store("The deploy script needs the staging token rotated weekly", "ops", "fact", "s1").unwrap();
        let b = s.store("Deploys run from CI on every merge to main", "ops", "note", "s1").unwrap();
        let c = s.store("Deploying the docs site uses a different script", "docs", "note", "s2").unwrap();
        let hits = s.search("deploying scripts", &Filter::default(), 5).unwrap();
        let ids: Vec<i64> = hits.iter().map(|h| h.memory.id).collect();
        assert_eq!(ids.len(), 3, "porter stemming: deploy/deploys/deploying, script/scripts");
        assert!(hits[0].memory.id == a || hits[0].memory.id == c, "two-word matches rank first: {ids:?}");
        assert!(hits[0].snippet.contains('['), "{}", hits[0].snippet);
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));

        let ops = s.search("deploy", &Filter { topic: "ops", keyword: "" }, 5).unwrap();
        assert_eq!(ops.iter().map(|h| h.memory.id).collect::<Vec<_>>().len(), 2);
        let kw = s.search("deploy", &Filter { topic: "", keyword: "CI" }, 5).unwrap();
        assert_eq!(kw.iter().map(|h| h.memory.id).collect::<Vec<_>>(), vec![b]);

        assert_eq!(s.facts("ops").unwrap().iter().map(|m| m.id).collect::<Vec<_>>(), vec![a]);
        assert_eq!(s.recent(2, "").unwrap().iter().map(|m| m.id).collect::<Vec<_>>(), vec![c, b]);

        assert_eq!(s.indexed("staging").unwrap(), 1);
        assert!(s.forget(a).unwrap());
        assert!(!s.forget(a).unwrap());
        assert_eq!(s.get(a).unwrap(), None);
        assert_eq!(s.indexed("staging").unwrap(), 0, "gone from the index too");
        assert!(s.search("staging token", &Filter::default(), 5).unwrap().is_empty());
    }

    #[test]
    fn queries_are_never_fts_syntax() {
        let (_dir, s) = store();
        s.store("a NEAR(b c) \"quoted\" col:value -minus", "t", "note", "").unwrap();
        for q in ["NEAR(b", "\"", "col:value", "-minus", "*", "AND OR NOT", ""] {
            assert!(s.search(q, &Filter::default(), 5).is_ok(), "{q}");
        }
        assert_eq!(s.search("col:value", &Filter::default(), 5).unwrap().len(), 1);
    }

    #[test]
    fn bad_kind_and_reopen_keep_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.sqlite");
        let s = Store::open(&path).unwrap();
        assert!(matches!(s.store("x", "t", "memo", ""), Err(MemoryError::Kind(_))));
        let id = s.store("kept across opens", "t", "note", "").unwrap();
        drop(s);
        let again = Store::open(&path).unwrap();
        assert_eq!(again.get(id).unwrap().unwrap().text, "kept across opens");
    }
}
