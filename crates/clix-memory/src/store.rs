//! The store: storing, search, listing and forgetting, over either
//! backend. What is decided here (validation, embedding, the fusion of the
//! two rankings, confinement, warnings) is the same for both; each backend
//! only stores and queries (`backend.rs`).

use std::collections::HashMap;
use std::path::Path;

use crate::RRF_K;
use crate::backend::{Backend, Location, NewMemory};
use crate::embed::Embedder;
use crate::record::{Filter, Hit, KINDS, Memory, MemoryError, Progress, fts_query};
use crate::vectors::{Embedding, Vectors};

/// Texts embedded per call while filling in missing vectors.
const BATCH: usize = 64;

/// A candidate of the fusion: score, full-text hit, cosine similarity.
type Fused = (f64, Option<Hit>, Option<f64>);

/// A memory store: full-text search always, vectors when an embedder is
/// set, in an SQLite file or a PostgreSQL database.
pub struct Store {
    db: Box<dyn Backend>,
    /// The topics reads and forgets are confined to; `None`: every topic.
    scope: Option<Vec<String>>,
    vectors: Option<Vectors>,
    progress: Option<Progress>,
    warnings: Vec<String>,
}

/// Names the store (a URL's password as `***`) and its confinement.
impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("at", &self.db.shown())
            .field("confined_to", &self.scope)
            .field("vectors", &self.vectors.is_some())
            .finish()
    }
}

impl Store {
    /// Opens (creating and migrating) the SQLite store at `path`, full-text
    /// search only. Several processes may use the same file at once: WAL
    /// mode and a busy timeout.
    pub fn open(path: &Path) -> Result<Self, MemoryError> {
        Ok(Self::with_backend(Box::new(crate::sqlite::Sqlite::open(path)?)))
    }

    /// Opens the store at `url_or_path`: a `postgres://` URL (its schema
    /// must be this clix's: see [`crate::migrate`]), or an SQLite file's
    /// path (created and migrated as [`Store::open`] does). Full-text
    /// search only until [`Store::with_embedder`].
    pub fn connect(url_or_path: &str) -> Result<Self, MemoryError> {
        Self::at(&Location::parse(url_or_path)?)
    }

    /// Opens the store at `location`, as [`Store::connect`] does.
    pub fn at(location: &Location) -> Result<Self, MemoryError> {
        match location {
            Location::File(path) => Self::open(path),
            Location::Postgres(url) => Ok(Self::with_backend(Box::new(crate::pg::Postgres::connect(url)?))),
        }
    }

    fn with_backend(db: Box<dyn Backend>) -> Self {
        Store { db, scope: None, vectors: None, progress: None, warnings: Vec::new() }
    }

    /// Adds vector search with `embedder`. Memories it has no vector for
    /// yet (stored before, or under another embedder) are embedded at the
    /// next store or search.
    pub fn with_embedder(mut self, embedder: Box<dyn Embedder>) -> Result<Self, MemoryError> {
        self.vectors = Some(Vectors::new(self.db.as_ref(), embedder)?);
        Ok(self)
    }

    /// Confines this store to `topics`: from now on search, nearest, recent,
    /// facts, get and forget see only memories of these topics (an empty
    /// filter topic means all of them; a topic outside them finds nothing).
    /// Storing is not confined: which topic may be written is the caller's
    /// decision. One project's session must not read or erase another's.
    pub fn confine_to(&mut self, topics: &[&str]) {
        self.scope = Some(topics.iter().map(|t| t.to_string()).collect());
    }

    /// The topics of [`Store::confine_to`], or `None` for every topic.
    pub fn confined_to(&self) -> Option<Vec<String>> {
        self.scope.clone()
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
        let memory = NewMemory { text, topic, kind, session };
        let with = embedding.as_ref().zip(self.vectors.as_ref()).map(|(e, v)| (v.target(), e));
        let (id, space) = match self.db.insert(&memory, with) {
            Ok(done) => done,
            Err(e) => {
                if let Some(vectors) = &mut self.vectors {
                    vectors.reload(self.db.as_ref());
                }
                return Err(e);
            }
        };
        if let Some(vectors) = &mut self.vectors {
            vectors.used(space);
            if embedding.is_none() {
                vectors.unsynced();
            }
        }
        self.fill_missing();
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
        if let Err(e) = vectors.fill_missing(self.db.as_ref(), BATCH, report, &mut self.warnings) {
            self.warnings.push(format!("cannot embed every memory: {e}"));
        }
    }

