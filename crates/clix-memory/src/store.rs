//! The store: storing, search, listing and forgetting. The file's schema
//! lives in `schema.rs`, the vector side in `vectors.rs`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use crate::RRF_K;
use crate::embed::Embedder;
use crate::schema::{self, SCHEMA_VERSION};
use crate::vectors::{Embedding, Vectors};

/// Texts embedded per call while filling in missing vectors.
const BATCH: usize = 64;

/// Why a memory operation failed; the message names the file or the fix.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// SQLite refused: an unreadable, locked past its timeout or damaged file.
    #[error("memory store {path}: {source}")]
    Sqlite {
        /// The store's file.
        path: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A newer clix wrote this file; this one will not guess at its schema.
    #[error("memory store {path} has schema version {found}, newer than this clix ({SCHEMA_VERSION}); upgrade clix")]
    TooNew {
        /// The store's file.
        path: String,
        /// The schema version found in it.
        found: i32,
    },
    /// A kind other than note, fact or summary.
    #[error("kind must be note, fact or summary, not {0:?}")]
    Kind(String),
    /// An empty or blank text.
    #[error("nothing to store: the text is empty")]
    Empty,
}

/// What a memory is.
pub(crate) const KINDS: &[&str] = &["note", "fact", "summary"];

/// One stored memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Memory {
    /// Its row id: what `memory forget` takes.
    pub id: i64,
    /// The workspace (or `global`) it belongs to.
    pub topic: String,
    /// note, fact or summary.
    pub kind: String,
    /// What was remembered.
    pub text: String,
    /// Unix seconds.
    pub created_at: i64,
    /// `created_at` as a UTC date, `2026-11-30`.
    pub date: String,
    /// The session (agent run or MCP connection) that stored it.
    pub session: String,
}

/// A memory found by a search, with how well it matched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// The memory itself.
    #[serde(flatten)]
    pub memory: Memory,
    /// Higher is better: the negated BM25 with full-text search alone, the
    /// Reciprocal Rank Fusion score when vectors take part.
    pub score: f64,
    /// Negated BM25, when the memory's words matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25: Option<f64>,
    /// Cosine similarity to the query, when the vector search ranked it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    /// The matching part, matches in [brackets] (the text's start when only
    /// the vectors found it).
    pub snippet: String,
}

/// Filters of a search; empty strings mean "any".
#[derive(Debug, Clone, Default)]
pub struct Filter<'a> {
    /// Only memories of this topic.
    pub topic: &'a str,
    /// Plain substring the memory must contain (case-insensitive, Unicode
    /// lowercase on both sides).
    pub keyword: &'a str,
}

/// A candidate of the fusion: score, full-text hit, cosine similarity.
type Fused = (f64, Option<Hit>, Option<f64>);

/// Told `(done, total)` while missing vectors are being embedded.
pub type Progress = Arc<dyn Fn(usize, usize) + Send + Sync>;

/// One memory file: full-text search always, vectors when an embedder is set.
pub struct Store {
    pub(crate) db: Connection,
    path: String,
    /// The topics reads and forgets are confined to, as a JSON array for
    /// `json_each`; empty: every topic.
    scope: String,
    vectors: Option<Vectors>,
    progress: Option<Progress>,
    warnings: Vec<String>,
}

impl Store {
    /// Opens (creating and migrating) the store, full-text search only.
    /// Several processes may use the same file at once: WAL mode and a busy
    /// timeout.
    pub fn open(path: &Path) -> Result<Self, MemoryError> {
        let shown = path.display().to_string();
        let fail = |source| MemoryError::Sqlite { path: shown.clone(), source };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let (db, version) = schema::connect(path).map_err(fail)?;
        if version > SCHEMA_VERSION {
            return Err(MemoryError::TooNew { path: shown, found: version });
        }
        Ok(Store { db, path: shown, scope: String::new(), vectors: None, progress: None, warnings: Vec::new() })
    }

