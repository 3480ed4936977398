//! The audit line of work in progress, written exactly once: by
//! [`Pending::finish`] when the work ends, or, when the work is given up
//! (its future dropped: a cancelled line, an outer time limit), as a
//! cancelled line when the guard is dropped. Every kind that audits work
//! (a sandbox run, a hub call, an MCP call, a clip call) uses this one
//! guard, so "given up" reads the same in every line.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::{AuditLog, Record};

/// The `error_code` of a call whose caller gave up on it.
pub const CANCELLED: &str = "CANCELLED";
/// The `ended` of a run whose caller gave up on it.
pub const ENDED_CANCELLED: &str = "cancelled";

/// A kind of record that can say its work was given up, and how long the
/// work took.
pub trait Cancellable: Record + Serialize {
    /// Marks the record as given up (with [`CANCELLED`] or
    /// [`ENDED_CANCELLED`], and `clix_common::exit::NO_CODE`).
    fn cancel(&mut self);
    /// Sets how long the work took; called just before the line is written.
    fn took(&mut self, elapsed: Duration);
}

/// Where a line goes: the log, and the session it belongs to.
pub type Sink<'a> = (&'a AuditLog, &'a str);

/// One piece of work's line, not written yet.
pub struct Pending<'a, R: Cancellable> {
    sink: Option<Sink<'a>>,
    record: Option<R>,
    started: Instant,
}

impl<'a, R: Cancellable> Pending<'a, R> {
    /// Work that starts now, to be recorded as `record`; with no `sink`
    /// (auditing is off, or the caller writes the line) nothing is written.
    pub fn new(sink: Option<Sink<'a>>, record: R) -> Self {
        Pending { sink, record: Some(record), started: Instant::now() }
    }

    /// The same, for work that started at `started`.
    pub fn since(sink: Option<Sink<'a>>, record: R, started: Instant) -> Self {
        Pending { sink, record: Some(record), started }
    }

    /// The record, to fill in as the work goes on; `None` once written.
    pub fn record(&mut self) -> Option<&mut R> {
        self.record.as_mut()
    }

    /// Writes the line, with the record as `update` leaves it. Only the
    /// first call writes.
    pub fn finish(&mut self, update: impl FnOnce(&mut R)) {
        if let Some(record) = self.record.as_mut() {
            update(record);
        }
        self.write();
    }

    fn write(&mut self) {
        let Some(mut record) = self.record.take() else { return };
        record.took(self.started.elapsed());
        let Some((log, session)) = self.sink else { return };
        if let Err(e) = log.append(session, &record) {
            // Losing an audit line must be visible, never silent.
            tracing::error!(path = %log.path.display(), error = %e, "cannot append to the audit log");
        }
    }
}

impl<R: Cancellable> Drop for Pending<'_, R> {
    fn drop(&mut self) {
        if let Some(record) = self.record.as_mut() {
            record.cancel();
        }
        self.write();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Work {
        what: String,
        ended: String,
        ms: u64,
    }

    impl Record for Work {
        const KIND: &'static str = "work";
    }

    impl Cancellable for Work {
        fn cancel(&mut self) {
            self.ended = ENDED_CANCELLED.into();
        }
        fn took(&mut self, elapsed: Duration) {
            self.ms = elapsed.as_millis() as u64;
        }
    }

    fn work(what: &str) -> Work {
        Work { what: what.into(), ended: String::new(), ms: 0 }
    }

    #[test]
    fn a_line_is_written_once_when_finished_or_as_cancelled_when_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"));
        {
            let mut done = Pending::new(Some((&log, "s1")), work("done"));
            done.finish(|w| w.ended = "exit".into());
            done.finish(|w| w.ended = "twice".into());
        }
        drop(Pending::new(Some((&log, "s1")), work("given up")));
        drop(Pending::new(None, work("not audited")));
        let lines: Vec<Work> = log.read::<Work>().unwrap().into_iter().map(|e| e.record).collect();
        let seen: Vec<(&str, &str)> = lines.iter().map(|w| (w.what.as_str(), w.ended.as_str())).collect();
        assert_eq!(seen, [("done", "exit"), ("given up", ENDED_CANCELLED)]);
    }
}
