//! `write <path> [content]`: a file from arguments or stdin, parents created.

use clix_command::{AgentCommand, CommandIo, CommandSpec, CommandStatus, async_trait, fail, read_stdin, usage_error};

use clix_command::{fs_reason, resolve};

pub(crate) struct Write {
    spec: CommandSpec,
}

impl Write {
    pub(crate) fn new() -> Self {
        Write {
            spec: CommandSpec {
                name: "write".into(),
                summary: "write text to a file (from arguments or stdin); creates parent folders".into(),
                usage: "write [-a|--append] <path> [content...]".into(),
                subcommands: vec![],
                details: "Content is the remaining arguments joined by spaces, written exactly\n\
                          (no newline added), or stdin when there are none.\n\
                          -a, --append  add to the end of the file instead of replacing it\n\n\
                          examples:\n  write notes/todo.txt 'buy milk'\n  \
                          grep ERROR app.log | write errors.txt\n  write -a log.txt \"$(date)\""
                    .into(),
                needs_args: true,
            },
        }
    }
}

#[async_trait]
impl AgentCommand for Write {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let mut args = io.args;
        let append = matches!(args.first().map(String::as_str), Some("-a" | "--append"));
        if append {
            args = &args[1..];
        }
        let Some((path, content_args)) = args.split_first() else {
            return usage_error(&io, "write", &self.spec.usage).await;
        };
        let content: Vec<u8> =
            if content_args.is_empty() { read_stdin(&io).await? } else { content_args.join(" ").into_bytes() };
        let target = resolve(io.cwd, path);
        let mut written = match target.parent() {
            Some(parent) => io.fs.mkdir(parent, true).await,
            None => Ok(()),
        };
        if written.is_ok() {
            written = if append {
                io.fs.append_file(&target, &content).await
            } else {
                io.fs.write_file(&target, &content).await
            };
        }
        if let Err(e) = written {
            return fail(&io, &format!("[error] write: {path}: {}\n", fs_reason(&e)), 1).await;
        }
        let verb = if append { "appended" } else { "wrote" };
        io.stdout.write_all(format!("{verb} {} bytes to {path}\n", content.len()).as_bytes()).await?;
        Ok(CommandStatus::success())
    }
}
