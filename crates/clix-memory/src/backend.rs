//! What a store's storage must do, once per backend (SQLite, PostgreSQL):
//! keep memories, their full-text index and their vectors in step, and
//! answer the queries of [`crate::Store`]. Everything that decides (which
//! texts to embed and when, what a failure means, how lists are fused,
//! what a confined store may see) is written once in the store; a backend
//! only stores and queries.

use std::path::PathBuf;

use crate::record::{Filter, Hit, Memory, MemoryError};
use crate::vectors::Embedding;

/// One vector space: its row in the backend's list of embedders, and the
/// dimension of its vectors.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Space {
    pub(crate) id: i64,
    pub(crate) dim: usize,
}

/// Where vectors of one embedder go: its key, and the space already known
/// for it (a backend reuses it when the dimension matches, and otherwise
/// finds or creates the space of that dimension).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) key: &'a str,
    pub(crate) known: Option<&'a Space>,
}

/// A memory without a vector in the current space: (id, topic, text).
pub(crate) type Pending = (i64, String, String);

/// A hybrid search's two rankings: full-text hits, and (id, cosine similarity).
pub(crate) type Rankings = (Vec<Hit>, Vec<(i64, f64)>);

/// The topics a confined store sees (`None`: every topic).
pub(crate) type Scope<'a> = Option<&'a [String]>;

/// The storage under a [`crate::Store`]. Every method is one operation,
/// committed when it returns (writes happen in one transaction).
pub(crate) trait Backend: Send {
    /// The store as errors name it: a file's path, or a URL whose password
    /// is `***`.
    fn shown(&self) -> &str;

    /// Inserts a memory and, when given, its embedding (a vector, or the
    /// record that it has none) in one transaction; its id, and the space
    /// the embedding went to.
    fn insert(
        &self,
        memory: &NewMemory<'_>,
        embedding: Option<(Target<'_>, &Embedding)>,
    ) -> Result<(i64, Option<Space>), MemoryError>;

    /// The newest space of embedder `key` (its dimension is what it gives now).
    fn newest_space(&self, key: &str) -> Result<Option<Space>, MemoryError>;

    /// A mark of what is committed: equal marks mean nothing changed in
    /// between, so there is nothing new to embed.
    fn mark(&self) -> Result<String, MemoryError>;

    /// How many memories have neither a vector nor a record of having none
    /// in `space` (`None`: every memory). `since` is the mark of the last
    /// time none was missing: a backend may look only at memories written
    /// after it, or ignore it.
    fn missing_count(&self, space: Option<&Space>, since: Option<&str>) -> Result<usize, MemoryError>;

    /// At most `limit` of those memories, oldest first.
    fn missing(&self, space: Option<&Space>, since: Option<&str>, limit: usize) -> Result<Vec<Pending>, MemoryError>;

    /// Saves a batch of embeddings (all of one dimension) in one
    /// transaction, skipping memories forgotten or embedded meanwhile by
    /// another process; the space they went to.
    fn save_embeddings(
        &self,
        target: Target<'_>,
        batch: &[(&Pending, &Embedding)],
    ) -> Result<Option<Space>, MemoryError>;

    /// The `k` nearest memories to `query` (a unit vector of `space`'s
    /// dimension) as (id, cosine similarity), best first, filters and
    /// scope applied before ranking.
    fn knn(
        &self,
        space: &Space,
        query: &[f32],
        filter: &Filter<'_>,
        scope: Scope<'_>,
        k: usize,
    ) -> Result<Vec<(i64, f64)>, MemoryError>;

    /// The full-text matches of `query` (from `record::fts_query`: quoted
    /// words joined by OR, which FTS5's MATCH and PostgreSQL's
    /// `websearch_to_tsquery` read alike), best first, filters and scope
    /// applied before ranking, with the backend's lexical score and a snippet.
    fn full_text(
        &self,
        query: &str,
        filter: &Filter<'_>,
        scope: Scope<'_>,
        limit: usize,
    ) -> Result<Vec<Hit>, MemoryError>;

    /// The two rankings of one hybrid search: [`Backend::full_text`] of
    /// `fts` and, when a vector is given, [`Backend::knn`] of it, each
    /// `pool` long. By default one after the other; a backend that can
    /// runs them at once, on a second connection.
    fn rankings(
        &self,
        fts: &str,
        vector: Option<(&Space, &[f32])>,
        filter: &Filter<'_>,
        scope: Scope<'_>,
        pool: usize,
    ) -> Result<Rankings, MemoryError> {
        let lexical = self.full_text(fts, filter, scope, pool)?;
        let semantic = match vector {
            Some((space, query)) => self.knn(space, query, filter, scope, pool)?,
            None => Vec::new(),
        };
        Ok((lexical, semantic))
    }

    /// Memory `id`, whatever its topic.
    fn get(&self, id: i64) -> Result<Option<Memory>, MemoryError>;

    /// The newest `limit` memories (facts only, when asked), of `topic`
    /// (empty: all) within `scope`.
    fn list(&self, facts_only: bool, topic: &str, scope: Scope<'_>, limit: usize) -> Result<Vec<Memory>, MemoryError>;

    /// Removes memory `id` (if within `scope`) from every index; whether it was there.
    fn forget(&self, id: i64, scope: Scope<'_>) -> Result<bool, MemoryError>;

    /// Moves topic `from`'s memories to `to`, dropping their vectors (a
    /// vector's topic is part of its row): they are embedded again.
    fn retopic(&self, from: &str, to: &str) -> Result<usize, MemoryError>;

    /// How many memories `topic` holds.
    fn count(&self, topic: &str) -> Result<usize, MemoryError>;

    /// How many memories the full-text index matches for `query` (as in `full_text`).
    fn indexed(&self, query: &str) -> Result<usize, MemoryError>;

    /// Every vector space: (embedder key, dimension, vectors held).
    fn spaces(&self) -> Result<Vec<(String, usize, usize)>, MemoryError>;

    /// Vector rows of memory `id` over every space.
    fn vector_rows(&self, id: i64) -> Result<usize, MemoryError>;
}

/// Runs `beside` on a thread of its own while `here` runs on this one
/// (a backend's two rankings at once); both results.
pub(crate) fn at_once<A: Send, B>(beside: impl FnOnce() -> A + Send, here: impl FnOnce() -> B) -> (A, B) {
    std::thread::scope(|threads| {
        let beside = threads.spawn(beside);
        let here = here();
        (beside.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), here)
    })
}

/// A memory about to be stored.
pub(crate) struct NewMemory<'a> {
    pub(crate) text: &'a str,
    pub(crate) topic: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) session: &'a str,
}

