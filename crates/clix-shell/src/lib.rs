//! Layer 1 of clix: lossless execution of a command line.
//!
//! This crate owns the shell engine (bashkit, with its builtins such as grep,
//! sed, awk and jq), the workspace jail, the per-conversation [`Session`],
//! the execution limits, what bashkit says about its builtins for `help`
//! ([`builtin_help`]), and the plumbing through which agent commands
//! ([`AgentCommand`]), the unknown-command hook and the policy's
//! [`CommandGate`] (asked before every command runs) plug into the engine.
//!
//! It must not shape output for a model: results are raw bytes, an exit code,
//! a duration and the statuses of the line's pipeline stages, never truncated
//! and never annotated. Presentation belongs
//! to `clix-present`; concrete agent commands belong to `clix-engine`.

mod command;
mod gate;
mod help;
mod jailfs;
mod limits;
mod printed;
mod session;
mod stop;

pub use bashkit::{
    BuiltinContext, CommandResolver, CommandStatus, ExecResult, FileSystem, PipelineStage, PipelineStatus,
    ScriptAnalysis, StreamData, async_trait,
};
pub use clix_workspace::{Entry, Folder, Kind, OWN_READ_LIMIT, Workspace, WorkspaceError};
pub use command::{
    AgentCommand, CommandIo, CommandRegistry, CommandSpec, SubcommandSpec, USAGE_EXIT, fail, read_stdin, usage_error,
};
pub use gate::CommandGate;
pub use help::builtin_help;
pub use limits::ShellLimits;
pub use session::{
    CANCELLED_EXIT, CANCELLED_MESSAGE, CancelHandle, NETWORK_BUILTINS, RawResult, Session, SessionConfig, SessionError,
    builtin_names, shell_home,
};
