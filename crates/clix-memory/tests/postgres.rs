//! What only the PostgreSQL backend has: its URL (a secret: shown with
//! the password as `***`), explicit migrations (a store that is behind,
//! ahead or unreachable is an error that says which and what to do, and
//! nothing is dropped), two migrations at once, a server that restarts
//! under a store that stays open, and the corpus counts BM25 reads (kept
//! by a trigger, filled in by the migration that added them).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use clix_memory::{Filter, Location, MemoryError, Migrated, Store};
use clix_testkit::Postgres;

/// The test binary's server, or `None` (skipped; failed under CI).
fn server(test: &str) -> Option<&'static Postgres> {
    Postgres::for_test(test)
}

#[test]
fn a_url_is_shown_without_its_password() {
    let Some(pg) = server("a_url_is_shown_without_its_password") else { return };
    let db = pg.create_database();
    // Trust authentication ignores the password: the store opens, and its URL holds one.
    let socket = pg.socket_dir().display().to_string().replace('/', "%2F");
    let url = format!("postgres://postgres:s3cret-pw@{socket}:{}/{db}", pg.port());
    clix_memory::migrate(&url).unwrap();
    let store = Store::connect(&url).unwrap();
    let shown = format!("{store:?}");
    assert!(shown.contains("postgres:***@") && !shown.contains("s3cret"), "{shown}");
    let location = Location::parse(&url).unwrap();
    for shown in [format!("{location:?}"), location.to_string()] {
        assert!(shown.contains("postgres:***@") && !shown.contains("s3cret"), "{shown}");
    }
    // Errors too, whatever the failure.
    let closed = clix_testkit::free_port();
    for bad in [
        format!("postgres://clix:s3cret-pw@127.0.0.1:{closed}/{db}"),
        format!("postgres://clix:s3cret-pw@127.0.0.1:{}/{db}?sslmode=require", pg.port()),
        format!("postgres://clix:s3cret-pw@127.0.0.1:{}/{db}?sslmode=verify-full", pg.port()),
        format!("postgres://clix:s3cret-pw@127.0.0.1:{}/{db}?nonsense=1", pg.port()),
        "postgres://clix:s3cret-pw@127.0.0.1:notaport/x".to_string(),
    ] {
        let err = Store::connect(&bad).unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("clix:***@"), "{text}");
        assert!(clix_memory::migrate(&bad).is_err(), "{bad}");
    }
}

