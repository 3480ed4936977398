//! The SQLite backend: one file, shared by several processes (WAL, busy
//! timeout). Full text in FTS5 (porter + unicode61, BM25) and ranked from
//! clix's own postings of the same terms (`postings.rs`, `tokens.rs`),
//! vectors in sqlite-vec `vec0` tables (`vectors.rs`), the schema and its
//! migrations in `schema.rs` (`PRAGMA user_version`, run on open).

mod coarse;
mod postings;
mod schema;
mod snippet;
mod tokens;
pub(crate) mod vectors;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::backend::{Backend, NewMemory, Pending, Rankings, Scope, Space, Target, at_once};
use crate::record::{Filter, Hit, Memory, MemoryError};
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
    /// clix's (opening does) and building the full-text postings again if
    /// they are damaged.
    pub(crate) fn migrate(path: &Path) -> Result<(i32, i32), MemoryError> {
        let shown = path.display().to_string();
        let fail = |source| MemoryError::Sqlite { path: shown.clone(), source };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let before = schema::version_of(path).map_err(fail)?;
        let db = Self::open(path)?;
        // The explicit step is also the mend of damaged postings: they are
        // built again from the memories, which are the record.
        let mend = || -> rusqlite::Result<()> {
            let tx = rusqlite::Transaction::new_unchecked(&db.db, TransactionBehavior::Immediate)?;
            if !postings::intact(&tx)? {
                tracing::info!(path = %db.path, "memory: the full-text postings were damaged; built again");
                postings::rebuild(&tx)?;
            }
            tx.commit()
        };
        mend().map_err(|e| db.fail(e))?;
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
            tx.prepare_cached("INSERT INTO memories (topic, kind, text, session) VALUES (?1, ?2, ?3, ?4)")?
                .execute(params![new.topic, new.kind, new.text, new.session])?;
            let id = tx.last_insert_rowid();
            postings::add(&tx, id, new.topic, new.text)?;
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

    /// BM25 ranked from clix's postings (`postings.rs`), which score as
    /// FTS5's `bm25()` does; FTS5 itself ranks a query they do not take.
    /// Then the best `limit` are read by id, each with its snippet.
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
            let tokenizer = tokens::Tokenizer::new(&tx)?;
            let parsed = postings::Query::parse(&tokenizer, query)?;
            let ranked = match parsed.rankable {
                true => postings::rank(&tx, &parsed.terms, filter, scope, limit)?,
                false => fts5_ranking(&tx, query, filter, scope, limit)?,
            };
            let mut read = tx.prepare_cached(&format!("SELECT {COLUMNS} FROM memories WHERE id = ?1"))?;
            let mut hits = Vec::with_capacity(ranked.len());
            for (id, score) in ranked {
                let memory = read.query_row([id], memory)?;
                let snippet = snippet::snippet(&tokenizer, &memory.text, &parsed.terms)?;
                hits.push(Hit { memory, score, bm25: Some(score), similarity: None, snippet });
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

    /// Triggers remove it from FTS5 and every vector table; its postings
    /// go in the same transaction.
    fn forget(&self, id: i64, scope: Scope<'_>) -> Result<bool, MemoryError> {
        let sql = format!("DELETE FROM memories WHERE id = ?1 AND {} RETURNING text", IN_SCOPE.replace("?3", "?2"));
        let run = || -> rusqlite::Result<bool> {
            let tx = rusqlite::Transaction::new_unchecked(&self.db, TransactionBehavior::Immediate)?;
            let text: Option<String> = tx.query_row(&sql, params![id, scope_json(scope)], |r| r.get(0)).optional()?;
            if let Some(text) = &text {
                postings::remove(&tx, id, text)?;
            }
            tx.commit()?;
            Ok(text.is_some())
        };
        run().map_err(|e| self.fail(e))
    }

    fn retopic(&self, from: &str, to: &str) -> Result<usize, MemoryError> {
        let run = || -> rusqlite::Result<usize> {
            let tx = rusqlite::Transaction::new_unchecked(&self.db, TransactionBehavior::Immediate)?;
            vectors::forget_vectors_of(&tx, from)?;
            let moved = tx.execute("UPDATE memories SET topic = ?2 WHERE topic = ?1", params![from, to])?;
            postings::retopic(&tx, from, to)?;
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

/// FTS5's own BM25 ranking, filters applied inside the query: for the
/// queries clix's postings do not take (`postings::Query::rankable`).
fn fts5_ranking(
    db: &Connection,
    query: &str,
    filter: &Filter<'_>,
    scope: Scope<'_>,
    limit: usize,
) -> rusqlite::Result<Vec<(i64, f64)>> {
    let mut stmt = db.prepare_cached(
        "SELECT m.id, -bm25(memories_fts)
         FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
         WHERE memories_fts MATCH ?1
           AND (?2 = '' OR m.topic = ?2)
           AND (?3 = '' OR clix_contains(m.text, ?3))
           AND (?5 = '' OR m.topic IN (SELECT value FROM json_each(?5)))
         ORDER BY bm25(memories_fts), m.id DESC LIMIT ?4",
    )?;
    stmt.query_map(params![query, filter.topic, filter.keyword, limit as i64, scope_json(scope)], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every memory FTS5 matches for `query`, with `-bm25()`, best first:
    /// the oracle of clix's postings.
    fn fts5_every(db: &Sqlite, query: &str, filter: &Filter<'_>, scope: Scope<'_>) -> Vec<(i64, f64)> {
        fts5_ranking(&db.db, query, filter, scope, usize::MAX >> 2).unwrap()
    }

    /// A corpus with a skewed vocabulary, stems, diacritics, digits and
    /// repeated words, in three topics.
    fn corpus(db: &Sqlite, n: usize) {
        let words = [
            "alpha",
            "beta",
            "gamma",
            "running",
            "runs",
            "run",
            "café",
            "CAFE",
            "naïve",
            "x86",
            "2024",
            "key-value",
            "zeta",
            "omega",
            "rotate",
            "rotation",
            "Ünïcode",
            "sigma",
        ];
        for i in 0..n {
            let text: Vec<&str> =
                (0..2 + i % 7).map(|j| words[(i * 7 + j * j * 3) % (1 + j * 3).min(words.len())]).collect();
            let topic = ["red", "green", "blue"][i % 3];
            let new = NewMemory { text: &text.join(" "), topic, kind: "note", session: "s" };
            db.insert(&new, None).unwrap();
        }
    }

    const QUERIES: [&str; 9] = [
        "alpha zeta",
        "gamma",
        "omega kappa sigma",
        "run",
        "the running café",
        "cafe naive unicode",
        "x86 2024 key value",
        "rotate rotate rotation",
        "nothingmatches",
    ];

    /// Checks the full text of every query, filter, scope and limit
    /// against FTS5 scoring every memory: the same scores in the same
    /// order, each memory with its own score, and a snippet.
    fn assert_ranks_as_fts5(db: &Sqlite, when: &str) {
        let scoped = vec!["red".to_string(), "blue".to_string(), "violet".to_string()];
        for words in QUERIES {
            let query = crate::record::fts_query(words).unwrap();
            for (topic, keyword, scope) in [
                ("", "", None),
                ("green", "", None),
                ("blue", "", None),
                ("violet", "", None),
                ("", "run", None),
                ("", "", Some(scoped.as_slice())),
                ("green", "", Some(scoped.as_slice())),
            ] {
                let filter = Filter { topic, keyword };
                let every = fts5_every(db, &query, &filter, scope);
                for limit in [1usize, 5, 40, 1000] {
                    let hits = db.full_text(&query, &filter, scope, limit).unwrap();
                    let what =
                        format!("{when}: {query:?} topic {topic:?} keyword {keyword:?} scope {scope:?} limit {limit}");
                    let want: Vec<f64> = every.iter().take(limit).map(|e| e.1).collect();
                    let got: Vec<f64> = hits.iter().map(|h| h.score).collect();
                    assert_eq!(got, want, "{what}");
                    for hit in &hits {
                        let own = every.iter().find(|e| e.0 == hit.memory.id).map(|e| e.1);
                        assert_eq!(own, Some(hit.score), "{what}: memory {}", hit.memory.id);
                        assert!(hit.snippet.contains('['), "{what}: snippet {:?}", hit.snippet);
                        assert!(topic.is_empty() || hit.memory.topic == topic, "{what}");
                        assert!(hit.memory.text.to_lowercase().contains(keyword), "{what}");
                    }
                }
            }
        }
    }

    /// clix's postings rank exactly as FTS5's `bm25()` over every match,
    /// through stores, forgets and topic moves (merging into a topic that
    /// exists, and into a new one).
    #[test]
    fn postings_rank_exactly_as_fts5_does() {
        let dir = tempfile::tempdir().unwrap();
        let db = Sqlite::open(&dir.path().join("m.sqlite")).unwrap();
        corpus(&db, 600);
        assert_ranks_as_fts5(&db, "stored");
        for id in (1..=600).filter(|id| id % 11 == 0 || id % 13 == 0) {
            assert!(db.forget(id, None).unwrap());
        }
        assert_ranks_as_fts5(&db, "after forgets");
        db.retopic("green", "blue").unwrap();
        db.retopic("red", "violet").unwrap();
        corpus(&db, 90);
        assert_ranks_as_fts5(&db, "after topic moves");
    }

    /// A file of schema 3 (memories without postings) gets them on open,
    /// and they rank as FTS5 does; memories stored after rank with them.
    #[test]
    fn postings_are_built_for_an_older_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.sqlite");
        {
            let db = Sqlite::open(&path).unwrap();
            corpus(&db, 300);
            db.db
                .execute_batch(
                    "DROP TABLE ft_blocks; DROP TABLE ft_pending; DROP TABLE ft_stats; DROP TABLE ft_topics;
                     PRAGMA user_version = 3;",
                )
                .unwrap();
        }
        let db = Sqlite::open(&path).unwrap();
        assert_ranks_as_fts5(&db, "rebuilt");
        corpus(&db, 50);
        assert!(db.forget(7, None).unwrap());
        assert_ranks_as_fts5(&db, "rebuilt, then stored");
    }

    /// Damaged postings (a block that does not decode, a count that
    /// disagrees, a pending row that does not decode) are an error that
    /// says how to mend them, never fewer hits; `clix storage migrate`
    /// (`Sqlite::migrate`) builds them again, and the search then ranks as
    /// FTS5 does.
    #[test]
    fn a_damaged_index_is_an_error_and_storage_migrate_mends_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.sqlite");
        let db = Sqlite::open(&path).unwrap();
        corpus(&db, 20);
        postings::flush(&db.db).unwrap();
        for (damage, query, names) in [
            (
                "UPDATE ft_blocks SET data = x'ff' WHERE term = CAST('alpha' AS BLOB)",
                "alpha",
                "the block of term \"alpha\"",
            ),
            // A block whose count disagrees with its postings.
            (
                "UPDATE ft_blocks SET data = x'0101010102010101', n = 1 WHERE term = CAST('alpha' AS BLOB)",
                "alpha",
                "the block of term \"alpha\"",
            ),
            // A pending memory that does not decode.
            (
                "UPDATE ft_pending SET terms = x'05ff' WHERE id = (SELECT max(id) FROM ft_pending)",
                "gamma",
                "the pending terms",
            ),
        ] {
            corpus(&db, 3);
            db.db.execute(damage, []).unwrap();
            let error = db.full_text(&format!("\"{query}\""), &Filter::default(), None, 5).unwrap_err().to_string();
            assert!(error.contains("full-text index is damaged") && error.contains(names), "{error}");
            assert!(error.contains("`clix storage migrate` builds it again"), "{error}");
            Sqlite::migrate(&path).unwrap();
            assert_ranks_as_fts5(&db, &format!("mended after {damage}"));
        }
    }
}
