//! Layer 2 of clix: how the final result of a command line is shown to a model.
//!
//! This crate owns the presentation rules of the `run` tool: the binary guard,
//! overflow previews (head and tail) with exact totals and the marker that
//! names the spilled file, `[stderr]` sections, `(no output)`, the time-out
//! line, the `[exit:N | 12ms]` footer (which names a failed pipeline stage the
//! exit code hides: `[exit:0 | jq exit 5 | 4ms]`, `failed_stages` saying which
//! stages count) and the hints that turn an error into a next step. Layer 2
//! runs once, on the whole line's result.
//!
//! It also owns the wording of the unknown-command error
//! ([`unknown_command_message`]) and of the cannot-run hints (`failure_hint`,
//! from a table of programs an agent reaches for that are not here). Layer 1
//! calls these while the line runs, so each lands as its stage's own stderr,
//! where the line's redirections can reach it, as bash's "command not found"
//! does; the words are still written once, here. (The time-out line's words are
//! `clix_common::timeout_line`, since a sandboxed stage and a `clip` call write
//! them too.)
//!
//! Everything here is a pure function of its inputs. It must not execute
//! anything, read files or know about the shell engine. The only side effect,
//! saving a full output that overflowed, goes through the [`SpillSink`] the
//! caller passes in, so the caller decides where (and whether) bytes land on
//! disk.

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
pub use render::{Capture, CommandOutput, Origin, PresentOptions, Presentation, SpillSink, present};
