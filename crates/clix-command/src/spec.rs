//! What a command is: its spec (name, usage, help), the trait the shell
//! runs it by, and the few ways every command answers a wrong call.
//!
//! Every agent command describes itself with a [`CommandSpec`]. The shell
//! uses it for progressive help, so no command has to: `cmd --help` prints
//! the full help, and a bare command that needs arguments prints its usage
//! as an `[error]` line (seed 000/002, Level 1). Commands with subcommands
//! report a subcommand's usage with [`usage_error`] (Level 2).

use bashkit::{CommandStatus, async_trait};

/// Exit code of a command line that was written wrong, as in bash and GNU tools.
pub const USAGE_EXIT: i32 = clix_common::exit::USAGE;

/// How one subcommand is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubcommandSpec {
    /// The word that selects it, e.g. `search`.
    pub name: String,
    /// Full usage line, e.g. `memory search <query> [-t topic]`.
    pub usage: String,
    /// One line: what it does, shown under the usage in `<cmd> <sub> --help`.
    pub summary: String,
}

impl SubcommandSpec {
    /// A subcommand called `name`, with its usage line and one-line summary.
    pub fn new(name: &str, usage: &str, summary: &str) -> Self {
        SubcommandSpec { name: name.into(), usage: usage.into(), summary: summary.into() }
    }
}

/// What a command tells the model and the engine about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The command word the model types, e.g. `memory`.
    pub name: String,
    /// One line, shown in the `run` tool description and in `help`.
    pub summary: String,
    /// Usage line, e.g. `write <path> [content]`.
    pub usage: String,
    /// Its subcommands, in the order `--help` lists them (empty when it has none).
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

    /// The subcommand called `name`, if there is one.
    pub fn subcommand(&self, name: &str) -> Option<&SubcommandSpec> {
        self.subcommands.iter().find(|s| s.name == name)
    }

    /// The subcommand `args` start with and the words after it, or the
    /// `[error]` line for a bare call or an unknown subcommand (exit 2).
    pub fn pick_subcommand<'a>(&'a self, args: &'a [String]) -> Result<(&'a SubcommandSpec, &'a [String]), String> {
        let Some((first, rest)) = args.split_first() else {
            return Err(format!("[error] {}: usage: {}\n", self.name, self.usage));
        };
        match self.subcommand(first) {
            Some(sub) => Ok((sub, rest)),
            None => Err(format!("[error] {}: no subcommand {first}. usage: {}\n", self.name, self.usage)),
        }
    }
}

/// The I/O of one agent-command call: bashkit's streaming command context.
pub type CommandIo<'a> = bashkit::CommandContext<'a>;

/// Writes `[error] <who>: usage: <usage>` to stderr; the status is 2.
pub async fn usage_error(io: &CommandIo<'_>, who: &str, usage: &str) -> bashkit::Result<CommandStatus> {
    fail(io, &format!("[error] {who}: usage: {usage}\n"), USAGE_EXIT).await
}

/// Writes `message` to stderr and returns `code`.
pub async fn fail(io: &CommandIo<'_>, message: &str, code: i32) -> bashkit::Result<CommandStatus> {
    io.stderr.write_all(message.as_bytes()).await?;
    Ok(CommandStatus::with_code(code))
}

/// All of stdin (empty when nothing feeds the command).
pub async fn read_stdin(io: &CommandIo<'_>) -> bashkit::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    while let Some(chunk) = io.stdin.read_chunk().await? {
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// One of our commands. The engine adds `--help` and bare-call handling.
///
/// Commands use bashkit's streaming command interface, so they take part in
/// pipelines like the engine's own tools: input arrives as the producer
/// writes it and output flows on to the next stage.
#[async_trait]
pub trait AgentCommand: Send + Sync {
    /// Its name, usage and help; the adapter answers `--help` and bare calls from it.
    fn spec(&self) -> &CommandSpec;

    /// Runs with `io.args` not starting with `--help`, and non-empty when
    /// the spec says arguments are needed.
    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus>;

    /// Whether `run` answers `--help` itself: a command whose help is only
    /// known when it runs (an MCP server lists its tools). Its spec's help
    /// is still what `help <name>` prints.
    fn answers_help(&self) -> bool {
        false
    }
}
