//! The SQLite backend: one file, shared by several processes (WAL, busy
//! timeout). Full text in FTS5 (porter + unicode61, BM25), vectors in
//! sqlite-vec `vec0` tables (`vectors.rs`), the schema and its migrations
//! in `schema.rs` (`PRAGMA user_version`, run on open).

mod coarse;
mod schema;
pub(crate) mod vectors;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::backend::{Backend, NewMemory, Pending, Rankings, Scope, Space, Target, at_once};
use crate::store::{Filter, Hit, Memory, MemoryError};
use crate::vectors::Embedding;

pub(crate) use schema::SCHEMA_VERSION;

/// One memory file.
pub(crate) struct Sqlite {
    db: Connection,
    path: String,
    file: PathBuf,
    /// A second connection, opened on the first hybrid search, for the
    /// vector KNN to run while `db` runs the full-text query (WAL lets
    /// both read at once). Taken out while in use: a connection may move
    /// to another thread, but not be shared with one.
    reader: Mutex<Option<Connection>>,
}

impl Sqlite {
    /// Opens (creating and migrating) the file.
    pub(crate) fn open(path: &Path) -> Result<Self, MemoryError> {
        let shown = path.display().to_string();
        let fail = |source| MemoryError::Sqlite { path: shown.clone(), source };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let (db, version) = schema::connect(path).map_err(fail)?;
        if version > SCHEMA_VERSION {
            return Err(MemoryError::TooNew { path: shown, found: version, wanted: SCHEMA_VERSION });
        }
        Ok(Sqlite { db, path: shown, file: path.to_path_buf(), reader: Mutex::new(None) })
    }

    /// The schema version of the file at `path`, after bringing it to this
    /// clix's (opening does).
    pub(crate) fn migrate(path: &Path) -> Result<(i32, i32), MemoryError> {
        let shown = path.display().to_string();
        let fail = |source| MemoryError::Sqlite { path: shown.clone(), source };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let before = schema::version_of(path).map_err(fail)?;
        Self::open(path)?;
        Ok((before, SCHEMA_VERSION))
    }

    fn fail(&self, source: rusqlite::Error) -> MemoryError {
        MemoryError::Sqlite { path: self.path.clone(), source }
    }
}

/// A scope as `json_each` reads it: the JSON array of topics, or `''` for every topic.
fn scope_json(scope: Scope<'_>) -> String {
    scope.map(|topics| serde_json::to_string(topics).unwrap_or_default()).unwrap_or_default()
}

/// A memory's topic is in the store's scope (`?3`: the JSON array, or '').
const IN_SCOPE: &str = "(?3 = '' OR topic IN (SELECT value FROM json_each(?3)))";

/// The columns of a [`Memory`], in [`memory`]'s order.
const COLUMNS: &str = "id, topic, kind, text, created_at, date(created_at, 'unixepoch'), session";

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

impl Backend for Sqlite {
    fn shown(&self) -> &str {
        &self.path
    }

