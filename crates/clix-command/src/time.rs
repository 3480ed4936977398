//! The time of one command line, shared by everything the line runs.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Time left of the current command line, shared by the engine (which sets
/// it when a line starts) and the sandboxed programs of that line.
///
/// A program's time limit ends a little before the engine's own, so the
/// sandbox stops it (SIGTERM, exit 124, output kept, audited) before the
/// engine abandons the whole line.
#[derive(Clone, Default)]
pub struct Deadline(Arc<Mutex<Option<Instant>>>);

/// How much earlier than the line's limit a program is stopped.
const DEADLINE_MARGIN: Duration = Duration::from_millis(150);

impl Deadline {
    /// A line with `limit` to run starts now.
    pub fn start(&self, limit: Duration) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + limit);
    }

    /// Time a program may still take; `limit` when no line is running.
    pub fn remaining(&self, limit: Duration) -> Duration {
        match *self.0.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(end) => end.saturating_duration_since(Instant::now()).saturating_sub(DEADLINE_MARGIN),
            None => limit,
        }
    }
}

/// A call's time: what is left of the line's limit, and the limit itself
/// (the time-out message names it).
#[derive(Clone)]
pub struct CallTime {
    /// The running line's end.
    pub deadline: Deadline,
    /// The line's whole limit (`[limits] timeout_secs`).
    pub limit: Duration,
}

impl CallTime {
    /// Time the call may still take.
    pub fn remaining(&self) -> Duration {
        self.deadline.remaining(self.limit)
    }
}