    /// The best `limit` matches of `query`, filters applied first: the
    /// full-text ranking alone without an embedder, else the full-text
    /// ranking and the vector KNN fused with Reciprocal Rank Fusion (full
    /// text alone, with a warning, when the embedder fails or has no
    /// vector for the query).
    pub fn search(&mut self, query: &str, filter: &Filter<'_>, limit: usize) -> Result<Vec<Hit>, MemoryError> {
        if self.vectors.is_none() || fts_query(query).is_none() {
            let why = if self.vectors.is_none() { "no embedder" } else { "no word of the query is searchable" };
            tracing::debug!(topic = filter.topic, limit, why, "memory search: full text only");
            return self.fts(query, filter, limit);
        }
        let query_vector = match self.query_vector(query) {
            Ok(v) => v,
            Err(e) => {
                tracing::debug!(topic = filter.topic, error = %e, "memory search: full text only, the embedder failed");
                self.warnings.push(format!("searched full text only: {e}"));
                return self.fts(query, filter, limit);
            }
        };
        let Some(vectors) = &self.vectors else { return Ok(Vec::new()) };
        // Each list brings more candidates than asked for, so fusion can
        // lift a document that only one list ranks high.
        let pool = (limit.saturating_mul(4)).clamp(20, 4096);
        let Some(fts) = fts_query(query) else { return Ok(Vec::new()) };
        let vector = vectors.space_of(&query_vector).map(|space| (space, query_vector.as_slice()));
        let (lexical, semantic) = self.db.rankings(&fts, vector, filter, self.scope.as_deref(), pool)?;
        tracing::debug!(
            topic = filter.topic,
            limit,
            pool,
            lexical = lexical.len(),
            semantic = semantic.len(),
            "memory search: full text and vector KNN, fused by Reciprocal Rank Fusion"
        );
        self.fuse(lexical, semantic, limit)
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
        vectors.knn(self.db.as_ref(), &query_vector, filter, self.scope.as_deref(), limit)
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

    /// Reciprocal Rank Fusion of the two rankings, for both backends: a
    /// memory at rank r (from 1) of a list gains 1 / (RRF_K + r); equal
    /// scores go to the newer memory (the higher id).
    fn fuse(&self, lexical: Vec<Hit>, semantic: Vec<(i64, f64)>, limit: usize) -> Result<Vec<Hit>, MemoryError> {
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
                    let Some(memory) = self.db.get(id)? else { continue };
                    let snippet = preview(&memory.text, 16);
                    Hit { memory, score, bm25: None, similarity, snippet }
                }
            };
            hits.push(hit);
        }
        Ok(hits)
    }

    /// The full-text ranking, filters applied inside the query.
    fn fts(&self, query: &str, filter: &Filter<'_>, limit: usize) -> Result<Vec<Hit>, MemoryError> {
        let Some(fts) = fts_query(query) else { return Ok(Vec::new()) };
        self.db.full_text(&fts, filter, self.scope.as_deref(), limit)
    }

    /// Moves every memory of topic `from` to topic `to` (a person adopting
    /// an old topic's memories); returns how many moved. Their vectors are
    /// embedded again under the new topic on the next store or search.
    /// Not confined: the caller decides who may do this.
    pub fn retopic(&mut self, from: &str, to: &str) -> Result<usize, MemoryError> {
        let moved = self.db.retopic(from, to)?;
        if let Some(vectors) = &mut self.vectors {
            vectors.unsynced();
        }
        self.fill_missing();
        Ok(moved)
    }

    /// How many memories topic `topic` holds (unconfined: for telling a
    /// person about an old topic).
    pub fn count(&self, topic: &str) -> Result<usize, MemoryError> {
        self.db.count(topic)
    }

    /// The newest `limit` memories, of one topic or all.
    pub fn recent(&self, limit: usize, topic: &str) -> Result<Vec<Memory>, MemoryError> {
        self.db.list(false, topic, self.scope.as_deref(), limit)
    }

    /// Every fact of a topic (or all), newest first.
    pub fn facts(&self, topic: &str) -> Result<Vec<Memory>, MemoryError> {
        self.db.list(true, topic, self.scope.as_deref(), usize::MAX >> 1)
    }

    /// Removes a memory from the table, the full-text index and every
    /// vector space; `false` if there was none (or, in a confined store,
    /// none of its topics).
    pub fn forget(&self, id: i64) -> Result<bool, MemoryError> {
        self.db.forget(id, self.scope.as_deref())
    }

    /// Memory `id` (`None` if there is none, or it is outside a confined store's topics).
    pub fn get(&self, id: i64) -> Result<Option<Memory>, MemoryError> {
        let found = self.db.get(id)?;
        Ok(found.filter(|m| self.scope.as_ref().is_none_or(|topics| topics.contains(&m.topic))))
    }

    /// Rows in the full-text index matching `query` (for tests and checks).
    pub fn indexed(&self, query: &str) -> Result<usize, MemoryError> {
        let Some(fts) = fts_query(query) else { return Ok(0) };
        self.db.indexed(&fts)
    }

    /// Every vector space in the store: (embedder id, dimension, vectors).
    pub fn spaces(&self) -> Result<Vec<(String, usize, usize)>, MemoryError> {
        self.db.spaces()
    }

    /// Vector rows of memory `id`, over every space (for tests and checks).
    pub fn vector_rows(&self, id: i64) -> Result<usize, MemoryError> {
        self.db.vector_rows(id)
    }
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
