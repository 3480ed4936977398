//! The sandbox's audit line: one `kind: "os"` record per OS execution,
//! written through the shared audit log (`clix-audit`: the envelope, the
//! writer and the redaction of the argv).

use serde::Serialize;

pub use clix_audit::{AuditLog, redact_argv};

/// What one OS execution did; the envelope (time, kind, session) is
/// `clix_audit`'s.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    /// Program and arguments, secret-looking values redacted (`clix_audit::redact_argv`).
    pub argv: Vec<String>,
    /// The working folder.
    pub cwd: String,
    /// Its exit code (-1 when cancelled).
    pub exit_code: i32,
    /// Wall time.
    pub duration_ms: u128,
    /// Bytes written to stdout, kept or not.
    pub stdout_bytes: u64,
    /// Bytes written to stderr, kept or not.
    pub stderr_bytes: u64,
    /// `exit`, `timeout`, or `cancelled` (the caller stopped waiting; exit_code is -1).
    pub ended: String,
    /// The sandbox mode: `bwrap`, or `host` when it ran unsandboxed by the person's choice.
    pub mode: String,
}

impl clix_audit::Record for AuditRecord {
    const KIND: &'static str = "os";
}

impl clix_audit::Cancellable for AuditRecord {
    fn cancel(&mut self) {
        self.exit_code = clix_common::exit::NO_CODE;
        self.ended = clix_audit::ENDED_CANCELLED.into();
    }

    fn took(&mut self, elapsed: std::time::Duration) {
        self.duration_ms = elapsed.as_millis();
    }
}
