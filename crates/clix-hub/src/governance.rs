//! Rate limits and `serialize` for calls named by a key: a hub tool's name,
//! or `SERVER TOOL` for an MCP server's tool (clix-engine calls these for
//! `[[mcp.server]]` entries). One implementation for both: the counts in the
//! state folder's `hub.sqlite` (or the shared store), the locks as files in
//! its `locks/` (or advisory locks in the shared store).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clix_postgres::SharedStore;

use crate::readiness;
use crate::serialize::{CallLock, Locks};
use crate::state::HubState;

/// Exit code of a call refused for now (sysexits' `EX_TEMPFAIL`).
const TRY_LATER: i32 = clix_common::exit::TRY_LATER;

/// Where a user's rate counts and locks are, shared by every clix process
/// (and every machine with a shared store). Cheap to clone.
#[derive(Clone)]
pub struct Governance {
    inner: Arc<Inner>,
}

struct Inner {
    state_dir: PathBuf,
    shared: Option<Arc<SharedStore>>,
    /// `hub.sqlite`, opened on first use: a session that limits nothing never touches it.
    state: OnceLock<Result<HubState, String>>,
}

impl std::fmt::Debug for Governance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Governance")
            .field("state_dir", &self.inner.state_dir)
            .field("shared", &self.inner.shared.is_some())
            .finish()
    }
}

/// A call clix refuses before it is made: `[error] NAME: CODE: message`
/// then `hint: …`, as a hub tool's refusal reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `RATE_LIMITED`, `RATE_LIMIT_UNAVAILABLE`, `BUSY` or `LOCK_FAILED`: the audit line's `error_code`.
    pub code: &'static str,
    /// What happened.
    pub message: String,
    /// What to do.
    pub hint: String,
    /// The exit code: 75, try later.
    pub exit_code: i32,
}

impl Refusal {
    fn new(code: &'static str, message: String, hint: impl Into<String>) -> Self {
        Refusal { code, message, hint: hint.into(), exit_code: TRY_LATER }
    }

    /// The stderr of the refused call of `name`.
    pub fn text(&self, name: &str) -> String {
        format!("[error] {name}: {}: {}\nhint: {}\n", self.code, self.message, self.hint)
    }
}

/// Held while a serialized call runs; dropping it lets the next one in.
pub struct Held {
    _lock: CallLock,
}

impl Governance {
    /// Counts and locks in `state_dir` (`hub.sqlite`, `locks/`), or in
    /// `shared` when the session has a shared store.
    pub fn new(state_dir: PathBuf, shared: Option<Arc<SharedStore>>) -> Self {
        Governance { inner: Arc::new(Inner { state_dir, shared, state: OnceLock::new() }) }
    }

    /// This machine's state file, opened once.
    pub(crate) fn state(&self) -> Result<&HubState, &String> {
        let inner = &self.inner;
        inner.state.get_or_init(|| HubState::open(&inner.state_dir.join("hub.sqlite"))).as_ref()
    }

    /// What to do when the rate counts or the locks cannot be reached.
    fn state_hint(&self) -> &'static str {
        match self.inner.shared {
            Some(_) => "the shared store ([storage] url) must be reachable: see the error, then retry",
            None => "make clix's state folder writable",
        }
    }

    /// Counts a call of `key` against `per_minute`, or refuses it with
    /// when to retry. A count that cannot be kept refuses too: the limit
    /// is never skipped.
    pub fn take_slot(&self, key: &str, per_minute: u32) -> Result<(), Refusal> {
        let slot = match &self.inner.shared {
            Some(shared) => shared.take_call_slot(key, per_minute).map_err(|e| e.to_string()),
            None => {
                self.state().map_err(Clone::clone).and_then(|s| s.take_call_slot(key, per_minute, readiness::now_ms()))
            }
        };
        match slot {
            Ok(Ok(())) => Ok(()),
            Ok(Err(wait)) => Err(Refusal::new(
                "RATE_LIMITED",
                format!("more than {per_minute} calls in the last minute (rate_limit)"),
                format!("retry in {} s", wait.as_millis().div_ceil(1000).max(1)),
            )),
            Err(e) => Err(Refusal::new("RATE_LIMIT_UNAVAILABLE", e, self.state_hint())),
        }
    }

    /// Waits up to `patience` for `key`'s lock: one call of it at a time.
    pub async fn serialize(&self, key: &str, patience: Duration) -> Result<Held, Refusal> {
        let lock_dir = self.inner.state_dir.join("locks");
        let locks = match &self.inner.shared {
            Some(shared) => Locks::Shared(shared),
            None => Locks::Files(&lock_dir),
        };
        match locks.acquire(key, patience).await {
            Ok(Some(lock)) => Ok(Held { _lock: lock }),
            Ok(None) => Err(Refusal::new(
                "BUSY",
                format!("another call of {key} ran for the whole {} ms limit", patience.as_millis()),
                "this tool runs one call at a time (serialize); retry when it is done",
            )),
            Err(e) => Err(Refusal::new("LOCK_FAILED", e, self.state_hint())),
        }
    }
}
