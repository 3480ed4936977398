//! What ends a line from outside bashkit's own control flow: the gate
//! refusing a command (exit 126), or the workspace mount refusing a file
//! bigger than the line's memory limit. Either records why, with the exit
//! code, and raises bashkit's cancellation flag, which ends the line at the
//! next command boundary; every later command is refused too, in case a
//! boundary is not checked before it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Why a line was stopped: the `[stderr]` text and the exit code.
pub(crate) struct Halt {
    pub(crate) message: String,
    pub(crate) exit_code: i32,
}

/// One session's stop: at most one [`Halt`] per line.
#[derive(Default)]
pub(crate) struct LineStop {
    halted: Mutex<Option<Halt>>,
    token: OnceLock<Arc<AtomicBool>>,
}

impl LineStop {
    /// Binds the engine's cancellation flag (known only once it is built).
    pub(crate) fn bind(&self, token: Arc<AtomicBool>) {
        let _ = self.token.set(token);
    }

    /// A new line: nothing stopped, the flag down.
    pub(crate) fn reset(&self) {
        let _ = self.take();
    }

    /// Why the line that just ended was stopped, if it was (the flag goes down).
    pub(crate) fn take(&self) -> Option<Halt> {
        let halt = self.slot().take();
        if let Some(token) = self.token.get() {
            token.store(false, Ordering::SeqCst);
        }
        halt
    }

    /// Whether this line was stopped already.
    pub(crate) fn is_stopped(&self) -> bool {
        self.slot().is_some()
    }

    /// Stops the line; the first reason given is the one kept.
    pub(crate) fn halt(&self, message: String, exit_code: i32) {
        self.slot().get_or_insert(Halt { message, exit_code });
        if let Some(token) = self.token.get() {
            token.store(true, Ordering::SeqCst);
        }
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Halt>> {
        self.halted.lock().unwrap_or_else(|p| p.into_inner())
    }
}
