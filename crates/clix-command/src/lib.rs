//! The command interface every capability implements, below all of them.
//!
//! clix gives a model one tool, `run`, and every capability is a command
//! inside it. This crate is what a command is, so that each capability
//! crate (memory, hub, skills, clip, the browser, MCP servers) can own its
//! command and the engine need not know any of them:
//!
//! - [`AgentCommand`] and [`CommandSpec`]: a command, its usage and its
//!   progressive help; [`fail`], [`usage_error`] and [`read_stdin`], the
//!   few things every command does alike;
//! - [`flags`]: the one flag grammar of every subcommand (options anywhere,
//!   `--`, `-t`/`-k`/`-n`/`--json` meaning one thing everywhere, errors that
//!   repeat the usage), and of tools whose parameters are data
//!   ([`flags::typed`]: hub manifests, MCP input schemas);
//! - [`Capability`]: how a capability joins an engine, given its [`Parts`]
//!   (the workspace handle, the line's [`CallTime`], a [`StageRunner`] into
//!   the sandbox, the policy's [`LineJudge`]);
//! - [`resolve`], [`fs_reason`] and [`exported_env`]: paths, filesystem
//!   errors and exported variables as every command treats them;
//! - [`SeenImage`]: images a line shows the model, checked, scaled and held
//!   within one budget per line ([`attach`], [`decode`]).
//!
//! It must not know any capability, nor the engine, the shell's session or
//! the presentation layer: those depend on it, never the other way.

mod capability;
pub mod flags;
mod images;
mod paths;
mod spec;
mod time;

pub use bashkit::{CommandStatus, async_trait};
pub use capability::{Added, Capability, CapabilityError, LISTED_AT_MOST, LineJudge, Parts, StageRunner};
pub use images::{
    ImageError, MAX_IMAGE_PIXELS, MAX_IMAGE_SIDE, MAX_LINE_IMAGE_BYTES, SeenImage, SeenImages, attach, decode,
    decode_off_thread,
};
pub use paths::{exported_env, fs_reason, resolve};
pub use spec::{AgentCommand, CommandIo, CommandSpec, SubcommandSpec, USAGE_EXIT, fail, read_stdin, usage_error};
pub use time::{CallTime, Deadline};
