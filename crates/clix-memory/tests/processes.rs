//! Real processes and threads on one store, on both backends: a writer
//! killed with SIGKILL mid-loop loses nothing it acknowledged, writers at
//! once all get through, and two processes filling in the same missing
//! vectors store each once.
//!
//! The writer is this test binary run again with `--ignored --exact
//! child_writer` and CLIX_TEST_MEMORY_CHILD_DB set (a file's path or a
//! database's URL); it prints `acked <id>` after each store.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

#[path = "support/backends.rs"]
mod backends;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use backends::{Backend, Fixture, conformance};
use clix_memory::{EmbedError, Embedder, Filter, Store};

conformance!(
    sigkill_mid_store_loses_no_acknowledged_memory,
    two_processes_writing_at_once_both_get_through,
    eight_threads_storing_at_once_lose_no_acknowledged_memory,
    two_processes_embedding_the_same_missing_memories_store_each_vector_once,
);

/// Deterministic vectors for the processes that embed.
struct Letters;

impl Embedder for Letters {
    fn id(&self) -> String {
        "letters".into()
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.01f32; 32];
                for b in t.bytes() {
                    v[usize::from(b) % 32] += 1.0;
                }
                v
            })
            .collect())
    }
}

/// Not a test of its own: the process the tests below start (ignored in a
/// normal run, started with `--ignored --exact child_writer`).
#[test]
#[ignore = "a child process of the tests below"]
fn child_writer() {
    let db =
        std::env::var_os("CLIX_TEST_MEMORY_CHILD_DB").expect("started by a test, with CLIX_TEST_MEMORY_CHILD_DB set");
    let tag = std::env::var("CLIX_TEST_MEMORY_CHILD_TAG").unwrap_or_default();
    let count: usize =
        std::env::var("CLIX_TEST_MEMORY_CHILD_COUNT").ok().and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
    let mut store = Store::connect(&db.to_string_lossy()).unwrap();
    if std::env::var_os("CLIX_TEST_MEMORY_CHILD_EMBED").is_some() {
        // Fill in every missing vector (a search does), racing the other process.
        let mut store = store.with_embedder(Box::new(Letters)).unwrap();
        store.search("deploys", &Filter::default(), 3).unwrap();
        assert!(store.take_warnings().is_empty());
        println!("acked 0");
        return;
    }
    for i in 0..count {
        let id = store.store(&format!("note {tag} number {i} about deploys and keys"), &tag, "note", &tag).unwrap();
        println!("acked {id}");
    }
}

fn spawn_writer(db: &str, tag: &str, count: Option<usize>) -> Child {
    spawn_child(db, tag, count, false)
}

fn spawn_child(db: &str, tag: &str, count: Option<usize>, embed: bool) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    if embed {
        cmd.env("CLIX_TEST_MEMORY_CHILD_EMBED", "1");
    }
    cmd.args(["--ignored", "--exact", "child_writer", "--nocapture", "--test-threads=1"])
        .env("CLIX_TEST_MEMORY_CHILD_DB", db)
        .env("CLIX_TEST_MEMORY_CHILD_TAG", tag)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(n) = count {
        cmd.env("CLIX_TEST_MEMORY_CHILD_COUNT", n.to_string());
    }
    cmd.spawn().unwrap()
}

/// The id of an `acked <id>` line (the first may follow the harness's
/// `test child_writer ... ` on the same line).
fn acked(line: &str) -> Option<i64> {
    line.rsplit_once("acked ").and_then(|(_, id)| id.trim().parse().ok())
}

/// SQLite: `PRAGMA integrity_check` and FTS5's own check on the file.
/// PostgreSQL: every memory has its full-text vector (a generated column:
/// the server keeps it; a killed client cannot leave half a row).
fn assert_intact(f: &Fixture) {
    match f.backend {
        Backend::Sqlite => {
            let conn = rusqlite::Connection::open(f.file()).unwrap();
            let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
            assert_eq!(check, "ok");
            conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')", []).unwrap();
        }
        Backend::Postgres => {
            assert_eq!(f.psql("SELECT count(*) FROM memories WHERE tsv IS NULL OR folded <> lower(text)").trim(), "0");
        }
    }
}

