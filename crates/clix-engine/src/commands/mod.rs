//! The engine's own commands (`help`, `write`, `cat`, `see`, `sandbox`, the OS
//! tier) and those of the capabilities not yet in their own crates (the
//! browser, the hub, MCP servers). Each is a small [`clix_command::AgentCommand`].

mod browser;
mod browser_events;
mod browser_page;
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

pub(crate) use browser::BrowserCommand;
pub(crate) use cat::Cat;
pub(crate) use help::Help;
pub(crate) use hub::{HubCommand, HubTool};
pub use mcp::McpConfig;
pub(crate) use mcp::{McpServer, McpShared};
pub(crate) use mcp_search::McpCommand;
pub(crate) use os::{HostChoice, OsResolver, StageRun};
pub(crate) use sandbox::SandboxCommand;
pub use see::{MAX_IMAGE_SIDE, SeenImage};
pub(crate) use see::{See, SeenImages};
pub(crate) use unknown::UnknownCommands;
pub(crate) use write::Write;
