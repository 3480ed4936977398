//! The `run` tool: our command set over Layer 1, shown through Layer 2.
//!
//! This crate owns the agent commands (`help`, `write`, `cat -b`, `see`,
//! `memory`, `sandbox`, `hub` and each ready hub tool as a command, `clip`
//! over `clix-clip`, whose lines the policy judges as local ones, `skill`,
//! and each MCP server of the person's config as a command over
//! `clix-mcp-client`, audited and held to the line's limits), the
//! OS resolver and the unknown-command fallback, the spill folder for long
//! outputs, the generated `run` tool definition, the session's policy gate
//! (rules from `clix-policy`, the workspace's `.clix/policy.toml` read
//! through its handle, asked by the shell before every command), and
//! [`Engine`], which takes
//! one command line through `clix-shell` (execution) and `clix-present`
//! (presentation). Stores and runners live beside it: `clix-memory`,
//! `clix-hub`, `clix-sandbox`; the commands here only parse and print.
//! The CLI, the agent loop and the MCP server all call [`Engine::run`].
//!
//! It must not talk to models or to MCP clients, and must not parse the
//! shell language itself: bashkit does that.

mod catalog;
mod commands;
mod engine;
mod policy;
mod report;
mod spill;
mod tooldef;

pub use catalog::Catalog;
pub use clix_checkpoint::{ChangeSet, CheckpointSettings, Reviewer, WorkMode};
pub use commands::{MAX_IMAGE_SIDE, McpConfig, MemoryAccess, MemoryConfig, SeenImage};
pub use engine::{CallChanges, Engine, EngineConfig, EngineError, Namespace, OsTier, RunOutput, WorkspaceControl};
pub use policy::PolicyConfig;
pub use report::RunReport;
pub use spill::SpillDir;
pub use tooldef::{
    RUN_TOOL_PLACEHOLDERS, RUN_TOOL_PROMPT, ToolFormat, description as tool_description, tool_definition,
};

pub use clix_clip::{ClipConfig, ClipEntry};
pub use clix_present::PresentOptions;
pub use clix_sandbox::{Availability, SandboxMode, SandboxSettings, is_secret_name, probe, remove_leftover_cgroups};
pub use clix_shell::{CancelHandle, RawResult, SessionError, ShellLimits};
