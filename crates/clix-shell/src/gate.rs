//! The gate every command passes before it runs: the engine's policy,
//! plugged into bashkit's `before_tool` hook so it sees the resolved name
//! and expanded arguments of each command (inside `$( )`, pipelines,
//! functions, loops, `eval`, `source`, `bash -c`, and the commands `xargs`,
//! `timeout` or `find -exec` run), not the text of the line.

use std::path::Path;
use std::sync::Arc;

use bashkit::hooks::{HookAction, Interceptor, ToolEvent};

use crate::stop::LineStop;

/// Decides, command by command, whether a line may go on. A refusal stops
/// the whole line: the refused command and everything after it never run.
pub trait CommandGate: Send + Sync {
    /// A line is about to start in the shell's folder `cwd`. `Err(message)`
    /// refuses it whole, before anything runs (for what the per-command
    /// check cannot see).
    fn line_start(&self, line: &str, cwd: &Path) -> Result<(), String>;
    /// A command is about to run with these words (`argv[0]` its name) in
    /// the shell's folder `cwd`. `Err(message)` refuses it; the message
    /// becomes the line's stderr.
    fn admit(&self, argv: &[String], cwd: &Path) -> Result<(), String>;
}

/// The `before_tool` hook asking `gate` about every command; a refusal
/// stops the line through `stop`.
pub(crate) fn hook(stop: &Arc<LineStop>, gate: Arc<dyn CommandGate>) -> Interceptor<ToolEvent> {
    let stop = Arc::clone(stop);
    Box::new(move |event: ToolEvent| {
        if stop.is_stopped() {
            return HookAction::Cancel("the line was stopped".into());
        }
        // The event's words are moved into one argv and back, not copied:
        // this runs before every command of every line.
        let ToolEvent { name, args, cwd } = event;
        let mut argv = args;
        argv.insert(0, name);
        match gate.admit(&argv, &cwd) {
            Ok(()) => {
                let name = argv.remove(0);
                HookAction::Continue(ToolEvent { name, args: argv, cwd })
            }
            Err(message) => {
                stop.halt(message, clix_common::exit::CANNOT_RUN);
                HookAction::Cancel("refused by the policy".into())
            }
        }
    })
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
