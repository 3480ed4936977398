//! Agent commands plugged into the shell as builtins: the registry of one
//! engine's commands and the adapter that answers `--help` and bare calls
//! from each command's spec (the trait and spec are `clix-command`'s).

use std::collections::BTreeMap;
use std::sync::Arc;

use bashkit::{CommandStatus, async_trait};
use clix_command::{AgentCommand, CommandIo, CommandSpec, usage_error};

/// Adapts an [`AgentCommand`] to bashkit's command interface.
struct AgentAdapter(Arc<dyn AgentCommand>);

#[async_trait]
impl bashkit::Command for AgentAdapter {
    async fn execute(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let spec = self.0.spec();
        if self.0.answers_help() {
            return self.0.run(io).await;
        }
        let is_help = |arg: &String| arg == "--help" || arg == "-h";
        let help = match io.args {
            [] if spec.needs_args => return usage_error(&io, &spec.name, &spec.usage).await,
            [flag] if is_help(flag) => spec.help(),
            [sub, flag] if is_help(flag) => match spec.subcommand(sub) {
                Some(s) => format!("usage: {}\n\n{}\n", s.usage, s.summary),
                None => return self.0.run(io).await,
            },
            _ => return self.0.run(io).await,
        };
        io.stdout.write_all(help.as_bytes()).await?;
        Ok(CommandStatus::success())
    }
}

/// The agent commands of one engine, in name order.
#[derive(Clone, Default)]
pub struct CommandRegistry {
    commands: BTreeMap<String, Arc<dyn AgentCommand>>,
}

impl CommandRegistry {
    /// An empty registry.
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

    /// The command called `name`, if registered.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn AgentCommand>> {
        self.commands.get(name)
    }

    pub(crate) fn adapters(&self) -> impl Iterator<Item = (String, impl bashkit::Command + use<>)> + '_ {
        self.commands.iter().map(|(name, c)| (name.clone(), AgentAdapter(Arc::clone(c))))
    }
}
