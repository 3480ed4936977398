//! The engine's own commands (`help`, `write`, `cat`, `see`, `sandbox`, the OS
//! tier) and MCP servers' (not yet in a crate of their own). Each is a small [`clix_command::AgentCommand`].

mod cat;
mod help;
mod mcp;
mod mcp_search;
mod os;
mod sandbox;
mod see;
mod unknown;
mod write;

pub(crate) use cat::Cat;
pub(crate) use help::Help;
pub use mcp::McpConfig;
pub(crate) use mcp::{McpServer, McpShared};
pub(crate) use mcp_search::McpCommand;
pub(crate) use os::{HostChoice, OsResolver, StageRun};
pub(crate) use sandbox::SandboxCommand;
pub(crate) use see::See;
pub(crate) use unknown::UnknownCommands;
pub(crate) use write::Write;
