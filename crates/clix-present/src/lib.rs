//! Layer 2 of clix: how the final result of a command line is shown to a model.
//!
//! This crate owns the presentation rules of the `run` tool: the binary guard,
//! overflow previews with exact totals, `[stderr]` sections, `(no output)`,
//! the `[exit:N | 12ms]` footer (which names a failed pipeline stage the
//! exit code hides: `[exit:0 | jq exit 5 | 4ms]`) and the hints that turn an
//! error into a next step. Everything here is a pure function of its inputs.
//!
//! It must not execute anything, read files or know about the shell engine.
//! The only side effect, saving a full output that overflowed, goes through
//! the [`SpillSink`] the caller passes in, so the caller decides where (and
//! whether) bytes land on disk.

mod binary;
mod footer;
mod hints;
mod missing;
mod overflow;
mod render;

pub use binary::{BinaryKind, classify};
pub use footer::{StageExit, failed_stages, footer};
pub use hints::{Known, unknown_command_message};
pub use missing::{
    MISSING_PROGRAMS, MissingProgram, failure_hint, missing_program, needs_a_terminal, protected_git_hint,
};
pub use render::{Capture, CommandOutput, Origin, PresentOptions, Presentation, SpillSink, present, timeout_line};
