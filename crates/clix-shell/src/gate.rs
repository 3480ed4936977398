//! The gate every command passes before it runs: the engine's policy,
//! plugged into bashkit's `before_tool` hook so it sees the resolved name
//! and expanded arguments of each command (inside `$( )`, pipelines,
//! functions, loops, `eval`, `source`, `bash -c`, and the commands `xargs`,
//! `timeout` or `find -exec` run), not the text of the line.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bashkit::hooks::{HookAction, Interceptor, ToolEvent};

/// Decides, command by command, whether a line may go on. A refusal stops
/// the whole line: the refused command and everything after it never run.
pub trait CommandGate: Send + Sync {
    /// A line is about to start in the shell's folder `cwd`. `Err(message)`
    /// refuses it whole, before anything runs (for what the per-command
    /// check cannot see).
    fn line_start(&self, line: &str, cwd: &Path) -> Result<(), String>;
    /// A command is about to run with these words (`argv[0]` its name).
    /// `Err(message)` refuses it; the message becomes the line's stderr.
    fn admit(&self, argv: &[String]) -> Result<(), String>;
}

/// What stops a line once a command was refused: the refusal's message,
/// and bashkit's cancellation flag, which ends the line at the next
/// command boundary. Every later command is refused too, in case a
/// boundary is not checked before it.
#[derive(Default)]
pub(crate) struct LineStop {
    refusal: Mutex<Option<String>>,
    token: OnceLock<Arc<AtomicBool>>,
}

impl LineStop {
    /// Binds the engine's cancellation flag (known only once it is built).
    pub(crate) fn bind(&self, token: Arc<AtomicBool>) {
        let _ = self.token.set(token);
    }

    /// A new line: nothing refused, the flag down.
    pub(crate) fn reset(&self) {
        let _ = self.take();
    }

    /// The refusal of the line that just ended, if any (the flag goes down).
    pub(crate) fn take(&self) -> Option<String> {
        let refusal = self.slot().take();
        if let Some(token) = self.token.get() {
            token.store(false, Ordering::SeqCst);
        }
        refusal
    }

    fn refuse(&self, message: String) {
        self.slot().get_or_insert(message);
        if let Some(token) = self.token.get() {
            token.store(true, Ordering::SeqCst);
        }
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.refusal.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The `before_tool` hook asking `gate` about every command.
    pub(crate) fn hook(self: &Arc<Self>, gate: Arc<dyn CommandGate>) -> Interceptor<ToolEvent> {
        let stop = Arc::clone(self);
        Box::new(move |event: ToolEvent| {
            if stop.slot().is_some() {
                return HookAction::Cancel("the line was stopped by the policy".into());
            }
            let argv: Vec<String> = std::iter::once(event.name.clone()).chain(event.args.iter().cloned()).collect();
            match gate.admit(&argv) {
                Ok(()) => HookAction::Continue(event),
                Err(message) => {
                    stop.refuse(message);
                    HookAction::Cancel("refused by the policy".into())
                }
            }
        })
    }
}

/// bashkit's own note for a cancelled command, dropped from a refused
/// line's stderr (the refusal says it better).
pub(crate) fn without_hook_notes(stderr: &[u8]) -> Vec<u8> {
    let mut kept = Vec::with_capacity(stderr.len());
    for line in stderr.split_inclusive(|b| *b == b'\n') {
        if !line.windows(29).any(|w| w == b"cancelled by before_tool hook") {
            kept.extend_from_slice(line);
        }
    }
    kept
}
