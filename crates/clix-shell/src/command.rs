//! Agent commands: our own commands, plugged into the engine as builtins.
//!
//! Every agent command describes itself with a [`CommandSpec`]. The engine
//! uses it for progressive help, so no command has to: `cmd --help` prints
//! the full help, and a bare command that needs arguments prints its usage
//! as an `[error]` line (seed 000/002, Level 1). Commands with subcommands
//! report a subcommand's usage with [`usage_error`] (Level 2).

use std::collections::BTreeMap;
use std::sync::Arc;

use bashkit::{Builtin, BuiltinContext, ExecResult, async_trait};

/// Exit code of a command line that was written wrong, as in bash and GNU tools.
const USAGE_EXIT: i32 = 2;

/// How one subcommand is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubcommandSpec {
    pub name: String,
    /// Full usage line, e.g. `memory search <query> [-t topic]`.
    pub usage: String,
    pub summary: String,
}

/// What a command tells the model and the engine about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub name: String,
    /// One line, shown in the `run` tool description and in `help`.
    pub summary: String,
    /// Usage line, e.g. `write <path> [content]`.
    pub usage: String,
    pub subcommands: Vec<SubcommandSpec>,
    /// Everything after the usage in `--help`: options, examples, notes.
    pub details: String,
    /// A bare call (no arguments) is a usage error.
    pub needs_args: bool,
}

impl CommandSpec {
    /// The complete `--help` text.
    pub fn help(&self) -> String {
        let mut text = format!("{} - {}\n\nusage: {}\n", self.name, self.summary, self.usage);
        if !self.subcommands.is_empty() {
            text.push_str("\nsubcommands:\n");
            let width = self.subcommands.iter().map(|s| s.usage.len()).max().unwrap_or(0);
            for sub in &self.subcommands {
                text.push_str(&format!("  {:width$}  {}\n", sub.usage, sub.summary));
            }
        }
        if !self.details.is_empty() {
            text.push('\n');
            text.push_str(self.details.trim_end());
            text.push('\n');
        }
        text
    }

    pub fn subcommand(&self, name: &str) -> Option<&SubcommandSpec> {
        self.subcommands.iter().find(|s| s.name == name)
    }

    /// `[error] memory: usage: memory search|recent|…` for a bare call.
    fn bare_usage(&self) -> ExecResult {
        usage_error(&self.name, &self.usage)
    }
}

/// `[error] <who>: usage: <usage>` on stderr with exit code 2.
pub fn usage_error(who: &str, usage: &str) -> ExecResult {
    ExecResult::err(format!("[error] {who}: usage: {usage}\n"), USAGE_EXIT)
}

/// One of our commands. The engine adds `--help` and bare-call handling.
#[async_trait]
pub trait AgentCommand: Send + Sync {
    fn spec(&self) -> &CommandSpec;

    /// Runs with `ctx.args` not starting with `--help`, and non-empty when
    /// the spec says arguments are needed.
    async fn run(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult>;
}

/// Adapts an [`AgentCommand`] to bashkit's builtin interface.
struct AgentBuiltin(Arc<dyn AgentCommand>);

#[async_trait]
impl Builtin for AgentBuiltin {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let spec = self.0.spec();
        match ctx.args {
            [] if spec.needs_args => Ok(spec.bare_usage()),
            [flag] if flag == "--help" || flag == "-h" => Ok(ExecResult::ok(spec.help())),
            [sub, flag] if flag == "--help" || flag == "-h" => match spec.subcommand(sub) {
                Some(s) => Ok(ExecResult::ok(format!("usage: {}\n\n{}\n", s.usage, s.summary))),
                None => self.0.run(ctx).await,
            },
            _ => self.0.run(ctx).await,
        }
    }
}

/// The agent commands of one engine, in name order.
#[derive(Clone, Default)]
pub struct CommandRegistry {
    commands: BTreeMap<String, Arc<dyn AgentCommand>>,
}

impl CommandRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `command`, replacing one of the same name.
    pub fn register(&mut self, command: Arc<dyn AgentCommand>) {
        self.commands.insert(command.spec().name.clone(), command);
    }

    /// Specs sorted by name: the order is stable, so prompts built from it cache well.
    pub fn specs(&self) -> impl Iterator<Item = &CommandSpec> {
        self.commands.values().map(|c| c.spec())
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn AgentCommand>> {
        self.commands.get(name)
    }

    pub(crate) fn builtins(&self) -> impl Iterator<Item = (String, Box<dyn Builtin>)> + '_ {
        self.commands
            .iter()
            .map(|(name, c)| (name.clone(), Box::new(AgentBuiltin(Arc::clone(c))) as Box<dyn Builtin>))
    }
}
