//! The audit log, `<state>/audit.jsonl`: one JSON line for each thing clix did
//! on the person's behalf (an OS execution, a hub call, an MCP tool call, a
//! `clip` call, a policy decision other than a plain allow), written by several
//! crates into one file outside the workspace.
//!
//! It owns what those lines share, written once:
//!
//! - the envelope ([`Entry`]): `ts_ms` (Unix milliseconds, from [`now_ms`]),
//!   `kind`, `session`, then the kind's own fields flattened beside them, so
//!   every line is one flat JSON object and a reader filters by `kind`;
//! - the one writer ([`AuditLog::append`]): a whole line in one `write` on an
//!   `O_APPEND` file, so concurrent writers (threads, clix processes) never
//!   interleave inside a line; the file readable by its owner only (0600); a
//!   failure returned to the caller, who logs it, never a panic;
//! - the one reader ([`AuditLog::read`]): the lines of one kind (`hub stats`);
//! - the shared copy ([`AuditLog::shared`]): with `[storage] url` set, every
//!   line also goes to the shared store (clix-postgres), and the reader reads the
//!   store, so `hub stats` counts every replica's calls; the file stays as this
//!   machine's sink, written first, so nothing is lost while the store is down;
//! - the line of work in progress ([`Pending`], for a kind that is
//!   `Cancellable`): written once when the work ends, or, dropped unfinished,
//!   as cancelled (exit code `NO_CODE` with `CANCELLED`, or `ended =
//!   "cancelled"`), for every kind. The tidy test refuses a second copy of it;
//! - the redaction of secret-looking words in a command line ([`redact_argv`],
//!   [`redact_line`]) and in a tool call's arguments (`redact_json`), by
//!   `clix_common::is_secret_name` and the token shapes of
//!   `clix_common::redact_text`.
//!
//! The kinds and their fields belong to the crates that write them (`os`:
//! clix-sandbox, `hub`: clix-hub, `policy`: clix-engine, `clip`: clix-clip,
//! `mcp`: clix-hub's type, written by clix-engine for each MCP tool call), each
//! a type implementing [`Record`]; whether something is audited at all is each
//! caller's decision. This crate must not know any kind's fields, decide what
//! is secret (that rule is clix-common's), print, or put a record's content in
//! an error (an error names the file and the cause, never the line).

mod pending;
mod redact;

use std::io::{BufRead, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::Arc;

use clix_postgres::SharedStore;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use pending::{CANCELLED, Cancellable, ENDED_CANCELLED, Pending, Sink};
pub use redact::{browser_values, redact_argv, redact_json, redact_line};

/// A kind of audit line: its own fields, serialized as a JSON object that
/// the envelope flattens beside `ts_ms`, `kind` and `session` (so its field
/// names must not be those three).
pub trait Record {
    /// The line's `kind`: `os`, `hub`, `policy`, `clip`.
    const KIND: &'static str;
}

/// One line of the audit log: the envelope every kind shares and the
/// kind's own fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry<R> {
    /// When it was written, Unix milliseconds.
    pub ts_ms: u64,
    /// Which [`Record`] the rest of the line is.
    pub kind: String,
    /// The clix session (process or MCP connection) it belongs to.
    pub session: String,
    /// The kind's own fields.
    #[serde(flatten)]
    pub record: R,
}

/// The audit log file, under clix's state folder (outside any workspace the
/// agent can write), and the shared store's copy when there is one.
#[derive(Debug, Clone)]
pub struct AuditLog {
    /// The file.
    pub path: PathBuf,
    shared: Option<Arc<SharedStore>>,
}

impl AuditLog {
    /// The log in the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> AuditLog {
        AuditLog { path: path.into(), shared: None }
    }

    /// The same log, copied to `store` and read from it.
    pub fn shared(mut self, store: Arc<SharedStore>) -> AuditLog {
        self.shared = Some(store);
        self
    }

    /// Where [`AuditLog::read`] reads, for messages: the shared store (its
    /// URL, password as `***`) or the file.
    pub fn source(&self) -> String {
        match &self.shared {
            Some(store) => format!("in {}", store.shown()),
            None => self.path.display().to_string(),
        }
    }

    /// Appends `record` of `session` as one line, stamped now. The folder
    /// is made (0700) and the file created (0600) when missing; a log that
    /// others could read is made private first.
    pub fn append<R: Record + Serialize>(&self, session: &str, record: &R) -> std::io::Result<()> {
        let entry = Entry { ts_ms: now_ms(), kind: R::KIND.to_string(), session: session.to_string(), record };
        let mut line = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.write_line(&line)
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot append to {}: {e}", self.path.display())))?;
        let Some(store) = &self.shared else { return Ok(()) };
        let text = String::from_utf8_lossy(&line[..line.len() - 1]);
        let ts_ms = i64::try_from(entry.ts_ms).unwrap_or(i64::MAX);
        store.append_audit(ts_ms, R::KIND, session, &text).map_err(|e| {
            std::io::Error::other(format!("written to {} but not to the shared store: {e}", self.path.display()))
        })
    }

    fn write_line(&self, line: &[u8]) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        }
        let mut file = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(&self.path)?;
        // A log made by an older clix (umask's 0644) holds other sessions'
        // command lines: no one else may read the next one either.
        if file.metadata()?.permissions().mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        // One `write`, not `write_all`: a second call for the rest could
        // land after another process's line and tear both.
        let written = loop {
            match file.write(line) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        if written < line.len() {
            let why = format!("only {written} of the line's {} bytes were written", line.len());
            return Err(std::io::Error::new(std::io::ErrorKind::WriteZero, why));
        }
        Ok(())
    }

    /// The lines of kind `R`, oldest first (the shared store's, when it is
    /// set: every machine's). A missing log has none; lines
    /// of other kinds, and lines that do not parse (a torn write, an older
    /// shape), are skipped.
    pub fn read<R: Record + DeserializeOwned>(&self) -> std::io::Result<Vec<Entry<R>>> {
        if let Some(store) = &self.shared {
            let rows = store.audit(R::KIND).map_err(std::io::Error::other)?;
            return Ok(rows.iter().filter_map(|row| serde_json::from_str(&row.line).ok()).collect());
        }
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut entries = Vec::new();
        for line in std::io::BufReader::new(file).split(b'\n') {
            let line = line?;
            if let Ok(entry) = serde_json::from_slice::<Entry<R>>(&line)
                && entry.kind == R::KIND
            {
                entries.push(entry);
            }
        }
        Ok(entries)
    }
}

/// Now, in Unix milliseconds: the audit line's time, and the clock of the
/// small records kept beside the log (the hub's rate-limit and self-test
/// tables, clip's probe cache).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
