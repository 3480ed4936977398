//! How a capability joins an engine: it is given the engine's parts and
//! gives back its commands and what the catalog says of them.
//!
//! The engine knows no capability by name. `clix-session` hands it a list
//! of [`Capability`] values, one per capability the person's settings turn
//! on (each capability's configuration type implements it); the engine
//! opens the workspace and the sandbox, then asks each in turn for its
//! commands with [`Capability::add`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bashkit::{ExecResult, LimitExceeded, async_trait};
use clix_sandbox::Sandbox;
use clix_workspace::Workspace;

use crate::{AgentCommand, CallTime, SeenImages};

/// How many tools of a capability the `run` description, `help` and the
/// unknown-command error name (seed 001: with more than about 15, retrieve
/// instead of listing them all).
pub const LISTED_AT_MOST: usize = 15;

/// What an engine lends its capabilities' commands.
#[derive(Clone)]
pub struct Parts<'a> {
    /// The workspace, opened and checked once: every path a command touches
    /// goes through it.
    pub workspace: &'a Workspace,
    /// The running line's time.
    pub time: &'a CallTime,
    /// Bytes a command may keep of one output stream: the line's memory
    /// budget (`[limits] max_memory_bytes`), as for a program in the line.
    pub output_cap: usize,
    /// Runs a program as a stage of the line, in the sandbox; `None`
    /// without an OS tier.
    pub stages: Option<Arc<dyn StageRunner>>,
    /// The sandbox itself, for a capability that starts its own services
    /// in it (the browser); `None` without an OS tier.
    pub sandbox: Option<Arc<Sandbox>>,
    /// Where a command puts the images the line shows the model.
    pub seen: &'a SeenImages,
    /// The policy's word on a line that runs elsewhere; `None` without a
    /// policy.
    pub judge: Option<Arc<dyn LineJudge>>,
    /// Whether a name is taken (a command added before, a builtin of the
    /// shell): a capability whose commands are named by others (hub tools)
    /// leaves those out and says why.
    pub taken: &'a (dyn Fn(&str) -> bool + Sync),
}

/// What a capability gives an engine.
#[derive(Default)]
pub struct Added {
    /// Its commands.
    pub commands: Vec<Arc<dyn AgentCommand>>,
    /// Its commands are offered to the model. When not (`clip` without
    /// environments, `skill` without skills) they still run and `help`
    /// still answers for them, since a person's docs name them.
    pub offered: bool,
    /// Lines the `run` tool's description and `help` show after the list
    /// of commands (clip's environments); empty for none.
    pub section: String,
    /// Text for one placeholder of the `run` tool's description (the
    /// skills' level-0 list for `skills`).
    pub placeholder: Option<(&'static str, String)>,
    /// What a person should know, found as it started (a skill that did
    /// not load): one line each.
    pub notices: Vec<String>,
    /// Commands its section lists by name (each ready hub tool), in the
    /// order it lists them: they run like the others, and the
    /// unknown-command error names the first [`LISTED_AT_MOST`], but the
    /// `run` description's list of commands leaves them to the section.
    pub tools: Vec<Arc<dyn AgentCommand>>,
    /// Where its tools run and why, for the engine's stage explanations
    /// (debug events): `("sandbox", "a hub tool: …")`.
    pub tools_run: Option<(&'static str, &'static str)>,
    /// Names that are its but not commands here (a hub tool that is not
    /// ready), each with the whole error a call of it gets.
    pub unavailable: Vec<(String, String)>,
    /// A line every unknown-command error ends with while it holds (some
    /// of its declarations did not load, and where to see why).
    pub unknown_hint: Option<String>,
}

impl Added {
    /// `command`, offered to the model, with nothing else to say.
    pub fn offered(command: Arc<dyn AgentCommand>) -> Added {
        Added { commands: vec![command], offered: true, ..Added::default() }
    }
}

/// Why a capability cannot join an engine: its configuration cannot work
/// (a `[[clip]]` entry that names no host). The engine does not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem}")]
pub struct CapabilityError {
    /// Which capability (`clip`).
    pub capability: &'static str,
    /// Every problem, with what to fix.
    pub problem: String,
}

/// A capability of a session, before the engine it joins exists: its
/// configuration. One value may start many engines (an eval's attempts,
/// a plan's agents), so `add` borrows it.
#[async_trait]
pub trait Capability: std::fmt::Debug + Send + Sync {
    /// Its commands, made with the engine's `parts`; an error (a
    /// configuration that cannot work) stops the engine from starting.
    async fn add(&self, parts: &Parts<'_>) -> Result<Added, CapabilityError>;
}

/// Runs a program as a stage of the line: in the sandbox, within what is
/// left of the line's time, keeping at most the line's memory budget of
/// each output stream. The engine's OS tier implements it.
#[async_trait]
pub trait StageRunner: Send + Sync {
    /// Runs `argv` in `cwd` with `read_only` host folders mounted for this
    /// run only. Output past the budget is an error that stops the line.
    async fn run(
        &self,
        argv: &[String],
        cwd: &Path,
        stdin: Option<&[u8]>,
        env: &[(String, String)],
        read_only: &[PathBuf],
    ) -> Result<ExecResult, LimitExceeded>;

    /// The sandbox the stages run in.
    fn sandbox(&self) -> &Sandbox;
}

/// The policy's word on a line about to run somewhere else (a remote
/// environment): what it says of the same line run here. The engine
/// implements it over the session's gate.
pub trait LineJudge: Send + Sync {
    /// `Ok` to run `line`, or the refusal to show.
    fn admit_elsewhere(&self, line: &str) -> Result<(), String>;
}
