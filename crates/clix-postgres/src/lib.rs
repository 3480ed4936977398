//! The PostgreSQL database that clix processes on many machines share when
//! `[storage] url` is set (issue 32): what every user of it needs, and the
//! shared records other than memories (clix-memory keeps those, on this crate's
//! `Connection` and `schema::Component`).
//!
//! It owns:
//!
//! - the connection ([`Connection`]): a URL checked (`parse_url`) and shown
//!   without its password, TLS refused with what to do instead, a connection
//!   opened again after the server restarted (`classify` tells a lost
//!   connection from an error), and usable from any thread (the synchronous
//!   client panics on a thread that drives async tasks, so there it runs on a
//!   scoped thread of its own: [`off_runtime`]);
//! - the schema versions (`clix_schema`, one row per component) and their
//!   explicit migration ([`schema`]: the check and the steps in one transaction
//!   under one advisory lock, after an optional prelude such as memory's
//!   `CREATE EXTENSION vector`): a database at another version is an error that
//!   says what to run, never a silent change;
//! - the shared records ([`SharedStore`]): the calls a rate limit counts
//!   (`clix_rate_windows`: per name, the call times of the last minute on the
//!   server's clock, the row locked between count and insert, so two replicas
//!   never both take the last slot), locks held while a call runs (advisory
//!   locks on a connection of their own, released by the server when the
//!   holder's connection ends, even by SIGKILL), audit lines (`clix_audit`, the
//!   whole line as JSON), and documents by kind and key (`clix_documents`: plan
//!   checkpoints, eval results).
//!
//! It must not know what a hub tool, an audit kind, a plan or an eval is
//! (callers give names and JSON), decide policy, migrate unless asked, or
//! print.

mod conn;
pub mod schema;
mod shared;

pub use conn::{Connection, classify, message, off_runtime, parse_url};
pub use shared::{AuditRow, LockSession, SCHEMA, SharedStore};

/// Why the store could not do what was asked; every message names the
/// store (password as `***`) and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The setting is not a URL this clix can use.
    #[error("storage {shown}: {message}")]
    BadUrl {
        /// The setting, password as `***`.
        shown: String,
        /// What is wrong and what to give instead.
        message: String,
    },
    /// No connection: the server is down, unreachable or refused it.
    #[error(
        "storage {url} is unreachable ({message}): check that the server is running and the URL in \
         [storage] url (or CLIX_STORAGE_URL) is right"
    )]
    Unreachable {
        /// The store's URL, password as `***`.
        url: String,
        /// Why, from the client.
        message: String,
    },
    /// The database holds another schema version of a component.
    #[error(
        "storage {url}: the {component} schema is at version {found}, this clix needs {wanted}: run \
         `clix storage migrate`"
    )]
    NeedsMigration {
        /// The store's URL, password as `***`.
        url: String,
        /// The component (`shared`, `memory`).
        component: &'static str,
        /// The version found (0: none).
        found: i32,
        /// This clix's version.
        wanted: i32,
    },
    /// The database was migrated by a newer clix.
    #[error(
        "storage {url}: the {component} schema is at version {found}, newer than this clix's {wanted}: \
         upgrade clix (nothing was changed)"
    )]
    TooNew {
        /// The store's URL, password as `***`.
        url: String,
        /// The component.
        component: &'static str,
        /// The version found.
        found: i32,
        /// This clix's version.
        wanted: i32,
    },
    /// The server refused a statement.
    #[error("storage {url}: {message}")]
    Postgres {
        /// The store's URL, password as `***`.
        url: String,
        /// The server's message (or the client's).
        message: String,
    },
}

impl StoreError {
    /// Whether the store could not be reached (worth trying again later).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, StoreError::Unreachable { .. })
    }
}
