//! The hub's own state, shared by every clix process of a user: self-test
//! results (so a start does not re-run every tool's self-test) and the
//! recent calls a rate limit counts. One SQLite file in the state folder;
//! SQLite's locking makes the rate limit hold across processes.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use crate::readiness::Readiness;

/// How long concurrent clix processes wait for each other's write.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// A rate limit counts calls per this window.
const WINDOW_MS: i64 = 60_000;

pub(crate) struct HubState {
    conn: Mutex<Connection>,
}

impl HubState {
    pub(crate) fn open(path: &Path) -> Result<Self, String> {
        let fail = |e: &dyn std::fmt::Display| format!("hub state {}: {e}", path.display());
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
        }
        let conn = Connection::open(path).map_err(|e| fail(&e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| fail(&e))?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS self_tests (
                 key TEXT PRIMARY KEY, checked_ms INTEGER NOT NULL, readiness TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS calls (tool TEXT NOT NULL, ts_ms INTEGER NOT NULL);
             CREATE INDEX IF NOT EXISTS calls_by_tool ON calls (tool, ts_ms);",
        )
        .map_err(|e| fail(&e))?;
        Ok(HubState { conn: Mutex::new(conn) })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A cached self-test result younger than `ttl`.
    pub(crate) fn cached_readiness(&self, key: &str, now_ms: i64, ttl: Duration) -> Option<Readiness> {
        let row: Option<(i64, String)> = self
            .conn()
            .query_row("SELECT checked_ms, readiness FROM self_tests WHERE key = ?1", [key], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .ok()
            .flatten();
        let (checked, json) = row?;
        if now_ms - checked > ttl.as_millis() as i64 {
            return None;
        }
        serde_json::from_str(&json).ok()
    }

    pub(crate) fn remember_readiness(&self, key: &str, now_ms: i64, readiness: &Readiness) {
        let Ok(json) = serde_json::to_string(readiness) else { return };
        // A lost cache entry only means the self-test runs again next time.
        let _ = self.conn().execute(
            "INSERT INTO self_tests (key, checked_ms, readiness) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET checked_ms = excluded.checked_ms, readiness = excluded.readiness",
            params![key, now_ms, json],
        );
    }

    /// Counts a call of `tool` against `per_minute`; `Ok(Err(wait))` says
    /// how long until the oldest call in the window leaves it. A state file
    /// that cannot be written is an error: the limit is never skipped.
    pub(crate) fn take_call_slot(
        &self,
        tool: &str,
        per_minute: u32,
        now_ms: i64,
    ) -> Result<Result<(), Duration>, String> {
        let mut conn = self.conn();
        let slot = (|| -> rusqlite::Result<Result<(), Duration>> {
            // IMMEDIATE: the count and the insert are one step for every process.
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            tx.execute("DELETE FROM calls WHERE tool = ?1 AND ts_ms <= ?2", params![tool, now_ms - WINDOW_MS])?;
            let (count, oldest): (i64, Option<i64>) =
                tx.query_row("SELECT count(*), min(ts_ms) FROM calls WHERE tool = ?1", [tool], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
            if count >= i64::from(per_minute) {
                let wait = oldest.map_or(WINDOW_MS, |o| o + WINDOW_MS - now_ms).max(1);
                return Ok(Err(Duration::from_millis(wait as u64)));
            }
            tx.execute("INSERT INTO calls (tool, ts_ms) VALUES (?1, ?2)", params![tool, now_ms])?;
            tx.commit()?;
            Ok(Ok(()))
        })();
        slot.map_err(|e| format!("cannot count calls for the rate limit: {e}"))
    }
}
