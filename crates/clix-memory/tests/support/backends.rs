//! The conformance suite's two backends: each test is written once as a
//! function of a [`Fixture`], and `conformance!` makes one `#[test]` per
//! backend of it (`sqlite::NAME`, `postgres::NAME`). A PostgreSQL test
//! gets its own database on the test binary's one server (clix-testkit);
//! without the server installed it is skipped (failed under CI).

#![allow(dead_code)] // each test binary uses its own part of it

use std::path::PathBuf;

use clix_memory::Store;

/// Which store a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// One test's store: an SQLite file in a temporary folder, or a fresh,
/// migrated PostgreSQL database.
pub(crate) struct Fixture {
    pub(crate) backend: Backend,
    /// The SQLite file's folder (also the test's scratch folder).
    pub(crate) dir: tempfile::TempDir,
    /// What `Store::connect` takes: the file's path, or the database's URL.
    pub(crate) location: String,
    /// The PostgreSQL database's name (empty for SQLite).
    pub(crate) database: String,
}

impl Fixture {
    /// A store for test `test` on `backend`; `None` when PostgreSQL is not
    /// installed (the skip is recorded).
    pub(crate) fn new(backend: Backend, test: &str) -> Option<Fixture> {
        let dir = tempfile::tempdir().unwrap();
        match backend {
            Backend::Sqlite => {
                let location = dir.path().join("memory.sqlite").display().to_string();
                Some(Fixture { backend, dir, location, database: String::new() })
            }
            Backend::Postgres => {
                let server = clix_testkit::Postgres::for_test(test)?;
                let database = server.create_database();
                let location = server.socket_url(&database);
                clix_memory::migrate(&location).unwrap();
                Some(Fixture { backend, dir, location, database })
            }
        }
    }

    /// A second, empty store of the same backend.
    pub(crate) fn another(&self) -> Fixture {
        Fixture::new(self.backend, "another store").unwrap()
    }

    /// The store, opened again (another connection: as another process would).
    pub(crate) fn open(&self) -> Store {
        Store::connect(&self.location).unwrap()
    }

    /// The SQLite file (for the checks only SQLite has).
    pub(crate) fn file(&self) -> PathBuf {
        PathBuf::from(&self.location)
    }

    /// Runs SQL in the PostgreSQL database (for checks of its tables).
    pub(crate) fn psql(&self, sql: &str) -> String {
        let server = clix_testkit::Postgres::shared().unwrap();
        server.psql(&self.database, sql)
    }
}

/// One `#[test]` per backend for each function named: `sqlite::NAME` and
/// `postgres::NAME` call `NAME` with a fresh [`Fixture`] of their backend.
macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[test] fn $name() {
                let test = concat!("sqlite::", stringify!($name));
                if let Some(f) = super::backends::Fixture::new(super::backends::Backend::Sqlite, test) {
                    super::$name(f)
                }
            })*
        }
        mod postgres {
            $(#[test] fn $name() {
                let test = concat!("postgres::", stringify!($name));
                if let Some(f) = super::backends::Fixture::new(super::backends::Backend::Postgres, test) {
                    super::$name(f)
                }
            })*
        }
    };
}
pub(crate) use conformance;