#[test]
fn errors_say_which_problem_and_what_to_do() {
    let Some(pg) = server("errors_say_which_problem_and_what_to_do") else { return };
    let closed = clix_testkit::free_port();
    let err = Store::connect(&format!("postgres://clix@127.0.0.1:{closed}/mem")).unwrap_err();
    assert!(matches!(err, MemoryError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains("check the URL") && err.to_string().contains(&closed.to_string()), "{err}");

    let err = Store::connect(&format!("postgres://clix@127.0.0.1:{}/mem?sslmode=require", pg.port())).unwrap_err();
    assert!(matches!(err, MemoryError::BadLocation { .. }), "{err:?}");
    assert!(err.to_string().contains("TLS") && err.to_string().contains("sslmode=disable"), "{err}");

    for other in ["mysql://u@h/db", "  "] {
        let err = Store::connect(other).unwrap_err();
        assert!(err.to_string().contains("postgres://"), "{err}");
    }

    // A database clix never migrated: the command that does it.
    let url = pg.socket_url(&pg.create_database());
    let err = Store::connect(&url).unwrap_err();
    assert!(matches!(err, MemoryError::NeedsMigration { found: 0, wanted: 4, .. }), "{err:?}");
    assert!(err.to_string().contains("clix storage migrate"), "{err}");
}

#[test]
fn migrate_is_explicit_repeatable_and_never_goes_back() {
    let Some(pg) = server("migrate_is_explicit_repeatable_and_never_goes_back") else { return };
    let db = pg.create_database();
    let url = pg.socket_url(&db);
    assert_eq!(clix_memory::migrate(&url).unwrap(), Migrated { from: 0, to: 4 });
    assert_eq!(clix_memory::migrate(&url).unwrap(), Migrated { from: 4, to: 4 }, "nothing to do twice");
    let mut store = Store::connect(&url).unwrap();
    let id = store.store("kept through every migration", "t", "fact", "").unwrap();
    drop(store);

    // A newer clix migrated it: this one neither opens nor touches it.
    pg.psql(&db, "UPDATE clix_schema SET version = 99 WHERE component = 'memory'");
    for err in [Store::connect(&url).unwrap_err(), clix_memory::migrate(&url).unwrap_err()] {
        assert!(matches!(err, MemoryError::TooNew { found: 99, wanted: 4, .. }), "{err:?}");
        assert!(err.to_string().contains("upgrade clix"), "{err}");
    }
    assert_eq!(pg.psql(&db, "SELECT version FROM clix_schema WHERE component = 'memory'").trim(), "99");
    pg.psql(&db, "UPDATE clix_schema SET version = 4 WHERE component = 'memory'");
    assert_eq!(Store::connect(&url).unwrap().get(id).unwrap().unwrap().text, "kept through every migration");

    // Another part of clix's rows in the same table are left alone.
    pg.psql(&db, "INSERT INTO clix_schema (component, version) VALUES ('hub', 7)");
    clix_memory::migrate(&url).unwrap();
    assert_eq!(pg.psql(&db, "SELECT version FROM clix_schema WHERE component = 'hub'").trim(), "7");
}

#[test]
fn threads_migrating_one_fresh_database_at_once_all_succeed() {
    const THREADS: usize = 6;
    let Some(pg) = server("threads_migrating_one_fresh_database_at_once_all_succeed") else { return };
    for _ in 0..3 {
        let url = pg.socket_url(&pg.create_database());
        let start = std::sync::Barrier::new(THREADS);
        let results: Vec<Result<Migrated, String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        clix_memory::migrate(&url).map_err(|e| e.to_string())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let done: Vec<Migrated> = results.into_iter().map(Result::unwrap).collect();
        assert_eq!(done.iter().filter(|m| m.from == 0).count(), 1, "one migration ran the steps: {done:?}");
        assert!(done.iter().all(|m| m.to == 4));
        Store::connect(&url).unwrap();
    }
}

#[test]
fn a_postgres_migration_rereads_the_version_once_it_holds_the_lock() {
    let Some(pg) = server("a_postgres_migration_rereads_the_version_once_it_holds_the_lock") else { return };
    let db = pg.create_database();
    let url = pg.socket_url(&db);
    // Another migrator (a newer clix) holds the lock and is past this clix's version.
    let mut other = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut tx = other.transaction().unwrap();
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(hashtext('clix_schema'));
         CREATE TABLE clix_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL);
         INSERT INTO clix_schema VALUES ('memory', 1000);",
    )
    .unwrap();
    let migrated = std::thread::scope(|s| {
        let migrating = s.spawn(|| clix_memory::migrate(&url));
        std::thread::sleep(std::time::Duration::from_millis(500));
        tx.commit().unwrap();
        migrating.join().unwrap()
    });
    assert!(matches!(migrated, Err(MemoryError::TooNew { found: 1000, .. })), "{migrated:?}");
    assert_eq!(pg.psql(&db, "SELECT version FROM clix_schema").trim(), "1000", "never overwritten");
    assert_eq!(pg.psql(&db, "SELECT count(*) FROM pg_tables WHERE tablename = 'memories'").trim(), "0");
}

#[test]
fn a_server_restart_fails_calls_clearly_and_then_they_work_again() {
    if clix_testkit::postgres::pgserver_dir().is_none() {
        clix_testkit::skip_missing("a_server_restart_fails_calls_clearly", clix_testkit::postgres::MISSING);
        return;
    }
    // A server of its own: the test stops it.
    let pg = Postgres::start();
    let url = pg.tcp_url(&pg.create_database());
    clix_memory::migrate(&url).unwrap();
    let mut store = Store::connect(&url).unwrap();
    let before = store.store("stored before the restart", "t", "note", "").unwrap();
    pg.stop();
    let err = store.store("stored while it is down", "t", "note", "").unwrap_err();
    assert!(matches!(err, MemoryError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains("check the URL") && err.to_string().contains(&pg.port().to_string()), "{err}");
    assert!(store.search("restart", &Filter::default(), 5).is_err(), "every call fails while it is down");
    pg.start_again();
    let after = store.store("stored after the restart", "t", "note", "").unwrap();
    let found: Vec<i64> = store.search("restart", &Filter::default(), 5).unwrap().iter().map(|h| h.memory.id).collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.contains(&before) && found.contains(&after));
}

