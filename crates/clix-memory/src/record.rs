//! What the store and its backends exchange: a memory, a search hit, a
//! search's filters and full-text query, the errors. A leaf of the crate: it uses none of its
//! other modules, so the store and the backends both depend on it and
//! never on each other's types.

use std::sync::Arc;

use clix_postgres::StoreError;
use serde::Serialize;

/// Why a memory operation failed; the message names the store (a URL's
/// password as `***`) and the fix.
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
    /// PostgreSQL refused a query, or the connection broke.
    #[error("memory store {url}: {message}")]
    Postgres {
        /// The store's URL, password as `***`.
        url: String,
        /// The server's or the client's message.
        message: String,
    },
    /// The server cannot be reached, or refuses the connection.
    #[error(
        "cannot reach the memory store {url}: {message}; check the URL (host, port, user, password, database) \
         and that PostgreSQL is running there"
    )]
    Unreachable {
        /// The store's URL, password as `***`.
        url: String,
        /// Why, from the client.
        message: String,
    },
    /// Not a URL or path a store can be at, or a URL this build cannot use.
    #[error("memory store {shown}: {message}")]
    BadLocation {
        /// The setting, password as `***`.
        shown: String,
        /// What is wrong and what to give instead.
        message: String,
    },
    /// A newer clix wrote this store; this one will not guess at its schema.
    #[error(
        "memory store {path} has schema version {found}, newer than this clix ({wanted}); upgrade clix \
         (nothing was changed)"
    )]
    TooNew {
        /// The store's file, or its URL (password as `***`).
        path: String,
        /// The schema version found in it.
        found: i32,
        /// The version this clix writes.
        wanted: i32,
    },
    /// A PostgreSQL store whose schema is older than this clix's (or not
    /// there yet): migrations run only when asked.
    #[error(
        "memory store {url} has schema version {found}, this clix needs {wanted}: run `clix storage migrate` \
         (it keeps every memory)"
    )]
    NeedsMigration {
        /// The store's URL, password as `***`.
        url: String,
        /// The schema version found (0: none).
        found: i32,
        /// The version this clix writes.
        wanted: i32,
    },
    /// The database has no pgvector, and this user may not add it.
    #[error(
        "memory store {url}: the pgvector extension is not available ({message}): install pgvector on the \
         server (https://github.com/pgvector/pgvector) or have a superuser run `CREATE EXTENSION vector` in \
         this database, then run `clix storage migrate` again"
    )]
    NoPgvector {
        /// The store's URL, password as `***`.
        url: String,
        /// The server's answer.
        message: String,
    },
    /// A kind other than note, fact or summary.
    #[error("kind must be note, fact or summary, not {0:?}")]
    Kind(String),
    /// An empty or blank text.
    #[error("nothing to store: the text is empty")]
    Empty,
}

/// The shared store's errors in the memory's words.
impl From<StoreError> for MemoryError {
    fn from(e: StoreError) -> MemoryError {
        match e {
            StoreError::BadUrl { shown, message } => MemoryError::BadLocation { shown, message },
            StoreError::Unreachable { url, message } => MemoryError::Unreachable { url, message },
            StoreError::NeedsMigration { url, found, wanted, .. } => MemoryError::NeedsMigration { url, found, wanted },
            StoreError::TooNew { url, found, wanted, .. } => MemoryError::TooNew { path: url, found, wanted },
            StoreError::Postgres { url, message } => MemoryError::Postgres { url, message },
        }
    }
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
    /// Higher is better: [`Hit::bm25`] with full-text search alone, the
    /// Reciprocal Rank Fusion score when vectors take part.
    pub score: f64,
    /// Okapi BM25 (k1 = 1.2, b = 0.75), higher is better, when the memory's
    /// words matched: FTS5's `bm25()` negated on SQLite, the same formula
    /// over the `tsvector`s on PostgreSQL. One scale on both (one
    /// `recall_min_bm25` serves both); the values differ a little, as the
    /// two stem words differently.
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

/// Told `(done, total)` while missing vectors are being embedded.
pub type Progress = Arc<dyn Fn(usize, usize) + Send + Sync>;

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

/// A user's words as a full-text query: each word quoted (so `-`, `:` or
/// `"` in it are never query syntax), any word may match. FTS5's MATCH and
/// PostgreSQL's `websearch_to_tsquery` read this form alike; both rank
/// documents matching more words first (BM25 also weighs rarer ones).
pub(crate) fn fts_query(query: &str) -> Option<String> {
    let words: Vec<&str> = query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let content: Vec<&str> =
        words.iter().copied().filter(|w| !STOPWORDS.contains(&w.to_lowercase().as_str())).collect();
    let chosen = if content.is_empty() { words } else { content };
    let quoted: Vec<String> = chosen.iter().map(|w| format!("\"{w}\"")).collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}