    /// Adds vector search with `embedder`. Memories it has no vector for
    /// yet (stored before, or under another embedder) are embedded at the
    /// next store or search.
    pub fn with_embedder(mut self, embedder: Box<dyn Embedder>) -> Result<Self, MemoryError> {
        let vectors = Vectors::new(&self.db, embedder).map_err(|e| self.fail(e))?;
        self.vectors = Some(vectors);
        Ok(self)
    }

    /// Confines this store to `topics`: from now on search, nearest, recent,
    /// facts, get and forget see only memories of these topics (an empty
    /// filter topic means all of them; a topic outside them finds nothing).
    /// Storing is not confined: which topic may be written is the caller's
    /// decision. One project's session must not read or erase another's.
    pub fn confine_to(&mut self, topics: &[&str]) {
        self.scope = serde_json::to_string(topics).unwrap_or_default();
    }

    /// The topics of [`Store::confine_to`], or `None` for every topic.
    pub fn confined_to(&self) -> Option<Vec<String>> {
        (!self.scope.is_empty()).then(|| serde_json::from_str(&self.scope).unwrap_or_default())
    }

    /// Called with `(done, total)` while missing vectors are embedded.
    pub fn set_progress(&mut self, progress: Progress) {
        self.progress = Some(progress);
    }

