//! The agent's memory: notes, facts and summaries, found by hybrid search, in
//! an SQLite file (the zero-setup default) or a PostgreSQL database that many
//! processes and machines share.
//!
//! One [`Store`], two backends. The rest of clix holds a `Store`, opened with
//! [`Store::open`] (a file) or [`Store::connect`] (a `postgres://` URL or a
//! path); [`migrate`] brings either to this build's schema. Under it, a private
//! `Backend` trait has one implementation per database, and only stores and
//! queries: everything that decides is written once in the store (validation,
//! when and what to embed, what an embedder's failure means, Reciprocal Rank
//! Fusion of the two rankings, confinement, warnings), so the two cannot drift
//! apart. A trait rather than an enum of backends: each backend's queries are a
//! whole module of their own, and the trait is the list of what a third one
//! would have to answer. The conformance suite (`tests/`) runs every memory
//! test on both.
//!
//! What both backends keep: memories, a full-text index and vectors in step
//! (one transaction per write; forgetting reaches every index); vectors in one
//! space per (embedder, dimension), so vectors of different spaces never mix;
//! filters (topic, keyword) applied before ranking; lazy re-embedding when the
//! embedder changes; memories an embedder rejects recorded as having no vector,
//! so re-embedding never stalls on them. The embedders ([`Embedder`]: none, any
//! OpenAI-compatible `/v1/embeddings` endpoint, a local model2vec folder) and
//! the `[memory]` settings ([`MemorySettings`]) are this crate's too. A store
//! is committed once its id is returned: it survives the process crashing or
//! being killed.
//!
//! - **SQLite**: FTS5 (porter + unicode61) and clix's own postings of FTS5's
//!   terms, ranked in Rust with FTS5's BM25; sqlite-vec `vec0` tables (the
//!   topic as partition key; a sign-bit KNN re-ranked by exact cosine), the
//!   schema migrated on open (`PRAGMA user_version`). Several processes may
//!   share the file (WAL, busy timeout); WAL with `synchronous = NORMAL` may
//!   lose the last commits to a power loss (the file stays consistent).
//! - **PostgreSQL**: a `tsvector` column (English stemming without stopwords,
//!   GIN, `websearch_to_tsquery`), trigger-kept postings and corpus counts
//!   ranked in Rust with FTS5's BM25, pgvector tables with HNSW cosine indexes
//!   and iterative scans (filters hold before the `k` nearest are cut),
//!   versioned in `clix_schema` (on clix-postgres's `Connection` and
//!   `schema::Component`, shared with the other shared records) and migrated
//!   only by [`migrate`]: a store that is behind, ahead or unreachable is an
//!   error that says which and what to do. The URL is a secret (errors and
//!   Debug show the password as `***`); connections are plain TCP or a unix
//!   socket (a URL asking for TLS is refused, saying so). Text is lowercased by
//!   clix, so matching does not depend on the server's locale.
//!
//! The lexical score, [`Hit::bm25`], is Okapi BM25 on both (k1 = 1.2, b = 0.75,
//! FTS5's clamped IDF), so one `recall_min_bm25` serves both: the tests hold
//! both to the same ordering on queries whose answer is clear, and to the same
//! side of the default threshold for a rare word and a common one. Where the
//! backends differ, by design: the exact scores (porter stemming in FTS5,
//! snowball in PostgreSQL; a hyphenated word is one token in FTS5 and three
//! lexemes in PostgreSQL), the order of equal scores, SQLite's folding of
//! diacritics (FTS5 `unicode61` finds "Ärger" for "arger"; PostgreSQL does
//! not), and the approximate KNN (both hold at least 90% of the exact top 5 in
//! the tests).
//!
//! Topics keep projects apart: a memory belongs to one topic (a session's is
//! its workspace's canonical path, shown by the folder's name: see
//! [`topic_name`]), a store can be confined to some topics
//! ([`Store::confine_to`]), and [`GLOBAL_TOPIC`] holds what a person marked as
//! true everywhere: every session may read it, only a person writes it. A
//! person moving an old topic's memories to a new name is `retopic`.
//!
//! It also owns the `memory` command (`search`, `recent`, `store`, `facts`,
//! `forget`), joined to an engine as a `clix_command::Capability`
//! ([`MemoryConfig`]), which enforces who may do what ([`MemoryAccess`]):
//! inside `run`, the session's topic and `global` read-only (other topics only
//! with `memory.cross_topic`); a person at the command line, every topic, and
//! `global` writable.
//!
//! It must not know about the model, a terminal, or the shell beyond
//! `clix-command`'s interface: the agent's recall is built on top of it (in
//! clix-agent), and progress is reported through a callback.

mod backend;
mod bm25;
mod command;
mod embed;
mod pg;
mod record;
mod sqlite;
mod store;
mod topics;
mod vectors;

pub use backend::Location;
pub use command::{MemoryAccess, MemoryConfig, OpenError, OpenedStore};
pub use embed::{EmbedError, Embedder, MemorySettings, Model2Vec, OpenAiEmbedder};
pub use record::{Filter, Hit, Memory, MemoryError, Progress};
pub use sqlite::vectors::{COARSE_MIN, COARSE_PER_RESULT};
pub use store::Store;
pub use topics::{AdoptError, adopt, old_topic_note};

/// What [`migrate`] did: the store's schema version before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    /// The version found (0: a store with no schema yet).
    pub from: i32,
    /// The version it is at now: this clix's.
    pub to: i32,
}

/// Brings the store at `url_or_path` (as [`Store::connect`] takes it) to
/// this clix's schema, in one transaction that keeps every memory: the
/// explicit step (`clix storage migrate`) a PostgreSQL store needs before
/// [`Store::connect`] opens it, and after an upgrade of clix. An SQLite
/// file is migrated the same way (opening it does too), and its
/// full-text postings are built again from the memories if they are
/// damaged. A store already at this version is left as it is; a newer one
/// is an error.
pub fn migrate(url_or_path: &str) -> Result<Migrated, MemoryError> {
    migrate_at(&Location::parse(url_or_path)?)
}

/// [`migrate`] for a location already read.
pub fn migrate_at(location: &Location) -> Result<Migrated, MemoryError> {
    let (from, to) = match location {
        Location::File(path) => sqlite::Sqlite::migrate(path)?,
        Location::Postgres(url) => pg::Postgres::migrate(url)?,
    };
    Ok(Migrated { from, to })
}

/// The reserved topic of memories a person marked global: every session
/// reads them beside its own topic's; inside `run` they are read-only, and
/// only `clix memory store --global` (or `-t global`) writes them.
pub const GLOBAL_TOPIC: &str = "global";

/// How a topic is named to people and models: a workspace's topic (its
/// canonical path, so that two folders called `backend` never share one)
/// by the folder's name; any other topic as it is.
pub fn topic_name(topic: &str) -> &str {
    if !topic.starts_with('/') {
        return topic;
    }
    std::path::Path::new(topic).file_name().and_then(|n| n.to_str()).unwrap_or(topic)
}

/// Reciprocal Rank Fusion's constant: a document at rank r (from 1) of a
/// list adds 1 / (RRF_K + r) to its score.
pub const RRF_K: f64 = 60.0;
