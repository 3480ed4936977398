//! `write <path> [content]`: a file from arguments or stdin, parents created.

use clix_shell::{AgentCommand, BuiltinContext, CommandSpec, ExecResult, async_trait, usage_error};

use super::{fs_reason, resolve};

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

    async fn run(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let mut args = ctx.args;
        let append = matches!(args.first().map(String::as_str), Some("-a" | "--append"));
        if append {
            args = &args[1..];
        }
        let Some((path, content_args)) = args.split_first() else {
            return Ok(usage_error("write", &self.spec.usage));
        };
        let content: Vec<u8> = if content_args.is_empty() {
            ctx.stdin.map(|s| s.as_bytes().to_vec()).unwrap_or_default()
        } else {
            content_args.join(" ").into_bytes()
        };
        let target = resolve(ctx.cwd, path);
        let fail = |e: bashkit::Error| {
            ExecResult::err(format!("[error] write: {path}: {}\n", fs_reason(&e)), 1)
        };
        if let Some(parent) = target.parent()
            && let Err(e) = ctx.fs.mkdir(parent, true).await
        {
            return Ok(fail(e));
        }
        let written = if append {
            ctx.fs.append_file(&target, &content).await
        } else {
            ctx.fs.write_file(&target, &content).await
        };
        Ok(match written {
            Ok(()) => {
                let verb = if append { "appended" } else { "wrote" };
                ExecResult::ok(format!("{verb} {} bytes to {path}\n", content.len()))
            }
            Err(e) => fail(e),
        })
    }
}
