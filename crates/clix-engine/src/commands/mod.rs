//! The engine's own commands (`help`, `write`, `cat`, `see`, `sandbox`, the OS
//! tier). Each is a small [`clix_command::AgentCommand`].

mod cat;
mod help;
mod os;
mod sandbox;
mod see;
mod unknown;
mod write;

pub(crate) use cat::Cat;
pub(crate) use help::Help;
pub(crate) use os::{HostChoice, OsResolver, StageRun};
pub(crate) use sandbox::SandboxCommand;
pub(crate) use see::See;
pub(crate) use unknown::UnknownCommands;
pub(crate) use write::Write;
