//! The engine's own commands (`help`, `write`, `cat`, `see`, `sandbox`, the OS
//! tier) and those of the capabilities not yet in their own crates (the
//! hub, MCP servers). Each is a small [`clix_command::AgentCommand`].

mod cat;
mod help;
mod hub;
mod mcp;
mod mcp_search;
mod os;
mod sandbox;
mod see;
mod unknown;
mod write;

pub(crate) use cat::Cat;
pub(crate) use help::Help;
pub(crate) use hub::{HubCommand, HubTool};
pub use mcp::McpConfig;
pub(crate) use mcp::{McpServer, McpShared};
pub(crate) use mcp_search::McpCommand;
pub(crate) use os::{HostChoice, OsResolver, StageRun};
pub(crate) use sandbox::SandboxCommand;
pub(crate) use see::See;
pub(crate) use unknown::UnknownCommands;
pub(crate) use write::Write;