#[test]
fn a_search_path_in_the_url_keeps_the_tables_in_their_own_schema() {
    let Some(pg) = server("a_search_path_in_the_url_keeps_the_tables_in_their_own_schema") else { return };
    let db = pg.create_database();
    pg.psql(&db, "CREATE SCHEMA clix");
    let url = format!("{}?options=-csearch_path%3Dclix", pg.socket_url(&db));
    clix_memory::migrate(&url).unwrap();
    let mut store = Store::connect(&url).unwrap();
    let id = store.store("kept in the clix schema", "t", "note", "").unwrap();
    assert_eq!(store.search("schema", &Filter::default(), 5).unwrap()[0].memory.id, id);
    let tables = pg.psql(&db, "SELECT schemaname FROM pg_tables WHERE tablename IN ('memories', 'clix_schema')");
    assert_eq!(tables.split_whitespace().collect::<Vec<_>>(), vec!["clix", "clix"], "{tables}");
}

/// The memories' count and total length in tokens as the store's trigger
/// keeps them, and as counted from the memories themselves.
fn corpus_counts(pg: &Postgres, db: &str) -> (String, String) {
    let kept = pg.psql(db, "SELECT sum(docs) || ' ' || sum(tokens) FROM memory_fts_stats");
    let counted = pg.psql(db, "SELECT count(*) || ' ' || coalesce(sum(tokens), 0) FROM memories");
    (kept.trim().to_string(), counted.trim().to_string())
}

/// The postings (lexeme, memory, frequency, length, topic) as the store's
/// trigger keeps them, and as made from the memories: equal, or the first
/// difference.
fn postings_differ(pg: &Postgres, db: &str) -> String {
    pg.psql(
        db,
        "WITH made AS (SELECT u.lexeme, m.id, cardinality(u.positions) AS tf, m.tokens, m.topic
                       FROM memories m, unnest(m.tsv) AS u),
              kept AS (SELECT lexeme, id, tf, tokens, topic FROM memory_postings)
         SELECT coalesce(min(d), 'none') FROM (
             (SELECT 'missing ' || lexeme || ' ' || id AS d FROM (SELECT * FROM made EXCEPT ALL SELECT * FROM kept) a)
             UNION ALL
             (SELECT 'stale ' || lexeme || ' ' || id FROM (SELECT * FROM kept EXCEPT ALL SELECT * FROM made) b)
         ) x",
    )
    .trim()
    .to_string()
}

/// n(t) of every lexeme as the store's trigger keeps it, and as counted
/// from the memories' `tsvector`s: `lexeme:n …`, in lexeme order.
fn lexeme_counts(pg: &Postgres, db: &str) -> (String, String) {
    let kept = pg.psql(
        db,
        "SELECT coalesce(string_agg(lexeme || ':' || n, ' ' ORDER BY lexeme), '')
         FROM (SELECT lexeme, sum(docs) AS n FROM memory_lexeme_docs GROUP BY lexeme HAVING sum(docs) <> 0) k",
    );
    let counted = pg.psql(
        db,
        "SELECT coalesce(string_agg(lexeme || ':' || n, ' ' ORDER BY lexeme), '')
         FROM (SELECT l AS lexeme, count(*) AS n FROM memories, unnest(tsvector_to_array(tsv)) AS l GROUP BY l) c",
    );
    (kept.trim().to_string(), counted.trim().to_string())
}

