//! The agent's memory: one SQLite file of notes, facts and summaries, found
//! by hybrid search.
//!
//! This crate owns the schema and its migrations (`PRAGMA user_version`),
//! the full-text index (FTS5, porter + unicode61, BM25), the vector index
//! (sqlite-vec `vec0`, one table per embedder and dimension, so vectors of
//! different spaces never mix; the topic is its partition key), the
//! embedders (none, any OpenAI-compatible `/v1/embeddings`, a local
//! model2vec folder) and the `[memory]` settings, search (BM25 and KNN fused
//! with Reciprocal Rank Fusion; topic and keyword filters apply before
//! ranking; the KNN takes candidates by Hamming distance over sign bits,
//! then ranks them by exact cosine), lazy re-embedding when the embedder
//! changes, listing and forgetting (from every index, by triggers). Several
//! processes may share the file (WAL, busy timeout). A store is committed
//! once its id is returned: it survives the process crashing or being
//! killed (SIGKILL). The file uses WAL with `synchronous = NORMAL`, so the
//! last commits before a power loss or an operating-system crash may be
//! lost (the file stays consistent).
//!
//! Topics keep projects apart: a memory belongs to one topic (a session's
//! is its workspace's canonical path, shown by the folder's name: see
//! [`topic_name`]), a store can be confined to some topics
//! ([`Store::confine_to`]), and [`GLOBAL_TOPIC`] holds what a person
//! marked as true everywhere: every session may read it, only a person
//! writes it (the `memory` command enforces who may do what).
//!
//! It must not know about the shell, the model or a terminal: the `memory`
//! command and the agent's recall are built on top of it, and progress is
//! reported through a callback.

mod backend;
mod embed;
mod pg;
mod sqlite;
mod store;
mod vectors;

pub use backend::Location;
pub use embed::{EmbedError, Embedder, MemorySettings, Model2Vec, OpenAiEmbedder};
pub use sqlite::vectors::{COARSE_MIN, COARSE_PER_RESULT};
pub use store::{Filter, Hit, Memory, MemoryError, Progress, Store};

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
/// file is migrated the same way (opening it does too). A store already
/// at this version is left as it is; a newer one is an error.
pub fn migrate(url_or_path: &str) -> Result<Migrated, MemoryError> {
    let (from, to) = match Location::parse(url_or_path)? {
        Location::File(path) => sqlite::Sqlite::migrate(&path)?,
        Location::Postgres(url) => pg::Postgres::migrate(&url)?,
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
