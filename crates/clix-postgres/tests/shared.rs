//! The shared store against a real PostgreSQL: explicit migration, a rate
//! limit that holds across connections under concurrency, advisory locks
//! released when their holder goes (dropped, or its process killed), audit
//! lines and documents, and a server restart under an open store.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::sync::Barrier;
use std::time::Duration;

use clix_postgres::{SharedStore, StoreError};
use clix_testkit::Postgres;

fn server(test: &str) -> Option<&'static Postgres> {
    Postgres::for_test(test)
}

/// A migrated database of its own.
fn store(pg: &Postgres) -> (String, SharedStore) {
    let url = pg.database();
    SharedStore::migrate(&url).unwrap();
    let store = SharedStore::connect(&url).unwrap();
    (url, store)
}

#[test]
fn a_store_is_used_only_once_migrated_and_migrating_twice_changes_nothing() {
    let Some(pg) = server("a_store_is_used_only_once_migrated_and_migrating_twice_changes_nothing") else { return };
    let url = pg.database();
    let err = SharedStore::connect(&url).expect_err("an empty database is refused");
    assert!(matches!(err, StoreError::NeedsMigration { found: 0, wanted: 1, .. }), "{err:?}");
    assert!(err.to_string().contains("run `clix storage migrate`"), "{err}");
    assert_eq!(SharedStore::migrate(&url).unwrap(), (0, 1));
    assert_eq!(SharedStore::migrate(&url).unwrap(), (1, 1));
    SharedStore::connect(&url).unwrap();
    // A newer clix's schema is left alone and named.
    let db = url.rsplit('/').next().unwrap();
    pg.psql(db, "UPDATE clix_schema SET version = 9 WHERE component = 'shared'");
    let err = SharedStore::connect(&url).expect_err("a newer schema is refused");
    assert!(matches!(err, StoreError::TooNew { found: 9, .. }) && err.to_string().contains("upgrade clix"), "{err}");
    assert!(SharedStore::migrate(&url).is_err());
    assert_eq!(pg.psql(db, "SELECT version FROM clix_schema WHERE component = 'shared'").trim(), "9");
}

#[test]
fn a_bad_or_tls_url_is_refused_with_its_password_hidden() {
    let closed = clix_testkit::free_port();
    for (url, says) in [
        ("postgres://u:s3cret@localhost/db?sslmode=require".to_string(), "TLS"),
        (format!("postgres://u:s3cret@127.0.0.1:{closed}/db"), "check that the server is running"),
        ("postgres://u:s3cret@localhost:notaport/db".to_string(), "not a usable PostgreSQL URL"),
    ] {
        let err = SharedStore::connect(&url).expect_err("refused");
        let text = err.to_string();
        assert!(text.contains(says) && text.contains("u:***@") && !text.contains("s3cret"), "{text}");
    }
}