#[test]
fn the_corpus_counts_follow_stores_forgets_and_concurrent_writers() {
    let Some(pg) = server("the_corpus_counts_follow_stores_forgets_and_concurrent_writers") else { return };
    let db = pg.create_database();
    let url = pg.socket_url(&db);
    clix_memory::migrate(&url).unwrap();
    assert_eq!(corpus_counts(pg, &db), ("0 0".to_string(), "0 0".to_string()));
    let mut store = Store::connect(&url).unwrap();
    let id = store.store("a memory of five words", "t", "note", "").unwrap();
    // Positions, not distinct lexemes: a repeated word counts each time.
    store.store("deploy deploy deploy", "t", "note", "").unwrap();
    assert_eq!(corpus_counts(pg, &db).0, "2 8");
    assert!(store.forget(id).unwrap());
    assert_eq!(corpus_counts(pg, &db).0, "1 3");
    // Writers on their own connections (their own slots, or shared ones).
    std::thread::scope(|s| {
        for t in 0..4 {
            let url = &url;
            s.spawn(move || {
                let mut store = Store::connect(url).unwrap();
                for n in 0..25 {
                    store.store(&format!("writer {t} memory {n}"), "t", "note", "").unwrap();
                }
            });
        }
    });
    let (kept, counted) = corpus_counts(pg, &db);
    assert_eq!(kept, counted);
    assert_eq!(kept, "101 403");
    let (kept, counted) = lexeme_counts(pg, &db);
    assert_eq!(kept, counted);
    assert!(kept.contains("deploy:1") && kept.contains("writer:100") && !kept.contains("five"), "{kept}");
    assert_eq!(postings_differ(pg, &db), "none");
}

#[test]
fn the_migration_to_bm25_keeps_every_memory_and_counts_them() {
    let Some(pg) = server("the_migration_to_bm25_keeps_every_memory_and_counts_them") else { return };
    let db = pg.create_database();
    let url = pg.socket_url(&db);
    clix_memory::migrate(&url).unwrap();
    let mut store = Store::connect(&url).unwrap();
    for text in ["the signing key rotates every Friday", "deploys need the VPN", "the VPN is down on Sundays"] {
        store.store(text, "t", "note", "").unwrap();
    }
    drop(store);
    // Back to schema version 1 (what steps 2 to 4 added, undone), memories kept.
    pg.psql(
        &db,
        "DROP TRIGGER memories_fts_stats_truncated ON memories; DROP FUNCTION clix_memory_fts_stats_truncated();
         DROP TRIGGER memories_fts_stats ON memories; DROP FUNCTION clix_memory_fts_stats();
         DROP FUNCTION clix_memory_fts_recount(); DROP TABLE memory_lexeme_docs; DROP TABLE memory_postings;
         DROP TABLE memory_fts_stats; ALTER TABLE memories DROP COLUMN tokens; DROP FUNCTION clix_tokens(tsvector);
         UPDATE clix_schema SET version = 1 WHERE component = 'memory'",
    );
    let err = Store::connect(&url).unwrap_err();
    assert!(matches!(err, MemoryError::NeedsMigration { found: 1, wanted: 4, .. }), "{err:?}");
    assert_eq!(clix_memory::migrate(&url).unwrap(), Migrated { from: 1, to: 4 });
    assert_eq!(corpus_counts(pg, &db), ("3 16".to_string(), "3 16".to_string()));
    let (kept, counted) = lexeme_counts(pg, &db);
    assert!(kept == counted && kept.contains("vpn:2"), "{kept} / {counted}");
    assert_eq!(postings_differ(pg, &db), "none");
    let mut store = Store::connect(&url).unwrap();
    let hits = store.search("vpn sundays", &Filter::default(), 5).unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].memory.text, "the VPN is down on Sundays");
    assert!(hits[0].bm25.unwrap() > hits[1].bm25.unwrap());
}

