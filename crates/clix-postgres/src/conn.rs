//! One connection to the shared database, for one process: opened from a
//! URL, opened again when the server dropped it (a restart), and usable
//! from any thread.

use std::sync::{Mutex, MutexGuard};

use postgres::config::SslMode;
use postgres::{Client, Config, NoTls};

use crate::StoreError;

/// A connection to the store, shared by the threads of one process (one
/// operation at a time).
pub struct Connection {
    client: Mutex<Option<Client>>,
    config: Config,
    /// The URL with its password as `***`.
    shown: String,
}

impl Connection {
    /// Checks `url` and connects.
    pub fn open(url: &str) -> Result<Connection, StoreError> {
        let (config, shown) = parse_url(url)?;
        let connection = Connection { client: Mutex::new(None), config, shown };
        connection.with(|_| Ok(()))?;
        Ok(connection)
    }

    /// The store as messages name it: its URL, password as `***`.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Another connection to the same store, opened on its first use: for
    /// work that runs beside this one's (each runs one operation at a time).
    pub fn sibling(&self) -> Connection {
        Connection { client: Mutex::new(None), config: self.config.clone(), shown: self.shown.clone() }
    }

    /// A connection of its own, not shared (one whose session holds
    /// something, such as a lock, for as long as it lives).
    pub(crate) fn open_another(&self) -> Result<Client, StoreError> {
        off_runtime(|| self.connect())
    }

    /// Runs `work` on the connection (opened again first if the server
    /// closed it), off any async runtime.
    pub fn with<T: Send>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, postgres::Error> + Send,
    ) -> Result<T, StoreError> {
        off_runtime(|| {
            let mut slot = self.slot();
            if slot.as_ref().is_none_or(Client::is_closed) {
                *slot = Some(self.connect()?);
            }
            let Some(client) = slot.as_mut() else { unreachable_client(&self.shown)? };
            work(client).map_err(|e| self.fail(&e))
        })
    }

    /// `error` as the store's error: a lost connection is `Unreachable`.
    pub fn fail(&self, error: &postgres::Error) -> StoreError {
        classify(&self.shown, error)
    }

    fn slot(&self) -> MutexGuard<'_, Option<Client>> {
        self.client.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn connect(&self) -> Result<Client, StoreError> {
        self.config
            .connect(NoTls)
            .map_err(|e| StoreError::Unreachable { url: self.shown.clone(), message: message(&e) })
    }
}

fn unreachable_client<T>(shown: &str) -> Result<T, StoreError> {
    Err(StoreError::Unreachable { url: shown.to_string(), message: "no connection".into() })
}

/// The sync client closes its connection by blocking on a runtime of its
/// own, which panics on a thread that drives async tasks: closed off it.
impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(client) = self.client.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            close(client);
        }
    }
}

/// Closes `client` (ending its session, and every lock it held) from a
/// thread that may block.
pub(crate) fn close(client: Client) {
    off_runtime(move || drop(client));
}

/// Runs `work` here, or on a scoped thread of its own when this thread
/// drives async tasks: the synchronous client blocks on a runtime of its
/// own, which tokio forbids inside another (it panics).
pub fn off_runtime<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return work();
    }
    std::thread::scope(|s| match s.spawn(work).join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// The URL as a client configuration, and as it may be shown (password
/// as `***`); a URL asking for TLS is refused with what to do instead.
pub fn parse_url(url: &str) -> Result<(Config, String), StoreError> {
    let shown = clix_common::redact_url(url);
    let bad = |message: String| StoreError::BadUrl { shown: shown.clone(), message };
    if asks_for_tls(url) {
        return Err(bad("the URL asks for TLS (sslmode require or verify-*), which this clix does not support: \
             connect over a unix socket, loopback or a private network with sslmode=disable, or through a \
             TLS-terminating proxy"
            .into()));
    }
    let config: Config = url.parse().map_err(|e: postgres::Error| bad(format!("not a usable PostgreSQL URL ({e})")))?;
    if config.get_ssl_mode() == SslMode::Require {
        return Err(bad("the URL asks for TLS (sslmode=require), which this clix does not support".into()));
    }
    Ok((config, shown))
}

/// Whether the URL's `sslmode` is one that needs TLS.
fn asks_for_tls(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    lower
        .split(['?', '&'])
        .filter_map(|p| p.strip_prefix("sslmode="))
        .any(|mode| mode != "disable" && mode != "prefer" && mode != "allow")
}

/// `error` of the store shown as `shown`: a lost connection (closed, a
/// socket error, a connection exception, the server shutting down) is `Unreachable`.
pub fn classify(shown: &str, error: &postgres::Error) -> StoreError {
    let lost = error.is_closed()
        || std::error::Error::source(error).is_some_and(|s| s.is::<std::io::Error>())
        || error.as_db_error().is_some_and(|db| {
            let code = db.code().code();
            // Connection exceptions (08…) and the server shutting down (57P01–57P03).
            code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
        });
    if lost {
        return StoreError::Unreachable { url: shown.to_string(), message: message(error) };
    }
    StoreError::Postgres { url: shown.to_string(), message: message(error) }
}

/// The server's own message, when there is one (else the client's).
pub fn message(e: &postgres::Error) -> String {
    e.as_db_error().map_or_else(|| e.to_string(), |db| db.message().to_string())
}