fn sigkill_mid_store_loses_no_acknowledged_memory(f: Fixture) {
    let mut child = spawn_writer(&f.location, "crash", None);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ids = Vec::new();
    while ids.len() < 300 {
        let line = lines.next().expect("the writer stopped early").unwrap();
        ids.extend(acked(&line));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Acknowledgements already in the pipe count too.
    ids.extend(lines.map_while(Result::ok).filter_map(|l| acked(&l)));

    assert_intact(&f);
    let store = f.open();
    let missing: Vec<i64> = ids.iter().copied().filter(|id| store.get(*id).unwrap().is_none()).collect();
    assert!(missing.is_empty(), "{} acknowledged stores lost: {missing:?}", missing.len());
    assert!(store.indexed("crash").unwrap() >= ids.len(), "every acknowledged store is in the index");
    println!("{} stores acknowledged before SIGKILL, all present", ids.len());
}

fn two_processes_writing_at_once_both_get_through(f: Fixture) {
    let children = [spawn_writer(&f.location, "alpha", Some(400)), spawn_writer(&f.location, "beta", Some(400))];
    let mut ids = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        ids.extend(String::from_utf8_lossy(&out.stdout).lines().filter_map(acked));
    }
    assert_eq!(ids.len(), 800, "every store acknowledged (SQLite's busy_timeout waits, never fails)");
    assert_intact(&f);
    let store = f.open();
    assert_eq!(store.recent(10_000, "alpha").unwrap().len(), 400);
    assert_eq!(store.recent(10_000, "beta").unwrap().len(), 400);
    assert!(ids.iter().all(|id| store.get(*id).unwrap().is_some()));
}

fn eight_threads_storing_at_once_lose_no_acknowledged_memory(f: Fixture) {
    const THREADS: usize = 8;
    const EACH: usize = 100;
    let start = std::sync::Barrier::new(THREADS);
    let acked: Vec<i64> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (f, start) = (&f, &start);
                s.spawn(move || {
                    // Each thread its own store, as each replica or process has.
                    let mut store = f.open().with_embedder(Box::new(Letters)).unwrap();
                    start.wait();
                    (0..EACH)
                        .map(|i| {
                            store
                                .store(&format!("thread {t} note {i} about deploys"), &format!("w{t}"), "note", "")
                                .unwrap()
                        })
                        .collect::<Vec<i64>>()
                })
            })
            .collect();
        writers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(acked.len(), THREADS * EACH);
    let mut unique = acked.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), acked.len(), "every id given once");
    assert_intact(&f);
    let store = f.open();
    assert!(acked.iter().all(|id| store.get(*id).unwrap().is_some()), "every acknowledged memory is there");
    for t in 0..THREADS {
        assert_eq!(store.count(&format!("w{t}")).unwrap(), EACH);
    }
    assert_eq!(store.indexed("deploys").unwrap(), THREADS * EACH);
    assert_eq!(store.spaces().unwrap(), vec![("letters".to_string(), 32, THREADS * EACH)], "and every vector");
}

fn two_processes_embedding_the_same_missing_memories_store_each_vector_once(f: Fixture) {
    let mut store = f.open();
    for i in 0..600 {
        store.store(&format!("memory {i} about deploys"), "t", "note", "").unwrap();
    }
    drop(store);
    let children = [spawn_child(&f.location, "a", None, true), spawn_child(&f.location, "b", None, true)];
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    }
    assert_intact(&f);
    let store = f.open();
    assert_eq!(store.spaces().unwrap(), vec![("letters".to_string(), 32, 600)]);
    let rows: i64 = match f.backend {
        Backend::Sqlite => rusqlite::Connection::open(f.file())
            .unwrap()
            .query_row("SELECT count(*) FROM memories_vec_1", [], |r| r.get(0))
            .unwrap(),
        Backend::Postgres => f.psql("SELECT count(*) FROM memory_vectors_1").trim().parse().unwrap(),
    };
    assert_eq!(rows, 600, "one vector per memory, none twice");
}

/// SQLite only: a new file's switch to WAL (PostgreSQL's counterpart is
/// in postgres.rs: threads migrating one fresh database).
#[test]
fn threads_opening_one_fresh_file_at_once_all_succeed() {
    // Switching a new file to WAL needs a lock SQLite does not wait for.
    const THREADS: usize = 6;
    let dir = tempfile::tempdir().unwrap();
    for n in 0..50 {
        let db = dir.path().join(format!("fresh-{n}.sqlite"));
        let start = std::sync::Barrier::new(THREADS);
        let failures: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        Store::open(&db).err().map(|e| e.to_string())
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().unwrap()).collect()
        });
        assert!(failures.is_empty(), "file {n}: {failures:?}");
        let conn = rusqlite::Connection::open(&db).unwrap();
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
    }
}

/// SQLite: the lock is the file's write lock (PostgreSQL's counterpart is
/// in postgres.rs: its advisory lock).
#[test]
fn a_migration_rereads_the_version_once_it_holds_the_lock() {
    // An empty WAL file at version 0; another writer holds the lock.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.sqlite");
    let other = rusqlite::Connection::open(&db).unwrap();
    other.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let opened = std::thread::scope(|s| {
        let opening = s.spawn(|| Store::open(&db).map(drop));
        // The opener has read version 0 and waits for the lock; meanwhile
        // the other writer (a newer clix) migrates the file past this one.
        std::thread::sleep(std::time::Duration::from_millis(500));
        other.execute_batch("PRAGMA user_version = 1000; COMMIT").unwrap();
        opening.join().unwrap()
    });
    assert!(matches!(opened, Err(clix_memory::MemoryError::TooNew { found: 1000, .. })), "{opened:?}");
    let version: i32 = other.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, 1000, "the newer version is never overwritten");
}