#[test]
fn a_rate_limit_counts_every_connection_once_under_concurrency() {
    let Some(pg) = server("a_rate_limit_counts_every_connection_once_under_concurrency") else { return };
    let (url, _) = store(pg);
    let callers = 8;
    let barrier = Barrier::new(callers);
    let outcomes: Vec<Result<(), Duration>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..callers)
            .map(|_| {
                s.spawn(|| {
                    let store = SharedStore::connect(&url).unwrap();
                    barrier.wait();
                    (0..3).map(|_| store.take_call_slot("weather", 5).unwrap()).collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 5, "{outcomes:?}");
    for wait in outcomes.iter().filter_map(|o| o.err()) {
        assert!(wait > Duration::from_secs(50) && wait <= Duration::from_secs(60), "{wait:?}");
    }
    // Another name has its own window.
    let store = SharedStore::connect(&url).unwrap();
    assert_eq!(store.take_call_slot("other", 1).unwrap(), Ok(()));
    assert!(store.take_call_slot("other", 1).unwrap().is_err());
}

#[test]
fn a_lock_is_held_until_its_session_ends() {
    let Some(pg) = server("a_lock_is_held_until_its_session_ends") else { return };
    let (_, store) = store(pg);
    let mut first = store.lock_session().unwrap();
    let mut second = store.lock_session().unwrap();
    assert!(first.try_lock("hub", "convert").unwrap());
    assert!(!second.try_lock("hub", "convert").unwrap(), "held by the first session");
    assert!(second.try_lock("hub", "other").unwrap(), "another name is another lock");
    drop(first);
    let mut third = store.lock_session().unwrap();
    assert!(third.try_lock("hub", "convert").unwrap(), "released with its session");
}

#[test]
fn a_lock_held_by_a_killed_process_is_released() {
    let Some(pg) = server("a_lock_held_by_a_killed_process_is_released") else { return };
    let (url, store) = store(pg);
    let db = url.rsplit('/').next().unwrap().to_string();
    // A psql that takes the lock and then waits on its stdin; killed, its
    // connection ends without a word and the server releases the lock.
    let mut holder = std::process::Command::new(pg.bin("psql"))
        .arg("-h")
        .arg(pg.socket_dir())
        .args(["-p", &pg.port().to_string(), "-U", "postgres", "-d", &db, "-q", "-v", "ON_ERROR_STOP=1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let stdin = holder.stdin.as_mut().unwrap();
        writeln!(stdin, "SELECT pg_advisory_lock(hashtext('hub'), hashtext('convert'));").unwrap();
        stdin.flush().unwrap();
    }
    let mut mine = store.lock_session().unwrap();
    let held_elsewhere = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(25));
        pg.psql(&db, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted").trim() == "1"
    });
    assert!(held_elsewhere, "the holder took the lock");
    assert!(!mine.try_lock("hub", "convert").unwrap());
    holder.kill().unwrap();
    holder.wait().unwrap();
    let released = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(25));
        mine.try_lock("hub", "convert").unwrap()
    });
    assert!(released, "the server released the killed holder's lock");
}

#[test]
fn audit_lines_and_documents_round_trip() {
    let Some(pg) = server("audit_lines_and_documents_round_trip") else { return };
    let (_, store) = store(pg);
    store.append_audit(1, "hub", "s1", r#"{"ts_ms":1,"kind":"hub","session":"s1","tool":"a"}"#).unwrap();
    store.append_audit(2, "os", "s1", r#"{"ts_ms":2,"kind":"os","session":"s1"}"#).unwrap();
    store.append_audit(3, "hub", "s2", r#"{"ts_ms":3,"kind":"hub","session":"s2","tool":"b"}"#).unwrap();
    let hub = store.audit("hub").unwrap();
    assert_eq!(hub.iter().map(|r| (r.ts_ms, r.session.as_str())).collect::<Vec<_>>(), [(1, "s1"), (3, "s2")]);
    let line: serde_json::Value = serde_json::from_str(&hub[1].line).unwrap();
    assert_eq!(line["tool"], "b");
    assert!(store.append_audit(4, "hub", "s1", "not json").is_err(), "a line must be JSON");

    assert_eq!(store.document("plan", "k1").unwrap(), None);
    store.save_document("plan", "k1", r#"{"done":1}"#).unwrap();
    store.save_document("plan", "k1", r#"{"done":2}"#).unwrap();
    store.save_document("plan", "k0", r#"{"done":0}"#).unwrap();
    store.save_document("eval", "k1", r#"{"other":true}"#).unwrap();
    let body: serde_json::Value = serde_json::from_str(&store.document("plan", "k1").unwrap().unwrap()).unwrap();
    assert_eq!(body["done"], 2, "saving replaces");
    assert_eq!(store.document_keys("plan").unwrap(), ["k0", "k1"]);
}

#[test]
fn a_restarted_server_fails_calls_while_down_and_serves_them_after() {
    if server("a_restarted_server_fails_calls_while_down_and_serves_them_after").is_none() {
        return;
    }
    // A server of its own: the test stops it.
    let pg = Postgres::start();
    let url = pg.tcp_url(&pg.create_database());
    SharedStore::migrate(&url).unwrap();
    let store = SharedStore::connect(&url).unwrap();
    assert_eq!(store.take_call_slot("t", 2).unwrap(), Ok(()));
    pg.stop();
    let err = store.take_call_slot("t", 2).unwrap_err();
    assert!(err.is_unreachable() && err.to_string().contains(&pg.port().to_string()), "{err}");
    assert!(store.append_audit(1, "hub", "s", "{}").unwrap_err().is_unreachable());
    pg.start_again();
    assert_eq!(store.take_call_slot("t", 2).unwrap(), Ok(()), "the call before the restart still counts");
    assert!(store.take_call_slot("t", 2).unwrap().is_err());
}