#[test]
fn a_truncate_resets_the_corpus_counts_and_the_migration_recounts_stale_ones() {
    let Some(pg) = server("a_truncate_resets_the_corpus_counts_and_the_migration_recounts_stale_ones") else { return };
    let db = pg.create_database();
    let url = pg.socket_url(&db);
    clix_memory::migrate(&url).unwrap();
    let mut store = Store::connect(&url).unwrap();
    for text in ["the signing key rotates every Friday", "deploys need the VPN"] {
        store.store(text, "t", "note", "").unwrap();
    }
    // A TRUNCATE fires no row trigger: the statement trigger zeroes the counts.
    pg.psql(&db, "TRUNCATE memories CASCADE");
    assert_eq!(corpus_counts(pg, &db), ("0 0".to_string(), "0 0".to_string()));
    store.store("the VPN is down on Sundays", "t", "note", "").unwrap();
    assert_eq!(corpus_counts(pg, &db), ("1 6".to_string(), "1 6".to_string()));
    let (kept, counted) = lexeme_counts(pg, &db);
    assert!(kept == counted && kept.contains("vpn:1") && !kept.contains("sign"), "{kept} / {counted}");
    assert_eq!(postings_differ(pg, &db), "none");
    // Counts a TRUNCATE left stale before step 3 existed are recounted by it.
    drop(store);
    pg.psql(
        &db,
        "DROP TRIGGER memories_fts_stats_truncated ON memories; DROP FUNCTION clix_memory_fts_stats_truncated();
         DROP FUNCTION clix_memory_fts_recount(); DROP TABLE memory_lexeme_docs; DROP TABLE memory_postings;
         UPDATE memory_fts_stats SET docs = docs + 40, tokens = tokens + 400 WHERE slot = 7;
         UPDATE clix_schema SET version = 2 WHERE component = 'memory'",
    );
    assert_eq!(clix_memory::migrate(&url).unwrap(), Migrated { from: 2, to: 4 });
    assert_eq!(corpus_counts(pg, &db), ("1 6".to_string(), "1 6".to_string()));
    let (kept, counted) = lexeme_counts(pg, &db);
    assert!(kept == counted && kept.contains("vpn:1"), "{kept} / {counted}");
}

/// The synchronous client blocks on a runtime of its own, which tokio
/// forbids on a thread that drives async tasks: a store opened, used and
/// dropped there (an agent's recall, a session's engine ending) must not
/// panic.
#[test]
fn a_store_works_on_a_thread_that_drives_async_tasks() {
    let Some(pg) = server("a_store_works_on_a_thread_that_drives_async_tasks") else { return };
    let url = pg.database();
    clix_memory::migrate(&url).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let found = runtime.block_on(async {
        let mut store = Store::connect(&url).unwrap();
        store.store("the runtime thread stores this", "t", "note", "").unwrap();
        let found = store.search("runtime", &Filter::default(), 5).unwrap().len();
        drop(store);
        found
    });
    assert_eq!(found, 1);
}

/// A seeded xorshift generator: the corpus and queries are the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// In 0..n.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A word of a 400-word vocabulary, the low ones far commoner (about
    /// the skew of real text: a few words in most memories, most in few).
    fn word(&mut self) -> String {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        format!("w{}", (400.0 * u.powi(3)) as usize)
    }
}

/// BM25 of every memory holding a query term, scored by a plain scan: the
/// corpus counts and n(t) counted from the memories themselves, the whole
/// `tsvector` unnested. The store's search must rank exactly as this does.
fn scan_bm25(words: &[String], topic: &str, keyword: &str, limit: usize) -> String {
    let fts: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
    format!(
        r#"
    WITH q AS MATERIALIZED (SELECT websearch_to_tsquery('clix_english', '{fts}') AS q),
    terms AS MATERIALIZED (
        SELECT substr(t[1], 2, length(t[1]) - 2) AS lexeme
        FROM q, regexp_matches(querytree(q.q), $re$'(?:[^']|'')*'$re$, 'g') AS t
    ),
    corpus AS MATERIALIZED (
        SELECT count(*)::float8 AS n, greatest(sum(tokens), 1)::float8 / greatest(count(*), 1) AS avgdl FROM memories
    ),
    found AS MATERIALIZED (
        SELECT m.id, m.topic, m.folded, m.tokens, m.tsv @@ (SELECT q FROM q) AS hit, u.lexeme,
               cardinality(u.positions) AS tf
        FROM memories m, unnest(m.tsv) u
        WHERE u.lexeme IN (SELECT lexeme FROM terms)
    ),
    idf AS MATERIALIZED (
        SELECT t.lexeme, greatest(ln((c.n - coalesce(d.n, 0) + 0.5) / (coalesce(d.n, 0) + 0.5)), 1e-6) AS idf
        FROM terms t CROSS JOIN corpus c
        LEFT JOIN (SELECT lexeme, count(*) AS n FROM found GROUP BY lexeme) d ON d.lexeme = t.lexeme
    )
    SELECT f.id || ' ' || round(sum(i.idf * f.tf * 2.2 / (f.tf + 1.2 * (0.25 + 0.75 * f.tokens / c.avgdl)))::numeric, 8)
    FROM found f JOIN idf i ON i.lexeme = f.lexeme CROSS JOIN corpus c
    WHERE f.hit AND ('{topic}' = '' OR f.topic = '{topic}') AND ('{keyword}' = '' OR strpos(f.folded, '{keyword}') > 0)
    GROUP BY f.id
    ORDER BY round(sum(i.idf * f.tf * 2.2 / (f.tf + 1.2 * (0.25 + 0.75 * f.tokens / c.avgdl)))::numeric, 9) DESC,
             f.id DESC
    LIMIT {limit};
    SELECT '--';
"#,
        fts = fts.join(" OR ")
    )
}

