//! The `run` tool: our command set over Layer 1, shown through Layer 2.
//!
//! [`Engine::run`] takes one command line through `clix-shell` (execution) and
//! then `clix-present` (presentation), once for the whole line; the CLI, the
//! agent loop, the MCP server, plans and eval all call it.
//!
//! This crate owns:
//!
//! - its own commands (`commands/`): `help`, `write`, `cat` (`-b` for base64),
//!   `see` (images for the model, in `RunOutput::images`) and `sandbox`;
//! - the capabilities' commands: `EngineConfig::capabilities` holds each
//!   capability's configuration (`clix_memory::MemoryConfig`,
//!   `clix_skills::SkillsConfig`, `clix_browser::BrowserSettings`,
//!   `clix_hub::HubConfig`, `clix_clip::ClipConfig`,
//!   `clix_mcp_client::McpConfig`, last), and each adds its
//!   commands (and the tools its section lists) through
//!   `clix_command::Capability`, lent the workspace handle, the line's time,
//!   the sandbox (a `StageRunner` into it, and itself), the line's images
//!   and a `LineJudge` over the policy gate. The engine names none of them;
//! - the OS resolver (`HostChoice`: a name on the sandbox's PATH runs in the
//!   sandbox) in front of the unknown-command fallback, and routing
//!   (`engine/route.rs`): a line of standard tools over a big file, or one
//!   walking a big tree, runs whole in the sandbox's GNU tools;
//! - each line's share of the workspace's disk (`engine/disk.rs`, `[limits]
//!   max_workspace_growth_bytes`: the free space read every 50 ms through the
//!   handle, the line cancelled once it has taken more);
//! - a checkpoint around each call (clix-checkpoint) and the session's mode:
//!   `read-only` makes the workspace handle and the sandbox's mounts read-only
//!   (save clix's spills), `review` puts each call's changes to the `Reviewer`;
//! - `Engine::confined` for a plan agent ([`Namespace`]: its folder and
//!   `writes`): the workspace handle confined, the sandbox mounting the
//!   workspace read-only with those places bound read-write, the shell starting
//!   and spilling in its folder;
//! - the spill folder `.clix/out/cmd-N.txt` (through the handle;
//!   `.clix/.gitignore` is `*`), the [`Catalog`], the generated `run` tool
//!   definition (`tool_definition`; its wording `prompts/run-tool.md`, or a
//!   person's template), and [`RunReport`], the one serializable result (`clix
//!   run --json`, MCP's `structuredContent`);
//! - the session's policy gate ([`PolicyConfig`]): the rules from
//!   `clix-policy`, the workspace's `.clix/policy.toml` read through its
//!   handle, the gate asked by the shell before every command and by the
//!   sandbox at every exec, and `kind: "policy"` audit lines;
//! - notices ([`Engine::notices`]: the secret stores the handle hides, skills
//!   that did not load), which the front end says once per workspace.
//!
//! It must not talk to models or to MCP clients, parse the shell language
//! itself (bashkit does), or know where a session's files live: every path and
//! setting comes in its `EngineConfig`, which `clix-session` assembles.

mod catalog;
mod commands;
mod engine;
mod policy;
mod report;
mod spill;
mod tooldef;

pub use catalog::Catalog;
pub use clix_checkpoint::{ChangeSet, CheckpointSettings, Reviewer, WorkMode};
pub use clix_command::{MAX_IMAGE_SIDE, SeenImage};
pub use engine::{
    CallChanges, Engine, EngineConfig, EngineError, ModeError, Namespace, OsTier, RunOutput, WorkspaceControl,
};
pub use policy::PolicyConfig;
pub use report::RunReport;
pub use spill::SpillDir;
pub use tooldef::{
    RUN_TOOL_PLACEHOLDERS, RUN_TOOL_PROMPT, ToolFormat, description as tool_description, tool_definition,
};

pub use clix_present::PresentOptions;
pub use clix_sandbox::{Availability, SandboxMode, SandboxSettings, is_secret_name, probe, remove_leftover_cgroups};
pub use clix_shell::{CancelHandle, RawResult, ShellError, ShellLimits};
