//! `serialize: true`: one call of a tool at a time (seed 001: "tools that
//! write fixed temp files run one at a time"), across every clix process
//! of the user, or of every machine when they share a store. On one
//! machine, an exclusive `flock` on a file per tool in the state folder;
//! with a shared store, a PostgreSQL advisory lock on a connection of the
//! call's own. Either is released when its holder ends, even killed: the
//! kernel closes the file, the server sees the connection end.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use clix_postgres::{LockSession, SharedStore};

/// How often a waiting call tries the lock again.
const POLL: Duration = Duration::from_millis(10);

/// Where the locks are.
pub(crate) enum Locks<'a> {
    /// Files in this folder: this machine's processes.
    Files(&'a Path),
    /// The shared store: every machine's.
    Shared(&'a SharedStore),
}

/// Held while the call runs; dropping it releases the lock.
pub(crate) enum CallLock {
    File { _file: File },
    Shared { _session: Box<LockSession> },
}

impl Locks<'_> {
    /// Waits up to `patience` for the tool's lock. `Ok(None)` means another
    /// call still held it when the time was up.
    pub(crate) async fn acquire(&self, tool: &str, patience: Duration) -> Result<Option<CallLock>, String> {
        let until = Instant::now() + patience;
        match self {
            Locks::Files(dir) => {
                let file = lock_file(dir, tool).map_err(|e| format!("{}: {e}", dir.display()))?;
                loop {
                    // Never blocks the runtime: another holder is waited for here, in steps.
                    match file.try_lock() {
                        Ok(()) => return Ok(Some(CallLock::File { _file: file })),
                        Err(std::fs::TryLockError::WouldBlock) => {}
                        Err(std::fs::TryLockError::Error(err)) => return Err(format!("{}: {err}", dir.display())),
                    }
                    if !wait(until).await {
                        return Ok(None);
                    }
                }
            }
            Locks::Shared(store) => {
                let mut session = store.lock_session().map_err(|e| e.to_string())?;
                loop {
                    if session.try_lock("clix hub serialize", tool).map_err(|e| e.to_string())? {
                        return Ok(Some(CallLock::Shared { _session: Box::new(session) }));
                    }
                    if !wait(until).await {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

fn lock_file(dir: &Path, tool: &str) -> std::io::Result<File> {
    std::fs::create_dir_all(dir)?;
    File::options().create(true).truncate(false).write(true).open(dir.join(format!("{}.lock", file_name(tool))))
}

/// A key as a file name in the locks folder: an MCP server's tool is named
/// by its server, so `/` and the like are escaped, never a path.
fn file_name(key: &str) -> String {
    key.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b' ' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Sleeps a poll interval unless `until` has passed: whether to try again.
async fn wait(until: Instant) -> bool {
    if Instant::now() >= until {
        return false;
    }
    tokio::time::sleep(POLL).await;
    true
}
