//! The memory's full-text query sanitizer, through the store's public API,
//! against the real schema (SQLite FTS5, `porter unicode61`).
//!
//! The input is a user's query (lossy UTF-8). `Store::indexed` and
//! `Store::search` turn it into an FTS5 MATCH expression (the private
//! `fts_query`) and run it, so an expression FTS5 cannot parse comes back
//! as an error. Properties checked on every input:
//! - neither call panics nor fails: whatever a person or a model types is
//!   a valid MATCH expression (or no query at all);
//! - a memory whose text is the query itself is found by it, when the query
//!   is ASCII and has a word (for non-ASCII text Rust's and unicode61's
//!   ideas of a word differ, which is not a bug of the sanitizer);
//! - a search returns at most the limit asked for.

#![no_main]

use std::sync::{LazyLock, Mutex};

use clix_memory::{Filter, Store};
use libfuzzer_sys::fuzz_target;

/// A few memories so that MATCH has rows to rank, as a real store has.
const MEMORIES: &[&str] = &[
    "The API key rotates every 90 days; see ops/rotate.sh",
    "deploy: run `make release` then tag v1.2.3",
    "user prefers tabs, not spaces (NOT negotiable)",
    "naïve café résumé 日本語 テキスト",
    "\"quoted\" AND OR NEAR(a b) col:value -minus +plus *star ^caret",
];

struct Fixture {
    /// Holds the database file; removed with the process's TMPDIR by scripts/fuzz.sh.
    _dir: tempfile::TempDir,
    store: Store,
}

static FIXTURE: LazyLock<Mutex<Fixture>> = LazyLock::new(|| {
    let dir = tempfile::tempdir().expect("a temp dir for the memory file");
    let mut store = Store::open(&dir.path().join("memory.sqlite")).expect("the store opens");
    for text in MEMORIES {
        store.store(text, "fuzz", "note", "s1").expect("a seed memory is stored");
    }
    Mutex::new(Fixture { _dir: dir, store })
});

fuzz_target!(|data: &[u8]| {
    let query = String::from_utf8_lossy(data);
    let mut fixture = FIXTURE.lock().unwrap_or_else(|e| e.into_inner());
    let store = &mut fixture.store;

    let indexed = store.indexed(&query);
    assert!(indexed.is_ok(), "{query:?}: the sanitized query is not valid FTS5: {indexed:?}");
    let limit = 3;
    let hits = store.search(&query, &Filter { topic: "", keyword: "" }, limit);
    match hits {
        Ok(hits) => assert!(hits.len() <= limit, "{query:?}: {} hits for a limit of {limit}", hits.len()),
        Err(e) => panic!("{query:?}: search failed: {e}"),
    }

    // Recall: the query's own text, stored, is found by the query.
    let has_word = query.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| !w.is_empty());
    if query.is_ascii() && has_word && !query.contains('\0') {
        let id = store.store(&query, "fuzz", "note", "s1").expect("a memory is stored");
        let found = store.indexed(&query).expect("checked above");
        let forgotten = store.forget(id).expect("a stored memory can be forgotten");
        assert!(forgotten, "memory {id} was stored but could not be forgotten");
        assert!(found >= 1, "{query:?}: a memory with exactly this text is not found by it");
    }
});