/// Where a store lives, from a setting: a PostgreSQL URL
/// (`postgres://…` or `postgresql://…`), or a path to an SQLite file.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file (created when missing).
    File(PathBuf),
    /// A PostgreSQL database; the URL holds its password, if any.
    Postgres(String),
}

/// No place yet (an empty path), as a configuration built field by field
/// starts.
impl Default for Location {
    fn default() -> Self {
        Location::File(PathBuf::new())
    }
}

impl Location {
    /// Reads a URL or a path. Another scheme (`mysql://…`) is an error that
    /// names the two forms taken.
    pub fn parse(url_or_path: &str) -> Result<Location, MemoryError> {
        let lower = url_or_path.trim_start().to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            return Ok(Location::Postgres(url_or_path.trim().to_string()));
        }
        if let Some((scheme, _)) = url_or_path.split_once("://")
            && !scheme.contains('/')
        {
            return Err(MemoryError::BadLocation {
                shown: clix_common::redact_url(url_or_path),
                message: format!(
                    "{scheme}:// is not a store clix knows: give a postgres://user@host/database URL, \
                     or the path of an SQLite file"
                ),
            });
        }
        if url_or_path.trim().is_empty() {
            return Err(MemoryError::BadLocation {
                shown: String::new(),
                message: "empty: give a postgres://user@host/database URL, or the path of an SQLite file".into(),
            });
        }
        Ok(Location::File(PathBuf::from(url_or_path)))
    }
}

/// The path, or the URL with its password as `***`.
impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&clix_common::redact_url(url)),
        }
    }
}

/// As Display: a password never reaches a log.
impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(_) => write!(f, "File({self})"),
            Location::Postgres(_) => write!(f, "Postgres({self})"),
        }
    }
}