    /// Problems that did not stop an operation (an embedder that failed:
    /// the memory was stored, the search ran on full text alone).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    pub(crate) fn fail(&self, source: rusqlite::Error) -> MemoryError {
        MemoryError::Sqlite { path: self.path.clone(), source }
    }

    /// Stores `text`; returns its id once it is committed (with its vector,
    /// when an embedder is configured and answers with one).
    pub fn store(&mut self, text: &str, topic: &str, kind: &str, session: &str) -> Result<i64, MemoryError> {
        if !KINDS.contains(&kind) {
            return Err(MemoryError::Kind(kind.to_string()));
        }
        if text.trim().is_empty() {
            return Err(MemoryError::Empty);
        }
        let embedding = match &mut self.vectors {
            Some(v) => {
                v.begin();
                match v.embed_one(text) {
                    Ok(embedding) => {
                        if let Embedding::None { reason, .. } = &embedding {
                            self.warnings.push(format!("stored without a vector ({reason}): found by its words only"));
                        }
                        // Without even a dimension there is no space to record it in.
                        Some(embedding).filter(|e| e.dim() > 0)
                    }
                    Err(e) => {
                        self.warnings.push(format!("stored without a vector: {e}"));
                        None
                    }
                }
            }
            None => None,
        };
        let id = match self.insert(text, topic, kind, session, embedding.as_ref()) {
            Ok(id) => id,
            Err(e) => {
                if let Some(vectors) = &mut self.vectors {
                    vectors.reload(&self.db);
                }
                return Err(self.fail(e));
            }
        };
        if let (None, Some(vectors)) = (&embedding, &mut self.vectors) {
            vectors.unsynced();
        }
        self.fill_missing();
        Ok(id)
    }

    fn insert(
        &mut self,
        text: &str,
        topic: &str,
        kind: &str,
        session: &str,
        embedding: Option<&Embedding>,
    ) -> rusqlite::Result<i64> {
        let tx = rusqlite::Transaction::new_unchecked(&self.db, TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO memories (topic, kind, text, session) VALUES (?1, ?2, ?3, ?4)",
            params![topic, kind, text, session],
        )?;
        let id = tx.last_insert_rowid();
        if let (Some(embedding), Some(vectors)) = (embedding, &mut self.vectors) {
            vectors.save(&tx, id, topic, embedding)?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Embeds the memories that have no vector in the current embedder's
    /// space, in batches, reporting progress. Failures become warnings.
    fn fill_missing(&mut self) {
        let Some(vectors) = &mut self.vectors else { return };
        let progress = self.progress.clone();
        let report = |done, total| {
            if let Some(p) = &progress {
                p(done, total);
            }
        };
        if let Err(e) = vectors.fill_missing(&self.db, BATCH, report, &mut self.warnings) {
            self.warnings.push(format!("cannot embed every memory: {e}"));
        }
    }

    /// The best `limit` matches of `query`, filters applied first: BM25
    /// alone without an embedder, else BM25 and vector KNN fused with
    /// Reciprocal Rank Fusion (BM25 alone, with a warning, when the
    /// embedder fails or has no vector for the query).
    pub fn search(&mut self, query: &str, filter: &Filter<'_>, limit: usize) -> Result<Vec<Hit>, MemoryError> {
        if self.vectors.is_none() || fts_query(query).is_none() {
            let why = if self.vectors.is_none() { "no embedder" } else { "no word of the query is searchable" };
            tracing::debug!(topic = filter.topic, limit, why, "memory search: full text (BM25) only");
            return self.fts(query, filter, limit).map_err(|e| self.fail(e));
        }
        let query_vector = match self.query_vector(query) {
            Ok(v) => v,
            Err(e) => {
                tracing::debug!(topic = filter.topic, error = %e, "memory search: full text only, the embedder failed");
                self.warnings.push(format!("searched full text only: {e}"));
                return self.fts(query, filter, limit).map_err(|e| self.fail(e));
            }
        };
        let Some(vectors) = &self.vectors else { return Ok(Vec::new()) };
        // Each list brings more candidates than asked for, so fusion can
        // lift a document that only one list ranks high.
        let pool = (limit.saturating_mul(4)).clamp(20, 4096);
        let lexical = self.fts(query, filter, pool).map_err(|e| self.fail(e))?;
        let semantic = vectors.knn(&self.db, &query_vector, filter, &self.scope, pool).map_err(|e| self.fail(e))?;
        tracing::debug!(
            topic = filter.topic,
            limit,
            pool,
            lexical = lexical.len(),
            semantic = semantic.len(),
            "memory search: BM25 and vector KNN, fused by Reciprocal Rank Fusion"
        );
        self.fuse(lexical, semantic, limit).map_err(|e| self.fail(e))
    }

    /// The vector search alone: the `limit` nearest memories to `query` as
    /// (id, cosine similarity), filters applied first; empty without an
    /// embedder, or (with a warning) when it fails or has no vector for
    /// the query.
    pub fn nearest(&mut self, query: &str, filter: &Filter<'_>, limit: usize) -> Result<Vec<(i64, f64)>, MemoryError> {
        if self.vectors.is_none() {
            return Ok(Vec::new());
        }
        let query_vector = match self.query_vector(query) {
            Ok(v) => v,
            Err(e) => {
                self.warnings.push(format!("no vector search: {e}"));
                return Ok(Vec::new());
            }
        };
        let Some(vectors) = &self.vectors else { return Ok(Vec::new()) };
        vectors.knn(&self.db, &query_vector, filter, &self.scope, limit).map_err(|e| self.fail(e))
    }

    /// The unit vector of a query; missing vectors are filled in once the
    /// embedder has answered it (so it is known to be up).
    fn query_vector(&mut self, query: &str) -> Result<Vec<f32>, String> {
        let Some(vectors) = &mut self.vectors else { return Err("no embedder".into()) };
        vectors.begin();
        let embedding = vectors.embed_one(query)?;
        self.fill_missing();
        match embedding {
            Embedding::Vector(v) => Ok(v),
            Embedding::None { .. } => Err("the embedder gives a zero (or non-finite) vector for the query".into()),
        }
    }

    fn fuse(&self, lexical: Vec<Hit>, semantic: Vec<(i64, f64)>, limit: usize) -> rusqlite::Result<Vec<Hit>> {
        // id → (fused score, the full-text hit, the cosine similarity)
        let mut fused: HashMap<i64, Fused> = HashMap::new();
        for (rank, hit) in lexical.into_iter().enumerate() {
            let entry = fused.entry(hit.memory.id).or_insert((0.0, None, None));
            entry.0 += 1.0 / (RRF_K + rank as f64 + 1.0);
            entry.1 = Some(hit);
        }
        for (rank, (id, similarity)) in semantic.into_iter().enumerate() {
            let entry = fused.entry(id).or_insert((0.0, None, None));
            entry.0 += 1.0 / (RRF_K + rank as f64 + 1.0);
            entry.2 = Some(similarity);
        }
        let mut ranked: Vec<(i64, Fused)> = fused.into_iter().collect();
        ranked.sort_by(|a, b| b.1.0.total_cmp(&a.1.0).then(b.0.cmp(&a.0)));
        ranked.truncate(limit);
        let mut hits = Vec::with_capacity(ranked.len());
        for (id, (score, lexical, similarity)) in ranked {
            let hit = match lexical {
                Some(hit) => Hit { score, similarity, ..hit },
                None => {
                    let Some(memory) = self.get_row(id)? else { continue };
                    let snippet = preview(&memory.text, 16);
                    Hit { memory, score, bm25: None, similarity, snippet }
                }
            };
            hits.push(hit);
        }
        Ok(hits)
    }

    /// BM25 over FTS5, filters applied inside the query.
    fn fts(&self, query: &str, filter: &Filter<'_>, limit: usize) -> rusqlite::Result<Vec<Hit>> {
        let Some(fts) = fts_query(query) else { return Ok(Vec::new()) };
        let mut stmt = self.db.prepare_cached(
            "SELECT m.id, m.topic, m.kind, m.text, m.created_at, date(m.created_at, 'unixepoch'), m.session,
                    -bm25(memories_fts) AS score,
                    snippet(memories_fts, 0, '[', ']', '…', 12)
             FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
             WHERE memories_fts MATCH ?1
               AND (?2 = '' OR m.topic = ?2)
               AND (?3 = '' OR clix_contains(m.text, ?3))
               AND (?5 = '' OR m.topic IN (SELECT value FROM json_each(?5)))
             ORDER BY bm25(memories_fts) LIMIT ?4",
        )?;
        let rows = stmt.query_map(params![fts, filter.topic, filter.keyword, limit as i64, self.scope], |r| {
            let score: f64 = r.get(7)?;
            Ok(Hit { memory: memory(r)?, score, bm25: Some(score), similarity: None, snippet: r.get(8)? })
        })?;
        rows.collect()
    }

    /// Moves every memory of topic `from` to topic `to` (a person adopting
    /// an old topic's memories); returns how many moved. Their vectors are
    /// embedded again under the new topic on the next store or search.
    /// Not confined: the caller decides who may do this.
    pub fn retopic(&mut self, from: &str, to: &str) -> Result<usize, MemoryError> {
        let moved = (|| {
            let tx = self.db.transaction()?;
            crate::vectors::forget_vectors_of(&tx, from)?;
            let moved = tx.execute("UPDATE memories SET topic = ?2 WHERE topic = ?1", params![from, to])?;
            tx.commit()?;
            Ok(moved)
        })()
        .map_err(|e| self.fail(e))?;
        if let Some(vectors) = &mut self.vectors {
            vectors.unsynced();
        }
        self.fill_missing();
        Ok(moved)
    }

    /// How many memories topic `topic` holds (unconfined: for telling a
    /// person about an old topic).
    pub fn count(&self, topic: &str) -> Result<usize, MemoryError> {
        self.db
            .query_row("SELECT count(*) FROM memories WHERE topic = ?1", [topic], |r| r.get::<_, i64>(0))
            .map(|n| n as usize)
            .map_err(|e| self.fail(e))
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
            "SELECT id, topic, kind, text, created_at, date(created_at, 'unixepoch'), session FROM memories \
             WHERE {condition} AND {IN_SCOPE} ORDER BY created_at DESC, id DESC LIMIT ?2"
        );
        let mut stmt = self.db.prepare(&sql).map_err(|e| self.fail(e))?;
        let rows = stmt.query_map(params![topic, limit as i64, self.scope], memory).map_err(|e| self.fail(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.fail(e))
    }

    /// Removes a memory from the table, the full-text index and every
    /// vector table (triggers do the indexes); `false` if there was none
    /// (or, in a confined store, none of its topics).
    pub fn forget(&self, id: i64) -> Result<bool, MemoryError> {
        let sql = format!("DELETE FROM memories WHERE id = ?1 AND {}", IN_SCOPE.replace("?3", "?2"));
        let n = self.db.execute(&sql, params![id, self.scope]).map_err(|e| self.fail(e))?;
        Ok(n > 0)
    }

    /// Memory `id` (`None` if there is none, or it is outside a confined store's topics).
    pub fn get(&self, id: i64) -> Result<Option<Memory>, MemoryError> {
        let found = self.get_row(id).map_err(|e| self.fail(e))?;
        Ok(found.filter(|m| self.confined_to().is_none_or(|topics| topics.contains(&m.topic))))
    }

    fn get_row(&self, id: i64) -> rusqlite::Result<Option<Memory>> {
        self.db
            .query_row(
                "SELECT id, topic, kind, text, created_at, date(created_at, 'unixepoch'), session FROM memories WHERE id = ?1",
                params![id],
                memory,
            )
            .optional()
    }

    /// Rows in the full-text index matching `query` (for tests and checks).
    pub fn indexed(&self, query: &str) -> Result<usize, MemoryError> {
        let Some(fts) = fts_query(query) else { return Ok(0) };
        self.db
            .query_row("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1", params![fts], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as usize)
            .map_err(|e| self.fail(e))
    }

    /// Every vector space in the file: (embedder id, dimension, vectors).
    pub fn spaces(&self) -> Result<Vec<(String, usize, usize)>, MemoryError> {
        crate::vectors::spaces(&self.db).map_err(|e| self.fail(e))
    }

    /// Vector rows of memory `id`, over every space (for tests and checks).
    pub fn vector_rows(&self, id: i64) -> Result<usize, MemoryError> {
        crate::vectors::rows_of(&self.db, id).map_err(|e| self.fail(e))
    }
}

/// A memory's topic is in the store's scope (`?3`: the JSON array, or '').
const IN_SCOPE: &str = "(?3 = '' OR topic IN (SELECT value FROM json_each(?3)))";

pub(crate) fn memory(r: &rusqlite::Row<'_>) -> rusqlite::Result<Memory> {
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

/// The first `words` words of `text`.
fn preview(text: &str, words: usize) -> String {
    let mut out: Vec<&str> = text.split_whitespace().take(words + 1).collect();
    let more = out.len() > words;
    out.truncate(words);
    let mut s = out.join(" ");
    if more {
        s.push('…');
    }
    s
}

/// Words too common to say what a query is about; dropped from queries
/// (unless nothing else is left), so "when does the key rotate" ranks by
/// "key" and "rotate", not by every memory that has "the".
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "before", "but", "by",
    "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is",
    "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "should", "so", "that", "the", "their", "them",
    "then", "there", "these", "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who",
    "why", "will", "with", "would", "you", "your",
];

/// A user's words as an FTS5 query: each word quoted (so `-`, `:` or `"`
/// in it are never FTS syntax), any word may match; BM25 ranks documents
/// matching more and rarer words first.
pub(crate) fn fts_query(query: &str) -> Option<String> {
    let words: Vec<&str> = query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let content: Vec<&str> =
        words.iter().copied().filter(|w| !STOPWORDS.contains(&w.to_lowercase().as_str())).collect();
    let chosen = if content.is_empty() { words } else { content };
    let quoted: Vec<String> = chosen.iter().map(|w| format!("\"{w}\"")).collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}