    fn insert(
        &self,
        new: &NewMemory<'_>,
        embedding: Option<(Target<'_>, &Embedding)>,
    ) -> Result<(i64, Option<Space>), MemoryError> {
        let run = || -> rusqlite::Result<(i64, Option<Space>)> {
            let tx = rusqlite::Transaction::new_unchecked(&self.db, TransactionBehavior::Immediate)?;
            tx.execute(
                "INSERT INTO memories (topic, kind, text, session) VALUES (?1, ?2, ?3, ?4)",
                params![new.topic, new.kind, new.text, new.session],
            )?;
            let id = tx.last_insert_rowid();
            let space = match embedding {
                Some((target, embedding)) => Some(vectors::save(&tx, target, id, new.topic, embedding)?),
                None => None,
            };
            tx.commit()?;
            Ok((id, space))
        };
        run().map_err(|e| self.fail(e))
    }

    fn newest_space(&self, key: &str) -> Result<Option<Space>, MemoryError> {
        vectors::newest_space(&self.db, key).map_err(|e| self.fail(e))
    }

    /// `PRAGMA data_version`: it changes only when another connection commits.
    fn mark(&self) -> Result<String, MemoryError> {
        self.db
            .query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0))
            .map(|v| v.to_string())
            .map_err(|e| self.fail(e))
    }

    /// Counts over the whole file (`since` is not used: the counts are cheap).
    fn missing_count(&self, space: Option<&Space>, _since: Option<&str>) -> Result<usize, MemoryError> {
        let run = || -> rusqlite::Result<usize> {
            let total: i64 = self.db.query_row("SELECT count(*) FROM memories", [], |r| r.get(0))?;
            let have: i64 = match space {
                Some(s) => self.db.query_row(
                    "SELECT (SELECT count(*) FROM embedded WHERE embedder = ?1)
                          + (SELECT count(*) FROM embed_failed WHERE embedder = ?1)",
                    params![s.id],
                    |r| r.get(0),
                )?,
                None => 0,
            };
            Ok((total - have).max(0) as usize)
        };
        run().map_err(|e| self.fail(e))
    }

    fn missing(&self, space: Option<&Space>, _since: Option<&str>, limit: usize) -> Result<Vec<Pending>, MemoryError> {
        let run = || -> rusqlite::Result<Vec<Pending>> {
            let mut stmt = self.db.prepare_cached(
                "SELECT m.id, m.topic, m.text FROM memories m
                 WHERE NOT EXISTS (SELECT 1 FROM embedded e WHERE e.embedder = ?1 AND e.id = m.id)
                   AND NOT EXISTS (SELECT 1 FROM embed_failed f WHERE f.embedder = ?1 AND f.id = m.id)
                 ORDER BY m.id LIMIT ?2",
            )?;
            let space_id = space.map_or(-1, |s| s.id);
            stmt.query_map(params![space_id, limit as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect()
        };
        run().map_err(|e| self.fail(e))
    }

    fn save_embeddings(
        &self,
        target: Target<'_>,
        batch: &[(&Pending, &Embedding)],
    ) -> Result<Option<Space>, MemoryError> {
        let run = || -> rusqlite::Result<Option<Space>> {
            let tx = rusqlite::Transaction::new_unchecked(&self.db, TransactionBehavior::Immediate)?;
            let mut used: Option<Space> = None;
            for ((id, topic, _), embedding) in batch {
                let known = used.as_ref().or(target.known);
                let space = vectors::space_for(&tx, Target { key: target.key, known }, embedding.dim())?;
                // Another process may have embedded or forgotten it meanwhile.
                let wanted: bool = tx.query_row(
                    "SELECT EXISTS (SELECT 1 FROM memories WHERE id = ?1)
                        AND NOT EXISTS (SELECT 1 FROM embedded WHERE embedder = ?2 AND id = ?1)
                        AND NOT EXISTS (SELECT 1 FROM embed_failed WHERE embedder = ?2 AND id = ?1)",
                    params![id, space.id],
                    |r| r.get(0),
                )?;
                if wanted {
                    vectors::save(&tx, Target { key: target.key, known: Some(&space) }, *id, topic, embedding)?;
                }
                used = Some(space);
            }
            tx.commit()?;
            Ok(used)
        };
        run().map_err(|e| self.fail(e))
    }

    fn knn(
        &self,
        space: &Space,
        query: &[f32],
        filter: &Filter<'_>,
        scope: Scope<'_>,
        k: usize,
    ) -> Result<Vec<(i64, f64)>, MemoryError> {
        vectors::knn(&self.db, space, query, filter, scope, k).map_err(|e| self.fail(e))
    }

    /// BM25 over FTS5, filters applied inside the query. Ranked first by
    /// id and score alone, then the best `limit` read with their snippets:
    /// in one query SQLite's sorter would hold every matching memory's
    /// columns and snippet, and FTS5 would make a snippet for each. Without
    /// a filter the ranking does not join the memories at all.
    fn full_text(
        &self,
        query: &str,
        filter: &Filter<'_>,
        scope: Scope<'_>,
        limit: usize,
    ) -> Result<Vec<Hit>, MemoryError> {
        let run = || -> rusqlite::Result<Vec<Hit>> {
            // One snapshot for both steps: a memory forgotten between them
            // is neither ranked nor shown.
            let tx = rusqlite::Transaction::new_unchecked(&self.db, TransactionBehavior::Deferred)?;
            let scope = scope_json(scope);
            let ranked: Vec<(i64, f64)> = if filter.topic.is_empty() && filter.keyword.is_empty() && scope.is_empty() {
                let mut stmt = tx.prepare_cached(
                    "SELECT rowid, -bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ?1
                     ORDER BY bm25(memories_fts) LIMIT ?2",
                )?;
                stmt.query_map(params![query, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?
            } else {
                let mut stmt = tx.prepare_cached(
                    "SELECT m.id, -bm25(memories_fts)
                     FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
                     WHERE memories_fts MATCH ?1
                       AND (?2 = '' OR m.topic = ?2)
                       AND (?3 = '' OR clix_contains(m.text, ?3))
                       AND (?5 = '' OR m.topic IN (SELECT value FROM json_each(?5)))
                     ORDER BY bm25(memories_fts) LIMIT ?4",
                )?;
                stmt.query_map(params![query, filter.topic, filter.keyword, limit as i64, scope], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?
                .collect::<rusqlite::Result<_>>()?
            };
            let mut shown = tx.prepare_cached(
                "SELECT m.id, m.topic, m.kind, m.text, m.created_at, date(m.created_at, 'unixepoch'), m.session,
                        snippet(memories_fts, 0, '[', ']', '…', 12)
                 FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
                 WHERE memories_fts MATCH ?1 AND memories_fts.rowid = ?2",
            )?;
            let mut hits = Vec::with_capacity(ranked.len());
            for (id, score) in ranked {
                let hit = shown.query_row(params![query, id], |r| {
                    Ok(Hit { memory: memory(r)?, score, bm25: Some(score), similarity: None, snippet: r.get(7)? })
                });
                hits.push(hit?);
            }
            Ok(hits)
        };
        run().map_err(|e| self.fail(e))
    }

    /// The KNN on the second connection, in a thread of its own, while
    /// this one runs the full text: a search takes the longer of the two,
    /// not their sum.
    fn rankings(
        &self,
        fts: &str,
        vector: Option<(&Space, &[f32])>,
        filter: &Filter<'_>,
        scope: Scope<'_>,
        pool: usize,
    ) -> Result<Rankings, MemoryError> {
        let Some((space, query)) = vector else { return Ok((self.full_text(fts, filter, scope, pool)?, Vec::new())) };
        let mut slot = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
        let reader = match slot.take() {
            Some(reader) => reader,
            None => schema::connect(&self.file).map_err(|e| self.fail(e))?.0,
        };
        let ((reader, semantic), lexical) = at_once(
            move || {
                let found = vectors::knn(&reader, space, query, filter, scope, pool);
                (reader, found)
            },
            || self.full_text(fts, filter, scope, pool),
        );
        *slot = Some(reader);
        Ok((lexical?, semantic.map_err(|e| self.fail(e))?))
    }

    fn get(&self, id: i64) -> Result<Option<Memory>, MemoryError> {
        self.db
            .query_row(&format!("SELECT {COLUMNS} FROM memories WHERE id = ?1"), params![id], memory)
            .optional()
            .map_err(|e| self.fail(e))
    }

    fn list(&self, facts_only: bool, topic: &str, scope: Scope<'_>, limit: usize) -> Result<Vec<Memory>, MemoryError> {
        let kind = if facts_only { "kind = 'fact' AND" } else { "" };
        let sql = format!(
            "SELECT {COLUMNS} FROM memories WHERE {kind} (?1 = '' OR topic = ?1) AND {IN_SCOPE}
             ORDER BY created_at DESC, id DESC LIMIT ?2"
        );
        let run = || -> rusqlite::Result<Vec<Memory>> {
            let mut stmt = self.db.prepare(&sql)?;
            let rows = stmt.query_map(params![topic, limit as i64, scope_json(scope)], memory)?;
            rows.collect()
        };
        run().map_err(|e| self.fail(e))
    }

    /// Triggers remove it from the full-text index and every vector table.
    fn forget(&self, id: i64, scope: Scope<'_>) -> Result<bool, MemoryError> {
        let sql = format!("DELETE FROM memories WHERE id = ?1 AND {}", IN_SCOPE.replace("?3", "?2"));
        let n = self.db.execute(&sql, params![id, scope_json(scope)]).map_err(|e| self.fail(e))?;
        Ok(n > 0)
    }

    fn retopic(&self, from: &str, to: &str) -> Result<usize, MemoryError> {
        let run = || -> rusqlite::Result<usize> {
            let tx = rusqlite::Transaction::new_unchecked(&self.db, TransactionBehavior::Immediate)?;
            vectors::forget_vectors_of(&tx, from)?;
            let moved = tx.execute("UPDATE memories SET topic = ?2 WHERE topic = ?1", params![from, to])?;
            tx.commit()?;
            Ok(moved)
        };
        run().map_err(|e| self.fail(e))
    }

    fn count(&self, topic: &str) -> Result<usize, MemoryError> {
        self.db
            .query_row("SELECT count(*) FROM memories WHERE topic = ?1", [topic], |r| r.get::<_, i64>(0))
            .map(|n| n as usize)
            .map_err(|e| self.fail(e))
    }

    fn indexed(&self, query: &str) -> Result<usize, MemoryError> {
        self.db
            .query_row("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1", params![query], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as usize)
            .map_err(|e| self.fail(e))
    }

    fn spaces(&self) -> Result<Vec<(String, usize, usize)>, MemoryError> {
        vectors::spaces(&self.db).map_err(|e| self.fail(e))
    }

    fn vector_rows(&self, id: i64) -> Result<usize, MemoryError> {
        vectors::rows_of(&self.db, id).map_err(|e| self.fail(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ranking in two steps gives what one query over every matching
    /// memory gives: the same scores in the same order, each memory with
    /// its own score and snippet, with and without each filter.
    #[test]
    fn full_text_ranks_as_one_query_over_every_match() {
        let dir = tempfile::tempdir().unwrap();
        let db = Sqlite::open(&dir.path().join("m.sqlite")).unwrap();
        let words = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "zeta"];
        for i in 0..400usize {
            // A skewed vocabulary: the first words are in most memories.
            let text: Vec<&str> =
                (0..3 + i % 5).map(|j| words[(i * 7 + j * j * 3) % (1 + j * 2).min(words.len())]).collect();
            let topic = ["red", "green", "blue"][i % 3];
            let new = NewMemory { text: &text.join(" "), topic, kind: "note", session: "s" };
            db.insert(&new, None).unwrap();
        }
        db.db.execute("DELETE FROM memories WHERE id % 11 = 0", []).unwrap();
        let scoped = vec!["red".to_string(), "blue".to_string()];
        for query in ["alpha OR zeta", "gamma", "omega OR kappa OR sigma", "\"beta gamma\"", "nothingmatches"] {
            for (topic, keyword, scope) in
                [("", "", None), ("green", "", None), ("", "delta", None), ("", "", Some(scoped.as_slice()))]
            {
                for limit in [1usize, 5, 40] {
                    let filter = Filter { topic, keyword };
                    let hits = db.full_text(query, &filter, scope, limit).unwrap();
                    let every: Vec<(i64, f64)> = db
                        .db
                        .prepare(
                            "SELECT m.id, -bm25(memories_fts) FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
                             WHERE memories_fts MATCH ?1 AND (?2 = '' OR m.topic = ?2)
                               AND (?3 = '' OR clix_contains(m.text, ?3))
                               AND (?4 = '' OR m.topic IN (SELECT value FROM json_each(?4)))
                             ORDER BY bm25(memories_fts)",
                        )
                        .unwrap()
                        .query_map(params![query, topic, keyword, scope_json(scope)], |r| Ok((r.get(0)?, r.get(1)?)))
                        .unwrap()
                        .collect::<rusqlite::Result<_>>()
                        .unwrap();
                    let what = format!("{query:?} topic {topic:?} keyword {keyword:?} scope {scope:?} limit {limit}");
                    let want: Vec<f64> = every.iter().take(limit).map(|e| e.1).collect();
                    let got: Vec<f64> = hits.iter().map(|h| h.score).collect();
                    assert_eq!(got, want, "{what}");
                    for hit in &hits {
                        let own = every.iter().find(|e| e.0 == hit.memory.id).map(|e| e.1);
                        assert_eq!(own, Some(hit.score), "{what}: memory {}", hit.memory.id);
                        assert!(hit.snippet.contains('['), "{what}: snippet {:?}", hit.snippet);
                        assert!(topic.is_empty() || hit.memory.topic == topic, "{what}");
                        assert!(hit.memory.text.contains(keyword), "{what}");
                    }
                }
            }
        }
    }
}