/// The search ranks from the postings and the kept n(t), in Rust; its
/// results must be exactly those of scoring every memory's `tsvector` in
/// SQL: a skewed vocabulary (common and rare terms in one query), filters
/// that leave fewer than `limit` matches, forgotten memories and a moved
/// topic (n(t) and the postings kept through them), limits of 5 and 20.
#[test]
fn full_text_search_ranks_exactly_as_scoring_every_memory() {
    let Some(pg) = server("full_text_search_ranks_exactly_as_scoring_every_memory") else { return };
    let db = pg.create_database();
    let url = pg.socket_url(&db);
    clix_memory::migrate(&url).unwrap();
    let mut store = Store::connect(&url).unwrap();
    let mut rng = Rng(0x5eed_cafe);
    let topics = ["alpha", "beta", "gamma", "delta"];
    let mut ids = Vec::new();
    for _ in 0..3000 {
        let words: Vec<String> = (0..4 + rng.below(11)).map(|_| rng.word()).collect();
        ids.push(store.store(&words.join(" "), topics[rng.below(topics.len())], "note", "").unwrap());
    }
    for id in ids.iter().step_by(9) {
        assert!(store.forget(*id).unwrap());
    }
    store.retopic("delta", "epsilon").unwrap();
    let (kept, counted) = lexeme_counts(pg, &db);
    assert_eq!(kept, counted, "n(t) as kept");
    assert_eq!(postings_differ(pg, &db), "none");

    let mut cases = Vec::new();
    for q in 0..60 {
        let words: Vec<String> = (0..1 + rng.below(6)).map(|_| rng.word()).collect();
        let topic = if q % 3 == 0 { topics[rng.below(topics.len())] } else { "" };
        let keyword = if q % 10 == 7 { format!("w{}", rng.below(10)) } else { String::new() };
        let limit = if q % 2 == 0 { 5 } else { 20 };
        cases.push((words, topic, keyword, limit));
    }
    let script: String = cases.iter().map(|(w, t, k, l)| scan_bm25(w, t, k, *l)).collect();
    let expected = pg.psql(&db, &script);
    let expected: Vec<&str> = expected.split("--\n").collect();
    let mut common_filled = 0;
    for (i, (words, topic, keyword, limit)) in cases.iter().enumerate() {
        let filter = Filter { topic, keyword };
        let hits = store.search(&words.join(" "), &filter, *limit).unwrap();
        let got: Vec<String> = hits.iter().map(|h| format!("{} {:.8}", h.memory.id, h.bm25.unwrap())).collect();
        let want: Vec<&str> = expected[i].lines().collect();
        assert_eq!(got, want, "query {words:?}, topic {topic:?}, keyword {keyword:?}, limit {limit}");
        if hits.len() == *limit && words.iter().any(|w| w.len() == 2) {
            common_filled += 1;
        }
    }
    // The skew gives queries with common words (w0–w9) that fill the limit:
    // the cases where many memories tie or nearly tie were there to be tested.
    assert!(common_filled >= 10, "only {common_filled} queries with a common word filled their limit");
}
