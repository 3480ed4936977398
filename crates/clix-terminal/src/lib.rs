//! What a person sees of clix on a terminal, for the `clix` binary (as
//! codex-rs keeps its `tui` apart from its `cli`): a run's events rendered
//! ([`render`]), the model's answer drawn as Markdown ([`answer`]), the
//! chat's line editor ([`editor`]), the progress of an eval ([`progress`])
//! and of a plan ([`plan_view`]), the saved runs as a table ([`runs`]), and
//! questions put on `/dev/tty` with the spinner paused ([`ask`]), an
//! engine's notices said once per workspace ([`notices`]), and the one
//! `tracing` subscriber, on stderr ([`logging`]).
//!
//! Every text from a model, a workspace file or a server reaches the
//! terminal through [`text::visible`]: its control characters are shown,
//! never obeyed.
//!
//! It must not decide what runs: it draws what the binary and the library
//! crates produce, and reads nothing but the terminal and its size.

pub mod answer;
pub mod ask;
pub mod changes_view;
pub mod commands_view;
pub mod config_view;
pub mod editor;
pub mod eval_view;
pub mod input;
pub mod logging;
pub mod notices;
pub mod plan_view;
pub mod policy_view;
pub mod progress;
pub mod render;
pub mod replay_view;
pub mod runs;
pub mod text;

use std::io::Write;

/// Writes `bytes` to stdout, flushed. Every result clix prints goes through
/// here (or [`outln`]): a closed stdout is an error that ends clix quietly
/// with `clix_common::exit::BROKEN_PIPE`, never a panic as from `println!`.
pub fn out(bytes: &[u8]) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()
}

/// [`out`] of `text` and a newline.
pub fn outln(text: impl std::fmt::Display) -> std::io::Result<()> {
    out(format!("{text}\n").as_bytes())
}

/// Writes a command's stderr bytes, flushed; a closed stderr ends clix as a
/// closed stdout does.
pub fn err(bytes: &[u8]) -> std::io::Result<()> {
    let mut stderr = std::io::stderr().lock();
    stderr.write_all(bytes)?;
    stderr.flush()
}
