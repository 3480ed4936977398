//! Our agent commands. Each is a small [`clix_shell::AgentCommand`].

mod browser;
mod browser_events;
mod browser_page;
mod cat;
mod clip;
mod flags;
mod help;
mod hub;
mod mcp;
mod mcp_search;
mod memory;
mod os;
mod sandbox;
mod see;
mod skill;
mod unknown;
mod write;

pub(crate) use browser::BrowserCommand;
pub(crate) use cat::Cat;
pub(crate) use clip::ClipCommand;
pub(crate) use help::Help;
pub(crate) use hub::{CallTime, HubCommand, HubTool};
pub use mcp::McpConfig;
pub(crate) use mcp::{McpServer, McpShared};
pub(crate) use mcp_search::McpCommand;
pub(crate) use memory::MemoryCommand;
pub use memory::{MemoryAccess, MemoryConfig};
pub(crate) use os::{Deadline, HostChoice, OsResolver, StageRun};
pub(crate) use sandbox::SandboxCommand;
pub use see::{MAX_IMAGE_SIDE, SeenImage};
pub(crate) use see::{See, SeenImages};
pub(crate) use skill::SkillCommand;
pub(crate) use unknown::UnknownCommands;
pub(crate) use write::Write;

use std::path::{Path, PathBuf};

/// `path` as the shell would open it from `cwd`.
fn resolve(cwd: &Path, path: &str) -> PathBuf {
    bashkit::normalize_path(&cwd.join(path))
}

/// The reason part of a filesystem error, worded like coreutils.
fn fs_reason(error: &bashkit::Error) -> String {
    match error {
        // The workspace handle's own errors explain themselves (a symlink
        // out, a FIFO); only the kernel's terse ones get bash's wording.
        bashkit::Error::Io(io) if io.raw_os_error().is_none() && io.get_ref().is_some() => io.to_string(),
        bashkit::Error::Io(io) => match io.kind() {
            std::io::ErrorKind::NotFound => "No such file or directory".into(),
            std::io::ErrorKind::PermissionDenied => "Permission denied".into(),
            std::io::ErrorKind::IsADirectory => "Is a directory".into(),
            _ => io.to_string(),
        },
        other => other.to_string(),
    }
}
