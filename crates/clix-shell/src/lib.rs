//! Layer 1 of clix: lossless execution of a command line.
//!
//! This crate owns:
//!
//! - the shell engine: bashkit (the bash language and ~160 builtins such as
//!   grep, sed, awk, jq and find), vendored as `vendor/bashkit`, 0.20.2 with
//!   the patches of `docs/bashkit-patches.md`;
//! - the workspace jail: the workspace mounted at its own path through
//!   `JailFs`, bashkit's `FsBackend` over the `clix_workspace` handle (wrapped
//!   in bashkit's `PosixFs`). bashkit's `RealFs` is not used: it checks a path
//!   and opens it again by name, which a swapped symlink defeats. Nothing else
//!   of the host is visible to the builtins;
//! - the per-conversation [`Shell`] (cwd, variables and functions persist
//!   across calls);
//! - the limits ([`ShellLimits`]): a line is bounded by its time and by the
//!   memory it holds (`max_memory_bytes`), a session's in-memory files by
//!   `max_tmp_bytes`; bashkit's count limits are out of reach unless a person
//!   sets them. Every limit stops the whole line, non-zero, with one `[error]`
//!   line naming it, its value and its setting, never a shorter answer;
//! - the plumbing that plugs into bashkit: agent commands (each a
//!   `clix_command::AgentCommand`, kept in a [`CommandRegistry`] and adapted to
//!   a bashkit builtin, with `--help` and a bare call answered once for all
//!   from the command's spec, unless it `answers_help` itself), the
//!   unknown-command hook (`CommandResolver`), and the policy's
//!   [`CommandGate`], asked from bashkit's `before_tool` hook before every
//!   command with its resolved name and expanded arguments: a refusal ends the
//!   line there, exit 126, with its output so far (`LineStop`, the one way
//!   besides bashkit's own errors to end a line from outside it);
//! - what bashkit says about its builtins ([`builtin_help`]), asked of a bare
//!   engine of its own, for `help NAME` and for `NAME --help` before NAME runs.
//!
//! It must not shape output for a model: results are raw bytes, an exit code, a
//! duration and the statuses of the line's pipeline stages, never truncated and
//! never annotated (a line whose output passes `max_memory_bytes` is stopped,
//! not cut). Presentation belongs to `clix-present`; concrete agent commands
//! belong to `clix-engine`.

mod command;
mod gate;
mod help;
mod jailfs;
mod limits;
mod printed;
mod shell;
mod stop;

pub use bashkit::{
    BuiltinContext, CommandResolver, CommandStatus, ExecResult, FileSystem, PipelineStage, PipelineStatus,
    ScriptAnalysis, StreamData, async_trait,
};
pub use clix_workspace::{Entry, Folder, Kind, OWN_READ_LIMIT, Workspace, WorkspaceError};
pub use command::CommandRegistry;
pub use gate::CommandGate;
pub use help::builtin_help;
pub use limits::ShellLimits;
pub use shell::{
    CANCELLED_EXIT, CANCELLED_MESSAGE, CancelHandle, NETWORK_BUILTINS, RawResult, Shell, ShellConfig, ShellError,
    builtin_names, shell_home,
};
